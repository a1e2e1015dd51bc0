/* A Responses request as the chat completions request vLLM renders it as
 * (docs/api-translation.md): `instructions` a system message, a string
 * `input` one user message, message items with their own role (developer
 * stays developer), function_call items as tool_calls of an assistant
 * message, function_call_output items as tool messages, reasoning items as
 * the assistant's reasoning. Like the engine, an assistant item joins the
 * assistant message just before it when that one lacks what it brings
 * (reasoning, then text, then any number of tool calls make one turn).
 * Tools: function tools, namespace tools flattened ("<namespace>__<name>"),
 * `additional_tools` input items as more tools; hosted tools are dropped. */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

/* The assistant message being assembled: the previous message, while it is
 * an assistant's. Its strings point into the request tree. */
struct pending {
    int on;
    const char *text, *rs;
    size_t text_len, rs_len;
    int has_text, has_rs;
    struct kvg_buf calls; /* the tool_calls array's members so far, JSON */
};

struct rctx {
    struct kvg_buf *out;
    struct kvg_api_err *err;
    size_t nmsg;          /* messages written */
    struct kvg_buf tools; /* the chat tools array's members, JSON */
    size_t ntools;
    struct pending pa;
    char path[64];
};

static int msg_open(struct rctx *c, const char *role)
{
    int rc;
    if (c->nmsg++ && (rc = kvg_buf_append(c->out, ",", 1))) return rc;
    if ((rc = kvg_buf_append_str(c->out, "{\"role\":"))) return rc;
    return kvg__api_text(c->out, role, strlen(role));
}

static int flush_pending(struct rctx *c)
{
    struct pending *p = &c->pa;
    int rc;
    if (!p->on) return 0;
    p->on = 0;
    if ((rc = msg_open(c, "assistant"))) return rc;
    if (p->has_text && ((rc = kvg__api_key(c->out, ',', "content")) ||
                        (rc = kvg__api_text(c->out, p->text, p->text_len))))
        return rc;
    if (p->has_rs && ((rc = kvg__api_key(c->out, ',', "reasoning")) ||
                      (rc = kvg__api_text(c->out, p->rs, p->rs_len))))
        return rc;
    if (p->calls.len && ((rc = kvg_buf_append_str(c->out, ",\"tool_calls\":[")) ||
                         (rc = kvg_buf_append(c->out, p->calls.data, p->calls.len)) ||
                         (rc = kvg_buf_append(c->out, "]", 1))))
        return rc;
    kvg_buf_reset(&p->calls);
    p->has_text = p->has_rs = 0;
    return kvg_buf_append(c->out, "}", 1);
}

/* A string member that must be there. */
static const cJSON *need_str(struct rctx *c, const cJSON *item, size_t i, const char *key, int *rc)
{
    const cJSON *v = kvg__api_get(item, key);
    if (cJSON_IsString(v)) return v;
    *rc = kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, key),
                        "input item %zu: '%s' must be a string", i, key);
    return NULL;
}

/* One content part of a message item as a chat content part. */
static int write_part(struct rctx *c, const cJSON *p, const char *base, size_t j)
{
    struct kvg_buf *o = c->out;
    const cJSON *type = kvg__api_get(p, "type");
    int rc;
    if (!cJSON_IsObject(p) || !cJSON_IsString(type))
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), base, j, "type"),
                             "a content part must be an object with a string 'type'");
    if (kvg__api_str_is(type, "input_text") || kvg__api_str_is(type, "output_text") ||
        kvg__api_str_is(type, "text")) {
        const cJSON *t = kvg__api_get(p, "text");
        if (!cJSON_IsString(t))
            return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), base, j, "text"),
                                 "a text part needs a string 'text'");
        if ((rc = kvg_buf_append_str(o, "{\"type\":\"text\",\"text\":")) ||
            (rc = kvg__api_str(o, t)))
            return rc;
        return kvg_buf_append(o, "}", 1);
    }
    if (kvg__api_str_is(type, "input_image")) {
        const cJSON *u = kvg__api_get(p, "image_url"), *d = kvg__api_get(p, "detail");
        if (!cJSON_IsString(u))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), base, j, "image_url"),
                                 "an input_image part needs an 'image_url' (file ids are not "
                                 "supported)");
        if ((rc = kvg_buf_append_str(o, "{\"type\":\"image_url\",\"image_url\":{\"url\":")) ||
            (rc = kvg__api_str(o, u)))
            return rc;
        if (cJSON_IsString(d) &&
            ((rc = kvg__api_key(o, ',', "detail")) || (rc = kvg__api_str(o, d))))
            return rc;
        return kvg_buf_append_str(o, "}}");
    }
    if (kvg__api_str_is(type, "input_audio")) {
        const cJSON *a = kvg__api_get(p, "input_audio");
        if (!cJSON_IsObject(a))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), base, j, "input_audio"),
                                 "an input_audio part needs an 'input_audio' object");
        if ((rc = kvg_buf_append_str(o, "{\"type\":\"input_audio\",\"input_audio\":")) ||
            (rc = kvg__api_json(o, a)))
            return rc;
        return kvg_buf_append(o, "}", 1);
    }
    if (kvg__api_str_is(type, "refusal")) {
        const cJSON *t = kvg__api_get(p, "refusal");
        if (!cJSON_IsString(t))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), base, j, "refusal"),
                                 "a refusal part needs a string 'refusal'");
        if ((rc = kvg_buf_append_str(o, "{\"type\":\"refusal\",\"refusal\":")) ||
            (rc = kvg__api_str(o, t)))
            return rc;
        return kvg_buf_append(o, "}", 1);
    }
    return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), base, j, "type"),
                         "unsupported content part type '%.40s'",
                         type->valuestring ? type->valuestring : "");
}

