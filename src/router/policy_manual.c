/* manual (sglang's): sticky assignment of routing keys to workers. A key
 * seen for the first time is assigned (at random, or to the least loaded
 * worker with --assignment-mode min_load) and keeps that worker for as long
 * as it is eligible; adding workers never moves existing keys; a key whose
 * worker left or became ineligible is reassigned. Keys idle longer than
 * --max-idle-secs are forgotten. A request without a key is routed like a new
 * key but not pinned. Thread-safe (one mutex; the table is small per key).
 *
 * The random assignment is the key's owner on a consistent-hash ring over the
 * candidates (ring.h), not a draw: as uniform over keys, and every replica
 * behind a balancer draws the same worker for a key without talking. With
 * draws each replica's table gave a session its own worker: 8 replicas had
 * 65% cache hits on chat against one router's 91% (bench/results/fleet.md).
 *
 * The least loaded worker is each replica's own view at the key's first
 * sight, which no other replica can compute later: with replicas
 * (router/exchange.h) every pick's record carries its key (record_text) and
 * a peer's record pins the key to the record's worker (place), so the
 * replica that sees the session's next turn sends it where the first went.
 * Two replicas that assigned a key within one exchange period both keep, on
 * hearing the other, the worker that ranks higher for the key (rank), so
 * they settle on one. Without peers nothing is published: one replica is
 * sglang's policy as it was. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "router/policy.h"
#include "router/ring.h"

#define NBUCKETS 4096
/* Keys pinned at most: past it a new key is routed as assigned but not
 * pinned (random mode's ring still sends it to the same worker each time),
 * so neither clients inventing keys nor a peer's records grow the table
 * without bound; 2^18 is about 30 MiB and chains of 64. */
#define MAX_KEYS (1u << 18)

struct entry {
    uint64_t h;
    char *url;
    uint64_t used_ms;
    struct entry *next;
};

struct manualp {
    struct kvg_policy base;
    pthread_mutex_t mu;
    struct entry *b[NBUCKETS];
    size_t n;
    uint64_t max_idle_ms, last_sweep_ms;
    int min_load;
    struct kvg_ring ring; /* the random mode's assignment */
};

static int find_url(struct kvg_worker *const *cand, size_t n, const char *url)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cand[i]->url, url)) return (int)i;
    return -1;
}

/* Drops keys idle past max_idle (at most once a second). Called locked. */
static void sweep(struct manualp *m, uint64_t now)
{
    if (now - m->last_sweep_ms < 1000) return;
    m->last_sweep_ms = now;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct entry **e = &m->b[i]; *e;) {
            /* A peer's record may be stamped after a local pick's now. */
            if (now > (*e)->used_ms && now - (*e)->used_ms > m->max_idle_ms) {
                struct entry *d = *e;
                *e = d->next;
                free(d->url);
                free(d);
                m->n--;
            } else {
                e = &(*e)->next;
            }
        }
}

/* Pins key h (its entry e, NULL when it has none) to url. Called locked.
 * The entry, or NULL when out of memory or MAX_KEYS with none (the key stays
 * unpinned; an existing entry keeps its worker). */
static struct entry *pin(struct manualp *m, struct entry *e, uint64_t h, const char *url)
{
    if (!e && m->n >= MAX_KEYS) return NULL;
    char *u = strdup(url);
    if (u && !e && (e = calloc(1, sizeof *e))) {
        e->h = h;
        e->next = m->b[h % NBUCKETS];
        m->b[h % NBUCKETS] = e;
        m->n++;
    }
    if (u && e) {
        free(e->url);
        e->url = u;
    } else {
        free(u);
    }
    return e;
}

/* A new key's worker; h is its hash, or 0 with has_key 0 for a request
 * without one (a draw). */
