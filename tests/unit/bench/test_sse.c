/* The live client's stream parsing: SSE framing split at every byte, the
 * line-ending variants, multi-line data, comments, the size cap; and the
 * fields of completion and chat chunks. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "bench/sse.h"
#include "support/test.h"

struct got {
    char ev[16][256];
    int n;
};

static int collect(void *ud, const char *data, size_t len)
{
    struct got *g = ud;
    if (g->n < 16 && len < 256) {
        memcpy(g->ev[g->n], data, len);
        g->ev[g->n][len] = 0;
    }
    g->n++;
    return 0;
}

static const char stream[] = ": keep-alive comment\r\n"
                             "data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n"
                             "event: message\n"
                             "data:{\"x\":1}\n"
                             "data: line2\n\n"
                             "data: [DONE]\r\r";

TEST(framing_at_every_split)
{
    size_t n = strlen(stream);
    for (size_t cut = 0; cut <= n; cut++) {
        struct kvg_bench_sse p;
        struct got g = {0};
        kvg_bench_sse_init(&p, 0);
        CHECK_INT(kvg_bench_sse_feed(&p, stream, cut, collect, &g), 0);
        CHECK_INT(kvg_bench_sse_feed(&p, stream + cut, n - cut, collect, &g), 0);
        CHECK_INT(g.n, 3);
        CHECK_STR(g.ev[0], "{\"choices\":[{\"text\":\"a\"}]}");
        CHECK_STR(g.ev[1], "{\"x\":1}\nline2");
        CHECK_STR(g.ev[2], "[DONE]");
        kvg_bench_sse_free(&p);
    }
}

TEST(byte_by_byte_and_cap)
{
    struct kvg_bench_sse p;
    struct got g = {0};
    kvg_bench_sse_init(&p, 0);
    for (size_t i = 0; stream[i]; i++)
        CHECK_INT(kvg_bench_sse_feed(&p, stream + i, 1, collect, &g), 0);
    CHECK_INT(g.n, 3);
    kvg_bench_sse_free(&p);
    /* An event that never ends stops at the cap. */
    kvg_bench_sse_init(&p, 64);
    char big[200];
    memset(big, 'x', sizeof big);
    memcpy(big, "data: ", 6);
    CHECK_INT(kvg_bench_sse_feed(&p, big, sizeof big, collect, &g), KVG_ETOOBIG);
    kvg_bench_sse_free(&p);
}

static int stop_at_first(void *ud, const char *data, size_t len)
{
    (void)ud;
    (void)data;
    (void)len;
    return 7;
}

TEST(callback_result_stops_feed)
{
    struct kvg_bench_sse p;
    kvg_bench_sse_init(&p, 0);
    CHECK_INT(kvg_bench_sse_feed(&p, stream, strlen(stream), stop_at_first, NULL), 7);
    kvg_bench_sse_free(&p);
}

TEST(chunk_fields)
{
    struct kvg_bench_chunk c;
    const char *t =
        "{\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"he\\u006clo\"}],\"usage\":null}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 5);
    CHECK(!memcmp(c.text, "hello", 5));
    CHECK_INT(c.completion_tokens, -1);
    CHECK(!c.done && !c.error);
    kvg_bench_chunk_free(&c);
    t = "{\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 2);
    kvg_bench_chunk_free(&c);
    t = "{\"choices\":[],\"usage\":{\"prompt_tokens\":7201,\"completion_tokens\":64,"
        "\"prompt_tokens_details\":{\"cached_tokens\":7168}}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 0);
    CHECK_INT(c.completion_tokens, 64);
    CHECK_INT(c.prompt_tokens, 7201);
    CHECK_INT(c.cached_tokens, 7168);
    kvg_bench_chunk_free(&c);
    CHECK_INT(kvg_bench_chunk_parse("[DONE]", 6, &c), 0);
    CHECK(c.done);
    kvg_bench_chunk_free(&c);
    t = "{\"error\":{\"message\":\"boom\"}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK(c.error);
    kvg_bench_chunk_free(&c);
    CHECK_INT(kvg_bench_chunk_parse("nope", 4, &c), KVG_EPARSE);
    CHECK_INT(kvg_bench_chunk_parse("[1]", 3, &c), KVG_EPARSE);
}

/* The Responses and Messages streams' events: text deltas, usage at the end
 * (Anthropic's input_tokens without the cache's reads, added back), errors;
 * the other events carry nothing for the client. */
TEST(responses_and_messages_events)
{
    struct kvg_bench_chunk c;
    const char *t =
        "{\"type\":\"response.output_text.delta\",\"delta\":\"ab\",\"sequence_number\":4}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 2);
    CHECK(!memcmp(c.text, "ab", 2) && !c.error);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"response.output_text.done\",\"text\":\"abc\"}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 0); /* the whole text again: not new tokens */
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"response.completed\",\"response\":{\"error\":null,\"usage\":{\"input_tokens\":"
        "27,\"input_tokens_details\":{\"cached_tokens\":16},\"output_tokens\":3}}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.prompt_tokens, 27);
    CHECK_INT(c.cached_tokens, 16);
    CHECK_INT(c.completion_tokens, 3);
    CHECK(!c.error);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\"}}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK(c.error);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"error\",\"code\":\"x\",\"message\":\"boom\"}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK(c.error);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,"
        "\"cache_read_input_tokens\":20,\"output_tokens\":1}}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.prompt_tokens, 25);
    CHECK_INT(c.cached_tokens, 20);
    CHECK_INT(c.completion_tokens, -1);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"},"
        "\"index\":0}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 1);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"{\"},\"index\":1}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.text_len, 0);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{"
        "\"output_tokens\":9}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK_INT(c.completion_tokens, 9);
    CHECK_INT(c.prompt_tokens, -1);
    CHECK_INT(c.cached_tokens, -1);
    kvg_bench_chunk_free(&c);
    t = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}";
    CHECK_INT(kvg_bench_chunk_parse(t, strlen(t), &c), 0);
    CHECK(c.error);
    kvg_bench_chunk_free(&c);
}
