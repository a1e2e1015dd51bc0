/* The peers' in-flight counts as last heard (router/exchange.h,
 * kvg_exchange_peers): one entry per sender, its counts by the worker URL's
 * hash, and the sums written into the pool's workers after every change.
 * The sums are written whole, from the live entries, rather than moved by
 * deltas: a worker that left and came back, a sender forgotten, a hostile
 * sender's counts all come out right at the next write. A write costs
 * workers x senders lookups (log of a sender's counts each): at 64 engines
 * and 16 replicas about 6,000 per batch received; a fleet near the pool's
 * 1,024 workers and the 64 senders would want the sums kept by delta. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "router/exchange_int.h"
#include "router/pool.h"

struct count {
    uint64_t h; /* the worker URL's hash */
    uint32_t c;
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
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static int by_hash(const void *a, const void *b)
{
    const struct count *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h;
}

static uint32_t lookup(const struct sender *s, uint64_t h)
{
    struct count key = {h, 0};
    const struct count *c = s->n ? bsearch(&key, s->e, s->n, sizeof *s->e, by_hash) : NULL;
    return c ? c->c : 0;
}

/* Every worker of p: the live senders' counts of its URL (t->mu held).
 * Counted in 64 bits and capped: 64 senders at the bound fit. */
static void write_workers(struct kvg_exchange_peers *t, struct kvg_pool *p)
{
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) {
        struct kvg_worker *w = p->w[i];
        uint64_t h = kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, w->url), sum = 0;
        for (size_t j = 0; j < t->n; j++) sum += lookup(&t->s[j], h);
        atomic_store_explicit(&w->peer_in_flight, sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum,
                              memory_order_relaxed);
        atomic_store_explicit(&w->peer_view, t->n > 0, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&p->lock);
}

static void drop(struct kvg_exchange_peers *t, size_t i)
{
    free(t->s[i].e);
    t->s[i] = t->s[--t->n];
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
    if (at == t->n && t->n == KVG_EXCHANGE_MAX_PEERS) {
        /* Full: the one heard longest ago makes room. */
        size_t old = 0;
        for (size_t i = 1; i < t->n; i++)
            if (t->s[i].heard_ms < t->s[old].heard_ms) old = i;
        drop(t, old);
        at = t->n;
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
        if (now_ms > t->s[i].heard_ms && now_ms - t->s[i].heard_ms > t->ttl_ms) drop(t, i);
    write_workers(t, p);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}
