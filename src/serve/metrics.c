/* kvgate serve's metrics; see serve/metrics.h. Names follow the routers users
 * know (sglang's smg_*, vllm-router's vllm_router_*) with the kvgate_ prefix. */
#include "serve/metrics.h"

#include <string.h>

#include "base/util.h"
#include "serve/serve.h"
#include "discovery/discovery.h"
#include "kv/index.h"
#include "kv/subscriber.h"
#include "router/mode.h"
#include "tokenizer/tokenizer.h"
static const char *class_names[6] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
/* The admission classes as kvg_adm_stats counts them (sheddable first). */
static const char *const class_label[4] = {"sheddable", "standard", "critical", "batch"};

/* The families with no per-route series: a counter or gauge each, its
 * label names, and where its family (one = 0) or its one unlabelled series
 * (one = 1) is kept in struct kvg_serve_metrics. */
enum decl_type { COUNTER, GAUGE };
static const char *const L_WORKER[] = {"worker"},
                         *const L_WORKER_MODEL_MODE[] = {"worker", "model", "mode"},
                         *const L_POLICY_WORKER[] = {"policy", "worker"},
                         *const L_WORKER_MODEL_LEG[] = {"worker", "model", "leg"},
                         *const L_EVENT[] = {"event"}, *const L_REASON[] = {"reason"},
                         *const L_CLASS[] = {"class"}, *const L_MODEL[] = {"model"},
                         *const L_MODEL_TO_REASON[] = {"model", "to", "reason"},
                         *const L_MODEL_LIMIT[] = {"model", "limit"},
                         *const L_ALIAS_KIND_MODEL[] = {"alias", "kind", "model"};
