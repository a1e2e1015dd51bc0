/* The PD lifecycle of one request (pd.h has the state machine): the
 * decision, the prefill pick and leg, and what the decode leg needs.
 *
 * The prefill leg follows vllm-router and vLLM's toy proxy: the client's body
 * with max_tokens 1 (max_completion_tokens 1 when the client used it), stream
 * false, no stream_options, no min_tokens, and kv_transfer_params
 * {do_remote_decode: true, do_remote_prefill: false, remote_*: null}; its
 * JSON answer's kv_transfer_params go into the client's body for the decode.
 * Its deadline runs from its dispatch, so a prefill stuck in an engine queue
 * ends the request instead of leaving the decode side waiting (as SGLang's
 * decode once waited 10 minutes for a failed prefill, sglang#9726). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json_edit.h"
#include "base/log.h"
#include "base/util.h"
#include "pd/pd_int.h"

/* A prefill answer is one small JSON document (one token). */
#define MAX_PREFILL_ANSWER (1u << 20)

void kvg_pd_config_default(struct kvg_pd_config *c)
{
    memset(c, 0, sizeof *c);
    c->threshold_tokens = 512; /* llm-d's prefix-based decider default */
    c->prefill_timeout_ms = 300000;
    c->hold_timeout_ms = 480000; /* VLLM_NIXL_ABORT_REQUEST_TIMEOUT */
    c->locality_load_bound = 1.5;
    c->reject_kv_frac = 0.95;
    c->prefill_tokens_per_s = 8000;
    c->decode_secs = 10;
}

const char *kvg_pd_state_name(int s)
{
    static const char *n[] = {"decide", "prefill",   "decode", "done",
                              "failed", "cancelled", "encode"};
    return s >= 0 && s <= KVG_PD_ENCODE ? n[s] : "?";
}

int kvg_pd_new(const struct kvg_pd_config *c, const struct kvg_policy_opts *popts,
               struct kvg_pool *pool, struct kvg_metrics_registry *reg, struct kvg_pd **out,
               char *err, size_t errlen)
{
    struct kvg_pd *pd = calloc(1, sizeof *pd);
    if (!pd) return -ENOMEM;
    pd->cfg = *c;
    pd->pool = pool;
    int rc = kvg__pd_series_init(pd, reg); /* first: kvg_pd_free frees what it made */
    if (rc) goto fail;
    if (c->prefill_policy[0] &&
        (rc = kvg_policy_new(c->prefill_policy, popts, &pd->prefill_policy))) {
        snprintf(err, errlen, "--prefill-policy: unknown policy '%s' (one of %s)",
                 c->prefill_policy, kvg_policy_names());
        kvg_pd_free(pd);
        return KVG_ECONFIG;
    }
    if (c->decode_policy[0] && strcmp(c->decode_policy, "pd_decode")) {
        if ((rc = kvg_policy_new(c->decode_policy, popts, &pd->decode_policy))) {
            snprintf(err, errlen, "--decode-policy: unknown policy '%s' (one of pd_decode, %s)",
                     c->decode_policy, kvg_policy_names());
            kvg_pd_free(pd);
            return KVG_ECONFIG;
        }
    } else if ((rc = kvg_pd_decode_policy_new(c->locality_load_bound, &pd->decode_policy))) {
        goto fail;
    }
    if ((rc = kvg__pd_engines_new(pd))) goto fail;
    if ((rc = kvg__pd_encode_init(pd, popts, err, errlen))) {
        kvg_pd_free(pd);
        return rc;
    }
    *out = pd;
    return 0;
fail:
    snprintf(err, errlen, "pd: %s", kvg_strerror(rc));
    kvg_pd_free(pd);
    return rc;
}

void kvg_pd_free(struct kvg_pd *pd)
{
    if (!pd) return;
    if (pd->prefill_policy) pd->prefill_policy->ops->destroy(pd->prefill_policy);
    if (pd->decode_policy) pd->decode_policy->ops->destroy(pd->decode_policy);
    kvg__pd_engines_free(pd);
    kvg__pd_encode_free(pd);
    kvg__pd_series_free(pd);
    free(pd);
}

/* ------------------------------------------------------------ bodies */

