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
 * chunk from a client that did not ask), and a queue slot is released. A
 * request no quota counts skips the usage work: its body and stream are
 * relayed untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "proxy/proxy_int.h"

int kvg_proxy_authorize(struct proxy_req *pr)
{
    struct kvg_gateway *gw = pr->lc->gw;
    struct kvg_http_req *req = pr->req;
    pr->prio = KVG_ADM_STANDARD;
    if (gw->auth_on) pr->keys = kvg_keys_acquire(&gw->keys);
    if (pr->keys) {
        const struct kvg_keys_entry *e = NULL;
        enum kvg_keys_auth a =
            kvg_keys_authenticate(pr->keys, kvg_http_req_header(req, "authorization"), &e);
        if (a != KVG_KEYS_AUTH_OK) {
            static const struct kvg_http_header h = {KVG_STR("www-authenticate"),
                                                     KVG_STR("Bearer")};
            kvg_proxy_error(pr, 401, "authentication_error", "invalid_api_key",
                            a == KVG_KEYS_AUTH_MISSING
                                ? "Missing API key: send Authorization: Bearer <key>."
                                : "Incorrect API key provided.",
                            &h, 1);
            return 1;
        }
        if (!kvg_keys_model_allowed(e, pr->ri.model, pr->ri.model_len)) {
            char msg[400];
            snprintf(msg, sizeof msg, "The key '%s' may not use the model `%.*s`.", e->name,
                     (int)pr->ri.model_len, pr->ri.model);
            kvg_proxy_error(pr, 403, "permission_error", "model_not_allowed", msg, NULL, 0);
            return 1;
        }
        pr->key = e;
        pr->prio = e->priority;
    }
    struct kvg_str ph = kvg_http_req_header(req, "x-kvgate-priority");
    if (ph.p && kvg_adm_priority_parse(ph.p, ph.len, &pr->prio)) {
        kvg_proxy_error(pr, 400, "invalid_request_error", "invalid_priority",
                        "x-kvgate-priority must be critical, standard, sheddable or an integer",
                        NULL, 0);
        return 1;
    }
    return 0;
}

void kvg_proxy_prepare_usage(struct proxy_req *pr)
{
    if (!pr->ri.stream) return;
    struct kvg_http_req *req = pr->req;
    kvg_buf_init(&pr->fwd_body, 0);
    int rewrote =
        kvg_usage_request_rewrite(req->body.data, req->body.len, pr->ri.json, &pr->fwd_body);
    if (rewrote != 1) kvg_buf_free(&pr->fwd_body); /* forward the client's bytes as they are */
    kvg_usage_sse_init(&pr->sse_filter, rewrote == 1, 0);
    pr->sse_filter_on = 1;
}

int kvg_proxy_usage_feed(struct proxy_req *pr, const char *p, size_t n, struct kvg_buf *out)
{
    if (!pr->sse_filter_on) return kvg_buf_append(out, p, n);
    return kvg_usage_sse_feed(&pr->sse_filter, p, n, out);
}

/* ---------------------------------------------------------------- admission */

static int ever_reported(struct kvg_worker *const *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&ws[i]->mu);
        uint64_t at = ws[i]->load.at_ms;
        pthread_mutex_unlock(&ws[i]->mu);
        if (at) return 1;
    }
    return 0;
}

int kvg_proxy_worker_filter(void *ud, struct kvg_worker *w)
{
    struct proxy_req *pr = ud;
    pthread_mutex_lock(&w->mu);
    uint64_t at = w->load.at_ms;
    pthread_mutex_unlock(&w->mu);
    if (!at) return 1; /* an engine without metrics: nothing to judge it by */
    return kvg_adm_worker_ok(&pr->lc->gw->adm_cfg, pr->prio, w, kvg_now_ms());
}

static void on_grant(void *ud, int status);

/* Decides now: admit (route), queue, or reject. */
static void admission(struct proxy_req *pr, int front)
{
    struct kvg_gateway *gw = pr->lc->gw;
    struct kvg_worker *all[KVG_POOL_MAX_WORKERS], *ws[KVG_POOL_MAX_WORKERS];
    size_t na = kvg_pool_snapshot(&gw->pool, all, KVG_POOL_MAX_WORKERS), n = 0;
    for (size_t i = 0; i < na; i++)
        if (atomic_load(&all[i]->healthy) &&
            kvg_worker_serves(all[i], pr->ri.model, pr->ri.model_len))
            ws[n++] = all[i];
    enum kvg_adm_verdict v = KVG_ADM_ADMIT;
    /* No engine reports load (metrics off, or engines without /metrics):
     * there is nothing to admit against, so admission steps aside. */
    if (n && ever_reported(ws, n))
        v = kvg_adm_decide_workers(&gw->adm_cfg, pr->prio, ws, n, kvg_now_ms(), NULL);
    for (size_t i = 0; i < na; i++) kvg_worker_unref(all[i]);
    if (v == KVG_ADM_ADMIT) {
        kvg_proxy_attempt(pr);
    } else if (v == KVG_ADM_REJECT) {
        kvg_metrics_inc(gw->metrics.shed);
        kvg_proxy_error(pr, 429, "rate_limit_exceeded", "overloaded",
                        "The pool is saturated and this request is sheddable: retry later.", NULL,
                        0);
    } else {
        if (!pr->queue_deadline_ms)
            pr->queue_deadline_ms = kvg_now_ms() + gw->adm_cfg.queue_timeout_ms;
        const char *tenant = pr->key ? pr->key->tenant : "";
        int rc = kvg_adm_enqueue(pr->lc->aloop, pr->prio, tenant, pr->queue_deadline_ms, front,
                                 on_grant, pr, &pr->waiter);
        if (rc) {
            pr->waiter = NULL;
            static const struct kvg_http_header h = {KVG_STR("retry-after"), KVG_STR("1")};
            kvg_proxy_error(pr, 503, "service_unavailable", "queue_full",
                            "Every worker is saturated and the gateway queue is full.", &h, 1);
        }
    }
}

