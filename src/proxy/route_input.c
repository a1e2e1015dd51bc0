/* Route inputs; see route_input.h. */
#include "proxy/route_input.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "kv/hash.h"
#include "router/route_text.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

static int name_cmp(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key that appears twice in one object anywhere in the tree, or
 * NULL. cJSON reads the first of two equal keys where Python's json (the
 * engines') keeps the last: a body with a duplicate would have kvgate decide
 * on one value (the model a key may use, max_tokens, stream) and the engine
 * act on another. Small objects compare pairwise; large ones sort. */
static const char *duplicate_key(const cJSON *o)
{
    if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) return NULL;
    size_t n = 0;
    const cJSON *it;
    for (it = o->child; it; it = it->next) {
        const char *d = duplicate_key(it);
        if (d) return d;
        n++;
    }
    if (!cJSON_IsObject(o) || n < 2) return NULL;
    if (n <= 32) {
        for (it = o->child; it; it = it->next)
            for (const cJSON *b = it->next; b; b = b->next)
                if (!strcmp(it->string, b->string)) return it->string;
        return NULL;
    }
    const cJSON **v = malloc(n * sizeof *v);
    if (!v) return o->child->string; /* out of memory: refuse rather than guess */
    size_t k = 0;
    for (it = o->child; it; it = it->next) v[k++] = it;
    qsort(v, n, sizeof *v, name_cmp);
    const char *d = NULL;
    for (size_t i = 1; i < n && !d; i++)
        if (!strcmp(v[i - 1]->string, v[i]->string)) d = v[i]->string;
    free(v);
    return d;
}

static const char *json_kind(const cJSON *v)
{
    return cJSON_IsString(v)   ? "a string"
           : cJSON_IsBool(v)   ? "a boolean"
           : cJSON_IsArray(v)  ? "an array"
           : cJSON_IsObject(v) ? "an object"
                               : "a decimal";
}

/* max_tokens / max_completion_tokens: absent or null (*out -1), or a
 * non-negative integer. Anything else is the client's error, named as
 * OpenAI names it: the quota reserves what the field says, so kvgate must
 * read it as the engine will, not skip what it cannot read. */
static int max_tokens_field(struct kvg_rinput *ri, const cJSON *j, const char *name, int64_t *out,
                            char *msg, size_t msglen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    *out = -1;
    if (!v || cJSON_IsNull(v)) return 0;
    ri->bad_param = name;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
        ri->bad_code = "invalid_type";
        snprintf(msg, msglen, "Invalid type for '%s': expected an integer, but got %s instead.",
                 name, json_kind(v));
        return KVG_EPARSE;
    }
    if (v->valuedouble < 0) {
        ri->bad_code = "integer_below_min_value";
        snprintf(msg, msglen,
                 "Invalid '%s': integer below minimum value. Expected a value >= 0, but got %.0f "
                 "instead.",
                 name, v->valuedouble);
        return KVG_EPARSE;
    }
    ri->bad_param = ri->bad_code = NULL;
    *out = v->valuedouble > 4e9 ? 4000000000 : (int64_t)v->valuedouble;
    return 0;
}

static int bad_shape(struct kvg_rinput *ri, const char *code, char *msg, size_t msglen,
                     const char *fmt, const char *what)
{
    ri->bad_param = ri->bad_param_buf;
    ri->bad_code = code;
    snprintf(msg, msglen, fmt, ri->bad_param_buf, what);
    return KVG_EPARSE;
}

static int is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= 0;
}

/* One chat message as the OpenAI API takes it: a role it knows, and the
 * content that role requires (an assistant's may be left out when it calls
 * tools). Refused here, such a message never reaches an engine, where
 * llama.cpp answers it with a 500 that looks like the engine's failure. */
