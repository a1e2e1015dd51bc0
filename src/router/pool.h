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
    /* Called (under the write lock) when a worker joins or leaves: the KV
     * index, its subscriber and the metrics follow. Optional. */
    void (*on_add)(void *ud, struct kvg_worker *w);
    void (*on_remove)(void *ud, struct kvg_worker *w);
    void *hooks_ud;
    /* Called after every charged pick, on the picking thread under the
     * read lock: the replicas' exchange publishes it (router/exchange.h).
     * Optional; set before the pool is shared; must be cheap. policy is
     * the one that picked (ctx's, else the pool's). */
    void (*on_pick)(void *ud, struct kvg_worker *w, const struct kvg_policy *policy,
                    const struct kvg_route_ctx *ctx);
    void *on_pick_ud;
};

/* Takes ownership of policy. */
int kvg_pool_init(struct kvg_pool *p, struct kvg_policy *policy, const struct kvg_cb_config *cb);
void kvg_pool_destroy(struct kvg_pool *p);

/* Adds a worker by URL. -EEXIST if present, -ENOSPC when full, or a parse error. */
int kvg_pool_add(struct kvg_pool *p, const char *url);
/* The same with the worker's KV event endpoints (NULL or "" for none). */
int kvg_pool_add_ex(struct kvg_pool *p, const char *url, const char *kv_endpoint,
                    const char *replay_endpoint);
/* The same with url's target resolved already (kvg_worker_new_at; NULL:
 * resolve now, blocking): how a request handler adds one. */
int kvg_pool_add_at(struct kvg_pool *p, const char *url, const char *kv_endpoint,
                    const char *replay_endpoint, const struct kvg_http_target *t);
/* Removes by URL; KVG_ENOTFOUND if absent. In-flight requests finish. */
int kvg_pool_remove(struct kvg_pool *p, const char *url);
/* Records a worker's role and DP rank (-1 none); KVG_ENOTFOUND if absent.
 * A pick reads the role when its context asks for some (ctx->roles). */
int kvg_pool_set_role(struct kvg_pool *p, const char *url, int role, int dp_rank);
/* Sets a worker's locality labels ("node=n1,rack=r1,zone=z1"; NULL none);
 * KVG_ENOTFOUND if absent. */
int kvg_pool_set_labels(struct kvg_pool *p, const char *url, const char *labels);
/* Copies w's labels into out (cap bytes) under the pool's lock, as a reload
 * may be changing them. */
void kvg_pool_labels(struct kvg_pool *p, const struct kvg_worker *w, char *out, size_t cap);
/* Sets the model a discovered worker's label names (NULL none);
 * KVG_ENOTFOUND if absent. Read under the pool's lock (a pick's filter
 * runs under it), or copied by kvg_pool_model_label. */
int kvg_pool_set_model_label(struct kvg_pool *p, const char *url, const char *model);
void kvg_pool_model_label(struct kvg_pool *p, const struct kvg_worker *w, char *out, size_t cap);
/* Sets an SGLang prefill's bootstrap port (0 none); KVG_ENOTFOUND if absent. */
int kvg_pool_set_bootstrap_port(struct kvg_pool *p, const char *url, int port);
/* Makes the pool hold exactly these URLs (SIGHUP reload): adds the new ones,
 * removes the missing ones (but the autoscaler's: w->scaled), keeps the
 * rest with their state. A list naming
 * one worker twice (trailing '/' aside) is refused whole with -EEXIST and
 * the pool is left as it was: the two would collapse into one worker. */
int kvg_pool_set(struct kvg_pool *p, char *const *urls, size_t n);
/* kvg_pool_set with per-worker KV endpoints (arrays of n, entries may be
 * NULL; the arrays themselves may be NULL). */
int kvg_pool_set_ex(struct kvg_pool *p, char *const *urls, char *const *kv_endpoints,
                    char *const *replay_endpoints, size_t n);

/* The index of the first entry of urls[0..n) that repeats an earlier one
 * (trailing '/' aside), or -1. */
int kvg_pool_find_duplicate(char *const *urls, size_t n);

/* Copies the current workers into out[] with a reference each (caller unrefs
 * each); returns the count. */
size_t kvg_pool_snapshot(struct kvg_pool *p, struct kvg_worker **out, size_t max);
/* The largest context any worker reports for `model` (its max_model_len in
 * /v1/models), or 0 when none says. */
uint32_t kvg_pool_max_model_len(struct kvg_pool *p, const char *model, size_t len);
/* 1 when a worker lists `model` as a LoRA adapter (with a parent in its
 * /v1/models). */