static const struct decl {
    enum decl_type type;
    int one;
    const char *name, *help;
    const char *const *labels;
    size_t nlabels;
    size_t off;
} decls[] = {
    {COUNTER, 1, "kvgate_retries_total",
     "Attempts on another worker after a failure before any byte.", NULL, 0,
     offsetof(struct kvg_serve_metrics, proxy.retries)},
    {COUNTER, 1, "kvgate_client_disconnects_total", "Requests whose client left before the end.",
     NULL, 0, offsetof(struct kvg_serve_metrics, proxy.client_gone)},
    {COUNTER, 1, "kvgate_upstream_errors_total", "Worker failures: connect, reset, timeout, 5xx.",
     NULL, 0, offsetof(struct kvg_serve_metrics, proxy.upstream_errors)},
    {COUNTER, 1, "kvgate_no_worker_total", "Requests answered 503 for want of a healthy worker.",
     NULL, 0, offsetof(struct kvg_serve_metrics, proxy.no_worker)},
    {COUNTER, 1, "kvgate_stored_response_probes_total",
     "GET /v1/responses/{id} sent to workers to find a stored response this replica did not "
     "route (bounded per second).",
     NULL, 0, offsetof(struct kvg_serve_metrics, proxy.stored_probes)},
    {COUNTER, 0, "kvgate_model_fallbacks_total",
     "Requests served by a fallback of the model they resolved to (docs/models.md), by that "
     "model, the fallback and why: no_healthy_worker, gateway_shed, engine_shed, context_length.",
     L_MODEL_TO_REASON, 3, offsetof(struct kvg_serve_metrics, proxy.fallbacks)},
    {COUNTER, 1, "kvgate_admission_shed_total", "Sheddable requests answered 429 by admission.",
     NULL, 0, offsetof(struct kvg_serve_metrics, shed)},
    {COUNTER, 0, "kvgate_model_shed_total",
     "Requests a models: entry's own limit shed, by served model and limit: max_inflight (429 "
     "model_overloaded), max_queue (503 queue_full); a fallback may then serve them.",
     L_MODEL_LIMIT, 2, offsetof(struct kvg_serve_metrics, model_shed)},
    {GAUGE, 1, "kvgate_workers", "Workers in the pool.", NULL, 0,
     offsetof(struct kvg_serve_metrics, workers)},
    {GAUGE, 0, "kvgate_worker_requests_active",
     "Requests in flight per worker (router-side count).", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, w_active)},
    {GAUGE, 0, "kvgate_worker_health", "1 healthy, 0 unhealthy.", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, w_health)},
    {GAUGE, 0, "kvgate_worker_engine_waiting",
     "Requests queued in the engine, from its fresh /metrics sample (absent: unknown or stale).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_waiting)},
    {GAUGE, 0, "kvgate_worker_engine_running",
     "Requests in the engine's running batch, from its fresh /metrics sample (absent: unknown or "
     "stale).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_running)},
    {GAUGE, 0, "kvgate_worker_engine_kv_usage",
     "Fraction of the engine's KV cache in use, 0..1, from its fresh /metrics sample (absent: "
     "unknown or stale).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_kv)},
    {GAUGE, 0, "kvgate_worker_engine_sample_age_seconds",
     "Age of the engine's last good /metrics sample (absent: none yet).", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, w_age)},
    {COUNTER, 0, "kvgate_worker_scrape_errors_total",
     "Scrapes of a worker's /metrics that failed: unreachable, not 200, or not Prometheus text "
     "(since it joined).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_scrape_errors)},
    {COUNTER, 0, "kvgate_worker_models_dropped_total",
     "Entries of a worker's /v1/models left out of its model list: past 4096 models or an id "
     "over 512 bytes (each distinct list counted once; requests for them are not routed there).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_models_dropped)},
    {GAUGE, 0, "kvgate_worker_routing_mode",
     "The cache view a worker's routing uses: 1 for its current mode (exact, degraded, "
     "approximate, load_only), 0 for the others; model: the model it serves.",
     L_WORKER_MODEL_MODE, 3, offsetof(struct kvg_serve_metrics, w_mode)},
    {COUNTER, 0, "kvgate_worker_prompt_token_checks_total",
     "Answers whose usage.prompt_tokens was compared with kvgate's own count for the request "
     "(since it joined).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_tok_checks)},
    {COUNTER, 0, "kvgate_worker_prompt_token_mismatches_total",
     "Compared answers whose prompt_tokens differed from kvgate's count: tokenizer or chat "
     "template mismatch (since it joined).",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_tok_mis)},
    {GAUGE, 0, "kvgate_worker_cb_state", "Circuit breaker: 0 closed, 1 open, 2 half-open.",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, w_cb)},
    {GAUGE, 0, "kvgate_worker_processed_requests",
     "Requests ever sent to the worker (since it joined).", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, w_processed)},
    {COUNTER, 0, "kvgate_pd_requests_total",
     "PD legs sent to each worker (leg prefill, decode or encode; since it joined); model: the "
     "model it serves.",
     L_WORKER_MODEL_LEG, 3, offsetof(struct kvg_serve_metrics, pd_requests)},
    {GAUGE, 0, "kvgate_policy_decisions",
     "Routing decisions per policy and worker (since it joined).", L_POLICY_WORKER, 2,
     offsetof(struct kvg_serve_metrics, decisions)},
    {GAUGE, 0, "kvgate_worker_cache_hit_blocks",
     "Prompt blocks routed to a worker that held them (since it joined).", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, w_cached)},
    {GAUGE, 1, "kvgate_tokenizer_fallback",
     "1 when the model's tokenizer could not be used: prefix awareness is approximate (text "
     "bytes), precise matching is off.",
     NULL, 0, offsetof(struct kvg_serve_metrics, tokenizer_fallback)},
    {GAUGE, 1, "kvgate_block_size_mismatch",
     "Scrapes where an engine reported a KV block size other than --block-size (precise matching "
     "against it is wrong).",
     NULL, 0, offsetof(struct kvg_serve_metrics, block_size_mismatch)},
    {COUNTER, 0, "kvgate_quota_events_total",
     "Quota store outcomes: admitted, limited, store_error, fail_open, fail_closed, timeout, "
     "reconnect, reconcile_retry, reconcile_dropped.",
     L_EVENT, 1, offsetof(struct kvg_serve_metrics, quota_f)},
    {COUNTER, 0, "kvgate_admission_queue_events_total",
     "Gateway queue: queued, granted, timeout, evicted, refused_full, cancelled; batch_expired: "
     "of the timeouts, batch requests answered 429 past their deadline.",
     L_EVENT, 1, offsetof(struct kvg_serve_metrics, adm_f)},
    {GAUGE, 1, "kvgate_quota_reconciles_pending",
     "Quota reconciliations the store has not confirmed yet (resent until it does).", NULL, 0,
     offsetof(struct kvg_serve_metrics, quota_pending)},
    {GAUGE, 1, "kvgate_admission_queue_waiting", "Requests waiting in the gateway queue now.", NULL,
     0, offsetof(struct kvg_serve_metrics, adm_waiting)},
    {GAUGE, 0, "kvgate_admission_queue_class_waiting",
     "Requests waiting in the gateway queue now, by class: the interactive priority classes "
     "(critical, standard, sheddable) and batch.",
     L_CLASS, 1, offsetof(struct kvg_serve_metrics, adm_class_f)},
    {GAUGE, 0, "kvgate_admission_queue_model_waiting",
     "Requests waiting in the gateway queue now, by served model (with models:; of "
     "kvgate_admission_queue_waiting, batch ones included).",
     L_MODEL, 1, offsetof(struct kvg_serve_metrics, adm_model_f)},
    {GAUGE, 0, "kvgate_model_alias_info",
     "1 for each name of models: that is no served model's own: an alias (kind alias; model: "
     "the served model it resolves to, whose name the per-model series carry) or a split "
     "(kind split; a series per served model it splits to).",
     L_ALIAS_KIND_MODEL, 3, offsetof(struct kvg_serve_metrics, alias_f)},
    {COUNTER, 0, "kvgate_tokenizer_cache_total",
     "Tokenizer prefix cache: encodes that reused a cached prefix (hit) or none (miss), ids reused "
     "(reused_tokens), entries evicted (eviction), loop encodes that went without the cache "
     "because a work thread held it (busy), new segments not kept because they were seen for the "
     "first time (not_admitted), block hashes reused with the ids (reused_blocks).",
     L_EVENT, 1, offsetof(struct kvg_serve_metrics, tokc)},
    {GAUGE, 1, "kvgate_tokenizer_cache_bytes", "Memory held by the tokenizer prefix cache.", NULL,
     0, offsetof(struct kvg_serve_metrics, tokc_bytes)},
    {GAUGE, 1, "kvgate_tokenizer_cache_entries", "Segments in the tokenizer prefix cache.", NULL, 0,
     offsetof(struct kvg_serve_metrics, tokc_entries)},
    {GAUGE, 0, "kvgate_kv_index_entries", "(block, worker) entries in the precise KV index.", NULL,
     0, offsetof(struct kvg_serve_metrics, kv_entries)},
    {GAUGE, 0, "kvgate_kv_index_bytes", "Memory held by the precise KV index.", NULL, 0,
     offsetof(struct kvg_serve_metrics, kv_bytes)},
    {GAUGE, 0, "kvgate_kv_index_evictions",
     "Entries dropped by the index's size bound, since start.", NULL, 0,
     offsetof(struct kvg_serve_metrics, kv_evictions)},
    {GAUGE, 0, "kvgate_kv_index_worker_blocks", "Blocks the index believes each worker holds.",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, kv_worker_blocks)},
    {GAUGE, 0, "kvgate_kv_event_batches", "KV event batches applied per worker, since it joined.",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, kv_batches)},
    {GAUGE, 0, "kvgate_kv_event_gaps", "Sequence gaps in a worker's KV events, since it joined.",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, kv_gaps)},
    {GAUGE, 0, "kvgate_kv_event_decode_errors",
     "Malformed KV event messages per worker, since it joined.", L_WORKER, 1,
     offsetof(struct kvg_serve_metrics, kv_decode_errors)},
    {GAUGE, 0, "kvgate_kv_event_drops",
     "Times a worker's index entries were dropped (gap without replay, restart), since it joined.",
     L_WORKER, 1, offsetof(struct kvg_serve_metrics, kv_drops)},
    {COUNTER, 0, "kvgate_discovery_registrations_total",
     "Workers Kubernetes discovery added to the pool.", NULL, 0,
     offsetof(struct kvg_serve_metrics, disc_reg)},
    {COUNTER, 0, "kvgate_discovery_deregistrations_total",
     "Workers Kubernetes discovery removed, by reason: pod_deleted, not_ready, selector_changed.",
     L_REASON, 1, offsetof(struct kvg_serve_metrics, disc_dereg)},
    {COUNTER, 0, "kvgate_discovery_relists_total",
     "EndpointSlice lists started over after 410 Gone.", NULL, 0,
     offsetof(struct kvg_serve_metrics, disc_relists)},
    {COUNTER, 0, "kvgate_discovery_errors_total",
     "Failed lists, watches and pod reads against the API server.", NULL, 0,
     offsetof(struct kvg_serve_metrics, disc_errors)},
    {GAUGE, 0, "kvgate_discovery_workers", "Workers in the pool that Kubernetes discovery manages.",
     NULL, 0, offsetof(struct kvg_serve_metrics, disc_workers)},
};