static int message_shape(struct kvg_rinput *ri, const cJSON *m, const char *role, int i, char *msg,
                         size_t msglen)
{
    static const char *const roles[] = {"system", "user",      "assistant",
                                        "tool",   "developer", "function"};
    char *pb = ri->bad_param_buf;
    size_t r = 0;
    while (r < sizeof roles / sizeof *roles && strcmp(role, roles[r])) r++;
    if (r == sizeof roles / sizeof *roles) {
        snprintf(pb, sizeof ri->bad_param_buf, "messages[%d].role", i);
        return bad_shape(ri, "invalid_value", msg, msglen, "Invalid value for '%s': expected %s.",
                         "one of 'system', 'user', 'assistant', 'tool', 'developer' or "
                         "'function'");
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    int assistant = !strcmp(role, "assistant");
    int calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls") ||
                cJSON_GetObjectItemCaseSensitive(m, "function_call");
    snprintf(pb, sizeof ri->bad_param_buf, "messages[%d].content", i);
    if (!c && !(assistant && calls))
        return bad_shape(ri, "missing_required_parameter", msg, msglen,
                         "Missing required parameter: '%s'.%s", "");
    /* null: an assistant's (with or without calls) and a function's result. */
    if (c && !cJSON_IsString(c) && !cJSON_IsArray(c) &&
        !(cJSON_IsNull(c) && (assistant || !strcmp(role, "function"))))
        return bad_shape(ri, "invalid_type", msg, msglen, "Invalid type for '%s': expected %s.",
                         "a string or an array of content parts");
    return 0;
}

/* The request shape kvgate reads (routing text, tokens, template): a body
 * the engine would refuse is the client's 400 here, naming the field, not
 * the engine's 500 relayed. */
static int request_shape(struct kvg_rinput *ri, const cJSON *j, char *msg, size_t msglen)
{
    const char *inv = "Invalid type for '%s': expected %s.";
    char *pb = ri->bad_param_buf;
    if (ri->chat) {
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "messages");
        snprintf(pb, sizeof ri->bad_param_buf, "messages");
        if (!ms)
            return bad_shape(ri, "missing_required_parameter", msg, msglen,
                             "Missing required parameter: '%s'.%s", "");
        if (!cJSON_IsArray(ms)) return bad_shape(ri, "invalid_type", msg, msglen, inv, "an array");
        int i = 0;
        const cJSON *m;
        /* The field is named only for an error: a long conversation has
         * hundreds of messages. */
        cJSON_ArrayForEach(m, ms)
        {
            if (!cJSON_IsObject(m)) {
                snprintf(pb, sizeof ri->bad_param_buf, "messages[%d]", i);
                return bad_shape(ri, "invalid_type", msg, msglen, inv, "an object");
            }
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
            if (!cJSON_IsString(role)) {
                snprintf(pb, sizeof ri->bad_param_buf, "messages[%d].role", i);
                return role ? bad_shape(ri, "invalid_type", msg, msglen, inv, "a string")
                            : bad_shape(ri, "missing_required_parameter", msg, msglen,
                                        "Missing required parameter: '%s'.%s", "");
            }
            int rc = message_shape(ri, m, role->valuestring, i, msg, msglen);
            if (rc) return rc;
            i++;
        }
        return 0;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, ri->prompt_key);
    snprintf(pb, sizeof ri->bad_param_buf, "%s", ri->prompt_key);
    if (!p || cJSON_IsString(p)) return 0; /* absent: the engine says what it wants instead */
    const char *want = "a string, an array of strings, or an array of token ids";
    if (!cJSON_IsArray(p)) return bad_shape(ri, "invalid_type", msg, msglen, inv, want);
    const cJSON *e, *first = p->child;
    cJSON_ArrayForEach(e, p)
    {
        int ok = cJSON_IsString(first) ? cJSON_IsString(e)
                 : is_int(first)       ? is_int(e)
                                       : cJSON_IsArray(first) && cJSON_IsArray(e);
        for (const cJSON *t = cJSON_IsArray(e) ? e->child : NULL; ok && t; t = t->next)
            ok = is_int(t);
        if (!ok) return bad_shape(ri, "invalid_type", msg, msglen, inv, want);
    }
    return 0;
}

