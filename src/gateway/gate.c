/* The gateway's say before a request is routed, and its bookkeeping after:
 *   1. API key (401) and the key's models (403);
 *   2. priority: x-kvgate-priority, else the key's default;
 *   3. token quota: reserve an estimate (prompt + max_tokens) against every
 *      limit of the key, its tenant and (tenant, model), all or nothing, so
 *      concurrent requests cannot overshoot; over a limit: 429 with
 *      Retry-After and x-ratelimit-* headers;
 *   4. admission: a sheddable request needs a worker with room (else 429 at
 *      once); critical and standard ones wait in the gateway queue, in
 *      priority order and fair between tenants, while no worker can take
 *      them (then 503 after the queue timeout);
 * and at the end, whatever happened: the reservation is reconciled with the
 * usage the engine reported (read from the JSON answer or the stream, where
 * kvgate asks for it with stream_options.include_usage and hides the extra
 * chunk from a client that did not ask), and a queue slot is released.
 *
 * Admission defaults (an earlier design of the Gateway API Inference
 * Extension): critical (and standard) requests only to workers with fewer
 * than 50 waiting, sheddable ones only to workers with fewer than 5 waiting
 * and KV below 80%. */
#include "gateway/gate.h"
#include "gateway/gate_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/json.h"
#include "base/json_edit.h"
#include "base/json_scan.h"
#include "base/log.h"

/* Quota state (a few KB): allocated only when a key with limits is used. */
struct kvg_gate_quota {
    int64_t prompt; /* prompt tokens as admission counted them (estimated if not tokenized) */
    struct kvg_quota_req req;
    struct kvg_quota_lease lease;
    struct kvg_quota_result res;
};

/* Healthy and not draining: a worker a new request may go to. */
static int serving(struct kvg_worker *w)
{
    return atomic_load(&w->healthy) && !atomic_load(&w->draining);
}

/* The queue's question: can some healthy worker take a request of this
 * priority now? (Called with the queue's lock held; takes the pool's.) */
static int probe(void *ud, int prio)
{
    struct kvg_gate *g = ud;
    struct kvg_worker *all[KVG_POOL_MAX_WORKERS], *ws[KVG_POOL_MAX_WORKERS];
    size_t na = kvg_pool_snapshot(g->pool, all, KVG_POOL_MAX_WORKERS), n = 0, ok = 0;
    for (size_t i = 0; i < na; i++)
        if (serving(all[i])) ws[n++] = all[i];
    kvg_adm_decide_workers(&g->o.adm, prio, ws, n, kvg_now_ms(), &ok);
    for (size_t i = 0; i < na; i++) kvg_worker_unref(all[i]);
    return ok > 0;
}

/* The keys file, if any (the rest of g zeroed or set by the caller). */
static int load_keys(struct kvg_gate *g, const char *path, char *err, size_t errlen)
{
    snprintf(g->keys_path, sizeof g->keys_path, "%s", path ? path : "");
    g->o.keys_path = g->keys_path;
    struct kvg_keys_set *set = NULL;
    if (g->keys_path[0]) {
        int rc = kvg_keys_load(g->keys_path, &set, err, errlen);
        if (rc) return rc;
        g->auth_on = 1;
        KVG_INFO("API keys: %zu keys from %s", set->nkeys, g->keys_path);
    } else {
        KVG_INFO("no --keys file: requests are not authenticated and no quota applies");
    }
    kvg_keys_holder_init(&g->keys, set); /* takes over our reference */
    return 0;
}

int kvg_gate_init_keys(struct kvg_gate *g, const char *keys_path, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    return load_keys(g, keys_path, err, errlen);
}

int kvg_gate_init(struct kvg_gate *g, const struct kvg_gate_opts *o, struct kvg_pool *pool,
                  char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->o = *o;
    g->pool = pool;
    g->o.quota_store = NULL; /* only read here */
    int rc = load_keys(g, o->keys_path, err, errlen);
    if (rc) return rc;
    struct kvg_quota_opts qo;
    kvg_quota_opts_default(&qo);
    qo.timeout_ms = o->quota_timeout_ms;
    qo.fail_open = !o->quota_fail_closed;
    if ((rc = kvg_quota_new(o->quota_store ? o->quota_store : "", &qo, &g->quota, err, errlen)))
        return rc;
    if ((rc = kvg_adm_queue_new(&g->o.adm, probe, g, &g->adm))) {
        snprintf(err, errlen, "admission queue: %s", kvg_strerror(rc));
        return rc;
    }
    return 0;
}

