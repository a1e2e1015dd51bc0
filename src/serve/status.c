/* What an operator sees of this replica: the status page (GET /ui and its
 * data, GET /ui/state), fed by a once-a-second sample of kvgate's own
 * counters into the page's ring (ui/history.h), and the serving view that
 * `kvgate observe` collects from every replica (GET /serving): a generation
 * that moves whenever the set of serving workers changes, when the view was
 * taken, and per worker its role, state and the requests sent to it in the
 * last interval. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/log.h"
#include "pd/pd.h"
#include "router/mode.h"
#include "serve/serve.h"
#include "ui/page.h"

#define SAMPLE_MS 1000
#define SENT_INTERVAL_TICKS 10 /* /serving's "last interval": ten samples */

/* The one place the samples' sources are read: the proxy's series in
 * serve/metrics.c (answers by status class, the engines' usage, the
 * streams' TTFT and ITL histograms, the routed prefix match). Per-model
 * series, when /metrics has them, are added up here and nowhere else. */
static void read_totals(const struct kvg_serve *sv, struct kvg_serve_ui_totals *t)
{
    const struct kvg_proxy_metrics *pm = &sv->metrics.proxy;
    memset(t, 0, sizeof *t);
    for (int r = 0; r < KVG_PROXY_NROUTES; r++)
        for (int c = 0; c < 6; c++) {
            uint64_t n = (uint64_t)kvg_metrics_value(pm->requests[r][c]);
            t->answered += n;
            if (c == 3) t->c4xx += n; /* classes 1xx..5xx, other: serve/metrics.c */
            if (c == 4) t->c5xx += n;
        }
    static const char *const kinds[3] = {"prompt", "cached", "completion"};
    for (int k = 0; k < 3; k++) /* every model's (and tenant's) series */
        if (pm->tokens_f) t->tokens[k] = kvg_metrics_family_sum(pm->tokens_f, "kind", kinds[k]);
    if (pm->ttft_f)
        t->nttft = kvg_metrics_family_hist_read(pm->ttft_f, t->ttft, KVG_SERVE_UI_BUCKETS,
                                                &t->ttft_bounds);
    if (pm->itl_f)
        t->nitl =
            kvg_metrics_family_hist_read(pm->itl_f, t->itl, KVG_SERVE_UI_BUCKETS, &t->itl_bounds);
    if (t->nttft > KVG_SERVE_UI_BUCKETS) t->nttft = KVG_SERVE_UI_BUCKETS;
    if (t->nitl > KVG_SERVE_UI_BUCKETS) t->nitl = KVG_SERVE_UI_BUCKETS;
    if (pm->match_ratio) {
        t->match_sum = kvg_metrics_hist_sum(pm->match_ratio);
        t->match_n = kvg_metrics_hist_count(pm->match_ratio);
    }
}

/* The q-quantile of what a histogram gained between two reads; -1 none. */
static double delta_quantile(const uint64_t *now, const uint64_t *prev, size_t n,
                             const double *bounds, double q)
{
    uint64_t d[KVG_SERVE_UI_BUCKETS];
    for (size_t i = 0; i < n; i++) d[i] = now[i] - prev[i];
    double v = n && bounds ? kvg_metrics_quantile(d, bounds, n, q) : NAN;
    return isnan(v) ? -1 : v;
}

/* a / b as a percentage; -1 when b is nothing. */
static double pct(double a, double b)
{
    return b > 0 ? 100.0 * a / b : -1;
}

/* The sample of the interval between two reads of the totals, dt seconds. */
static void sample_rates(struct kvg_ui_sample *s, const struct kvg_serve_ui_totals *c,
                         const struct kvg_serve_ui_totals *p, double dt)
{
    double answered = (double)(c->answered - p->answered);
    s->req_rate = answered / dt;
    s->err4_pct = pct((double)(c->c4xx - p->c4xx), answered);
    s->err5_pct = pct((double)(c->c5xx - p->c5xx), answered);
    double tok[3];
    for (int k = 0; k < 3; k++) tok[k] = c->tokens[k] - p->tokens[k];
    s->tok_prompt = tok[0] / dt;
    s->tok_cached = tok[1] / dt;
    s->tok_completion = tok[2] / dt;
    s->hit_pct = pct(tok[1], tok[0]);
    s->ttft_p50 = delta_quantile(c->ttft, p->ttft, c->nttft, c->ttft_bounds, 0.5);
    s->ttft_p90 = delta_quantile(c->ttft, p->ttft, c->nttft, c->ttft_bounds, 0.9);
    s->itl_p50 = delta_quantile(c->itl, p->itl, c->nitl, c->itl_bounds, 0.5);
    s->itl_p90 = delta_quantile(c->itl, p->itl, c->nitl, c->itl_bounds, 0.9);
    s->match_pct = pct(c->match_sum - p->match_sum, (double)(c->match_n - p->match_n));
}

