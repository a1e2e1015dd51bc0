/* A request to an engine endpoint, from its arrival to its dispatch: its
 * body parsed (off the loop when big), the gateway's authorization and
 * admission, the pick (or the PD legs), and the call to the worker; the
 * answer is relay.c's.
 *
 * Streams (stream: true) are relayed chunk by chunk the moment they arrive,
 * with back-pressure from the client's socket to the engine's. Non-stream
 * answers are small JSON documents: they are collected and sent whole, so an
 * engine dying half-way still yields a clean 502 rather than a cut body.
 *
 * A request that failed before any byte reached the client (connect error,
 * reset, 429/502/503/504 from the engine) is retried on another worker with
 * exponential backoff and jitter, bounded. After the first byte, never: a
 * stream that breaks ends with an SSE error event.
 *
 * Every pick is released exactly once (kvg_pool_release) whichever way the
 * request ends: done, client gone, upstream error, timeout. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "gateway/keys.h"
#include "proxy/proxy_int.h"
#include "router/mode.h"

static struct kvg_str header_of(const void *hctx, const char *name)
{
    return kvg_http_req_header(hctx, name);
}

/* The request body: taken into pr when its work goes off the loop. */
const struct kvg_buf *kvg__proxy_req_body(const struct proxy_req *pr)
{
    if (pr->model_body.len) return &pr->model_body; /* asked by another name (models.c) */
    return pr->offloop ? &pr->rbody : &pr->req->body;
}

/* Finished requests go back to a small per-loop free list: a busy gateway
 * then allocates no proxy state per request. */
#define PR_FREE_MAX 256

static void pr_recycle(struct proxy_req *pr)
{
    struct kvg_proxy_loop *pl = pr->pl;
    if (pl->nfree < PR_FREE_MAX) {
        pr->next_free = pl->free_list;
        pl->free_list = pr;
        pl->nfree++;
        return;
    }
    free(pr);
}

/* Whether pr's CPU work (parse and tokenizing, the pick) runs on the work
 * threads: a big body, and a pool of them. */
static int on_workers(const struct proxy_req *pr)
{
    return pr->offloop && pr->pl->wq;
}

static void release_work(struct kvg_proxy_wq_item *w)
{
    struct proxy_req *pr = w->data;
    kvg_rinput_free(&pr->ri);
}

static void release_done(struct kvg_proxy_wq_item *w)
{
    pr_recycle(w->data);
}

/* The route input of a request parsed and tokenized on a work thread (its
 * text, ids and hashes: that thread's malloc arena) is freed on a work
 * thread too. A free from the loop takes the arena's lock, and a work
 * thread at a lower priority preempted while holding it held the loop for
 * milliseconds (sched trace of the head-of-line bench: 13 such waits in 5 s,
 * in kvg_rinput_free). What the loop allocated it frees itself. */
static void pr_closed(uv_handle_t *h)
{
    struct proxy_req *pr = h->data;
    kvg_buf_free(&pr->body);
    kvg_buf_free(&pr->rbody);
    kvg_buf_free(&pr->hdrs);
    kvg_buf_free(&pr->xout);
    kvg_buf_free(&pr->model_body);
    kvg_catalog_unref(pr->cat); /* the last request on a reloaded catalog frees it */
    pr->cat = NULL;
    kvg__proxy_xlate_free(pr);
    kvg_pd_req_free(&pr->pdr);
    if (on_workers(pr) && !kvg_proxy_wq_home_closing(pr->pl->wq)) {
        pr->work =
            (struct kvg_proxy_wq_item){.data = pr, .work = release_work, .done = release_done};
        kvg_proxy_wq_submit(pr->pl->wq, &pr->work);
        return;
    }
    kvg_rinput_free(&pr->ri);
    pr_recycle(pr);
}

static struct proxy_req *pr_alloc(struct kvg_proxy_loop *pl)
{
    struct proxy_req *pr = pl->free_list;
    if (!pr) return calloc(1, sizeof *pr);
    pl->free_list = pr->next_free;
    pl->nfree--;
    memset(pr, 0, sizeof *pr);
    return pr;
}

