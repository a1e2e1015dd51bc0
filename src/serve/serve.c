/* kvgate serve: the process. The main thread runs a control loop (signals,
 * health checks, reload); N loop threads each run an HTTP server on the same
 * address (SO_REUSEPORT) with their own upstream connection pool; all share
 * one worker pool.
 *
 * SIGTERM/SIGINT drain: stop accepting, let requests in flight finish (up to
 * --drain-timeout), then exit 0. SIGHUP re-reads --config's worker list,
 * models and peers without touching open connections. */
#include <errno.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/sched.h"
#include "discovery/discovery.h"
#include "router/health.h"
#include "router/scrape.h"
#include "serve/peers.h"
#include "serve/serve.h"
#include "serve/spawn.h"

struct serve {
    struct kvg_serve sv;
    struct kvg_serve_loop *lcs;
    int nloops;
    uv_loop_t main_loop;
    uv_signal_t sigterm, sigint, sighup;
    uv_timer_t drain_deadline;
    uv_timer_t mode_timer; /* re-judges routing modes, so changes are logged */
    struct kvg_health health;
    struct kvg_scraper scraper;
    struct kvg_spawned sims;
    int draining;
    struct kvg_serve_config file; /* --config as last read: what a SIGHUP compares with */
    int have_file;
};

static void loop_wake(uv_async_t *a);

static void drain_poll(uv_timer_t *t)
{
    struct kvg_serve_loop *lc = t->data;
    unsigned active = kvg_http_server_active(lc->srv);
    if (lc->srv_tls) active += kvg_http_server_active(lc->srv_tls);
    if (active == 0 || atomic_load(&lc->force_close)) {
        uv_timer_stop(t);
        kvg_http_server_close(lc->srv);
        if (lc->srv_tls) kvg_http_server_close(lc->srv_tls);
        kvg_http_client_close(lc->client);
        kvg_gate_loop_close(&lc->gate);
        kvg_proxy_wq_home_close(&lc->wq); /* once the work out is back */
        uv_close((uv_handle_t *)&lc->wake, NULL);
        uv_close((uv_handle_t *)&lc->drain_timer, NULL);
    }
}

static void loop_wake(uv_async_t *a)
{
    struct kvg_serve_loop *lc = a->data;
    if (!atomic_load(&lc->sv->draining) || uv_is_active((uv_handle_t *)&lc->drain_timer)) {
        if (atomic_load(&lc->force_close)) drain_poll(&lc->drain_timer);
        return;
    }
    kvg_http_server_stop_accepting(lc->srv);
    if (lc->srv_tls) kvg_http_server_stop_accepting(lc->srv_tls);
    uv_timer_start(&lc->drain_timer, drain_poll, 0, 50);
}

static void *loop_thread(void *arg)
{
    struct kvg_serve_loop *lc = arg;
    /* The loops run in short bursts (tens of microseconds) and a request
     * waits for each one: with the kernel's slice a woken loop waits for a
     * tokenizer thread's or a neighbour's slice to end (p99 1.6 ms measured,
     * 0.14-0.35 ms with 100 us), at some CPU cost under saturation; both in
     * bench/results/gateway-hol.md and gateway-cost.md. */
    pthread_setname_np(pthread_self(), "kvg-loop"); /* for top -H, ps -L, /proc */
    int us = lc->sv->cfg.loop_slice_us, rc;
    if (us && (rc = kvg_sched_set_slice((uint64_t)us * 1000)))
        KVG_DEBUG("loop thread keeps the kernel's time slice: %s", kvg_strerror(rc));
    uv_run(&lc->loop, UV_RUN_DEFAULT);
    /* Handles closed by drain_poll; let their callbacks run, then close. */
    uv_run(&lc->loop, UV_RUN_DEFAULT);
    uv_loop_close(&lc->loop);
    kvg_proxy_loop_free(&lc->proxy);
    atomic_store(&lc->done, 1);
    return NULL;
}

