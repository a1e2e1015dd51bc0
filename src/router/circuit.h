/* Per-worker circuit breaker with sglang-router's semantics: `failure_threshold`
 * consecutive failures open it; after `timeout_ms` it half-opens and lets
 * requests through; `success_threshold` successes close it, one failure
 * reopens it. A success resets the failure count. Lock-free.
 *
 * It judges the worker, not the request. Failures of the worker count:
 * connect errors, timeouts, broken answers, 502/503/504. An error the engine
 * answered to one request (a 500 or another 4xx/5xx; llama.cpp answers a
 * malformed request with 500) may be the request's fault, so it counts only
 * when the worker is an outlier: over its recent answers (a window of about
 * KVG_CB_WINDOW) its share of error answers exceeds the share of the rest of
 * the pool by at least half, each side with KVG_CB_MIN_ANSWERS answers. A
 * client sending bad requests to every worker moves every share alike and
 * opens no circuit; an engine failing what the others serve is ejected. */
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

#define KVG_CB_WINDOW 64     /* answers kept per worker; halved when full */
#define KVG_CB_MIN_ANSWERS 8 /* fewer answers on either side: no evidence */

/* Adds one answer (an error answer if error) to w's recent answers. */
void kvg_cb_note_answer(struct kvg_worker *w, int error);
/* w's recent answers and error answers, read together. */
void kvg_cb_answers(const struct kvg_worker *w, uint32_t *answers, uint32_t *errors);
/* Does an error answer count against a worker whose recent answers are
 * (n, err) while the rest of the pool's are (others_n, others_err)? 1 when
 * both have KVG_CB_MIN_ANSWERS and err/n - others_err/others_n >= 1/2. */
int kvg_cb_outlier(uint32_t n, uint32_t err, uint32_t others_n, uint32_t others_err);

#endif