char *kvg__pd_body_edit(const char *body, size_t len, const struct kvg_json_edit *e, size_t ne)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (kvg_json_edit(body, len, e, ne, &b) < 0 || kvg_buf_append(&b, "", 1)) {
        kvg_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* The prefill leg's body; NULL when the client's is not a JSON object. */
static char *prefill_body(const char *body, size_t len)
{
    static const char params[] = "{\"do_remote_decode\":true,\"do_remote_prefill\":false,"
                                 "\"remote_engine_id\":null,\"remote_block_ids\":null,"
                                 "\"remote_host\":null,\"remote_port\":null}";
    const struct kvg_json_edit e[] = {KVG_JSON_SET("max_tokens", "1"),
                                      {.op = KVG_JSON_EDIT_REPLACE,
                                       .name = "max_completion_tokens",
                                       .value = "1",
                                       .value_len = 1},
                                      KVG_JSON_SET("stream", "false"),
                                      KVG_JSON_REMOVE("stream_options"),
                                      KVG_JSON_REMOVE("min_tokens"), /* P does not support them */
                                      KVG_JSON_REMOVE("min_completion_tokens"),
                                      KVG_JSON_REMOVE("ec_transfer_params"), /* only an encoder's */
                                      KVG_JSON_SET("kv_transfer_params", params)};
    return kvg__pd_body_edit(body, len, e, KVG_ARRAY_LEN(e));
}

/* The decode leg's body: the client's with the prefill's params. */
static int decode_body(struct kvg_pd_req *r, const char *body, size_t len, const cJSON *params)
{
    char *p = cJSON_PrintUnformatted(params); /* the engine's, not the client's bytes */
    if (!p) return -ENOMEM;
    const struct kvg_json_edit e[] = {
        KVG_JSON_REMOVE("ec_transfer_params"), /* the prefill's alone */
        KVG_JSON_SET("kv_transfer_params", p)};
    kvg_buf_reset(&r->decode_body);
    int rc = kvg_json_edit(body, len, e, KVG_ARRAY_LEN(e), &r->decode_body);
    free(p);
    return rc < 0 ? rc : 0;
}

/* A decode_only request's body: the transfer is kvgate's to arrange, so a
 * client's own kv_transfer_params (a remote_host of its choosing for the
 * decode to pull from) or ec_transfer_params never reach the engine, as the
 * two legs' bodies drop them. The client's text is kept unless the object
 * has one of them. */
static int own_transfer_only(struct kvg_pd_req *r, const char *body, size_t len)
{
    if (!memmem(body, len, "_transfer_params", 16)) return 0;
    const struct kvg_json_edit e[] = {KVG_JSON_REMOVE("kv_transfer_params"),
                                      KVG_JSON_REMOVE("ec_transfer_params")};
    kvg_buf_reset(&r->decode_body);
    int rc = kvg_json_edit(body, len, e, KVG_ARRAY_LEN(e), &r->decode_body);
    if (rc <= 0) kvg_buf_reset(&r->decode_body); /* none: the client's text goes as it is */
    return rc == KVG_EPARSE || rc > 0 ? 0 : rc;
}

/* SGLang's body for both legs: the client's with bootstrap_host (the
 * prefill's host: its dial target's, never the "@rank" of a URL@rank worker:
 * SGLang's --pd-disaggregation with --dp-aware was seen to send the decode
 * such an invalid destination), bootstrap_port (its configured port, or null)
 * and bootstrap_room (a random u63, as sglang's router draws it), written as
 * an integer literal: a JSON double would lose its low bits. SGLang's
 * --dp-aware router puts the leg's data-parallel rank in the body as
 * data_parallel_rank; rank (>= 0) sets the prefill's, the decode's is set
 * when the decode is picked (kvg_pd_decode_sent), so one leg's rank never
 * steers the other. Into out (reset first). */
static int bootstrap_body(const char *body, size_t len, struct kvg_worker *w, uint64_t room,
                          int rank, struct kvg_buf *out)
{
    char host[300];
    snprintf(host, sizeof host, "%s", w->target.hostport);
    char *colon = strrchr(host, ':');
    if (colon) *colon = 0;
    if (host[0] == '[' && colon && colon[-1] == ']') { /* [v6]:port */
        colon[-1] = 0;
        memmove(host, host + 1, strlen(host));
    }
    struct kvg_buf h;
    kvg_buf_init(&h, 0);
    int rc = kvg_buf_append_json_str(&h, host, strlen(host));
    if (!rc) rc = kvg_buf_append(&h, "", 1);
    if (rc) {
        kvg_buf_free(&h);
        return rc;
    }
    char port[16], r[24], dp[16];
    int p = atomic_load(&w->bootstrap_port);
    snprintf(port, sizeof port, p ? "%d" : "null", p);
    snprintf(r, sizeof r, "%llu", (unsigned long long)(room & 0x7fffffffffffffffull));
    snprintf(dp, sizeof dp, "%d", rank);
    const struct kvg_json_edit e[] = {
        KVG_JSON_SET("bootstrap_host", h.data), KVG_JSON_SET("bootstrap_port", port),
        KVG_JSON_SET("bootstrap_room", r),
        rank >= 0 ? (struct kvg_json_edit)KVG_JSON_SET("data_parallel_rank", dp)
                  : (struct kvg_json_edit)KVG_JSON_REMOVE("data_parallel_rank")};
    kvg_buf_reset(out);
    rc = kvg_json_edit(body, len, e, KVG_ARRAY_LEN(e), out);
    kvg_buf_free(&h);
    return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ prefill leg */

/* Early rejection: will any decode have room when this prefill is done? */
static int decode_room(struct kvg_pd *pd, const struct kvg_route_ctx *ctx, uint64_t tokens,
                       uint64_t blocks)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    static _Thread_local struct kvg_pd_decode_view v[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(pd->pool, ws, KVG_POOL_MAX_WORKERS), k = 0;
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        if (atomic_load(&w->role) == KVG_ROLE_DECODE && atomic_load(&w->healthy)) {
            struct kvg_engine_load l = kvg_worker_load(w, ctx->now_ms, ctx->load_max_age_ms);
            double used = (double)atomic_load(&w->active_decode_blocks);
            if (l.kv_usage >= 0 && l.kv_blocks && l.kv_usage * (double)l.kv_blocks > used)
                used = l.kv_usage * (double)l.kv_blocks;
            v[k++] = (struct kvg_pd_decode_view){used, (double)l.kv_blocks};
        }
        kvg_worker_unref(w);
    }
    double prefill_s = (double)tokens / pd->cfg.prefill_tokens_per_s;
    return kvg_pd_has_room(v, k, (double)blocks, (double)atomic_load(&pd->committed_blocks),
                           prefill_s, pd->cfg.decode_secs, pd->cfg.reject_kv_frac);
}

static void finish_prefill(struct kvg_pd_req *r, struct kvg_pd *pd, enum kvg_outcome out,
                           const struct kvg_pd_result *res)
{
    atomic_fetch_sub(&pd->committed_blocks, r->committed);
    r->committed = 0;
    struct kvg_route_ctx ctx = {.policy = pd->prefill_policy};
    if (r->prefill.w) kvg_pool_release(pd->pool, &r->prefill, out, &ctx);
    r->state = res->ok ? KVG_PD_DECODE : KVG_PD_FAILED;
    r->prefill_done_ms = kvg_now_ms();
    if (!res->ok) {
        kvg_pd_series_inc(r->ms, KVG_PD_S_PREFILL_FAILURES);
        KVG_WARN("pd: prefill on %s failed (%d %s): the decode is not sent", r->prefill_url,
                 res->status, res->message);
    }
    r->cb(r->ud, res);
}

static void leg_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h;
    (void)n;
    ((struct kvg_pd_req *)ud)->status = status;
}

