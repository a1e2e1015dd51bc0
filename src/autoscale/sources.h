/* What kvgate autoscale reads, over HTTP, to fill each pool's signals:
 *   - each pool's engines (YAML engines:, its model's workers): GET
 *     /health (200 = ready) and GET /metrics, read as vLLM, SGLang or
 *     llama.cpp (metrics/load.h): waiting, running, KV usage;
 *   - the gateways (gateways:): GET /metrics: kvgate_requests_total (the
 *     arrival rate; 2xx answers as the requests finished, 5xx as failed),
 *     kvgate_tokens_total{model,kind} (token rates, ISL / OSL per 2xx
 *     answer, the cache hit rate), kvgate_time_to_first_token_seconds and
 *     kvgate_inter_token_latency_seconds (mean and p90 from the buckets'
 *     growth, interpolated inside a bucket), kvgate_slo_requests_total and
 *     kvgate_slo_target_seconds (the SLO misses, below) and
 *     kvgate_admission_queue_waiting (the requests queued, the demand signal
 *     at zero replicas). Counters grow into the signal builder
 *     (autoscale/signals.h) once per tick, so a pool's window is the one
 *     kvgate serve --autoscale and the benchmark use; a window without token
 *     counts takes the pool's isl / osl.
 * A pool with a model: (its cfg's serves, set by the daemon) reads only the
 * series whose model label is that served model: kvgate_model_requests_total
 * {model,class} for its arrivals, 2xx and 5xx, its model's token, latency
 * and SLO series, and kvgate_admission_queue_model_waiting{model} for its
 * requests in the gateway queue. A model: that a gateway's
 * kvgate_model_alias_info names as an alias reads the served model it
 * resolves to there; one it names as a split reads nothing (a pool scales
 * one model; the error says the split's models). A pool without one reads
 * the gateways' whole traffic.
 * SLO misses (slo_miss, slo_miss_ttft, slo_miss_itl): the latency
 * histograms do not pair a request's TTFT with its ITL, and the ITL one
 * counts gaps, not requests, so the share of requests over both targets
 * comes from kvgate_slo_requests_total{model,result}, which the gateway
 * counts per finished request against its --slo-ttft-secs /
 * --slo-itl-secs, or the model's own (a models: entry's slo_ttft_secs /
 * slo_itl_secs): exact, when kvgate_slo_target_seconds says the pool's
 * own targets for its model (kvgate_slo_target_seconds{model}, else the
 * gateway's, model=""; a pool of every model: when every model's are
 * the same). Otherwise (no such series, other targets) only the TTFT
 * share is known: the streams' TTFT histogram growth over the pool's
 * target, linear inside the bucket holding it (as histogram_quantile),
 * plus the 5xx answers, over the 2xx and 5xx answers; the other two are
 * null, never made up.
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

/* kvgate_slo_requests_total's results, in the gateway's order
 * (proxy/obs.c). */
enum {
    KVG_AUTOSCALE_SLO_MET,
    KVG_AUTOSCALE_SLO_TTFT,
    KVG_AUTOSCALE_SLO_ITL,
    KVG_AUTOSCALE_SLO_BOTH,
    KVG_AUTOSCALE_SLO_FAILED,
    KVG_AUTOSCALE_SLO_N
};

/* One read of a gateway's /metrics, for one model or all: totals since it
 * started. */
struct kvg_autoscale_gw_read {
    double requests, ok, failed; /* all answers, 2xx, 5xx */
    double tokens[3];            /* kvgate_tokens_total: prompt, cached, completion */
    double queued;               /* kvgate_admission_queue_waiting, or {model}'s model_waiting */
    struct kvg_autoscale_hist ttft, itl;
    double slo[KVG_AUTOSCALE_SLO_N]; /* kvgate_slo_requests_total by result */
    int has_slo;                     /* ... any line of it seen */
    double slo_target[2]; /* kvgate_slo_target_seconds: ttft, itl (0: not said, or differ) */
    int model_seen;       /* a series labelled with the model (model given) */
};

/* Reads a gateway's /metrics body into *r (zeroed first); bad lines are
 * skipped. model: only its series ("" or NULL: every model's, summed). */