/* Adds a worker's numbers to each model it lists (the first
 * KVG_UI_MAX_MODELS models met keep a slot; the rest are not charted). */
static void sample_models(struct kvg_ui_sample *s, struct kvg_worker *w, double sent_rate,
                          double in_flight)
{
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->models.n; i++) {
        const char *id = w->models.e[i].id;
        unsigned k = 0;
        while (k < s->nm && strcmp(s->m[k].name, id)) k++;
        if (k == s->nm) {
            if (s->nm == KVG_UI_MAX_MODELS || strlen(id) >= sizeof s->m[k].name) continue;
            snprintf(s->m[k].name, sizeof s->m[k].name, "%s", id);
            s->nm++;
        }
        s->m[k].sent_rate += sent_rate;
        s->m[k].in_flight += in_flight;
    }
    pthread_mutex_unlock(&w->mu);
}

static void sample_workers(struct kvg_serve *sv, struct kvg_ui_sample *s, double dt,
                           int update_sent)
{
    struct kvg_serve_status *st = &sv->status;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    uint64_t now = kvg_now_ms();
    s->nw = s->nm = 0;
    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        uint64_t p = atomic_load(&w->processed);
        struct kvg_serve_sent *e = NULL;
        double sent_rate = 0;
        if (w->slot >= 0 && (size_t)w->slot < KVG_POOL_MAX_WORKERS) {
            /* A slot is reused by a later worker: the URL tells them apart. */
            e = &st->sent[w->slot];
            if (strcmp(e->url, w->url)) {
                snprintf(e->url, sizeof e->url, "%s", w->url);
                e->at_mark = e->at_sample = p;
                e->last_interval = 0;
            }
            sent_rate = dt > 0 ? (double)(p - e->at_sample) / dt : 0;
            e->at_sample = p;
            if (update_sent) {
                e->last_interval = p - e->at_mark;
                e->at_mark = p;
            }
        }
        sample_models(s, w, sent_rate, atomic_load(&w->in_flight));
        if (s->nw < KVG_UI_MAX_WORKERS) {
            struct kvg_ui_worker_sample *o = &s->w[s->nw++];
            struct kvg_engine_load l = kvg_worker_load(w, now, sv->cfg.proxy.metrics_staleness_ms);
            snprintf(o->url, sizeof o->url, "%s", w->url);
            o->in_flight = atomic_load(&w->in_flight);
            o->waiting = l.waiting;
            o->kv_usage = l.kv_usage;
            o->sent_rate = sent_rate;
        }
        kvg_worker_unref(w);
    }
    pthread_mutex_unlock(&st->mu);
}

static void tick(uv_timer_t *t)
{
    struct kvg_serve *sv = t->data;
    struct kvg_serve_status *st = &sv->status;
    struct kvg_ui_sample *s = st->scratch;
    double now = kvg_now_s(); /* the rates' interval: monotonic */
    double dt = st->last_t > 0 ? now - st->last_t : 0;
    struct kvg_serve_ui_totals cur;
    read_totals(sv, &cur);
    memset(s, 0, sizeof *s);
    s->t = kvg_wall_s(); /* the sample's timestamp, shown */
    if (dt > 0) {
        sample_rates(s, &cur, &st->prev, dt);
    } else { /* the first sample: no interval yet */
        s->err4_pct = s->err5_pct = s->hit_pct = s->match_pct = -1;
        s->ttft_p50 = s->ttft_p90 = s->itl_p50 = s->itl_p90 = -1;
    }
    struct kvg_adm_stats a = {0};
    if (sv->gate.adm) kvg_adm_stats(sv->gate.adm, &a);
    s->queue = a.waiting;
    sample_workers(sv, s, dt, ++st->ticks % SENT_INTERVAL_TICKS == 0);
    kvg_ui_history_push(&st->hist, s);
    st->prev = cur;
    st->last_t = now;
}