/* A string member's bytes into out (cap bytes with the NUL), "" when it is
 * absent, not a string, or too long (a key kvgate cannot keep whole is no
 * key). */
static size_t copy_str(const cJSON *v, char *out, size_t cap)
{
    size_t n = 0;
    const char *s = kvg_json_str(v, &n);
    out[0] = 0;
    if (!s || n >= cap || memchr(s, 0, n)) return 0;
    memcpy(out, s, n);
    out[n] = 0;
    return n;
}

/* Messages' metadata.user_id as a session key: Claude Code's is a JSON
 * string holding device_id, account_uuid and session_id; only session_id
 * is kept (a device identifier has no place in the logs). Another client's
 * plain string is its key as it is. */
static size_t claude_session(const cJSON *v, char *out, size_t cap)
{
    size_t n = 0;
    const char *s = kvg_json_str(v, &n);
    out[0] = 0;
    if (!s) return 0;
    if (n && s[0] == '{') {
        cJSON *j = cJSON_ParseWithLength(s, n);
        size_t k = copy_str(cJSON_GetObjectItemCaseSensitive(j, "session_id"), out, cap);
        cJSON_Delete(j);
        return k;
    }
    return copy_str(v, out, cap);
}

/* A Responses or Messages body as the chat request the engine renders
 * (api/api.h): converted here, which checks it (a client error is the
 * client's 400 whatever the policy), into its placeholder form
 * (kvg_api_to_chat_refs: the conversation's long texts are the request
 * tree's own strings, not escaped into bytes and read back; that round trip
 * made a 30k-token Messages request cost 1.5x its chat twin,
 * bench/results/gateway-cost-messages.md). Its tree is read from those
 * bytes only when something reads it (chat_tree: the routing text, the
 * render): a policy that reads neither pays the check alone. The bytes an
 * engine without the endpoint is sent are made only then
 * (kvg_rinput_chat_bytes). */
static int as_chat(struct kvg_rinput *ri, const cJSON *j, char *msg, size_t msglen)
{
    struct kvg_api_err e = {{0}, {0}};
    int rc = kvg_api_to_chat_refs(ri->kind, j, &ri->chat_form, &ri->refs, &e);
    if (rc == -EAGAIN) /* composed text that starts with the placeholders' byte */
        rc = kvg_api_to_chat(ri->kind, j, &ri->chat_form, &e);
    if (rc == KVG_EPARSE) {
        snprintf(ri->bad_param_buf, sizeof ri->bad_param_buf, "%s", e.param);
        ri->bad_param = e.param[0] ? ri->bad_param_buf : NULL;
        ri->bad_code = "invalid_request_error";
        snprintf(msg, msglen, "%s", e.msg);
        return rc;
    }
    if (rc) {
        snprintf(msg, msglen, "cannot convert the request: %s", kvg_strerror(rc));
        return rc;
    }
    ri->rjson = NULL; /* chat_tree's, when read */
    ri->chat = 1;
    ri->converted = 1;
    return 0;
}

/* The converted request's tree in ri->rjson, read once from its bytes
 * (as_chat). A tree cJSON built (the fast reader declined: a deep schema)
 * is freed node by node, so it cannot borrow the request's strings: then
 * the plain bytes are made and read instead. 0, KVG_EPARSE, -ENOMEM. */
