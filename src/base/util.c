/* Clocks, PRNG, number parsing, comma-separated lists; see util.h. */
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t kvg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t kvg_now_ms(void)
{
    return kvg_now_ns() / 1000000ull;
}

double kvg_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double kvg_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t kvg_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t kvg_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct timespec kvg_deadline_after(int clock, uint64_t ns)
{
    struct timespec ts;
    clock_gettime((clockid_t)clock, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    return ts;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void kvg_rng_seed(struct kvg_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t kvg_rng_next(struct kvg_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t kvg_rng_below(struct kvg_rng *r, uint64_t n)
{
    /* Lemire's multiply-shift; the bias is below 2^-64 * n, irrelevant here. */
    return (uint64_t)(((unsigned __int128)kvg_rng_next(r) * n) >> 64);
}

double kvg_rng_double(struct kvg_rng *r)
{
    return (double)(kvg_rng_next(r) >> 11) * 0x1.0p-53;
}

struct kvg_rng *kvg_rand_thread(void)
{
    static _Thread_local struct kvg_rng rng;
    static _Thread_local int seeded;
    if (!seeded) {
        kvg_rng_seed(&rng, kvg_now_ns() ^ (uint64_t)(uintptr_t)pthread_self());
        seeded = 1;
    }
    return &rng;
}

int kvg_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno) return -ERANGE;
    if (*end) return -EINVAL;
    *out = v;
    return 0;
}

int kvg_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-') return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return -ERANGE;
    if (*end) return -EINVAL;
    *out = v;
    return 0;
}

int kvg_parse_double(const char *s, double *out)
{
    if (!s || !*s) return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !isfinite(v)) return -ERANGE;
    if (*end) return -EINVAL;
    *out = v;
    return 0;
}

void kvg_list_add_once(char *list, size_t cap, const char *name)
{
    size_t n = strlen(list), k = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == k && !memcmp(p, name, k)) return;
        p += len + (c ? 1 : 0);
    }
    if (n + k + 2 > cap) return;
    if (n) list[n++] = ',';
    memcpy(list + n, name, k + 1);
}
