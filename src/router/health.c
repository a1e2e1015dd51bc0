/* Active health checks, sglang-router style: every interval each worker's
 * health endpoint is asked with a timeout; `failure_threshold` failures in a
 * row make it unhealthy, `success_threshold` successes in a row healthy again.
 * A worker never checked yet becomes healthy at its first success, so a new
 * pool serves as soon as its engines answer. Each success also refreshes the
 * worker's model list from its /v1/models. A worker has at most one check
 * and one /v1/models call in flight, each with an overall deadline (the
 * timeout), so an engine that never finishes an answer costs one connection
 * each, not one per tick; a failing check's reason is logged once per
 * change. Runs on the main thread's loop. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "router/health.h"

/* struct kvg_worker.hc_busy bits. */
#define HC_CHECK 1
#define HC_MODELS 2

struct check {
    struct kvg_health *h;
    struct kvg_worker *w; /* reference */
    int status;
    int models; /* 1: this call fetches /v1/models */
    int cut;    /* the body went past its cap */
    struct kvg_buf body;
};

static void models_done(void *ud, int err);
static void check_head(void *ud, int status, const struct kvg_http_header *hs, size_t n)
{
    ((struct check *)ud)->status = status;
}

static void check_body(void *ud, const char *p, size_t n)
{
    struct check *c = ud;
    if (c->models && !c->cut && kvg_buf_append(&c->body, p, n)) c->cut = 1; /* capped */
}

static void record(struct kvg_health *h, struct kvg_worker *w, int ok)
{
    int was = atomic_load(&w->healthy);
    if (ok) {
        w->hc_fails = 0;
        w->hc_successes++;
        if (!was && (w->hc_successes >= h->success_threshold || !w->hc_ever_healthy)) {
            atomic_store(&w->healthy, 1);
            w->hc_ever_healthy = 1;
            KVG_INFO("health: worker %s is healthy", w->url);
        }
    } else {
        w->hc_successes = 0;
        w->hc_fails++;
        if (was && w->hc_fails >= h->failure_threshold) {
            atomic_store(&w->healthy, 0);
            KVG_WARN("health: worker %s is unhealthy", w->url);
        }
    }
    w->hc_checked = 1;
}

static void start_models(struct kvg_health *h, struct kvg_worker *w);

/* Says why a check failed when the reason changes (one line per episode,
 * not per tick): an unhealthy verdict comes failures later, by then the
 * cause should be in the log. */
static void note_failure(struct kvg_health *h, struct kvg_worker *w, int err, int status)
{
    int key = err ? err : status;
    if (key == w->hc_last_err) return;
    w->hc_last_err = key;
    if (err == KVG_ETIMEOUT)
        KVG_WARN("health: worker %s: check failed: no whole answer within the %u ms deadline",
                 w->url, h->timeout_ms);
    else if (err)
        KVG_WARN("health: worker %s: check failed: %s", w->url, kvg_strerror(err));
    else
        KVG_WARN("health: worker %s: check failed: HTTP %d", w->url, status);
}

static void check_done(void *ud, int err)
{
    struct check *c = ud;
    int ok = err == 0 && c->status >= 200 && c->status < 300;
    c->w->hc_busy &= ~HC_CHECK;
    if (ok)
        c->w->hc_last_err = 0;
    else
        note_failure(c->h, c->w, err, c->status);
    record(c->h, c->w, ok);
    if (ok) start_models(c->h, c->w);
    c->h->inflight--;
    kvg_worker_unref(c->w);
    kvg_buf_free(&c->body);
    free(c);
}

static void models_done(void *ud, int err)
{
    struct check *c = ud;
    /* A cut list is not read (the worker keeps the models it had): said
     * once per worker, not at every check. */
    if (c->cut && !atomic_exchange(&c->w->models_cut_logged, 1))
        KVG_WARN("worker %s: its /v1/models answer is over %zu bytes: not read", c->w->url,
                 c->body.limit);
    if (err == 0 && c->status == 200 && !c->cut) {
        cJSON *j = cJSON_ParseWithLength(c->body.data ? c->body.data : "", c->body.len);
        kvg_worker_set_models(c->w, cJSON_GetObjectItemCaseSensitive(j, "data"));
        cJSON_Delete(j);
    }
    c->w->hc_busy &= ~HC_MODELS;
    c->h->inflight--;
    kvg_worker_unref(c->w);
    kvg_buf_free(&c->body);
    free(c);
}

