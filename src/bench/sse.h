/* Server-sent events as OpenAI-compatible servers stream them, for the live
 * client: bytes in (in any pieces), one callback per event with its data
 * (several `data:` lines joined by '\n'), and the fields of a completion
 * chunk pulled out of that data.
 *
 * A parser holds at most `cap` bytes of an unfinished event: past it the
 * stream is malformed (KVG_ETOOBIG) and the caller gives up on it. */
#ifndef KVG_BENCH_SSE_H
#define KVG_BENCH_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef int (*kvg_bench_sse_cb)(void *ud, const char *data, size_t len);

struct kvg_bench_sse {
    struct kvg_buf line; /* the current line (capped) */
    struct kvg_buf data; /* the current event's data (capped) */
    int cr;              /* the previous byte was '\r' */
};

/* cap bounds both buffers (0: 1 MiB). */
void kvg_bench_sse_init(struct kvg_bench_sse *p, size_t cap);
void kvg_bench_sse_free(struct kvg_bench_sse *p);
/* Feeds bytes; calls cb for each complete event with data. Returns 0, the
 * first non-zero value cb returned, or KVG_ETOOBIG. */
int kvg_bench_sse_feed(struct kvg_bench_sse *p, const char *buf, size_t n, kvg_bench_sse_cb cb,
                       void *ud);

/* What one chunk says. */
struct kvg_bench_chunk {
    int done;         /* the data was [DONE] */
    int error;        /* an {"error": ...} event */
    const char *text; /* choices[0].text or .delta.content (points into a
                       * parsed copy owned by the chunk: see _free) */
    size_t text_len;
    int64_t completion_tokens; /* usage, -1 when absent */
    int64_t prompt_tokens;
    int64_t cached_tokens; /* usage.prompt_tokens_details.cached_tokens */
    void *priv;
};

/* Parses a data payload. 0, KVG_EPARSE for data that is not JSON. */
int kvg_bench_chunk_parse(const char *data, size_t len, struct kvg_bench_chunk *c);
void kvg_bench_chunk_free(struct kvg_bench_chunk *c);

#endif
