/* kvgate sim's OpenAI Responses API as vLLM serves it: POST /v1/responses
 * (the body turned into the chat request vLLM renders it as, by
 * kvg_api_to_chat, then the chat template and the same engine as chat), the
 * Response object or vLLM's stream of events with its sequence numbers,
 * and with --responses-store the stored responses: GET, DELETE and
 * POST .../cancel on /v1/responses/{id}, and previous_response_id
 * prepending the stored conversation (its messages, then its output as an
 * assistant message, as vLLM's construct_input_messages does).
 * docs/engines-api.md lists the vLLM files these shapes come from. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

/* One request's answer state (the sim_req's ext). */
struct resp {
    cJSON *body;             /* the request, for the members the Response echoes */
    char *messages;          /* the chat messages rendered (a JSON array): what a store keeps */
    int store;               /* keep the answer (the store is on and the request did not say no) */
    int background;          /* no client waits: the answer goes to the store only */
    struct sim_req *bg_next; /* s->bg's list of running background responses */
    int64_t created;         /* created_at */
    uint32_t max_tokens;     /* max_output_tokens as vLLM reports it: the effective limit */
    int64_t seq;             /* the next event's sequence_number */
    int64_t content_index;
    char item_id[37]; /* the streamed message item's id (a plain uuid4, as vLLM's) */
};

static void resp_release(struct sim_req *r)
{
    struct resp *st = r->ext;
    if (!st) return;
    for (struct sim_req **p = &r->s->bg; st->background && *p;
         p = &((struct resp *)(*p)->ext)->bg_next)
        if (*p == r) {
            *p = st->bg_next;
            break;
        }
    cJSON_Delete(st->body);
    cJSON_free(st->messages);
    free(st);
    r->ext = NULL;
}

static const cJSON *member(const struct resp *st, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(st->body, k);
}

/* A number member as a float, or dflt. */
static void float_member(struct kvg_buf *b, const struct resp *st, const char *k, double dflt)
{
    const cJSON *v = member(st, k);
    kvg__simsrv_pyfloat(b, cJSON_IsNumber(v) ? v->valuedouble : dflt);
}

/* The message output item: its id, the text and its status. */
static void message_item(struct kvg_buf *b, const char *id, const char *text, size_t len,
                         const char *status, int done_part, int summary)
{
    kvg_buf_append_str(b, "{\"id\":");
    kvg_buf_append_json_str(b, id, strlen(id));
    kvg_buf_append_str(b, ",\"content\":[");
    if (done_part) {
        kvg_buf_append_str(b, "{\"annotations\":[],\"text\":");
        kvg_buf_append_json_str(b, text, len);
        kvg_buf_append_str(b, ",\"type\":\"output_text\",\"logprobs\":null}");
    }
    kvg_buf_printf(b, "],\"role\":\"assistant\",\"status\":\"%s\",\"type\":\"message\"%s}", status,
                   summary ? ",\"summary\":[]" : "");
}

/* ResponsesResponse as vLLM dumps it (every field, in its order). r NULL:
 * status: completed or incomplete (the finished object), or in_progress,
 * queued, cancelled, failed (no output, no usage). */
