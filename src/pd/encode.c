/* EPD, the encode stage of disaggregated serving (pd.h has the lifecycle).
 *
 * With vllm-router and vLLM, the router calls an encoder first for a request
 * with media, forwards the encoder's ec_transfer_params to the prefill worker
 * (which pulls the embeddings from that encoder, over NIXL in vLLM's
 * ECCPUConnector) and strips them before the decode. With SGLang the prefill
 * engine calls its encoders itself (--encoder-urls) and the router routes the
 * pair as without EPD; encode workers are then only kept out of every pick
 * (an encoder produces no tokens and no KV blocks).
 *
 *   DECIDE --media--> ENCODE --ec_transfer_params--> PREFILL -> DECODE
 *                       |  \--failed/timeout--------> FAILED (502/503/504, nothing else sent)
 *                       \--client gone--------------> CANCELLED (encode aborted)
 *
 * The encode leg: the client's body with max_tokens 1, no stream (what
 * vLLM's disaggregated-encoder proxy sends an encoder), to the path the
 * client used, deadline --pd-prefill-timeout-secs from dispatch. The
 * encoder's answer must carry an ec_transfer_params object naming the
 * encoder-cache entries it holds (mm_hashes); the router treats the rest
 * as the engine's and copies the object as it is. The prefill worker is
 * picked before the encode leg starts (it is charged from then on) and its
 * leg is sent when the params are in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "pd/pd_int.h"

/* An encoder's answer is one small JSON document (one token, the params). */
#define MAX_ENCODE_ANSWER (1u << 20)

/* ------------------------------------------------------------ pure parts */

static int media_part(const cJSON *p)
{
    static const char *types[] = {"image_url", "input_image", "image_embeds", "image_pil"};
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
    for (size_t i = 0; i < KVG_ARRAY_LEN(types); i++) {
        if (cJSON_IsString(t) && !strcmp(t->valuestring, types[i])) return 1;
        if (!t && cJSON_GetObjectItemCaseSensitive(p, types[i])) return 1; /* typeless part */
    }
    return 0;
}

uint32_t kvg_pd_media_items(const cJSON *req)
{
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
    if (!cJSON_IsArray(msgs)) return 0;
    uint32_t n = 0;
    const cJSON *m, *p;
    cJSON_ArrayForEach(m, msgs)
    {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsArray(content)) continue;
        cJSON_ArrayForEach(p, content) if (cJSON_IsObject(p) && media_part(p) && n < UINT32_MAX)
            n++;
    }
    return n;
}

int kvg_pd_ec_params_parse(const char *body, size_t len, cJSON **out, size_t *nitems, char *err,
                           size_t errlen)
{
    *out = NULL;
    *nitems = 0;
    cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "ec_transfer_params");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(p, "mm_hashes");
    int rc = KVG_EPARSE;
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "the encoder's answer is not a JSON object");
    } else if (!cJSON_IsObject(p)) {
        snprintf(err, errlen, "the encoder returned no ec_transfer_params (is it an EC producer?)");
    } else if (!cJSON_IsArray(h) || !cJSON_GetArraySize(h)) {
        snprintf(err, errlen, "the encoder's ec_transfer_params name no mm_hashes");
    } else {
        const cJSON *it;
        size_t n = 0;
        cJSON_ArrayForEach(it, h) n += cJSON_IsString(it) && it->valuestring[0];
        if (n != (size_t)cJSON_GetArraySize(h)) {
            snprintf(err, errlen, "the encoder's mm_hashes must be non-empty strings");
        } else if (!(*out = cJSON_DetachItemFromObjectCaseSensitive(j, "ec_transfer_params"))) {
            rc = -ENOMEM;
        } else {
            *nitems = n;
            rc = 0;
        }
    }
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------ life */

int kvg__pd_encode_init(struct kvg_pd *pd, const struct kvg_policy_opts *popts, char *err,
                        size_t errlen)
{
    if (!pd->cfg.epd) return 0;
    const char *name = pd->cfg.encode_policy[0] ? pd->cfg.encode_policy : "least_load";
    if (kvg_policy_new(name, popts, &pd->encode_policy)) {
        snprintf(err, errlen, "--encode-policy: unknown policy '%s' (one of %s)", name,
                 kvg_policy_names());
        return KVG_ECONFIG;
    }
    return 0;
}

