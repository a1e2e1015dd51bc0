/* The autoscale daemon; see daemon.h. Threads: the loop (HTTP, lease,
 * signals) and the tick thread (blocking reads and the actuator). They
 * share the controller (its own mutex), the lease's held() (atomic) and
 * each pool's actuation record (d->mu). */
#include "autoscale/daemon.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "autoscale/actuator_k8s.h"
#include "autoscale/ctl.h"
#include "autoscale/lease.h"
#include "autoscale/sources.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "gateway/gate.h"
#include "net/http.h"
#include "metrics/metrics.h"

/* What the actuator last did for a pool. */
struct actuation {
    int pushed;         /* a count was applied since this replica last became leader */
    uint32_t last;      /* the count last applied */
    double at;          /* when (s since start), -1 never */
    uint64_t ok, fails; /* totals */
    char error[384];    /* the last failure's reason, "" after a success */
};

struct daemon {
    struct kvg_autoscale_config cfg;
    struct kvg_autoscale_ctl *ctl;
    struct kvg_autoscale_actuator *act; /* NULL: external, or a dry run */
    struct kvg_autoscale_lease *lease;  /* NULL: no lease configured (or dry run) */
    struct kvg_autoscale_sources src;
    int src_ok;
    struct kvg_autoscale_signals sigs[KVG_AUTOSCALE_MAX_POOLS]; /* the tick thread's */
    char src_error[256]; /* the sources' last error, copied under mu ("" none) */
    char id[128];
    double t0; /* kvg_now_s() at start: ticks' times count from it */
    uv_loop_t loop;
    struct kvg_http_server *srv;
    uv_signal_t sigterm, sigint;
    pthread_t th;
    int th_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    _Atomic int leader;
    struct actuation acts[KVG_AUTOSCALE_MAX_POOLS];
    struct kvg_metrics_registry *reg;
    struct kvg_metrics_family *desired_f, *ready_f, *acts_f;
    struct kvg_metrics_series *leader_s;
    struct kvg_gate gate; /* keys only (kvg_gate_init_keys): who may read what */
    int gate_ok;
};

/* May this replica act now? */
static int may_act(struct daemon *d)
{
    if (d->cfg.dry_run) return 0;
    return !d->lease || kvg_autoscale_lease_held(d->lease, kvg_now_ms());
}

static void count_act(struct daemon *d, size_t i, const char *result)
{
    const char *v[] = {d->ctl->pools[i].cfg.name, result};
    struct kvg_metrics_series *s;
    if (!kvg_metrics_series(d->acts_f, v, 2, &s)) {
        kvg_metrics_inc(s);
        kvg_metrics_series_release(s);
    }
}

/* Pool i's decision through the actuator: on every acted decision, and
 * whenever the count differs from the one last applied or none was
 * applied since this replica became leader (a new leader pushes at once). */
static void actuate(struct daemon *d, size_t i, const struct kvg_autoscale_decision *dec,
                    double now)
{
    struct actuation *a = &d->acts[i];
    if (!d->act || (!dec->acted && a->pushed && a->last == dec->desired)) return;
    if (!may_act(d)) return; /* the lease went while reading: act on nothing */
    char err[384] = "";
    const struct kvg_autoscale_pool_cfg *pc = &d->ctl->pools[i].cfg;
    int rc = d->act->ops->apply(d->act, pc, dec->desired, now, err, sizeof err);
    pthread_mutex_lock(&d->mu);
    a->at = now;
    if (rc) {
        a->fails++;
        snprintf(a->error, sizeof a->error, "%s", err[0] ? err : kvg_strerror(rc));
    } else {
        a->ok++;
        a->error[0] = 0;
        a->pushed = 1;
        a->last = dec->desired;
    }
    pthread_mutex_unlock(&d->mu);
    count_act(d, i, rc ? "error" : "ok");
    if (rc)
        KVG_WARN("autoscale: pool %s: %s to %u replicas failed: %s", pc->name, d->act->ops->name,
                 dec->desired, a->error);
    else if (dec->desired != dec->current)
        KVG_INFO("autoscale: pool %s: %u -> %u (%s)", pc->name, dec->current, dec->desired,
                 dec->reason);
}