static int chat_tree(struct kvg_rinput *ri)
{
    if (ri->rjson || !ri->converted) return 0;
    if (!ri->json || !ri->chat_form.len) return KVG_EPARSE; /* dropped, or failed before */
    int rc = 0;
    ri->cjson = kvg_json_parse_in(&ri->cjson_mem, ri->chat_form.data, ri->chat_form.len);
    if (ri->cjson && ri->refs.n &&
        (!ri->cjson_mem.blocks || kvg_api_refs_resolve(ri->cjson, &ri->refs))) {
        struct kvg_api_err e;
        kvg_json_free(&ri->cjson_mem, ri->cjson);
        kvg_buf_reset(&ri->chat_form);
        rc = kvg_api_to_chat(ri->kind, ri->json, &ri->chat_form, &e);
        ri->cjson =
            rc ? NULL : kvg_json_parse_in(&ri->cjson_mem, ri->chat_form.data, ri->chat_form.len);
    }
    kvg_api_refs_free(&ri->refs);
    kvg_buf_free(&ri->chat_form);
    if (!rc && !cJSON_IsObject(ri->cjson)) /* kvgate's own writer: out of memory */
        rc = ri->cjson ? KVG_EPARSE : -ENOMEM;
    if (rc) {
        kvg_json_free(&ri->cjson_mem, ri->cjson);
        ri->cjson = NULL;
        return rc;
    }
    ri->rjson = ri->cjson;
    return 0;
}

int kvg_rinput_chat_bytes(struct kvg_rinput *ri, const char *body, size_t len)
{
    if (!ri->converted) return KVG_EPARSE;
    if (ri->chat_body.len) return 0;
    struct kvg_json_arena mem = {0};
    cJSON *j = kvg_json_parse_in(&mem, body, len);
    struct kvg_api_err e;
    int rc = j ? kvg_api_to_chat(ri->kind, j, &ri->chat_body, &e) : KVG_EPARSE;
    if (!rc && ri->kind == KVG_API_RESPONSES) rc = kvg_api_namespaces(j, &ri->namespaces);
    kvg_json_free(&mem, j);
    return rc;
}

/* OpenAI's bound on one embeddings batch, for every endpoint whose member
 * is a list of inputs (embeddings, pooling, classify, rerank's documents,
 * score's sides): a list of 100,000 would be that many prefills on one
 * engine. 0, or KVG_EPARSE naming the member and the bound. */
static int batch_bound(struct kvg_rinput *ri, const cJSON *j, const char *name, char *msg,
                       size_t msglen)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) <= KVG_RINPUT_MAX_BATCH) return 0;
    snprintf(ri->bad_param_buf, sizeof ri->bad_param_buf, "%s", name);
    ri->bad_param = ri->bad_param_buf;
    ri->bad_code = "invalid_value";
    snprintf(msg, msglen, "'%s' holds %d items: at most %d in one request", name,
             cJSON_GetArraySize(in), KVG_RINPUT_MAX_BATCH);
    return KVG_EPARSE;
}

/* The members of each endpoint's body that routing and the gateway read:
 * the output budget, the session key, the prompt's shape. */
