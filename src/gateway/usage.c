/* Usage accounting: the include_usage rewrite, the incremental SSE usage
 * filter, and usage from JSON answers. The contract is in usage.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json_edit.h"
#include "base/json_scan.h"
#include "base/util.h"
#include "gateway/usage.h"

int kvg_usage_request_rewrite(const char *body, size_t len, const cJSON *root, struct kvg_buf *out)
{
    cJSON *own = NULL;
    int rc = 0;
    if (!root) root = own = cJSON_ParseWithLength(body ? body : "", len);
    if (!cJSON_IsObject(root)) {
        rc = KVG_EPARSE;
        goto done;
    }
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "stream"))) goto done;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsObject(so) && !cJSON_IsNull(so)) goto done; /* invalid: the engine says so */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"))) goto done;
    /* Set on the client's bytes (base/json_edit.h); an absent stream_options
     * goes right after the opening brace. */
    const struct kvg_json_edit e = {.op = KVG_JSON_EDIT_SET_IN,
                                    .name = "stream_options",
                                    .inner = "include_usage",
                                    .value = "true",
                                    .value_len = 4,
                                    .at_start = 1};
    size_t at = out->len;
    rc = kvg_json_edit(body ? body : "", len, &e, 1, out);
    if (rc == KVG_EUNSUPP) rc = 0; /* the scan saw another stream_options: leave it to the engine */
    if (rc <= 0) out->len = at;
    if (rc > 0) rc = 1;
done:
    cJSON_Delete(own);
    return rc;
}

static int64_t num(const cJSON *o, const char *name)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0) || n->valuedouble > 9e15) return -1;
    return (int64_t)n->valuedouble;
}

/* A usage object in any of the engines' dialects:
 *   chat, completions, embeddings: prompt_tokens, completion_tokens,
 *     prompt_tokens_details.cached_tokens;
 *   Responses: input_tokens (all of the prompt), output_tokens,
 *     input_tokens_details.cached_tokens;
 *   Anthropic Messages: input_tokens (the prompt NOT read from or written
 *     to the cache), output_tokens, cache_read_input_tokens,
 *     cache_creation_input_tokens: the prompt is their sum;
 *   SGLang's meta_info: prompt_tokens, completion_tokens, cached_tokens.
 * u->prompt_found says whether it named the prompt at all (a Messages
 * stream's message_delta carries output_tokens only). */
static int from_usage(const cJSON *us, struct kvg_usage *u)
{
    if (!cJSON_IsObject(us)) return 0;
    int64_t p = num(us, "prompt_tokens"), c = num(us, "completion_tokens");
    int64_t t = num(us, "total_tokens"), ca = -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(us, "prompt_tokens_details");
    if (cJSON_IsObject(d)) ca = num(d, "cached_tokens");
    if (p < 0 && (p = num(us, "input_tokens")) >= 0) {
        int64_t cr = num(us, "cache_read_input_tokens"),
                cw = num(us, "cache_creation_input_tokens");
        if (cr >= 0 || cw >= 0) { /* Anthropic's: input_tokens is what missed the cache */
            p += KVG_MAX(cr, 0) + KVG_MAX(cw, 0);
            ca = cr;
        }
        d = cJSON_GetObjectItemCaseSensitive(us, "input_tokens_details");
        if (ca < 0 && cJSON_IsObject(d)) ca = num(d, "cached_tokens");
    }
    if (c < 0) c = num(us, "output_tokens");
    if (ca < 0) ca = num(us, "cached_tokens");
    if (p < 0 && c < 0 && t < 0) return 0;
    memset(u, 0, sizeof *u);
    u->found = 1;
    u->prompt_found = p >= 0;
    u->prompt_tokens = KVG_MAX(p, 0);
    u->completion_tokens = KVG_MAX(c, 0);
    u->total_tokens = t >= 0 ? t : u->prompt_tokens + u->completion_tokens;
    u->cached_tokens = KVG_MIN(KVG_MAX(ca, 0), u->prompt_tokens);
    u->cached_found = ca >= 0;
    return 1;
}

/* The usage of an answer or event: its own `usage`, or the one of the
 * object it carries (a Responses event's `response`, a Messages
 * message_start's `message`), or SGLang's `meta_info`. */
int kvg_usage_from_cjson(const cJSON *root, struct kvg_usage *u)
{
    static const char *const holders[] = {"response", "message"};
    if (from_usage(cJSON_GetObjectItemCaseSensitive(root, "usage"), u)) return 1;
    for (size_t i = 0; i < KVG_ARRAY_LEN(holders); i++) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, holders[i]);
        if (cJSON_IsObject(h) && from_usage(cJSON_GetObjectItemCaseSensitive(h, "usage"), u))
            return 1;
    }
    return from_usage(cJSON_GetObjectItemCaseSensitive(root, "meta_info"), u);
}

/* ---- the targeted scan of an answer: find the top-level "usage" ---- */