static void set_series(struct kvg_metrics_family *f, const char *const *v, size_t n, double x);

/* The per-model token and latency families (proxy/obs.c takes their
 * series): buckets a factor sqrt(2) apart, so a quantile interpolated
 * inside one is within ~20%; TTFT 10 ms .. ~2 min, ITL 2.5 ms .. ~10 s. */
static int token_families(struct kvg_serve_metrics *m, int tenant_labels)
{
    struct kvg_proxy_metrics *pm = &m->proxy;
    const char *kl[3] = {"model", "kind"}, *ml[] = {"model"}, *mc[] = {"model", "class"};
    if (tenant_labels) kl[1] = "tenant", kl[2] = "kind";
    double tb[28], ib[24];
    kvg_metrics_buckets_exp(0.01, 1.4142135623730951, 28, tb);
    kvg_metrics_buckets_exp(0.0025, 1.4142135623730951, 24, ib);
    pm->tenant_labels = tenant_labels;
    int rc;
    if ((rc = kvg_metrics_counter(m->reg, "kvgate_tokens_total",
                                  "Tokens the engines' usage reported, per served model: prompt, "
                                  "cached (of the prompt), completion.",
                                  kl, tenant_labels ? 3 : 2, &pm->tokens_f)) ||
        (rc = kvg_metrics_histogram(m->reg, "kvgate_time_to_first_token_seconds",
                                    "A stream's time from the request head to its first "
                                    "token-carrying event, per served model.",
                                    ml, 1, tb, 28, &pm->ttft_f)) ||
        (rc = kvg_metrics_histogram(m->reg, "kvgate_inter_token_latency_seconds",
                                    "A stream's gaps between token-carrying events, per served "
                                    "model (events read together share the wait).",
                                    ml, 1, ib, 24, &pm->itl_f)) ||
        (rc = kvg_metrics_counter(m->reg, "kvgate_model_requests_total",
                                  "Answers per model (the served one; unknown for a name no "
                                  "worker lists) by status class: 2xx, 4xx, 5xx, other.",
                                  mc, 2, &pm->mrequests_f)))
        return rc;
    return 0;
}

