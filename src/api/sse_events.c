/* The events of a translated stream, in the shapes vLLM's own /v1/responses
 * and /v1/messages stream (docs/api-translation.md), each framed as
 * "event: <type>\ndata: <json>\n\n":
 *   Responses: response.created, response.in_progress; per output item
 *     output_item.added, content_part.added (reasoning_text / output_text),
 *     the deltas (reasoning_text, output_text, function_call_arguments),
 *     their .done events, content_part.done, output_item.done; then
 *     response.completed with the whole object and usage. Every event has
 *     its sequence_number.
 *   Messages: message_start (usage.input_tokens as far as known), per block
 *     content_block_start, content_block_delta (thinking_delta, text_delta,
 *     input_json_delta; a thinking block ends with a signature_delta),
 *     content_block_stop; then message_delta (stop_reason, usage) and
 *     message_stop. */
#include <string.h>

#include "api/sse_int.h"
#include "base/err.h"

static int is_resp(const struct kvg_api_sse_xlate *t)
{
    return t->x.kind == KVG_API_RESPONSES;
}

/* "event: <type>\ndata: {"type":"<type>"" (and the sequence number). */
static int head(struct kvg_api_sse_xlate *t, struct kvg_buf *out, const char *type)
{
    int rc = kvg_buf_printf(out, "event: %s\ndata: {\"type\":\"%s\"", type, type);
    if (rc || !is_resp(t)) return rc;
    return kvg_buf_printf(out, ",\"sequence_number\":%lld", (long long)t->seq++);
}

static int tail(struct kvg_buf *out)
{
    return kvg_buf_append_str(out, "}\n\n");
}

static void open_id(const struct kvg_api_sse_xlate *t, char *id, size_t cap)
{
    static const char *prefix[] = {"rs", "msg", "fc"};
    kvg__api_item_id(id, cap, prefix[t->block], &t->x, t->nblocks - 1);
}

static struct kvg__api_usage usage_of(const struct kvg_api_sse_xlate *t)
{
    return (struct kvg__api_usage){t->input_tokens, t->output_tokens, t->cached_tokens,
                                   t->reasoning_tokens};
}

int kvg__xl_start(struct kvg_api_sse_xlate *t, struct kvg_buf *out)
{
    int rc;
    t->state |= KVG__XL_STARTED;
    if (!is_resp(t)) {
        if ((rc = head(t, out, "message_start")) ||
            (rc = kvg_buf_append_str(out, ",\"message\":{\"id\":")) ||
            (rc = kvg_buf_append_json_str(out, t->x.id, strlen(t->x.id))) ||
            (rc = kvg_buf_append_str(out, ",\"type\":\"message\",\"role\":\"assistant\","
                                          "\"content\":[],\"model\":")) ||
            (rc = kvg_buf_append_json_str(out, t->x.model, strlen(t->x.model))) ||
            (rc = kvg_buf_printf(out,
                                 ",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"
                                 "{\"input_tokens\":%lld,\"output_tokens\":0}}",
                                 (long long)t->input_tokens)))
            return rc;
        return tail(out);
    }
    static const char *types[] = {"response.created", "response.in_progress"};
    for (int i = 0; i < 2; i++)
        if ((rc = head(t, out, types[i])) || (rc = kvg_buf_append_str(out, ",\"response\":")) ||
            (rc = kvg__api_resp_object(out, &t->x, "in_progress", "", 0, NULL)) || (rc = tail(out)))
            return rc;
    return 0;
}

static int resp_open(struct kvg_api_sse_xlate *t, const char *id, int idx, struct kvg_buf *out)
{
    int rc;
    if ((rc = head(t, out, "response.output_item.added")) ||
        (rc = kvg_buf_printf(out, ",\"output_index\":%d,\"item\":", idx)))
        return rc;
    if (t->block == KVG__XL_TOOL)
        return (rc = kvg__api_item_call(out, &t->x, id, t->call.data, t->call_split,
                                        t->call.data + t->call_split, t->call.len - t->call_split,
                                        "", 0, "in_progress"))
                   ? rc
                   : tail(out);
    if ((rc = kvg_buf_printf(out,
                             t->block == KVG__XL_THINK
                                 ? "{\"id\":\"%s\",\"summary\":[],\"type\":\"reasoning\","
                                   "\"status\":\"in_progress\"}"
                                 : "{\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\","
                                   "\"content\":[],\"status\":\"in_progress\"}",
                             id)) ||
        (rc = tail(out)) || (rc = head(t, out, "response.content_part.added")))
        return rc;
    if ((rc = kvg_buf_printf(out,
                             t->block == KVG__XL_THINK
                                 ? ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                                   "\"part\":{\"type\":\"reasoning_text\",\"text\":\"\"}"
                                 : ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                                   "\"part\":{\"type\":\"output_text\",\"text\":\"\","
                                   "\"annotations\":[],\"logprobs\":[]}",
                             id, idx)))
        return rc;
    return tail(out);
}