void kvg__pd_encode_free(struct kvg_pd *pd)
{
    if (pd->encode_policy) pd->encode_policy->ops->destroy(pd->encode_policy);
}

/* ------------------------------------------------------------ the leg */

/* The encode leg's body: the client's, capped at one token, not streamed,
 * without transfer params of either kind. NULL when not a JSON object. */
static char *encode_body(const char *body, size_t len)
{
    static const char *drop[] = {
        "max_completion_tokens", "stream_options",     "min_tokens",
        "kv_transfer_params",    "ec_transfer_params", "min_completion_tokens"};
    struct kvg_json_edit e[KVG_ARRAY_LEN(drop) + 2];
    for (size_t i = 0; i < KVG_ARRAY_LEN(drop); i++)
        e[i] = (struct kvg_json_edit){.op = KVG_JSON_EDIT_REMOVE, .name = drop[i]};
    e[KVG_ARRAY_LEN(drop)] = (struct kvg_json_edit){
        .op = KVG_JSON_EDIT_SET, .name = "max_tokens", .value = "1", .value_len = 1};
    e[KVG_ARRAY_LEN(drop) + 1] = (struct kvg_json_edit){
        .op = KVG_JSON_EDIT_SET, .name = "stream", .value = "false", .value_len = 5};
    return kvg__pd_body_edit(body, len, e, KVG_ARRAY_LEN(e));
}

/* The prefill leg's body with the encoder's params set (the params are the
 * encoder's, printed; the body's bytes are the client's). */
static char *with_params(const char *body, const cJSON *params)
{
    char *p = cJSON_PrintUnformatted(params);
    if (!p) return NULL;
    struct kvg_json_edit e = {
        .op = KVG_JSON_EDIT_SET, .name = "ec_transfer_params", .value = p, .value_len = strlen(p)};
    char *s = kvg__pd_body_edit(body, strlen(body), &e, 1);
    free(p);
    return s;
}

/* Ends the request at the encode stage: both picks released, nothing else
 * sent, the client told why. */
static void encode_failed(struct kvg_pd_req *r, enum kvg_outcome out, int status, const char *code,
                          const char *msg)
{
    struct kvg_pd *pd = r->pd;
    struct kvg_route_ctx ectx = {.policy = pd->encode_policy};
    if (r->encoder.w) kvg_pool_release(pd->pool, &r->encoder, out, &ectx);
    struct kvg_route_ctx pctx = {.policy = pd->prefill_policy};
    if (r->prefill.w) kvg_pool_release(pd->pool, &r->prefill, KVG_OUT_LOCAL, &pctx);
    atomic_fetch_sub(&pd->committed_blocks, r->committed);
    r->committed = 0;
    r->state = KVG_PD_FAILED;
    kvg_pd_series_inc(r->ms, KVG_PD_S_ENCODE_FAILURES);
    KVG_WARN("pd: encode on %s failed (%d %s): the prefill and decode are not sent",
             r->encoder_url[0] ? r->encoder_url : "(none)", status, msg);
    /* The worker the client's error names (x-kvgate-worker) is the encoder. */
    if (r->encoder_url[0]) snprintf(r->prefill_url, sizeof r->prefill_url, "%s", r->encoder_url);
    struct kvg_pd_result res = {.status = status, .code = code, .message = msg};
    r->cb(r->ud, &res);
}

static void enc_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h;
    (void)n;
    ((struct kvg_pd_req *)ud)->status = status;
}

static void enc_body(void *ud, const char *p, size_t n)
{
    struct kvg_pd_req *r = ud;
    if (kvg_buf_append(&r->answer, p, n)) r->status = -1; /* over the cap */
}