static void response_object(struct kvg_buf *b, const struct sim_req *r, const struct resp *st,
                            const char *rid, const char *status)
{
    const struct kvg_simsrv_server *s = r->s;
    int incomplete = !strcmp(status, "incomplete");
    kvg_buf_append_str(b, "{\"id\":");
    kvg_buf_append_json_str(b, rid, strlen(rid));
    kvg_buf_printf(b, ",\"created_at\":%lld,\"incomplete_details\":%s,\"instructions\":",
                   (long long)st->created,
                   incomplete ? "{\"reason\":\"max_output_tokens\"}" : "null");
    kvg__simsrv_raw(b, member(st, "instructions"), "null");
    kvg_buf_append_str(b, ",\"metadata\":");
    kvg__simsrv_raw(b, member(st, "metadata"), "null");
    kvg_buf_append_str(b, ",\"model\":");
    const char *model = kvg__simsrv_model_name(s, r->lora);
    kvg_buf_append_json_str(b, model, strlen(model));
    kvg_buf_append_str(b, ",\"object\":\"response\",\"output\":[");
    int final = !strcmp(status, "completed") || !strcmp(status, "incomplete");
    if (final && r->text.len) {
        char id[40];
        snprintf(id, sizeof id, "msg_");
        kvg__simsrv_hex_id(r->s, id + 4);
        message_item(b, id, r->text.data, r->text.len, "completed", 1, 0);
    }
    kvg_buf_append_str(b, "],\"parallel_tool_calls\":");
    kvg__simsrv_raw(b, member(st, "parallel_tool_calls"), "true");
    kvg_buf_append_str(b, ",\"temperature\":");
    float_member(b, st, "temperature", 1.0);
    kvg_buf_append_str(b, ",\"tool_choice\":");
    kvg__simsrv_raw(b, member(st, "tool_choice"), "\"auto\"");
    kvg_buf_append_str(b, ",\"tools\":");
    kvg__simsrv_raw(b, member(st, "tools"), "[]");
    kvg_buf_append_str(b, ",\"top_p\":");
    float_member(b, st, "top_p", 1.0);
    kvg_buf_printf(b, ",\"background\":%s,\"max_output_tokens\":%u,\"max_tool_calls\":",
                   st->background ? "true" : "false", st->max_tokens);
    kvg__simsrv_raw(b, member(st, "max_tool_calls"), "null");
    kvg_buf_append_str(b, ",\"previous_response_id\":");
    kvg__simsrv_raw(b, member(st, "previous_response_id"), "null");
    kvg_buf_append_str(b, ",\"prompt\":null,\"reasoning\":");
    kvg__simsrv_raw(b, member(st, "reasoning"), "null");
    kvg_buf_append_str(b, ",\"service_tier\":");
    kvg__simsrv_raw(b, member(st, "service_tier"), "\"auto\"");
    kvg_buf_printf(b, ",\"status\":\"%s\",\"text\":", status);
    kvg__simsrv_raw(b, member(st, "text"), "null");
    kvg_buf_append_str(b, ",\"top_logprobs\":null,\"truncation\":");
    kvg__simsrv_raw(b, member(st, "truncation"), "\"disabled\"");
    kvg_buf_append_str(b, ",\"usage\":");
    if (!final)
        kvg_buf_append_str(b, "null");
    else
        kvg_buf_printf(b,
                       "{\"input_tokens\":%u,\"input_tokens_details\":{\"cached_tokens\":%u,"
                       "\"input_tokens_per_turn\":[],\"cached_tokens_per_turn\":[]},"
                       "\"output_tokens\":%u,\"output_tokens_details\":{\"reasoning_tokens\":0,"
                       "\"tool_output_tokens\":0,\"output_tokens_per_turn\":[],"
                       "\"tool_output_tokens_per_turn\":[]},\"total_tokens\":%u}",
                       r->prompt_len, r->cached, r->ntok, r->prompt_len + r->ntok);
    kvg_buf_append_str(b, ",\"user\":");
    kvg__simsrv_raw(b, member(st, "user"), "null");
    kvg_buf_append_str(b, ",\"input_messages\":null,\"output_messages\":null}");
}

/* ------------------------------------------------------------------ stream */

/* One event: "event: <type>\ndata: <json>\n\n", the json being
 * {<fields>,"sequence_number":N,"type":<type>} (the OpenAI SDK's field
 * order: alphabetical, sequence_number and type last). */
static void event(struct sim_req *r, const char *type, const struct kvg_buf *fields)
{
    struct resp *st = r->ext;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "event: %s\ndata: {", type);
    kvg_buf_append(&b, fields->data, fields->len);
    kvg_buf_printf(&b, ",\"sequence_number\":%lld,\"type\":\"%s\"}\n\n", (long long)st->seq++,
                   type);
    if (r->req) kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
}

static void resp_head(struct sim_req *r)
{
    struct resp *st = r->ext;
    struct kvg_buf f;
    kvg_buf_init(&f, 0);
    kvg_buf_append_str(&f, "\"response\":");
    response_object(&f, r, st, r->rid, "in_progress");
    event(r, "response.created", &f);
    event(r, "response.in_progress", &f);
    kvg_buf_free(&f);
}