int kvg_serve_status_start(struct kvg_serve *sv, uv_loop_t *loop)
{
    struct kvg_serve_status *st = &sv->status;
    int rc = kvg_ui_history_init(&st->hist);
    if (rc) return rc;
    if (!(st->scratch = calloc(1, sizeof *st->scratch)) ||
        !(st->sent = calloc(KVG_POOL_MAX_WORKERS, sizeof *st->sent))) {
        kvg_serve_status_free(sv);
        return -ENOMEM;
    }
    pthread_mutex_init(&st->mu, NULL);
    st->mu_ok = 1;
    uv_timer_init(loop, &st->timer);
    st->timer.data = sv;
    st->timer_on = 1;
    uv_timer_start(&st->timer, tick, SAMPLE_MS, SAMPLE_MS);
    return 0;
}

/* No close callback: the timer is in sv, which outlives the loop's run
 * (kvg_serve_status_free comes after uv_run has returned). */
void kvg_serve_status_stop(struct kvg_serve *sv)
{
    if (!sv->status.timer_on) return;
    uv_close((uv_handle_t *)&sv->status.timer, NULL);
    sv->status.timer_on = 0;
}

void kvg_serve_status_free(struct kvg_serve *sv)
{
    struct kvg_serve_status *st = &sv->status;
    kvg_ui_history_free(&st->hist);
    free(st->scratch);
    free(st->sent);
    st->scratch = NULL;
    st->sent = NULL;
    if (st->mu_ok) pthread_mutex_destroy(&st->mu);
    st->mu_ok = 0;
}

static void send_buf(struct kvg_http_req *req, const char *type, struct kvg_buf *b, int rc)
{
    if (rc)
        kvg_http_res_error(req, 500, NULL, NULL, "cannot render the status", NULL, 0);
    else
        kvg_http_res_send(req, 200, type, NULL, 0, b->data, b->len);
    kvg_buf_free(b);
}