static void enc_done(void *ud, int err)
{
    struct kvg_pd_req *r = ud;
    struct kvg_pd *pd = r->pd;
    r->ecall = NULL;
    if (err) {
        int to = err == KVG_ETIMEOUT;
        encode_failed(r, KVG_OUT_FAIL, to ? 504 : 502, to ? "encode_timeout" : "encode_failed",
                      to ? "the encode worker did not answer in time" : "the encode worker failed");
        return;
    }
    if (r->status != 200) {
        /* An error it answered is judged against the pool (router/circuit.h). */
        encode_failed(r, r->status >= 400 ? kvg_pool_answer_outcome(r->status) : KVG_OUT_FAIL, 502,
                      "encode_failed",
                      r->status < 0 ? "the encode worker's answer is too large"
                                    : "the encode worker answered with an error");
        return;
    }
    cJSON *params = NULL;
    size_t items = 0;
    char why[160];
    if (kvg_pd_ec_params_parse(r->answer.data, r->answer.len, &params, &items, why, sizeof why)) {
        KVG_WARN("pd: encoder %s: %s", r->encoder_url, why);
        encode_failed(r, KVG_OUT_FAIL, 502, "encode_failed",
                      "the encode worker returned no usable ec_transfer_params");
        return;
    }
    char *body = with_params(r->held_body, params);
    cJSON_Delete(params);
    if (!body) {
        encode_failed(r, KVG_OUT_LOCAL, 500, "pd_error", "cannot build the prefill request");
        return;
    }
    kvg__pd_observe(r, KVG_PD_S_ENCODE_SECONDS, (double)(kvg_now_ns() - r->encode_sent_ns) / 1e9);
    struct kvg_route_ctx ectx = {.policy = pd->encode_policy};
    kvg_pool_release(pd->pool, &r->encoder, KVG_OUT_OK, &ectx);
    kvg_buf_reset(&r->answer); /* the prefill's answer goes there next */
    kvg__pd_prefill_send(r, r->held_path, r->held_h, r->held_nh, body, r->held_connect_ms);
    free(body);
}

/* Copies the prefill leg's headers into r (the caller's are on its stack). */
static int hold_headers(struct kvg_pd_req *r, const struct kvg_http_header *h, size_t nh)
{
    kvg_buf_init(&r->held_hdrs, 0);
    size_t total = 0;
    nh = KVG_MIN(nh, KVG_ARRAY_LEN(r->held_h));
    for (size_t i = 0; i < nh; i++) total += h[i].name.len + h[i].value.len;
    int rc = 0;
    for (size_t i = 0; !rc && i < nh; i++)
        if (!(rc = kvg_buf_append(&r->held_hdrs, h[i].name.p, h[i].name.len)))
            rc = kvg_buf_append(&r->held_hdrs, h[i].value.p, h[i].value.len);
    if (rc || (total && !r->held_hdrs.data)) return rc ? rc : -ENOMEM;
    size_t off = 0; /* the buffer is complete: pointers into it stay */
    for (size_t i = 0; i < nh; i++) {
        r->held_h[i].name = (struct kvg_str){r->held_hdrs.data + off, h[i].name.len};
        off += h[i].name.len;
        r->held_h[i].value = (struct kvg_str){r->held_hdrs.data + off, h[i].value.len};
        off += h[i].value.len;
    }
    r->held_nh = nh;
    return 0;
}