/* The answers by status and error code, the plain 200s' series made now
 * (the PD legs' outcomes are each PD router's, pd/series.c). */
static int response_families(struct kvg_serve_metrics *m)
{
    struct kvg_proxy_metrics *pm = &m->proxy;
    const char *rl[] = {"route", "status", "error_code"};
    int rc = kvg_metrics_counter(m->reg, "kvgate_responses_total",
                                 "Answers by route, status code and error code (kvgate's own, "
                                 "or engine when the engine answered the error).",
                                 rl, 3, &pm->responses_f);
    for (int r = 0; !rc && r < KVG_PROXY_NROUTES; r++) {
        const char *v[] = {kvg_proxy_route_label(r), "200", ""};
        rc = kvg_metrics_series(pm->responses_f, v, 3, &pm->responses_ok[r]);
    }
    return rc;
}

int kvg_serve_metrics_slo(struct kvg_serve_metrics *m, double ttft_s, double itl_s, int models_own)
{
    struct kvg_proxy_metrics *pm = &m->proxy;
    int flags = ttft_s > 0 && itl_s > 0;
    if (!flags && !models_own) return 0;
    const char *sl[] = {"model", "result"}, *tl[] = {"model", "latency"};
    int rc;
    if ((rc = kvg_metrics_counter(m->reg, "kvgate_slo_requests_total",
                                  "Requests finished (served, failed, or their client gone) per "
                                  "served model, by their outcome against its targets "
                                  "(kvgate_slo_target_seconds): met, ttft_missed, itl_missed, "
                                  "both_missed, failed (a failure misses both).",
                                  sl, 2, &pm->slo_f)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_slo_target_seconds",
                                "The targets kvgate_slo_requests_total counts against: ttft, itl "
                                "(a request's mean); model: a served model's (its models: entry's "
                                "slo_ttft_secs / slo_itl_secs, else the gateway's), \"\": the "
                                "gateway's (--slo-ttft-secs, --slo-itl-secs).",
                                tl, 2, &m->slo_target_f)))
        return rc;
    pm->slo_ttft_s = flags ? ttft_s : 0;
    pm->slo_itl_s = flags ? itl_s : 0;
    for (int i = 0; i < 2 && flags; i++) {
        const char *v[] = {"", i ? "itl" : "ttft"};
        set_series(m->slo_target_f, v, 2, i ? itl_s : ttft_s);
    }
    return 0;
}

int kvg_serve_metrics_models(struct kvg_serve_metrics *m, const struct kvg_catalog *cat)
{
    const struct kvg_proxy_metrics *pm = &m->proxy;
    if (!cat || cat->any >= 0) return 0; /* the one model's name is known later */
    static const char *const kinds[3] = {"prompt", "cached", "completion"};
    for (size_t i = 0; i < cat->nmodels; i++) {
        const char *name = cat->models[i].name;
        struct kvg_metrics_series *s;
        int rc = 0;
        for (int k = 0; k < 3 && !rc && !pm->tenant_labels; k++) { /* tenants: as they come */
            const char *v[] = {name, kinds[k]};
            if (!(rc = kvg_metrics_series(pm->tokens_f, v, 2, &s))) kvg_metrics_series_release(s);
        }
        if (!rc && !(rc = kvg_metrics_series(pm->ttft_f, &name, 1, &s)))
            kvg_metrics_series_release(s);
        if (!rc && !(rc = kvg_metrics_series(pm->itl_f, &name, 1, &s)))
            kvg_metrics_series_release(s);
        for (int r = 0; r < KVG_PROXY_SLO_RESULTS && !rc && pm->slo_f; r++) {
            const char *v[] = {name, kvg_proxy_slo_label(r)};
            if (!(rc = kvg_metrics_series(pm->slo_f, v, 2, &s))) kvg_metrics_series_release(s);
        }
        if (rc) return rc;
    }
    return 0;
}