void kvg_proxy_loop_free(struct kvg_proxy_loop *pl)
{
    while (pl->free_list) {
        struct proxy_req *pr = pl->free_list;
        pl->free_list = pr->next_free;
        free(pr);
    }
    pl->nfree = 0;
    kvg__proxy_mcache_free(pl);
}

/* Ends the proxy request's life: the retry timer closes, then pr is freed. */
void kvg__proxy_finish(struct proxy_req *pr, int status)
{
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    if (pd) kvg_pd_cancel(pd, &pr->pdr); /* an SGLang prefill still on */
    kvg__proxy_observe_end(pr, status);
    kvg__proxy_obs_answered(pr, status);
    kvg__proxy_trace_end(pr, status);
    kvg__proxy_stored_end(pr, status);
    kvg__proxy_access_log(pr, status); /* the key and the usage are still held */
    kvg_gate_account(&pr->gate, pr->bytes_up != 0, pr->attempts != pr->attempts0);
    uint64_t now = kvg_now_ns();
    const char *code = !pr->error_code[0] ? NULL : pr->engine_error ? "engine" : pr->error_code;
    kvg__proxy_metrics_request(pr->pl->px->m, pr->route, status, code,
                               (double)(now - pr->t0_ns) / 1e9,
                               pr->ttfb_ns ? (double)(pr->ttfb_ns - pr->t0_ns) / 1e9 : -1);
    uv_close((uv_handle_t *)&pr->retry_timer, pr_closed);
}

struct kvg_pd *kvg__proxy_pd(const struct proxy_req *pr)
{
    return pr->pm ? pr->pm->pd : pr->pl->px->pd;
}

/* The policy that picks for pr (NULL: the pool's): its model's own, or
 * least load where there is no KV to chase. */
static struct kvg_policy *policy_of(const struct proxy_req *pr)
{
    const struct kvg_proxy *px = pr->pl->px;
    if (pr->ep && pr->ep->routing != KVG_API_ROUTE_PROMPT && px->load_policy)
        return px->load_policy;
    return pr->pm ? pr->pm->policy : NULL;
}

void kvg__proxy_release_worker(struct proxy_req *pr, enum kvg_outcome out)
{
    if (!pr->pick.w) return;
    /* told to the policy that picked it */
    struct kvg_route_ctx ctx = {.model = {pr->ri.model, pr->ri.model_len}, .policy = policy_of(pr)};
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    if (pd) kvg_pd_decode_ctx(pd, &pr->pdr, &ctx); /* its policy's pick */
    kvg_pool_release(pr->pl->px->pool, &pr->pick, out, &ctx);
}

/* Bodies below this many bytes are parsed, tokenized and routed on the
 * loop: that is tens of microseconds, less than a thread hop. Bigger ones do
 * each of those steps on the work threads (workq.h), so that no request's size
 * shows in another's latency (a 50 MB prompt held its loop for seconds:
 * parse, hashing, the approximate index's record of 3 M blocks). */
#define INLINE_BYTES (16 * 1024)

/* Runs work off the loop, then done on it; pr outlives both. */
static void offload(struct proxy_req *pr, void (*work)(struct kvg_proxy_wq_item *),
                    void (*done)(struct kvg_proxy_wq_item *))
{
    pr->work = (struct kvg_proxy_wq_item){.data = pr, .work = work, .done = done};
    pr->working = 1;
    kvg_proxy_wq_submit(pr->pl->wq, &pr->work);
}

/* A work item is back on the loop: pr, or NULL when its client left
 * meanwhile (then the request is finished here). */
static struct proxy_req *work_back(struct kvg_proxy_wq_item *w)
{
    struct proxy_req *pr = w->data;
    pr->working = 0;
    if (pr->req) return pr;
    kvg__proxy_finish(pr, 499);
    return NULL;
}