static void on_grant(void *ud, int status)
{
    struct proxy_req *pr = ud;
    pr->waiter = NULL;
    if (!pr->req) return; /* cannot happen: an abort cancels the waiter */
    if (status) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", pr->lc->gw->adm_cfg.retry_after_s);
        struct kvg_http_header h = {KVG_STR("retry-after"), {ra, strlen(ra)}};
        kvg_proxy_error(pr, 503, "service_unavailable", "queue_timeout",
                        "Every worker stayed saturated for the whole queue timeout.", &h, 1);
        return;
    }
    admission(pr, 1); /* capacity freed: decide again, keeping our place */
}

/* ------------------------------------------------------------------- quotas */

static void on_quota(void *ud, const struct kvg_quota_result *res)
{
    struct proxy_req *pr = ud;
    pr->qop = NULL;
    pr->quota_checked = 1;
    pr->quota->res = *res;
    if (!pr->req) return;
    if (!res->admitted) {
        struct kvg_quota_headers qh;
        kvg_quota_headers(res, &qh);
        if (res->store_error) {
            kvg_proxy_error(pr, 503, "service_unavailable", "quota_store_unavailable",
                            "The quota store cannot be reached.", qh.h, qh.n);
            return;
        }
        char msg[512];
        kvg_quota_describe(res, &pr->quota->req, msg, sizeof msg);
        kvg_proxy_error(pr, 429, "rate_limit_exceeded", "rate_limit_exceeded", msg, qh.h, qh.n);
        return;
    }
    admission(pr, 0);
}

void kvg_proxy_admit(struct proxy_req *pr)
{
    struct kvg_gateway *gw = pr->lc->gw;
    struct kvg_quota_req qr = {0}; /* now_ms 0: the store reads the clock */
    if (pr->keys && pr->key &&
        kvg_keys_scopes(pr->keys, pr->key, pr->ri.model, pr->ri.model_len, &qr) > 0) {
        if (!(pr->quota = calloc(1, sizeof *pr->quota))) {
            kvg_proxy_error(pr, 500, "server_error", "out_of_memory", "out of memory", NULL, 0);
            return;
        }
        pr->quota->req = qr;
        kvg_proxy_prepare_usage(pr); /* the reconciliation needs the engine's usage */
        int64_t prompt = pr->ri.ids ? (int64_t)pr->ri.nids : (int64_t)(pr->req->body.len / 4);
        int64_t out = pr->ri.max_tokens ? pr->ri.max_tokens : gw->cfg.quota_default_max_tokens;
        pr->quota->req.est_cost = kvg_quota_cost_estimate(&pr->keys->counting, prompt, out);
        struct kvg_quota_op *op = NULL;
        int rc =
            kvg_quota_reserve(pr->lc->qloop, &pr->quota->req, &pr->quota->lease, on_quota, pr, &op);
        if (rc) {
            kvg_proxy_error(pr, 500, "server_error", "quota_error", kvg_strerror(rc), NULL, 0);
            return;
        }
        if (!pr->quota_checked) pr->qop = op; /* the answer comes later */
        return;
    }
    admission(pr, 0);
}

size_t kvg_proxy_quota_headers(struct proxy_req *pr, struct kvg_http_header *out, size_t max,
                               struct kvg_quota_headers *store)
{
    if (!pr->quota_checked || !pr->quota->res.admitted) return 0;
    kvg_quota_headers(&pr->quota->res, store);
    size_t n = 0;
    for (size_t i = 0; i < store->n && n < max; i++)
        if (!kvg_str_eq_nocase(store->h[i].name, "retry-after")) out[n++] = store->h[i];
    return n;
}

void kvg_proxy_account(struct proxy_req *pr)
{
    struct kvg_gateway *gw = pr->lc->gw;
    if (pr->qop) {
        kvg_quota_cancel(pr->qop);
        pr->qop = NULL;
    }
    if (pr->waiter) {
        kvg_adm_cancel(pr->waiter);
        pr->waiter = NULL;
    }
    if (pr->quota && pr->quota->lease.active && pr->keys) {
        int64_t cost;
        if (pr->usage.found)
            cost = kvg_quota_cost_actual(&pr->keys->counting, pr->usage.prompt_tokens,
                                         pr->usage.cached_tokens, pr->usage.completion_tokens);
        else if (!pr->bytes_up)
            cost = 0; /* no engine answered: nothing was spent */
        else
            cost = pr->quota->req.est_cost; /* an answer without usage: the estimate stands */
        kvg_quota_reconcile(pr->lc->qloop, &pr->quota->lease, cost);
    }
    free(pr->quota);
    pr->quota = NULL;
    if (pr->attempts) kvg_adm_capacity_available(gw->adm, 1);
    if (pr->keys) {
        kvg_keys_unref(pr->keys);
        pr->keys = NULL;
    }
    if (pr->sse_filter_on) {
        kvg_usage_sse_free(&pr->sse_filter);
        pr->sse_filter_on = 0;
    }
    kvg_buf_free(&pr->fwd_body);
}