int kvg_serve_metrics_init(struct kvg_serve_metrics *m, const char *policy, int tenant_labels)
{
    memset(m, 0, sizeof *m);
    m->policy = policy;
    int rc = kvg_metrics_registry_new(0, &m->reg);
    if (rc) return rc;
    struct kvg_metrics_family *req, *dur, *ttfb, *f;
    const char *rl[] = {"route", "code"};
    const char *r1[] = {"route"};
    double lat[24];
    static const double ratio_bounds[10] = {0.0001, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.95};
    kvg_metrics_buckets_exp(0.001, 2, 20, lat);
    if ((rc = kvg_metrics_counter(m->reg, "kvgate_requests_total",
                                  "Requests answered, by route and status class.", rl, 2, &req)) ||
        (rc = kvg_metrics_histogram(m->reg, "kvgate_request_duration_seconds",
                                    "Time from the request head to the end of the answer.", r1, 1,
                                    lat, 20, &dur)) ||
        (rc = kvg_metrics_histogram(m->reg, "kvgate_time_to_first_byte_seconds",
                                    "Time from the request head to the first answer byte.", r1, 1,
                                    lat, 20, &ttfb)))
        return rc;
    struct kvg_proxy_metrics *pm = &m->proxy;
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) {
        const char *label = kvg_proxy_route_label(r);
        for (int c = 0; c < 6; c++) {
            const char *v[] = {label, class_names[c]};
            if ((rc = kvg_metrics_series(req, v, 2, &pm->requests[r][c]))) return rc;
        }
        if ((rc = kvg_metrics_series(dur, &label, 1, &pm->duration[r])) ||
            (rc = kvg_metrics_series(ttfb, &label, 1, &pm->ttfb[r])))
            return rc;
    }
    /* What kvgate autoscale reads of a gateway (autoscale/sources.h): the
     * engines' usage and the streams' timing, summed over the models. */
    if ((rc = token_families(m, tenant_labels)) || (rc = response_families(m))) return rc;
    for (size_t i = 0; i < KVG_ARRAY_LEN(decls); i++) {
        const struct decl *d = &decls[i];
        void *at = (char *)m + d->off;
        rc = d->type == COUNTER
                 ? kvg_metrics_counter(m->reg, d->name, d->help, d->labels, d->nlabels, &f)
                 : kvg_metrics_gauge(m->reg, d->name, d->help, d->labels, d->nlabels, &f);
        if (!rc && d->one) rc = kvg_metrics_series(f, NULL, 0, (struct kvg_metrics_series **)at);
        if (!rc && !d->one) *(struct kvg_metrics_family **)at = f;
        if (rc) return rc;
    }
    if ((rc = kvg_metrics_histogram(m->reg, "kvgate_route_prefix_match_ratio",
                                    "Share of a tokenized prompt's blocks the chosen worker held.",
                                    NULL, 0, ratio_bounds, 10, &f)) ||
        (rc = kvg_metrics_series(f, NULL, 0, &pm->match_ratio)))
        return rc;
    return 0;
}

void kvg_serve_metrics_free(struct kvg_serve_metrics *m)
{
    struct kvg_proxy_metrics *pm = &m->proxy;
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) {
        for (int c = 0; c < 6; c++) kvg_metrics_series_release(pm->requests[r][c]);
        kvg_metrics_series_release(pm->duration[r]);
        kvg_metrics_series_release(pm->ttfb[r]);
    }
    kvg_metrics_series_release(pm->retries);
    kvg_metrics_series_release(pm->client_gone);
    kvg_metrics_series_release(pm->upstream_errors);
    kvg_metrics_series_release(pm->no_worker);
    kvg_metrics_series_release(pm->stored_probes);
    kvg_metrics_series_release(m->workers);
    kvg_metrics_series_release(m->adm_waiting);
    kvg_metrics_series_release(m->quota_pending);
    kvg_metrics_series_release(pm->match_ratio);
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) kvg_metrics_series_release(pm->responses_ok[r]);
    for (int c = 0; c < 3; c++) kvg_metrics_series_release(m->adm_class[c]);
    kvg_metrics_series_release(m->tokenizer_fallback);
    kvg_metrics_series_release(m->block_size_mismatch);
    kvg_metrics_series_release(m->tokc_bytes);
    kvg_metrics_series_release(m->tokc_entries);
    kvg_metrics_series_release(m->shed);
    kvg_metrics_registry_free(m->reg);
}

static void set_series(struct kvg_metrics_family *f, const char *const *v, size_t n, double x)
{
    struct kvg_metrics_series *s;
    if (kvg_metrics_series(f, v, n, &s)) return;
    kvg_metrics_set(s, x);
    kvg_metrics_series_release(s);
}

