/* An Anthropic Messages request as the chat completions request vLLM
 * renders it as (docs/api-translation.md): every system text (the `system`
 * member's string or text blocks, then the texts of role "system" messages
 * inside `messages`, Claude Code's per-release billing header block left
 * out) joined into one leading system message; each other message with its
 * blocks: text and image as content parts (one text alone as a plain
 * string), thinking as the message's reasoning, tool_use as tool_calls,
 * a user's tool_result as a tool message before it (its images as a user
 * message after that). Custom tools become function tools (input_schema as
 * parameters), server tools are dropped. */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

#define BILLING "x-anthropic-billing-header"

struct mctx {
    struct kvg_buf *out;
    struct kvg_api_err *err;
    size_t nmsg;
    size_t mi; /* the message being written */
    char path[64], base[64];
};

/* A base path: base itself, or (NULL) the content of message c->mi, made
 * only for an error (a long conversation has hundreds of messages). */
static const char *base_of(struct mctx *c, const char *base)
{
    return base ? base : kvg__api_path(c->base, sizeof(c->base), "messages", c->mi, "content");
}

/* The parameter path "<base>[j].<leaf>" of a block, for an error. */
static const char *at(struct mctx *c, const char *base, size_t j, const char *leaf)
{
    return kvg__api_path(c->path, sizeof(c->path), base_of(c, base), j, leaf);
}

static int starts_with(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && !memcmp(s, lit, l);
}

static int msg_sep(struct mctx *c)
{
    return c->nmsg++ ? kvg_buf_append(c->out, ",", 1) : 0;
}

static int block_type_err(struct mctx *c, const char *base, size_t j, const cJSON *type)
{
    return kvg__api_fail(c->err, at(c, base, j, "type"), "unsupported content block type '%.40s'",
                         cJSON_IsString(type) && type->valuestring ? type->valuestring : "");
}

/* The text blocks of a system prompt, appended raw to sys (*last: the
 * string node of the last one); a block that is not an object with a
 * string type is refused. */
static int system_blocks(struct mctx *c, const cJSON *blocks, const char *base, struct kvg_buf *sys,
                         int *nparts, const cJSON **last)
{
    size_t j = 0;
    int rc;
    for (const cJSON *b = blocks->child; b; b = b->next, j++) {
        const cJSON *type = kvg__api_get(b, "type"), *text = kvg__api_get(b, "text");
        if (!cJSON_IsObject(b) || !cJSON_IsString(type)) return block_type_err(c, base, j, type);
        if (!kvg__api_str_is(type, "text")) continue; /* the engine keeps text blocks only */
        size_t n = 0;
        const char *s = kvg_json_str(text, &n);
        if (text && !s)
            return kvg__api_fail(c->err, at(c, base, j, "text"),
                                 "a text block's 'text' must be a string");
        if (!s || !n || starts_with(s, n, BILLING)) continue;
        if ((rc = kvg_buf_append(sys, s, n))) return rc;
        (*nparts)++;
        *last = text;
    }
    return 0;
}

/* The one system message, from `system` and the role "system" messages. A
 * system prompt of one part is written as its string node (under
 * kvg_api_to_chat_refs, a placeholder: not escaped, not read back). */
