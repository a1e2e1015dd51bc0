/* The chat completions SSE stream of an engine, read event by event and
 * turned into the Responses or Messages stream (sse_events.c writes the
 * events). Bytes may arrive split anywhere: the current event's data lines
 * are held (at most KVG_API_XLATE_MAX_EVENT bytes) until the blank line
 * that ends it; other SSE lines (event:, id:, comments) are dropped. Each
 * event's JSON is read whole, its first choice's delta (reasoning, content,
 * tool calls) and finish_reason and any usage taken; the order of output
 * blocks follows the deltas, a new kind closing the open one, as vLLM's
 * own Responses and Messages endpoints do (docs/api-translation.md). */
#include <string.h>

#include "api/sse_int.h"
#include "base/err.h"
#include "base/json.h"

void kvg_api_sse_xlate_init(struct kvg_api_sse_xlate *t, const struct kvg_api_xctx *x)
{
    memset(t, 0, sizeof(*t));
    t->x = *x;
    t->x.model[sizeof(t->x.model) - 1] = 0;
    t->x.id[sizeof(t->x.id) - 1] = 0;
    t->block = KVG__XL_NONE;
    kvg_buf_init(&t->ev, KVG_API_XLATE_MAX_EVENT);
    kvg_buf_init(&t->text, KVG_API_XLATE_MAX_HELD);
    kvg_buf_init(&t->tools, KVG_API_XLATE_MAX_HELD);
    kvg_buf_init(&t->call, KVG_API_XLATE_MAX_EVENT);
}

void kvg_api_sse_xlate_free(struct kvg_api_sse_xlate *t)
{
    kvg_buf_free(&t->ev);
    kvg_buf_free(&t->text);
    kvg_buf_free(&t->tools);
    kvg_buf_free(&t->call);
}

static int64_t count(const cJSON *obj, const char *key)
{
    const cJSON *n = kvg__api_get(obj, key);
    return cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble < 9e18
               ? (int64_t)n->valuedouble
               : 0;
}

static void take_usage(struct kvg_api_sse_xlate *t, const cJSON *u)
{
    if (!cJSON_IsObject(u)) return;
    t->usage_found = 1;
    t->input_tokens = count(u, "prompt_tokens");
    t->output_tokens = count(u, "completion_tokens");
    t->cached_tokens = count(kvg__api_get(u, "prompt_tokens_details"), "cached_tokens");
    t->reasoning_tokens = count(kvg__api_get(u, "completion_tokens_details"), "reasoning_tokens");
}

/* One entry of delta.tool_calls: a name opens a tool block (unless its
 * index is the open one's), arguments go to the open block of their index
 * (an interleaved call's arguments have no block to go to: dropped). */
static int tool_delta(struct kvg_api_sse_xlate *t, const cJSON *tc, struct kvg_buf *out)
{
    const cJSON *fn = kvg__api_get(tc, "function"), *ix = kvg__api_get(tc, "index");
    int index = kvg__api_is_int(ix) && ix->valuedouble >= 0 && ix->valuedouble < 1e9
                    ? (int)ix->valuedouble
                    : 0;
    size_t il = 0, nl = 0, al = 0;
    const char *id = kvg_json_str(kvg__api_get(tc, "id"), &il);
    const char *name = kvg_json_str(kvg__api_get(fn, "name"), &nl);
    const char *args = kvg_json_str(kvg__api_get(fn, "arguments"), &al);
    int rc, open = t->block == KVG__XL_TOOL && t->tool_index == index;
    if (name && !open) {
        if ((rc = kvg__xl_close(t, out))) return rc;
        kvg_buf_reset(&t->call);
        if (id) {
            rc = kvg_buf_append(&t->call, id, il);
        } else { /* an engine that names no call id: one made from the answer's */
            char made[160];
            kvg__api_item_id(made, sizeof(made), "call", &t->x, t->nblocks);
            rc = kvg_buf_append_str(&t->call, made);
        }
        t->call_split = t->call.len;
        if (rc || (rc = kvg_buf_append(&t->call, name, nl))) return rc;
        t->tool_index = index;
        if ((rc = kvg__xl_open(t, KVG__XL_TOOL, out))) return rc;
        open = 1;
    }
    if (open && args && al) return kvg__xl_delta(t, args, al, out);
    return 0;
}