/* A message's content (a string or parts) as chat content; path names it. */
static int write_content(struct rctx *c, const cJSON *content, const char *path)
{
    int rc;
    char base[64];
    if (cJSON_IsString(content)) return kvg__api_str(c->out, content);
    if (!cJSON_IsArray(content))
        return kvg__api_fail(c->err, path, "'%s' must be a string or an array of parts", path);
    snprintf(base, sizeof(base), "%s", path);
    if ((rc = kvg_buf_append(c->out, "[", 1))) return rc;
    size_t j = 0;
    for (const cJSON *p = content->child; p; p = p->next, j++) {
        if (j && (rc = kvg_buf_append(c->out, ",", 1))) return rc;
        if ((rc = write_part(c, p, base, j))) return rc;
    }
    return kvg_buf_append(c->out, "]", 1);
}

/* The first part's text, as the engine takes an assistant item's text. */
static void first_text(const cJSON *content, const char **s, size_t *len)
{
    const cJSON *t = content;
    if (cJSON_IsArray(content)) t = kvg__api_get(content->child, "text");
    *s = kvg_json_str(t, len);
    if (!*s) *s = "", *len = 0;
}

static int item_message(struct rctx *c, const cJSON *item, size_t i)
{
    const cJSON *role = kvg__api_get(item, "role"), *content = kvg__api_get(item, "content");
    int rc;
    char path[64];
    if (kvg__api_str_is(role, "assistant")) {
        struct pending *p = &c->pa;
        if (p->on && p->has_text) {
            if ((rc = flush_pending(c))) return rc;
        }
        p->on = p->has_text = 1;
        first_text(content, &p->text, &p->text_len);
        return 0;
    }
    if (!kvg__api_str_is(role, "user") && !kvg__api_str_is(role, "system") &&
        !kvg__api_str_is(role, "developer"))
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, "role"),
                             "input item %zu: role must be user, assistant, system or developer",
                             i);
    if (!content)
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, "content"),
                             "input item %zu: a message needs 'content'", i);
    kvg__api_path(path, sizeof(path), "input", i, "content");
    if ((rc = flush_pending(c)) || (rc = msg_open(c, role->valuestring)) ||
        (rc = kvg__api_key(c->out, ',', "content")) || (rc = write_content(c, content, path)))
        return rc;
    return kvg_buf_append(c->out, "}", 1);
}