static int msg_open(struct kvg_api_sse_xlate *t, int idx, struct kvg_buf *out)
{
    int rc;
    if ((rc = head(t, out, "content_block_start")) ||
        (rc = kvg_buf_printf(out, ",\"index\":%d,\"content_block\":", idx)))
        return rc;
    if (t->block == KVG__XL_THINK)
        rc = kvg_buf_append_str(out, "{\"type\":\"thinking\",\"thinking\":\"\"}");
    else if (t->block == KVG__XL_TEXT)
        rc = kvg_buf_append_str(out, "{\"type\":\"text\",\"text\":\"\"}");
    else if (!(rc = kvg_buf_append_str(out, "{\"type\":\"tool_use\",\"id\":")) &&
             !(rc = kvg_buf_append_json_str(out, t->call.data, t->call_split)) &&
             !(rc = kvg_buf_append_str(out, ",\"name\":")) &&
             !(rc = kvg_buf_append_json_str(out, t->call.data + t->call_split,
                                            t->call.len - t->call_split)))
        rc = kvg_buf_append_str(out, ",\"input\":{}}");
    return rc ? rc : tail(out);
}

int kvg__xl_open(struct kvg_api_sse_xlate *t, int kind, struct kvg_buf *out)
{
    char id[160];
    int idx = t->nblocks++;
    t->block = kind;
    kvg_buf_reset(&t->text);
    if (!is_resp(t)) return msg_open(t, idx, out);
    open_id(t, id, sizeof(id));
    return resp_open(t, id, idx, out);
}

int kvg__xl_delta(struct kvg_api_sse_xlate *t, const char *s, size_t n, struct kvg_buf *out)
{
    static const char *resp_type[] = {"response.reasoning_text.delta", "response.output_text.delta",
                                      "response.function_call_arguments.delta"};
    static const char *msg_delta[] = {
        "{\"type\":\"thinking_delta\",\"thinking\":", "{\"type\":\"text_delta\",\"text\":",
        "{\"type\":\"input_json_delta\",\"partial_json\":"};
    char id[160];
    int rc, idx = t->nblocks - 1;
    if (!is_resp(t)) {
        if ((rc = head(t, out, "content_block_delta")) ||
            (rc = kvg_buf_printf(out, ",\"index\":%d,\"delta\":%s", idx, msg_delta[t->block])) ||
            (rc = kvg_buf_append_json_str(out, s, n)) || (rc = kvg_buf_append(out, "}", 1)))
            return rc;
        return tail(out);
    }
    if ((rc = kvg_buf_append(&t->text, s, n))) return rc; /* the .done events repeat it */
    open_id(t, id, sizeof(id));
    if ((rc = head(t, out, resp_type[t->block])) ||
        (rc = kvg_buf_printf(out, ",\"item_id\":\"%s\",\"output_index\":%d", id, idx)) ||
        (t->block != KVG__XL_TOOL && (rc = kvg_buf_append_str(out, ",\"content_index\":0"))) ||
        (rc = kvg_buf_append_str(out, ",\"delta\":")) ||
        (rc = kvg_buf_append_json_str(out, s, n)) ||
        (t->block == KVG__XL_TEXT && (rc = kvg_buf_append_str(out, ",\"logprobs\":[]"))))
        return rc;
    return tail(out);
}

/* A Responses item's .done events; the item joins t->tools. */
static int resp_close(struct kvg_api_sse_xlate *t, struct kvg_buf *out)
{
    char id[160];
    int rc, idx = t->nblocks - 1, think = t->block == KVG__XL_THINK;
    const char *tx = t->text.data ? t->text.data : "";
    size_t tl = t->text.len, at;
    open_id(t, id, sizeof(id));
    if (t->block == KVG__XL_TOOL) {
        const char *ns, *name;
        size_t nsl, nl;
        kvg__api_call_name(&t->x, t->call.data + t->call_split, t->call.len - t->call_split, &ns,
                           &nsl, &name, &nl);
        if ((rc = head(t, out, "response.function_call_arguments.done")) ||
            (rc = kvg_buf_printf(out, ",\"item_id\":\"%s\",\"output_index\":%d,\"name\":", id,
                                 idx)) ||
            (rc = kvg_buf_append_json_str(out, name, nl)) ||
            (rc = kvg_buf_append_str(out, ",\"arguments\":")) ||
            (rc = kvg_buf_append_json_str(out, tx, tl)) || (rc = tail(out)))
            return rc;
    } else {
        if ((rc = head(t, out,
                       think ? "response.reasoning_text.done" : "response.output_text.done")) ||
            (rc = kvg_buf_printf(out,
                                 ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                                 "\"text\":",
                                 id, idx)) ||
            (rc = kvg_buf_append_json_str(out, tx, tl)) ||
            (!think && (rc = kvg_buf_append_str(out, ",\"logprobs\":[]"))) || (rc = tail(out)) ||
            (rc = head(t, out, "response.content_part.done")) ||
            (rc = kvg_buf_printf(out,
                                 ",\"item_id\":\"%s\",\"output_index\":%d,\"content_index\":0,"
                                 "\"part\":{\"type\":\"%s\",\"text\":",
                                 id, idx, think ? "reasoning_text" : "output_text")) ||
            (rc = kvg_buf_append_json_str(out, tx, tl)) ||
            (rc = kvg_buf_append_str(out, think ? "}" : ",\"annotations\":[],\"logprobs\":[]}")) ||
            (rc = tail(out)))
            return rc;
    }
    if (t->tools.len && (rc = kvg_buf_append(&t->tools, ",", 1))) return rc;
    at = t->tools.len;
    if (think)
        rc = kvg__api_item_reasoning(&t->tools, id, tx, tl);
    else if (t->block == KVG__XL_TEXT)
        rc = kvg__api_item_message(&t->tools, id, tx, tl);
    else
        rc = kvg__api_item_call(&t->tools, &t->x, id, t->call.data, t->call_split,
                                t->call.data + t->call_split, t->call.len - t->call_split, tx, tl,
                                "completed");
    if (rc || (rc = head(t, out, "response.output_item.done")) ||
        (rc = kvg_buf_printf(out, ",\"output_index\":%d,\"item\":", idx)) ||
        (rc = kvg_buf_append(out, t->tools.data + at, t->tools.len - at)))
        return rc;
    return tail(out);
}