static void leg_body(void *ud, const char *p, size_t n)
{
    struct kvg_pd_req *r = ud;
    /* The prefill's first token (its whole answer when not streamed): the
     * prefill policy learns its time (predicted_latency) and the worker's
     * prefill charge ends. */
    if (!r->answer.len) kvg_pool_first_token_at(r->pd->pool, &r->prefill, kvg_now_ms());
    if (kvg_buf_append(&r->answer, p, n)) r->status = -1; /* over the cap */
}

static void leg_done(void *ud, int err)
{
    struct kvg_pd_req *r = ud;
    struct kvg_pd *pd = r->pd;
    r->call = NULL;
    struct kvg_pd_result res = {.status = 502, .code = "prefill_failed"};
    enum kvg_outcome out = KVG_OUT_FAIL;
    if (err) {
        res.status = err == KVG_ETIMEOUT ? 504 : 502;
        res.code = err == KVG_ETIMEOUT ? "prefill_timeout" : "prefill_failed";
        res.message = err == KVG_ETIMEOUT ? "the prefill worker did not answer in time"
                                          : "the prefill worker failed";
    } else if (r->status >= 400 && r->status < 500) {
        /* The request itself is at fault: the engine's answer says why. */
        res.status = r->status;
        res.code = "prefill_rejected";
        res.message = "the prefill worker rejected the request";
        res.body = r->answer.data;
        res.body_len = r->answer.len;
        out = kvg_pool_answer_outcome(r->status);
    } else if (r->status != 200) {
        res.message = "the prefill worker answered with an error";
        if (r->status >= 500) out = kvg_pool_answer_outcome(r->status); /* router/circuit.h */
    } else if (r->concurrent) {
        /* SGLang: the answer only says the prefill went well (and its usage). */
        cJSON *j = cJSON_ParseWithLength(r->answer.data ? r->answer.data : "", r->answer.len);
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "usage"), "prompt_tokens");
        r->prompt_tokens = cJSON_IsNumber(pt) ? (int64_t)pt->valuedouble : -1;
        cJSON_Delete(j);
        res = (struct kvg_pd_result){.ok = 1, .status = 200};
        out = KVG_OUT_OK;
    } else {
        cJSON *j = cJSON_ParseWithLength(r->answer.data ? r->answer.data : "", r->answer.len);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "kv_transfer_params");
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
        r->prompt_tokens = cJSON_IsNumber(pt) ? (int64_t)pt->valuedouble : -1;
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details"), "cached_tokens");
        r->prefill_cached = cJSON_IsNumber(ct) ? (int64_t)ct->valuedouble : 0;
        if (!cJSON_IsObject(p)) {
            res.message = "the prefill worker returned no kv_transfer_params (is it a NIXL "
                          "KV producer?)";
        } else if (decode_body(r, r->body, r->body_len, p)) {
            res.message = "cannot build the decode request";
        } else {
            const cJSON *eid = cJSON_GetObjectItemCaseSensitive(p, "remote_engine_id");
            snprintf(r->engine_id, sizeof r->engine_id, "%s",
                     cJSON_IsString(eid) ? eid->valuestring : "");
            kvg__pd_engine_seen(pd, r); /* a restart shows here */
            res.ok = 1;
            res.status = 200;
            res.code = NULL;
            out = KVG_OUT_OK;
        }
        cJSON_Delete(j);
    }
    finish_prefill(r, pd, out, &res);
}