static int item_function_call(struct rctx *c, const cJSON *item, size_t i)
{
    int rc = 0;
    const cJSON *id = need_str(c, item, i, "call_id", &rc);
    const cJSON *name = id ? need_str(c, item, i, "name", &rc) : NULL;
    const cJSON *args = name ? need_str(c, item, i, "arguments", &rc) : NULL;
    const cJSON *ns = kvg__api_get(item, "namespace");
    if (!args) return rc;
    struct pending *p = &c->pa;
    struct kvg_buf *o = &p->calls;
    p->on = 1;
    if ((o->len && (rc = kvg_buf_append(o, ",", 1))) || (rc = kvg_buf_append_str(o, "{\"id\":")) ||
        (rc = kvg__api_str(o, id)) ||
        (rc = kvg_buf_append_str(o, ",\"type\":\"function\",\"function\":{\"name\":")))
        return rc;
    if (cJSON_IsString(ns)) {
        struct kvg_buf flat;
        size_t nl = 0, ml = 0;
        const char *n = kvg_json_str(ns, &nl), *m = kvg_json_str(name, &ml);
        kvg_buf_init(&flat, 0);
        if (!(rc = kvg_buf_append(&flat, n, nl)) && !(rc = kvg_buf_append(&flat, "__", 2)) &&
            !(rc = kvg_buf_append(&flat, m, ml)))
            rc = kvg__api_text(o, flat.data, flat.len);
        kvg_buf_free(&flat);
        if (rc) return rc;
    } else if ((rc = kvg__api_str(o, name))) {
        return rc;
    }
    if ((rc = kvg_buf_append_str(o, ",\"arguments\":")) || (rc = kvg__api_str(o, args))) return rc;
    return kvg_buf_append_str(o, "}}");
}

static int item_function_output(struct rctx *c, const cJSON *item, size_t i)
{
    int rc = 0;
    char path[64];
    const cJSON *id = need_str(c, item, i, "call_id", &rc);
    const cJSON *output = kvg__api_get(item, "output");
    if (!id) return rc;
    if (!output)
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, "output"),
                             "input item %zu: function_call_output needs 'output'", i);
    kvg__api_path(path, sizeof(path), "input", i, "output");
    if ((rc = flush_pending(c)) || (rc = msg_open(c, "tool")) ||
        (rc = kvg__api_key(c->out, ',', "content")) || (rc = write_content(c, output, path)) ||
        (rc = kvg__api_key(c->out, ',', "tool_call_id")) || (rc = kvg__api_str(c->out, id)))
        return rc;
    return kvg_buf_append(c->out, "}", 1);
}

/* The reasoning text the engine reads from an item: its first content
 * part's, else its first summary part's (encrypted_content is opaque). */
static int item_reasoning(struct rctx *c, const cJSON *item)
{
    const cJSON *content = kvg__api_get(item, "content"), *summary = kvg__api_get(item, "summary");
    const cJSON *t = NULL;
    int rc;
    if (cJSON_IsArray(content) && content->child)
        t = kvg__api_get(content->child, "text");
    else if (cJSON_IsArray(summary) && summary->child)
        t = kvg__api_get(summary->child, "text");
    struct pending *p = &c->pa;
    if (p->on && p->has_rs && (rc = flush_pending(c))) return rc;
    p->on = p->has_rs = 1;
    p->rs = kvg_json_str(t, &p->rs_len);
    if (!p->rs) p->rs = "", p->rs_len = 0;
    return 0;
}

/* One Responses tool as chat function tools (none for a hosted tool). */
static int add_function(struct rctx *c, const cJSON *t, const cJSON *ns, const char *path)
{
    struct kvg_buf *o = &c->tools;
    char p2[64];
    const cJSON *name = kvg__api_get(t, "name"), *desc = kvg__api_get(t, "description");
    const cJSON *params = kvg__api_get(t, "parameters"), *strict = kvg__api_get(t, "strict");
    int rc;
    if (!cJSON_IsString(name))
        return kvg__api_fail(c->err, (snprintf(p2, sizeof(p2), "%s.name", path), p2),
                             "a function tool needs a string 'name'");
    if ((desc && !cJSON_IsString(desc)) || (params && !cJSON_IsObject(params)) ||
        (strict && !cJSON_IsBool(strict)))
        return kvg__api_fail(c->err, path,
                             "a function tool's description must be a string, parameters an "
                             "object, strict a boolean");
    if ((c->ntools++ && (rc = kvg_buf_append(o, ",", 1))) ||
        (rc = kvg_buf_append_str(o, "{\"type\":\"function\",\"function\":{\"name\":")))
        return rc;
    if (ns) {
        size_t nl = 0, ml = 0;
        const char *a = kvg_json_str(ns, &nl), *b = kvg_json_str(name, &ml);
        struct kvg_buf flat;
        kvg_buf_init(&flat, 0);
        if (!(rc = kvg_buf_append(&flat, a, nl)) && !(rc = kvg_buf_append(&flat, "__", 2)) &&
            !(rc = kvg_buf_append(&flat, b, ml)))
            rc = kvg__api_text(o, flat.data, flat.len);
        kvg_buf_free(&flat);
    } else {
        rc = kvg__api_str(o, name);
    }
    if (rc) return rc;
    if (desc && ((rc = kvg__api_key(o, ',', "description")) || (rc = kvg__api_str(o, desc))))
        return rc;
    if (params && ((rc = kvg__api_key(o, ',', "parameters")) || (rc = kvg__api_json(o, params))))
        return rc;
    if (strict && ((rc = kvg__api_key(o, ',', "strict")) || (rc = kvg__api_json(o, strict))))
        return rc;
    return kvg_buf_append_str(o, "}}");
}

