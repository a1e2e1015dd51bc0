/* kvgate sim's Anthropic Messages API as vLLM serves it: POST /v1/messages
 * turned into the chat request vLLM makes of it (kvg_api_to_chat), run as
 * chat (the same template, engine and prefix cache), answered as vLLM's
 * converter writes it: the chat completion's id, stop_reason from the
 * finish reason, usage input/output tokens; streams as vLLM's
 * message_stream_converter emits them (message_start without type and
 * role, no ping, data: [DONE] after message_stop). Errors: the request
 * model's validation in vLLM's OpenAI shape (it runs before the endpoint),
 * the rest in Anthropic's {"type":"error","error":{type,message}} with
 * vLLM's error types. POST /v1/messages/count_tokens counts the rendered
 * prompt: {"input_tokens":N}. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

static void sse(struct sim_req *r, const char *type, const char *json, size_t len)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "event: %s\ndata: ", type);
    kvg_buf_append(&b, json, len);
    kvg_buf_append_str(&b, "\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
}

static const char *stop_reason(enum kvg_sim_finish fin)
{
    return fin == KVG_SIM_FINISH_LENGTH ? "max_tokens" : "end_turn";
}

static void msg_token(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                      enum kvg_sim_finish fin)
{
    (void)id, (void)fin;
    kvg_buf_append(&r->text, t, n);
    if (!r->stream) return;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (first) {
        const char *model = kvg__simsrv_model_name(r->s, r->lora);
        kvg_buf_append_str(&b, "{\"type\":\"message_start\",\"message\":{\"id\":");
        kvg_buf_append_json_str(&b, r->rid, strlen(r->rid));
        kvg_buf_append_str(&b, ",\"content\":[],\"model\":");
        kvg_buf_append_json_str(&b, model, strlen(model));
        kvg_buf_printf(
            &b,
            ",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":%u,"
            "\"output_tokens\":0}}}",
            r->prompt_len);
        sse(r, "message_start", b.data, b.len);
        static const char start[] = "{\"type\":\"content_block_start\",\"content_block\":"
                                    "{\"type\":\"text\",\"text\":\"\"},\"index\":0}";
        sse(r, "content_block_start", start, sizeof start - 1);
        kvg_buf_reset(&b);
    }
    kvg_buf_append_str(&b, "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
                           "\"text\":");
    kvg_buf_append_json_str(&b, t, n);
    kvg_buf_append_str(&b, "},\"index\":0}");
    sse(r, "content_block_delta", b.data, b.len);
    kvg_buf_free(&b);
}

static void msg_done(struct sim_req *r, enum kvg_sim_finish fin)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (r->stream) {
        static const char stop[] = "{\"type\":\"content_block_stop\",\"index\":0}";
        sse(r, "content_block_stop", stop, sizeof stop - 1);
        kvg_buf_printf(&b,
                       "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\"},\"usage\":"
                       "{\"input_tokens\":%u,\"output_tokens\":%u}}",
                       stop_reason(fin), r->prompt_len, r->ntok);
        sse(r, "message_delta", b.data, b.len);
        static const char end[] = "{\"type\":\"message_stop\"}";
        sse(r, "message_stop", end, sizeof end - 1);
        kvg_http_res_write(r->req, "data: [DONE]\n\n", 14);
        kvg_http_res_end(r->req);
    } else {
        const char *model = kvg__simsrv_model_name(r->s, r->lora);
        kvg_buf_append_str(&b, "{\"id\":");
        kvg_buf_append_json_str(&b, r->rid, strlen(r->rid));
        kvg_buf_append_str(&b, ",\"type\":\"message\",\"role\":\"assistant\",\"content\":[");
        if (r->text.len) { /* vLLM adds the text block only when there is text */
            kvg_buf_append_str(&b, "{\"type\":\"text\",\"text\":");
            kvg_buf_append_json_str(&b, r->text.data, r->text.len);
            kvg_buf_append_str(&b, "}");
        }
        kvg_buf_append_str(&b, "],\"model\":");
        kvg_buf_append_json_str(&b, model, strlen(model));
        kvg_buf_printf(
            &b, ",\"stop_reason\":\"%s\",\"usage\":{\"input_tokens\":%u,\"output_tokens\":%u}}",
            stop_reason(fin), r->prompt_len, r->ntok);
        kvg_http_res_send(r->req, 200, "application/json", NULL, 0, b.data, b.len);
    }
    kvg_buf_free(&b);
}