static int kind_fields(struct kvg_rinput *ri, const cJSON *j, int64_t *budget, char *msg,
                       size_t msglen)
{
    int64_t a = -1, b = -1;
    switch (ri->kind) {
    case KVG_API_CHAT:
    case KVG_API_COMPLETIONS:
        /* The engines read max_completion_tokens first (OpenAI's newer name). */
        if (max_tokens_field(ri, j, "max_completion_tokens", &a, msg, msglen) ||
            max_tokens_field(ri, j, "max_tokens", &b, msg, msglen))
            return KVG_EPARSE;
        *budget = a >= 0 ? a : b;
        return request_shape(ri, j, msg, msglen);
    case KVG_API_RESPONSES:
        if (max_tokens_field(ri, j, "max_output_tokens", budget, msg, msglen)) return KVG_EPARSE;
        ri->session_len = copy_str(cJSON_GetObjectItemCaseSensitive(j, "prompt_cache_key"),
                                   ri->session, sizeof ri->session);
        copy_str(cJSON_GetObjectItemCaseSensitive(j, "previous_response_id"), ri->prev_id,
                 sizeof ri->prev_id);
        return as_chat(ri, j, msg, msglen);
    case KVG_API_MESSAGES:
    case KVG_API_COUNT_TOKENS:
        if (max_tokens_field(ri, j, "max_tokens", budget, msg, msglen)) return KVG_EPARSE;
        ri->session_len =
            claude_session(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(j, "metadata"), "user_id"),
                           ri->session, sizeof ri->session);
        return as_chat(ri, j, msg, msglen);
    case KVG_API_GENERATE: {
        /* SGLang's native API: text, or input_ids; the budget in
         * sampling_params.max_new_tokens. */
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "sampling_params");
        if (sp && !cJSON_IsNull(sp) && !cJSON_IsObject(sp)) {
            snprintf(ri->bad_param_buf, sizeof ri->bad_param_buf, "sampling_params");
            return bad_shape(ri, "invalid_type", msg, msglen, "Invalid type for '%s': expected %s.",
                             "an object");
        }
        if (cJSON_IsObject(sp) && max_tokens_field(ri, sp, "max_new_tokens", budget, msg, msglen))
            return KVG_EPARSE;
        ri->prompt_key = cJSON_GetObjectItemCaseSensitive(j, "input_ids") ? "input_ids" : "text";
        return request_shape(ri, j, msg, msglen);
    }
    case KVG_API_TOKENIZE:
        /* vLLM's /tokenize takes a prompt, or chat messages it renders. */
        ri->chat = cJSON_GetObjectItemCaseSensitive(j, "messages") != NULL;
        return request_shape(ri, j, msg, msglen);
    case KVG_API_EMBEDDINGS:
    case KVG_API_POOLING:
    case KVG_API_CLASSIFY:
        return batch_bound(ri, j, "input", msg, msglen);
    case KVG_API_RERANK:
        return batch_bound(ri, j, "documents", msg, msglen);
    case KVG_API_SCORE: {
        /* Each side by every name vLLM reads (docs/engines-api.md): a
         * list of N texts is N pairs, each a prefill. */
        static const char *const sides[] = {"text_1",  "text_2",    "data_1", "data_2",
                                            "queries", "documents", "items"};
        for (size_t i = 0; i < sizeof sides / sizeof *sides; i++)
            if (batch_bound(ri, j, sides[i], msg, msglen)) return KVG_EPARSE;
        return 0;
    }
    default:
        return 0;
    }
}

int kvg_rinput_parse(struct kvg_rinput *ri, const char *body, size_t len, enum kvg_api_kind kind,
                     char *msg, size_t msglen)
{
    memset(ri, 0, sizeof *ri);
    kvg_buf_init(&ri->text, 0);
    kvg_buf_init(&ri->chat_body, 0);
    kvg_buf_init(&ri->chat_form, 0);
    kvg_buf_init(&ri->namespaces, 0);
    ri->kind = kind;
    ri->chat = kind == KVG_API_CHAT;
    ri->prompt_key = "prompt";
    ri->body = body;
    ri->body_len = len;
    /* cJSON's tree and verdict, with a big body's strings copied by memchr
     * (base/json.h): the parse is most of a long conversation's CPU here.
     * A \u0000 in a string is data: the fast reader's string carries its
     * length. What it declines, cJSON reads; a \u0000 in such a body was
     * cut by cJSON, so it is routed without tokens rather than wrongly. */
    cJSON *j = body ? kvg_json_parse_strict_in(&ri->json_mem, body, len) : NULL;
    if (!j) {
        j = cJSON_ParseWithLength(body ? body : "", len);
        if (j && kvg_json_has_nul_escape(body, len)) ri->tokenize_error = KVG_EUNSUPP;
    }
    if (!j || !cJSON_IsObject(j)) {
        snprintf(msg, msglen,
                 j ? "the request body is not a JSON object"
                   : "the request body is not valid JSON (or nests deeper than "
                     "1000 levels)");
        kvg_json_free(&ri->json_mem, j);
        return KVG_EPARSE;
    }
    const char *dup = duplicate_key(j);
    if (dup) {
        snprintf(msg, msglen, "the key '%.64s' appears twice in one object", dup);
        kvg_json_free(&ri->json_mem, j);
        return KVG_EPARSE;
    }
    cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (m && (!cJSON_IsString(m) || strlen(m->valuestring) >= sizeof ri->model)) {
        kvg_json_free(&ri->json_mem, j);
        snprintf(msg, msglen,
                 m && cJSON_IsString(m) ? "'model' is longer than 255 bytes"
                                        : "'model' must be a string");
        return KVG_EPARSE;
    }
    if (m) {
        ri->model_len = KVG_MIN(strlen(m->valuestring), sizeof ri->model - 1);
        memcpy(ri->model, m->valuestring, ri->model_len);
    }
    /* vLLM's cache_salt: the engine only shares blocks between requests with
     * the same salt, so kvgate hashes the request's blocks with it. */
    cJSON *salt = cJSON_GetObjectItemCaseSensitive(j, "cache_salt");
    if (salt && !cJSON_IsNull(salt)) {
        if (!cJSON_IsString(salt) || !salt->valuestring[0] ||
            strlen(salt->valuestring) >= sizeof ri->cache_salt) {
            kvg_json_free(&ri->json_mem, j);
            snprintf(msg, msglen, "'cache_salt' must be a non-empty string under 256 bytes");
            return KVG_EPARSE;
        }
        ri->cache_salt_len = strlen(salt->valuestring);
        memcpy(ri->cache_salt, salt->valuestring, ri->cache_salt_len + 1);
    }
    ri->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"));
    ri->rjson = j;
    int64_t mt = -1;
    int rc = kind_fields(ri, j, &mt, msg, msglen);
    if (rc) {
        kvg_buf_free(&ri->chat_form);
        kvg_api_refs_free(&ri->refs);
        kvg_buf_free(&ri->chat_body);
        kvg_buf_free(&ri->namespaces);
        kvg_json_free(&ri->json_mem, j);
        ri->rjson = NULL;
        return rc == -ENOMEM ? rc : KVG_EPARSE;
    }
    if (mt > 0) ri->max_tokens = (uint32_t)(mt > UINT32_MAX ? UINT32_MAX : mt);
    ri->json = j;
    return 0;
}