static void on_client_abort(struct kvg_http_req *req, void *ud)
{
    struct proxy_req *pr = ud;
    pr->req = NULL;
    if (pr->call) {
        kvg_http_call_cancel(pr->call);
        pr->call = NULL;
    }
    uv_timer_stop(&pr->retry_timer);
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    if (pd) kvg_pd_cancel(pd, &pr->pdr); /* a prefill in flight */
    kvg__proxy_stored_cancel(pr);        /* a stored response's lookup in flight */
    kvg_metrics_inc(pr->pl->px->m->client_gone);
    if (pr->working) return; /* the work's done callback finishes it */
    kvg__proxy_release_worker(pr, KVG_OUT_CLIENT_GONE);
    kvg__proxy_finish(pr, 499);
}

/* The body the engine gets: the gateway's rewrite (usage asked for) or the
 * client's own. */
const struct kvg_buf *kvg__proxy_forward_body(struct proxy_req *pr)
{
    const struct kvg_buf *body = kvg_gate_forward_body(&pr->gate);
    return body ? body : kvg__proxy_req_body(pr);
}

/* A candidate for pr: the worker its stored object lives on, when it
 * names one, and one its priority may use now. */
static int worker_filter(void *ud, struct kvg_worker *w)
{
    struct proxy_req *pr = ud;
    if (pr->stored_worker && w->url_hash != pr->stored_worker) return 0;
    if (!kvg__proxy_catalog_has(pr, w)) return 0;
    return kvg_gate_worker_filter(&pr->gate, w);
}

int kvg__proxy_catalog_has(const struct proxy_req *pr, const struct kvg_worker *w)
{
    /* A worker serves the model whose entry lists it, or that its pod's
     * label names (read under the pool's lock, which the pick holds); the
     * pick itself leaves out one whose /v1/models lists other models. */
    const struct kvg_catalog *cat = pr->cat;
    return !(cat && cat->any < 0 && pr->cmodel >= 0 &&
             kvg_catalog_worker_model(cat, w->url, w->model_label) != pr->cmodel);
}

/* The routing context of the request (thread-safe: on the loop, or on the
 * thread pool for a big body, where it reads the header snapshot and pr's
 * own generator). */
static void route_ctx(struct proxy_req *pr, struct kvg_route_ctx *ctx)
{
    struct kvg_proxy *px = pr->pl->px;
    const struct kvg_buf *body = kvg__proxy_req_body(pr);
    if (!pr->ri.json) pr->ri.json = kvg_json_parse_in(&pr->ri.json_mem, body->data, body->len);
    *ctx = (struct kvg_route_ctx){.body = {body->data, body->len},
                                  .load_max_age_ms = px->cfg->metrics_staleness_ms,
                                  .header = pr->offloop ? kvg__proxy_snap_header : header_of,
                                  .hctx = pr->offloop ? (const void *)&pr->hdrs : pr->req,
                                  .rng = pr->offloop ? &pr->rng : pr->pl->rng,
                                  .now_ms = kvg_now_ms(),
                                  .nowait = !pr->working}; /* working: on a work thread */
    kvg_rinput_ctx(&pr->ri, ctx);
    if (pr->gate.key) { /* the key's user: its tenant, else its name */
        const char *u = pr->gate.key->tenant[0] ? pr->gate.key->tenant : pr->gate.key->name;
        ctx->user = (struct kvg_str){u, strlen(u)};
    }
    ctx->filter = worker_filter; /* the request's priority may exclude busy workers */
    ctx->filter_ud = pr;
    ctx->policy = policy_of(pr);
}

/* The pool's pick for ctx (thread-safe, as route_ctx). */
static void route_pick(struct proxy_req *pr, struct kvg_route_ctx *ctx)
{
    struct kvg_proxy *px = pr->pl->px;
    int known = 0;
    int rc = kvg_pool_pick(px->pool, ctx, pr->tried, pr->ntried, &pr->pick, &known, NULL);
    if (rc == KVG_ENOWORKER && pr->ntried && !kvg__proxy_model_can_fall(pr)) {
        /* every candidate was tried: allow them again (with a fallback
         * left, the model's turn is over instead: picked) */
        pr->ntried = 0;
        rc = kvg_pool_pick(px->pool, ctx, NULL, 0, &pr->pick, &known, NULL);
    }
    pr->pick_rc = rc;
    pr->pick_known = known;
}