/* vLLM's converter meets the chat stream's error event, fails to read it
 * as a chunk and says so as an Anthropic error event; before the stream,
 * the router's 500 in Anthropic's shape. */
static void msg_fail(struct sim_req *r, const char *msg)
{
    r->req->on_abort = NULL;
    if (!r->started) {
        kvg__simsrv_error_anthropic(r->req, 500, "InternalServerError", msg);
        return;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b,
                       "{\"type\":\"error\",\"error\":{\"type\":\"internal_error\",\"message\":");
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, "}}");
    sse(r, "error", b.data, b.len);
    kvg_http_res_write(r->req, "data: [DONE]\n\n", 14);
    kvg_http_res_end(r->req);
    kvg_buf_free(&b);
}

static const struct kvg_simsrv_out msg_out = {
    .token = msg_token, .done = msg_done, .fail = msg_fail};

/* The body as prompt ids (its chat form rendered); -1 with the answer sent. */
static int body_ids(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                    int count_only, uint32_t **ids, size_t *nids)
{
    struct kvg_buf chat;
    kvg_buf_init(&chat, 0);
    struct kvg_api_err e = {{0}, {0}};
    char msg[512] = "";
    int rc = kvg_api_to_chat(count_only ? KVG_API_COUNT_TOKENS : KVG_API_MESSAGES, j, &chat, &e);
    if (rc == KVG_EPARSE)
        kvg__simsrv_error_validation(req, e.param, e.msg);
    else if (rc)
        kvg__simsrv_error_anthropic(req, 500, "InternalServerError", "out of memory");
    else if ((rc = kvg__simsrv_chat_ids(s, chat.data ? chat.data : "{}", chat.len, ids, nids, msg,
                                        sizeof msg)))
        kvg__simsrv_error_anthropic(req, 400, "BadRequestError", msg);
    kvg_buf_free(&chat);
    return rc ? -1 : 0;
}

static void count_tokens(struct kvg_http_req *req, size_t nids)
{
    char b[48];
    int n = snprintf(b, sizeof b, "{\"input_tokens\":%zu}", nids);
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b, (size_t)n);
}

void kvg__simsrv_messages(struct kvg_simsrv_server *s, struct kvg_http_req *req, int count_only)
{
    char msg[512] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    uint32_t *ids = NULL;
    size_t nids = 0;
    struct kvg_simsrv_rank *rk = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg);
    if (!rk) {
        kvg__simsrv_error_anthropic(req, 400, "BadRequestError", msg);
        goto out;
    }
    if (!count_only && kvg__simsrv_inject_fail(s, req)) goto out;
    if (!cJSON_IsObject(j)) {
        kvg__simsrv_error_validation(req, "", "JSON decode error: a JSON object is expected");
        goto out;
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "max_tokens");
    if (!count_only && cJSON_IsNumber(mt) && mt->valuedouble <= 0) {
        kvg__simsrv_error_validation(req, "max_tokens", "Value error, max_tokens must be positive");
        goto out;
    }
    if (body_ids(s, req, j, count_only, &ids, &nids)) goto out;
    int lora = kvg__simsrv_model(s, cJSON_GetObjectItemCaseSensitive(j, "model"), msg, sizeof msg);
    if (lora == -2) {
        kvg__simsrv_error_anthropic(req, 404, "NotFoundError", msg);
        goto out;
    }
    if (count_only) {
        count_tokens(req, nids);
        goto out;
    }
    int64_t max_tokens = -1;
    if (kvg__simsrv_get_uint(j, "max_tokens", -1, &max_tokens, msg, sizeof msg) ||
        kvg__simsrv_fit(s, nids, &max_tokens, msg, sizeof msg)) {
        kvg__simsrv_error_anthropic(req, 400, "BadRequestError", msg);
        goto out;
    }
    char rid[48] = "chatcmpl-"; /* vLLM answers with its chat completion's id */
    kvg__simsrv_hex_id(s, rid + 9);
    struct kvg_simsrv_gen g = {.req = req,
                               .rk = rk,
                               .lora = lora,
                               .stream =
                                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")),
                               .ids = ids,
                               .nids = nids,
                               .max_tokens = (uint32_t)max_tokens,
                               .seed = -1,
                               .rid = rid,
                               .out = &msg_out};
    ids = NULL;
    struct sim_req *r = kvg__simsrv_req_new(s, &g);
    if (!r) {
        kvg__simsrv_error_anthropic(req, 500, "InternalServerError", "out of memory");
        goto out;
    }
    kvg__simsrv_req_start(r);
out:
    free(ids);
    cJSON_Delete(j);
}
