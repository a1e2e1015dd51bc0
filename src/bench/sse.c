/* SSE framing (the WHATWG event-stream rules the OpenAI servers follow:
 * lines end in \n, \r\n or \r; "data:" lines accumulate; a blank line ends
 * an event; comments and other fields are ignored) and completion chunks. */
#include "bench/sse.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "base/err.h"

void kvg_bench_sse_init(struct kvg_bench_sse *p, size_t cap)
{
    memset(p, 0, sizeof *p);
    kvg_buf_init(&p->line, cap ? cap : 1u << 20);
    kvg_buf_init(&p->data, cap ? cap : 1u << 20);
}

void kvg_bench_sse_free(struct kvg_bench_sse *p)
{
    kvg_buf_free(&p->line);
    kvg_buf_free(&p->data);
}

/* One complete line: a field of the current event, or its end. */
static int line_done(struct kvg_bench_sse *p, kvg_bench_sse_cb cb, void *ud)
{
    const char *l = p->line.data;
    size_t n = p->line.len;
    int rc = 0;
    if (n == 0) {
        /* Blank line: dispatch the event if it had data (WHATWG drops the
         * final '\n' that joining added). */
        if (p->data.len) {
            size_t dl = p->data.len;
            if (p->data.data[dl - 1] == '\n') dl--;
            rc = cb(ud, p->data.data, dl);
            kvg_buf_reset(&p->data);
        }
        return rc;
    }
    if (n >= 5 && !memcmp(l, "data:", 5)) {
        size_t off = 5;
        if (off < n && l[off] == ' ') off++;
        if ((rc = kvg_buf_append(&p->data, l + off, n - off))) return rc;
        rc = kvg_buf_append(&p->data, "\n", 1);
    }
    /* ":" comments, event:, id:, retry: carry nothing a client needs here. */
    return rc;
}

int kvg_bench_sse_feed(struct kvg_bench_sse *p, const char *buf, size_t n, kvg_bench_sse_cb cb,
                       void *ud)
{
    int rc;
    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        if (ch == '\n' && p->cr) { /* the \n of a \r\n */
            p->cr = 0;
            continue;
        }
        p->cr = ch == '\r';
        if (ch == '\n' || ch == '\r') {
            rc = line_done(p, cb, ud);
            kvg_buf_reset(&p->line);
            if (rc) return rc;
            continue;
        }
        /* Copy the run of ordinary bytes at once. */
        size_t j = i;
        while (j < n && buf[j] != '\n' && buf[j] != '\r') j++;
        if ((rc = kvg_buf_append(&p->line, buf + i, j - i))) return rc;
        i = j - 1;
    }
    return 0;
}

static int64_t int_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (int64_t)v->valuedouble : -1;
}

/* Anthropic's usage: its input_tokens count what the cache did not hold,
 * cache_read_input_tokens (and cache_creation_input_tokens) the rest. */
static void anthropic_usage(const cJSON *u, struct kvg_bench_chunk *c)
{
    int64_t in = int_field(u, "input_tokens"), rd = int_field(u, "cache_read_input_tokens");
    int64_t cr = int_field(u, "cache_creation_input_tokens");
    if (in >= 0) c->prompt_tokens = in + (rd > 0 ? rd : 0) + (cr > 0 ? cr : 0);
    if (rd >= 0) c->cached_tokens = rd;
    c->completion_tokens = int_field(u, "output_tokens");
}

static void set_text(const cJSON *t, struct kvg_bench_chunk *c)
{
    if (!cJSON_IsString(t)) return;
    c->text = t->valuestring;
    c->text_len = strlen(t->valuestring);
}

/* An event of the Responses or Messages stream (its data names its type). */
static int api_event(const cJSON *j, const char *type, struct kvg_bench_chunk *c)
{
    if (!strcmp(type, "error") || !strcmp(type, "response.failed")) {
        c->error = 1;
    } else if (!strcmp(type, "response.output_text.delta")) { /* Responses */
        set_text(cJSON_GetObjectItemCaseSensitive(j, "delta"), c);
    } else if (!strcmp(type, "response.completed")) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "response"), "usage");
        c->prompt_tokens = int_field(u, "input_tokens");
        c->completion_tokens = int_field(u, "output_tokens");
        c->cached_tokens =
            int_field(cJSON_GetObjectItemCaseSensitive(u, "input_tokens_details"), "cached_tokens");
    } else if (!strcmp(type, "content_block_delta")) { /* Messages */
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "delta");
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d, "text")))
            set_text(cJSON_GetObjectItemCaseSensitive(d, "text"), c);
    } else if (!strcmp(type, "message_start")) {
        anthropic_usage(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(j, "message"), "usage"),
                        c);
        c->completion_tokens = -1; /* message_start's output_tokens is not the answer's */
    } else if (!strcmp(type, "message_delta")) {
        anthropic_usage(cJSON_GetObjectItemCaseSensitive(j, "usage"), c);
    }
    return 0;
}

int kvg_bench_chunk_parse(const char *data, size_t len, struct kvg_bench_chunk *c)
{
    memset(c, 0, sizeof *c);
    c->completion_tokens = c->prompt_tokens = c->cached_tokens = -1;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        c->done = 1;
        return 0;
    }
    cJSON *j = cJSON_ParseWithLength(data, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return KVG_EPARSE;
    }
    c->priv = j;
    if (cJSON_GetObjectItemCaseSensitive(j, "error")) c->error = 1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (cJSON_IsString(type)) return api_event(j, type->valuestring, c);
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ch, "text");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ch, "delta"),
                                             "content");
    if (cJSON_IsString(t)) {
        c->text = t->valuestring;
        c->text_len = strlen(t->valuestring);
    }
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
    if (cJSON_IsObject(u)) {
        c->completion_tokens = int_field(u, "completion_tokens");
        c->prompt_tokens = int_field(u, "prompt_tokens");
        c->cached_tokens = int_field(cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details"),
                                     "cached_tokens");
    }
    return 0;
}

void kvg_bench_chunk_free(struct kvg_bench_chunk *c)
{
    cJSON_Delete(c->priv);
    c->priv = NULL;
    c->text = NULL;
}
