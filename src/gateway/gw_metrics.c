/* kvgate serve's metrics; see gw_metrics.h. Names follow the routers users
 * know (sglang's smg_*, vllm-router's vllm_router_*) with the kvgate_ prefix. */
#include "gateway/gw_metrics.h"

#include <string.h>

#include "base/util.h"

static const char *route_names[KVG_ROUTE_N] = {"/v1/chat/completions", "/v1/completions"};
static const char *class_names[6] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};

int kvg_gw_metrics_init(struct kvg_gw_metrics *m, const char *policy)
{
    memset(m, 0, sizeof *m);
    m->policy = policy;
    int rc = kvg_metrics_registry_new(0, &m->reg);
    if (rc) return rc;
    struct kvg_metrics_family *req, *dur, *ttfb, *f;
    const char *rl[] = {"route", "code"};
    const char *r1[] = {"route"};
    const char *wl[] = {"worker"};
    const char *dl[] = {"policy", "worker"};
    double lat[24];
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
    for (int r = 0; r < KVG_ROUTE_N; r++) {
        for (int c = 0; c < 6; c++) {
            const char *v[] = {route_names[r], class_names[c]};
            if ((rc = kvg_metrics_series(req, v, 2, &m->requests[r][c]))) return rc;
        }
        if ((rc = kvg_metrics_series(dur, &route_names[r], 1, &m->duration[r])) ||
            (rc = kvg_metrics_series(ttfb, &route_names[r], 1, &m->ttfb[r])))
            return rc;
    }
    struct {
        const char *name, *help;
        struct kvg_metrics_series **out;
    } plain[] = {
        {"kvgate_retries_total", "Attempts on another worker after a failure before any byte.",
         &m->retries},
        {"kvgate_client_disconnects_total", "Requests whose client left before the end.",
         &m->client_gone},
        {"kvgate_upstream_errors_total", "Worker failures: connect, reset, timeout, 5xx.",
         &m->upstream_errors},
        {"kvgate_no_worker_total", "Requests answered 503 for want of a healthy worker.",
         &m->no_worker},
    };
    for (size_t i = 0; i < KVG_ARRAY_LEN(plain); i++)
        if ((rc = kvg_metrics_counter(m->reg, plain[i].name, plain[i].help, NULL, 0, &f)) ||
            (rc = kvg_metrics_series(f, NULL, 0, plain[i].out)))
            return rc;
    if ((rc = kvg_metrics_gauge(m->reg, "kvgate_workers", "Workers in the pool.", NULL, 0, &f)) ||
        (rc = kvg_metrics_series(f, NULL, 0, &m->workers)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_worker_requests_active",
                                "Requests in flight per worker (router-side count).", wl, 1,
                                &m->w_active)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_worker_health", "1 healthy, 0 unhealthy.", wl, 1,
                                &m->w_health)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_worker_cb_state",
                                "Circuit breaker: 0 closed, 1 open, 2 half-open.", wl, 1,
                                &m->w_cb)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_worker_processed_requests",
                                "Requests ever sent to the worker (since it joined).", wl, 1,
                                &m->w_processed)) ||
        (rc = kvg_metrics_gauge(m->reg, "kvgate_policy_decisions",
                                "Routing decisions per policy and worker (since it joined).", dl, 2,
                                &m->decisions)))
        return rc;
    return 0;
}

void kvg_gw_metrics_free(struct kvg_gw_metrics *m)
{
    for (int r = 0; r < KVG_ROUTE_N; r++) {
        for (int c = 0; c < 6; c++) kvg_metrics_series_release(m->requests[r][c]);
        kvg_metrics_series_release(m->duration[r]);
        kvg_metrics_series_release(m->ttfb[r]);
    }
    kvg_metrics_series_release(m->retries);
    kvg_metrics_series_release(m->client_gone);
    kvg_metrics_series_release(m->upstream_errors);
    kvg_metrics_series_release(m->no_worker);
    kvg_metrics_series_release(m->workers);
    kvg_metrics_registry_free(m->reg);
}

void kvg_gw_metrics_request(struct kvg_gw_metrics *m, enum kvg_gw_route r, int status,
                            double duration_s, double ttfb_s)
{
    int c = status >= 100 && status < 600 ? status / 100 - 1 : 5;
    kvg_metrics_inc(m->requests[r][c]);
    kvg_metrics_observe(m->duration[r], duration_s);
    if (ttfb_s >= 0) kvg_metrics_observe(m->ttfb[r], ttfb_s);
}

static void set_series(struct kvg_metrics_family *f, const char *const *v, size_t n, double x)
{
    struct kvg_metrics_series *s;
    if (kvg_metrics_series(f, v, n, &s)) return;
    kvg_metrics_set(s, x);
    kvg_metrics_series_release(s);
}

int kvg_gw_metrics_render(struct kvg_gw_metrics *m, struct kvg_pool *pool, struct kvg_buf *out)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(pool, ws, KVG_POOL_MAX_WORKERS);
    kvg_metrics_set(m->workers, (double)n);
    for (size_t i = 0; i < n; i++) {
        const char *v[] = {ws[i]->url};
        const char *d[] = {m->policy, ws[i]->url};
        set_series(m->w_active, v, 1, atomic_load(&ws[i]->in_flight));
        set_series(m->w_health, v, 1, atomic_load(&ws[i]->healthy) ? 1 : 0);
        set_series(m->w_cb, v, 1, atomic_load(&ws[i]->cb_state));
        set_series(m->w_processed, v, 1, (double)atomic_load(&ws[i]->processed));
        set_series(m->decisions, d, 2, (double)atomic_load(&ws[i]->processed));
        kvg_worker_unref(ws[i]);
    }
    return kvg_metrics_render(m->reg, out);
}

void kvg_gw_metrics_forget_worker(struct kvg_gw_metrics *m, const char *url)
{
    kvg_metrics_remove_label(m->reg, "worker", url);
}
