/* A whole chat completions answer as the Responses object or the Messages
 * answer, for an engine without those endpoints, in the shapes vLLM's own
 * endpoints answer with (docs/api-translation.md); and the pieces of those
 * shapes the stream translator (sse_xlate.c) shares: item ids, output
 * items, the Responses object, usage. */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/json.h"

void kvg__api_item_id(char *out, size_t cap, const char *prefix, const struct kvg_api_xctx *x,
                      int index)
{
    const char *u = strchr(x->id, '_');
    int n = snprintf(out, cap, "%s_%s_%d", prefix, u ? u + 1 : x->id, index);
    /* kvgate makes x->id; still, an id is written unescaped into events */
    for (int i = 0; i < n && (size_t)i < cap - 1; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", out[i]))
            out[i] = '_';
}

void kvg__api_signature(char out[33], const struct kvg_api_xctx *x, int index)
{
    uint64_t h = kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, x->id);
    uint64_t g = kvg_hash_fnv1a64(h ^ 0x9e3779b97f4a7c15ull, &index, sizeof(index));
    h = kvg_hash_fnv1a64(h, &index, sizeof(index));
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h, (unsigned long long)g);
}

const char *kvg__api_stop_reason(const char *finish)
{
    if (!strcmp(finish, "stop")) return "end_turn";
    if (!strcmp(finish, "length")) return "max_tokens";
    if (!strcmp(finish, "tool_calls")) return "tool_use";
    return NULL;
}

static int cstr(struct kvg_buf *out, const char *s)
{
    return kvg_buf_append_json_str(out, s, strlen(s));
}

int kvg__api_item_reasoning(struct kvg_buf *out, const char *id, const char *text, size_t len)
{
    int rc;
    if ((rc = kvg_buf_append_str(out, "{\"id\":")) || (rc = cstr(out, id)) ||
        (rc = kvg_buf_append_str(out, ",\"summary\":[],\"type\":\"reasoning\",\"content\":"
                                      "[{\"text\":")) ||
        (rc = kvg_buf_append_json_str(out, text, len)))
        return rc;
    return kvg_buf_append_str(out, ",\"type\":\"reasoning_text\"}],\"status\":\"completed\"}");
}

int kvg__api_item_message(struct kvg_buf *out, const char *id, const char *text, size_t len)
{
    int rc;
    if ((rc = kvg_buf_append_str(out, "{\"id\":")) || (rc = cstr(out, id)) ||
        (rc = kvg_buf_append_str(out, ",\"type\":\"message\",\"role\":\"assistant\","
                                      "\"content\":[{\"type\":\"output_text\",\"text\":")) ||
        (rc = kvg_buf_append_json_str(out, text, len)))
        return rc;
    return kvg_buf_append_str(out,
                              ",\"annotations\":[],\"logprobs\":[]}],\"status\":\"completed\"}");
}

int kvg__api_call_name(const struct kvg_api_xctx *x, const char *flat, size_t n, const char **ns,
                       size_t *ns_len, const char **name, size_t *name_len)
{
    const struct kvg_buf *m = x->namespaces;
    *name = flat, *name_len = n;
    for (size_t at = 0; m && at < m->len;) {
        const char *e = m->data + at;
        size_t el = strlen(e), fl = strlen(e + el + 1);
        if (el + 2 + fl == n && !memcmp(flat, e, el) && !memcmp(flat + el, "__", 2) &&
            !memcmp(flat + el + 2, e + el + 1, fl)) {
            *ns = e, *ns_len = el;
            *name = e + el + 1, *name_len = fl;
            return 1;
        }
        at += el + fl + 2;
    }
    return 0;
}

int kvg__api_item_call(struct kvg_buf *out, const struct kvg_api_xctx *x, const char *id,
                       const char *call_id, size_t call_id_len, const char *name, size_t name_len,
                       const char *args, size_t args_len, const char *status)
{
    const char *ns = NULL;
    size_t nsl = 0;
    int rc, spaced = kvg__api_call_name(x, name, name_len, &ns, &nsl, &name, &name_len);
    if ((rc = kvg_buf_append_str(out, "{\"id\":")) || (rc = cstr(out, id)) ||
        (rc = kvg_buf_append_str(out, ",\"type\":\"function_call\",\"call_id\":")) ||
        (rc = kvg_buf_append_json_str(out, call_id, call_id_len)) ||
        (spaced && ((rc = kvg_buf_append_str(out, ",\"namespace\":")) ||
                    (rc = kvg_buf_append_json_str(out, ns, nsl)))) ||
        (rc = kvg_buf_append_str(out, ",\"name\":")) ||
        (rc = kvg_buf_append_json_str(out, name, name_len)) ||
        (rc = kvg_buf_append_str(out, ",\"arguments\":")) ||
        (rc = kvg_buf_append_json_str(out, args, args_len)) ||
        (rc = kvg_buf_append_str(out, ",\"status\":")) || (rc = cstr(out, status)))
        return rc;
    return kvg_buf_append(out, "}", 1);
}

