/* The peers' in-flight counts as last heard (router/exchange.h,
 * kvg_exchange_peers): one entry per sender, its counts by the worker URL's
 * hash, and beside them their sums by hash over the live senders, moved by
 * each sender's change (its new counts less its last: one merge of three
 * sorted lists) and written into the pool's workers after every change.
 * The sums are kept by URL, not by worker: a worker that left and came
 * back, a sender forgotten, a hostile sender's counts all come out right,
 * as the arithmetic is exact (64-bit sums of 32-bit counts from at most 64
 * senders). A batch costs its own counts' sort and merge plus a lookup per
 * worker: at 1,024 workers and 63 peers 69 us, where a write of every
 * sender's counts per worker cost 889 us, 56% of a core at 10 batches a
 * second per peer (bench/results/fleet.md, "2026-12-07 (10)"). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "router/exchange_int.h"
#include "router/pool.h"

/* A count by the worker URL's hash: a sender's (32 bits as sent) or a sum
 * over the live senders (never 0 there: an entry that reaches 0 goes). 64
 * bits either way: the struct is 16 bytes with a 32-bit count too. */
struct count {
    uint64_t h, c;
};

struct sender {
    uint64_t id, heard_ms;
    size_t n;
    struct count *e; /* owned; n of them, sorted by h, one per URL */
};

struct kvg_exchange_peers {
    pthread_mutex_t mu; /* guards everything below */
    uint64_t ttl_ms;
    size_t n;
    struct sender s[KVG_EXCHANGE_MAX_PEERS];
    size_t nsum;
    struct count *sum; /* owned; nsum of them, sorted by h */
};

int kvg_exchange_peers_new(uint64_t ttl_ms, struct kvg_exchange_peers **out)
{
    if (!ttl_ms) return -EINVAL;
    struct kvg_exchange_peers *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    if (pthread_mutex_init(&t->mu, NULL)) {
        free(t);
        return -ENOMEM;
    }
    t->ttl_ms = ttl_ms;
    *out = t;
    return 0;
}

uint64_t kvg_exchange_peers_ttl_ms(uint32_t exchange_ms)
{
    uint64_t ms = 3 * (uint64_t)exchange_ms;
    return ms > 2500 ? ms : 2500;
}

void kvg_exchange_peers_free(struct kvg_exchange_peers *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->s[i].e);
    free(t->sum);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static int by_hash(const void *a, const void *b)
{
    const struct count *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h;
}

/* The sums with one sender's counts moved from `was` to `now` (both sorted
 * by hash, one entry per hash): a merge of the three lists into a new
 * array, so a failed allocation leaves t as it was. 0 or -ENOMEM. */
static int move_sums(struct kvg_exchange_peers *t, const struct count *was, size_t nwas,
                     const struct count *now, size_t nnow)
{
    if (!nwas && !nnow) return 0;
    struct count *out = malloc((t->nsum + nnow + 1) * sizeof *out);
    if (!out) return -ENOMEM;
    size_t i = 0, j = 0, k = 0, n = 0;
    while (i < t->nsum || j < nwas || k < nnow) {
        uint64_t h = UINT64_MAX;
        if (i < t->nsum && t->sum[i].h < h) h = t->sum[i].h;
        if (j < nwas && was[j].h < h) h = was[j].h;
        if (k < nnow && now[k].h < h) h = now[k].h;
        uint64_t c = 0;
        if (i < t->nsum && t->sum[i].h == h) c = t->sum[i++].c;
        if (j < nwas && was[j].h == h) c -= was[j++].c; /* within c: it was added */
        if (k < nnow && now[k].h == h) c += now[k++].c;
        if (c) out[n++] = (struct count){h, c};
    }
    free(t->sum);
    t->sum = out;
    t->nsum = n;
    return 0;
}

/* Every worker of p: its URL's sum (t->mu held), capped to 32 bits. */
static void write_workers(struct kvg_exchange_peers *t, struct kvg_pool *p)
{
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) {
        struct kvg_worker *w = p->w[i];
        struct count key = {w->url_hash, 0};
        const struct count *e =
            t->nsum ? bsearch(&key, t->sum, t->nsum, sizeof *t->sum, by_hash) : NULL;
        uint64_t sum = e ? e->c : 0;
        atomic_store_explicit(&w->peer_in_flight, sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum,
                              memory_order_relaxed);
        atomic_store_explicit(&w->peer_view, t->n > 0, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&p->lock);
}

/* Forgets sender i, its counts out of the sums. The sums' merge may fail
 * (no memory): the sender stays then, to go at a later expiry. */
static int drop(struct kvg_exchange_peers *t, size_t i)
{
    int rc = move_sums(t, t->s[i].e, t->s[i].n, NULL, 0);
    if (rc) return rc;
    free(t->s[i].e);
    t->s[i] = t->s[--t->n];
    return 0;
}

struct collect {
    struct count *e;
    size_t n, cap;
};

static int add_load(void *ud, struct kvg_str worker, uint32_t in_flight)
{
    struct collect *c = ud;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct count *e = realloc(c->e, cap * sizeof *e);
        if (!e) return -ENOMEM;
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n++] =
        (struct count){kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, worker.p, worker.len), in_flight};
    return 0;
}

int kvg_exchange_peers_apply(struct kvg_exchange_peers *t, struct kvg_pool *p,
                             const struct kvg_exchange_head *h, const void *data, size_t len,
                             uint64_t now_ms)
{
    if (h->version < 3) return 0;
    struct collect c = {0};
    int rc = kvg__exchange_walk_loads(data, len, add_load, &c);
    if (rc < 0) {
        free(c.e);
        return rc;
    }
    /* One count per URL: a sender naming one twice is taken at its larger. */
    if (c.n) qsort(c.e, c.n, sizeof *c.e, by_hash);
    size_t k = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (k && c.e[k - 1].h == c.e[i].h) {
            if (c.e[i].c > c.e[k - 1].c) c.e[k - 1].c = c.e[i].c;
        } else {
            c.e[k++] = c.e[i];
        }
    }
    pthread_mutex_lock(&t->mu);
    size_t at = t->n;
    for (size_t i = 0; i < t->n; i++)
        if (t->s[i].id == h->sender) at = i;
    int mr = 0;
    if (at == t->n && t->n == KVG_EXCHANGE_MAX_PEERS) {
        /* Full: the one heard longest ago makes room. */
        size_t old = 0;
        for (size_t i = 1; i < t->n; i++)
            if (t->s[i].heard_ms < t->s[old].heard_ms) old = i;
        mr = drop(t, old);
        at = t->n;
    }
    if (!mr) {
        const struct sender *was = at < t->n ? &t->s[at] : NULL;
        mr = move_sums(t, was ? was->e : NULL, was ? was->n : 0, c.e, k);
    }
    if (mr) { /* no memory: t as it was, this batch's counts not taken */
        pthread_mutex_unlock(&t->mu);
        free(c.e);
        return mr;
    }
    if (at == t->n) t->s[t->n++] = (struct sender){.id = h->sender};
    free(t->s[at].e);
    t->s[at].e = c.e;
    t->s[at].n = k;
    t->s[at].heard_ms = now_ms;
    write_workers(t, p);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

size_t kvg_exchange_peers_expire(struct kvg_exchange_peers *t, struct kvg_pool *p, uint64_t now_ms)
{
    pthread_mutex_lock(&t->mu);
    for (size_t i = t->n; i-- > 0;)
        if (now_ms > t->s[i].heard_ms && now_ms - t->s[i].heard_ms > t->ttl_ms)
            (void)drop(t, i); /* no memory: it goes at a later expiry */
    write_workers(t, p);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}
