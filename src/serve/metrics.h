/* kvgate serve's own Prometheus metrics. Hot-path series are created once at
 * start (per route and status class), so a request only does atomic adds;
 * per-worker series are refreshed from the pool's atomics at scrape time and
 * removed when a worker leaves. */
#ifndef KVG_SERVE_METRICS_H
#define KVG_SERVE_METRICS_H

#include "metrics/metrics.h"
#include "proxy/proxy.h"
#include "router/pool.h"

struct kvg_serve_metrics {
    struct kvg_metrics_registry *reg;
    struct kvg_proxy_metrics proxy; /* what the proxy observes */
    struct kvg_metrics_series *tokenizer_fallback, *block_size_mismatch;
    struct kvg_metrics_series *shed;
    struct kvg_metrics_family *model_shed;      /* {model, limit}: a models: entry's limits */
    struct kvg_metrics_family *quota_f, *adm_f; /* counters by event: admitted, limited, ... */
    struct kvg_metrics_series *adm_waiting, *quota_pending;
    struct kvg_metrics_family *adm_class_f;  /* waiting by class */
    struct kvg_metrics_family *adm_model_f;  /* {model}: waiting by served model (models:) */
    struct kvg_metrics_family *alias_f;      /* {alias,kind,model}: the names of models: */
    struct kvg_metrics_family *slo_target_f; /* {model,latency}; NULL: no targets at start */
    struct kvg_metrics_series *adm_class[4]; /* its series, made at the first scrape */
    struct kvg_metrics_family *w_cached;
    struct kvg_metrics_family *w_active, *w_health, *w_processed, *w_cb, *decisions;
    struct kvg_metrics_family *pd_requests;      /* kvgate_pd_requests_total{worker,model,leg} */
    struct kvg_metrics_family *w_scrape_errors;  /* counter */
    struct kvg_metrics_family *w_models_dropped; /* counter */
    struct kvg_metrics_family *w_mode;           /* {worker, model, mode}: 1 for the current */
    struct kvg_metrics_family *w_tok_checks, *w_tok_mis;             /* counters */
    struct kvg_metrics_family *w_waiting, *w_running, *w_kv, *w_age; /* engine load, fresh only */
    struct kvg_metrics_series *workers;
    struct kvg_metrics_family *tokc; /* tokenizer prefix cache: counters by event */
    struct kvg_metrics_series *tokc_bytes, *tokc_entries;
    struct kvg_metrics_family *kv_entries, *kv_bytes, *kv_evictions, *kv_worker_blocks, *kv_batches,
        *kv_gaps, *kv_decode_errors, *kv_drops;
    struct kvg_metrics_family *disc_reg, *disc_dereg, *disc_relists, *disc_errors, *disc_workers;
    const char *policy;
};

/* policy: its name for the decision series (kept, not copied);
 * tenant_labels: kvgate_tokens_total gets a tenant label
 * (--metrics-tenant-labels). */
int kvg_serve_metrics_init(struct kvg_serve_metrics *m, const char *policy, int tenant_labels);
/* The served models of cat (a models: section) get their token and
 * latency series now, at zero (the single model's name is known only when
 * a worker answers for it; with tenant labels, the token series come with
 * each tenant's first answer). */
/* --slo-ttft-secs / --slo-itl-secs (both > 0), or models_own (some
 * models: entry has targets of its own): every finished request of a
 * model with targets is counted against them in
 * kvgate_slo_requests_total{model,result}, and
 * kvgate_slo_target_seconds{model,latency} says them (what kvgate
 * autoscale checks against its pools' own): model "" the gateway's (the
 * flags'), each served model's set by kvg_serve_metrics_catalog. Called
 * after init, before kvg_serve_metrics_models; 0 or a registry code. */
int kvg_serve_metrics_slo(struct kvg_serve_metrics *m, double ttft_s, double itl_s, int models_own);
struct kvg_catalog;
int kvg_serve_metrics_models(struct kvg_serve_metrics *m, const struct kvg_catalog *cat);
/* What the gateway says of its catalog cat (at start, and after each
 * reload that installs one in place of old; NULL: none, or the flags'
 * one model): each served model's SLO targets in
 * kvgate_slo_target_seconds{model,latency} (when the family exists), and
 * kvgate_model_alias_info{alias,kind,model}: with models:, 1 for each name
 * a client may ask for that is not a served model's own: an alias
 * (kind="alias", model: the served model it resolves to) or a split, or
 * an alias of one (kind="split", a series per served model it splits to),
 * so that kvgate autoscale, which sees only /metrics, can follow a pool's
 * model: to the served model its series are labelled with. old (NULL: at
 * start) is the catalog cat replaces: its names cat no longer has as they
 * were go. Main loop. 0 or a registry code. */
int kvg_serve_metrics_catalog(struct kvg_serve_metrics *m, const struct kvg_catalog *old,
                              const struct kvg_catalog *cat);
void kvg_serve_metrics_free(struct kvg_serve_metrics *m);
struct kvg_serve;
/* Renders sv's registry after refreshing what is read at scrape time: the
 * pool's workers, the KV index and its subscribers (when configured), the
 * quota store and the admission queue. */
int kvg_serve_metrics_render(struct kvg_serve *sv, struct kvg_buf *out);
/* A worker left: its series go. */
void kvg_serve_metrics_forget_worker(struct kvg_serve_metrics *m, const char *url);

#endif
