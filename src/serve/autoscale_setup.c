/* kvgate serve --autoscale FILE: the autoscaler embedded in the gateway.
 * Every interval a timer on the main loop fills each autoscale pool's
 * signals from what serve knows (the router's workers: health, engine load,
 * prefill tokens in flight; the proxy: requests and time to first byte; the
 * admission queue) and ticks the controller (autoscale/ctl.h); the
 * `external` actuator then exports the result: GET /autoscale,
 * GET /autoscale/metrics (KEDA metrics-api) and the gauges
 * kvgate_autoscale_desired_replicas{pool} / _ready_replicas{pool}. The
 * `local` actuator starts and stops engine processes and registers them
 * in the router pool (autoscale_local.c: hooks, prewarm, slow start,
 * cache-aware scale-down, requests held at zero replicas).
 *
 * Every autoscale pool reads the whole router pool (one kvgate serve fronts
 * one pool of workers). Token rates are the request rate times the pool's
 * configured ISL and OSL: kvgate reads usage only for requests a quota
 * counts, so it has no token totals for all traffic yet; ITL and cache hits
 * are unknown here (null in /autoscale). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/ctl.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "serve/autoscale_int.h"

int kvg_serve_autoscale_is_local(const struct kvg_serve_config *c)
{
    struct kvg_autoscale_config cfg;
    char err[256];
    return c->autoscale_path[0] &&
           !kvg_autoscale_config_load(c->autoscale_path, &cfg, err, sizeof err) &&
           !strcmp(cfg.actuator, "local");
}

int kvg_serve_autoscale_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    const struct kvg_serve_config *c = &sv->cfg;
    if (!c->autoscale_path[0]) {
        if (c->autoscale_dry_run)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--dry-run goes with --autoscale FILE");
        return 0;
    }
    struct kvg_autoscale_config cfg;
    int rc = kvg_autoscale_config_load(c->autoscale_path, &cfg, err, errlen);
    if (rc) return rc;
    if (c->autoscale_dry_run) cfg.dry_run = 1;
    if (!strcmp(cfg.actuator, "kubernetes"))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s: actuator kubernetes runs in kvgate autoscale (serve --autoscale "
                           "takes external or local)",
                           c->autoscale_path);
    if (!cfg.npools)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: no pools", c->autoscale_path);
    struct kvg_serve_autoscale *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    a->sv = sv;
    if ((rc = kvg_autoscale_ctl_new(&cfg, &a->ctl, err, errlen))) {
        free(a);
        return rc;
    }
    a->lcfg = cfg.local;
    if (!strcmp(cfg.actuator, "local") && (rc = kvg__serve_autoscale_local_init(a, err, errlen))) {
        kvg_autoscale_ctl_free(a->ctl);
        kvg__serve_autoscale_local_free(a);
        free(a);
        return rc;
    }
    const char *lbl[] = {"pool"};
    struct kvg_metrics_registry *reg = sv->metrics.reg;
    if ((rc = kvg_metrics_gauge(reg, "kvgate_autoscale_desired_replicas",
                                "Replicas the autoscaler wants per pool", lbl, 1, &a->desired_f)) ||
        (rc = kvg_metrics_gauge(reg, "kvgate_autoscale_ready_replicas",
                                "Replicas ready per pool, as the autoscaler last saw them", lbl, 1,
                                &a->ready_f))) {
        kvg_autoscale_ctl_free(a->ctl);
        free(a);
        return kvg_err_set(err, errlen, rc, "autoscale gauges: %s", kvg_strerror(rc));
    }
    sv->autoscale = a;
    KVG_INFO("autoscale: %zu pools from %s, actuator %s%s", cfg.npools, c->autoscale_path,
             cfg.actuator, cfg.dry_run ? " (dry run: nothing acts)" : "");
    return 0;
}

/* The pool's signals now (all autoscale pools read the one router pool). */
static void fill(struct kvg_serve_autoscale *a, double now, const struct kvg_autoscale_pool_cfg *pc,
                 struct kvg_autoscale_signals *s)
{
    struct kvg_serve *sv = a->sv;
    memset(s, 0, sizeof *s);
    s->now = now;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    uint64_t now_ms = kvg_now_ms();
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        if (atomic_load(&w->draining))
            s->draining++; /* leaving: not capacity */
        else if (atomic_load(&w->healthy))
            s->ready++;
        s->inflight_prompt_tokens += (double)atomic_load(&w->active_prefill_tokens);
        struct kvg_engine_load l =
            kvg_worker_load(w, now_ms, 2 * sv->cfg.scrape_interval_ms + 1000);
        if (l.waiting >= 0) s->waiting += l.waiting;
        if (l.running >= 0) s->running += l.running;
        if (l.kv_usage >= 0) s->kv_usage_sum += l.kv_usage;
        kvg_worker_unref(w);
    }
    if (sv->gate.adm) { /* the queue itself: the gauge is only refreshed when scraped */
        struct kvg_adm_stats as;
        kvg_adm_stats(sv->gate.adm, &as);
        s->queued = (double)as.waiting;
    }
    double dt = now - a->last_t;
    uint64_t req = atomic_load(&sv->proxy.requests_total);
    uint64_t tn = 0;
    double tsum = 0;
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) {
        const struct kvg_metrics_series *h = sv->metrics.proxy.ttfb[r];
        if (!h) continue;
        tn += kvg_metrics_hist_count(h);
        tsum += kvg_metrics_hist_sum(h);
    }
    if (dt > 0) s->arrival_rate = (double)(req - a->last_requests) / dt;
    s->isl = pc->isl;
    s->osl = pc->osl;
    s->input_tps = s->arrival_rate * pc->isl;
    s->output_tps = s->arrival_rate * pc->osl;
    s->ttft_mean =
        tn > a->last_ttfb_n ? (tsum - a->last_ttfb_sum) / (double)(tn - a->last_ttfb_n) : -1;
    s->ttft_p90 = s->itl_mean = s->itl_p90 = s->slo_miss = -1;
    s->cache_hit = -1;
}

