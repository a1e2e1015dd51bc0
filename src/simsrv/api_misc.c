/* kvgate sim's tokenizer endpoints and SGLang's native generation API.
 * POST /tokenize and /detokenize as vLLM answers them ({count,
 * max_model_len, tokens, token_strs} from a prompt or chat messages;
 * {prompt}) and as llama.cpp's server does ({tokens} with optional pieces;
 * {content}): the tokenizer only, no engine, as in both. SGLang's POST
 * /generate: text or input_ids and sampling_params in, {text, output_ids,
 * meta_info{id, finish_reason, prompt_tokens, completion_tokens,
 * cached_tokens, e2e_latency}} out, streamed as cumulative chunks and
 * data: [DONE], through the engine like chat. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

/* --------------------------------------------------------------- tokenize */

static void ids_json(struct kvg_buf *b, const uint32_t *ids, size_t n)
{
    kvg_buf_append_str(b, "[");
    for (size_t i = 0; i < n; i++) kvg_buf_printf(b, i ? ",%u" : "%u", ids[i]);
    kvg_buf_append_str(b, "]");
}

/* vLLM's token_strs: the vocabulary's own strings (convert_ids_to_tokens). */
static void token_strs(struct kvg_simsrv_server *s, struct kvg_buf *b, const uint32_t *ids,
                       size_t n)
{
    kvg_buf_append_str(b, "[");
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *t = kvg_tok_id_to_token(s->tok, ids[i], &len);
        if (i) kvg_buf_append_str(b, ",");
        kvg_buf_append_json_str(b, t ? t : "", t ? len : 0);
    }
    kvg_buf_append_str(b, "]");
}

/* llama.cpp's pieces: each token's text, or its bytes when not UTF-8. */
static void pieces(struct kvg_simsrv_server *s, struct kvg_buf *b, const uint32_t *ids, size_t n)
{
    kvg_buf_append_str(b, "[");
    for (size_t i = 0; i < n; i++) {
        char *t = NULL;
        size_t len = 0;
        if (kvg_tok_decode(s->tok, &ids[i], 1, 0, &t, &len)) len = 0;
        kvg_buf_printf(b, "%s{\"id\":%u,\"piece\":", i ? "," : "", ids[i]);
        if (kvg_utf8_valid(t ? t : "", len)) {
            kvg_buf_append_json_str(b, t ? t : "", len);
        } else {
            kvg_buf_append_str(b, "[");
            for (size_t k = 0; k < len; k++)
                kvg_buf_printf(b, k ? ",%u" : "%u", (unsigned)(unsigned char)t[k]);
            kvg_buf_append_str(b, "]");
        }
        kvg_buf_append_str(b, "}");
        free(t);
    }
    kvg_buf_append_str(b, "]");
}

static int read_ids(struct kvg_simsrv_server *s, const cJSON *a, uint32_t **ids, size_t *n,
                    char *msg, size_t msglen)
{
    if (!cJSON_IsArray(a)) {
        snprintf(msg, msglen, "'tokens' must be a list of token ids");
        return KVG_EPARSE;
    }
    if (!cJSON_GetArraySize(a)) {
        *ids = NULL;
        *n = 0;
        return 0;
    }
    return kvg__simsrv_prompt_ids(s, a, 0, ids, n, msg, msglen);
}

