/* The embedded autoscaler's state, shared by autoscale_setup.c (the
 * controller's tick, GET /autoscale) and autoscale_local.c (the local
 * actuator's hooks into the router pool, the routing history, prewarm and
 * slow start). Main-loop thread only, but for the routing history (its own
 * mutex, recorded from every loop) and the signal feed (its shards). */
#ifndef KVG_SERVE_AUTOSCALE_INT_H
#define KVG_SERVE_AUTOSCALE_INT_H

#include "autoscale/ctl.h"
#include "autoscale/signals.h"
#include "autoscale/warm.h"
#include "serve/serve.h"

#define KVG_SERVE_WARMUPS 16

struct kvg_serve_warmup;
/* One prewarm call's context. */
struct kvg_serve_warm_call {
    struct kvg_serve_warmup *wu;
    size_t i;
};

/* A new replica being prewarmed (its replays sent at once: the engine
 * batches their prefills), then ramped up (slow start). */
struct kvg_serve_warmup {
    int on;
    char url[96];
    struct kvg_http_target t;
    char *bodies[64]; /* owned: the prewarm requests kvgate built (autoscale_local.c) */
    size_t lens[64];
    char auth[300]; /* the replica's "Bearer <key>" (--upstream-api-key, or its own) */
    struct kvg_http_header auth_h;
    int has_auth;
    size_t n, next, ok, pending;
    int ramping;
    double t0, ramp_t0;
    struct kvg_http_call *call[64]; /* in flight, by body index */
    struct kvg_serve_warm_call ctx[64];
    struct kvg_serve_autoscale *a;
};

struct kvg_serve_autoscale {
    struct kvg_autoscale_ctl *ctl;
    uv_timer_t timer;
    int timer_on;
    struct kvg_serve *sv;
    double t0;      /* kvg_now_s() at start; tick times count from it */
    uint64_t ticks; /* the k of the last tick, at t0 + k x the period (the first at k = 1) */
    /* What each pool reads (autoscale_setup.c): with models:, the served
     * model its `model:` names, its pool cfg's serves; the pools of one
     * model form a group (at most KVG_ADM_GROUPS) with one feed and one
     * admission count. Without, one group of every request: gmodel[0] "". */
    int group[KVG_AUTOSCALE_MAX_POOLS];
    const char *gmodel[KVG_AUTOSCALE_MAX_POOLS]; /* a group's served model: a pool cfg's serves */
    size_t ngroups;
    int by_model; /* models: the pools read their groups' models alone */
    /* The proxy's per-request observations (any loop thread), into their
     * model's group's feed, folded each tick into each of its pools'
     * windows (judged against the pool's own targets). */
    struct kvg_autoscale_feed *feed[KVG_AUTOSCALE_MAX_POOLS]; /* owned, by group */
    struct kvg_autoscale_obs *obs[KVG_AUTOSCALE_MAX_POOLS];   /* owned */
    struct kvg_metrics_family *desired_f, *ready_f;
    /* actuator local */
    int local;
    struct kvg_autoscale_local_cfg lcfg;
    struct kvg_autoscale_hot *hot;  /* owned */
    struct kvg_http_client *client; /* the prewarm's, on the main loop */
    struct kvg_serve_warmup warm[KVG_SERVE_WARMUPS];
    char logged_err[KVG_AUTOSCALE_MAX_POOLS][200]; /* the actuator errors last logged */
};

/* Builds the local actuator with its hooks and hands it to a->ctl; hooks
 * the proxy's routing history and the gate's hold-when-empty. */
int kvg__serve_autoscale_local_init(struct kvg_serve_autoscale *a, char *err, size_t errlen);
/* Per tick (main loop): slow-start ramps, and the gateway queue woken when
 * a replica is ready. */
void kvg__serve_autoscale_local_tick(struct kvg_serve_autoscale *a, double now);
int kvg__serve_autoscale_local_start(struct kvg_serve_autoscale *a, uv_loop_t *loop);
/* Cancels prewarms in flight and closes the client (before the loop ends). */
void kvg__serve_autoscale_local_stop(struct kvg_serve_autoscale *a);
void kvg__serve_autoscale_local_free(struct kvg_serve_autoscale *a);

#endif