/* vLLM's simple (non-harmony) stream: the item and its part come with the
 * first token; content_index counts every event after the part, a quirk of
 * vLLM's that clients see, kept as it is. */
static void resp_token(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                       enum kvg_sim_finish fin)
{
    (void)id, (void)fin;
    struct resp *st = r->ext;
    kvg_buf_append(&r->text, t, n);
    if (!r->stream) return;
    struct kvg_buf f;
    kvg_buf_init(&f, 0);
    if (first) {
        kvg__simsrv_uuid4(r->s, st->item_id);
        kvg_buf_append_str(&f, "\"item\":");
        message_item(&f, st->item_id, "", 0, "in_progress", 0, 0);
        kvg_buf_append_str(&f, ",\"output_index\":0");
        event(r, "response.output_item.added", &f);
        kvg_buf_reset(&f);
        kvg_buf_printf(
            &f,
            "\"content_index\":%lld,\"item_id\":\"%s\",\"output_index\":0,\"part\":"
            "{\"annotations\":[],\"text\":\"\",\"type\":\"output_text\",\"logprobs\":[]}",
            (long long)st->content_index++, st->item_id);
        event(r, "response.content_part.added", &f);
        kvg_buf_reset(&f);
    }
    kvg_buf_printf(&f, "\"content_index\":%lld,\"delta\":", (long long)st->content_index++);
    kvg_buf_append_json_str(&f, t, n);
    kvg_buf_printf(&f, ",\"item_id\":\"%s\",\"logprobs\":[],\"output_index\":0", st->item_id);
    event(r, "response.output_text.delta", &f);
    kvg_buf_free(&f);
}

static void stream_done(struct sim_req *r, const struct kvg_buf *final)
{
    struct resp *st = r->ext;
    const char *t = r->text.data ? r->text.data : "";
    struct kvg_buf f;
    kvg_buf_init(&f, 0);
    kvg_buf_printf(&f,
                   "\"content_index\":%lld,\"item_id\":\"%s\",\"logprobs\":[],\"output_index\":0,"
                   "\"text\":",
                   (long long)st->content_index++, st->item_id);
    kvg_buf_append_json_str(&f, t, r->text.len);
    event(r, "response.output_text.done", &f);
    kvg_buf_reset(&f);
    kvg_buf_printf(&f, "\"content_index\":%lld,\"item_id\":\"%s\",\"output_index\":0,\"part\":",
                   (long long)st->content_index++, st->item_id);
    kvg_buf_append_str(&f, "{\"annotations\":[],\"text\":");
    kvg_buf_append_json_str(&f, t, r->text.len);
    kvg_buf_append_str(&f, ",\"type\":\"output_text\",\"logprobs\":null}");
    event(r, "response.content_part.done", &f);
    kvg_buf_reset(&f);
    kvg_buf_append_str(&f, "\"item\":");
    message_item(&f, st->item_id, t, r->text.len, "completed", 1, 1);
    kvg_buf_append_str(&f, ",\"output_index\":0");
    event(r, "response.output_item.done", &f);
    kvg_buf_reset(&f);
    kvg_buf_append_str(&f, "\"response\":");
    kvg_buf_append(&f, final->data, final->len);
    event(r, "response.completed", &f);
    kvg_buf_free(&f);
    kvg_http_res_end(r->req);
}

static void resp_done(struct sim_req *r, enum kvg_sim_finish fin)
{
    struct resp *st = r->ext;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    response_object(&b, r, st, r->rid, fin == KVG_SIM_FINISH_LENGTH ? "incomplete" : "completed");
    /* A response too large to keep (or no memory) is not kept, as if its
     * store were off: a later GET answers 404. */
    if (st->store && r->s->store && st->messages)
        (void)kvg__simsrv_store_put(r->s->store, r->rid, b.data, b.len, st->messages,
                                    strlen(st->messages), r->text.data ? r->text.data : "",
                                    r->text.len);
    if (!r->req) {
        /* no client waits */
    } else if (r->stream) {
        stream_done(r, &b);
    } else {
        kvg_http_res_send(r->req, 200, "application/json", NULL, 0, b.data, b.len);
    }
    kvg_buf_free(&b);
}