void kvg_serve_ui_page(struct kvg_serve *sv, struct kvg_http_req *req)
{
    size_t len;
    const char *p = kvg_ui_page(&len);
    static const struct kvg_http_header h[] = {
        {KVG_STR("cache-control"), KVG_STR("no-store")},
        /* Everything the page needs is inline; nothing else may load. */
        {KVG_STR("content-security-policy"),
         KVG_STR("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                 "connect-src 'self'; img-src 'self' data:")}};
    kvg_http_res_send(req, 200, "text/html; charset=utf-8", h, 2, p, len);
}

static double family_sum(struct kvg_metrics_family *f, const char *label, const char *value)
{
    return f ? kvg_metrics_family_sum(f, label, value) : 0;
}

/* ,"pd":{...}: the PD router's counters since start (pd/pd.h), when on. */
static int pd_json(const struct kvg_serve *sv, struct kvg_buf *b)
{
    const struct kvg_pd *pd = sv->pd;
    if (!pd) return 0;
    /* Every model's series added up (a PD series carries its model). */
    struct kvg_metrics_family *const *f = pd->fam;
    uint64_t c[KVG_SERVE_UI_BUCKETS];
    const double *bounds = NULL;
    size_t n = f[KVG_PD_S_TRANSFER] ? kvg_metrics_family_hist_read(f[KVG_PD_S_TRANSFER], c,
                                                                   KVG_SERVE_UI_BUCKETS, &bounds)
                                    : 0;
    if (n > KVG_SERVE_UI_BUCKETS) n = KVG_SERVE_UI_BUCKETS;
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++) count += c[i];
    double sum = family_sum(f[KVG_PD_S_TRANSFER], NULL, NULL);
    double q[2] = {-1, -1};
    for (int i = 0; i < 2 && n && count; i++)
        q[i] = kvg_metrics_quantile(c, bounds, n, i ? 0.9 : 0.5);
    int rc = kvg_buf_printf(
        b,
        ",\"pd\":{\"mode\":\"%s\",\"pairs\":%.0f,\"decode_only\":%.0f,"
        "\"aggregated_on_decode\":%.0f,\"prefill_failures\":%.0f,\"decode_retries\":%.0f,"
        "\"early_rejections\":%.0f,\"wasted_prefills\":%.0f,\"encode_failures\":%.0f,"
        "\"transfers\":%llu,\"transfer_mean_s\":",
        pd->cfg.mode == KVG_PD_SGLANG ? "sglang" : "vllm",
        family_sum(f[KVG_PD_S_PAIRS], "decision", "prefill_decode"),
        family_sum(f[KVG_PD_S_PAIRS], "decision", "decode_only"),
        family_sum(f[KVG_PD_S_AGGREGATED], NULL, NULL),
        family_sum(f[KVG_PD_S_PREFILL_FAILURES], NULL, NULL),
        family_sum(f[KVG_PD_S_DECODE_RETRIES], NULL, NULL),
        family_sum(f[KVG_PD_S_EARLY_REJECTIONS], NULL, NULL),
        family_sum(f[KVG_PD_S_WASTED_PREFILLS], NULL, NULL),
        family_sum(f[KVG_PD_S_ENCODE_FAILURES], NULL, NULL), (unsigned long long)count);
    if (!rc)
        rc = count ? kvg_buf_printf(b, "%.6g", sum / (double)count) : kvg_buf_append_str(b, "null");
    for (int i = 0; !rc && i < 2; i++) {
        rc = kvg_buf_append_str(b, i ? ",\"transfer_p90_s\":" : ",\"transfer_p50_s\":");
        if (!rc) rc = q[i] >= 0 ? kvg_buf_printf(b, "%.6g", q[i]) : kvg_buf_append_str(b, "null");
    }
    if (!rc) rc = kvg_buf_append(b, "}", 1);
    return rc;
}

void kvg_serve_ui_state(struct kvg_serve *sv, struct kvg_http_req *req)
{
    cJSON *root = kvg_serve_workers_json(sv);
    char *workers = root ? cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "workers")) : NULL;
    cJSON_Delete(root);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = !workers;
    if (!rc) rc = kvg_buf_append_str(&b, "{\"policy\":");
    if (!rc) rc = kvg_buf_append_json_str(&b, sv->cfg.policy, strlen(sv->cfg.policy));
    if (!rc)
        rc = kvg_buf_printf(&b,
                            ",\"started\":%.3f,\"now\":%.3f,\"generation\":%llu,"
                            "\"autoscale\":%s,\"quotas\":%s,\"workers\":%s,\"history\":",
                            sv->started_s, kvg_wall_s(),
                            (unsigned long long)kvg_serve_generation(sv),
                            sv->autoscale ? "true" : "false",
                            sv->gate.auth_on && sv->gate.quota ? "true" : "false", workers);
    if (!rc) rc = kvg_ui_history_json(&sv->status.hist, KVG_UI_SAMPLES, &b);
    if (!rc) rc = pd_json(sv, &b);
    if (!rc) rc = kvg_buf_append(&b, "}", 1);
    free(workers);
    send_buf(req, "application/json", &b, rc);
}

static const char *worker_state(struct kvg_worker *w)
{
    if (!atomic_load(&w->healthy)) return "unhealthy";
    if (atomic_load(&w->cb_state) == KVG_CB_OPEN) return "circuit_open";
    return "serving";
}

uint64_t kvg_serve_generation(struct kvg_serve *sv)
{
    struct kvg_serve_status *st = &sv->status;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    /* Order-independent: the sum of each (url, state)'s hash. */
    uint64_t h = n;
    for (size_t i = 0; i < n; i++) {
        const char *state = worker_state(ws[i]);
        uint64_t x = kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED_SHORT, ws[i]->url);
        h += kvg_hash_fnv1a64_str(x, state);
        kvg_worker_unref(ws[i]);
    }
    if (!st->mu_ok) return 0;
    pthread_mutex_lock(&st->mu);
    if (h != st->view_hash) {
        st->view_hash = h;
        st->generation++;
    }
    uint64_t g = st->generation;
    pthread_mutex_unlock(&st->mu);
    return g;
}

/* ,"limits":{...}: a model's own limits (null: none) and its requests
 * counted against them now (docs/models.md). */
static int model_limits(struct kvg_buf *b, const struct kvg_catalog_model *m)
{
    const struct kvg_proxy_model *pm = m->host;
    const struct kvg_gate_mcount *c = pm ? pm->count : NULL;
    char in[16] = "null", q[16] = "null";
    if (m->max_inflight) snprintf(in, sizeof in, "%u", m->max_inflight);
    if (m->max_queue) snprintf(q, sizeof q, "%u", m->max_queue);
    return kvg_buf_printf(b,
                          ",\"limits\":{\"max_inflight\":%s,\"max_queue\":%s,\"inflight\":%lld,"
                          "\"queued\":%lld}",
                          in, q, c ? (long long)atomic_load(&c->inflight) : 0LL,
                          c ? (long long)atomic_load(&c->queued) : 0LL);
}