static int write_system(struct mctx *c, const cJSON *body, const cJSON *msgs)
{
    struct kvg_buf sys;
    int rc = 0, nparts = 0;
    char base[64];
    const cJSON *system = kvg__api_get(body, "system"), *last = NULL;
    kvg_buf_init(&sys, 0);
    if (cJSON_IsString(system)) {
        size_t n = 0;
        const char *s = kvg_json_str(system, &n);
        if (n && !(rc = kvg_buf_append(&sys, s, n))) nparts++, last = system;
    } else if (cJSON_IsArray(system)) {
        rc = system_blocks(c, system, "system", &sys, &nparts, &last);
    } else if (system) {
        rc = kvg__api_fail(c->err, "system", "'system' must be a string or an array of blocks");
    }
    size_t i = 0;
    for (const cJSON *m = msgs->child; !rc && m; m = m->next, i++) {
        const cJSON *content = kvg__api_get(m, "content");
        if (!kvg__api_str_is(kvg__api_get(m, "role"), "system")) continue;
        kvg__api_path(base, sizeof(base), "messages", i, "content");
        if (cJSON_IsString(content)) {
            size_t n = 0;
            const char *s = kvg_json_str(content, &n);
            if (!(rc = kvg_buf_append(&sys, s, n))) nparts++, last = content;
        } else if (cJSON_IsArray(content)) {
            rc = system_blocks(c, content, base, &sys, &nparts, &last);
        } else {
            rc = kvg__api_fail(c->err, base, "'%s' must be a string or an array of blocks", base);
        }
    }
    if (!rc && nparts && !(rc = msg_sep(c)) &&
        !(rc = kvg_buf_append_str(c->out, "{\"role\":\"system\",\"content\":")) &&
        !(rc = nparts == 1 ? kvg__api_str(c->out, last)
                           : kvg__api_text(c->out, sys.data ? sys.data : "", sys.len)))
        rc = kvg_buf_append(c->out, "}", 1);
    kvg_buf_free(&sys);
    return rc;
}

/* An image block's source as the URL the engine fetches or decodes. */
static int image_part(struct kvg_buf *o, const cJSON *src)
{
    int rc;
    if ((rc = kvg_buf_append_str(o, "{\"type\":\"image_url\",\"image_url\":{\"url\":"))) return rc;
    if (kvg__api_str_is(kvg__api_get(src, "type"), "url")) {
        const cJSON *u = kvg__api_get(src, "url");
        rc = kvg__api_str(o, cJSON_IsString(u) ? u : NULL);
    } else {
        struct kvg_buf url;
        size_t ml = 0, dl = 0;
        const char *mt = kvg_json_str(kvg__api_get(src, "media_type"), &ml);
        const char *data = kvg_json_str(kvg__api_get(src, "data"), &dl);
        kvg_buf_init(&url, 0);
        if (!mt) mt = "image/jpeg", ml = strlen(mt);
        if (!(rc = kvg_buf_append_str(&url, "data:")) && !(rc = kvg_buf_append(&url, mt, ml)) &&
            !(rc = kvg_buf_append_str(&url, ";base64,")) &&
            !(rc = kvg_buf_append(&url, data ? data : "", data ? dl : 0)))
            rc = kvg__api_text(o, url.data, url.len);
        kvg_buf_free(&url);
    }
    return rc ? rc : kvg_buf_append_str(o, "}}");
}

/* The parts of one message being assembled. */
struct parts {
    struct kvg_buf content; /* content parts, JSON members */
    size_t nparts;
    int media;              /* a part is not text: the array form stays */
    size_t one_at, one_end; /* the first part's text, as a JSON string in content */
    struct kvg_buf calls;   /* tool_calls members, JSON */
    struct kvg_buf rs;      /* reasoning, raw */
    int has_rs;
};

/* A text part: the string node t, or (t NULL) the bytes s[0, n); the
 * first one's place is kept (a lone text part is the message's plain
 * string content). */
static int add_text_part(struct parts *p, const cJSON *t, const char *s, size_t n)
{
    int rc;
    if ((p->nparts && (rc = kvg_buf_append(&p->content, ",", 1))) ||
        (rc = kvg_buf_append_str(&p->content, "{\"type\":\"text\",\"text\":")))
        return rc;
    size_t at = p->content.len;
    if ((rc = t ? kvg__api_str(&p->content, t) : kvg__api_text(&p->content, s, n)) ||
        (rc = kvg_buf_append(&p->content, "}", 1)))
        return rc;
    if (!p->nparts++) p->one_at = at, p->one_end = p->content.len - 1;
    return 0;
}