/* Keeps r's object with this status (a background response's progress). */
static void store_status(struct sim_req *r, const char *status)
{
    struct resp *st = r->ext;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    response_object(&b, r, st, r->rid, status);
    (void)kvg__simsrv_store_put(r->s->store, r->rid, b.data, b.len, st->messages,
                                strlen(st->messages), "", 0);
    kvg_buf_free(&b);
}

/* A background response that fails is kept as failed, as vLLM's is. */
static void resp_fail(struct sim_req *r, const char *msg)
{
    struct resp *st = r->ext;
    if (st->background)
        store_status(r, "failed");
    else
        kvg__simsrv_fail_answer(r, msg);
}

static const struct kvg_simsrv_out resp_out = {.head = resp_head,
                                               .token = resp_token,
                                               .done = resp_done,
                                               .fail = resp_fail,
                                               .release = resp_release};

/* The running background response id names, or NULL. */
static struct sim_req *background(struct kvg_simsrv_server *s, const char *id, size_t idlen)
{
    for (struct sim_req *r = s->bg; r; r = ((struct resp *)r->ext)->bg_next)
        if (strlen(r->rid) == idlen && !memcmp(r->rid, id, idlen)) return r;
    return NULL;
}

/* ----------------------------------------------------------------- request */

static void not_found(struct kvg_http_req *req, const char *id, size_t idlen)
{
    char msg[300];
    snprintf(msg, sizeof msg, "Response with id '%.*s' not found.", (int)KVG_MIN(idlen, 200), id);
    kvg__simsrv_error_param(req, 404, "invalid_request_error", msg, "response_id");
}

/* Prepends the stored response prev to the chat request c's messages:
 * after the new instructions (vLLM puts them first), its whole
 * conversation, then its output as an assistant message. 0, or -1 with
 * the answer sent. */
static int prepend_previous(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                            cJSON *c, const cJSON *prev)
{
    struct kvg_simsrv_stored old;
    size_t plen = strlen(prev->valuestring);
    if (kvg__simsrv_store_get(s->store, prev->valuestring, plen, &old)) {
        not_found(req, prev->valuestring, plen);
        return -1;
    }
    /* A new list, built by appending only (cJSON's insertion in the middle
     * is unreliable in the Debian release): the new request's instructions,
     * the stored conversation, its output, the new input. */
    cJSON *pm = cJSON_ParseWithLength(old.messages, old.mlen), *list = cJSON_CreateArray(), *m;
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(c, "messages");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(j, "instructions");
    int skip = cJSON_IsString(ins) && ins->valuestring[0] ? 1 : 0, i = 0, ok = pm && list;
    cJSON_ArrayForEach(m, msgs) if (ok && i++ < skip) ok =
        cJSON_AddItemToArray(list, cJSON_Duplicate(m, 1));
    cJSON_ArrayForEach(m, pm) if (ok) ok = cJSON_AddItemToArray(list, cJSON_Duplicate(m, 1));
    if (ok && old.olen) { /* vLLM appends each output message's text; reasoning is skipped */
        cJSON *a = cJSON_CreateObject();
        ok = cJSON_AddItemToArray(list, a) && cJSON_AddStringToObject(a, "role", "assistant") &&
             cJSON_AddStringToObject(a, "content", old.output);
    }
    i = 0;
    cJSON_ArrayForEach(m, msgs) if (ok && i++ >= skip) ok =
        cJSON_AddItemToArray(list, cJSON_Duplicate(m, 1));
    cJSON_Delete(pm);
    if (ok && cJSON_IsArray(msgs) && cJSON_ReplaceItemInObjectCaseSensitive(c, "messages", list))
        return 0;
    cJSON_Delete(list);
    kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
    return -1;
}

/* The chat request the body is (kvg_api_to_chat), the stored conversation
 * prepended; NULL with the answer sent. *messages: its messages (JSON). */