/* What name is in a gateway's /metrics body by its kvgate_model_alias_info
 * {alias,kind,model}: KVG_AUTOSCALE_ALIAS (served: the served model it
 * resolves to), KVG_AUTOSCALE_SPLIT (served: the models it splits to,
 * ", "-separated, cut to cap), or 0: no alias there (a served model's own
 * name, or one the gateway does not know; served ""). */
enum { KVG_AUTOSCALE_ALIAS = 1, KVG_AUTOSCALE_SPLIT = 2 };
int kvg_autoscale_gw_alias(const char *body, size_t len, const char *name, char *served,
                           size_t cap);
void kvg_autoscale_gw_parse(const char *body, size_t len, const char *model,
                            struct kvg_autoscale_gw_read *r);
/* The count of observations over x in non-cumulative counts over n
 * buckets with upper bounds le (the last +Inf), linear inside the bucket
 * holding x (its lower bound the previous one, 0 for the first), all of
 * the +Inf bucket's when x is past the last finite bound. */
double kvg_autoscale_hist_over(const double *counts, const double *le, size_t n, double x);

/* One gateway's SLO outcomes between two reads of it. */
struct kvg_autoscale_slo_delta {
    double finished;          /* requests finished */
    double ttft, itl, either; /* of them, over the TTFT / the ITL / either target, or failed */
    int exact;                /* 0: ttft only (itl, either not known) */
};
/* The growth of now over before judged at targets ttft_s / itl_s (a
 * restarted gateway, a counter below its last value: now itself): exact
 * from kvgate_slo_requests_total when its targets are these, else the TTFT
 * histogram's (see above). -ENOENT when neither is there, -EINVAL for a
 * bad histogram. */
int kvg_autoscale_slo_delta(const struct kvg_autoscale_gw_read *now,
                            const struct kvg_autoscale_gw_read *before, double ttft_s, double itl_s,
                            struct kvg_autoscale_slo_delta *d);
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
    struct kvg_autoscale_gw_read last[KVG_AUTOSCALE_MAX_POOLS]; /* the last read, each pool's */
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

/* Per tick, a pool's SLO outcomes over every gateway (the sums of their
 * kvg_autoscale_slo_delta), in a ring like the latencies'. */
struct kvg_autoscale_slo_ring {
    struct {
        double finished, ttft, itl, either;
        double inexact; /* of finished, those whose itl / either are not known */
    } t[KVG_AUTOSCALE_LAT_TICKS];
    size_t cur; /* ticks closed */
};
void kvg_autoscale_slo_add(struct kvg_autoscale_slo_ring *R,
                           const struct kvg_autoscale_slo_delta *d);
/* The filling tick closes, the next starts empty. */
void kvg_autoscale_slo_next(struct kvg_autoscale_slo_ring *R);
/* The shares of the last nb closed ticks' finished requests: *ttft when
 * any finished, *itl and *either when every one of them was counted
 * exactly; < 0 unknown. */
void kvg_autoscale_slo_window(const struct kvg_autoscale_slo_ring *R, size_t nb, double *either,
                              double *ttft, double *itl);

struct kvg_autoscale_sources {
    struct kvg_https engines[KVG_AUTOSCALE_MAX_POOLS][KVG_AUTOSCALE_MAX_SOURCES];
    struct kvg_autoscale_gateway gw[KVG_AUTOSCALE_MAX_SOURCES];
    size_t ngw;
    uint32_t timeout_ms;
    /* Owned, each pool's: its window, its latencies, its SLO outcomes. */
    struct kvg_autoscale_obs *obs[KVG_AUTOSCALE_MAX_POOLS];
    struct kvg_autoscale_lat_ring *ttft[KVG_AUTOSCALE_MAX_POOLS], *itl[KVG_AUTOSCALE_MAX_POOLS];
    struct kvg_autoscale_slo_ring *slo[KVG_AUTOSCALE_MAX_POOLS];
    /* Each pool's served model as the last gateway read resolved its
     * model: (an alias followed; "" without model:). */
    char served[KVG_AUTOSCALE_MAX_POOLS][256];
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