void kvg_gate_reload(struct kvg_gate *g)
{
    if (!g->keys_path[0]) return;
    char err[512];
    struct kvg_keys_set *set;
    if (kvg_keys_load(g->keys_path, &set, err, sizeof err)) {
        KVG_ERROR("SIGHUP: keys not reloaded, the old ones stay: %s", err);
        return;
    }
    size_t n = set->nkeys;
    kvg_keys_swap(&g->keys, set); /* takes over our reference */
    KVG_INFO("SIGHUP: %zu API keys reloaded from %s", n, g->keys_path);
}

void kvg_gate_free(struct kvg_gate *g)
{
    if (g->adm) kvg_adm_queue_free(g->adm);
    if (g->quota) kvg_quota_free(g->quota);
    kvg_keys_holder_destroy(&g->keys);
    g->adm = NULL;
    g->quota = NULL;
}

int kvg_gate_loop_open(struct kvg_gate *g, uv_loop_t *loop, struct kvg_gate_loop *gl)
{
    gl->g = g;
    gl->q = NULL;
    gl->a = NULL;
    int rc = kvg_quota_loop_open(g->quota, loop, &gl->q);
    if (!rc) rc = kvg_adm_loop_open(g->adm, loop, &gl->a);
    return rc;
}

void kvg_gate_loop_close(struct kvg_gate_loop *gl)
{
    if (gl->a) kvg_adm_loop_close(gl->a);
    if (gl->q) kvg_quota_loop_close(gl->q);
    gl->a = NULL;
    gl->q = NULL;
}

static void deny(struct kvg_gate_deny *d, int status, const char *type, const char *code,
                 const char *msg)
{
    d->r.status = status;
    d->r.type = type;
    d->r.code = code;
    snprintf(d->r.message, sizeof d->r.message, "%s", msg);
    d->r.nheaders = 0;
    d->r.param = NULL;
    d->shed = 0;
    d->r.render = NULL;
}

static void deny_header(struct kvg_gate_deny *d, struct kvg_str name, struct kvg_str value)
{
    if (d->r.nheaders < KVG_ARRAY_LEN(d->r.headers))
        d->r.headers[d->r.nheaders++] = (struct kvg_http_header){name, value};
}

static void deny_key(struct kvg_gate_deny *d, enum kvg_keys_auth a)
{
    deny(d, 401, "authentication_error", "invalid_api_key",
         a == KVG_KEYS_AUTH_MISSING ? "Missing API key: send Authorization: Bearer <key>."
                                    : "Incorrect API key provided.");
    deny_header(d, KVG_STR("www-authenticate"), KVG_STR("Bearer"));
}

struct kvg_str kvg_gate_credential(struct kvg_str authorization, struct kvg_str x_api_key,
                                   char *buf, size_t cap)
{
    if (!x_api_key.p) return authorization;
    while (x_api_key.len && (*x_api_key.p == ' ' || *x_api_key.p == '\t'))
        x_api_key.p++, x_api_key.len--;
    while (x_api_key.len &&
           (x_api_key.p[x_api_key.len - 1] == ' ' || x_api_key.p[x_api_key.len - 1] == '\t'))
        x_api_key.len--;
    if (authorization.p) {
        struct kvg_str t = kvg_keys_bearer(authorization);
        if (t.p && t.len == x_api_key.len && !memcmp(t.p, x_api_key.p, t.len)) return authorization;
        return (struct kvg_str){"", 0}; /* two different keys: which would be charged? */
    }
    if (!x_api_key.len || x_api_key.len + 8 > cap) return (struct kvg_str){"", 0};
    memcpy(buf, "Bearer ", 7);
    memcpy(buf + 7, x_api_key.p, x_api_key.len);
    return (struct kvg_str){buf, 7 + x_api_key.len};
}

int kvg_gate_peer_loopback(const char *peer)
{
    return !strncmp(peer, "127.", 4) || !strncmp(peer, "[::1]:", 6) ||
           !strncmp(peer, "[::ffff:127.", 12);
}

