/* The pool of workers and the routing step that picks one for a request.
 *
 * Shared by every loop thread. kvg_pool_pick filters candidates (healthy,
 * circuit allows, serves the model, not excluded by a retry), runs the policy,
 * and charges the chosen worker (in_flight + 1, a reference). Every pick is
 * paired with exactly one kvg_pool_release, whatever way the request ends:
 * that pairing is what keeps in-flight counts true. */
#ifndef KVG_ROUTER_POOL_H
#define KVG_ROUTER_POOL_H

#include <pthread.h>

#include "router/circuit.h"
#include "router/policy.h"
#include "router/worker.h"

#define KVG_POOL_MAX_WORKERS 1024

struct kvg_pool {
    pthread_rwlock_t lock;
    struct kvg_worker *w[KVG_POOL_MAX_WORKERS];
    size_t n;
    struct kvg_policy *policy; /* owned */
    struct kvg_cb_config cb;
    int start_unhealthy; /* new workers wait for their first health check */
    /* Called (under the write lock) when a worker leaves: the KV index and
     * policies forget it. Optional. */
    void (*on_remove)(void *ud, struct kvg_worker *w);
    void *on_remove_ud;
};

/* Takes ownership of policy. */
int kvg_pool_init(struct kvg_pool *p, struct kvg_policy *policy, const struct kvg_cb_config *cb);
void kvg_pool_destroy(struct kvg_pool *p);

/* Adds a worker by URL. -EEXIST if present, -ENOSPC when full, or a parse error. */
int kvg_pool_add(struct kvg_pool *p, const char *url);
/* Removes by URL; KVG_ENOTFOUND if absent. In-flight requests finish. */
int kvg_pool_remove(struct kvg_pool *p, const char *url);
/* Makes the pool hold exactly these URLs (SIGHUP reload): adds the new ones,
 * removes the missing ones, keeps the rest with their state. */
int kvg_pool_set(struct kvg_pool *p, char *const *urls, size_t n);

/* Copies the current workers into out[] with a reference each (caller unrefs
 * each); returns the count. */
size_t kvg_pool_snapshot(struct kvg_pool *p, struct kvg_worker **out, size_t max);

/* Picks a worker. exclude[] lists workers already tried by this request.
 * On success *out holds a reference and in_flight was incremented.
 * KVG_ENOWORKER when no candidate; *nhealthy tells whether any worker at all
 * was healthy (503 vs 404 for an unknown model). */
int kvg_pool_pick(struct kvg_pool *p, const struct kvg_route_ctx *ctx,
                  struct kvg_worker *const *exclude, size_t nexclude, struct kvg_worker **out,
                  int *model_known, struct kvg_route_explain *ex);

enum kvg_outcome { KVG_OUT_OK, KVG_OUT_FAIL, KVG_OUT_CLIENT_GONE, KVG_OUT_CLIENT_ERROR };
/* Ends a pick: in_flight - 1, circuit breaker bookkeeping, policy on_done,
 * reference dropped. */
void kvg_pool_release(struct kvg_pool *p, struct kvg_worker *w, enum kvg_outcome outcome,
                      const struct kvg_route_ctx *ctx);

#endif