#define SCAN_ESCAPED 1 /* a key to decode: the full parse decides */

struct usage_at {
    size_t v, ve; /* the first "usage" member's value, ve 0 when none */
    size_t m, me; /* the first "meta_info" member's value, me 0 when none */
};

static int find_usage(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct usage_at *at = ud;
    if (m->key_escaped) return SCAN_ESCAPED;
    if (!at->ve && m->key_end - m->key == 5 && !memcmp(s + m->key, "usage", 5))
        at->v = m->val, at->ve = m->val_end;
    if (!at->me && m->key_end - m->key == 9 && !memcmp(s + m->key, "meta_info", 9))
        at->m = m->val, at->me = m->val_end; /* SGLang's generate */
    return 0;
}

int kvg_usage_scan_json(const char *body, size_t len, struct kvg_usage *u)
{
    const char *s = body ? body : "";
    size_t n = body ? len : 0, i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    if (i == n || s[i] != '{') return kvg_usage_from_json(body, len, u); /* not an object */
    struct usage_at at = {0};
    int rc = kvg_json_members(s, n, find_usage, &at, NULL, NULL);
    if (rc == SCAN_ESCAPED) return kvg_usage_from_json(body, len, u);
    if (rc) return KVG_EPARSE; /* what follows the object is ignored, as cJSON does */
    if (!at.ve && !at.me) return 0;
    cJSON *j = at.ve ? cJSON_ParseWithLength(s + at.v, at.ve - at.v)
                     : cJSON_ParseWithLength(s + at.m, at.me - at.m);
    if (!j) return KVG_EPARSE;
    rc = from_usage(j, u);
    cJSON_Delete(j);
    return rc;
}

int kvg_usage_from_json(const char *body, size_t len, struct kvg_usage *u)
{
    cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
    if (!j) return KVG_EPARSE;
    int rc = cJSON_IsObject(j) ? kvg_usage_from_cjson(j, u) : 0;
    cJSON_Delete(j);
    return rc;
}

/* ---- the SSE filter ---- */

/* What a LF right after a CR belongs to (CRLF is one line end). */
enum { LF_NONE, LF_EVENT, LF_EMIT, LF_DROP };

void kvg_usage_sse_init(struct kvg_usage_sse *f, int strip, size_t max_event)
{
    memset(f, 0, sizeof *f);
    f->strip = strip;
    f->max_event = max_event ? max_event : KVG_USAGE_SSE_MAX_EVENT;
    kvg_buf_init(&f->ev, f->max_event);
}

void kvg_usage_sse_free(struct kvg_usage_sse *f)
{
    kvg_buf_free(&f->ev);
}

/* Adds bytes of the current event: held, or (past max_event) forwarded. */
static int ev_add(struct kvg_usage_sse *f, const char *p, size_t n, struct kvg_buf *out)
{
    if (!f->overflow && f->ev.len + n > f->max_event) {
        /* Too long to judge: forward what was held and the rest as it comes. */
        f->overflow = 1;
        if (f->strip) {
            int rc = kvg_buf_append(out, f->ev.data, f->ev.len);
            if (rc) return rc;
        }
        kvg_buf_reset(&f->ev);
    }
    if (f->overflow) return f->strip ? kvg_buf_append(out, p, n) : 0;
    return kvg_buf_append(&f->ev, p, n);
}

static int nonempty_str(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) && v->valuestring[0];
}

/* Completion tokens in one chunk: one per choice that carries content. The
 * first chat chunk (role only, empty content) and a last one with only
 * finish_reason carry none. SGLang's /generate streams cumulative chunks
 * whose meta_info counts the output so far: the ones new since the `seen`
 * counted before. */
static uint64_t chunk_tokens(const cJSON *j, uint64_t seen)
{
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "choices"), *c;
    uint64_t n = 0;
    const cJSON *mi = cJSON_GetObjectItemCaseSensitive(j, "meta_info");
    if (!ch && cJSON_IsObject(mi)) {
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(mi, "completion_tokens");
        double v = cJSON_IsNumber(ct) ? ct->valuedouble : 0;
        return v > (double)seen && v < 1e15 ? (uint64_t)v - seen : 0;
    }
    if (!cJSON_IsArray(ch)) {
        /* Responses and Messages stream one delta event per token. */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
        if (!cJSON_IsString(t)) return 0;
        const char *ty = t->valuestring;
        size_t tl = strlen(ty);
        return !strcmp(ty, "content_block_delta") ||
               (!strncmp(ty, "response.", 9) && tl > 6 && !strcmp(ty + tl - 6, ".delta"));
    }
    cJSON_ArrayForEach(c, ch)
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "delta");
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(d, "tool_calls");
        n += nonempty_str(c, "text") || nonempty_str(d, "content") ||
             nonempty_str(d, "reasoning_content") ||
             (cJSON_IsArray(tc) && cJSON_GetArraySize(tc) > 0);
    }
    return n;
}

