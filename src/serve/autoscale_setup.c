/* kvgate serve --autoscale FILE: the autoscaler embedded in the gateway.
 * Every interval a timer on the main loop fills each autoscale pool's
 * signals from what serve knows (the router's workers: health, engine load,
 * prefill tokens in flight; the proxy: requests and time to first token; the
 * admission queue) and ticks the controller (autoscale/ctl.h); the
 * `external` actuator then exports the result: GET /autoscale,
 * GET /autoscale/metrics (KEDA metrics-api) and the gauges
 * kvgate_autoscale_desired_replicas{pool} / _ready_replicas{pool}. The
 * `local` actuator starts and stops engine processes and registers them
 * in the router pool (autoscale_local.c: hooks, prewarm, slow start,
 * cache-aware scale-down, requests held at zero replicas).
 *
 * Without models:, every autoscale pool reads the whole router pool. With
 * models:, each pool reads the model its `model:` names (an alias
 * resolved: a start-up and a reload error when it names none): that
 * model's workers (by the catalog, kvg_serve_worker_model; the local
 * actuator's replicas join it by their model label), its requests in the
 * gateway queue (the admission group of its model) and the proxy's
 * observations of the requests that model served. The observed signals
 * come from the signal builder (autoscale/signals.h), as in the offline
 * benchmark: the proxy tells each request's arrival, a stream's first
 * token-carrying event (proxy/obs.c's token clock, the TTFT histogram's)
 * and the end with the engine's usage (serve reads every request's
 * usage under --autoscale) into a sharded feed per model; each tick folds
 * it into its pools' windows, judged against that pool's targets. TTFT and ITL are measured on
 * streams only (a whole answer's first token comes with its last); ISL and OSL come from the usage
 * of the requests finished in the window, unknown (null in GET /autoscale, 0 to the planners:
 * kvg_autoscale_plan) before any did, as in the benchmark. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/ctl.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "router/catalog.h"
#include "serve/autoscale_int.h"

int kvg_serve_autoscale_is_local(const struct kvg_serve_config *c)
{
    struct kvg_autoscale_config cfg;
    char err[256];
    return c->autoscale_path[0] &&
           !kvg_autoscale_config_load(c->autoscale_path, &cfg, err, sizeof err) &&
           !strcmp(cfg.actuator, "local");
}

/* A pool whose model: is none of models:'s (split: it names a split). */
static int no_model(const struct kvg_serve_config *c, const struct kvg_autoscale_pool_cfg *pc,
                    int split, char *err, size_t errlen)
{
    return kvg_err_set(err, errlen, KVG_ECONFIG,
                       "%s: pool %s: model '%s' %s of the models: in %s (with models:, each pool "
                       "scales one model: its model: is that model's name or an alias of it)",
                       c->autoscale_path, pc->name, pc->opts.model,
                       split ? "is a split, none" : "is no model",
                       c->config_path[0] ? c->config_path : "the config");
}

int kvg_serve_autoscale_scaled(const struct kvg_serve_config *c, struct kvg_strlist *out, char *err,
                               size_t errlen)
{
    if (!c->nmodels || !c->autoscale_path[0]) return 0;
    struct kvg_autoscale_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return kvg_err_set(err, errlen, -ENOMEM, "autoscale: out of memory");
    int rc = kvg_autoscale_config_load(c->autoscale_path, cfg, err, errlen);
    for (size_t i = 0; !rc && !strcmp(cfg->actuator, "local") && i < cfg->npools; i++) {
        /* Its entry, by name or alias, before the catalog's checks: an
         * entry it no longer names would only say it has no workers. */
        const char *n = cfg->pools[i].opts.model;
        const struct kvg_catalog_spec *hit = NULL;
        for (size_t k = 0; !hit && k < c->nmodels; k++) {
            const struct kvg_catalog_spec *sp = &c->models[k].spec;
            int named = !strcmp(sp->name, n);
            for (size_t j = 0; !named && j < sp->aliases.n; j++)
                named = !strcmp(sp->aliases.v[j], n);
            if (named) hit = sp;
        }
        if (!hit || hit->nsplit || hit->alias_of[0])
            rc = no_model(c, &cfg->pools[i], hit && hit->nsplit, err, errlen);
        else if ((rc = kvg_strlist_add(out, n)))
            rc = kvg_err_set(err, errlen, rc, "autoscale: %s", kvg_strerror(rc));
    }
    free(cfg);
    return rc;
}