int kvg_gate_check_head(struct kvg_gate *g, enum kvg_gate_access a, struct kvg_str authorization,
                        const char *peer, struct kvg_http_note *note, struct kvg_gate_deny *d)
{
    if (a == KVG_GATE_PUBLIC) return 0;
    if (!g->auth_on) {
        if (a != KVG_GATE_ADMIN || kvg_gate_peer_loopback(peer)) return 0;
        deny(d, 403, "permission_error", "admin_loopback_only",
             "Without --keys the admin API answers clients on the loopback interface only.");
        return 1;
    }
    if (a == KVG_GATE_READ && !g->o.metrics_require_key) return 0;
    struct kvg_keys_set *set = kvg_keys_acquire(&g->keys);
    const struct kvg_keys_entry *e = NULL;
    struct kvg_http_note scratch = {0}, *n = note ? note : &scratch;
    enum kvg_keys_auth r = set ? kvg_keys_authenticate_memo(set, authorization, n->b, &n->set, &e)
                               : KVG_KEYS_AUTH_UNKNOWN;
    int admin = e && e->admin;
    if (set) kvg_keys_unref(set);
    if (r != KVG_KEYS_AUTH_OK) {
        deny_key(d, r);
        return 1;
    }
    if (a == KVG_GATE_ADMIN && !admin) {
        deny(d, 403, "permission_error", "admin_required",
             "This endpoint needs a key with admin: true.");
        return 1;
    }
    return 0;
}

int kvg_gate_authorize(struct kvg_gate_loop *gl, struct kvg_gate_req *gr,
                       struct kvg_str authorization, struct kvg_http_note *note,
                       struct kvg_str priority, const char *model, size_t model_len,
                       struct kvg_gate_deny *d)
{
    struct kvg_gate *g = gl->g;
    gr->gl = gl;
    gr->model = model;
    gr->model_len = model_len;
    gr->prio = KVG_ADM_STANDARD;
    if (g->auth_on) gr->keys = kvg_keys_acquire(&g->keys);
    if (gr->keys) {
        const struct kvg_keys_entry *e = NULL;
        struct kvg_http_note scratch = {0}, *n = note ? note : &scratch;
        enum kvg_keys_auth a =
            kvg_keys_authenticate_memo(gr->keys, authorization, n->b, &n->set, &e);
        if (a != KVG_KEYS_AUTH_OK) {
            deny_key(d, a);
            return 1;
        }
        if (!kvg_keys_model_allowed(e, model, model_len)) {
            deny(d, 403, "permission_error", "model_not_allowed", "");
            snprintf(d->r.message, sizeof d->r.message,
                     "The key '%s' may not use the model `%.*s`.", e->name, (int)model_len, model);
            return 1;
        }
        gr->key = e;
        gr->prio = e->priority;
    }
    int asked;
    if (priority.p && kvg_adm_priority_parse(priority.p, priority.len, &asked)) {
        deny(d, 400, "invalid_request_error", "invalid_priority",
             "x-kvgate-priority must be critical, standard, sheddable or an integer in "
             "[-1000, 1000]");
        return 1;
    }
    if (priority.p) {
        /* A request may lower its priority, never raise it past its key's. */
        if (gr->key && asked > gr->key->max_priority) {
            deny(d, 403, "permission_error", "priority_not_allowed", "");
            snprintf(d->r.message, sizeof d->r.message,
                     "The key '%s' may not ask for a priority above %d (%s).", gr->key->name,
                     gr->key->max_priority, kvg_adm_class_name(gr->key->max_priority));
            return 1;
        }
        gr->prio = asked;
    }
    return 0;
}

int kvg_gate_classify(struct kvg_gate_req *gr, struct kvg_str cls, struct kvg_str deadline,
                      struct kvg_gate_deny *d)
{
    const struct kvg_gate *g = gr->gl->g;
    const struct kvg_keys_entry *e = gr->key;
    int batch = e ? e->batch : 0;
    if (cls.p) {
        int asked;
        if (kvg_adm_traffic_parse(cls.p, cls.len, &asked)) {
            deny(d, 400, "invalid_request_error", "invalid_class",
                 "x-kvgate-class must be interactive or batch");
            return 1;
        }
        /* Lowering is free; raising a batch key's requests needs max_class. */
        if (e && !asked && e->max_class) {
            deny(d, 403, "permission_error", "class_not_allowed", "");
            snprintf(d->r.message, sizeof d->r.message,
                     "The key '%s' is of the batch class: its requests may not ask to be "
                     "interactive.",
                     e->name);
            return 1;
        }
        batch = asked;
    }
    if (!batch) return 0;
    uint32_t limit = e && e->deadline_ms ? e->deadline_ms : g->o.adm.batch_deadline_ms, ms = limit;
    if (deadline.p) {
        if (kvg_adm_deadline_parse(deadline.p, deadline.len, &ms)) {
            deny(d, 400, "invalid_request_error", "invalid_deadline",
                 "x-kvgate-deadline must be a number of seconds (or with s, m or h) above 0 and "
                 "at most 24h");
            return 1;
        }
        if (ms > limit) {
            deny(d, 403, "permission_error", "deadline_not_allowed", "");
            snprintf(d->r.message, sizeof d->r.message,
                     "x-kvgate-deadline may only shorten this request's deadline of %.0f s.",
                     limit / 1000.0);
            return 1;
        }
    }
    gr->prio = KVG_ADM_BATCH;
    gr->deadline_ms = ms;
    gr->queue_deadline_ms = kvg_now_ms() + ms;
    return 0;
}

