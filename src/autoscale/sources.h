/* What kvgate autoscale reads, over HTTP, to fill each pool's signals:
 *   - each pool's engines (YAML engines:): GET /health (200 = ready) and
 *     GET /metrics, read as vLLM, SGLang or llama.cpp (metrics/load.h):
 *     waiting, running, KV usage;
 *   - the gateways (gateways:): GET /metrics: kvgate_requests_total (the
 *     arrival rate, as a delta per tick), kvgate_time_to_first_byte_seconds
 *     (the mean TTFT of the tick) and kvgate_admission_queue_waiting (the
 *     requests queued, the demand signal at zero replicas). Every pool sees
 *     the gateways' whole traffic, as kvgate serve --autoscale does; token
 *     rates are that rate times the pool's isl / osl.
 * A source that does not answer within its timeout counts as not ready and
 * adds nothing; the last error is kept for GET /autoscale.
 *
 * Blocking, on kvgate autoscale's tick thread only (discovery's client). */
#ifndef KVG_AUTOSCALE_SOURCES_H
#define KVG_AUTOSCALE_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/ctl.h"
#include "net/https.h"

struct kvg_autoscale_gateway {
    struct kvg_https api;
    int seen;
    double requests, ttfb_n, ttfb_sum; /* the last read's counters */
};

struct kvg_autoscale_sources {
    struct kvg_https engines[KVG_AUTOSCALE_MAX_POOLS][KVG_AUTOSCALE_MAX_SOURCES];
    struct kvg_autoscale_gateway gw[KVG_AUTOSCALE_MAX_SOURCES];
    size_t ngw;
    uint32_t timeout_ms;
    double last_t;
    char error[256]; /* the last source that failed, and why ("" none) */
};

/* One client per configured URL. 0 or KVG_ECONFIG with err. */
int kvg_autoscale_sources_init(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c, uint32_t timeout_ms,
                                char *err, size_t errlen);
void kvg_autoscale_sources_free(struct kvg_autoscale_sources *s,
                                 const struct kvg_autoscale_config *c);
/* Reads every source and fills sigs[i] (pool i of c) for time now
 * (seconds). */
void kvg_autoscale_sources_read(struct kvg_autoscale_sources *s,
                                 const struct kvg_autoscale_config *c, double now,
                                 struct kvg_autoscale_signals *sigs);

#endif