static int add_tools(struct rctx *c, const cJSON *tools, const char *base)
{
    char path[64], sub[64];
    int rc;
    if (!cJSON_IsArray(tools)) return kvg__api_fail(c->err, base, "'%s' must be an array", base);
    size_t i = 0;
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const cJSON *type = kvg__api_get(t, "type");
        kvg__api_path(path, sizeof(path), base, i, NULL);
        if (!cJSON_IsObject(t) || !cJSON_IsString(type))
            return kvg__api_fail(c->err, path, "each tool must be an object with a string 'type'");
        if (kvg__api_str_is(type, "function")) {
            if ((rc = add_function(c, t, NULL, path))) return rc;
        } else if (kvg__api_str_is(type, "namespace")) {
            const cJSON *ns = kvg__api_get(t, "name"), *fns = kvg__api_get(t, "tools");
            kvg__api_path(sub, sizeof(sub), base, i, "tools");
            if (!cJSON_IsString(ns) || !cJSON_IsArray(fns))
                return kvg__api_fail(c->err, path,
                                     "a namespace tool needs a string 'name' and a 'tools' array");
            size_t j = 0;
            for (const cJSON *f = fns->child; f; f = f->next, j++) {
                kvg__api_path(path, sizeof(path), sub, j, NULL);
                if (!cJSON_IsObject(f))
                    return kvg__api_fail(c->err, path, "each tool must be an object");
                if (kvg__api_str_is(kvg__api_get(f, "type"), "function") &&
                    (rc = add_function(c, f, ns, path)))
                    return rc;
            }
        }
        /* web_search, file_search, custom, mcp...: hosted or free-form, no chat form */
    }
    return 0;
}

static int write_items(struct rctx *c, const cJSON *input)
{
    int rc;
    size_t i = 0;
    if (!cJSON_IsArray(input))
        return kvg__api_fail(c->err, "input", "'input' must be a string or an array");
    for (const cJSON *it = input->child; it; it = it->next, i++) {
        const cJSON *type = kvg__api_get(it, "type");
        if (!cJSON_IsObject(it))
            return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, NULL),
                                 "input item %zu must be an object", i);
        if (type && !cJSON_IsString(type))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), "input", i, "type"),
                                 "input item %zu: 'type' must be a string", i);
        if (!type || kvg__api_str_is(type, "message"))
            rc = item_message(c, it, i);
        else if (kvg__api_str_is(type, "function_call"))
            rc = item_function_call(c, it, i);
        else if (kvg__api_str_is(type, "function_call_output"))
            rc = item_function_output(c, it, i);
        else if (kvg__api_str_is(type, "reasoning"))
            rc = item_reasoning(c, it);
        else if (kvg__api_str_is(type, "additional_tools")) {
            char base[64];
            kvg__api_path(base, sizeof(base), "input", i, "tools");
            rc = add_tools(c, kvg__api_get(it, "tools"), base);
        } else
            rc = kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "input", i, "type"),
                               "unsupported input item type '%.40s'",
                               type->valuestring ? type->valuestring : "");
        if (rc) return rc;
    }
    return flush_pending(c);
}

static int write_tool_choice(struct rctx *c, const cJSON *tc)
{
    struct kvg_buf *o = c->out;
    int rc;
    if (cJSON_IsString(tc)) {
        if (!kvg__api_str_is(tc, "auto") && !kvg__api_str_is(tc, "none") &&
            !kvg__api_str_is(tc, "required"))
            return kvg__api_fail(c->err, "tool_choice",
                                 "tool_choice must be auto, none, required or an object");
        return (rc = kvg__api_key(o, ',', "tool_choice")) ? rc : kvg__api_str(o, tc);
    }
    if (!cJSON_IsObject(tc))
        return kvg__api_fail(c->err, "tool_choice", "tool_choice must be a string or an object");
    const cJSON *name = kvg__api_get(tc, "name");
    if (!kvg__api_str_is(kvg__api_get(tc, "type"), "function"))
        return 0; /* hosted, allowed_tools */
    if (!cJSON_IsString(name))
        return kvg__api_fail(c->err, "tool_choice.name", "a function tool_choice needs a 'name'");
    if ((rc = kvg_buf_append_str(
             o, ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":")) ||
        (rc = kvg__api_str(o, name)))
        return rc;
    return kvg_buf_append_str(o, "}}");
}