int kvg_rinput_text(struct kvg_rinput *ri)
{
    if (ri->text.len) return 0;
    int rc = chat_tree(ri);
    if (rc || !ri->rjson) return rc;
    if (ri->chat || !strcmp(ri->prompt_key, "prompt"))
        return kvg_route_text(ri->rjson, ri->chat, &ri->text);
    /* SGLang's generate: its text (token ids have none to match on). */
    size_t n = 0;
    const char *s = kvg_json_str(cJSON_GetObjectItemCaseSensitive(ri->rjson, ri->prompt_key), &n);
    return s ? kvg_buf_append(&ri->text, s, n) : 0;
}

/* A request's block-hash parameters: its adapter's seed and its salt. They
 * are the tokenizer cache's tag for the hashes (equal tags, equal hashes). */
struct block_params {
    uint64_t seed, salt;
};

static void block_hashes(void *ud, const uint32_t *ids, uint32_t block_size, size_t from, size_t to,
                         uint64_t *hashes)
{
    const struct block_params *p = ud;
    kvg_kv_hash_range(ids, block_size, p->seed, p->salt, from, to, hashes);
}

static int prompt_ids(struct kvg_rinput *ri, const struct kvg_rinput_tokenizer *rt, int nowait,
                      struct kvg_tok_blocks *b)
{
    if (ri->chat) {
        struct kvg_buf out;
        kvg_buf_init(&out, 0);
        struct kvg_jinja_chat_info info = {0};
        char err[256];
        /* The prompt is about the body's size (its contents, unescaped, and
         * the template's markers): one allocation, not a copy per doubling. */
        int rc = chat_tree(ri);
        if (!rc) rc = kvg_buf_reserve(&out, ri->body_len + 1024);
        if (!rc)
            rc =
                kvg_jinja_chat_render_json(rt->chat, ri->rjson, NULL, &out, &info, err, sizeof err);
        if (!rc)
            rc = kvg_tok_encode_blocks(rt->tok, rt->cache, out.data ? out.data : "", out.len,
                                       info.add_special_tokens, &ri->ids, &ri->nids, NULL, nowait,
                                       b);
        kvg_buf_free(&out);
        return rc;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(ri->rjson, ri->prompt_key);
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && !cJSON_IsNumber(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsString(p)) {
        size_t n = 0;
        const char *s = kvg_json_str(p, &n); /* a NUL inside is data */
        return kvg_tok_encode_blocks(rt->tok, rt->cache, s, n, 1, &ri->ids, &ri->nids, NULL, nowait,
                                     b);
    }
    if (!cJSON_IsArray(p)) return KVG_EPARSE;
    size_t n = (size_t)cJSON_GetArraySize(p), k = 0;
    if (!(ri->ids = malloc((n ? n : 1) * sizeof *ri->ids))) return -ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, p)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 4e9) return KVG_EPARSE;
        ri->ids[k++] = (uint32_t)it->valuedouble;
    }
    ri->nids = k;
    return 0;
}