/* The pick (thread-safe: on the loop, or on the thread pool for a big
 * body). Not under PD: its decision and legs run on the loop. */
static void route(struct proxy_req *pr)
{
    struct kvg_route_ctx ctx;
    route_ctx(pr, &ctx);
    route_pick(pr, &ctx);
}

static void picked(struct proxy_req *pr);

static void route_work(struct kvg_proxy_wq_item *w)
{
    struct proxy_req *pr = w->data;
    route(pr);
    /* The tree was built here, so it is freed here: on the loop, its chunks
     * would take the allocator arena of a work thread that may hold it,
     * preempted. The hook reads it on the loop (picked). */
    if (!pr->pl->px->on_routed) kvg_rinput_drop_json(&pr->ri);
}

static void route_done(struct kvg_proxy_wq_item *w)
{
    struct proxy_req *pr = w->data;
    pr->working = 0;
    if (!pr->req) { /* the client left meanwhile */
        if (!pr->pick_rc) kvg__proxy_release_worker(pr, KVG_OUT_CLIENT_GONE);
        kvg__proxy_finish(pr, 499);
        return;
    }
    picked(pr);
}

void kvg__proxy_attempt(struct proxy_req *pr)
{
    kvg__proxy_trace_attempt(pr); /* before up_status goes: the last leg's span ends */
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    pr->up_status = 0;
    pr->relayed = 0;
    kvg_buf_reset(&pr->body);
    if (pd && !kvg__proxy_pd_splits(pr)) {
        /* An endpoint the mode cannot split: served whole by a decode
         * worker (vLLM's decode instances prefill what they are sent);
         * LOAD and STORED ones by any worker that generates. */
        struct kvg_route_ctx ctx;
        route_ctx(pr, &ctx);
        pr->pdr.decision = KVG_PD_DECODE_ONLY; /* an ordinary request: retried as one */
        if (pr->ep->routing == KVG_API_ROUTE_PROMPT) {
            kvg_pd_decode_ctx(pd, &pr->pdr, &ctx);
            ctx.policy = NULL; /* the pool's KV-aware policy over the decode workers */
            if (!pr->attempts) {
                snprintf(pr->served_as, sizeof pr->served_as, "aggregated_on_decode");
                char label[KVG_CATALOG_NAME_MAX];
                pr->pdr.ms = kvg_pd_series_for(pd, kvg__proxy_model_label(pr, label, sizeof label));
                kvg_pd_series_inc(pr->pdr.ms, KVG_PD_S_AGGREGATED);
            }
        }
        pr->attempts++;
        route_pick(pr, &ctx);
        picked(pr);
        return;
    }
    if (pd) {
        /* The PD decision, the prefill leg and the decode pick stay on the
         * loop whatever the body's size: they pick from the pool and start
         * HTTP calls. */
        struct kvg_route_ctx ctx;
        route_ctx(pr, &ctx);
        if (pr->attempts) kvg_pd_decode_recheck(pd, &pr->pdr); /* prefill restarted? */
        if (pr->pdr.state == KVG_PD_DECIDE && kvg__proxy_pd_start(pr, &ctx)) return;
        kvg_pd_decode_ctx(pd, &pr->pdr, &ctx); /* decode workers, kvgate's decode pick */
        pr->attempts++;
        route_pick(pr, &ctx);
        picked(pr);
        return;
    }
    pr->attempts++;
    if (on_workers(pr)) {
        offload(pr, route_work, route_done);
        return;
    }
    route(pr);
    picked(pr);
}