int kvg_pd_begin(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_http_client *cl,
                 struct kvg_route_ctx *ctx, const struct kvg_pd_input *in, kvg_pd_prefill_cb cb,
                 void *ud)
{
    r->prompt_tokens = -1;
    r->cb = cb;
    r->ud = ud;
    r->ms = kvg_pd_series_for(pd, in->model);
    kvg_buf_init(&r->answer, MAX_PREFILL_ANSWER);
    kvg_buf_init(&r->decode_body, 0);
    kvg_buf_init(&r->decode_base, 0);
    /* What the decode side already has cached, as the pool's own KV
     * knowledge sees it (a dry run of its policy over decode workers). */
    uint64_t cached = 0;
    if (ctx->block_size && ctx->ntokens) {
        struct kvg_route_ctx dc = *ctx;
        struct kvg_pick dp = {0};
        dc.roles = 1u << KVG_ROLE_DECODE;
        dc.dry_run = 1;
        if (kvg_pool_pick(pd->pool, &dc, NULL, 0, &dp, NULL, NULL) == 0) {
            cached = (uint64_t)dp.matched_blocks * ctx->block_size;
            kvg_worker_unref(dp.w);
        }
    }
    /* vLLM EPD: media need the encoder, whose embeddings only a prefill
     * takes (ec_transfer_params are stripped before the decode). */
    if (pd->cfg.epd && pd->cfg.mode == KVG_PD_VLLM) {
        cJSON *j = cJSON_ParseWithLength(in->body, in->body_len);
        r->media_items = kvg_pd_media_items(j);
        cJSON_Delete(j);
    }
    /* An SGLang decode cannot prefill: every request is split. */
    r->decision = pd->cfg.mode == KVG_PD_SGLANG || r->media_items
                      ? KVG_PD_PREFILL_DECODE
                      : kvg_pd_decide(in->prompt_tokens, cached, pd->cfg.threshold_tokens);
    kvg_pd_series_inc(r->ms,
                      r->decision == KVG_PD_PREFILL_DECODE ? KVG_PD_S_PAIRS : KVG_PD_S_DECODE_ONLY);
    if (r->decision == KVG_PD_DECODE_ONLY) {
        r->state = KVG_PD_DECODE;
        return own_transfer_only(r, in->body, in->body_len);
    }
    /* The blocks the request will hold on its decode (16-token blocks when
     * the prompt was not tokenized). */
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    uint64_t blocks = (in->prompt_tokens + bs - 1) / bs;
    if (pd->cfg.early_rejection && !decode_room(pd, ctx, in->prompt_tokens, blocks)) {
        kvg_pd_series_inc(r->ms, KVG_PD_S_EARLY_REJECTIONS);
        r->state = KVG_PD_FAILED;
        return -EBUSY;
    }
    ctx->roles = 1u << KVG_ROLE_PREFILL;
    ctx->policy = pd->prefill_policy;
    int rc = kvg_pool_pick(pd->pool, ctx, NULL, 0, &r->prefill, NULL, NULL);
    ctx->roles = 0;
    ctx->policy = NULL;
    if (rc) return rc;
    struct kvg_worker *w = r->prefill.w;
    r->concurrent = pd->cfg.mode == KVG_PD_SGLANG;
    uint64_t room = kvg_rng_next(ctx->rng);
    char *body = NULL;
    int brc = 0;
    if (!r->concurrent) {
        body = prefill_body(in->body, in->body_len);
    } else if (!(brc = bootstrap_body(in->body, in->body_len, w, room, w->dp_rank,
                                      &r->decode_body)) &&
               !(brc = kvg_buf_append(&r->decode_body, "", 1))) {
        body = r->decode_body.data; /* the prefill's, handed over; the decode's next */
        kvg_buf_init(&r->decode_body, 0);
        brc = bootstrap_body(in->body, in->body_len, w, room, -1, &r->decode_base);
    }
    if (!body || brc) {
        free(body);
        struct kvg_route_ctx rctx = {.policy = pd->prefill_policy};
        kvg_pool_release(pd->pool, &r->prefill, KVG_OUT_LOCAL, &rctx);
        return brc == KVG_EPARSE || (!brc && !r->concurrent) ? KVG_EPARSE : brc ? brc : -ENOMEM;
    }
    snprintf(r->prefill_url, sizeof r->prefill_url, "%s", w->url);
    kvg_pool_labels(pd->pool, w, r->prefill_labels, sizeof r->prefill_labels);
    struct kvg_http_header h[80];
    size_t k = 0;
    for (size_t i = 0; i < in->nheaders && k < 76; i++) h[k++] = in->headers[i];
    char rank[16], bearer[300];
    if (w->dp_rank >= 0 && !r->concurrent) { /* SGLang's rank is in the body */
        int rl = snprintf(rank, sizeof rank, "%d", w->dp_rank);
        h[k++] = (struct kvg_http_header){KVG_STR("x-data-parallel-rank"), {rank, (size_t)rl}};
    }
    k += (size_t)kvg_worker_auth_header(w, bearer, sizeof bearer, &h[k]);
    r->committed = blocks;
    atomic_fetch_add(&pd->committed_blocks, blocks);
    r->pd = pd;
    r->cl = cl;
    r->body = in->body;
    r->body_len = in->body_len;
    if (r->media_items) { /* EPD: the encoder first; the prefill leg waits for its params */
        rc = kvg__pd_encode_begin(pd, r, ctx, in, body, h, k);
        free(body);
        if (rc < 0) {
            atomic_fetch_sub(&pd->committed_blocks, r->committed);
            r->committed = 0;
            struct kvg_route_ctx rctx = {.policy = pd->prefill_policy};
            kvg_pool_release(pd->pool, &r->prefill, KVG_OUT_LOCAL, &rctx);
            r->state = KVG_PD_FAILED;
        }
        return rc < 0 ? rc : 0;
    }
    kvg__pd_prefill_send(r, in->path, h, k, body, in->connect_timeout_ms);
    free(body);
    return 0;
}

