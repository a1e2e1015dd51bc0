/* Small helpers with no better home: clocks, a fast per-thread PRNG, parsing
 * numbers from text with range checks, comma-separated name lists. */
#ifndef KVG_BASE_UTIL_H
#define KVG_BASE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define KVG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KVG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KVG_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Monotonic clock in nanoseconds / milliseconds / seconds (with fraction):
 * for elapsed intervals and rates, which a step of the wall clock (NTP, an
 * operator) must not skew. */
uint64_t kvg_now_ns(void);
uint64_t kvg_now_ms(void);
double kvg_now_s(void);
/* Wall clock, seconds (with fraction) / whole milliseconds since the epoch:
 * only for timestamps shown, exported or shared with other processes. */
double kvg_wall_s(void);
uint64_t kvg_wall_ms(void);
/* This thread's CPU time in nanoseconds: unlike the clocks above it does not
 * count time the thread spent descheduled (benchmarks on shared machines). */
uint64_t kvg_thread_cpu_ns(void);
/* The absolute time ns from now on clock (CLOCK_MONOTONIC or
 * CLOCK_REALTIME), as pthread_cond_timedwait takes it on a condition
 * variable using that clock. */
struct timespec kvg_deadline_after(int clock, uint64_t ns);

/* xoshiro-style generator. A state is owned by one thread; kvg_rand_thread()
 * returns the calling thread's, seeded from the clock and thread id. */
struct kvg_rng {
    uint64_t s[4];
};
void kvg_rng_seed(struct kvg_rng *r, uint64_t seed);
uint64_t kvg_rng_next(struct kvg_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t kvg_rng_below(struct kvg_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double kvg_rng_double(struct kvg_rng *r);
struct kvg_rng *kvg_rand_thread(void);

/* Strict decimal parse of the whole string; -EINVAL / -ERANGE. */
int kvg_parse_i64(const char *s, int64_t *out);
int kvg_parse_u64(const char *s, uint64_t *out);
int kvg_parse_double(const char *s, double *out);
/* Appends name to the comma-separated list in list (cap bytes, a string)
 * unless an item of the list equals it or it would not fit. */
void kvg_list_add_once(char *list, size_t cap, const char *name);

/* 64-bit big-endian integers, as ZMQ frames of vLLM's KV events carry
 * sequence numbers. */
static inline uint64_t kvg_be64_get(const void *p)
{
    const uint8_t *b = p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | b[i];
    return v;
}

static inline void kvg_be64_put(void *p, uint64_t v)
{
    uint8_t *b = p;
    for (int i = 7; i >= 0; i--, v >>= 8) b[i] = (uint8_t)v;
}

/* The value of hexadecimal digit c (either case), or -1. */
static inline int kvg_hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

#endif