/* After the pick: forwards to the worker, or answers why there is none. */
static void picked(struct proxy_req *pr)
{
    struct kvg_proxy *px = pr->pl->px;
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    struct kvg_http_req *req = pr->req;
    int rc = pr->pick_rc, known = pr->pick_known;
    if (rc && kvg_pool_size(px->pool) &&
        kvg__proxy_fall_back(pr, pr->shed_seen ? "engine_shed" : "no_healthy_worker"))
        return;
    if (rc) {
        if (kvg_pool_size(px->pool) == 0) {
            kvg_metrics_inc(px->m->no_worker);
            kvg__proxy_client_error(pr, 503, "no_workers", "the pool has no workers");
        } else if (!known && pr->ri.model_len) {
            char msg[400];
            snprintf(msg, sizeof msg, "The model `%.*s` does not exist.", (int)pr->ri.model_len,
                     pr->ri.model);
            kvg__proxy_client_error(pr, 404, "model_not_found", msg);
        } else {
            kvg_metrics_inc(px->m->no_worker);
            kvg__proxy_client_error(pr, 503, "no_healthy_worker", "no healthy worker is available");
        }
        return;
    }
    if (px->on_routed && pr->attempts == 1 && pr->ri.json)
        px->on_routed(px->on_routed_ud, &pr->ri, pr->pick.w);
    kvg_rinput_drop_json(&pr->ri); /* routing is done: no tree held during the answer */
    if (pr->attempts == 1 && pr->ri.nhashes)
        kvg_metrics_observe(px->m->match_ratio,
                            (double)pr->pick.matched_blocks / (double)pr->ri.nhashes);
    struct kvg_worker *w = pr->pick.w;
    snprintf(pr->worker_url, sizeof pr->worker_url, "%s", w->url);
    /* The cache view this decision used (the worker's mode lock: only
     * when the access log shows it). */
    if (px->cfg->access_log) pr->routing_mode = kvg_route_mode_name(kvg_route_mode_get(w, NULL, 0));
    if (pr->ntried < MAX_TRIED) pr->tried[pr->ntried++] = w;
    kvg__proxy_trace_leg(pr); /* the route span; this leg's traceparent */

    struct kvg_http_header fwd[MAX_FWD_HEADERS + 3];
    size_t k = kvg__proxy_forward_headers(pr, fwd, MAX_FWD_HEADERS + 1);
    if (pd && (rc = kvg_pd_decode_sent(pd, &pr->pdr, w))) {
        kvg__proxy_local_failure(pr, rc);
        return;
    }
    /* A URL@rank worker: vLLM's API server sends the request to that
     * data-parallel rank's engine (the header sglang's router also sends);
     * SGLang's PD legs carry it in the body instead (pd/pd.c). */
    char rank[16];
    if (w->dp_rank >= 0 && !(pd && kvg_pd_rank_in_body(pd))) {
        int rl = snprintf(rank, sizeof rank, "%d", w->dp_rank);
        fwd[k++] = (struct kvg_http_header){KVG_STR("x-data-parallel-rank"), {rank, (size_t)rl}};
    }
    const struct kvg_proxy_config *c = px->cfg;
    char bearer[300];
    k += (size_t)kvg_worker_auth_header(w, bearer, sizeof bearer, &fwd[k]);
    struct kvg_http_call_opts o = {
        .connect_timeout_ms = c->connect_timeout_ms,
        .first_byte_timeout_ms = pr->ri.stream ? c->stream_idle_timeout_ms : c->request_timeout_ms,
        .idle_timeout_ms = c->stream_idle_timeout_ms,
        .borrow_body = 1, /* pr holds it past the call (a client's abort cancels the call first) */
    };
    const struct kvg_buf *body = pd ? kvg_pd_decode_body(&pr->pdr) : NULL;
    if (!body) body = kvg__proxy_forward_body(pr);
    struct kvg_str url = req->url;
    pr->xlate = kvg__proxy_xlate_wanted(pr, w);
    if (pr->xlate) {
        if ((rc = kvg__proxy_xlate_begin(pr))) {
            kvg__proxy_local_failure(pr, rc);
            return;
        }
        body = &pr->ri.chat_body;
        url = KVG_STR("/v1/chat/completions");
    }
    rc = kvg_http_call_start(pr->pl->client, &w->target, req->method_name, url, fwd, k, body->data,
                             body->len, &o, &kvg__proxy_up_cbs, pr, &pr->call);
    if (rc) {
        pr->call = NULL;
        if (kvg__proxy_local_error(rc)) {
            kvg__proxy_local_failure(pr, rc);
            return;
        }
        kvg__proxy_release_worker(pr, KVG_OUT_FAIL);
        pr->connect_fails++;
        if (kvg__proxy_schedule_retry(pr) == 0) return;
        kvg__proxy_upstream_failed(pr, "cannot reach the engine");
    }
}