void kvg__pd_prefill_send(struct kvg_pd_req *r, const char *path, const struct kvg_http_header *h,
                          size_t nh, const char *body, uint32_t connect_timeout_ms)
{
    struct kvg_pd *pd = r->pd;
    struct kvg_worker *w = r->prefill.w;
    /* The deadline runs from dispatch (total_timeout_ms): a leg that sends
     * its head and then trickles would otherwise reset the idle timer for
     * as long as it trickles, holding the request and its picks. */
    struct kvg_http_call_opts o = {.connect_timeout_ms = connect_timeout_ms,
                                   .total_timeout_ms = pd->cfg.prefill_timeout_ms};
    static const struct kvg_http_call_cbs cbs = {leg_head, leg_body, leg_done};
    r->state = KVG_PD_PREFILL;
    atomic_fetch_add_explicit(&w->pd_prefill_requests, 1, memory_order_relaxed);
    struct kvg_str p = {path, strlen(path)};
    int rc = kvg_http_call_start(r->cl, &w->target, "POST", p, h, nh, body, strlen(body), &o, &cbs,
                                 r, &r->call);
    if (rc) {
        r->call = NULL;
        struct kvg_pd_result res = {.status = 503,
                                    .code = "prefill_unreachable",
                                    .message = "cannot reach the prefill worker"};
        finish_prefill(r, pd, KVG_OUT_FAIL, &res);
    }
}