static void tokenize_vllm(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                          int detok)
{
    char msg[512] = "";
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(j, "add_special_tokens");
    if (detok) {
        rc = read_ids(s, cJSON_GetObjectItemCaseSensitive(j, "tokens"), &ids, &n, msg, sizeof msg);
    } else if (cJSON_GetObjectItemCaseSensitive(j, "messages")) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "continue_final_message")) &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt"))) {
            kvg__simsrv_error_validation(req, "",
                                         "Value error, Cannot set both "
                                         "`continue_final_message` and "
                                         "`add_generation_prompt` to True.");
            goto out;
        }
        rc = kvg__simsrv_chat_ids(s, req->body.data, req->body.len, &ids, &n, msg, sizeof msg);
    } else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "prompt"))) {
        kvg__simsrv_error_validation(req, "prompt", "Field required");
        goto out;
    } else {
        rc = kvg__simsrv_prompt_ids(s, cJSON_GetObjectItemCaseSensitive(j, "prompt"),
                                    !cJSON_IsFalse(add), &ids, &n, msg, sizeof msg);
    }
    if (rc) {
        kvg_simsrv_error(req, 400, "BadRequestError", msg[0] ? msg : "cannot tokenize");
        goto out;
    }
    if (detok) {
        char *t = NULL;
        size_t tl = 0;
        if (n && kvg_tok_decode(s->tok, ids, n, 0, &t, &tl)) tl = 0;
        kvg_buf_append_str(&b, "{\"prompt\":");
        kvg_buf_append_json_str(&b, t ? t : "", tl);
        kvg_buf_append_str(&b, "}");
        free(t);
    } else {
        kvg_buf_printf(&b, "{\"count\":%zu,\"max_model_len\":%u,\"tokens\":", n, s->max_model_len);
        ids_json(&b, ids, n);
        kvg_buf_append_str(&b, ",\"token_strs\":");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "return_token_strs")))
            token_strs(s, &b, ids, n);
        else
            kvg_buf_append_str(&b, "null");
        kvg_buf_append_str(&b, "}");
    }
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
out:
    free(ids);
    kvg_buf_free(&b);
}

static void tokenize_llamacpp(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                              int detok)
{
    char msg[512] = "";
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = 0;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, detok ? "tokens" : "content");
    if (detok && c)
        rc = read_ids(s, c, &ids, &n, msg, sizeof msg);
    else if (c) /* llama.cpp adds no BOS unless add_special */
        rc = kvg__simsrv_prompt_ids(
            s, c, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_special")), &ids, &n, msg,
            sizeof msg);
    if (rc) {
        kvg__simsrv_llamacpp_error(req, 500, msg);
        goto out;
    }
    if (detok) {
        char *t = NULL;
        size_t tl = 0;
        if (n && kvg_tok_decode(s->tok, ids, n, 0, &t, &tl)) tl = 0;
        kvg_buf_append_str(&b, "{\"content\":");
        kvg_buf_append_json_str(&b, t ? t : "", tl);
        kvg_buf_append_str(&b, "}");
        free(t);
    } else {
        kvg_buf_append_str(&b, "{\"tokens\":");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "with_pieces")))
            pieces(s, &b, ids, n);
        else
            ids_json(&b, ids, n);
        kvg_buf_append_str(&b, "}");
    }
    kvg_http_res_send(req, 200, "application/json; charset=utf-8", NULL, 0, b.data, b.len);
out:
    free(ids);
    kvg_buf_free(&b);
}

void kvg__simsrv_tokenize(struct kvg_simsrv_server *s, struct kvg_http_req *req, int detok)
{
    char msg[256] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    int lora;
    if (!cJSON_IsObject(j)) {
        if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP)
            kvg__simsrv_llamacpp_error(req, 500, "the request body is not a JSON object");
        else
            kvg__simsrv_error_validation(req, "", "JSON decode error: a JSON object is expected");
    } else if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP) {
        tokenize_llamacpp(s, req, j, detok);
    } else if ((lora = kvg__simsrv_model(s, cJSON_GetObjectItemCaseSensitive(j, "model"), msg,
                                         sizeof msg)) == -2) {
        kvg_simsrv_error(req, 404, "NotFoundError", msg);
    } else {
        tokenize_vllm(s, req, j, detok);
    }
    cJSON_Delete(j);
}

/* ------------------------------------------------------- SGLang /generate */

struct gen {
    struct kvg_buf ids; /* output ids so far, as JSON numbers "1,2,3" */
    char rid[64];
    uint32_t max_new;
    double start; /* kvg_now_s() at arrival: e2e_latency */
};

static void gen_release(struct sim_req *r)
{
    struct gen *g = r->ext;
    if (!g) return;
    kvg_buf_free(&g->ids);
    free(g);
    r->ext = NULL;
}