static int start_loops(struct serve *s)
{
    struct kvg_serve_config *c = &s->sv.cfg;
    s->nloops = c->threads;
    s->lcs = calloc((size_t)s->nloops, sizeof *s->lcs);
    if (!s->lcs) return -ENOMEM;
    int port = c->port;
    for (int i = 0; i < s->nloops; i++) {
        struct kvg_serve_loop *lc = &s->lcs[i];
        lc->sv = &s->sv;
        lc->index = i;
        kvg_rng_seed(&lc->rng, kvg_now_ns() + (uint64_t)i * 7919);
        uv_loop_init(&lc->loop);
        int rc = kvg_http_server_start(&lc->loop, c->host, port,
                                       i ? KVG_HTTP_BIND_GROUP_JOIN : KVG_HTTP_BIND_GROUP_FIRST,
                                       &c->limits, kvg_serve_handle, lc, &lc->srv);
        if (rc) {
            KVG_ERROR("cannot listen on %s:%d: %s", c->host, port, kvg_strerror(rc));
            return rc;
        }
        kvg_http_server_set_head_check(lc->srv, kvg_serve_head_check);
        kvg_http_server_set_refused(lc->srv, kvg_serve_refused);
        port = kvg_http_server_port(lc->srv); /* port 0: the others join the one picked */
        if (s->sv.tls) {
            rc = kvg_http_server_start(&lc->loop, c->host, c->tls_port,
                                       i ? KVG_HTTP_BIND_GROUP_JOIN : KVG_HTTP_BIND_GROUP_FIRST,
                                       &c->limits, kvg_serve_handle, lc, &lc->srv_tls);
            if (rc) {
                KVG_ERROR("cannot listen on %s:%d: %s", c->host, c->tls_port, kvg_strerror(rc));
                return rc;
            }
            kvg_http_server_set_tls(lc->srv_tls, s->sv.tls);
            kvg_http_server_set_head_check(lc->srv_tls, kvg_serve_head_check);
            kvg_http_server_set_refused(lc->srv_tls, kvg_serve_refused);
            c->tls_port = kvg_http_server_port(lc->srv_tls);
        }
        if ((rc = kvg_http_client_new(&lc->loop, NULL, &lc->client))) return rc;
        if ((rc = kvg_gate_loop_open(&s->sv.gate, &lc->loop, &lc->gate))) return rc;
        if ((rc = kvg_proxy_wq_home_init(&lc->wq, s->sv.wq, &lc->loop))) return rc;
        lc->proxy = (struct kvg_proxy_loop){.px = &s->sv.proxy,
                                            .loop = &lc->loop,
                                            .client = lc->client,
                                            .gate = &lc->gate,
                                            .rng = &lc->rng,
                                            .wq = &lc->wq};
        uv_async_init(&lc->loop, &lc->wake, loop_wake);
        lc->wake.data = lc;
        uv_timer_init(&lc->loop, &lc->drain_timer);
        lc->drain_timer.data = lc;
    }
    c->port = port;
    for (int i = 0; i < s->nloops; i++)
        if (pthread_create(&s->lcs[i].thread, NULL, loop_thread, &s->lcs[i])) return -EAGAIN;
    return 0;
}

static void stop_main(struct serve *s)
{
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sighup, NULL);
    uv_close((uv_handle_t *)&s->drain_deadline, NULL);
    uv_close((uv_handle_t *)&s->mode_timer, NULL);
    uv_close((uv_handle_t *)&s->sv.health_kick, NULL);
    kvg_discovery_stop(s->sv.disc);
    kvg_health_stop(&s->health);
    kvg_http_client_close(s->health.client);
    kvg_scraper_stop(&s->scraper);
    kvg_serve_status_stop(&s->sv);
    kvg_spawn_stop(&s->sims);
    kvg_serve_autoscale_stop(&s->sv);
    kvg__serve_peers_dns_stop(&s->sv);
    kvg__serve_peers_stop(&s->sv);
}

struct drain_state {
    struct serve *s;
    uint64_t deadline_ms;
    int forced;
};
static struct drain_state g_drain;

