/* Usage accounting: the token counts of a request, taken from what the
 * engine answers, for quotas and metrics.
 *
 * Engines differ (see docs on engines): vLLM and SGLang send usage in a
 * stream only when asked (stream_options.include_usage), as an extra last
 * chunk with "choices": []; llama.cpp's server puts usage on its final chunk
 * (the one with finish_reason) whatever was asked. So kvgate
 *   1. adds stream_options.include_usage to a streaming request that lacks
 *      it (kvg_usage_request_rewrite), and remembers that it did;
 *   2. runs the engine's SSE bytes through a filter (struct kvg_usage_sse)
 *      that finds `usage` wherever it comes and, when kvgate added
 *      include_usage itself, removes that extra usage-only chunk from what
 *      the client sees: only an event whose JSON has a usage object and no
 *      (or an empty) "choices", never one that carries choices;
 *   3. reads usage from a non-stream JSON answer (kvg_usage_from_json).
 *
 * The filter passes every other byte through unchanged and in order, and
 * delays nothing: in strip mode an event is held only until its terminating
 * blank line arrives (it cannot be judged before), then forwarded at once;
 * without strip mode bytes are forwarded as they come. Events end at a blank
 * line, with LF, CRLF or CR line ends (the SSE grammar). Memory per stream is
 * bounded by max_event: a longer event is forwarded as it comes and not
 * inspected.
 *
 * The filter also counts the completion tokens it relays (one per content
 * chunk and choice), so a stream that ends before its usage chunk (client
 * gone, engine cut off) is still charged what the client received. */
#ifndef KVG_GATEWAY_USAGE_H
#define KVG_GATEWAY_USAGE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct kvg_usage {
    int found;
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t total_tokens;
    int64_t cached_tokens; /* prompt_tokens_details.cached_tokens; 0 when not reported */
    int cached_found;      /* ... and whether it was reported */
    int prompt_found;      /* the prompt was named (not only the output) */
};

/* If the request streams and does not ask for usage (stream_options absent,
 * or include_usage absent or false), writes the rewritten body to `out`
 * and returns 1; returns 0 when nothing needs changing (out untouched), or
 * KVG_EPARSE when the body is not a JSON object. `root` is the body already
 * parsed by the caller (NULL: parsed here). The edit is made on the
 * client's bytes (base/json_edit.h), every other byte kept as sent: an
 * absent stream_options is added right after the opening brace, a null one
 * replaced, include_usage set inside an object one. */
int kvg_usage_request_rewrite(const char *body, size_t len, const cJSON *root, struct kvg_buf *out);

/* Reads the `usage` object of a parsed JSON answer: 1 found, 0 absent. */
int kvg_usage_from_cjson(const cJSON *root, struct kvg_usage *u);
/* The same from bytes: 1 found, 0 absent, KVG_EPARSE not JSON. */
int kvg_usage_from_json(const char *body, size_t len, struct kvg_usage *u);
/* The same without parsing the whole answer (a 2xx answer can be big): the
 * top-level object's structure is scanned (strings, nesting, commas, colons;
 * scalars are not validated) to the first "usage" member, and only that
 * value is parsed. Same result as kvg_usage_from_json on valid JSON; a key
 * with an escape falls back to it. */
int kvg_usage_scan_json(const char *body, size_t len, struct kvg_usage *u);

#define KVG_USAGE_SSE_MAX_EVENT (256u * 1024)

struct kvg_usage_sse {
    int strip;              /* remove the usage-only chunk (kvgate added include_usage) */
    size_t max_event;       /* bytes of one event held at most */
    struct kvg_buf ev;      /* the current event's bytes so far */
    size_t line_len;        /* bytes of the current line so far */
    int pending_lf;         /* 0, or what a LF right after the last CR belongs to */
    int overflow;           /* the current event outgrew max_event: passed through */
    struct kvg_usage usage; /* the last usage seen */
    uint64_t events;        /* complete events seen */
    uint64_t tokens;        /* completion tokens relayed, counted one per choice of a chunk
                               that carries content (text, delta content, reasoning or
                               tool calls): how vLLM and SGLang stream by default; in
                               SGLang's /generate chunks, the growth of meta_info's count */
    uint64_t token_events;  /* complete events that carried at least one such token */
    int stripped;           /* events removed (0 or 1) */
};

/* strip: see above; max_event 0 = KVG_USAGE_SSE_MAX_EVENT. Allocates
 * nothing until fed; kvg_usage_sse_free releases the held bytes. */
void kvg_usage_sse_init(struct kvg_usage_sse *f, int strip, size_t max_event);
void kvg_usage_sse_free(struct kvg_usage_sse *f);
/* Feeds a piece of the engine's stream; appends to `out` the bytes to send
 * to the client now (possibly none). Returns 0, or -ENOMEM / KVG_ETOOBIG
 * when `out` cannot take them. */
int kvg_usage_sse_feed(struct kvg_usage_sse *f, const char *p, size_t n, struct kvg_buf *out);
/* End of the stream: forwards a held incomplete event as it is. */
int kvg_usage_sse_end(struct kvg_usage_sse *f, struct kvg_buf *out);

#endif