void kvg_rinput_tokenize(struct kvg_rinput *ri, const struct kvg_rinput_tokenizer *rt, int nowait)
{
    ri->block_size = rt->block_size;
    struct block_params bp = {
        kvg_kv_lora_seed(ri->adapter ? ri->model : NULL, ri->adapter ? ri->model_len : 0),
        kvg_kv_salt_hash(ri->cache_salt_len ? ri->cache_salt : NULL, ri->cache_salt_len)};
    /* Tokenized prompts get their hashes from the tokenizer (a cached start's
     * are reused); token-id prompts are hashed here. */
    struct kvg_tok_blocks b = {
        .block_size = rt->block_size, .tag = {bp.seed, bp.salt}, .hash = block_hashes, .ud = &bp};
    int rc = ri->tokenize_error ? ri->tokenize_error
                                : prompt_ids(ri, rt, nowait, rt->block_size ? &b : NULL);
    if (rc) {
        free(ri->ids);
        ri->ids = NULL;
        ri->nids = 0;
        ri->tokenize_error = rc;
        KVG_DEBUG("routing without tokens: %s", kvg_strerror(rc));
        return;
    }
    if (b.hashes) {
        ri->hashes = b.hashes;
        ri->nhashes = b.nhashes;
        return;
    }
    size_t nb = ri->block_size ? ri->nids / ri->block_size : 0;
    if (!nb || !(ri->hashes = malloc(nb * sizeof *ri->hashes))) return;
    kvg_kv_hash_range(ri->ids, ri->block_size, bp.seed, bp.salt, 0, nb, ri->hashes);
    ri->nhashes = nb;
}

void kvg_rinput_ctx(const struct kvg_rinput *ri, struct kvg_route_ctx *ctx)
{
    ctx->model = (struct kvg_str){ri->model, ri->model_len};
    ctx->json = ri->json;
    ctx->text = ri->text.data;
    ctx->text_len = ri->text.len;
    ctx->tokens = ri->ids;
    ctx->ntokens = ri->nids;
    ctx->block_hashes = ri->hashes;
    ctx->nblocks = ri->nhashes;
    ctx->block_size = ri->ids ? ri->block_size : 0;
    ctx->max_tokens = ri->max_tokens;
    ctx->lora = ri->adapter ? (struct kvg_str){ri->model, ri->model_len} : (struct kvg_str){0};
}

void kvg_rinput_drop_json(struct kvg_rinput *ri)
{
    kvg_buf_free(&ri->chat_form); /* its placeholders name json's nodes */
    kvg_api_refs_free(&ri->refs);
    kvg_json_free(&ri->json_mem, ri->json);
    kvg_json_free(&ri->cjson_mem, ri->cjson);
    ri->json = ri->cjson = NULL;
    ri->rjson = NULL;
}

void kvg_rinput_free(struct kvg_rinput *ri)
{
    kvg_rinput_drop_json(ri);
    kvg_buf_free(&ri->text);
    kvg_buf_free(&ri->chat_body);
    kvg_buf_free(&ri->namespaces);
    free(ri->ids);
    free(ri->hashes);
    ri->ids = NULL;
    ri->hashes = NULL;
}
