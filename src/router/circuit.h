/* Per-worker circuit breaker with sglang-router's semantics: `failure_threshold`
 * consecutive failures open it; after `timeout_ms` it half-opens and lets
 * requests through; `success_threshold` successes close it, one failure
 * reopens it. A success resets the failure count. Only server-side failures
 * count (5xx, connect errors, timeouts), never 4xx. Lock-free. */
#ifndef KVG_ROUTER_CIRCUIT_H
#define KVG_ROUTER_CIRCUIT_H

#include <stdint.h>

#include "router/worker.h"

struct kvg_cb_config {
    int enabled;
    uint32_t failure_threshold; /* --cb-failure-threshold 10 */
    uint32_t success_threshold; /* --cb-success-threshold 3 */
    uint64_t timeout_ms;        /* --cb-timeout-duration-secs 60 */
};

void kvg_cb_config_default(struct kvg_cb_config *c);
/* May a request go to w now? Moves Open to HalfOpen when the timeout passed. */
int kvg_cb_allows(const struct kvg_cb_config *c, struct kvg_worker *w, uint64_t now_ms);
void kvg_cb_record(const struct kvg_cb_config *c, struct kvg_worker *w, int success,
                   uint64_t now_ms);

#endif