/* The served model that pool pc's `model:` names in cat (its name or an
 * alias), or -1 with err saying why. */
static int pool_model(const struct kvg_serve_autoscale *a, const struct kvg_catalog *cat,
                      const struct kvg_autoscale_pool_cfg *pc, char *err, size_t errlen)
{
    const char *n = pc->opts.model;
    int k = kvg_catalog_find(cat, n, strlen(n));
    if (k >= 0 && cat->names[k].model >= 0) return cat->names[k].model;
    no_model(&a->sv->cfg, pc, k >= 0, err, errlen);
    return -1;
}

/* With models: (the catalog's models have names), each pool's served
 * model into its cfg's serves and its group; without, one group reads
 * everything. */
static int pool_models(struct kvg_serve_autoscale *a, char *err, size_t errlen)
{
    struct kvg_catalog *cat = kvg_serve_catalog(a->sv);
    a->by_model = cat && cat->any < 0;
    a->ngroups = a->by_model ? 0 : 1;
    a->gmodel[0] = "";
    int rc = 0;
    for (size_t i = 0; a->by_model && i < a->ctl->npools; i++) {
        struct kvg_autoscale_pool_cfg *pc = &a->ctl->pools[i].cfg;
        int m = pool_model(a, cat, pc, err, errlen);
        if (m < 0) {
            rc = KVG_ECONFIG;
            break;
        }
        snprintf(pc->serves, sizeof pc->serves, "%s", cat->models[m].name);
        size_t g = 0;
        while (g < a->ngroups && strcmp(a->gmodel[g], pc->serves)) g++;
        if (g == KVG_ADM_GROUPS) { /* pools are fewer (16): never */
            rc = kvg_err_set(err, errlen, KVG_ECONFIG, "autoscale: over %d models", KVG_ADM_GROUPS);
            break;
        }
        if (g == a->ngroups) a->gmodel[a->ngroups++] = pc->serves;
        a->group[i] = (int)g;
    }
    if (cat) kvg_catalog_unref(cat);
    return rc;
}

/* The group whose pools read a request of served model name (len bytes;
 * "" for the single-model flags' one), -1 none. Any thread: the groups
 * are set before serving. Also the gate's model_group (ud: a). */
static int group_of(void *ud, const char *name, size_t len)
{
    const struct kvg_serve_autoscale *a = ud;
    for (size_t g = 0; g < a->ngroups; g++)
        if (!a->by_model || (strlen(a->gmodel[g]) == len && !memcmp(a->gmodel[g], name, len)))
            return (int)g;
    return -1;
}

int kvg_serve_autoscale_models_check(struct kvg_serve *sv, const struct kvg_catalog *cat, char *err,
                                     size_t errlen)
{
    struct kvg_serve_autoscale *a = sv->autoscale;
    if (!a) return 0;
    if (a->by_model != (cat->any < 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s: models: %s by a reload, but the autoscaler's pools were set up "
                           "%s it (a restart sets them up again)",
                           a->sv->cfg.autoscale_path, a->by_model ? "removed" : "added",
                           a->by_model ? "with" : "without");
    for (size_t i = 0; a->by_model && i < a->ctl->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &a->ctl->pools[i].cfg;
        int m = pool_model(a, cat, pc, err, errlen);
        if (m < 0) return KVG_ECONFIG;
        if (strcmp(cat->models[m].name, pc->serves))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "%s: pool %s: model '%s' would stand for '%s', not '%s', which its "
                               "replicas serve (a restart sets the pools up again)",
                               a->sv->cfg.autoscale_path, pc->name, pc->opts.model,
                               cat->models[m].name, pc->serves);
    }
    return 0;
}

/* Frees a half-built a: the controller (a local actuator stops its
 * children), the local actuator's state, the feeds and the windows. */
static void discard(struct kvg_serve_autoscale *a)
{
    kvg_autoscale_ctl_free(a->ctl);
    kvg__serve_autoscale_local_free(a);
    for (size_t g = 0; g < KVG_AUTOSCALE_MAX_POOLS; g++) {
        if (a->feed[g]) kvg_autoscale_feed_destroy(a->feed[g]);
        free(a->feed[g]);
    }
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++) kvg_autoscale_obs_free(a->obs[i]);
    free(a);
}

/* The seconds between ticks (the timer's period). */
static double tick_s(const struct kvg_serve_autoscale *a)
{
    double s = a->ctl->cfg.interval_s;
    return s < 0.1 ? 0.1 : s;
}