/* A gauge that is absent, not 0, when the value is unknown (< 0 or NaN). */
static void set_known(struct kvg_metrics_family *f, const char *const *v, double x)
{
    if (x >= 0)
        set_series(f, v, 1, x);
    else
        kvg_metrics_family_remove(f, v, 1); /* KVG_ENOTFOUND when it was absent already */
}

static void mirror_series(struct kvg_metrics_family *f, const char *const *v, size_t n,
                          uint64_t total)
{
    struct kvg_metrics_series *s;
    if (kvg_metrics_series(f, v, n, &s)) return;
    kvg_metrics_counter_mirror(s, total);
    kvg_metrics_series_release(s);
}

/* Calls fn(ctx, {name, kind, served model}) for each alias_info series of
 * cat's name i (none for a served model's own name); stops at the first
 * that returns nonzero, and returns that. */
static int alias_series(const struct kvg_catalog *cat, size_t i,
                        int (*fn)(void *ctx, const char *const *v), void *ctx)
{
    const struct kvg_catalog_name *nm = &cat->names[i];
    if (nm->kind == KVG_CATALOG_MODEL) return 0;
    if (nm->model >= 0) {
        const char *v[] = {nm->name, "alias", cat->models[nm->model].name};
        return fn(ctx, v);
    }
    const struct kvg_catalog_split *sp = nm->split >= 0 ? &cat->splits[nm->split] : NULL;
    int rc = 0;
    for (size_t k = 0; !rc && sp && k < sp->n; k++) {
        const char *v[] = {nm->name, "split", cat->models[sp->model[k]].name};
        rc = fn(ctx, v);
    }
    return rc;
}

static int alias_set(void *ctx, const char *const *v)
{
    set_series(ctx, v, 3, 1);
    return 0;
}

/* 1 when series v is none of catalog ctx's (NULL: no models:). */
static int alias_stale(void *ctx, const char *const *v)
{
    const struct kvg_catalog *cat = ctx;
    int k = cat ? kvg_catalog_find(cat, v[0], strlen(v[0])) : -1;
    if (k < 0 || cat->names[k].kind == KVG_CATALOG_MODEL) return 1;
    const struct kvg_catalog_name *nm = &cat->names[k];
    if (nm->model >= 0) return strcmp(v[1], "alias") || strcmp(cat->models[nm->model].name, v[2]);
    const struct kvg_catalog_split *sp = nm->split >= 0 ? &cat->splits[nm->split] : NULL;
    for (size_t j = 0; sp && j < sp->n; j++)
        if (!strcmp(v[1], "split") && !strcmp(cat->models[sp->model[j]].name, v[2])) return 0;
    return 1;
}

/* Each served model's SLO targets in kvgate_slo_target_seconds{model}: old's
 * models that cat does not judge lose theirs, cat's judged ones get them. */
static void slo_targets(struct kvg_serve_metrics *m, const struct kvg_catalog *old,
                        const struct kvg_catalog *cat)
{
    static const char *const lat[2] = {"ttft", "itl"};
    for (size_t i = 0; m->slo_target_f && old && i < old->nmodels; i++) {
        const char *name = old->models[i].name;
        int k = cat ? kvg_catalog_find(cat, name, strlen(name)) : -1;
        if (k >= 0 && cat->names[k].kind == KVG_CATALOG_MODEL &&
            cat->models[cat->names[k].model].slo_ttft_s > 0)
            continue;
        for (int l = 0; l < 2; l++) {
            const char *v[] = {name, lat[l]};
            (void)kvg_metrics_family_remove(m->slo_target_f, v, 2); /* absent: fine */
        }
    }
    for (size_t i = 0; m->slo_target_f && cat && i < cat->nmodels; i++) {
        const struct kvg_catalog_model *md = &cat->models[i];
        for (int l = 0; l < 2 && md->slo_ttft_s > 0; l++) {
            const char *v[] = {md->name, lat[l]};
            set_series(m->slo_target_f, v, 2, l ? md->slo_itl_s : md->slo_ttft_s);
        }
    }
}

int kvg_serve_metrics_catalog(struct kvg_serve_metrics *m, const struct kvg_catalog *old,
                              const struct kvg_catalog *cat)
{
    if (old && old->any >= 0) old = NULL; /* the flags' one model: no names, no own targets */
    if (cat && cat->any >= 0) cat = NULL;
    slo_targets(m, old, cat);
    if (!m->alias_f) return 0;
    /* A name of old whose series cat lacks loses all of them (the alias
     * label is this family's alone); then cat's are set. */
    for (size_t i = 0; old && old->any < 0 && i < old->nnames; i++)
        if (alias_series(old, i, alias_stale, (void *)cat))
            kvg_metrics_remove_label(m->reg, "alias", old->names[i].name);
    int rc = 0;
    for (size_t i = 0; !rc && cat && i < cat->nnames; i++)
        rc = alias_series(cat, i, alias_set, m->alias_f);
    return rc;
}

