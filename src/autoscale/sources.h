/* What kvgate autoscale reads, over HTTP, to fill each pool's signals:
 *   - each pool's engines (YAML engines:): GET /health (200 = ready) and
 *     GET /metrics, read as vLLM, SGLang or llama.cpp (metrics/load.h):
 *     waiting, running, KV usage;
 *   - the gateways (gateways:): GET /metrics: kvgate_requests_total (the
 *     arrival rate; 2xx answers as the requests finished),
 *     kvgate_tokens_total{model,kind} (token rates, ISL / OSL per 2xx
 *     answer, the cache hit rate), kvgate_time_to_first_token_seconds and
 *     kvgate_inter_token_latency_seconds (summed over their model series;
 *     mean and p90 from the buckets' growth, interpolated inside a bucket) and
 *     kvgate_admission_queue_waiting (the requests queued, the demand signal
 *     at zero replicas). Counters grow into the signal builder
 *     (autoscale/signals.h) once per tick, so a pool's window is the one
 *     kvgate serve --autoscale and the benchmark use. Every pool sees the
 *     gateways' whole traffic; a window without token counts takes the
 *     pool's isl / osl. SLO misses are not known here (a
 *     histogram does not pair a request's TTFT with its ITL): null.
 * A source that does not answer within its timeout counts as not ready and
 * adds nothing; the last error is kept for GET /autoscale.
 *
 * Blocking, on kvgate autoscale's tick thread only (discovery's client). */
#ifndef KVG_AUTOSCALE_SOURCES_H
#define KVG_AUTOSCALE_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/ctl.h"
#include "autoscale/signals.h"
#include "net/https.h"

#define KVG_AUTOSCALE_HIST_BUCKETS 48

/* A histogram as a gateway's /metrics shows it: cumulative counts by upper
 * bound (le, ascending, the last +Inf), its sum and count. */
struct kvg_autoscale_hist {
    size_t n;
    double le[KVG_AUTOSCALE_HIST_BUCKETS];
    double cum[KVG_AUTOSCALE_HIST_BUCKETS];
    double sum, count;
    int bad; /* buckets out of order, too many or no +Inf: not used */
};

/* One read of a gateway's /metrics: totals since it started. */
struct kvg_autoscale_gw_read {
    double requests, ok; /* kvgate_requests_total: all, 2xx */
    double tokens[3];    /* kvgate_tokens_total: prompt, cached, completion */
    double queued;       /* kvgate_admission_queue_waiting */
    struct kvg_autoscale_hist ttft, itl;
};

/* Reads a gateway's /metrics body into *r (zeroed first); bad lines are
 * skipped. */
void kvg_autoscale_gw_parse(const char *body, size_t len, struct kvg_autoscale_gw_read *r);
/* The growth of now over before (a restarted gateway, fewer observations
 * than before: now itself) into counts[0..now->n) (non-cumulative, added
 * to), *sum and *count (added to). -EINVAL when the two do not have the
 * same buckets or now is bad. */
int kvg_autoscale_hist_delta(const struct kvg_autoscale_hist *now,
                             const struct kvg_autoscale_hist *before, double *counts, double *sum,
                             double *count);
/* The q-quantile (0..1) of non-cumulative counts over n buckets with upper
 * bounds le (the last +Inf): linear inside the bucket, as Prometheus'
 * histogram_quantile (metrics/metrics.h's kvg_metrics_quantile). < 0 when
 * empty. */
double kvg_autoscale_hist_quantile(const double *counts, const double *le, size_t n, double q);

struct kvg_autoscale_gateway {
    struct kvg_https api;
    int seen;
    struct kvg_autoscale_gw_read last; /* the last read */
};

/* Per tick, a latency histogram's growth over every gateway, in a ring of
 * ticks like the signal builder's buckets. */
#define KVG_AUTOSCALE_LAT_TICKS 256
struct kvg_autoscale_lat_ring {
    size_t n; /* buckets (0: none read yet) */
    double le[KVG_AUTOSCALE_HIST_BUCKETS];
    double counts[KVG_AUTOSCALE_LAT_TICKS][KVG_AUTOSCALE_HIST_BUCKETS];
    double sum[KVG_AUTOSCALE_LAT_TICKS], count[KVG_AUTOSCALE_LAT_TICKS];
    size_t cur; /* ticks closed */
};

struct kvg_autoscale_sources {
    struct kvg_https engines[KVG_AUTOSCALE_MAX_POOLS][KVG_AUTOSCALE_MAX_SOURCES];
    struct kvg_autoscale_gateway gw[KVG_AUTOSCALE_MAX_SOURCES];
    size_t ngw;
    uint32_t timeout_ms;
    struct kvg_autoscale_obs *obs[KVG_AUTOSCALE_MAX_POOLS]; /* owned: each pool's window */
    struct kvg_autoscale_lat_ring *ttft, *itl;              /* owned */
    char error[256]; /* the last source that failed, and why ("" none) */
};

/* One client per configured URL, each pool's window. 0, -ENOMEM or
 * KVG_ECONFIG with err. */
int kvg_autoscale_sources_init(struct kvg_autoscale_sources *s,
                               const struct kvg_autoscale_config *c, uint32_t timeout_ms, char *err,
                               size_t errlen);
void kvg_autoscale_sources_free(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c);
/* Reads every source and fills sigs[i] (pool i of c) for time now
 * (seconds). */
void kvg_autoscale_sources_read(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c, double now,
                                struct kvg_autoscale_signals *sigs);

#endif