static void drain_tick(uv_timer_t *t)
{
    struct serve *s = g_drain.s;
    int all_done = 1;
    for (int i = 0; i < s->nloops; i++) all_done &= atomic_load(&s->lcs[i].done);
    if (all_done) {
        uv_timer_stop(t);
        stop_main(s);
        return;
    }
    if (!g_drain.forced && kvg_now_ms() >= g_drain.deadline_ms) {
        g_drain.forced = 1;
        KVG_WARN("drain: timeout reached, closing the remaining connections");
        for (int i = 0; i < s->nloops; i++) {
            atomic_store(&s->lcs[i].force_close, 1);
            uv_async_send(&s->lcs[i].wake);
        }
    }
}

static void begin_drain(struct serve *s, const char *why)
{
    if (s->draining) return;
    s->draining = 1;
    KVG_INFO("%s: draining (up to %u ms for requests in flight)", why, s->sv.cfg.drain_timeout_ms);
    atomic_store(&s->sv.draining, 1);
    for (int i = 0; i < s->nloops; i++) uv_async_send(&s->lcs[i].wake);
    g_drain.s = s;
    g_drain.deadline_ms = kvg_now_ms() + s->sv.cfg.drain_timeout_ms;
    uv_timer_start(&s->drain_deadline, drain_tick, 20, 20);
}

static int same_list(const struct kvg_strlist *a, const struct kvg_strlist *b)
{
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i])) return 0;
    return 1;
}

/* The static workers (models' workers: beside discovered pods) and their
 * columns are as c has them. */
static int same_static_workers(const struct kvg_serve_config *a, const struct kvg_serve_config *b)
{
    return same_list(&a->workers, &b->workers) && same_list(&a->kv_endpoints, &b->kv_endpoints) &&
           same_list(&a->replay_endpoints, &b->replay_endpoints) &&
           same_list(&a->upstream_keys, &b->upstream_keys) &&
           same_list(&a->worker_roles, &b->worker_roles) &&
           same_list(&a->worker_labels, &b->worker_labels) &&
           same_list(&a->worker_bootstrap, &b->worker_bootstrap);
}

/* SIGHUP's peers (serve/peers.c): the file's peers: list when it differs
 * from the one the file had when last read, so that a list --peers gave
 * over the file stays until the file's own changes; an emptied list
 * removes every peer. A process started without peers refuses a first
 * list (the exchange starts with it). */
static void reload_peers(struct serve *s, const struct kvg_serve_config *f)
{
    if (same_list(&f->peers, s->have_file ? &s->file.peers : &s->sv.cfg.peers)) return;
    char err[512];
    size_t added, removed;
    int rc = kvg__serve_peers_set(&s->sv, &f->peers, &added, &removed, err, sizeof err);
    if (rc)
        KVG_ERROR("SIGHUP: peers in %s not applied, keeping the current ones: %s", f->config_path,
                  err);
    else
        KVG_INFO("SIGHUP: peers reloaded (%zu: %zu new, %zu gone)", f->peers.n, added, removed);
}

/* Some models: entry of c gives SLO targets of its own. */
static int models_slo(const struct kvg_serve_config *c)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (c->models[i].spec.slo_ttft_s > 0) return 1;
    return 0;
}

/* A reload's catalog (of config f) in place of the current one (taken
 * over), and what /metrics says of it after it (kvg_serve_metrics_catalog). */
static void install_catalog(struct serve *s, struct kvg_catalog *cat,
                            const struct kvg_serve_config *f)
{
    struct kvg_catalog *old = kvg_serve_catalog(&s->sv);
    kvg_catalog_swap(&s->sv.catalogs, cat);
    int rc = kvg_serve_metrics_catalog(&s->sv.metrics, old, cat);
    if (rc) KVG_WARN("SIGHUP: metrics of the models: %s", kvg_strerror(rc));
    /* The SLO series exist when the process started with targets. */
    if (!s->sv.metrics.slo_target_f && models_slo(f))
        KVG_WARN("SIGHUP: a models: entry's slo_ttft_secs / slo_itl_secs need a restart to be "
                 "counted: the gateway started without SLO targets");
    if (old) kvg_catalog_unref(old);
}