/* Parses the body and computes the routing text (thread-safe). On a work
 * thread, also tokenizes: one hand-off instead of two, and the render reads
 * the strings the parse has just written while they are in this core's
 * cache. So a long prompt is tokenized before its key's model list and
 * priority are checked (its key itself was, with the head): a denied one
 * costs its tokenizing, as one over its quota does. */
/* Whether the request's prompt is tokenized: the policy reads tokens, or
 * kvgate answers it from the tokens itself. */
static int tokenized(const struct proxy_req *pr)
{
    const struct kvg_proxy *px = pr->pl->px;
    if (pr->ep->routing == KVG_API_ROUTE_LOCAL) return kvg__proxy_local_ok(pr);
    int wants = pr->pm ? pr->pm->wants_tokens : px->wants_tokens;
    return (wants && pr->ep->routing == KVG_API_ROUTE_PROMPT) ||
           kvg__proxy_model_checks_context(pr); /* a prompt past it goes to a fallback */
}

/* The tokenizer of the request's model. */
static const struct kvg_rinput_tokenizer *rt_of(const struct proxy_req *pr)
{
    return pr->pm ? &pr->pm->rt : &pr->pl->px->rt;
}

static void parse_body(struct proxy_req *pr)
{
    struct kvg_proxy *px = pr->pl->px;
    const struct kvg_buf *body = kvg__proxy_req_body(pr);
    if (pr->ep->body == KVG_API_BODY_NONE) { /* GET, DELETE of a stored object */
        memset(&pr->ri, 0, sizeof pr->ri);
        kvg_buf_init(&pr->ri.text, 0);
        kvg_buf_init(&pr->ri.chat_body, 0);
        pr->ri.kind = pr->ep->kind;
        pr->parse_rc = 0;
        return;
    }
    int upload = pr->ep->body == KVG_API_BODY_MULTIPART;
    if (upload)
        pr->parse_rc = kvg__proxy_multipart_input(pr, body);
    else
        pr->parse_rc = kvg_rinput_parse(&pr->ri, body->data, body->len, pr->ep->kind, pr->parse_msg,
                                        sizeof pr->parse_msg);
    if (pr->parse_rc) return;
    if ((pr->parse_rc = kvg__proxy_model_resolve(pr))) {
        snprintf(pr->parse_msg, sizeof pr->parse_msg, "The model `%.*s` does not exist.",
                 (int)pr->ri.model_len, pr->ri.model);
        return;
    }
    if (upload) return; /* routed by load: no prompt to read */
    int text = pr->pm ? pr->pm->wants_text : px->wants_text;
    if (text && pr->ep->routing == KVG_API_ROUTE_PROMPT) kvg_rinput_text(&pr->ri);
    pr->ri.adapter = kvg_pool_model_is_adapter(px->pool, pr->ri.model, pr->ri.model_len);
    if (tokenized(pr) && on_workers(pr)) {
        TR_MARK(pr, tok0);
        kvg_rinput_tokenize(&pr->ri, rt_of(pr), 0);
        TR_MARK(pr, tok1);
    }
}

static void parse_work(struct kvg_proxy_wq_item *w)
{
    parse_body(w->data);
}

/* After the parse: the gateway's authorization, then tokenizing (unless a
 * work thread did it with the parse), then admission. */