/* One answer object; fin 0: a stream chunk before the end. */
static void gen_object(struct kvg_buf *b, const struct sim_req *r, enum kvg_sim_finish fin)
{
    const struct gen *g = r->ext;
    kvg_buf_append_str(b, "{\"text\":");
    kvg_buf_append_json_str(b, r->text.data ? r->text.data : "", r->text.len);
    kvg_buf_append_str(b, ",\"output_ids\":[");
    kvg_buf_append(b, g->ids.data ? g->ids.data : "", g->ids.len);
    kvg_buf_append_str(b, "],\"meta_info\":{\"id\":");
    kvg_buf_append_json_str(b, g->rid, strlen(g->rid));
    if (fin == KVG_SIM_FINISH_LENGTH)
        kvg_buf_printf(b, ",\"finish_reason\":{\"type\":\"length\",\"length\":%u}", g->max_new);
    else if (fin == KVG_SIM_FINISH_STOP)
        kvg_buf_printf(b, ",\"finish_reason\":{\"type\":\"stop\",\"matched\":%u}", r->s->eos_id);
    else
        kvg_buf_append_str(b, ",\"finish_reason\":null");
    kvg_buf_printf(b, ",\"prompt_tokens\":%u,\"completion_tokens\":%u,\"cached_tokens\":%u",
                   r->prompt_len, r->ntok, r->cached);
    if (fin) {
        kvg_buf_append_str(b, ",\"e2e_latency\":");
        kvg__simsrv_pyfloat(b, kvg_now_s() - g->start);
    }
    kvg_buf_append_str(b, "}}");
}

static void gen_token(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                      enum kvg_sim_finish fin)
{
    struct gen *g = r->ext;
    kvg_buf_append(&r->text, t, n);
    kvg_buf_printf(&g->ids, first ? "%u" : ",%u", id);
    if (!r->stream || fin) return; /* the last chunk goes with done */
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "data: ");
    gen_object(&b, r, 0);
    kvg_buf_append_str(&b, "\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
}

static void gen_done(struct sim_req *r, enum kvg_sim_finish fin)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (r->stream) {
        kvg_buf_append_str(&b, "data: ");
        gen_object(&b, r, fin);
        kvg_buf_append_str(&b, "\n\ndata: [DONE]\n\n");
        kvg_http_res_write(r->req, b.data, b.len);
        kvg_http_res_end(r->req);
    } else {
        gen_object(&b, r, fin);
        kvg_http_res_send(r->req, 200, "application/json", NULL, 0, b.data, b.len);
    }
    kvg_buf_free(&b);
}

/* SGLang's own error shapes: its 400/500 body before the stream, an error
 * chunk and [DONE] in it (http_server.py's stream_results). */
static void gen_fail(struct sim_req *r, const char *msg)
{
    r->req->on_abort = NULL;
    if (!r->started) {
        kvg__simsrv_error_sglang(r->req, 500, msg);
        return;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "data: {\"error\":{\"message\":");
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, "}}\n\ndata: [DONE]\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_http_res_end(r->req);
    kvg_buf_free(&b);
}

static const struct kvg_simsrv_out gen_out = {
    .token = gen_token, .done = gen_done, .fail = gen_fail, .release = gen_release};

/* The prompt: text or input_ids, one of them; -1 and msg. */
static int gen_prompt(struct kvg_simsrv_server *s, const cJSON *j, uint32_t **ids, size_t *n,
                      char *msg, size_t msglen)
{
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input_ids");
    if (cJSON_IsNull(text)) text = NULL;
    if (cJSON_IsNull(in)) in = NULL;
    if (!text == !in) {
        snprintf(msg, msglen, "Either text, input_ids or input_embeds should be provided.");
        return -1;
    }
    const cJSON *p = text ? text : in;
    if (cJSON_IsArray(p) && (text || cJSON_IsArray(cJSON_GetArrayItem(p, 0)))) {
        snprintf(msg, msglen, "the simulated engine answers one prompt per /generate, not a batch");
        return -1;
    }
    if (text && !cJSON_IsString(text)) {
        snprintf(msg, msglen, "text must be a string");
        return -1;
    }
    if (kvg__simsrv_prompt_ids(s, p, 1, ids, n, msg, msglen)) return -1;
    if (!*n) {
        free(*ids);
        snprintf(msg, msglen, "The input is empty.");
        return -1;
    }
    return 0;
}

/* SGLang's sampling_params: max_new_tokens (128), ignore_eos; the context
 * checks of its tokenizer manager. -1 and msg. */