static cJSON *conversation(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                           char **messages)
{
    struct kvg_buf chat;
    kvg_buf_init(&chat, 0);
    struct kvg_api_err e = {{0}, {0}};
    int rc = kvg_api_to_chat(KVG_API_RESPONSES, j, &chat, &e);
    cJSON *c = rc ? NULL : cJSON_ParseWithLength(chat.data, chat.len);
    kvg_buf_free(&chat);
    if (rc == KVG_EPARSE) {
        kvg__simsrv_error_validation(req, e.param, e.msg);
        return NULL;
    }
    if (!c) {
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return NULL;
    }
    const cJSON *prev = cJSON_GetObjectItemCaseSensitive(j, "previous_response_id");
    if (cJSON_IsString(prev) && prepend_previous(s, req, j, c, prev)) {
        cJSON_Delete(c);
        return NULL;
    }
    if (!(*messages = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "messages")))) {
        cJSON_Delete(c);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return NULL;
    }
    return c;
}

/* vLLM's checks of the request model; 0, or -1 with the answer sent. */
static int check_body(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                      int64_t *max_out)
{
    char msg[256] = "";
    const cJSON *bg = cJSON_GetObjectItemCaseSensitive(j, "background");
    const cJSON *store = cJSON_GetObjectItemCaseSensitive(j, "store");
    const cJSON *prev = cJSON_GetObjectItemCaseSensitive(j, "previous_response_id");
    const cJSON *salt = cJSON_GetObjectItemCaseSensitive(j, "cache_salt");
    if (kvg__simsrv_get_uint(j, "max_output_tokens", -1, max_out, msg, sizeof msg)) {
        kvg__simsrv_error_validation(req, "max_output_tokens", msg);
    } else if (cJSON_IsTrue(bg) && cJSON_IsFalse(store)) {
        kvg__simsrv_error_validation(req, "", "background can only be used when `store` is true");
    } else if (prev && !cJSON_IsNull(prev) && !cJSON_IsString(prev)) {
        kvg__simsrv_error_validation(req, "previous_response_id", "Input should be a valid string");
    } else if (salt && !cJSON_IsNull(salt) && (!cJSON_IsString(salt) || !salt->valuestring[0])) {
        kvg__simsrv_error_validation(
            req, "", "Parameter 'cache_salt' must be a non-empty string if provided.");
    } else if (cJSON_IsTrue(bg) && !s->store) {
        kvg__simsrv_error_param(
            req, 400, "invalid_request_error",
            "This vLLM engine does not support `store=True` and therefore does not support the "
            "background mode. To enable these features, set the environment variable "
            "`VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM server.",
            "background");
    } else if (cJSON_IsTrue(bg) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"))) {
        kvg__simsrv_error_param(req, 400, "invalid_request_error",
                                "the simulated engine does not stream background responses",
                                "background");
    } else {
        return 0;
    }
    return -1;
}