static void parsed(struct proxy_req *pr)
{
    struct kvg_proxy_loop *pl = pr->pl;
    struct kvg_http_req *req = pr->req;
    TR_MARK(pr, parse1);
    if (pr->parse_rc == KVG_ENOTFOUND) {
        kvg__proxy_error(pr, 404, "invalid_request_error", "model_not_found", pr->parse_msg,
                         "model", NULL, 0);
        return;
    }
    if (pr->parse_rc) {
        kvg__proxy_error(pr, 400, NULL, pr->ri.bad_code ? pr->ri.bad_code : "invalid_request",
                         pr->parse_msg, pr->ri.bad_param, NULL, 0);
        return;
    }
    if (kvg__proxy_model_rename(pr)) {
        kvg__proxy_client_error(pr, 500, "out_of_memory", "cannot rename the request's model");
        return;
    }
    if (pl->px->on_observe) {
        struct kvg_proxy_obs o = {.kind = KVG_PROXY_OBS_ARRIVE,
                                  .prompt_tokens = -1,
                                  .model = kvg__proxy_model_served(pr)};
        pl->px->on_observe(pl->px->on_observe_ud, &o);
    }
    struct kvg_gate_deny d;
    char cred[600];
    struct kvg_str auth =
        kvg_gate_credential(kvg_http_req_header(req, "authorization"),
                            kvg_http_req_header(req, "x-api-key"), cred, sizeof cred);
    TR_MARK(pr, auth0);
    int denied = kvg_gate_authorize(pl->gate, &pr->gate, auth, &req->head_note,
                                    kvg_http_req_header(req, "x-kvgate-priority"), pr->ri.model,
                                    pr->ri.model_len, &d) ||
                 kvg_gate_classify(&pr->gate, kvg_http_req_header(req, "x-kvgate-class"),
                                   kvg_http_req_header(req, "x-kvgate-deadline"), &d);
    TR_MARK(pr, auth1);
    if (denied) {
        kvg__proxy_answer_deny(pr, &d);
        return;
    }
    if (tokenized(pr) && !on_workers(pr)) {
        TR_MARK(pr, tok0);
        kvg_rinput_tokenize(&pr->ri, rt_of(pr), 1); /* on the loop */
        TR_MARK(pr, tok1);
    }
    if (kvg__proxy_model_too_long(pr) && kvg__proxy_fall_back(pr, "context_length")) return;
    if (pr->ep->routing == KVG_API_ROUTE_LOCAL && kvg__proxy_local_ok(pr)) {
        kvg__proxy_local_answer(pr);
        return;
    }
    if (kvg__proxy_stored_route(pr)) return; /* answered, or the workers asked first */
    kvg__proxy_admit(pr);
}

static void parse_done(struct kvg_proxy_wq_item *w)
{
    struct proxy_req *pr = work_back(w);
    if (pr) parsed(pr);
}

int kvg__proxy_fall_back(struct proxy_req *pr, const char *why)
{
    if (!pr->req || pr->relayed || pr->pick.w || pr->call || pr->working) return 0;
    if (kvg__proxy_model_next_fallback(pr, why)) return 0;
    /* The first model's admission ends, charged nothing (nothing was
     * answered); the fallback's key check, quota and admission are its own,
     * from its parse on: the request starts again as the fallback's. */
    kvg_gate_account(&pr->gate, 0, pr->attempts != pr->attempts0);
    memset(&pr->gate, 0, sizeof pr->gate);
    pr->attempts0 = pr->attempts;
    pr->connect_fails = 0;
    pr->ntried = 0;
    pr->up_status = 0;
    pr->probe = pr->xlate = pr->xcapped = pr->shed_seen = 0;
    pr->worker_url[0] = 0;
    kvg_buf_reset(&pr->body);
    kvg__proxy_xlate_free(pr);
    kvg_buf_free(&pr->model_body);
    kvg_rinput_free(&pr->ri);
    /* No leg was sent (kvg__proxy_model_can_fall): the PD state starts
     * afresh, under the fallback's own mode. */
    kvg_pd_req_free(&pr->pdr);
    memset(&pr->pdr, 0, sizeof pr->pdr);
    if (on_workers(pr)) {
        offload(pr, parse_work, parse_done);
        return 1;
    }
    parse_body(pr);
    parsed(pr);
    return 1;
}