int kvg__xl_close(struct kvg_api_sse_xlate *t, struct kvg_buf *out)
{
    int rc, idx = t->nblocks - 1;
    if (t->block == KVG__XL_NONE) return 0;
    if (is_resp(t)) {
        rc = resp_close(t, out);
    } else {
        rc = 0;
        if (t->block == KVG__XL_THINK) {
            char sig[33];
            kvg__api_signature(sig, &t->x, idx);
            if (!(rc = head(t, out, "content_block_delta")))
                rc = kvg_buf_printf(out,
                                    ",\"index\":%d,\"delta\":{\"type\":\"signature_delta\","
                                    "\"signature\":\"%s\"}",
                                    idx, sig);
            if (!rc) rc = tail(out);
        }
        if (!rc && !(rc = head(t, out, "content_block_stop")) &&
            !(rc = kvg_buf_printf(out, ",\"index\":%d", idx)))
            rc = tail(out);
    }
    t->block = KVG__XL_NONE;
    kvg_buf_reset(&t->text);
    return rc;
}

int kvg__xl_finish(struct kvg_api_sse_xlate *t, struct kvg_buf *out)
{
    struct kvg__api_usage u = usage_of(t);
    int rc;
    if (!(t->state & KVG__XL_STARTED) && (rc = kvg__xl_start(t, out))) return rc;
    if ((rc = kvg__xl_close(t, out))) return rc;
    t->state |= KVG__XL_DONE;
    if (is_resp(t)) {
        if ((rc = head(t, out, "response.completed")) ||
            (rc = kvg_buf_append_str(out, ",\"response\":")) ||
            (rc = kvg__api_resp_object(out, &t->x,
                                       strcmp(t->finish, "length") ? "completed" : "incomplete",
                                       t->tools.data ? t->tools.data : "", t->tools.len, &u)))
            return rc;
        return tail(out);
    }
    const char *stop = kvg__api_stop_reason(t->finish[0] ? t->finish : "stop");
    if ((rc = head(t, out, "message_delta")) ||
        (rc = kvg_buf_append_str(out, ",\"delta\":{\"stop_reason\":")) ||
        (rc = stop ? kvg_buf_printf(out, "\"%s\"", stop) : kvg_buf_append_str(out, "null")) ||
        (rc = kvg_buf_append_str(out, ",\"stop_sequence\":null},\"usage\":")) ||
        (rc = kvg__api_msg_usage(out, &u)) || (rc = tail(out)) ||
        (rc = head(t, out, "message_stop")))
        return rc;
    return tail(out);
}

int kvg__xl_error(struct kvg_api_sse_xlate *t, const char *msg, struct kvg_buf *out)
{
    int rc;
    t->state |= KVG__XL_DONE;
    if ((rc = head(t, out, "error"))) return rc;
    if (is_resp(t)) {
        if ((rc = kvg_buf_append_str(out, ",\"code\":\"server_error\",\"message\":")) ||
            (rc = kvg_buf_append_json_str(out, msg, strlen(msg))) ||
            (rc = kvg_buf_append_str(out, ",\"param\":null")))
            return rc;
        return tail(out);
    }
    if ((rc = kvg_buf_append_str(out, ",\"error\":{\"type\":\"api_error\",\"message\":")) ||
        (rc = kvg_buf_append_json_str(out, msg, strlen(msg))) || (rc = kvg_buf_append(out, "}", 1)))
        return rc;
    return tail(out);
}