/* text.format as the chat response_format. */
static int write_format(struct rctx *c, const cJSON *text)
{
    struct kvg_buf *o = c->out;
    const cJSON *f = kvg__api_get(text, "format");
    int rc;
    if (!cJSON_IsObject(text)) return kvg__api_fail(c->err, "text", "'text' must be an object");
    if (!f) return 0;
    const cJSON *type = kvg__api_get(f, "type");
    if (kvg__api_str_is(type, "json_object"))
        return kvg_buf_append_str(o, ",\"response_format\":{\"type\":\"json_object\"}");
    if (!kvg__api_str_is(type, "json_schema")) return 0;
    const cJSON *name = kvg__api_get(f, "name"), *schema = kvg__api_get(f, "schema");
    const cJSON *strict = kvg__api_get(f, "strict");
    if (!cJSON_IsObject(schema))
        return kvg__api_fail(c->err, "text.format.schema", "a json_schema format needs 'schema'");
    if ((rc = kvg_buf_append_str(o, ",\"response_format\":{\"type\":\"json_schema\","
                                    "\"json_schema\":{\"name\":")) ||
        (rc = cJSON_IsString(name) ? kvg__api_str(o, name) : kvg_buf_append_str(o, "\"schema\"")) ||
        (rc = kvg__api_key(o, ',', "schema")) || (rc = kvg__api_json(o, schema)))
        return rc;
    if (cJSON_IsBool(strict) &&
        ((rc = kvg__api_key(o, ',', "strict")) || (rc = kvg__api_json(o, strict))))
        return rc;
    return kvg_buf_append_str(o, "}}");
}

/* The sampling members with a chat equivalent, each type-checked. */
static int write_sampling(struct rctx *c, const cJSON *body)
{
    static const struct {
        const char *from, *to;
        int integer;
    } nums[] = {{"max_output_tokens", "max_tokens", 1},
                {"temperature", "temperature", 0},
                {"top_p", "top_p", 0},
                {"top_k", "top_k", 1}};
    struct kvg_buf *o = c->out;
    int rc;
    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        const cJSON *v = kvg__api_get(body, nums[k].from);
        if (!v) continue;
        if (nums[k].integer ? !kvg__api_is_int(v) : !cJSON_IsNumber(v))
            return kvg__api_fail(c->err, nums[k].from, "'%s' must be %s", nums[k].from,
                                 nums[k].integer ? "an integer" : "a number");
        if ((rc = kvg__api_key(o, ',', nums[k].to)) || (rc = kvg__api_num(o, v->valuedouble)))
            return rc;
    }
    const cJSON *r = kvg__api_get(body, "reasoning"), *text = kvg__api_get(body, "text");
    if (r && !cJSON_IsObject(r))
        return kvg__api_fail(c->err, "reasoning", "'reasoning' must be an object");
    const cJSON *effort = kvg__api_get(r, "effort");
    if (cJSON_IsString(effort) &&
        ((rc = kvg__api_key(o, ',', "reasoning_effort")) || (rc = kvg__api_str(o, effort))))
        return rc;
    if (text && (rc = write_format(c, text))) return rc;
    const cJSON *stream = kvg__api_get(body, "stream");
    if (stream && !cJSON_IsBool(stream))
        return kvg__api_fail(c->err, "stream", "'stream' must be a boolean");
    if (cJSON_IsTrue(stream))
        return kvg_buf_append_str(o,
                                  ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    return stream ? kvg_buf_append_str(o, ",\"stream\":false") : 0;
}