/* Rewrites a stream request to ask for usage when the client did not: the
 * quota's reconciliation and the routing mode's prompt-token check need the
 * engine's count. Works on the body already
 * stripped of engine-only members when there is one. */
static void prepare_usage(struct kvg_gate_req *gr, const struct kvg_gate_request *rq)
{
    if (!rq->stream) return;
    if (rq->usage_unasked) { /* read it as it passes */
        kvg_usage_sse_init(&gr->sse_filter, 0, 0);
        gr->sse_filter_on = 1;
        return;
    }
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    int rewrote = gr->fwd_body.len
                      ? kvg_usage_request_rewrite(gr->fwd_body.data, gr->fwd_body.len, NULL, &out)
                      : kvg_usage_request_rewrite(rq->body, rq->body_len, rq->json, &out);
    if (rewrote == 1) {
        kvg_buf_free(&gr->fwd_body);
        gr->fwd_body = out;
    } else {
        kvg_buf_free(&out); /* forward the body as it is */
    }
    kvg_usage_sse_init(&gr->sse_filter, rewrote == 1, 0);
    gr->sse_filter_on = 1;
}

const struct kvg_buf *kvg_gate_forward_body(const struct kvg_gate_req *gr)
{
    return gr->fwd_body.len ? &gr->fwd_body : NULL;
}

int kvg_gate_filters_stream(const struct kvg_gate_req *gr)
{
    return gr->sse_filter_on;
}

int kvg_gate_usage_feed(struct kvg_gate_req *gr, const char *p, size_t n, struct kvg_buf *out)
{
    if (!gr->sse_filter_on) return kvg_buf_append(out, p, n);
    return kvg_usage_sse_feed(&gr->sse_filter, p, n, out);
}

uint64_t kvg_gate_token_events(const struct kvg_gate_req *gr)
{
    return gr->sse_filter_on ? gr->sse_filter.token_events : 0;
}

void kvg_gate_usage_end(struct kvg_gate_req *gr, struct kvg_buf *out)
{
    if (!gr->sse_filter_on) return;
    kvg_usage_sse_end(&gr->sse_filter, out);
    gr->usage = gr->sse_filter.usage;
}

void kvg_gate_usage_json(struct kvg_gate_req *gr, const char *body, size_t len)
{
    /* A targeted scan (only the usage member is parsed), for every
     * answer: quotas, the token metrics and the access log read it. */
    if (gr->no_tokens) return;
    kvg_usage_scan_json(body, len, &gr->usage);
}

const struct kvg_usage *kvg_gate_usage_seen(const struct kvg_gate_req *gr)
{
    if (gr->sse_filter_on && gr->sse_filter.usage.found) return &gr->sse_filter.usage;
    return gr->usage.found ? &gr->usage : NULL;
}

void kvg_gate_upstream_status(struct kvg_gate_req *gr, int status)
{
    gr->up_status = status;
}

/* ---------------------------------------------------------------- admission */

int kvg_gate_worker_filter(void *ud, struct kvg_worker *w)
{
    struct kvg_gate_req *gr = ud;
    uint32_t mine = atomic_load(&w->in_flight);
    /* The candidates' in-flight total as admission saw it a moment ago. */
    uint64_t sum = gr->inflight_sum > mine ? gr->inflight_sum : mine;
    return kvg_adm_worker_ok(&gr->gl->g->o.adm, gr->prio, w, kvg_now_ms(),
                             kvg_adm_others_mean(sum, gr->inflight_n, mine));
}