int kvg__pd_encode_begin(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_route_ctx *ctx,
                         const struct kvg_pd_input *in, const char *prefill_body,
                         const struct kvg_http_header *h, size_t nh)
{
    if (!pd->encode_policy) return 0;
    if (strlen(in->path) >= sizeof r->held_path) return KVG_EPARSE;
    snprintf(r->held_path, sizeof r->held_path, "%s", in->path);
    r->held_connect_ms = in->connect_timeout_ms;
    if (!(r->held_body = strdup(prefill_body)) || hold_headers(r, h, nh)) return -ENOMEM;
    r->state = KVG_PD_ENCODE;
    ctx->roles = 1u << KVG_ROLE_ENCODE;
    ctx->policy = pd->encode_policy;
    int rc = kvg_pool_pick(pd->pool, ctx, NULL, 0, &r->encoder, NULL, NULL);
    ctx->roles = 0;
    ctx->policy = NULL;
    if (rc) {
        encode_failed(r, KVG_OUT_LOCAL, 503, "no_encode_worker",
                      "no healthy encode worker is available");
        return 1;
    }
    struct kvg_worker *w = r->encoder.w;
    snprintf(r->encoder_url, sizeof r->encoder_url, "%s", w->url);
    char *body = encode_body(in->body, in->body_len);
    if (!body) {
        encode_failed(r, KVG_OUT_LOCAL, 500, "pd_error", "cannot build the encode request");
        return 1;
    }
    struct kvg_http_header eh[80];
    size_t k = 0;
    for (size_t i = 0; i < in->nheaders && k < 77; i++) eh[k++] = in->headers[i];
    char bearer[300];
    k += (size_t)kvg_worker_auth_header(w, bearer, sizeof bearer, &eh[k]);
    atomic_fetch_add_explicit(&w->pd_encode_requests, 1, memory_order_relaxed);
    /* The deadline runs from dispatch (total_timeout_ms): a leg that sends
     * its head and then trickles would otherwise reset the idle timer for
     * as long as it trickles, holding the request and its picks. */
    struct kvg_http_call_opts o = {.connect_timeout_ms = in->connect_timeout_ms,
                                   .total_timeout_ms = pd->cfg.prefill_timeout_ms};
    static const struct kvg_http_call_cbs cbs = {enc_head, enc_body, enc_done};
    r->status = 0;
    r->encode_sent_ns = kvg_now_ns();
    struct kvg_str path = {in->path, strlen(in->path)};
    rc = kvg_http_call_start(r->cl, &w->target, "POST", path, eh, k, body, strlen(body), &o, &cbs,
                             r, &r->ecall);
    free(body);
    if (rc) {
        r->ecall = NULL;
        encode_failed(r, KVG_OUT_FAIL, 503, "encode_unreachable", "cannot reach the encode worker");
    }
    return 1;
}

void kvg__pd_encode_cancel(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    if (r->ecall) { /* the encoder sees the connection close and drops the request */
        kvg_http_call_cancel(r->ecall);
        r->ecall = NULL;
    }
    struct kvg_route_ctx ectx = {.policy = pd->encode_policy};
    if (r->encoder.w) kvg_pool_release(pd->pool, &r->encoder, KVG_OUT_CLIENT_GONE, &ectx);
    struct kvg_route_ctx pctx = {.policy = pd->prefill_policy};
    if (r->prefill.w) kvg_pool_release(pd->pool, &r->prefill, KVG_OUT_CLIENT_GONE, &pctx);
    atomic_fetch_sub(&pd->committed_blocks, r->committed);
    r->committed = 0;
    r->state = KVG_PD_CANCELLED;
}

void kvg_pd_encode_explain(struct kvg_pd *pd, const struct kvg_route_ctx *ctx, const cJSON *req,
                           cJSON *o)
{
    if (!pd->cfg.epd) return;
    cJSON *e = cJSON_AddObjectToObject(o, "encode");
    uint32_t items = kvg_pd_media_items(req);
    cJSON_AddNumberToObject(e, "media_items", items);
    if (pd->cfg.mode != KVG_PD_VLLM) {
        cJSON_AddNullToObject(e, "encoder");
        cJSON_AddStringToObject(e, "note",
                                "SGLang: the prefill engine calls its encoders itself "
                                "(--encoder-urls)");
        return;
    }
    if (!items) {
        cJSON_AddNullToObject(e, "encoder");
        cJSON_AddStringToObject(e, "note", "text only: no encode leg");
        return;
    }
    struct kvg_route_ctx ec = *ctx;
    struct kvg_pick p = {0};
    ec.roles = 1u << KVG_ROLE_ENCODE;
    ec.policy = pd->encode_policy;
    ec.dry_run = 1;
    if (kvg_pool_pick(pd->pool, &ec, NULL, 0, &p, NULL, NULL) == 0) {
        cJSON_AddStringToObject(e, "encoder", p.w->url);
        cJSON_AddNumberToObject(e, "encoder_in_flight", atomic_load(&p.w->in_flight));
        kvg_worker_unref(p.w);
    } else {
        cJSON_AddNullToObject(e, "encoder");
    }
    cJSON_AddStringToObject(e, "policy", pd->encode_policy->ops->name);
    cJSON_AddStringToObject(e, "note",
                            "the encoder first; its ec_transfer_params go to the "
                            "prefill and are stripped before the decode");
}