static int convert(struct rctx *c, const cJSON *body)
{
    struct kvg_buf *o = c->out;
    const cJSON *model = kvg__api_get(body, "model"), *ins = kvg__api_get(body, "instructions");
    const cJSON *input = kvg__api_get(body, "input"), *tools = kvg__api_get(body, "tools");
    const cJSON *tc = kvg__api_get(body, "tool_choice");
    const cJSON *ptc = kvg__api_get(body, "parallel_tool_calls");
    int rc;
    if (model && !cJSON_IsString(model))
        return kvg__api_fail(c->err, "model", "'model' must be a string");
    if (ins && !cJSON_IsString(ins))
        return kvg__api_fail(c->err, "instructions", "'instructions' must be a string");
    if (ptc && !cJSON_IsBool(ptc))
        return kvg__api_fail(c->err, "parallel_tool_calls",
                             "'parallel_tool_calls' must be a boolean");
    if (tools && (rc = add_tools(c, tools, "tools"))) return rc;
    if ((rc = kvg_buf_append(o, "{", 1))) return rc;
    if (model && ((rc = kvg__api_key(o, 0, "model")) || (rc = kvg__api_str(o, model)) ||
                  (rc = kvg_buf_append(o, ",", 1))))
        return rc;
    if ((rc = kvg_buf_append_str(o, "\"messages\":["))) return rc;
    size_t il = 0;
    if (kvg_json_str(ins, &il) && il &&
        ((rc = msg_open(c, "system")) || (rc = kvg__api_key(o, ',', "content")) ||
         (rc = kvg__api_str(o, ins)) || (rc = kvg_buf_append(o, "}", 1))))
        return rc;
    if (cJSON_IsString(input)) {
        if ((rc = msg_open(c, "user")) || (rc = kvg__api_key(o, ',', "content")) ||
            (rc = kvg__api_str(o, input)) || (rc = kvg_buf_append(o, "}", 1)))
            return rc;
    } else if (input && (rc = write_items(c, input))) {
        return rc;
    }
    if ((rc = kvg_buf_append(o, "]", 1))) return rc;
    /* A chat request naming tool_choice without tools is refused by the
     * engines: both go only when some tool has a chat form. */
    if (c->ntools) {
        if ((rc = kvg_buf_append_str(o, ",\"tools\":[")) ||
            (rc = kvg_buf_append(o, c->tools.data, c->tools.len)) ||
            (rc = kvg_buf_append(o, "]", 1)))
            return rc;
        if (tc && (rc = write_tool_choice(c, tc))) return rc;
        if (ptc &&
            ((rc = kvg__api_key(o, ',', "parallel_tool_calls")) || (rc = kvg__api_json(o, ptc))))
            return rc;
    } else if (tc && !cJSON_IsString(tc) && !cJSON_IsObject(tc)) {
        return kvg__api_fail(c->err, "tool_choice", "tool_choice must be a string or an object");
    }
    if ((rc = write_sampling(c, body))) return rc;
    return kvg_buf_append(o, "}", 1);
}

int kvg__api_responses_to_chat(const cJSON *body, struct kvg_buf *out, struct kvg_api_err *err)
{
    struct rctx c = {.out = out, .err = err};
    kvg_buf_init(&c.tools, 0);
    kvg_buf_init(&c.pa.calls, 0);
    int rc = convert(&c, body);
    kvg_buf_free(&c.tools);
    kvg_buf_free(&c.pa.calls);
    return rc;
}

/* The namespace functions of one tools array (a request's, or an
 * additional_tools item's), as add_tools flattens them. */
static int namespaces_of(const cJSON *tools, struct kvg_buf *out)
{
    int rc;
    for (const cJSON *t = cJSON_IsArray(tools) ? tools->child : NULL; t; t = t->next) {
        size_t nl = 0, fl = 0;
        const char *ns = kvg__api_str_is(kvg__api_get(t, "type"), "namespace")
                             ? kvg_json_str(kvg__api_get(t, "name"), &nl)
                             : NULL;
        const cJSON *fns = kvg__api_get(t, "tools");
        if (!ns || memchr(ns, 0, nl) || !cJSON_IsArray(fns)) continue;
        for (const cJSON *f = fns->child; f; f = f->next) {
            const char *fn = kvg__api_str_is(kvg__api_get(f, "type"), "function")
                                 ? kvg_json_str(kvg__api_get(f, "name"), &fl)
                                 : NULL;
            if (!fn || memchr(fn, 0, fl)) continue;
            if ((rc = kvg_buf_append(out, ns, nl)) || (rc = kvg_buf_append(out, "", 1)) ||
                (rc = kvg_buf_append(out, fn, fl)) || (rc = kvg_buf_append(out, "", 1)))
                return rc;
        }
    }
    return 0;
}

int kvg_api_namespaces(const cJSON *body, struct kvg_buf *out)
{
    int rc = namespaces_of(kvg__api_get(body, "tools"), out);
    const cJSON *input = kvg__api_get(body, "input");
    for (const cJSON *it = cJSON_IsArray(input) ? input->child : NULL; !rc && it; it = it->next)
        if (kvg__api_str_is(kvg__api_get(it, "type"), "additional_tools"))
            rc = namespaces_of(kvg__api_get(it, "tools"), out);
    return rc;
}