static void tick(uv_timer_t *t)
{
    struct kvg_serve_autoscale *a = t->data;
    double now = kvg_wall_s() - a->t0;
    struct kvg_autoscale_signals sigs[KVG_AUTOSCALE_MAX_POOLS];
    for (size_t i = 0; i < a->ctl->npools; i++) fill(a, now, &a->ctl->pools[i].cfg, &sigs[i]);
    /* The counters' new bases, after every pool read the same deltas. */
    a->last_t = now;
    a->last_requests = atomic_load(&a->sv->proxy.requests_total);
    a->last_ttfb_n = 0;
    a->last_ttfb_sum = 0;
    for (int r = 0; r < KVG_PROXY_NROUTES; r++) {
        const struct kvg_metrics_series *h = a->sv->metrics.proxy.ttfb[r];
        if (!h) continue;
        a->last_ttfb_n += kvg_metrics_hist_count(h);
        a->last_ttfb_sum += kvg_metrics_hist_sum(h);
    }
    for (size_t i = 0; i < a->ctl->npools; i++) {
        struct kvg_autoscale_decision d;
        int rc = kvg_autoscale_ctl_tick(a->ctl, i, &sigs[i], &d);
        if (rc) {
            KVG_WARN("autoscale: pool %s: %s", a->ctl->pools[i].cfg.name, kvg_strerror(rc));
            continue;
        }
        if (d.acted && d.desired != d.current)
            KVG_INFO("autoscale: pool %s: %u -> %u (%s)%s", a->ctl->pools[i].cfg.name, d.current,
                     d.desired, d.reason, a->ctl->cfg.dry_run ? " [dry run]" : "");
        /* Once per new failure: an actuator retries every tick. */
        const char *ae = a->ctl->pools[i].act_err;
        if (ae[0] && strcmp(ae, a->logged_err[i]))
            KVG_WARN("autoscale: pool %s: actuator: %s", a->ctl->pools[i].cfg.name, ae);
        snprintf(a->logged_err[i], sizeof a->logged_err[i], "%s", ae);
    }
    if (a->local) kvg__serve_autoscale_local_tick(a, now);
}

int kvg_serve_autoscale_start(struct kvg_serve *sv, uv_loop_t *loop)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a) return 0;
    a->t0 = kvg_wall_s();
    a->last_requests = atomic_load(&sv->proxy.requests_total);
    uint64_t ms = (uint64_t)(a->ctl->cfg.interval_s * 1000);
    if (ms < 100) ms = 100;
    int rc = kvg__serve_autoscale_local_start(a, loop);
    if (rc) return rc;
    uv_timer_init(loop, &a->timer);
    a->timer.data = a;
    a->timer_on = 1;
    return uv_timer_start(&a->timer, tick, ms, ms);
}

/* No close callback: the timer is in sv->autoscale, freed by
 * kvg_serve_autoscale_free only after the loop's run has ended. */
void kvg_serve_autoscale_stop(struct kvg_serve *sv)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a || !a->timer_on) return;
    a->timer_on = 0;
    uv_close((uv_handle_t *)&a->timer, NULL);
    kvg__serve_autoscale_local_stop(a);
}

void kvg_serve_autoscale_free(struct kvg_serve *sv)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a) return;
    kvg_autoscale_ctl_free(a->ctl); /* a local actuator stops its children */
    kvg__serve_autoscale_local_free(a);
    free(a);
    sv->autoscale = NULL;
}

void kvg_serve_autoscale_refresh_metrics(struct kvg_serve *sv)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a) return;
    for (size_t i = 0; i < a->ctl->npools; i++) {
        double want, ready;
        kvg_autoscale_ctl_counts(a->ctl, i, &want, &ready);
        if (want < 0) continue; /* before the first tick: absent, not 0 */
        const char *v[] = {a->ctl->pools[i].cfg.name};
        struct kvg_metrics_series *s;
        if (!kvg_metrics_series(a->desired_f, v, 1, &s)) {
            kvg_metrics_set(s, want);
            kvg_metrics_series_release(s);
        }
        if (!kvg_metrics_series(a->ready_f, v, 1, &s)) {
            kvg_metrics_set(s, ready);
            kvg_metrics_series_release(s);
        }
    }
}

int kvg_serve_autoscale_body(struct kvg_serve *sv, int keda, struct kvg_buf *out)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a) return KVG_ENOTFOUND;
    cJSON *j = keda ? kvg_autoscale_ctl_keda_json(a->ctl) : kvg_autoscale_ctl_json(a->ctl);
    if (!j) return -ENOMEM;
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return -ENOMEM;
    int rc = kvg_buf_append(out, s, strlen(s));
    free(s);
    return rc;
}