int kvg_pool_model_is_adapter(struct kvg_pool *p, const char *model, size_t len);
/* 1 when a worker's /v1/models lists `model` (kvg_worker_lists). */
int kvg_pool_model_listed(struct kvg_pool *p, const char *model, size_t len);
/* Workers in the pool now, healthy or not. */
size_t kvg_pool_size(struct kvg_pool *p);

/* Picks a worker. exclude[] lists workers already tried by this request.
 * On success *out holds a reference and in_flight was incremented.
 * KVG_ENOWORKER when no candidate; *nhealthy tells whether any worker at all
 * was healthy (503 vs 404 for an unknown model). */
/* A routing decision and what it charged to the worker, Dynamo-style: the
 * prompt tokens the worker must compute (charged until its first token) and
 * the KV blocks the request occupies (charged until it ends). The caller
 * keeps it for the request's life and hands it back. */
struct kvg_pick {
    struct kvg_worker *w;      /* holds a reference */
    uint32_t matched_blocks;   /* prefix blocks the policy believes w has cached */
    uint64_t prefill_tokens;   /* still charged to w->active_prefill_tokens */
    uint64_t decode_blocks;    /* still charged to w->active_decode_blocks */
    uint64_t picked_ms;        /* ctx->now_ms of the pick */
    uint64_t work_tokens;      /* prefill ahead of it on w at the pick + its own */
    struct kvg_policy *policy; /* ctx->policy of the pick (NULL: the pool's): the one that learns */
};

/* Picks a worker. exclude[] lists workers already tried by this request.
 * On success out->w holds a reference, in_flight was incremented and the
 * charges applied. KVG_ENOWORKER when no candidate; *model_known tells
 * whether any worker serves the model at all (503 vs 404). */
int kvg_pool_pick(struct kvg_pool *p, const struct kvg_route_ctx *ctx,
                  struct kvg_worker *const *exclude, size_t nexclude, struct kvg_pick *out,
                  int *model_known, struct kvg_route_explain *ex);

/* Why kvg_pool_pick found no worker for ctx, in words an operator can act
 * on (written into buf, cap bytes, NUL-terminated): the pool is empty; no
 * worker serves the model (and which models are served); or how many of
 * those serving it are unhealthy, draining, behind an open circuit, of
 * another role or left out by the request's filter. Takes the read lock. */
void kvg_pool_why_none(struct kvg_pool *p, const struct kvg_route_ctx *ctx, char *buf, size_t cap);

/* The worker named url now caches ctx's prompt although no pick sent it
 * there (a prewarm's replay answered 200): the policy (ctx->policy, else the
 * pool's) records it as a pick of that worker would (policy.h, place).
 * Charges nothing. KVG_ENOTFOUND when no worker has that url. */
int kvg_pool_place(struct kvg_pool *p, const char *url, const struct kvg_route_ctx *ctx);
/* Another replica's pick of the worker named url (router/exchange.h): its
 * peer_picks counts it, for kvg_policy_shared_load. 0 or KVG_ENOTFOUND. */
int kvg_pool_peer_pick(struct kvg_pool *p, const char *url);

/* The first output token arrived: the prefill charge ends. Idempotent. */
void kvg_pool_first_token(struct kvg_pool *p, struct kvg_pick *pick);
/* The same at now_ms (the clock of the pick's ctx->now_ms): the policy also
 * learns the time to that token (on_first_token). */
void kvg_pool_first_token_at(struct kvg_pool *p, struct kvg_pick *pick, uint64_t now_ms);

/* KVG_OUT_LOCAL: kvgate itself failed (out of file descriptors, memory or
 * buffers): the worker is not to blame, its circuit breaker is untouched.
 * KVG_OUT_FAIL: the worker failed (unreachable, timed out, 502/503/504, a
 * broken answer). KVG_OUT_ANSWER_ERROR: the engine answered this request
 * with an error (a 500, another 4xx): it counts against the worker only when
 * the worker is an outlier among the pool (router/circuit.h).
 * KVG_OUT_CLIENT_ERROR: the request was refused as a client's (429). */
enum kvg_outcome {
    KVG_OUT_OK,
    KVG_OUT_FAIL,
    KVG_OUT_CLIENT_GONE,
    KVG_OUT_CLIENT_ERROR,
    KVG_OUT_LOCAL,
    KVG_OUT_ANSWER_ERROR
};
/* The outcome of an answer with HTTP status `status` (router/circuit.h). */
enum kvg_outcome kvg_pool_answer_outcome(int status);
/* Ends a pick: in_flight - 1, remaining charges removed, circuit breaker
 * bookkeeping, policy on_done, reference dropped; pick->w becomes NULL. */
void kvg_pool_release(struct kvg_pool *p, struct kvg_pick *pick, enum kvg_outcome outcome,
                      const struct kvg_route_ctx *ctx);

#endif