static void start_call(struct kvg_health *h, struct kvg_worker *w, int models)
{
    int bit = models ? HC_MODELS : HC_CHECK;
    if (w->hc_busy & bit) return; /* the last one is still in flight (within its deadline) */
    struct check *c = calloc(1, sizeof *c);
    if (!c) return;
    c->h = h;
    c->w = w;
    c->models = models;
    /* A vLLM listing thousands of LoRA adapters (model_list.h's cap, 4096,
     * each a few hundred bytes with its permissions) is read whole. */
    kvg_buf_init(&c->body, 8 << 20);
    kvg_worker_ref(w);
    struct kvg_http_call_opts o = {.connect_timeout_ms = h->timeout_ms,
                                   .first_byte_timeout_ms = h->timeout_ms,
                                   .idle_timeout_ms = h->timeout_ms,
                                   .total_timeout_ms = h->timeout_ms};
    static const struct kvg_http_call_cbs check_cbs = {check_head, check_body, check_done};
    static const struct kvg_http_call_cbs models_cbs = {check_head, check_body, models_done};
    h->inflight++;
    w->hc_busy |= bit; /* before the start: on_done may run inside it */
    char bearer[300];
    struct kvg_http_header auth;
    size_t nauth = (size_t)kvg_worker_auth_header(w, bearer, sizeof bearer, &auth);
    if (kvg_http_call_start(h->client, &w->target, "GET",
                            kvg_str_c(models ? "/v1/models" : h->endpoint), &auth, nauth, NULL, 0,
                            &o, models ? &models_cbs : &check_cbs, c, NULL)) {
        h->inflight--;
        kvg_worker_unref(w);
        kvg_buf_free(&c->body);
        free(c);
        w->hc_busy &= ~bit;
        if (!models) record(h, w, 0);
    }
}

static void start_models(struct kvg_health *h, struct kvg_worker *w)
{
    start_call(h, w, 1);
}

void kvg_health_check_now(struct kvg_health *h)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(h->pool, ws, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        if (h->enabled)
            start_call(h, ws[i], 0);
        else if (ws[i]->models.n == 0)
            start_models(h, ws[i]);
        kvg_worker_unref(ws[i]);
    }
}

static void on_tick(uv_timer_t *t)
{
    kvg_health_check_now(t->data);
}

/* Engines load for minutes: a worker that has never answered its health
 * check is asked every second, so it serves as soon as it is up, not a
 * whole --health-check-interval later. */
static void on_startup_tick(uv_timer_t *t)
{
    struct kvg_health *h = t->data;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(h->pool, ws, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        if (h->enabled && !ws[i]->hc_ever_healthy) start_call(h, ws[i], 0);
        kvg_worker_unref(ws[i]);
    }
}

int kvg_health_start(struct kvg_health *h, uv_loop_t *loop, struct kvg_pool *pool)
{
    h->pool = pool;
    int rc = kvg_http_client_new(loop, NULL, &h->client);
    if (rc) return rc;
    uv_timer_init(loop, &h->timer);
    h->timer.data = h;
    /* Right away (a new pool serves as soon as it can), then every interval;
     * models are re-read at that pace even without active checks. */
    uint64_t every = h->interval_ms ? h->interval_ms : 60000;
    uv_timer_start(&h->timer, on_tick, 0, every);
    uv_timer_init(loop, &h->startup_timer);
    h->startup_timer.data = h;
    uv_timer_start(&h->startup_timer, on_startup_tick, 1000, 1000);
    return 0;
}

/* No close callback: h (the timers' memory) is the caller's and outlives
 * the loop's run (serve/serve.c: in kvg_serve_run's frame until uv_run has
 * returned), as health.h asks. */
void kvg_health_stop(struct kvg_health *h)
{
    uv_timer_stop(&h->timer);
    uv_close((uv_handle_t *)&h->timer, NULL);
    uv_timer_stop(&h->startup_timer);
    uv_close((uv_handle_t *)&h->startup_timer, NULL);
}