/* SIGHUP under Kubernetes discovery: the workers are the pods it finds,
 * so only the models: section is reloaded (its pods' labels name their
 * models in the new catalog at once). A model's static workers: stay as
 * the process started with them: the pool cannot tell a static worker
 * from a pod at the same URL, so a changed list is refused (a restart
 * applies it). Takes f over. */
static void reload_discovered(struct serve *s, struct kvg_serve_config *f)
{
    char err[512];
    struct kvg_catalog *cat = NULL;
    if (!f->nmodels && !s->sv.cfg.model_label[0]) {
        KVG_INFO("SIGHUP: workers follow Kubernetes discovery: the worker list stays");
        reload_peers(s, f);
        if (s->have_file) kvg_serve_config_free(&s->file);
        s->file = *f;
        s->have_file = 1;
        return;
    }
    if (!same_static_workers(f, &s->sv.cfg)) {
        KVG_ERROR("SIGHUP: reload refused, keeping the current models: %s: a model's static "
                  "workers: changed, which under Kubernetes discovery needs a restart",
                  s->sv.cfg.config_path);
        kvg_serve_config_free(f);
        return;
    }
    if (kvg_serve_models_prepare(&s->sv, f, &cat, err, sizeof err)) {
        KVG_ERROR("SIGHUP: reload refused, keeping the current models: %s", err);
        kvg_serve_config_free(f);
        return;
    }
    KVG_INFO("SIGHUP: models reloaded (%zu models, %zu names); workers follow Kubernetes "
             "discovery",
             cat->nmodels, cat->nnames);
    install_catalog(s, cat, f);
    kvg_serve_models_unserved(&s->sv);
    reload_peers(s, f);
    if (s->have_file) kvg_serve_config_free(&s->file);
    s->file = *f;
    s->have_file = 1;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct serve *s = h->data;
    if (signum == SIGHUP) {
        const char *path = s->sv.cfg.config_path;
        kvg_gate_reload(&s->sv.gate); /* keys and their quotas */
        if (!path[0]) {
            KVG_INFO("SIGHUP: no --config file: the worker list stays");
            return;
        }
        char err[512];
        struct kvg_serve_config f;
        int rc = kvg_serve_config_reload_file(path, &s->sv.cfg, &f, err, sizeof err);
        if (rc) {
            KVG_ERROR("SIGHUP: reload failed, keeping the current workers and peers: %s", err);
            return;
        }
        /* As at startup: the file's prefill: and decode: entries join the
         * worker list with their roles, under the running PD mode (a flag's
         * when the file names none; the mode itself needs a restart). */
        if (!f.vllm_pd && !f.sglang_pd) {
            f.vllm_pd = s->sv.cfg.vllm_pd;
            f.sglang_pd = s->sv.cfg.sglang_pd;
        }
        if ((rc = kvg_serve_config_pd(&f, err, sizeof err))) {
            KVG_ERROR("SIGHUP: reload refused, keeping the current workers: %s", err);
            kvg_serve_config_free(&f);
            return;
        }
        int dup = kvg_pool_find_duplicate(f.workers.v, f.workers.n);
        if (dup >= 0) {
            /* As at startup: two entries would silently become one worker. */
            KVG_ERROR("SIGHUP: reload refused, keeping the current workers: worker '%s' is listed "
                      "twice in %s (for data-parallel ranks behind one URL, list URL@0, URL@1, "
                      "...)",
                      f.workers.v[dup], path);
            kvg_serve_config_free(&f);
            return;
        }
        if (s->sv.disc) {
            reload_discovered(s, &f);
            return;
        }
        /* The models: section: a new catalog (each model's tokenizer and
         * policy, kept for a model that stayed as it was), installed once
         * the pool holds its workers; requests in flight keep the one they
         * were resolved in. Any error keeps the old one and the old workers. */
        struct kvg_catalog *cat = NULL;
        if ((rc = kvg_serve_models_prepare(&s->sv, &f, &cat, err, sizeof err))) {
            KVG_ERROR("SIGHUP: reload refused, keeping the current models and workers: %s", err);
            kvg_serve_config_free(&f);
            return;
        }
        char changed[512];
        if (s->have_file &&
            kvg_serve_config_diff_restart(&s->file, &f, changed, sizeof changed) > 0)
            KVG_WARN("SIGHUP: %s changed in %s but need%s a restart to apply; still running with "
                     "the old value%s (policy %s, port %d)",
                     changed, path, strchr(changed, ',') ? "" : "s",
                     strchr(changed, ',') ? "s" : "", s->sv.cfg.policy, s->sv.cfg.port);
        rc = kvg_pool_set_ex(&s->sv.pool, f.workers.v, f.kv_endpoints.n ? f.kv_endpoints.v : NULL,
                             f.replay_endpoints.n ? f.replay_endpoints.v : NULL, f.workers.n);
        /* Roles, labels and bootstrap ports, of the new workers and of
         * those that stayed (the file may have changed them). */
        int rrc = kvg_serve_apply_roles(&s->sv.pool, &f);
        if (rrc)
            KVG_WARN("SIGHUP: some workers' roles or labels not applied: %s", kvg_strerror(rrc));
        /* Keys may have changed for workers that stayed; a common key given
         * as a flag, not in the file, stays. */
        if (!f.upstream_api_key[0])
            memcpy(f.upstream_api_key, s->sv.cfg.upstream_api_key, sizeof f.upstream_api_key);
        struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
        size_t nw = kvg_pool_snapshot(&s->sv.pool, ws, KVG_POOL_MAX_WORKERS);
        for (size_t i = 0; i < nw; i++) {
            kvg_worker_set_api_key(ws[i], kvg_serve_upstream_key(&f, ws[i]->url));
            kvg_worker_unref(ws[i]);
        }
        KVG_INFO("SIGHUP: worker list reloaded (%zu workers)%s", f.workers.n,
                 rc ? ", some invalid" : "");
        if (cat) {
            KVG_INFO("SIGHUP: models reloaded (%zu models, %zu names)", cat->nmodels, cat->nnames);
            install_catalog(s, cat, &f);
        }
        if (kvg_pool_size(&s->sv.pool) == 0)
            KVG_WARN("SIGHUP: the pool is now empty: every request is answered 503 no_workers");
        reload_peers(s, &f);
        if (s->have_file) kvg_serve_config_free(&s->file);
        s->file = f; /* the next SIGHUP compares with this one */
        s->have_file = 1;
        kvg_health_check_now(&s->health);
        return;
    }
    begin_drain(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_mode_timer(uv_timer_t *t)
{
    struct serve *s = t->data;
    kvg_serve_modes_refresh(&s->sv);
    kvg_serve_models_confirm(&s->sv);
}

/* A worker's fresh sample may show the room requests in the gateway queue
 * wait for (a batch request waits for an engine queue to empty, which no
 * request ending may announce after the sample that shows it): one waiter
 * per sample re-asks, as one does per request ending. */
static void on_sample(void *ud, struct kvg_worker *w)
{
    (void)w;
    struct serve *s = ud;
    if (s->sv.gate.adm && kvg_adm_waiting(s->sv.gate.adm))
        kvg_adm_capacity_available(s->sv.gate.adm, 1);
}

static void on_health_kick(uv_async_t *a)
{
    struct serve *s = a->data;
    kvg_health_check_now(&s->health);
}

/* The way out of kvg_serve_run once the embedded engines may run: they
 * are stopped here, not left holding their ports (the parent-death signal
 * would reach them too, but unwaited). */
static int serve_fail(struct serve *s, int code)
{
    kvg_spawn_stop(&s->sims);
    return code;
}

/* Each served model's series made at start, so that /metrics lists them
 * at 0 (a model a reload adds gets its series as its requests come). */
static int serve_metrics_models(struct kvg_serve *sv)
{
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    int rc = kvg_serve_metrics_models(&sv->metrics, cat);
    if (!rc) rc = kvg_serve_metrics_catalog(&sv->metrics, NULL, cat);
    if (cat) kvg_catalog_unref(cat);
    return rc;
}

int kvg_serve_run(struct kvg_serve_config *cfg)
{
    static struct serve s; /* one per process; signal handlers find it */
    memset(&s, 0, sizeof s);
    struct kvg_serve_config *c = &s.sv.cfg;
    *c = *cfg; /* takes over its lists */
    memset(cfg, 0, sizeof *cfg);
    char err[512];
    int rc;
    kvg_log_set_level(c->log_level);
    signal(SIGPIPE, SIG_IGN);
    if (c->config_path[0] &&
        kvg_serve_config_reload_file(c->config_path, c, &s.file, err, sizeof err) == 0)
        s.have_file = 1;
    uv_loop_init(&s.main_loop);
    const char *model_hint = "MODEL";
    /* The local actuator brings its own workers: the pool starts empty. */
    if (c->workers.n == 0 && !c->service_discovery && !kvg_serve_autoscale_is_local(c)) {
        /* The embedded default: a few local simulated engines. */
        if ((rc = kvg_spawn_sims(&s.sims, 4, NULL))) return 1;
        for (int i = 0; i < s.sims.n; i++) {
            kvg_strlist_add(&c->workers, s.sims.urls[i]);
            kvg_strlist_add(&c->kv_endpoints, s.sims.kv_endpoints[i]);
        }
        model_hint = KVG_SPAWN_MODEL;
        KVG_INFO("no --worker-urls: started %d simulated engines (kvgate sim) to front", s.sims.n);
    }
    if ((rc = kvg_serve_metrics_init(&s.sv.metrics, c->policy, c->metrics_tenant_labels)) ||
        (rc = kvg_serve_metrics_slo(&s.sv.metrics, c->slo_ttft_s, c->slo_itl_s, models_slo(c)))) {
        fprintf(stderr, "kvgate serve: metrics: %s\n", kvg_strerror(rc));
        return serve_fail(&s, 1);
    }
    if ((rc = kvg_serve_router_init(&s.sv, err, sizeof err)) ||
        (rc = kvg_serve_gate_init(&s.sv, err, sizeof err)) ||
        (rc = kvg_serve_models_init(&s.sv, err, sizeof err)) ||
        (rc = serve_metrics_models(&s.sv)
                  ? kvg_err_set(err, sizeof err, rc, "metrics: %s", kvg_strerror(rc))
                  : 0) ||
        (rc = kvg_serve_autoscale_init(&s.sv, err, sizeof err)) ||
        (rc = kvg__serve_peers_init(&s.sv, err, sizeof err))) {
        fprintf(stderr, "kvgate serve: %s\n", err);
        return serve_fail(&s, 2);
    }
    s.sv.started_s = kvg_wall_s();
    s.health = (struct kvg_health){.enabled = c->health_enabled,
                                   .interval_ms = c->health_interval_ms,
                                   .timeout_ms = c->health_timeout_ms,
                                   .failure_threshold = c->health_failure_threshold,
                                   .success_threshold = c->health_success_threshold,
                                   .endpoint = c->health_endpoint};
    if (c->tls_cert[0] &&
        (rc = kvg_tls_server_ctx(c->tls_cert, c->tls_key, &s.sv.tls, err, sizeof err))) {
        fprintf(stderr, "kvgate serve: TLS: %s\n", err);
        return serve_fail(&s, 2);
    }
    if (c->trace.endpoint[0] &&
        (rc = kvg_trace_new(&c->trace, s.sv.metrics.reg, &s.sv.proxy.tracer, err, sizeof err))) {
        fprintf(stderr, "kvgate serve: %s\n", err);
        return serve_fail(&s, 2);
    }
    rc = kvg_proxy_wq_new(c->tokenizer_threads > 0 ? (unsigned)c->tokenizer_threads : 4,
                          c->tokenizer_nice, &s.sv.wq);
    if (rc) {
        fprintf(stderr, "kvgate serve: work threads: %s\n", kvg_strerror(rc));
        return serve_fail(&s, 1);
    }
    if ((rc = start_loops(&s))) return serve_fail(&s, 1);
    /* Both stay in this frame, which outlives the main loop's run: their
     * stop functions close timers in them without callbacks. */
    s.scraper.interval_ms = c->scrape_interval_ms;
    s.scraper.timeout_ms = c->health_timeout_ms;
    s.scraper.block_size = c->block_size;
    s.scraper.on_sample = on_sample;
    s.scraper.on_sample_ud = &s;
    if ((rc = kvg_health_start(&s.health, &s.main_loop, &s.sv.pool)) ||
        (rc = kvg_scraper_start(&s.scraper, &s.main_loop, &s.sv.pool))) {
        fprintf(stderr, "kvgate serve: health checks, load scrapes: %s\n", kvg_strerror(rc));
        return serve_fail(&s, 1);
    }
    if ((rc = kvg_serve_status_start(&s.sv, &s.main_loop)))
        KVG_WARN("status page: no history (%s)", kvg_strerror(rc));
    kvg_serve_autoscale_start(&s.sv, &s.main_loop);
    if ((rc = kvg__serve_peers_start(&s.sv, &s.main_loop)) ||
        (rc = kvg__serve_peers_dns_start(&s.sv, &s.main_loop))) {
        fprintf(stderr, "kvgate serve: peers: %s\n", kvg_strerror(rc));
        return serve_fail(&s, 1);
    }
    uv_async_init(&s.main_loop, &s.sv.health_kick, on_health_kick);
    s.sv.health_kick.data = &s;
    if ((rc = kvg_serve_discovery_start(&s.sv, err, sizeof err))) {
        fprintf(stderr, "kvgate serve: %s\n", err);
        return serve_fail(&s, 2);
    }
    uv_timer_init(&s.main_loop, &s.drain_deadline);
    uv_timer_init(&s.main_loop, &s.mode_timer);
    s.mode_timer.data = &s;
    uv_timer_start(&s.mode_timer, on_mode_timer, 0, 1000);
    uv_signal_init(&s.main_loop, &s.sigterm);
    uv_signal_init(&s.main_loop, &s.sigint);
    uv_signal_init(&s.main_loop, &s.sighup);
    s.sigterm.data = s.sigint.data = s.sighup.data = &s;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sighup, on_signal, SIGHUP);
    if ((rc = kvg_spawn_watch(&s.sims, &s.main_loop)))
        KVG_WARN("simulated engines: an exit will not be logged (%s)", kvg_strerror(rc));
    KVG_INFO("kvgate serve listening on http://%s:%d (%d threads, policy %s, %zu workers)", c->host,
             c->port, s.nloops, c->policy, c->workers.n);
    if (s.sv.tls) KVG_INFO("kvgate serve listening on https://%s:%d", c->host, c->tls_port);
    printf("kvgate is ready. Try:\n  curl -s http://%s:%d/v1/chat/completions "
           "-H 'content-type: application/json' -d '{\"model\":\"%s\",\"messages\":"
           "[{\"role\":\"user\",\"content\":\"Hello!\"}],\"max_tokens\":16}'\n",
           c->host, c->port, model_hint);
    fflush(stdout);
    uv_run(&s.main_loop, UV_RUN_DEFAULT);
    for (int i = 0; i < s.nloops; i++) pthread_join(s.lcs[i].thread, NULL);
    kvg_trace_free(s.sv.proxy.tracer); /* no loop submits spans now: the last batch goes */
    kvg_proxy_wq_free(s.sv.wq);
    uv_run(&s.main_loop, UV_RUN_DEFAULT);
    uv_loop_close(&s.main_loop);
    free(s.lcs);
    kvg_serve_status_free(&s.sv);
    kvg_gate_free(&s.sv.gate);
    kvg_serve_autoscale_free(&s.sv);
    kvg_serve_models_free(&s.sv);
    kvg__serve_peers_dns_free(&s.sv);
    kvg__serve_peers_free(&s.sv);
    kvg_serve_router_free(&s.sv);
    kvg_serve_metrics_free(&s.sv.metrics);
    if (s.sv.tls) SSL_CTX_free(s.sv.tls);
    kvg_serve_config_free(c);
    if (s.have_file) kvg_serve_config_free(&s.file);
    KVG_INFO("kvgate serve: stopped");
    return 0;
}
