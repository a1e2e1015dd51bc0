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
#include "router/mode.h"
#include "serve/serve.h"
#include "ui/page.h"

#define SAMPLE_MS 1000
#define SENT_INTERVAL_TICKS 10 /* /serving's "last interval": ten samples */
#define MAX_BUCKETS 32

static uint64_t requests_answered(const struct kvg_proxy_metrics *pm)
{
    uint64_t n = 0;
    for (int r = 0; r < KVG_PROXY_NROUTES; r++)
        for (int c = 0; c < 6; c++) n += (uint64_t)kvg_metrics_value(pm->requests[r][c]);
    return n;
}

/* Both routes' time-to-first-byte buckets, added up. */
static size_t ttfb_buckets(const struct kvg_proxy_metrics *pm, uint64_t *out, const double **bounds)
{
    size_t nb = 0;
    memset(out, 0, MAX_BUCKETS * sizeof *out);
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) {
        uint64_t c[MAX_BUCKETS];
        size_t n = kvg_metrics_hist_read(pm->ttfb[r], c, MAX_BUCKETS, bounds);
        if (n > MAX_BUCKETS) n = MAX_BUCKETS;
        for (size_t i = 0; i < n; i++) out[i] += c[i];
        nb = n;
    }
    return nb;
}

static void sample_workers(struct kvg_serve *sv, struct kvg_ui_sample *s, int update_sent)
{
    struct kvg_serve_status *st = &sv->status;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    uint64_t now = kvg_now_ms();
    s->nw = 0;
    if (update_sent) pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        if (s->nw < KVG_UI_MAX_WORKERS) {
            struct kvg_ui_worker_sample *o = &s->w[s->nw++];
            struct kvg_engine_load l = kvg_worker_load(w, now, sv->cfg.proxy.metrics_staleness_ms);
            snprintf(o->url, sizeof o->url, "%s", w->url);
            o->in_flight = atomic_load(&w->in_flight);
            o->waiting = l.waiting;
            o->kv_usage = l.kv_usage;
        }
        if (update_sent && w->slot >= 0 && (size_t)w->slot < KVG_POOL_MAX_WORKERS) {
            /* A slot is reused by a later worker: the URL tells them apart. */
            struct kvg_serve_sent *e = &st->sent[w->slot];
            uint64_t p = atomic_load(&w->processed);
            if (strcmp(e->url, w->url)) {
                snprintf(e->url, sizeof e->url, "%s", w->url);
                e->last_interval = 0;
            } else {
                e->last_interval = p - e->at_mark;
            }
            e->at_mark = p;
        }
        kvg_worker_unref(w);
    }
    if (update_sent) pthread_mutex_unlock(&st->mu);
}

static void tick(uv_timer_t *t)
{
    struct kvg_serve *sv = t->data;
    struct kvg_serve_status *st = &sv->status;
    const struct kvg_proxy_metrics *pm = &sv->metrics.proxy;
    struct kvg_ui_sample *s = st->scratch;
    double now = kvg_now_s(); /* the rate's interval: monotonic */
    double dt = st->last_t > 0 ? now - st->last_t : SAMPLE_MS / 1000.0;
    uint64_t req = requests_answered(pm);
    uint64_t b[MAX_BUCKETS], d[MAX_BUCKETS];
    const double *bounds = NULL;
    size_t nb = ttfb_buckets(pm, b, &bounds);
    for (size_t i = 0; i < nb; i++) d[i] = b[i] - st->prev_buckets[i];
    memset(s, 0, sizeof *s);
    s->t = kvg_wall_s(); /* the sample's timestamp, shown */
    s->req_rate = st->last_t > 0 && dt > 0 ? (double)(req - st->prev_requests) / dt : 0;
    double p50 = nb ? kvg_metrics_quantile(d, bounds, nb, 0.5) : NAN;
    double p90 = nb ? kvg_metrics_quantile(d, bounds, nb, 0.9) : NAN;
    s->ttft_p50 = isnan(p50) ? -1 : p50;
    s->ttft_p90 = isnan(p90) ? -1 : p90;
    struct kvg_adm_stats a = {0};
    if (sv->gate.adm) kvg_adm_stats(sv->gate.adm, &a);
    s->queue = a.waiting;
    sample_workers(sv, s, ++st->ticks % SENT_INTERVAL_TICKS == 0);
    kvg_ui_history_push(&st->hist, s);
    st->prev_requests = req;
    memcpy(st->prev_buckets, b, sizeof b);
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
                            ",\"started\":%.3f,\"now\":%.3f,\"generation\":%llu,\"workers\":%s,"
                            "\"history\":",
                            sv->started_s, kvg_wall_s(),
                            (unsigned long long)kvg_serve_generation(sv), workers);
    if (!rc) rc = kvg_ui_history_json(&sv->status.hist, KVG_UI_SAMPLES, &b);
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
        int cm = cat ? kvg_catalog_worker_model(cat, w->url) : -1;
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
                &b, ",\"workers\":%llu,\"serving\":%llu,\"requests_last_interval\":%llu}",
                (unsigned long long)per[m][0], (unsigned long long)per[m][1],
                (unsigned long long)per[m][2]);
    }
    if (!rc && cat) rc = kvg_buf_append(&b, "]", 1);
    if (!rc) rc = kvg_buf_append(&b, "}", 1);
    kvg_catalog_unref(cat);
    send_buf(req, "application/json", &b, rc);
}