/* The model label of w's series: with models:, the model it is under (or
 * whose name its pod's label gives); with the single-model flags, the
 * first model its /v1/models lists (the one it serves, as
 * kvgate_model_requests_total names it); else "unknown". May be buf. */
static const char *worker_model(struct kvg_serve *sv, const struct kvg_catalog *cat,
                                struct kvg_worker *w, char *buf, size_t cap)
{
    if (cat && cat->any < 0) {
        int m = kvg_serve_worker_model(sv, cat, w);
        return m >= 0 ? cat->models[m].name : "unknown";
    }
    pthread_mutex_lock(&w->mu);
    int listed = w->models.n > 0;
    if (listed) snprintf(buf, cap, "%s", w->models.e[0].id);
    pthread_mutex_unlock(&w->mu);
    return listed && buf[0] ? buf : "unknown";
}

/* w's series of f under model, after those under another model went (its
 * model changed: a reload, a relabelled pod, its first /v1/models). */
static void worker_series(struct kvg_metrics_family *f, const char *url, const char *model,
                          const char *last, double v, int mirror)
{
    kvg_metrics_family_remove_other(f, "worker", url, "model", model);
    const char *lv[] = {url, model, last};
    if (mirror)
        mirror_series(f, lv, 3, (uint64_t)v);
    else
        set_series(f, lv, 3, v);
}