/* A new request's state: pr's endpoint, path and timer set up. */
static struct proxy_req *pr_start(struct kvg_proxy_loop *pl, struct kvg_http_req *req,
                                  const struct kvg_api_endpoint *ep)
{
    struct proxy_req *pr = pr_alloc(pl);
    if (!pr) {
        kvg_http_res_error(req, 500, NULL, NULL, "out of memory", NULL, 0);
        return NULL;
    }
    pr->pl = pl;
    pr->req = req;
    pr->t0_ns = req->start_ns;
    pr->ep = ep;
    pr->route = ep ? (int)ep->kind : KVG_PROXY_ROUTE_NONE;
    pr->method = req->method_name;
    if (ep) {
        pr->path = ep->path;
    } else {
        size_t n = KVG_MIN(req->path.len, sizeof pr->path_buf - 1);
        memcpy(pr->path_buf, req->path.p, n);
        pr->path_buf[n] = 0;
        pr->path = pr->path_buf;
    }
    kvg_buf_init(&pr->body, MAX_NONSTREAM_BODY);
    kvg_buf_init(&pr->xout, 0);
    uv_timer_init(pl->loop, &pr->retry_timer);
    pr->retry_timer.data = pr;
    kvg__proxy_request_id(pr, req);
    return pr;
}

void kvg_proxy_no_endpoint(struct kvg_proxy_loop *pl, struct kvg_http_req *req, unsigned allow)
{
    struct proxy_req *pr = pr_start(pl, req, NULL);
    if (!pr) return;
    req->ud = pr;
    req->on_abort = on_client_abort;
    if (!allow) {
        char msg[300];
        snprintf(msg, sizeof msg, "Unknown path %s: kvgate serves the OpenAI and Anthropic APIs",
                 pr->path);
        kvg__proxy_error(pr, 404, "invalid_request_error", "unknown_url", msg, NULL, NULL, 0);
        return;
    }
    char allow_v[64], msg[300];
    size_t n = kvg_api_allow(allow, allow_v, sizeof allow_v);
    struct kvg_http_header h = {KVG_STR("allow"), {allow_v, n}};
    snprintf(msg, sizeof msg, "Method %s is not allowed on %s: use %s", pr->method, pr->path,
             allow_v);
    kvg__proxy_error(pr, 405, "invalid_request_error", "method_not_allowed", msg, NULL, &h, 1);
}

void kvg_proxy_handle(struct kvg_proxy_loop *pl, struct kvg_http_req *req,
                      const struct kvg_api_endpoint *ep, const char *id, size_t id_len)
{
    struct kvg_proxy *px = pl->px;
    struct proxy_req *pr = pr_start(pl, req, ep);
    if (!pr) return;
    if (id && id_len) {
        size_t n = KVG_MIN(id_len, sizeof pr->obj_id - 1);
        memcpy(pr->obj_id, id, n);
        pr->obj_id[n] = 0;
    }
    atomic_fetch_add_explicit(&px->requests_total, 1, memory_order_relaxed);
    kvg__proxy_trace_begin(pr);
    TR_MARK(pr, parse0);

    req->ud = pr;
    req->on_abort = on_client_abort;
    req->on_drain = kvg__proxy_on_drain;
    if (req->body.len >= INLINE_BYTES) {
        /* The body moves into pr: the work may outlive the request. */
        pr->offloop = 1;
        pr->rbody = req->body;
        kvg_buf_init(&req->body, pr->rbody.limit);
        kvg_rng_seed(&pr->rng, kvg_rng_next(pl->rng));
        if (kvg__proxy_snap_headers(&pr->hdrs, req)) {
            kvg__proxy_client_error(pr, 500, "out_of_memory", "out of memory");
            return;
        }
        if (on_workers(pr)) {
            offload(pr, parse_work, parse_done);
            return;
        }
    }
    parse_body(pr);
    parsed(pr);
}