static int tool_use(struct mctx *c, struct parts *p, const cJSON *b, const char *base, size_t j)
{
    const cJSON *id = kvg__api_get(b, "id"), *name = kvg__api_get(b, "name");
    const cJSON *input = kvg__api_get(b, "input");
    struct kvg_buf *o = &p->calls;
    int rc;
    if (!cJSON_IsString(id) || !cJSON_IsString(name))
        return kvg__api_fail(c->err, at(c, base, j, cJSON_IsString(id) ? "name" : "id"),
                             "a tool_use block needs a string 'id' and 'name'");
    if (input && !cJSON_IsObject(input))
        return kvg__api_fail(c->err, at(c, base, j, "input"),
                             "a tool_use block's 'input' must be an object");
    struct kvg_buf args;
    kvg_buf_init(&args, 0);
    rc = input ? kvg__api_json_plain(&args, input) : kvg_buf_append_str(&args, "{}");
    if (!rc && !((o->len && (rc = kvg_buf_append(o, ",", 1))) ||
                 (rc = kvg_buf_append_str(o, "{\"id\":")) || (rc = kvg__api_str(o, id)) ||
                 (rc = kvg_buf_append_str(o, ",\"type\":\"function\",\"function\":{\"name\":")) ||
                 (rc = kvg__api_str(o, name)) || (rc = kvg_buf_append_str(o, ",\"arguments\":"))))
        if (!(rc = kvg__api_text(o, args.data ? args.data : "", args.len)))
            rc = kvg_buf_append_str(o, "}}");
    kvg_buf_free(&args);
    return rc;
}

/* A tool_result's content as the engine flattens it: a string as is, text
 * blocks joined by newlines (into text), image blocks as image parts
 * (into images, JSON members, counted in *nimg). */
static int result_text(struct mctx *c, const cJSON *content, const char *base, size_t j,
                       struct kvg_buf *text, struct kvg_buf *images, size_t *nimg,
                       const cJSON **whole)
{
    size_t n = 0, k = 0, ntext = 0;
    int rc;
    const char *s = kvg_json_str(content, &n);
    *whole = s ? content : NULL;
    if (s) return kvg_buf_append(text, s, n);
    if (!content) return 0;
    if (!cJSON_IsArray(content))
        return kvg__api_fail(c->err, at(c, base, j, "content"),
                             "a tool_result's content must be a string or an array of blocks");
    for (const cJSON *b = content->child; b; b = b->next, k++) {
        const cJSON *type = kvg__api_get(b, "type");
        if (kvg__api_str_is(type, "text")) {
            s = kvg_json_str(kvg__api_get(b, "text"), &n);
            *whole = ntext ? NULL : s ? kvg__api_get(b, "text") : NULL;
            if ((ntext++ && (rc = kvg_buf_append(text, "\n", 1))) ||
                (rc = kvg_buf_append(text, s ? s : "", s ? n : 0)))
                return rc;
        } else if (kvg__api_str_is(type, "image")) {
            const cJSON *src = kvg__api_get(b, "source");
            if (!cJSON_IsObject(src)) continue;
            if ((*nimg)++ && (rc = kvg_buf_append(images, ",", 1))) return rc;
            if ((rc = image_part(images, src))) return rc;
        } else if (!kvg__api_str_is(type, "tool_reference") && !kvg__api_str_is(type, "document") &&
                   !kvg__api_str_is(type, "search_result")) {
            /* the engine skips what it cannot read inside a result */
            char inner[64];
            kvg__api_path(inner, sizeof(inner), base_of(c, base), j, "content");
            return block_type_err(c, inner, k, type);
        }
    }
    return 0;
}