/* Pool i's window: the span its planner reads (autoscale/signals.h). */
static double span_s(const struct kvg_autoscale_pool_cfg *pc)
{
    return kvg_autoscale_obs_span(pc->planner, pc->opts.interval_s, pc->signal_window_s);
}

/* From the proxy, on any loop thread: into this thread's shard. Requests
 * refused before an engine (4xx) are not counted as finished. */
static void on_observe(void *ud, const struct kvg_proxy_obs *o)
{
    struct kvg_serve_autoscale *a = ud;
    const char *mn = o->model ? o->model : "";
    int g = group_of(a, mn, strlen(mn));
    if (g < 0) return; /* a model no pool reads */
    struct kvg_autoscale_feed *f = a->feed[g];
    if (o->kind == KVG_PROXY_OBS_ARRIVE)
        kvg_autoscale_feed_arrive(f, (double)o->prompt_tokens);
    else if (o->kind == KVG_PROXY_OBS_FIRST)
        kvg_autoscale_feed_first(f, o->ttft_s);
    else if (o->failed || (o->status >= 200 && o->status < 300) || o->status == 499)
        kvg_autoscale_feed_finish(f, o->failed, o->ttft_s, o->itl_s, o->prefill_s,
                                  (double)o->prompt_tokens, (double)o->completion_tokens,
                                  (double)o->cached_tokens);
}

/* A feed per group and each pool's window (enough ticks for its span). */
static int obs_init(struct kvg_serve_autoscale *a)
{
    int rc;
    for (size_t g = 0; g < a->ngroups; g++) {
        struct kvg_autoscale_feed *f = malloc(sizeof *f);
        if (!f) return -ENOMEM;
        if ((rc = kvg_autoscale_feed_init(f))) {
            free(f);
            return rc;
        }
        a->feed[g] = f;
    }
    for (size_t i = 0; i < a->ctl->npools; i++) {
        double nb = ceil(span_s(&a->ctl->pools[i].cfg) / tick_s(a)) + 2;
        if ((rc = kvg_autoscale_obs_new(nb < 4096 ? (size_t)nb : 4096, 1 << 14, &a->obs[i])))
            return rc;
    }
    return 0;
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
    if ((rc = pool_models(a, err, errlen)) ||
        (!strcmp(cfg.actuator, "local") &&
         (rc = kvg__serve_autoscale_local_init(a, err, errlen)))) {
        discard(a);
        return rc;
    }
    if ((rc = obs_init(a))) {
        discard(a);
        return kvg_err_set(err, errlen, rc, "autoscale signals: %s", kvg_strerror(rc));
    }
    const char *lbl[] = {"pool"};
    struct kvg_metrics_registry *reg = sv->metrics.reg;
    if ((rc = kvg_metrics_gauge(reg, "kvgate_autoscale_desired_replicas",
                                "Replicas the autoscaler wants per pool", lbl, 1, &a->desired_f)) ||
        (rc = kvg_metrics_gauge(reg, "kvgate_autoscale_ready_replicas",
                                "Replicas ready per pool, as the autoscaler last saw them", lbl, 1,
                                &a->ready_f))) {
        discard(a);
        return kvg_err_set(err, errlen, rc, "autoscale gauges: %s", kvg_strerror(rc));
    }
    sv->autoscale = a;
    sv->proxy.on_observe = on_observe;
    sv->proxy.on_observe_ud = a;
    if (a->by_model) {
        sv->gate.o.model_group = group_of;
        sv->gate.o.model_group_ud = a;
    }
    KVG_INFO("autoscale: %zu pools from %s, actuator %s%s", cfg.npools, c->autoscale_path,
             cfg.actuator, cfg.dry_run ? " (dry run: nothing acts)" : "");
    return 0;
}

/* A prefill or decode pool's capacity is its role's workers alone (the
 * other leg's serve the same model); an aggregated pool counts them all. */
static int other_role(const struct kvg_autoscale_pool_cfg *pc, const struct kvg_worker *w)
{
    int r = atomic_load(&w->role);
    if (pc->opts.role == KVG_AUTOSCALE_PREFILL) return r != KVG_ROLE_PREFILL;
    if (pc->opts.role == KVG_AUTOSCALE_DECODE) return r != KVG_ROLE_DECODE;
    return 0;
}

/* Pool i's signals now: its model's workers of its role (without models:,
 * the whole router pool's) and its requests in the admission queue, then
 * the pool's window. */
