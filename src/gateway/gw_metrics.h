/* kvgate serve's own Prometheus metrics. Hot-path series are created once at
 * start (per route and status class), so a request only does atomic adds;
 * per-worker series are refreshed from the pool's atomics at scrape time and
 * removed when a worker leaves. */
#ifndef KVG_GATEWAY_GW_METRICS_H
#define KVG_GATEWAY_GW_METRICS_H

#include "metrics/metrics.h"
#include "router/pool.h"

enum kvg_gw_route { KVG_ROUTE_CHAT, KVG_ROUTE_COMPLETIONS, KVG_ROUTE_N };

struct kvg_gw_metrics {
    struct kvg_metrics_registry *reg;
    struct kvg_metrics_series *requests[KVG_ROUTE_N][6]; /* by status class 1xx..5xx, other */
    struct kvg_metrics_series *duration[KVG_ROUTE_N];
    struct kvg_metrics_series *ttfb[KVG_ROUTE_N];
    struct kvg_metrics_series *retries, *client_gone, *upstream_errors, *no_worker;
    struct kvg_metrics_series *match_ratio, *tokenizer_fallback, *block_size_mismatch;
    struct kvg_metrics_series *shed;
    struct kvg_metrics_family *quota_f, *adm_f; /* by event: admitted, limited, ... */
    struct kvg_metrics_family *w_cached;
    struct kvg_metrics_family *w_active, *w_health, *w_processed, *w_cb, *decisions;
    struct kvg_metrics_series *workers;
    struct kvg_metrics_family *kv_entries, *kv_bytes, *kv_evictions, *kv_worker_blocks, *kv_batches,
        *kv_gaps, *kv_decode_errors, *kv_drops;
    const char *policy;
};

int kvg_gw_metrics_init(struct kvg_gw_metrics *m, const char *policy);
void kvg_gw_metrics_free(struct kvg_gw_metrics *m);
/* One finished request. ttfb_s < 0 when nothing was sent. */
void kvg_gw_metrics_request(struct kvg_gw_metrics *m, enum kvg_gw_route r, int status,
                            double duration_s, double ttfb_s);
/* Renders the registry after refreshing per-worker series from the pool. */
struct kvg_gateway;
/* Renders gw's registry after refreshing what is read at scrape time: the
 * pool's workers, the KV index and its subscribers (when configured), the
 * quota store and the admission queue. */
int kvg_gw_metrics_render(struct kvg_gateway *gw, struct kvg_buf *out);
/* A worker left: its series go. */
/* A routing decision over a tokenized prompt: the share of its blocks the
 * chosen worker already held. */
void kvg_gw_metrics_route(struct kvg_gw_metrics *m, uint32_t matched, size_t nblocks);
void kvg_gw_metrics_forget_worker(struct kvg_gw_metrics *m, const char *url);

#endif