int kvg_serve_metrics_render(struct kvg_serve *sv, struct kvg_buf *out)
{
    struct kvg_serve_metrics *m = &sv->metrics;
    struct kvg_pool *pool = &sv->pool;
    struct kvg_kv_index *kv = sv->kv;
    struct kvg_kv_sub *sub = sv->sub;
    kvg_serve_autoscale_refresh_metrics(sv);
    if (sv->gate.quota) {
        struct kvg_quota_stats q;
        kvg_quota_stats(sv->gate.quota, &q);
        const char *names[] = {"admitted",  "limited",         "store_error",
                               "fail_open", "fail_closed",     "timeout",
                               "reconnect", "reconcile_retry", "reconcile_dropped"};
        uint64_t vals[] = {q.admitted, q.limited,    q.store_errors, q.fail_open, q.fail_closed,
                           q.timeouts, q.reconnects, q.retries,      q.dropped};
        for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++)
            mirror_series(m->quota_f, &names[i], 1, vals[i]);
        kvg_metrics_set(m->quota_pending, (double)q.pending);
    }
    if (sv->gate.adm) {
        struct kvg_adm_stats a;
        kvg_adm_stats(sv->gate.adm, &a);
        const char *names[] = {"queued",       "granted",   "timeout",      "evicted",
                               "refused_full", "cancelled", "batch_expired"};
        uint64_t vals[] = {a.queued,       a.granted,   a.timeouts,     a.evicted,
                           a.refused_full, a.cancelled, a.batch_expired};
        for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++)
            mirror_series(m->adm_f, &names[i], 1, vals[i]);
        kvg_metrics_set(m->adm_waiting, (double)a.waiting);
        for (int c = 0; c < 4; c++)
            if (m->adm_class[c] ||
                !kvg_metrics_series(m->adm_class_f, &class_label[c], 1, &m->adm_class[c]))
                kvg_metrics_set(m->adm_class[c], (double)a.waiting_class[c]);
    }
    if (sv->tok_cache) {
        struct kvg_tok_pcache_stats t;
        kvg_tok_pcache_stats(sv->tok_cache, &t);
        const char *names[] = {"hit",  "miss",         "reused_tokens", "eviction",
                               "busy", "not_admitted", "reused_blocks"};
        uint64_t vals[] = {t.hits, t.misses,       t.reused_tokens, t.evictions,
                           t.busy, t.not_admitted, t.reused_blocks};
        for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++)
            mirror_series(m->tokc, &names[i], 1, vals[i]);
        kvg_metrics_set(m->tokc_bytes, (double)t.bytes);
        kvg_metrics_set(m->tokc_entries, (double)t.entries);
    }
    if (kv) {
        struct kvg_kv_index_stats st;
        kvg_kv_index_stats(kv, &st);
        set_series(m->kv_entries, NULL, 0, (double)st.entries);
        set_series(m->kv_bytes, NULL, 0, (double)st.bytes);
        set_series(m->kv_evictions, NULL, 0, (double)st.evictions);
    }
    if (sv->disc) {
        const struct kvg_discovery_stats *ds = kvg_discovery_stats(sv->disc);
        mirror_series(m->disc_reg, NULL, 0, atomic_load(&ds->registrations));
        for (int r = 0; r < KVG_DISCOVERY_NREASONS; r++) {
            const char *v[] = {kvg_discovery_reason_name(r)};
            mirror_series(m->disc_dereg, v, 1, atomic_load(&ds->deregistrations[r]));
        }
        mirror_series(m->disc_relists, NULL, 0, atomic_load(&ds->relists));
        mirror_series(m->disc_errors, NULL, 0, atomic_load(&ds->errors));
        set_series(m->disc_workers, NULL, 0, (double)atomic_load(&ds->workers));
    }
    kvg_serve_models_queue_metrics(sv);
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    kvg_serve_modes_refresh(sv);
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    size_t n = kvg_pool_snapshot(pool, ws, KVG_POOL_MAX_WORKERS);
    kvg_metrics_set(m->workers, (double)n);
    for (size_t i = 0; i < n; i++) {
        const char *v[] = {ws[i]->url};
        const char *d[] = {m->policy, ws[i]->url};
        set_series(m->w_active, v, 1, atomic_load(&ws[i]->in_flight));
        set_series(m->w_health, v, 1, atomic_load(&ws[i]->healthy) ? 1 : 0);
        mirror_series(m->w_scrape_errors, v, 1, atomic_load(&ws[i]->scrape_errors));
        mirror_series(m->w_models_dropped, v, 1, atomic_load(&ws[i]->models_dropped));
        uint64_t now = kvg_now_ms();
        struct kvg_engine_load l = kvg_worker_load(ws[i], now, sv->cfg.proxy.metrics_staleness_ms);
        set_known(m->w_waiting, v, l.waiting);
        set_known(m->w_running, v, l.running);
        set_known(m->w_kv, v, l.kv_usage);
        set_known(m->w_age, v, l.at_ms ? (double)(now - l.at_ms) / 1000.0 : -1);
        char mbuf[256];
        const char *model = worker_model(sv, cat, ws[i], mbuf, sizeof mbuf);
        int mode = kvg_route_mode_get(ws[i], NULL, 0);
        for (int k = 0; mode >= 0 && k < KVG_MODE_COUNT; k++)
            worker_series(m->w_mode, ws[i]->url, model, kvg_route_mode_name(k), k == mode, 0);
        mirror_series(m->w_tok_checks, v, 1, atomic_load(&ws[i]->usage_checks));
        mirror_series(m->w_tok_mis, v, 1, atomic_load(&ws[i]->usage_mismatches));
        set_series(m->w_cb, v, 1, atomic_load(&ws[i]->cb_state));
        set_series(m->w_processed, v, 1, (double)atomic_load(&ws[i]->processed));
        /* Under the top level's PD mode, or a model's (its workers have roles). */
        if (sv->pd || atomic_load(&ws[i]->role) != KVG_ROLE_REGULAR) {
            worker_series(m->pd_requests, ws[i]->url, model, "prefill",
                          (double)atomic_load(&ws[i]->pd_prefill_requests), 1);
            worker_series(m->pd_requests, ws[i]->url, model, "decode",
                          (double)atomic_load(&ws[i]->pd_decode_requests), 1);
            if (atomic_load(&ws[i]->role) == KVG_ROLE_ENCODE)
                worker_series(m->pd_requests, ws[i]->url, model, "encode",
                              (double)atomic_load(&ws[i]->pd_encode_requests), 1);
        }
        set_series(m->decisions, d, 2, (double)atomic_load(&ws[i]->processed));
        set_series(m->w_cached, v, 1, (double)atomic_load(&ws[i]->cached_blocks));
        if (kv && ws[i]->slot >= 0)
            set_series(m->kv_worker_blocks, v, 1,
                       (double)kvg_kv_index_worker_entries(kv, (uint32_t)ws[i]->slot));
        struct kvg_kv_sub_stats ss;
        if (sub && ws[i]->kv_endpoint[0] && ws[i]->slot >= 0 &&
            kvg_kv_sub_stats(sub, (uint32_t)ws[i]->slot, &ss) == 0) {
            set_series(m->kv_batches, v, 1, (double)ss.batches);
            set_series(m->kv_gaps, v, 1, (double)ss.gaps);
            set_series(m->kv_decode_errors, v, 1, (double)ss.decode_errors);
            set_series(m->kv_drops, v, 1, (double)ss.drops);
        }
        /* It left while this render wrote its series: they go again (the
         * pool sets removed before its hook forgets them). */
        if (atomic_load(&ws[i]->removed)) kvg_serve_metrics_forget_worker(m, ws[i]->url);
        kvg_worker_unref(ws[i]);
    }
    kvg_catalog_unref(cat);
    return kvg_metrics_render(m->reg, out);
}

void kvg_serve_metrics_forget_worker(struct kvg_serve_metrics *m, const char *url)
{
    kvg_metrics_remove_label(m->reg, "worker", url);
}