static void on_grant(void *ud, int status);

/* Past its model's max_inflight or max_queue (gate.h): shed, d filled. */
static void model_deny(struct kvg_gate_req *gr, int queue, struct kvg_gate_deny *d)
{
    const struct kvg_gate_mlimit *l = &gr->ml;
    if (l->c->shed[queue]) kvg_metrics_inc(l->c->shed[queue]);
    if (queue)
        deny(d, 503, "service_unavailable", "queue_full", "");
    else
        deny(d, 429, "rate_limit_exceeded", "model_overloaded", "");
    snprintf(d->r.message, sizeof d->r.message,
             queue ? "Every worker of model %s is saturated and its %u places in the gateway "
                     "queue (max_queue) are taken: retry later."
                   : "Model %s has its max_inflight (%u) requests in flight: retry later.",
             l->model ? l->model : "", queue ? l->max_queue : l->max_inflight);
    d->shed = 1;
    deny_header(d, KVG_STR("retry-after"), KVG_STR("1"));
}

/* Counts the request in its model's in-flight (queue 0) or waiting
 * (queue 1) requests: 0, or 1 when that is past the model's limit (not
 * counted, d filled). */
static int model_take(struct kvg_gate_req *gr, int queue, struct kvg_gate_deny *d)
{
    struct kvg_gate_mcount *c = gr->ml.c;
    int *held = queue ? &gr->ml_queued : &gr->ml_in;
    if (!c || *held) return 0;
    _Atomic int64_t *n = queue ? &c->queued : &c->inflight;
    uint32_t max = queue ? gr->ml.max_queue : gr->ml.max_inflight;
    if (max && atomic_fetch_add(n, 1) >= max) {
        atomic_fetch_sub(n, 1);
        model_deny(gr, queue, d);
        return 1;
    }
    if (!max) atomic_fetch_add(n, 1);
    *held = 1;
    return 0;
}

static void model_give_back(struct kvg_gate_req *gr, int queue)
{
    int *held = queue ? &gr->ml_queued : &gr->ml_in;
    if (!*held) return;
    atomic_fetch_sub(queue ? &gr->ml.c->queued : &gr->ml.c->inflight, 1);
    *held = 0;
}

/* Decides now: admit (route), queue, or reject. */
static void admission(struct kvg_gate_req *gr, int front)
{
    struct kvg_gate *g = gr->gl->g;
    struct kvg_worker *all[KVG_POOL_MAX_WORKERS], *ws[KVG_POOL_MAX_WORKERS];
    size_t na = kvg_pool_snapshot(g->pool, all, KVG_POOL_MAX_WORKERS), n = 0, up = 0;
    unsigned has = 0, ready = 0; /* roles among the model's workers, and ready */
    for (size_t i = 0; i < na; i++) {
        int serves = kvg_worker_serves(all[i], gr->model, gr->model_len),
            r = atomic_load(&all[i]->role);
        unsigned bit = serves && r >= 0 && r < 8 ? 1u << r : 0;
        has |= bit;
        if (!serving(all[i])) continue;
        up++;
        ready |= bit;
        if (serves) ws[n++] = all[i];
    }
    gr->inflight_sum = 0;
    gr->inflight_n = (uint32_t)n;
    for (size_t i = 0; i < n; i++) gr->inflight_sum += atomic_load(&ws[i]->in_flight);
    /* An empty pool is not admission's to judge: the router answers it. A
     * pool without engine metrics is judged by kvgate's own counts, which
     * never hold a request by themselves (admission.h). */
    enum kvg_adm_verdict v = KVG_ADM_ADMIT;
    int grp =
        g->o.model_group ? g->o.model_group(g->o.model_group_ud, gr->model, gr->model_len) : -1;
    /* Scaling from zero waits for the first replica, a PD pool's for one of
     * each role it has (sent on with its prefill alone while the decode
     * replica started, a request was answered 503; autoscale_local.c). */
    int held = g->o.hold_when_empty && (g->o.model_group ? grp >= 0 : !up || ready != has);
    if (n && !(held && ready != has))
        v = kvg_adm_decide_workers(&g->o.adm, gr->prio, ws, n, kvg_now_ms(), NULL);
    else if (held)
        v = KVG_ADM_QUEUE;
    /* A batch newcomer never passes a waiter (every other waiter is of its
     * class or above); a granted one (front) was the queue's next. */
    if (v == KVG_ADM_ADMIT && gr->prio == KVG_ADM_BATCH && !front && kvg_adm_waiting(g->adm))
        v = KVG_ADM_QUEUE;
    for (size_t i = 0; i < na; i++) kvg_worker_unref(all[i]);
    struct kvg_gate_deny d;
    if (v == KVG_ADM_ADMIT) {
        gr->cb(gr->ud, NULL);
    } else if (v == KVG_ADM_REJECT) {
        if (g->shed) kvg_metrics_inc(g->shed);
        deny(&d, 429, "rate_limit_exceeded", "overloaded",
             "The pool is saturated and this request is sheddable: retry later.");
        d.shed = 1;
        gr->cb(gr->ud, &d);
    } else if (model_take(gr, 1, &d)) {
        gr->cb(gr->ud, &d);
    } else {
        if (!gr->queue_deadline_ms)
            gr->queue_deadline_ms = kvg_now_ms() + g->o.adm.queue_timeout_ms;
        const char *tenant = gr->key ? gr->key->tenant : "";
        int rc = kvg_adm_enqueue(gr->gl->a, gr->prio, tenant, grp, gr->queue_deadline_ms, front,
                                 on_grant, gr, &gr->waiter);
        if (rc) {
            gr->waiter = NULL;
            model_give_back(gr, 1);
            deny(&d, 503, "service_unavailable", "queue_full",
                 "Every worker is saturated and the gateway queue is full.");
            d.shed = 1;
            deny_header(&d, KVG_STR("retry-after"), KVG_STR("1"));
            gr->cb(gr->ud, &d);
        }
    }
}