/* ------------------------------------------------------------ decode leg */

void kvg_pd_decode_ctx(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_route_ctx *ctx)
{
    ctx->roles = 1u << KVG_ROLE_DECODE;
    ctx->policy = pd->decode_policy;
    ctx->near_labels = r->prefill_labels[0] ? r->prefill_labels : NULL;
}

const struct kvg_buf *kvg_pd_decode_body(const struct kvg_pd_req *r)
{
    return r->decode_body.len ? &r->decode_body : NULL; /* either decision's, when rewritten */
}

int kvg_pd_decode_sent(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_worker *w)
{
    /* SGLang: the decode's own rank goes into the body built without one. */
    if (r->concurrent) {
        char dp[16];
        snprintf(dp, sizeof dp, "%d", w->dp_rank);
        const struct kvg_json_edit e = KVG_JSON_SET("data_parallel_rank", dp);
        kvg_buf_reset(&r->decode_body);
        int rc = kvg_json_edit(r->decode_base.data, r->decode_base.len, &e, w->dp_rank >= 0 ? 1 : 0,
                               &r->decode_body);
        if (rc < 0) return rc;
    }
    if (r->decode_attempts++) kvg_pd_series_inc(r->ms, KVG_PD_S_DECODE_RETRIES);
    atomic_fetch_add_explicit(&w->pd_decode_requests, 1, memory_order_relaxed);
    r->decode_sent_ns = kvg_now_ns();
    return 0;
}

void kvg_pd_decode_refused(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    if (r->decision == KVG_PD_PREFILL_DECODE) kvg_pd_series_inc(r->ms, KVG_PD_S_WASTED_PREFILLS);
}

void kvg_pd_decode_first_byte(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    if (r->decision != KVG_PD_PREFILL_DECODE || !r->decode_sent_ns) return;
    kvg__pd_observe(r, KVG_PD_S_TRANSFER, (double)(kvg_now_ns() - r->decode_sent_ns) / 1e9);
    r->decode_sent_ns = 0;
}

int kvg_pd_decode_may_retry(struct kvg_pd *pd, struct kvg_pd_req *r, uint64_t now_ms)
{
    if (r->concurrent) return 0; /* the room is this pair's: another decode cannot join it */
    if (r->decision == KVG_PD_DECODE_ONLY) return 1; /* an ordinary request */
    return r->decode_attempts < 2 && now_ms - r->prefill_done_ms < pd->cfg.hold_timeout_ms;
}

void kvg_pd_cancel(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    if (r->state == KVG_PD_ENCODE) {
        kvg__pd_encode_cancel(pd, r);
        return;
    }
    if (r->state != KVG_PD_PREFILL) return;
    if (r->call) { /* the engine sees the connection close and aborts the prefill */
        kvg_http_call_cancel(r->call);
        r->call = NULL;
    }
    struct kvg_route_ctx ctx = {.policy = pd->prefill_policy};
    if (r->prefill.w) kvg_pool_release(pd->pool, &r->prefill, KVG_OUT_CLIENT_GONE, &ctx);
    atomic_fetch_sub(&pd->committed_blocks, r->committed);
    r->committed = 0;
    r->state = KVG_PD_CANCELLED;
}

void kvg_pd_req_free(struct kvg_pd_req *r)
{
    free(r->held_body);
    r->held_body = NULL;
    kvg_buf_free(&r->held_hdrs);
    kvg_buf_free(&r->answer);
    kvg_buf_free(&r->decode_body);
    kvg_buf_free(&r->decode_base);
}

int kvg_pd_rank_in_body(const struct kvg_pd *pd)
{
    return pd->cfg.mode == KVG_PD_SGLANG;
}