void kvg__simsrv_responses(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    char msg[512] = "", *messages = NULL;
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len),
          *c = NULL;
    uint32_t *ids = NULL;
    size_t nids = 0;
    int64_t max_out;
    struct kvg_simsrv_rank *rk = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg);
    if (!rk) {
        kvg_simsrv_error(req, 400, "BadRequestError", msg);
        goto out;
    }
    if (kvg__simsrv_inject_fail(s, req)) goto out;
    if (!cJSON_IsObject(j)) {
        kvg__simsrv_error_validation(req, "", "JSON decode error: a JSON object is expected");
        goto out;
    }
    int lora = kvg__simsrv_model(s, cJSON_GetObjectItemCaseSensitive(j, "model"), msg, sizeof msg);
    if (lora == -2) {
        kvg_simsrv_error(req, 404, "NotFoundError", msg);
        goto out;
    }
    if (check_body(s, req, j, &max_out) || !(c = conversation(s, req, j, &messages))) goto out;
    char *text = cJSON_PrintUnformatted(c);
    int rc =
        text ? kvg__simsrv_chat_ids(s, text, strlen(text), &ids, &nids, msg, sizeof msg) : -ENOMEM;
    cJSON_free(text);
    if (rc) {
        kvg_simsrv_error(req, 400, "BadRequestError", msg[0] ? msg : "cannot render the input");
        goto out;
    }
    if (nids >= s->max_model_len || !nids) {
        snprintf(msg, sizeof msg,
                 "The engine prompt length %zu exceeds the max_model_len %u. Please reduce prompt.",
                 nids, s->max_model_len);
        kvg__simsrv_error_param(req, 400, "invalid_request_error", msg, "input");
        goto out;
    }
    /* vLLM caps max_output_tokens at what the context leaves, no error */
    int64_t max_tokens = (int64_t)s->max_model_len - (int64_t)nids;
    if (max_out >= 0 && max_out < max_tokens) max_tokens = max_out;
    if (max_tokens < 1) {
        kvg__simsrv_error_param(req, 400, "BadRequestError",
                                "max_tokens must be at least 1, got 0.", "max_output_tokens");
        goto out;
    }
    struct resp *st = calloc(1, sizeof *st);
    if (!st) {
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        goto out;
    }
    const cJSON *store = cJSON_GetObjectItemCaseSensitive(j, "store");
    const cJSON *salt = cJSON_GetObjectItemCaseSensitive(j, "cache_salt");
    int bg = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "background"));
    *st = (struct resp){.body = j,
                        .messages = messages,
                        .store = s->store && !cJSON_IsFalse(store),
                        .background = bg,
                        .created = (int64_t)kvg_wall_s(),
                        .max_tokens = (uint32_t)max_tokens};
    char rid[40] = "resp_";
    kvg__simsrv_hex_id(s, rid + 5);
    struct kvg_simsrv_gen g = {.req = bg ? NULL : req, /* a background response: no client */
                               .rk = rk,
                               .lora = lora,
                               .stream =
                                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")),
                               .ids = ids,
                               .nids = nids,
                               .max_tokens = (uint32_t)max_tokens,
                               .seed = -1,
                               .salt = cJSON_IsString(salt) ? salt->valuestring : NULL,
                               .rid = rid,
                               .out = &resp_out,
                               .ext = st};
    ids = NULL; /* the request's now, whatever happens */
    struct sim_req *r = kvg__simsrv_req_new(s, &g);
    if (!r) {
        free(st);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        goto out;
    }
    j = NULL, messages = NULL; /* the answer's state's now */
    if (bg) {                  /* answered at once, queued; GET follows it, cancel stops it */
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        response_object(&b, r, st, r->rid, "queued");
        store_status(r, "queued");
        st->bg_next = s->bg;
        s->bg = r;
        kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
    }
    kvg__simsrv_req_start(r);
out:
    free(ids);
    cJSON_free(messages);
    cJSON_Delete(c);
    cJSON_Delete(j);
}

/* GET (what = 0), DELETE (1), POST .../cancel (2) of /v1/responses/{id}. */
void kvg__simsrv_response_id(struct kvg_simsrv_server *s, struct kvg_http_req *req, const char *id,
                             size_t idlen, int what)
{
    struct kvg_simsrv_stored old;
    struct sim_req *running = background(s, id, idlen);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (kvg__simsrv_store_get(s->store, id, idlen, &old)) {
        not_found(req, id, idlen);
    } else if (what == 0) {
        kvg_http_res_send(req, 200, "application/json", NULL, 0, old.response, old.rlen);
    } else if (what == 2 && running) { /* vLLM's cancel: kept as cancelled, its run aborted */
        response_object(&b, running, running->ext, running->rid, "cancelled");
        store_status(running, "cancelled");
        kvg__simsrv_req_drop(running);
        kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
    } else if (what == 2) { /* finished: only a queued or running one can be cancelled */
        kvg__simsrv_error_param(req, 400, "invalid_request_error",
                                "Cannot cancel a synchronous response.", "response_id");
    } else {
        if (running) kvg__simsrv_req_drop(running);
        kvg_buf_append_str(&b, "{\"id\":");
        kvg_buf_append_json_str(&b, id, idlen);
        kvg_buf_append_str(&b, ",\"object\":\"response\",\"deleted\":true}");
        kvg__simsrv_store_del(s->store, id, idlen);
        kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
    }
    kvg_buf_free(&b);
}
