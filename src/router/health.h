/* Active health checking of the pool's workers; see health.c. */
#ifndef KVG_ROUTER_HEALTH_H
#define KVG_ROUTER_HEALTH_H

#include <uv.h>

#include "net/http_client.h"
#include "router/pool.h"

struct kvg_health {
    int enabled;
    uint32_t interval_ms, timeout_ms;
    uint32_t failure_threshold, success_threshold;
    const char *endpoint;
    struct kvg_pool *pool;
    struct kvg_http_client *client;
    uv_timer_t timer;
    uv_timer_t startup_timer; /* re-checks workers never healthy yet, every second */
    unsigned inflight;
};

/* Starts checking on `loop` (the caller fills the settings first). 0, or a
 * negative code with nothing started (do not call kvg_health_stop then). */
int kvg_health_start(struct kvg_health *h, uv_loop_t *loop, struct kvg_pool *pool);
/* Checks every worker now (a worker was added, or a reload happened). */
void kvg_health_check_now(struct kvg_health *h);
/* Stops the timers; calls in flight finish on the loop. h is the caller's
 * and the timers in it close without a callback: h must stay valid until the
 * loop has run again (the closes and those calls end there). */
void kvg_health_stop(struct kvg_health *h);

#endif