static int tool_result(struct mctx *c, struct parts *p, const cJSON *b, int user, const char *base,
                       size_t j)
{
    struct kvg_buf text, images;
    size_t nimg = 0;
    const cJSON *id = kvg__api_get(b, "tool_use_id");
    int rc;
    if (id && !cJSON_IsString(id))
        return kvg__api_fail(c->err, at(c, base, j, "tool_use_id"),
                             "a tool_result's tool_use_id must be a string");
    kvg_buf_init(&text, 0);
    kvg_buf_init(&images, 0);
    /* whole: the one string node the text is, written as a node (no copy
     * under kvg_api_to_chat_refs: a tool's output can be a whole file). */
    const cJSON *whole = NULL;
    if ((rc = result_text(c, kvg__api_get(b, "content"), base, j, &text, &images, &nimg, &whole)))
        goto out;
    if (!user) { /* an assistant's tool result is text of its own message */
        struct kvg_buf t;
        kvg_buf_init(&t, 0);
        if (!(rc = kvg_buf_append_str(&t, "Tool result: ")) &&
            !(rc = kvg_buf_append(&t, text.data, text.len)))
            rc = add_text_part(p, NULL, t.data, t.len);
        kvg_buf_free(&t);
        goto out;
    }
    if ((rc = msg_sep(c)) ||
        (rc = kvg_buf_append_str(c->out, "{\"role\":\"tool\",\"tool_call_id\":")) ||
        (rc = id ? kvg__api_str(c->out, id) : kvg_buf_append_str(c->out, "\"\"")) ||
        (rc = kvg_buf_append_str(c->out, ",\"content\":")) ||
        (rc = whole ? kvg__api_str(c->out, whole)
                    : kvg__api_text(c->out, text.data ? text.data : "", text.len)) ||
        (rc = kvg_buf_append(c->out, "}", 1)))
        goto out;
    if (nimg && ((rc = msg_sep(c)) ||
                 (rc = kvg_buf_append_str(c->out, "{\"role\":\"user\",\"content\":[")) ||
                 (rc = kvg_buf_append(c->out, images.data, images.len)) ||
                 (rc = kvg_buf_append_str(c->out, "]}"))))
        goto out;
out:
    kvg_buf_free(&text);
    kvg_buf_free(&images);
    return rc;
}

static int block(struct mctx *c, struct parts *p, const cJSON *b, int user, const char *base,
                 size_t j)
{
    const cJSON *type = kvg__api_get(b, "type");
    int rc;
    if (!cJSON_IsObject(b) || !cJSON_IsString(type)) return block_type_err(c, base, j, type);
    if (kvg__api_str_is(type, "text")) {
        const cJSON *t = kvg__api_get(b, "text");
        size_t n = 0;
        if (t && !cJSON_IsString(t))
            return kvg__api_fail(c->err, at(c, base, j, "text"),
                                 "a text block's 'text' must be a string");
        const char *ts = kvg_json_str(t, &n);
        return ts && n ? add_text_part(p, t, ts, n) : 0;
    }
    if (kvg__api_str_is(type, "image")) {
        const cJSON *src = kvg__api_get(b, "source");
        if (!cJSON_IsObject(src)) return 0;
        if ((p->nparts && (rc = kvg_buf_append(&p->content, ",", 1))) ||
            (rc = image_part(&p->content, src)))
            return rc;
        p->nparts++;
        p->media = 1;
        return 0;
    }
    if (kvg__api_str_is(type, "thinking")) {
        size_t n = 0;
        const char *s = kvg_json_str(kvg__api_get(b, "thinking"), &n);
        if (!s) return 0;
        p->has_rs = 1;
        return kvg_buf_append(&p->rs, s, n);
    }
    if (kvg__api_str_is(type, "tool_use")) return tool_use(c, p, b, base, j);
    if (kvg__api_str_is(type, "tool_result")) return tool_result(c, p, b, user, base, j);
    if (kvg__api_str_is(type, "redacted_thinking") || kvg__api_str_is(type, "tool_reference"))
        return 0; /* opaque to the engine: accepted and skipped */
    return block_type_err(c, base, j, type);
}

