/* manual (sglang's): sticky assignment of routing keys to workers. A key
 * seen for the first time is assigned (at random, or to the least loaded
 * worker with --assignment-mode min_load) and keeps that worker for as long
 * as it is eligible; adding workers never moves existing keys; a key whose
 * worker left or became ineligible is reassigned. Keys idle longer than
 * --max-idle-secs are forgotten. A request without a key is routed like a new
 * key but not pinned. Thread-safe (one mutex; the table is small per key). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "router/policy.h"
#include "router/ring.h"

#define NBUCKETS 4096

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
            if (now - (*e)->used_ms > m->max_idle_ms) {
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

static int assign(struct manualp *m, struct kvg_worker *const *cand, size_t n,
                  const struct kvg_route_ctx *ctx)
{
    return m->min_load ? kvg_policy_min_load(cand, n, ctx) : (int)kvg_rng_below(ctx->rng, n);
}

static int select_manual(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct manualp *m = (struct manualp *)p;
    if (n == 0) return KVG_ENOWORKER;
    char key[1024];
    size_t kl = kvg_policy_routing_key(ctx, key, sizeof key);
    if (!kl) return assign(m, cand, n, ctx);
    uint64_t h = kvg_ring_hash(key, kl);
    pthread_mutex_lock(&m->mu);
    sweep(m, ctx->now_ms);
    struct entry *e = m->b[h % NBUCKETS];
    while (e && e->h != h) e = e->next;
    int idx = e ? find_url(cand, n, e->url) : -1;
    if (idx < 0 && ctx->dry_run) {
        pthread_mutex_unlock(&m->mu);
        return assign(m, cand, n, ctx);
    }
    if (idx < 0) {
        idx = assign(m, cand, n, ctx);
        char *url = strdup(cand[idx]->url);
        if (url && !e && (e = calloc(1, sizeof *e))) {
            e->h = h;
            e->next = m->b[h % NBUCKETS];
            m->b[h % NBUCKETS] = e;
            m->n++;
        }
        if (url && e) {
            free(e->url);
            e->url = url;
        } else {
            free(url);
        }
        if (ex) snprintf(ex->note, sizeof ex->note, "key assigned");
    } else if (ex) {
        snprintf(ex->note, sizeof ex->note, "sticky key");
    }
    if (e) e->used_ms = ctx->now_ms;
    pthread_mutex_unlock(&m->mu);
    return idx;
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
    free(m);
}

static const struct kvg_policy_ops ops = {
    .name = "manual", .select = select_manual, .destroy = destroy};

int kvg_policy_manual_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct manualp *m = calloc(1, sizeof *m);
    if (!m) return -ENOMEM;
    m->base.ops = &ops;
    pthread_mutex_init(&m->mu, NULL);
    m->max_idle_ms = o->max_idle_ms ? o->max_idle_ms : 14400ull * 1000;
    m->min_load = o->assignment_min_load;
    *out = &m->base;
    return 0;
}