static void on_grant(void *ud, int status)
{
    struct kvg_gate_req *gr = ud;
    gr->waiter = NULL;
    model_give_back(gr, 1);
    if (status && gr->prio == KVG_ADM_BATCH) {
        /* Batch waits through bursts; when it cannot, it says why (429:
         * the client's own class and deadline, not the gateway's failure). */
        struct kvg_gate_deny d;
        if (status == -ENOSPC) {
            deny(&d, 429, "rate_limit_exceeded", "batch_displaced",
                 "The gateway queue is full and this batch request gave its place to an "
                 "interactive one: retry later.");
        } else {
            deny(&d, 429, "rate_limit_exceeded", "batch_deadline_exceeded", "");
            snprintf(d.r.message, sizeof d.r.message,
                     "This batch request waited its whole deadline (%.0f s) in the gateway queue: "
                     "interactive traffic kept every worker busy.",
                     gr->deadline_ms / 1000.0);
        }
        gr->cb(gr->ud, &d);
        return;
    }
    if (status) {
        struct kvg_gate_deny d;
        struct kvg_worker *all[KVG_POOL_MAX_WORKERS];
        size_t na = kvg_pool_snapshot(gr->gl->g->pool, all, KVG_POOL_MAX_WORKERS), up = 0;
        for (size_t i = 0; i < na; i++) {
            up += serving(all[i]);
            kvg_worker_unref(all[i]);
        }
        deny(&d, 503, "service_unavailable", "queue_timeout",
             up ? "Every worker stayed saturated for the whole queue timeout."
                : "No worker became ready within the queue timeout (the pool is scaling up "
                  "from zero): retry later.");
        d.shed = 1;
        snprintf(d.retry_after, sizeof d.retry_after, "%u", gr->gl->g->o.adm.retry_after_s);
        deny_header(&d, KVG_STR("retry-after"),
                    (struct kvg_str){d.retry_after, strlen(d.retry_after)});
        gr->cb(gr->ud, &d);
        return;
    }
    admission(gr, 1); /* capacity freed: decide again, keeping our place */
}

/* ------------------------------------------------------------------- quotas */

static void on_quota(void *ud, const struct kvg_quota_result *res)
{
    struct kvg_gate_req *gr = ud;
    gr->qop = NULL;
    gr->quota_checked = 1;
    gr->quota->res = *res;
    if (!res->admitted) {
        struct kvg_gate_deny d;
        if (res->store_error) {
            deny(&d, 503, "service_unavailable", "quota_store_unavailable",
                 "The quota store cannot be reached.");
        } else {
            deny(&d, 429, "rate_limit_exceeded", "rate_limit_exceeded", "");
            kvg_quota_describe(res, &gr->quota->req, d.r.message, sizeof d.r.message);
        }
        kvg_quota_headers(res, &d.qh);
        for (size_t i = 0; i < d.qh.n; i++) deny_header(&d, d.qh.h[i].name, d.qh.h[i].value);
        gr->cb(gr->ud, &d);
        return;
    }
    admission(gr, 0);
}