static void fill(struct kvg_serve_autoscale *a, size_t i, double now,
                 struct kvg_autoscale_signals *s)
{
    struct kvg_serve *sv = a->sv;
    const struct kvg_autoscale_pool_cfg *pc = &a->ctl->pools[i].cfg;
    memset(s, 0, sizeof *s);
    s->now = now;
    struct kvg_catalog *cat = a->by_model ? kvg_serve_catalog(sv) : NULL;
    int m = -1; /* the pool's model in the current catalog (a reload keeps its name's meaning) */
    if (cat) {
        int k = kvg_catalog_find(cat, pc->serves, strlen(pc->serves));
        m = k < 0 ? -1 : cat->names[k].model;
    }
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    uint64_t now_ms = kvg_now_ms();
    for (size_t k = 0; k < n; k++) {
        struct kvg_worker *w = ws[k];
        if ((a->by_model && (!cat || m < 0 || kvg_serve_worker_model(sv, cat, w) != m)) ||
            other_role(pc, w)) {
            kvg_worker_unref(w); /* another model's, or the other leg's */
            continue;
        }
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
    if (cat) kvg_catalog_unref(cat);
    if (sv->gate.adm) { /* the queue itself: the gauge is only refreshed when scraped */
        struct kvg_adm_stats as;
        kvg_adm_stats(sv->gate.adm, &as);
        /* Batch waits by design: the planner reads it as a backlog due by
         * its deadlines (planner.h), not as demand held back. */
        size_t all = as.waiting, batch = as.waiting_class[3];
        if (a->by_model) { /* its model's waiters alone (gate_group) */
            all = as.waiting_group[a->group[i]];
            batch = as.batch_group[a->group[i]];
        }
        s->queued = (double)(all - batch);
        s->batch_queued = (double)batch;
    }
    kvg_autoscale_obs_window(a->obs[i], tick_s(a), span_s(pc), s);
}

static void tick(uv_timer_t *t);

/* The next tick on the grid (autoscale/ctl.h, kvg_autoscale_ctl_tick_wait). */
static int arm(struct kvg_serve_autoscale *a)
{
    double wait = kvg_autoscale_ctl_tick_wait(tick_s(a), kvg_now_s() - a->t0, &a->ticks);
    return uv_timer_start(&a->timer, tick, (uint64_t)ceil(wait * 1000), 0);
}

static void tick(uv_timer_t *t)
{
    struct kvg_serve_autoscale *a = t->data;
    double now = kvg_now_s() - a->t0; /* monotonic: a clock step must not skew rates */
    a->ticks++;
    int arc = arm(a);
    if (arc) KVG_WARN("autoscale: timer: %s", uv_strerror(arc));
    /* The tick's observations close each pool's filling bucket (a failed
     * take leaves them in the feed for the next tick). */
    struct kvg_autoscale_feed_take tk[KVG_AUTOSCALE_MAX_POOLS];
    int trc[KVG_AUTOSCALE_MAX_POOLS];
    for (size_t g = 0; g < a->ngroups; g++)
        if ((trc[g] = kvg_autoscale_feed_take(a->feed[g], &tk[g])))
            KVG_WARN("autoscale: signals: %s", kvg_strerror(trc[g]));
    for (size_t i = 0; i < a->ctl->npools; i++) {
        const struct kvg_autoscale_opts *o = &a->ctl->pools[i].cfg.opts;
        int g = a->group[i];
        if (!trc[g]) /* stamped mid-tick (autoscale/signals.h) */
            kvg_autoscale_obs_fold(a->obs[i], &tk[g], now - tick_s(a) / 2, o->ttft_target_s,
                                   o->itl_target_s);
        kvg_autoscale_obs_next(a->obs[i]);
    }
    for (size_t g = 0; g < a->ngroups; g++)
        if (!trc[g]) kvg_autoscale_feed_take_free(&tk[g]);
    struct kvg_autoscale_signals sigs[KVG_AUTOSCALE_MAX_POOLS];
    for (size_t i = 0; i < a->ctl->npools; i++) fill(a, i, now, &sigs[i]);
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
    a->t0 = kvg_now_s();
    a->ticks = 0;
    int rc = kvg__serve_autoscale_local_start(a, loop);
    if (rc) return rc;
    uv_timer_init(loop, &a->timer);
    a->timer.data = a;
    a->timer_on = 1;
    return arm(a);
}

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
    sv->proxy.on_observe = NULL; /* the loops have stopped */
    discard(a);
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