static int chunk(struct kvg_api_sse_xlate *t, const cJSON *root, struct kvg_buf *out)
{
    const cJSON *choices = kvg__api_get(root, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? choices->child : NULL;
    const cJSON *delta = kvg__api_get(c0, "delta"), *fin = kvg__api_get(c0, "finish_reason");
    const cJSON *rs = kvg__api_get(delta, "reasoning"), *calls = kvg__api_get(delta, "tool_calls");
    size_t n = 0;
    const char *s;
    int rc;
    take_usage(t, kvg__api_get(root, "usage"));
    if (!(t->state & KVG__XL_STARTED) && (rc = kvg__xl_start(t, out))) return rc;
    if (!cJSON_IsString(rs)) rs = kvg__api_get(delta, "reasoning_content");
    if ((s = kvg_json_str(rs, &n)) && n) {
        if (t->block != KVG__XL_THINK &&
            ((rc = kvg__xl_close(t, out)) || (rc = kvg__xl_open(t, KVG__XL_THINK, out))))
            return rc;
        if ((rc = kvg__xl_delta(t, s, n, out))) return rc;
    }
    if ((s = kvg_json_str(kvg__api_get(delta, "content"), &n)) && n) {
        if (t->block != KVG__XL_TEXT &&
            ((rc = kvg__xl_close(t, out)) || (rc = kvg__xl_open(t, KVG__XL_TEXT, out))))
            return rc;
        if ((rc = kvg__xl_delta(t, s, n, out))) return rc;
    }
    for (const cJSON *tc = cJSON_IsArray(calls) ? calls->child : NULL; tc; tc = tc->next)
        if ((rc = tool_delta(t, tc, out))) return rc;
    if (cJSON_IsString(fin) && fin->valuestring)
        snprintf(t->finish, sizeof(t->finish), "%s", fin->valuestring);
    return 0;
}

/* An engine's error in the stream: vLLM's {"error":{"message":..}} or its
 * older {"object":"error","message":..}. NULL when root is no error. */
static const char *error_of(const cJSON *root)
{
    const cJSON *e = kvg__api_get(root, "error");
    const cJSON *m = cJSON_IsObject(e) ? kvg__api_get(e, "message") : NULL;
    if (!e && kvg__api_str_is(kvg__api_get(root, "object"), "error"))
        m = kvg__api_get(root, "message");
    else if (!e)
        return NULL;
    return cJSON_IsString(m) && m->valuestring ? m->valuestring : "the engine failed";
}

/* One whole event's data (its data lines joined by newlines). */
static int dispatch(struct kvg_api_sse_xlate *t, const char *d, size_t n, struct kvg_buf *out)
{
    struct kvg_json_arena ar = {0};
    int rc = 0;
    if (n == 6 && !memcmp(d, "[DONE]", 6)) return kvg__xl_finish(t, out);
    cJSON *root = kvg_json_parse_in(&ar, d, n);
    if (!cJSON_IsObject(root)) { /* not a chat event: nothing a client could read of it */
        if (root) kvg_json_free(&ar, root);
        return 0;
    }
    const char *err = error_of(root);
    if (err)
        rc = kvg__xl_error(t, err, out);
    else
        rc = chunk(t, root, out);
    kvg_json_free(&ar, root);
    return rc;
}

/* The line ev[t->line, ev.len) just ended (its newline dropped). */
static int line_done(struct kvg_api_sse_xlate *t, struct kvg_buf *out)
{
    char *l = t->ev.data + t->line;
    size_t n = t->ev.len - t->line;
    int rc = 0;
    if (n && l[n - 1] == '\r') n--;
    if (!n) { /* the blank line: the event is whole */
        if (t->state & KVG__XL_DATA) rc = dispatch(t, t->ev.data, t->line - 1, out);
        kvg_buf_reset(&t->ev);
        t->line = 0;
        t->state &= ~KVG__XL_DATA;
        return rc;
    }
    if (n >= 5 && !memcmp(l, "data:", 5)) {
        size_t skip = n > 5 && l[5] == ' ' ? 6 : 5;
        memmove(l, l + skip, n - skip);
        t->ev.len = t->line + n - skip;
        if ((rc = kvg_buf_append(&t->ev, "\n", 1))) return rc;
        t->line = t->ev.len;
        t->state |= KVG__XL_DATA;
        return 0;
    }
    t->ev.len = t->line; /* event:, id:, retry:, a comment */
    return 0;
}

int kvg_api_sse_xlate_feed(struct kvg_api_sse_xlate *t, const char *p, size_t n,
                           struct kvg_buf *out)
{
    int rc;
    while (n && !(t->state & KVG__XL_DONE)) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if ((rc = kvg_buf_append(&t->ev, p, take))) return rc;
        if (nl && (rc = line_done(t, out))) return rc;
        if (nl) take++;
        p += take;
        n -= take;
    }
    return 0;
}

int kvg_api_sse_xlate_end(struct kvg_api_sse_xlate *t, int cut, struct kvg_buf *out)
{
    int rc;
    if (t->state & KVG__XL_DONE) return 0;
    if (cut) return kvg__xl_error(t, "the engine's stream ended before its end", out);
    /* a last event without its blank line (or its newline) still counts */
    if (t->ev.len > t->line && (rc = line_done(t, out))) return rc;
    if (!(t->state & KVG__XL_DONE) && (t->state & KVG__XL_DATA) &&
        (rc = dispatch(t, t->ev.data, t->line - 1, out)))
        return rc;
    kvg_buf_reset(&t->ev);
    t->line = 0;
    return t->state & KVG__XL_DONE ? 0 : kvg__xl_finish(t, out);
}