/* The output limit cap set in the forwarded body (the client's bytes, or
 * the gate's rewrite of them), as the endpoint's own member: the engine
 * then cannot generate past what the quota reserved. */
static int cap_output(struct kvg_gate_req *gr, const struct kvg_gate_request *rq, uint32_t cap)
{
    char v[16];
    snprintf(v, sizeof v, "%u", cap);
    const struct kvg_json_edit e = KVG_JSON_SET(rq->budget_member, v);
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    int rc = gr->fwd_body.len ? kvg_json_edit(gr->fwd_body.data, gr->fwd_body.len, &e, 1, &out)
                              : kvg_json_edit(rq->body, rq->body_len, &e, 1, &out);
    if (rc < 0) {
        kvg_buf_free(&out);
        return rc;
    }
    kvg_buf_free(&gr->fwd_body);
    gr->fwd_body = out;
    gr->capped = cap;
    return 0;
}

uint32_t kvg_gate_output_cap(const struct kvg_gate_req *gr)
{
    return gr->capped;
}

static int token_limited(const struct kvg_quota_req *r)
{
    for (size_t s = 0; s < r->nscopes; s++)
        for (int w = 0; w < KVG_QW_N; w++)
            if (r->scope[s].lim.tokens[w] >= 0) return 1;
    return 0;
}

void kvg_gate_admit(struct kvg_gate_req *gr, const struct kvg_gate_request *rq,
                    kvg_gate_admit_cb cb, void *ud)
{
    struct kvg_gate *g = gr->gl->g;
    gr->cb = cb;
    gr->ud = ud;
    gr->no_tokens = rq->no_tokens;
    int st = kvg__gate_strip_engine_only(gr, rq);
    if (st < 0) {
        struct kvg_gate_deny d;
        if (st == KVG_EPARSE)
            deny(&d, 400, "invalid_request_error", "invalid_request",
                 "kv_transfer_params, ec_transfer_params, bootstrap_*, data_parallel_rank and "
                 "priority are set by kvgate, not by clients; in a body that is not strict JSON "
                 "or has escaped keys they cannot be removed exactly.");
        else
            deny(&d, 500, "server_error", "out_of_memory", "out of memory");
        cb(ud, &d);
        return;
    }
    gr->ml = rq->limit;
    struct kvg_gate_deny md;
    if (model_take(gr, 0, &md)) { /* before any quota is reserved */
        cb(ud, &md);
        return;
    }
    /* Every stream asks for usage, quota or not: the routing mode's check of
     * kvgate's token count (router/mode.h) reads it too. */
    prepare_usage(gr, rq);
    struct kvg_quota_req qr = {0}; /* now_ms 0: the store reads the clock */
    if (gr->keys && gr->key &&
        kvg_keys_scopes(gr->keys, gr->key, gr->model, gr->model_len, &qr) > 0) {
        struct kvg_gate_deny d;
        if (!rq->max_tokens && g->o.require_max_tokens && token_limited(&qr)) {
            deny(&d, 400, "invalid_request_error", "missing_required_parameter",
                 "A token quota applies to this key: the request must set max_tokens (or "
                 "max_completion_tokens).");
            d.r.param = "max_tokens";
            cb(ud, &d);
            return;
        }
        if (!(gr->quota = calloc(1, sizeof *gr->quota))) {
            deny(&d, 500, "server_error", "out_of_memory", "out of memory");
            cb(ud, &d);
            return;
        }
        gr->quota->req = qr;
        int64_t prompt = rq->no_tokens            ? 0
                         : rq->prompt_tokens >= 0 ? rq->prompt_tokens
                                                  : (int64_t)(rq->body_len / 4);
        gr->quota->prompt = prompt;
        int64_t out = rq->max_tokens;
        if (rq->no_output || rq->no_tokens) {
            out = 0;
        } else if (!out) {
            /* The engine may generate to the end of its context. */
            uint32_t ctx = g->pool ? kvg_pool_max_model_len(g->pool, gr->model, gr->model_len) : 0;
            out = ctx ? KVG_MAX((int64_t)ctx - prompt, 0) : g->o.default_max_tokens;
            if (g->o.output_cap && rq->budget_member && out > g->o.output_cap) {
                int rc = cap_output(gr, rq, g->o.output_cap);
                if (rc) {
                    deny(&d, 500, "server_error", "out_of_memory", kvg_strerror(rc));
                    cb(ud, &d);
                    return;
                }
                out = g->o.output_cap;
            }
        }
        gr->quota->req.est_cost = kvg_quota_cost_estimate(&gr->keys->counting, prompt, out);
        struct kvg_quota_op *op = NULL;
        int rc =
            kvg_quota_reserve(gr->gl->q, &gr->quota->req, &gr->quota->lease, on_quota, gr, &op);
        if (rc) {
            deny(&d, 500, "server_error", "quota_error", kvg_strerror(rc));
            cb(ud, &d);
            return;
        }
        if (!gr->quota_checked) gr->qop = op; /* the answer comes later */
        return;
    }
    admission(gr, 0);
}