int kvg__api_resp_object(struct kvg_buf *out, const struct kvg_api_xctx *x, const char *status,
                         const char *items, size_t items_len, const struct kvg__api_usage *u)
{
    int rc;
    if ((rc = kvg_buf_append_str(out, "{\"id\":")) || (rc = cstr(out, x->id)) ||
        (rc = kvg_buf_append_str(out, ",\"object\":\"response\",\"created_at\":")) ||
        (rc = kvg_buf_printf(out, "%lld", (long long)x->created)) ||
        (rc = kvg_buf_append_str(out, ",\"status\":")) || (rc = cstr(out, status)) ||
        (rc = kvg_buf_append_str(out, ",\"error\":null,\"incomplete_details\":")) ||
        (rc = kvg_buf_append_str(
             out, strcmp(status, "incomplete") ? "null" : "{\"reason\":\"max_output_tokens\"}")) ||
        (rc = kvg_buf_append_str(out, ",\"model\":")) || (rc = cstr(out, x->model)) ||
        (rc = kvg_buf_append_str(out, ",\"output\":[")) ||
        (rc = kvg_buf_append(out, items, items_len)) ||
        (rc = kvg_buf_append_str(out, "],\"parallel_tool_calls\":true,\"tool_choice\":\"auto\","
                                      "\"tools\":[],\"usage\":")))
        return rc;
    if (!u) return kvg_buf_append_str(out, "null}");
    return kvg_buf_printf(
        out,
        "{\"input_tokens\":%lld,\"input_tokens_details\":{\"cached_tokens\":%lld},"
        "\"output_tokens\":%lld,\"output_tokens_details\":{\"reasoning_tokens\":"
        "%lld},\"total_tokens\":%lld}}",
        (long long)u->input, (long long)u->cached, (long long)u->output, (long long)u->reasoning,
        (long long)(u->input + u->output));
}

int kvg__api_msg_usage(struct kvg_buf *out, const struct kvg__api_usage *u)
{
    return kvg_buf_printf(out, "{\"input_tokens\":%lld,\"output_tokens\":%lld}",
                          (long long)u->input, (long long)u->output);
}

/* ------------------------------------------------------ whole answers */

static int64_t num_at(const cJSON *obj, const char *key)
{
    const cJSON *n = kvg__api_get(obj, key);
    return cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble < 9e18
               ? (int64_t)n->valuedouble
               : 0;
}

/* What both answers take from the chat answer's first choice. */
struct chat_ans {
    const cJSON *content, *reasoning, *calls;
    char finish[24];
    struct kvg__api_usage u;
};

static int read_chat(const cJSON *root, struct chat_ans *a)
{
    const cJSON *choices = kvg__api_get(root, "choices"), *usage = kvg__api_get(root, "usage");
    const cJSON *c0 = cJSON_IsArray(choices) ? choices->child : NULL;
    const cJSON *msg = kvg__api_get(c0, "message"), *fin = kvg__api_get(c0, "finish_reason");
    memset(a, 0, sizeof(*a));
    if (!cJSON_IsObject(msg)) return KVG_EPARSE;
    a->content = kvg__api_get(msg, "content");
    a->reasoning = kvg__api_get(msg, "reasoning");
    if (!cJSON_IsString(a->reasoning)) a->reasoning = kvg__api_get(msg, "reasoning_content");
    if (!cJSON_IsString(a->content)) a->content = NULL;
    if (!cJSON_IsString(a->reasoning)) a->reasoning = NULL;
    a->calls = kvg__api_get(msg, "tool_calls");
    if (!cJSON_IsArray(a->calls)) a->calls = NULL;
    if (cJSON_IsString(fin) && fin->valuestring)
        snprintf(a->finish, sizeof(a->finish), "%s", fin->valuestring);
    a->u.input = num_at(usage, "prompt_tokens");
    a->u.output = num_at(usage, "completion_tokens");
    a->u.cached = num_at(kvg__api_get(usage, "prompt_tokens_details"), "cached_tokens");
    a->u.reasoning = num_at(kvg__api_get(usage, "completion_tokens_details"), "reasoning_tokens");
    return 0;
}

static void call_parts(const cJSON *tc, const char **id, size_t *il, const char **name, size_t *nl,
                       const char **args, size_t *al)
{
    const cJSON *fn = kvg__api_get(tc, "function");
    *id = kvg_json_str(kvg__api_get(tc, "id"), il);
    *name = kvg_json_str(kvg__api_get(fn, "name"), nl);
    *args = kvg_json_str(kvg__api_get(fn, "arguments"), al);
    if (!*id) *id = "", *il = 0;
    if (!*name) *name = "", *nl = 0;
    if (!*args) *args = "", *al = 0;
}