/* Parses the event's data; records usage and counts tokens; 1 if it is a
 * usage-only chunk. */
static int inspect(struct kvg_usage_sse *f)
{
    const char *e = f->ev.data;
    size_t n = f->ev.len;
    if (!e || (!memmem(e, n, "usage", 5) && !memmem(e, n, "choices", 7) &&
               !memmem(e, n, "delta", 5) && !memmem(e, n, "meta_info", 9)))
        return 0;
    struct kvg_buf data;
    kvg_buf_init(&data, n + 1);
    int lines = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && e[j] != '\r' && e[j] != '\n') j++;
        if (j - i >= 5 && !memcmp(e + i, "data:", 5)) {
            size_t v = i + 5;
            if (v < j && e[v] == ' ') v++;
            if (lines++) kvg_buf_append(&data, "\n", 1);
            kvg_buf_append(&data, e + v, j - v);
        }
        if (j < n && e[j] == '\r' && j + 1 < n && e[j + 1] == '\n') j++;
        i = j + 1;
    }
    int usage_only = 0;
    cJSON *j = lines ? cJSON_ParseWithLength(data.data ? data.data : "", data.len) : NULL;
    if (cJSON_IsObject(j)) {
        uint64_t t = chunk_tokens(j, f->tokens);
        f->tokens += t;
        f->token_events += t > 0;
        struct kvg_usage u;
        if (kvg_usage_from_cjson(j, &u)) {
            /* A Messages stream says its prompt in message_start and its
             * output in message_delta: a later event that names no prompt
             * keeps the earlier one's. */
            if (!u.prompt_found && f->usage.found && f->usage.prompt_found) {
                u.prompt_tokens = f->usage.prompt_tokens;
                u.cached_tokens = f->usage.cached_tokens;
                u.cached_found = f->usage.cached_found;
                u.prompt_found = 1;
                u.total_tokens = u.prompt_tokens + u.completion_tokens;
            }
            f->usage = u;
            const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "choices");
            usage_only = !ch || (cJSON_IsArray(ch) && cJSON_GetArraySize(ch) == 0);
        }
    }
    cJSON_Delete(j);
    kvg_buf_free(&data);
    return usage_only;
}

/* The blank line ending an event has been added: judge it, forward or drop
 * it. Returns its fate (LF_EMIT or LF_DROP). */
static int end_event(struct kvg_usage_sse *f, struct kvg_buf *out, int *rc)
{
    int fate = LF_EMIT;
    f->events++;
    if (!f->overflow) {
        if (inspect(f) && f->strip) {
            fate = LF_DROP;
            f->stripped++;
        } else if (f->strip) {
            *rc = kvg_buf_append(out, f->ev.data, f->ev.len);
        }
    }
    kvg_buf_reset(&f->ev);
    f->overflow = 0;
    f->line_len = 0;
    return fate;
}

int kvg_usage_sse_feed(struct kvg_usage_sse *f, const char *p, size_t n, struct kvg_buf *out)
{
    int rc = 0;
    /* Without strip mode nothing is ever removed: forward at once, and
     * keep a copy of the current event only to read its usage. */
    if (!f->strip && n && (rc = kvg_buf_append(out, p, n))) return rc;
    size_t i = 0;
    while (i < n && !rc) {
        char c = p[i];
        if (f->pending_lf) {
            int pl = f->pending_lf;
            f->pending_lf = LF_NONE;
            if (c == '\n') {
                if (pl == LF_EVENT)
                    rc = ev_add(f, p + i, 1, out);
                else if (pl == LF_EMIT && f->strip)
                    rc = kvg_buf_append(out, "\n", 1);
                i++;
                continue;
            }
        }
        if (c != '\r' && c != '\n') {
            size_t j = i + 1;
            while (j < n && p[j] != '\r' && p[j] != '\n') j++;
            rc = ev_add(f, p + i, j - i, out);
            f->line_len += j - i;
            i = j;
            continue;
        }
        if ((rc = ev_add(f, p + i, 1, out))) break;
        i++;
        if (f->line_len == 0) {
            int fate = end_event(f, out, &rc);
            if (c == '\r') f->pending_lf = fate;
        } else {
            f->line_len = 0;
            if (c == '\r') f->pending_lf = LF_EVENT;
        }
    }
    return rc;
}

int kvg_usage_sse_end(struct kvg_usage_sse *f, struct kvg_buf *out)
{
    int rc = 0;
    /* An unterminated last event: still read its usage (some servers end the
     * stream without the final blank line), and forward it as it is. */
    if (f->ev.len && !f->overflow) {
        inspect(f);
        if (f->strip) rc = kvg_buf_append(out, f->ev.data, f->ev.len);
    }
    kvg_buf_reset(&f->ev);
    f->overflow = 0;
    f->line_len = 0;
    f->pending_lf = LF_NONE;
    return rc;
}