static void tick(struct daemon *d)
{
    double now = kvg_now_s() - d->t0; /* monotonic: a clock step must not skew rates */
    int leader = may_act(d);
    if (atomic_exchange(&d->leader, leader) != leader) {
        KVG_INFO("autoscale: %s", leader ? "acting" : "standing by (another holds the lease)");
        pthread_mutex_lock(&d->mu);
        for (size_t i = 0; i < d->ctl->npools; i++) d->acts[i].pushed = 0;
        pthread_mutex_unlock(&d->mu);
    }
    if (d->lease) kvg_autoscale_ctl_set_standby(d->ctl, !leader);
    struct kvg_autoscale_signals *sigs = d->sigs;
    kvg_autoscale_sources_read(&d->src, &d->cfg, now, sigs);
    for (size_t i = 0; i < d->ctl->npools; i++) /* an alias: the model it stands for */
        kvg_autoscale_ctl_set_served(d->ctl, i, d->src.served[i]);
    pthread_mutex_lock(&d->mu);
    int changed = strcmp(d->src_error, d->src.error) != 0;
    if (changed) snprintf(d->src_error, sizeof d->src_error, "%s", d->src.error);
    pthread_mutex_unlock(&d->mu);
    if (changed && d->src.error[0]) KVG_WARN("autoscale: sources: %s", d->src.error);
    for (size_t i = 0; i < d->ctl->npools; i++) {
        struct kvg_autoscale_decision dec;
        int rc = kvg_autoscale_ctl_tick(d->ctl, i, &sigs[i], &dec);
        if (rc) {
            KVG_WARN("autoscale: pool %s: %s", d->ctl->pools[i].cfg.name, kvg_strerror(rc));
            continue;
        }
        if (leader) actuate(d, i, &dec, now);
    }
}