size_t kvg_gate_quota_headers(struct kvg_gate_req *gr, struct kvg_http_header *out, size_t max,
                              struct kvg_quota_headers *store)
{
    if (!gr->quota_checked || !gr->quota->res.admitted) return 0;
    kvg_quota_headers(&gr->quota->res, store);
    size_t n = 0;
    for (size_t i = 0; i < store->n && n < max; i++)
        if (!kvg_str_eq_nocase(store->h[i].name, "retry-after")) out[n++] = store->h[i];
    return n;
}

/* What the request cost (gate.h says why each case costs what it does). */
void kvg_gate_usage_prefill(struct kvg_gate_req *gr, int64_t prompt_tokens, int64_t cached_tokens)
{
    if (prompt_tokens < 0) return;
    gr->pd_set = 1;
    gr->pd_prompt = prompt_tokens;
    gr->pd_cached = cached_tokens > 0 ? cached_tokens : 0;
}

uint64_t kvg_gate_usage_final(const struct kvg_gate_req *gr, struct kvg_usage *u)
{
    *u = gr->usage;
    uint64_t relayed = 0;
    if (gr->sse_filter_on) {
        relayed = gr->sse_filter.tokens;
        if (!u->found) *u = gr->sse_filter.usage; /* the stream ended early, after its usage */
    }
    if (u->found && gr->pd_set) {
        u->prompt_tokens = gr->pd_prompt;
        u->cached_tokens = gr->pd_cached;
        u->cached_found = 1;
    }
    return relayed;
}

static int64_t final_cost(struct kvg_gate_req *gr, int answered)
{
    if (gr->no_tokens) return 0;
    const struct kvg_quota_counting *c = &gr->keys->counting;
    struct kvg_usage u;
    uint64_t relayed = kvg_gate_usage_final(gr, &u);
    int ok = gr->up_status >= 200 && gr->up_status < 300;
    if (u.found)
        return kvg_quota_cost_actual(c, u.prompt_tokens, u.cached_tokens,
                                     KVG_MAX(u.completion_tokens, (int64_t)relayed));
    if (!answered || (gr->up_status && !ok)) return 0; /* nothing computed that the engine says */
    if (gr->sse_filter_on) return kvg_quota_cost_actual(c, gr->quota->prompt, 0, (int64_t)relayed);
    return gr->quota->req.est_cost; /* a whole answer without usage: the estimate stands */
}

void kvg_gate_account(struct kvg_gate_req *gr, int answered, int routed)
{
    if (!gr->gl) return; /* never authorized: nothing taken */
    struct kvg_gate *g = gr->gl->g;
    if (gr->qop) {
        kvg_quota_cancel(gr->qop);
        gr->qop = NULL;
    }
    if (gr->waiter) {
        kvg_adm_cancel(gr->waiter);
        gr->waiter = NULL;
    }
    model_give_back(gr, 1);
    model_give_back(gr, 0);
    if (gr->quota && gr->quota->lease.active && gr->keys)
        kvg_quota_reconcile(gr->gl->q, &gr->quota->lease, final_cost(gr, answered));
    free(gr->quota);
    gr->quota = NULL;
    if (routed) kvg_adm_capacity_available(g->adm, 1);
    if (gr->keys) {
        kvg_keys_unref(gr->keys);
        gr->keys = NULL;
    }
    if (gr->sse_filter_on) {
        kvg_usage_sse_free(&gr->sse_filter);
        gr->sse_filter_on = 0;
    }
    kvg_buf_free(&gr->fwd_body);
}