static int write_message(struct mctx *c, const cJSON *m, size_t i, struct parts *p)
{
    const cJSON *role = kvg__api_get(m, "role"), *content = kvg__api_get(m, "content");
    int rc;
    /* Claude Code's own roles "ctx" and "msg" are user turns to the engine */
    int user = kvg__api_str_is(role, "user") || kvg__api_str_is(role, "ctx") ||
               kvg__api_str_is(role, "msg");
    if (!cJSON_IsObject(m))
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "messages", i, NULL),
                             "message %zu must be an object", i);
    if (kvg__api_str_is(role, "system")) return 0; /* in the leading system message */
    if (!user && !kvg__api_str_is(role, "assistant"))
        return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "messages", i, "role"),
                             "message %zu: role must be user, assistant or system", i);
    c->mi = i;
    if (cJSON_IsString(content)) {
        if ((rc = msg_sep(c)) || (rc = kvg_buf_append_str(c->out, "{\"role\":")) ||
            (rc = kvg_buf_append_str(c->out, user ? "\"user\"" : "\"assistant\"")) ||
            (rc = kvg_buf_append_str(c->out, ",\"content\":")) ||
            (rc = kvg__api_str(c->out, content)))
            return rc;
        return kvg_buf_append(c->out, "}", 1);
    }
    if (!cJSON_IsArray(content)) {
        const char *base = base_of(c, NULL);
        return kvg__api_fail(c->err, base, "'%s' must be a string or an array of blocks", base);
    }
    kvg_buf_reset(&p->content);
    kvg_buf_reset(&p->calls);
    kvg_buf_reset(&p->rs);
    p->nparts = 0;
    p->media = 0;
    p->has_rs = 0;
    size_t j = 0;
    for (const cJSON *b = content->child; b; b = b->next, j++)
        if ((rc = block(c, p, b, user, NULL, j))) return rc;
    if (user && !p->nparts) return 0; /* only tool results: their tool messages stand */
    if ((rc = msg_sep(c)) || (rc = kvg_buf_append_str(c->out, "{\"role\":")) ||
        (rc = kvg_buf_append_str(c->out, user ? "\"user\"" : "\"assistant\"")))
        return rc;
    if (p->nparts == 1 && !p->media) {
        if ((rc = kvg_buf_append_str(c->out, ",\"content\":")) ||
            (rc = kvg_buf_append(c->out, p->content.data + p->one_at, p->one_end - p->one_at)))
            return rc;
    } else if (p->nparts && ((rc = kvg_buf_append_str(c->out, ",\"content\":[")) ||
                             (rc = kvg_buf_append(c->out, p->content.data, p->content.len)) ||
                             (rc = kvg_buf_append(c->out, "]", 1)))) {
        return rc;
    }
    if (p->has_rs && ((rc = kvg_buf_append_str(c->out, ",\"reasoning\":")) ||
                      (rc = kvg__api_text(c->out, p->rs.data ? p->rs.data : "", p->rs.len))))
        return rc;
    if (p->calls.len && ((rc = kvg_buf_append_str(c->out, ",\"tool_calls\":[")) ||
                         (rc = kvg_buf_append(c->out, p->calls.data, p->calls.len)) ||
                         (rc = kvg_buf_append(c->out, "]", 1))))
        return rc;
    return kvg_buf_append(c->out, "}", 1);
}

static int write_messages(struct mctx *c, const cJSON *msgs)
{
    struct parts p = {0};
    int rc = 0;
    size_t i = 0;
    kvg_buf_init(&p.content, 0);
    kvg_buf_init(&p.calls, 0);
    kvg_buf_init(&p.rs, 0);
    for (const cJSON *m = msgs->child; !rc && m; m = m->next, i++) rc = write_message(c, m, i, &p);
    kvg_buf_free(&p.content);
    kvg_buf_free(&p.calls);
    kvg_buf_free(&p.rs);
    return rc;
}

/* An input_schema as the engine passes it on: "type":"object" added last
 * when it names no type. */
static int write_schema(struct kvg_buf *o, const cJSON *schema)
{
    int rc = kvg__api_json(o, schema);
    if (rc || cJSON_GetObjectItemCaseSensitive(schema, "type")) return rc;
    o->len--; /* the closing brace */
    return kvg_buf_append_str(o, schema->child ? ",\"type\":\"object\"}" : "\"type\":\"object\"}");
}

/* Custom tools as function tools; a tool with another type (bash,
 * web_search, text_editor...: run by Anthropic's servers) has no chat form. */