static void *tick_thread(void *ud)
{
    struct daemon *d = ud;
    uint64_t ticks = 0; /* the grid index of the tick just run: the first at t0 */
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        pthread_mutex_unlock(&d->mu);
        tick(d);
        pthread_mutex_lock(&d->mu);
        /* On the grid from t0: a wait of the interval after each tick's
         * scrapes drifted by their time, tick by tick. */
        double wait = kvg_autoscale_ctl_tick_wait(d->cfg.interval_s, kvg_now_s() - d->t0, &ticks);
        struct timespec ts = kvg_deadline_after(CLOCK_MONOTONIC, (uint64_t)(wait * 1e9));
        while (!d->stop && pthread_cond_timedwait(&d->cv, &d->mu, &ts) != ETIMEDOUT) {
        }
        ticks++;
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ---- HTTP */

static void add_lease(struct daemon *d, cJSON *root)
{
    cJSON *l = cJSON_AddObjectToObject(root, "lease");
    if (!l) return;
    cJSON_AddStringToObject(l, "id", d->id);
    if (!d->lease) {
        cJSON_AddNullToObject(l, "key");
        cJSON_AddBoolToObject(l, "held", may_act(d));
        return;
    }
    cJSON_AddStringToObject(l, "key", d->cfg.lease.key);
    cJSON_AddNumberToObject(l, "ttl_ms", d->cfg.lease.ttl_ms);
    cJSON_AddBoolToObject(l, "held", kvg_autoscale_lease_held(d->lease, kvg_now_ms()));
    cJSON_AddStringToObject(l, "holder", kvg_autoscale_lease_holder(d->lease));
    cJSON_AddNumberToObject(l, "acquired", (double)kvg_autoscale_lease_acquired(d->lease));
    const char *e = kvg_autoscale_lease_error(d->lease);
    if (e[0])
        cJSON_AddStringToObject(l, "error", e);
    else
        cJSON_AddNullToObject(l, "error");
}

static char *status_json(struct daemon *d)
{
    cJSON *root = kvg_autoscale_ctl_json(d->ctl);
    if (!root) return NULL;
    add_lease(d, root);
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "pools");
    size_t i = 0;
    cJSON *p;
    pthread_mutex_lock(&d->mu);
    if (d->src_error[0])
        cJSON_AddStringToObject(root, "sources_error", d->src_error);
    else
        cJSON_AddNullToObject(root, "sources_error");
    cJSON_ArrayForEach(p, pools)
    {
        if (i >= d->ctl->npools) break;
        const struct actuation *a = &d->acts[i++];
        cJSON *j = cJSON_AddObjectToObject(p, "actuation");
        if (!j) break;
        if (a->at >= 0)
            cJSON_AddNumberToObject(j, "last_at_s", a->at);
        else
            cJSON_AddNullToObject(j, "last_at_s");
        if (a->pushed)
            cJSON_AddNumberToObject(j, "last_replicas", a->last);
        else
            cJSON_AddNullToObject(j, "last_replicas");
        cJSON_AddNumberToObject(j, "ok", (double)a->ok);
        cJSON_AddNumberToObject(j, "errors", (double)a->fails);
        if (a->error[0])
            cJSON_AddStringToObject(j, "error", a->error);
        else
            cJSON_AddNullToObject(j, "error");
    }
    pthread_mutex_unlock(&d->mu);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static void refresh_gauges(struct daemon *d)
{
    kvg_metrics_set(d->leader_s, may_act(d));
    for (size_t i = 0; i < d->ctl->npools; i++) {
        double want, ready;
        kvg_autoscale_ctl_counts(d->ctl, i, &want, &ready);
        if (want < 0) continue; /* before the first tick: absent, not 0 */
        const char *v[] = {d->ctl->pools[i].cfg.name};
        struct kvg_metrics_series *s;
        if (!kvg_metrics_series(d->desired_f, v, 1, &s)) {
            kvg_metrics_set(s, want);
            kvg_metrics_series_release(s);
        }
        if (!kvg_metrics_series(d->ready_f, v, 1, &s)) {
            kvg_metrics_set(s, ready);
            kvg_metrics_series_release(s);
        }
    }
}

static void send_owned(struct kvg_http_req *req, const char *ctype, char *body)
{
    if (!body) {
        kvg_http_res_error(req, 500, NULL, NULL, "out of memory", NULL, 0);
        return;
    }
    kvg_http_res_send(req, 200, ctype, NULL, 0, body, strlen(body));
    free(body);
}

/* Keyed as kvgate serve's same endpoints (serve/endpoints.c): the plan
 * and its reasons (GET /autoscale) are the admin's, with --keys an admin
 * key, without only loopback clients; KEDA's /autoscale/metrics and
 * /metrics are readable; anything else needs what the API would. */
static int head_check(struct kvg_http_req *req, void *ud, struct kvg_http_refusal *out)
{
    struct daemon *d = ud;
    enum kvg_gate_access a =
        kvg_str_eq(req->path, "/health")      ? KVG_GATE_PUBLIC
        : kvg_str_eq(req->path, "/autoscale") ? KVG_GATE_ADMIN
        : kvg_str_eq(req->path, "/autoscale/metrics") || kvg_str_eq(req->path, "/metrics")
            ? KVG_GATE_READ
            : KVG_GATE_API;
    struct kvg_gate_deny deny;
    if (!kvg_gate_check_head(&d->gate, a, kvg_http_req_header(req, "authorization"), req->peer,
                             &req->head_note, &deny))
        return 0;
    *out = deny.r; /* its headers are static strings */
    return 1;
}

static void handle(struct kvg_http_req *req, void *ud)
{
    struct daemon *d = ud;
    int known = kvg_str_eq(req->path, "/autoscale") ||
                kvg_str_eq(req->path, "/autoscale/metrics") || kvg_str_eq(req->path, "/metrics") ||
                kvg_str_eq(req->path, "/health");
    if (!known) {
        kvg_http_res_error(req, 404, NULL, NULL,
                           "kvgate autoscale serves GET /autoscale, "
                           "/autoscale/metrics, /metrics and /health",
                           NULL, 0);
        return;
    }
    if (!req->method_name || strcmp(req->method_name, "GET")) {
        struct kvg_http_header allow = {kvg_str_c("Allow"), kvg_str_c("GET")};
        kvg_http_res_error(req, 405, NULL, NULL, "only GET", &allow, 1);
        return;
    }
    if (kvg_str_eq(req->path, "/health")) {
        kvg_http_res_send(req, 200, "text/plain", NULL, 0, "ok\n", 3);
    } else if (kvg_str_eq(req->path, "/autoscale")) {
        send_owned(req, "application/json", status_json(d));
    } else if (kvg_str_eq(req->path, "/autoscale/metrics")) {
        cJSON *j = kvg_autoscale_ctl_keda_json(d->ctl);
        char *s = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        send_owned(req, "application/json", s);
    } else {
        refresh_gauges(d);
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        if (kvg_metrics_render(d->reg, &b))
            kvg_http_res_error(req, 500, NULL, NULL, "cannot render metrics", NULL, 0);
        else
            kvg_http_res_send(req, 200, "text/plain; version=0.0.4", NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
    }
}

/* ---- life cycle */

static void lease_closed(void *ud)
{
    (void)ud; /* the loop ends once every handle is closed */
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct daemon *d = h->data;
    KVG_INFO("autoscale: %s: stopping", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    /* The tick in progress (bounded by the sources' and the actuator's
     * timeouts) ends before the lease is given up: nothing acts after. */
    if (d->th_on) pthread_join(d->th, NULL);
    d->th_on = 0;
    if (d->srv) kvg_http_server_close(d->srv);
    d->srv = NULL;
    if (d->lease) kvg_autoscale_lease_close(d->lease, lease_closed, d);
    d->lease = NULL;
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
}

static int setup(struct daemon *d, const char *path, int dry, const char *id, const char *keys,
                 char *err, size_t errlen)
{
    int rc = kvg_gate_init_keys(&d->gate, keys, err, errlen);
    if (rc) return rc;
    d->gate_ok = 1;
    if ((rc = kvg_autoscale_config_load(path, &d->cfg, err, errlen))) return rc;
    if (dry) d->cfg.dry_run = 1;
    if (!d->cfg.npools) return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: no pools", path);
    /* A pool with a model: reads that model's series alone (sources.h). */
    for (size_t i = 0; i < d->cfg.npools; i++) {
        struct kvg_autoscale_pool_cfg *pc = &d->cfg.pools[i];
        if (pc->model_given) snprintf(pc->serves, sizeof pc->serves, "%s", pc->opts.model);
    }
    if (!strcmp(d->cfg.actuator, "local"))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s: actuator local runs embedded (kvgate serve --autoscale FILE): it "
                           "registers engines in that gateway's pool",
                           path);
    if ((rc = kvg_autoscale_ctl_new(&d->cfg, &d->ctl, err, errlen))) return rc;
    if (!d->cfg.dry_run && !strcmp(d->cfg.actuator, "kubernetes") &&
        (rc = kvg_autoscale_k8s_new(&d->cfg.kubernetes, &d->ctl->su, &d->act, err, errlen)))
        return rc;
    uint32_t t_ms = (uint32_t)KVG_MIN(2000.0, KVG_MAX(200.0, d->cfg.interval_s * 250));
    if ((rc = kvg_autoscale_sources_init(&d->src, &d->cfg, t_ms, err, errlen))) return rc;
    d->src_ok = 1;
    if (id && id[0]) {
        snprintf(d->id, sizeof d->id, "%s", id);
    } else {
        char host[64] = "autoscaler";
        gethostname(host, sizeof host - 1);
        snprintf(d->id, sizeof d->id, "%s-%d", host, (int)getpid());
    }
    if (d->cfg.lease.redis[0] && !d->cfg.dry_run) {
        uint32_t every = (uint32_t)KVG_MIN(d->cfg.interval_s * 1000, d->cfg.lease.ttl_ms / 3.0);
        if ((rc = kvg_autoscale_lease_start(&d->loop, &d->cfg.lease, d->id, KVG_MAX(every, 100u),
                                            &d->lease, err, errlen)))
            return rc;
    }
    const char *pl[] = {"pool"}, *al[] = {"pool", "result"};
    struct kvg_metrics_family *lf;
    if ((rc = kvg_metrics_registry_new(0, &d->reg)) ||
        (rc = kvg_metrics_gauge(d->reg, "kvgate_autoscale_desired_replicas",
                                "Replicas the autoscaler wants per pool", pl, 1, &d->desired_f)) ||
        (rc = kvg_metrics_gauge(d->reg, "kvgate_autoscale_ready_replicas",
                                "Replicas ready per pool, as the autoscaler last saw them", pl, 1,
                                &d->ready_f)) ||
        (rc = kvg_metrics_counter(d->reg, "kvgate_autoscale_actuations_total",
                                  "Counts applied through the actuator, by result (ok, error)", al,
                                  2, &d->acts_f)) ||
        (rc = kvg_metrics_gauge(d->reg, "kvgate_autoscale_leader",
                                "1 while this autoscaler may act (holds the lease, not a dry run)",
                                NULL, 0, &lf)) ||
        (rc = kvg_metrics_series(lf, NULL, 0, &d->leader_s)))
        return kvg_err_set(err, errlen, rc, "metrics: %s", kvg_strerror(rc));
    return 0;
}

int kvg_autoscale_daemon_run(const struct kvg_autoscale_daemon_opts *o)
{
    const char *path = o->config_path, *host = o->host, *id = o->id;
    int dry = o->dry_run, port = o->port;
    struct daemon *d = calloc(1, sizeof *d);
    if (!d) return 1;
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++) d->acts[i].at = -1;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    uv_loop_init(&d->loop);
    char err[512] = "";
    int rc = setup(d, path, dry, id, o->keys_path, err, sizeof err);
    struct kvg_http_limits lim;
    kvg_http_limits_default(&lim);
    if (!rc && (rc = kvg_http_server_start(&d->loop, host, (int)port, KVG_HTTP_BIND_EXCLUSIVE, &lim,
                                           handle, d, &d->srv)))
        snprintf(err, sizeof err, "listen %s:%d: %s", host, (int)port, kvg_strerror(rc));
    if (!rc) kvg_http_server_set_head_check(d->srv, head_check);
    if (!rc) {
        d->t0 = kvg_now_s();
        uv_signal_init(&d->loop, &d->sigterm);
        uv_signal_init(&d->loop, &d->sigint);
        d->sigterm.data = d->sigint.data = d;
        uv_signal_start(&d->sigterm, on_signal, SIGTERM);
        uv_signal_start(&d->sigint, on_signal, SIGINT);
        if ((rc = pthread_create(&d->th, NULL, tick_thread, d)))
            snprintf(err, sizeof err, "tick thread: %s", strerror(rc));
        else
            d->th_on = 1;
    }
    if (!rc) {
        KVG_INFO("autoscale: %zu pools from %s, actuator %s%s, as %s on %s:%d", d->cfg.npools, path,
                 d->cfg.actuator, d->cfg.dry_run ? " (dry run: nothing acts)" : "", d->id, host,
                 kvg_http_server_port(d->srv));
        uv_run(&d->loop, UV_RUN_DEFAULT);
    } else {
        fprintf(stderr, "kvgate autoscale: %s\n", err);
        if (d->srv) kvg_http_server_close(d->srv);
        if (d->lease) kvg_autoscale_lease_close(d->lease, lease_closed, d);
        if (d->sigterm.loop) { /* started before the tick thread failed: the run would not end */
            uv_close((uv_handle_t *)&d->sigterm, NULL);
            uv_close((uv_handle_t *)&d->sigint, NULL);
        }
        uv_run(&d->loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&d->loop);
    if (d->src_ok) kvg_autoscale_sources_free(&d->src, &d->cfg);
    if (d->act) d->act->ops->destroy(d->act);
    kvg_autoscale_ctl_free(d->ctl);
    kvg_metrics_series_release(d->leader_s);
    kvg_metrics_registry_free(d->reg);
    if (d->gate_ok) kvg_gate_free(&d->gate);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return rc ? 1 : 0;
}