static int gen_params(struct kvg_simsrv_server *s, const cJSON *j, size_t n, int64_t *max_new,
                      int *ignore_eos, char *msg, size_t msglen)
{
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "sampling_params");
    if (sp && !cJSON_IsNull(sp) && !cJSON_IsObject(sp)) {
        snprintf(msg, msglen, "sampling_params must be an object");
        return -1;
    }
    if (kvg__simsrv_get_uint(sp, "max_new_tokens", 128, max_new, msg, msglen)) return -1;
    *ignore_eos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sp, "ignore_eos"));
    if (n >= s->max_model_len) {
        snprintf(msg, msglen,
                 "The input (%zu tokens) is longer than the model's context length (%u tokens).", n,
                 s->max_model_len);
        return -1;
    }
    if ((int64_t)n + *max_new > (int64_t)s->max_model_len) {
        snprintf(msg, msglen,
                 "Requested token count exceeds the model's maximum context length of %u tokens. "
                 "You requested a total of %lld tokens: %zu tokens from the input messages and "
                 "%lld tokens for the completion. Please reduce the number of tokens in the input "
                 "messages or the completion to fit within the limit.",
                 s->max_model_len, (long long)n + (long long)*max_new, n, (long long)*max_new);
        return -1;
    }
    if (*max_new == 0) {
        snprintf(msg, msglen, "max_new_tokens must be at least 1 in the simulated engine");
        return -1;
    }
    return 0;
}

void kvg__simsrv_generate(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    char msg[600] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    uint32_t *ids = NULL;
    size_t n = 0;
    int64_t max_new = 0;
    int ignore_eos = 0;
    struct kvg_simsrv_rank *rk = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg);
    if (!rk) {
        kvg__simsrv_error_sglang(req, 400, msg);
        goto out;
    }
    if (kvg__simsrv_inject_fail(s, req)) goto out;
    if (!cJSON_IsObject(j)) {
        kvg__simsrv_error_detail(req, 422, "the request body is not a JSON object");
        goto out;
    }
    /* SGLang's PD fields ride on /generate as on its OpenAI routes
     * (GenerateReqInput's bootstrap_host/port/room). */
    struct kvg_simsrv_pd_params pd;
    if (gen_prompt(s, j, &ids, &n, msg, sizeof msg) ||
        gen_params(s, j, n, &max_new, &ignore_eos, msg, sizeof msg) ||
        kvg_simsrv_pd_parse(s, j, &pd, msg, sizeof msg)) {
        kvg__simsrv_error_sglang(req, 400, msg);
        goto out;
    }
    if (pd.bootstrap_prefill) max_new = 1; /* SGLang's prefill computes the first token */
    struct gen *g = calloc(1, sizeof *g);
    if (!g) {
        kvg__simsrv_error_sglang(req, 500, "out of memory");
        goto out;
    }
    kvg_buf_init(&g->ids, 0);
    g->max_new = (uint32_t)max_new;
    g->start = kvg_now_s();
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(j, "rid");
    if (cJSON_IsString(rid) && rid->valuestring[0] && strlen(rid->valuestring) < sizeof g->rid)
        snprintf(g->rid, sizeof g->rid, "%s", rid->valuestring);
    else
        kvg__simsrv_hex_id(s, g->rid);
    struct kvg_simsrv_gen gen = {.req = req,
                                 .rk = rk,
                                 .lora = -1,
                                 .stream =
                                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")),
                                 .ids = ids,
                                 .nids = n,
                                 .max_tokens = (uint32_t)max_new,
                                 .ignore_eos = ignore_eos,
                                 .seed = -1,
                                 .rid = g->rid,
                                 .out = &gen_out,
                                 .ext = g};
    ids = NULL;
    struct sim_req *r = kvg__simsrv_req_new(s, &gen);
    if (!r) {
        kvg_buf_free(&g->ids);
        free(g);
        kvg__simsrv_error_sglang(req, 500, "out of memory");
        goto out;
    }
    r->pd = pd;
    r->pending.hold_blocks = pd.bootstrap_prefill;
    kvg__simsrv_req_start(r);
out:
    free(ids);
    cJSON_Delete(j);
}