static int write_tools(struct mctx *c, const cJSON *body)
{
    struct kvg_buf *o = c->out;
    const cJSON *tools = kvg__api_get(body, "tools"), *tc = kvg__api_get(body, "tool_choice");
    size_t i = 0, n = 0;
    int rc;
    if (tools && !cJSON_IsArray(tools))
        return kvg__api_fail(c->err, "tools", "'tools' must be an array");
    if (tc && !cJSON_IsObject(tc))
        return kvg__api_fail(c->err, "tool_choice", "'tool_choice' must be an object");
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next, i++) {
        const cJSON *type = kvg__api_get(t, "type"), *name = kvg__api_get(t, "name");
        const cJSON *desc = kvg__api_get(t, "description"),
                    *schema = kvg__api_get(t, "input_schema");
        if (!cJSON_IsObject(t))
            return kvg__api_fail(c->err, kvg__api_path(c->path, sizeof(c->path), "tools", i, NULL),
                                 "each tool must be an object");
        if (type && !kvg__api_str_is(type, "custom")) continue;
        if (!cJSON_IsString(name))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), "tools", i, "name"),
                                 "a tool needs a string 'name'");
        if (!cJSON_IsObject(schema))
            return kvg__api_fail(
                c->err, kvg__api_path(c->path, sizeof(c->path), "tools", i, "input_schema"),
                "a tool needs an 'input_schema' object");
        if (desc && !cJSON_IsString(desc))
            return kvg__api_fail(c->err,
                                 kvg__api_path(c->path, sizeof(c->path), "tools", i, "description"),
                                 "a tool's description must be a string");
        if ((rc = kvg_buf_append_str(o, n++ ? "," : ",\"tools\":[")) ||
            (rc = kvg_buf_append_str(o, "{\"type\":\"function\",\"function\":{\"name\":")) ||
            (rc = kvg__api_str(o, name)))
            return rc;
        if (desc && ((rc = kvg__api_key(o, ',', "description")) || (rc = kvg__api_str(o, desc))))
            return rc;
        if ((rc = kvg__api_key(o, ',', "parameters")) || (rc = write_schema(o, schema)) ||
            (rc = kvg_buf_append_str(o, "}}")))
            return rc;
    }
    if (n && (rc = kvg_buf_append(o, "]", 1))) return rc;
    const cJSON *type = kvg__api_get(tc, "type"), *name = kvg__api_get(tc, "name");
    const char *choice = "\"auto\""; /* the engine's default once tools are given */
    if (tc && kvg__api_str_is(type, "any"))
        choice = "\"required\"";
    else if (tc && kvg__api_str_is(type, "none"))
        choice = "\"none\"";
    else if (tc && kvg__api_str_is(type, "tool")) {
        if (!cJSON_IsString(name))
            return kvg__api_fail(c->err, "tool_choice.name",
                                 "tool_choice.name is required when tool_choice.type is 'tool'");
        choice = NULL;
    } else if (tc && !kvg__api_str_is(type, "auto"))
        return kvg__api_fail(c->err, "tool_choice.type",
                             "tool_choice.type must be auto, any, tool or none");
    if (!n) return 0; /* tool_choice without tools is refused by chat engines */
    if ((rc = kvg_buf_append_str(o, ",\"tool_choice\":"))) return rc;
    if (choice)
        rc = kvg_buf_append_str(o, choice);
    else if (!(rc = kvg_buf_append_str(o, "{\"type\":\"function\",\"function\":{\"name\":")) &&
             !(rc = kvg__api_str(o, name)))
        rc = kvg_buf_append_str(o, "}}");
    if (rc) return rc;
    if (cJSON_IsTrue(kvg__api_get(tc, "disable_parallel_tool_use")))
        rc = kvg_buf_append_str(o, ",\"parallel_tool_calls\":false");
    return rc;
}

/* max_tokens, stop_sequences, temperature, top_p, top_k, output_config's
 * effort, stream: each type-checked. */
