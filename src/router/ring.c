/* Consistent-hash ring; see ring.h. */
#include "router/ring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

uint64_t kvg_ring_hash(const void *p, size_t len)
{
    return XXH3_64bits(p, len);
}

void kvg_ring_init(struct kvg_ring *r, uint32_t vnodes)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->vnodes = vnodes ? vnodes : 160;
}

void kvg_ring_destroy(struct kvg_ring *r)
{
    free(r->pts);
    free(r->urls);
    pthread_mutex_destroy(&r->mu);
}

static int cmp_point(const void *a, const void *b)
{
    const struct kvg_ring_point *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static uint64_t signature(struct kvg_worker *const *cand, size_t n)
{
    uint64_t s = n;
    for (size_t i = 0; i < n; i++) s ^= kvg_ring_hash(cand[i]->url, strlen(cand[i]->url)) * 31;
    return s;
}

static int rebuild(struct kvg_ring *r, struct kvg_worker *const *cand, size_t n, uint64_t sig)
{
    struct kvg_ring_point *pts = malloc(n * r->vnodes * sizeof *pts);
    char(*urls)[512] = malloc(n * sizeof *urls);
    if (!pts || !urls) {
        free(pts);
        free(urls);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(urls[i], sizeof urls[i], "%s", cand[i]->url);
        for (uint32_t v = 0; v < r->vnodes; v++) {
            char key[600];
            int len = snprintf(key, sizeof key, "%s#%u", cand[i]->url, v);
            pts[k++] = (struct kvg_ring_point){kvg_ring_hash(key, (size_t)len), (uint32_t)i};
        }
    }
    qsort(pts, k, sizeof *pts, cmp_point);
    free(r->pts);
    free(r->urls);
    r->pts = pts;
    r->urls = urls;
    r->n = k;
    r->nurls = n;
    r->sig = sig;
    return 0;
}

int kvg_ring_lookup(struct kvg_ring *r, struct kvg_worker *const *cand, size_t n, uint64_t hash)
{
    if (n == 0) return -1;
    uint64_t sig = signature(cand, n);
    pthread_mutex_lock(&r->mu);
    if ((r->sig != sig || r->nurls != n || !r->pts) && rebuild(r, cand, n, sig)) {
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->pts[mid].pos < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    const char *url = r->urls[r->pts[lo == r->n ? 0 : lo].slot];
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cand[i]->url, url)) return (int)i;
    return -1;
}