static int responses_answer(const struct kvg_api_xctx *x, const struct chat_ans *a,
                            struct kvg_buf *out)
{
    struct kvg_buf items;
    char id[160];
    size_t n = 0;
    int rc = 0, idx = 0;
    const char *s;
    kvg_buf_init(&items, 0);
    if ((s = kvg_json_str(a->reasoning, &n)) && n) {
        kvg__api_item_id(id, sizeof(id), "rs", x, idx++);
        rc = kvg__api_item_reasoning(&items, id, s, n);
    }
    if (!rc && (s = kvg_json_str(a->content, &n)) && n) {
        kvg__api_item_id(id, sizeof(id), "msg", x, idx++);
        if (items.len) rc = kvg_buf_append(&items, ",", 1);
        if (!rc) rc = kvg__api_item_message(&items, id, s, n);
    }
    for (const cJSON *tc = a->calls ? a->calls->child : NULL; !rc && tc; tc = tc->next) {
        const char *cid, *name, *args;
        size_t cl, nl, al;
        call_parts(tc, &cid, &cl, &name, &nl, &args, &al);
        kvg__api_item_id(id, sizeof(id), "fc", x, idx++);
        if (items.len) rc = kvg_buf_append(&items, ",", 1);
        if (!rc) rc = kvg__api_item_call(&items, x, id, cid, cl, name, nl, args, al, "completed");
    }
    if (!rc)
        rc = kvg__api_resp_object(out, x, strcmp(a->finish, "length") ? "completed" : "incomplete",
                                  items.data ? items.data : "", items.len, &a->u);
    kvg_buf_free(&items);
    return rc;
}

/* A tool call's arguments as the tool_use block's input object ({} when
 * they are not one). */
static int write_input(struct kvg_buf *out, const char *args, size_t len)
{
    struct kvg_json_arena ar = {0};
    cJSON *t = len ? kvg_json_parse_in(&ar, args, len) : NULL;
    int rc = cJSON_IsObject(t) ? kvg__api_json(out, t) : kvg_buf_append_str(out, "{}");
    if (t) kvg_json_free(&ar, t);
    return rc;
}

static int messages_answer(const struct kvg_api_xctx *x, const struct chat_ans *a,
                           struct kvg_buf *out)
{
    size_t n = 0;
    int rc, nb = 0;
    const char *s, *stop = kvg__api_stop_reason(a->finish);
    char sig[33];
    if ((rc = kvg_buf_append_str(out, "{\"id\":")) || (rc = cstr(out, x->id)) ||
        (rc =
             kvg_buf_append_str(out, ",\"type\":\"message\",\"role\":\"assistant\",\"content\":[")))
        return rc;
    if ((s = kvg_json_str(a->reasoning, &n)) && n) {
        kvg__api_signature(sig, x, nb++);
        if ((rc = kvg_buf_append_str(out, "{\"type\":\"thinking\",\"thinking\":")) ||
            (rc = kvg_buf_append_json_str(out, s, n)) ||
            (rc = kvg_buf_printf(out, ",\"signature\":\"%s\"}", sig)))
            return rc;
    }
    if ((s = kvg_json_str(a->content, &n)) && n) {
        if ((nb++ && (rc = kvg_buf_append(out, ",", 1))) ||
            (rc = kvg_buf_append_str(out, "{\"type\":\"text\",\"text\":")) ||
            (rc = kvg_buf_append_json_str(out, s, n)) || (rc = kvg_buf_append(out, "}", 1)))
            return rc;
    }
    for (const cJSON *tc = a->calls ? a->calls->child : NULL; tc; tc = tc->next) {
        const char *cid, *name, *args;
        size_t cl, nl, al;
        call_parts(tc, &cid, &cl, &name, &nl, &args, &al);
        if ((nb++ && (rc = kvg_buf_append(out, ",", 1))) ||
            (rc = kvg_buf_append_str(out, "{\"type\":\"tool_use\",\"id\":")) ||
            (rc = kvg_buf_append_json_str(out, cid, cl)) ||
            (rc = kvg_buf_append_str(out, ",\"name\":")) ||
            (rc = kvg_buf_append_json_str(out, name, nl)) ||
            (rc = kvg_buf_append_str(out, ",\"input\":")) || (rc = write_input(out, args, al)) ||
            (rc = kvg_buf_append(out, "}", 1)))
            return rc;
    }
    if ((rc = kvg_buf_append_str(out, "],\"model\":")) || (rc = cstr(out, x->model)) ||
        (rc = kvg_buf_append_str(out, ",\"stop_reason\":")) ||
        (rc = stop ? cstr(out, stop) : kvg_buf_append_str(out, "null")) ||
        (rc = kvg_buf_append_str(out, ",\"stop_sequence\":null,\"usage\":")) ||
        (rc = kvg__api_msg_usage(out, &a->u)))
        return rc;
    return kvg_buf_append(out, "}", 1);
}

int kvg_api_answer_from_chat(const struct kvg_api_xctx *x, const char *chat, size_t len,
                             struct kvg_buf *out)
{
    struct kvg_json_arena ar = {0};
    struct chat_ans a;
    size_t mark = out->len;
    cJSON *root = kvg_json_parse_in(&ar, chat, len);
    int rc = root && !read_chat(root, &a) ? 0 : KVG_EPARSE;
    if (!rc && x->kind == KVG_API_RESPONSES)
        rc = responses_answer(x, &a, out);
    else if (!rc && x->kind == KVG_API_MESSAGES)
        rc = messages_answer(x, &a, out);
    else if (!rc)
        rc = KVG_EPARSE;
    if (root) kvg_json_free(&ar, root);
    if (rc) out->len = mark;
    return rc;
}