void kvg_serve_serving(struct kvg_serve *sv, struct kvg_http_req *req)
{
    struct kvg_serve_status *st = &sv->status;
    uint64_t gen = kvg_serve_generation(sv);
    kvg_serve_modes_refresh(sv);
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    /* With models:, each worker's model and, per model, its workers, those
     * serving and the requests sent to them. */
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    if (cat && cat->any >= 0) {
        kvg_catalog_unref(cat);
        cat = NULL;
    }
    static _Thread_local uint64_t per[KVG_CATALOG_MAX_MODELS][3]; /* workers, serving, sent */
    if (cat) memset(per, 0, sizeof per);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = kvg_buf_printf(&b,
                            "{\"router\":\"%s:%d\",\"generation\":%llu,\"taken_at\":%.3f,"
                            "\"interval_s\":%d,\"draining\":%s,\"workers\":[",
                            sv->cfg.host, sv->cfg.port, (unsigned long long)gen, kvg_wall_s(),
                            SENT_INTERVAL_TICKS * SAMPLE_MS / 1000,
                            atomic_load(&sv->draining) ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        uint64_t sent = 0;
        if (st->mu_ok && w->slot >= 0 && (size_t)w->slot < KVG_POOL_MAX_WORKERS) {
            pthread_mutex_lock(&st->mu);
            if (!strcmp(st->sent[w->slot].url, w->url)) sent = st->sent[w->slot].last_interval;
            pthread_mutex_unlock(&st->mu);
        }
        if (!rc && i) rc = kvg_buf_append(&b, ",", 1);
        if (!rc) rc = kvg_buf_append_str(&b, "{\"url\":");
        if (!rc) rc = kvg_buf_append_json_str(&b, w->url, strlen(w->url));
        int cm = cat ? kvg_serve_worker_model(sv, cat, w) : -1;
        if (cm >= 0) {
            per[cm][0]++;
            per[cm][1] += !strcmp(worker_state(w), "serving");
            per[cm][2] += sent;
            if (!rc) rc = kvg_buf_append_str(&b, ",\"model\":");
            if (!rc)
                rc =
                    kvg_buf_append_json_str(&b, cat->models[cm].name, strlen(cat->models[cm].name));
        }
        char why[256];
        int mode = kvg_route_mode_get(w, why, sizeof why);
        if (!rc)
            rc = kvg_buf_printf(&b,
                                ",\"role\":\"%s\",\"state\":\"%s\",\"routing_mode\":\"%s\","
                                "\"requests_last_interval\":%llu}",
                                kvg_worker_role_name(atomic_load(&w->role)),
                                atomic_load(&sv->draining) ? "draining" : worker_state(w),
                                kvg_route_mode_name(mode), (unsigned long long)sent);
        kvg_worker_unref(w);
    }
    if (!rc) rc = kvg_buf_append_str(&b, "]");
    if (!rc && cat) rc = kvg_buf_append_str(&b, ",\"models\":[");
    for (size_t m = 0; cat && !rc && m < cat->nmodels; m++) {
        if (m) rc = kvg_buf_append(&b, ",", 1);
        if (!rc) rc = kvg_buf_append_str(&b, "{\"name\":");
        if (!rc) rc = kvg_buf_append_json_str(&b, cat->models[m].name, strlen(cat->models[m].name));
        if (!rc)
            rc = kvg_buf_printf(
                &b, ",\"workers\":%llu,\"serving\":%llu,\"requests_last_interval\":%llu",
                (unsigned long long)per[m][0], (unsigned long long)per[m][1],
                (unsigned long long)per[m][2]);
        if (!rc) rc = model_limits(&b, &cat->models[m]);
        if (!rc) rc = kvg_buf_append(&b, "}", 1);
    }
    if (!rc && cat) rc = kvg_buf_append(&b, "]", 1);
    if (!rc) rc = kvg_buf_append(&b, "}", 1);
    kvg_catalog_unref(cat);
    send_buf(req, "application/json", &b, rc);
}