static int assign(struct manualp *m, struct kvg_worker *const *cand, size_t n,
                  const struct kvg_route_ctx *ctx, int has_key, uint64_t h)
{
    if (m->min_load) return kvg_policy_min_load(cand, n, ctx);
    int r = has_key ? kvg_ring_lookup(&m->ring, cand, n, h) : -1;
    return r >= 0 ? r : (int)kvg_rng_below(ctx->rng, n);
}

static int select_manual(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct manualp *m = (struct manualp *)p;
    if (n == 0) return KVG_ENOWORKER;
    char key[KVG_POLICY_RECORD_TEXT_MAX];
    size_t kl = kvg_policy_routing_key(ctx, key, sizeof key);
    if (!kl) return assign(m, cand, n, ctx, 0, 0);
    uint64_t h = kvg_ring_hash(key, kl);
    pthread_mutex_lock(&m->mu);
    sweep(m, ctx->now_ms);
    struct entry *e = m->b[h % NBUCKETS];
    while (e && e->h != h) e = e->next;
    int idx = e ? find_url(cand, n, e->url) : -1;
    if (idx < 0 && ctx->dry_run) {
        pthread_mutex_unlock(&m->mu);
        return assign(m, cand, n, ctx, 1, h);
    }
    if (idx < 0) {
        idx = assign(m, cand, n, ctx, 1, h);
        e = pin(m, e, h, cand[idx]->url);
        if (ex) snprintf(ex->note, sizeof ex->note, "key assigned");
    } else if (ex) {
        snprintf(ex->note, sizeof ex->note, "sticky key");
    }
    if (e) e->used_ms = ctx->now_ms;
    pthread_mutex_unlock(&m->mu);
    return idx;
}

/* The order two replicas' different workers for a key are settled by: the
 * same on every replica. */
static uint64_t rank(uint64_t h, const char *url)
{
    return kvg_hash_fnv1a64_str(h, url);
}

/* A peer routed ctx's key (its record's text) to w. */
static void place_key(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct manualp *m = (struct manualp *)p;
    if (!ctx->text || !ctx->text_len) return;
    uint64_t h = kvg_ring_hash(ctx->text, ctx->text_len);
    pthread_mutex_lock(&m->mu);
    sweep(m, ctx->now_ms);
    struct entry *e = m->b[h % NBUCKETS];
    while (e && e->h != h) e = e->next;
    if (!e || (strcmp(e->url, w->url) && rank(h, w->url) > rank(h, e->url))) {
        e = pin(m, e, h, w->url);
    }
    if (e) e->used_ms = ctx->now_ms; /* in use on a peer: not idle here either */
    pthread_mutex_unlock(&m->mu);
}

static int places_key(const struct kvg_policy *p)
{
    (void)p;
    return 1;
}

static size_t record_key(const struct kvg_policy *p, const struct kvg_route_ctx *ctx, char *out,
                         size_t cap)
{
    (void)p;
    return kvg_policy_routing_key(ctx, out, cap);
}

static void destroy(struct kvg_policy *p)
{
    struct manualp *m = (struct manualp *)p;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct entry *e = m->b[i], *next; e; e = next) {
            next = e->next;
            free(e->url);
            free(e);
        }
    pthread_mutex_destroy(&m->mu);
    kvg_ring_destroy(&m->ring);
    free(m);
}

static const struct kvg_policy_ops ops = {.name = "manual",
                                          .select = select_manual,
                                          .destroy = destroy,
                                          .place = place_key,
                                          .places_text = places_key,
                                          .record_text = record_key};

int kvg_policy_manual_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct manualp *m = calloc(1, sizeof *m);
    if (!m) return -ENOMEM;
    m->base.ops = &ops;
    pthread_mutex_init(&m->mu, NULL);
    kvg_ring_init(&m->ring, o->vnodes);
    m->max_idle_ms = o->max_idle_ms ? o->max_idle_ms : 14400ull * 1000;
    m->min_load = o->assignment_min_load;
    *out = &m->base;
    return 0;
}