static int write_sampling(struct mctx *c, const cJSON *body)
{
    struct kvg_buf *o = c->out;
    const cJSON *mt = kvg__api_get(body, "max_tokens"),
                *stop = kvg__api_get(body, "stop_sequences");
    int rc;
    if (!kvg__api_is_int(mt) || mt->valuedouble < 1)
        return kvg__api_fail(c->err, "max_tokens", "max_tokens: must be an integer of at least 1");
    if ((rc = kvg__api_key(o, ',', "max_tokens")) || (rc = kvg__api_num(o, mt->valuedouble)))
        return rc;
    if (stop) {
        if (!cJSON_IsArray(stop))
            return kvg__api_fail(c->err, "stop_sequences",
                                 "stop_sequences must be an array of strings");
        for (const cJSON *s = stop->child; s; s = s->next)
            if (!cJSON_IsString(s))
                return kvg__api_fail(c->err, "stop_sequences",
                                     "stop_sequences must be an array of strings");
        if ((rc = kvg__api_key(o, ',', "stop")) || (rc = kvg__api_json(o, stop))) return rc;
    }
    static const struct {
        const char *key;
        int integer;
    } nums[] = {{"temperature", 0}, {"top_p", 0}, {"top_k", 1}};
    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        const cJSON *v = kvg__api_get(body, nums[k].key);
        if (!v) continue;
        if (nums[k].integer ? !kvg__api_is_int(v) : !cJSON_IsNumber(v))
            return kvg__api_fail(c->err, nums[k].key, "%s: must be %s", nums[k].key,
                                 nums[k].integer ? "an integer" : "a number");
        if ((rc = kvg__api_key(o, ',', nums[k].key)) || (rc = kvg__api_num(o, v->valuedouble)))
            return rc;
    }
    const cJSON *oc = kvg__api_get(body, "output_config");
    const cJSON *effort = kvg__api_get(oc, "effort");
    if (cJSON_IsString(effort) &&
        ((rc = kvg__api_key(o, ',', "reasoning_effort")) || (rc = kvg__api_str(o, effort))))
        return rc;
    const cJSON *stream = kvg__api_get(body, "stream");
    if (stream && !cJSON_IsBool(stream))
        return kvg__api_fail(c->err, "stream", "stream: must be a boolean");
    if (cJSON_IsTrue(stream))
        return kvg_buf_append_str(o,
                                  ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    return stream ? kvg_buf_append_str(o, ",\"stream\":false") : 0;
}

int kvg__api_messages_to_chat(const cJSON *body, int count_tokens, struct kvg_buf *out,
                              struct kvg_api_err *err)
{
    struct mctx c = {.out = out, .err = err};
    const cJSON *model = kvg__api_get(body, "model"), *msgs = kvg__api_get(body, "messages");
    int rc;
    if (model && !cJSON_IsString(model))
        return kvg__api_fail(err, "model", "model: Input should be a valid string");
    if (!cJSON_IsArray(msgs))
        return kvg__api_fail(err, "messages", "messages: an array of messages is required");
    if (!count_tokens && !kvg__api_get(body, "max_tokens"))
        return kvg__api_fail(err, "max_tokens", "max_tokens: Field required");
    for (const cJSON *m = msgs->child; m; m = m->next)
        if (!cJSON_IsObject(m)) {
            size_t i = 0;
            for (const cJSON *k = msgs->child; k != m; k = k->next) i++;
            return kvg__api_fail(err, kvg__api_path(c.path, sizeof(c.path), "messages", i, NULL),
                                 "message %zu must be an object", i);
        }
    if ((rc = kvg_buf_append(out, "{", 1))) return rc;
    if (model && ((rc = kvg__api_key(out, 0, "model")) || (rc = kvg__api_str(out, model)) ||
                  (rc = kvg_buf_append(out, ",", 1))))
        return rc;
    if ((rc = kvg_buf_append_str(out, "\"messages\":[")) || (rc = write_system(&c, body, msgs)) ||
        (rc = write_messages(&c, msgs)) || (rc = kvg_buf_append(out, "]", 1)))
        return rc;
    if ((rc = write_tools(&c, body))) return rc;
    if (!count_tokens && (rc = write_sampling(&c, body))) return rc;
    return kvg_buf_append(out, "}", 1);
}
