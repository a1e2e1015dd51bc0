/* Usage accounting: the include_usage rewrite, usage from JSON answers, and
 * the SSE filter on vLLM, SGLang and llama.cpp stream shapes, split at every
 * byte boundary, with LF, CRLF and CR line ends, removing only the injected
 * usage-only chunk and never delaying an event. */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "gateway/usage.h"
#include "support/test.h"

static char *rewrite(const char *body, int *rc)
{
    static char out[4096];
    struct kvg_buf b;
    kvg_buf_init(&b, 1 << 20);
    *rc = kvg_usage_request_rewrite(body, strlen(body), NULL, &b);
    size_t n = b.len < sizeof out - 1 ? b.len : sizeof out - 1;
    memcpy(out, b.data ? b.data : "", n);
    out[n] = 0;
    kvg_buf_free(&b);
    return out;
}

TEST(rewrite_adds_include_usage_only_when_needed)
{
    int rc;
    CHECK_STR(rewrite("{\"model\":\"m\",\"stream\":true}", &rc),
              "{\"stream_options\":{\"include_usage\":true},\"model\":\"m\",\"stream\":true}");
    CHECK_INT(rc, 1);
    CHECK_STR(rewrite("  {\"stream\":true , \"x\": [1, 2]}", &rc),
              "  {\"stream_options\":{\"include_usage\":true},\"stream\":true , \"x\": [1, 2]}");
    CHECK_INT(rc, 1);
    rewrite("{\"model\":\"m\",\"stream\":false}", &rc);
    CHECK_INT(rc, 0);
    rewrite("{\"model\":\"m\"}", &rc);
    CHECK_INT(rc, 0);
    rewrite("{\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &rc);
    CHECK_INT(rc, 0);
    char *o = rewrite("{\"stream\":true,\"stream_options\":{\"include_usage\":false,"
                      "\"continuous_usage_stats\":true}}",
                      &rc);
    CHECK_INT(rc, 1);
    cJSON *j = cJSON_Parse(o);
    cJSON *so = cJSON_GetObjectItem(j, "stream_options");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(so, "include_usage")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(so, "continuous_usage_stats")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "stream")));
    cJSON_Delete(j);
    o = rewrite("{\"stream\":true,\"stream_options\":null}", &rc);
    CHECK_INT(rc, 1);
    CHECK(strstr(o, "\"include_usage\":true") != NULL);
    rewrite("[1,2]", &rc);
    CHECK_INT(rc, KVG_EPARSE);
    rewrite("{\"stream\":tru", &rc);
    CHECK_INT(rc, KVG_EPARSE);
}

TEST(usage_from_non_stream_answers)
{
    struct kvg_usage u;
    const char *vllm = "{\"id\":\"x\",\"choices\":[{\"index\":0}],\"usage\":{\"prompt_tokens\":12,"
                       "\"total_tokens\":19,\"completion_tokens\":7,\"prompt_tokens_details\":"
                       "{\"cached_tokens\":8}}}";
    CHECK_INT(kvg_usage_from_json(vllm, strlen(vllm), &u), 1);
    CHECK_INT(u.prompt_tokens, 12);
    CHECK_INT(u.completion_tokens, 7);
    CHECK_INT(u.total_tokens, 19);
    CHECK_INT(u.cached_tokens, 8);
    const char *llama = "{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4},\"timings\":{}}";
    CHECK_INT(kvg_usage_from_json(llama, strlen(llama), &u), 1);
    CHECK_INT(u.total_tokens, 7);
    CHECK_INT(u.cached_tokens, 0);
    const char *none = "{\"choices\":[],\"usage\":null}";
    CHECK_INT(kvg_usage_from_json(none, strlen(none), &u), 0);
    CHECK_INT(kvg_usage_from_json("nope", 4, &u), KVG_EPARSE);
}

/* The targeted scan agrees with the full parse: on answers whose strings
 * hold braces, quotes and escapes, a nested "usage" that is not the
 * top-level one, duplicate keys, escaped keys, and on broken JSON. */
TEST(usage_scan_agrees_with_the_parse)
{
    const char *cases[] = {
        "{\"id\":\"x\",\"choices\":[{\"index\":0}],\"usage\":{\"prompt_tokens\":12,"
        "\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":8}}}",
        " {\"choices\":[{\"message\":{\"content\":\"\\\"usage\\\":{} }]\\\\\",\"usage\":"
        "{\"prompt_tokens\":1}}}] ,\"usage\" : {\"prompt_tokens\" : 5 , \"total_tokens\":6} }\n",
        "{\"a\":{\"usage\":{\"prompt_tokens\":9}},\"b\":[1,2,[3,{\"usage\":2}]]}",
        "{\"usage\":{\"prompt_tokens\":3},\"usage\":{\"prompt_tokens\":4}}",
        "{\"usag\\u0065\":{\"prompt_tokens\":3}}",
        "{\"usage\":null,\"x\":true,\"y\":-1.5e3}",
        "{}",
        " { } ",
        "{\"usage\":{\"prompt_tokens\":2}",
        "{\"usage\":{\"prompt_tokens\":2}}}",
        "{\"usage\":{\"prompt_tokens\":2},}",
        "{\"usage\" {\"prompt_tokens\":2}}",
        "{\"usage\":{\"prompt_tokens\":2}} x",
        "[{\"usage\":{\"prompt_tokens\":2}}]",
        "{\"s\":\"unterminated}",
        "",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct kvg_usage a = {0}, b = {0};
        int ra = kvg_usage_from_json(cases[i], strlen(cases[i]), &a);
        int rb = kvg_usage_scan_json(cases[i], strlen(cases[i]), &b);
        if (ra != rb) kvg_test_fail(__FILE__, __LINE__, "case %zu: parse %d, scan %d", i, ra, rb);
        CHECK_INT(memcmp(&a, &b, sizeof a), 0);
    }
    struct kvg_usage u;
    CHECK_INT(kvg_usage_scan_json(cases[1], strlen(cases[1]), &u), 1);
    CHECK_INT(u.prompt_tokens, 5);
    CHECK_INT(u.total_tokens, 6);
}

/* ---- streams ---- */

#define CHUNK(content)                                                                             \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"         \
    "\"delta\":{\"content\":\"" content "\"},\"finish_reason\":null}]}\n\n"

/* vLLM with include_usage: the usage rides on an extra chunk, choices []. */
static const char VLLM_USAGE_EV[] =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
    "{\"prompt_tokens\":10,\"total_tokens\":13,\"completion_tokens\":3,"
    "\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n";
static const char VLLM_HEAD[] = CHUNK("Hel") CHUNK("lo") CHUNK("!");
static const char VLLM_FINISH[] =
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
static const char DONE[] = "data: [DONE]\n\n";

/* SGLang: same shape, usage chunk without details. */
static const char SGL_USAGE_EV[] = "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\","
                                   "\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{"
                                   "\"prompt_tokens\":21,\"total_tokens\":26,"
                                   "\"completion_tokens\":5}}\n\n";

/* llama.cpp: usage on the final chunk, next to finish_reason. */
static const char LLAMA_FINAL[] =
    "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"created\":1,"
    "\"id\":\"l\",\"model\":\"m\",\"object\":\"chat.completion.chunk\",\"usage\":{"
    "\"completion_tokens\":9,\"prompt_tokens\":30,\"total_tokens\":39},\"timings\":{}}\n\n";

struct run {
    char out[8192];
    size_t len;
    struct kvg_usage usage;
    int stripped;
    uint64_t tokens, token_events;
};

/* Feeds `in` cut at the given points (ascending, within the input). */
static void feed_cuts(const char *in, size_t n, int strip, const size_t *cuts, size_t ncuts,
                      struct run *r)
{
    struct kvg_usage_sse f;
    struct kvg_buf out;
    kvg_usage_sse_init(&f, strip, 0);
    kvg_buf_init(&out, 1 << 20);
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        CHECK_INT(kvg_usage_sse_feed(&f, in + at, end - at, &out), 0);
        at = end;
    }
    CHECK_INT(kvg_usage_sse_end(&f, &out), 0);
    CHECK(out.len < sizeof r->out);
    memcpy(r->out, out.data ? out.data : "", out.len);
    r->out[out.len] = 0;
    r->len = out.len;
    r->usage = f.usage;
    r->stripped = f.stripped;
    r->tokens = f.tokens;
    r->token_events = f.token_events;
    kvg_buf_free(&out);
    kvg_usage_sse_free(&f);
}

static char *cat(const char *a, const char *b, const char *c, const char *d)
{
    static char buf[4][8192];
    static int k;
    char *o = buf[k++ % 4];
    snprintf(o, sizeof buf[0], "%s%s%s%s", a, b, c ? c : "", d ? d : "");
    return o;
}

/* Every split into two pieces and byte by byte give the one-piece result. */
static void every_split(const char *in, int strip, const char *want, int64_t prompt,
                        int64_t completion)
{
    size_t n = strlen(in);
    struct run r;
    for (size_t cut = 0; cut <= n; cut++) {
        feed_cuts(in, n, strip, &cut, 1, &r);
        if (strcmp(r.out, want)) printf("  cut at %zu\n", cut);
        CHECK_STR(r.out, want);
        CHECK_INT(r.usage.found, 1);
        CHECK_INT(r.usage.prompt_tokens, prompt);
        CHECK_INT(r.usage.completion_tokens, completion);
    }
    size_t *cuts = malloc(n * sizeof *cuts);
    for (size_t i = 0; i < n; i++) cuts[i] = i;
    feed_cuts(in, n, strip, cuts, n, &r);
    free(cuts);
    CHECK_STR(r.out, want);
    CHECK_INT(r.usage.prompt_tokens, prompt);
}

TEST(vllm_injected_usage_chunk_is_removed_at_every_split)
{
    const char *in = cat(VLLM_HEAD, VLLM_FINISH, VLLM_USAGE_EV, DONE);
    const char *want = cat(VLLM_HEAD, VLLM_FINISH, DONE, NULL);
    every_split(in, 1, want, 10, 3);
    struct run r;
    feed_cuts(in, strlen(in), 1, NULL, 0, &r);
    CHECK_INT(r.stripped, 1);
    CHECK_INT(r.usage.cached_tokens, 4);
    CHECK_INT(r.usage.total_tokens, 13);
    /* The client asked for usage itself: nothing removed, byte for byte. */
    every_split(in, 0, in, 10, 3);
}

/* The proxy's token clock (proxy/obs.c) counts the events that carry a
 * token: not the role-only first chunk, the finish-only one, the usage
 * one or [DONE]; an event with two choices is one event of two tokens. */
TEST(token_events_count_token_carrying_events_only)
{
    static const char role[] = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":"
                               "\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
    static const char two[] = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},"
                              "{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\n\n";
    static const char comment[] = ": keep-alive\n\n";
    char in[4096];
    snprintf(in, sizeof in, "%s%s%s%s%s%s", role, VLLM_HEAD, comment, two, VLLM_FINISH,
             VLLM_USAGE_EV);
    size_t n = strlen(in);
    for (size_t cut = 0; cut <= n; cut++) {
        struct run r;
        feed_cuts(in, n, 1, &cut, 1, &r);
        CHECK_INT(r.token_events, 4);
        CHECK_INT(r.tokens, 5);
    }
}

TEST(sglang_shape)
{
    const char *in = cat(CHUNK("a"), SGL_USAGE_EV, DONE, NULL);
    every_split(in, 1, cat(CHUNK("a"), DONE, NULL, NULL), 21, 5);
    every_split(in, 0, in, 21, 5);
}

TEST(llama_cpp_usage_on_the_final_chunk_is_never_removed)
{
    const char *in = cat(CHUNK("x"), LLAMA_FINAL, DONE, NULL);
    every_split(in, 1, in, 30, 9);
    struct run r;
    feed_cuts(in, strlen(in), 1, NULL, 0, &r);
    CHECK_INT(r.stripped, 0);
}

TEST(crlf_and_cr_line_ends)
{
    const char *lf = cat(CHUNK("a"), VLLM_USAGE_EV, DONE, NULL);
    char crlf[4096], cr[4096], want_crlf[4096], want_cr[4096];
    const char *want_lf = cat(CHUNK("a"), DONE, NULL, NULL);
    size_t k = 0, m = 0, w1 = 0, w2 = 0;
    for (const char *p = lf; *p; p++) {
        if (*p == '\n') {
            crlf[k++] = '\r';
            crlf[k++] = '\n';
            cr[m++] = '\r';
        } else {
            crlf[k++] = *p;
            cr[m++] = *p;
        }
    }
    crlf[k] = cr[m] = 0;
    for (const char *p = want_lf; *p; p++) {
        if (*p == '\n') {
            want_crlf[w1++] = '\r';
            want_crlf[w1++] = '\n';
            want_cr[w2++] = '\r';
        } else {
            want_crlf[w1++] = *p;
            want_cr[w2++] = *p;
        }
    }
    want_crlf[w1] = want_cr[w2] = 0;
    every_split(crlf, 1, want_crlf, 10, 3);
    every_split(cr, 1, want_cr, 10, 3);
    every_split(crlf, 0, crlf, 10, 3);
}

TEST(usage_on_a_chunk_with_choices_is_kept)
{
    /* vLLM's continuous_usage_stats: usage on every chunk, then the usage-only one. */
    const char *cont = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],"
                       "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\n";
    const char *in = cat(cont, VLLM_USAGE_EV, DONE, NULL);
    every_split(in, 1, cat(cont, DONE, NULL, NULL), 10, 3);
}

TEST(events_are_forwarded_the_moment_they_end)
{
    struct kvg_usage_sse f;
    struct kvg_buf out;
    kvg_usage_sse_init(&f, 1, 0);
    kvg_buf_init(&out, 1 << 20);
    const char *ev = CHUNK("hi");
    size_t n = strlen(ev);
    CHECK_INT(kvg_usage_sse_feed(&f, ev, n - 1, &out), 0);
    CHECK_INT(out.len, 0); /* held: its blank line has not come */
    CHECK_INT(kvg_usage_sse_feed(&f, ev + n - 1, 1, &out), 0);
    CHECK_INT(out.len, n); /* complete: out at once */
    CHECK(!memcmp(out.data, ev, n));
    /* Comments, other fields and multi-line data pass untouched. */
    const char *misc = ": keep-alive\n\nevent: message\nid: 7\ndata: {\"a\":\ndata: 1}\n\n";
    kvg_buf_reset(&out);
    CHECK_INT(kvg_usage_sse_feed(&f, misc, strlen(misc), &out), 0);
    CHECK_INT(out.len, strlen(misc));
    /* A usage-only event split over two data lines is still recognised. */
    const char *split_usage = "data: {\"choices\":[],\ndata: \"usage\":{\"prompt_tokens\":2,"
                              "\"completion_tokens\":1}}\n\n";
    kvg_buf_reset(&out);
    CHECK_INT(kvg_usage_sse_feed(&f, split_usage, strlen(split_usage), &out), 0);
    CHECK_INT(out.len, 0);
    CHECK_INT(f.usage.prompt_tokens, 2);
    /* Without strip mode bytes go out as they come, partial events too. */
    struct kvg_usage_sse g;
    kvg_usage_sse_init(&g, 0, 0);
    kvg_buf_reset(&out);
    CHECK_INT(kvg_usage_sse_feed(&g, ev, 5, &out), 0);
    CHECK_INT(out.len, 5);
    kvg_usage_sse_free(&g);
    kvg_usage_sse_free(&f);
    kvg_buf_free(&out);
}

TEST(long_events_pass_through_with_bounded_memory)
{
    struct kvg_usage_sse f;
    struct kvg_buf out;
    kvg_usage_sse_init(&f, 1, 64);
    kvg_buf_init(&out, 1 << 20);
    char big[1000];
    memset(big, 'x', sizeof big);
    memcpy(big, "data: ", 6);
    CHECK_INT(kvg_usage_sse_feed(&f, big, sizeof big, &out), 0);
    CHECK_INT(out.len, sizeof big); /* over the cap: forwarded as it comes */
    CHECK(f.ev.cap <= 64);
    CHECK_INT(kvg_usage_sse_feed(&f, "\n\n", 2, &out), 0);
    CHECK_INT(out.len, sizeof big + 2);
    /* The next event is judged normally again. */
    kvg_buf_reset(&out);
    const char *in = cat(VLLM_USAGE_EV, DONE, NULL, NULL);
    kvg_usage_sse_free(&f);
    kvg_usage_sse_init(&f, 1, 0);
    CHECK_INT(kvg_usage_sse_feed(&f, in, strlen(in), &out), 0);
    CHECK_STR(kvg_buf_cstr(&out), DONE);
    kvg_usage_sse_free(&f);
    kvg_buf_free(&out);
}

TEST(unterminated_last_event_is_forwarded_and_read)
{
    const char *in = "data: {\"choices\":[{\"finish_reason\":\"stop\"}],\"usage\":{"
                     "\"prompt_tokens\":5,\"completion_tokens\":6}}";
    struct run r;
    feed_cuts(in, strlen(in), 1, NULL, 0, &r);
    CHECK_STR(r.out, in);
    CHECK_INT(r.usage.completion_tokens, 6);
}

/* A stream cut before its usage chunk is charged what was relayed: one token
 * per chunk and choice with content (vLLM and SGLang stream one token per
 * chunk), not the role-only first chunk, the finish chunk or the usage. */
TEST(relayed_completion_tokens_are_counted)
{
    static const char ROLE[] =
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":\"\"},\"finish_reason\":null}]}\n\n";
    static const char TEXT[] =
        "data: {\"id\":\"t\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":"
        "\"ab\",\"finish_reason\":null}]}\n\n"
        "data: "
        "{\"id\":\"t\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}"
        "\n\n";
    static const char TOOL_AND_REASONING[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n";
    struct run r;
    char *in = cat(ROLE, VLLM_HEAD, VLLM_FINISH, VLLM_USAGE_EV);
    feed_cuts(in, strlen(in), 1, NULL, 0, &r);
    CHECK_INT(r.tokens, 3);
    CHECK_INT(r.usage.completion_tokens, 3);
    /* Cut after two chunks: no usage, two tokens relayed. */
    in = cat(ROLE, CHUNK("a") CHUNK("b"), NULL, NULL);
    feed_cuts(in, strlen(in), 1, NULL, 0, &r);
    CHECK_INT(r.usage.found, 0);
    CHECK_INT(r.tokens, 2);
    feed_cuts(TEXT, strlen(TEXT), 0, NULL, 0, &r);
    CHECK_INT(r.tokens, 1);
    feed_cuts(TOOL_AND_REASONING, strlen(TOOL_AND_REASONING), 0, NULL, 0, &r);
    CHECK_INT(r.tokens, 2);
    /* Byte by byte: the same count. */
    in = cat(VLLM_HEAD, VLLM_HEAD, DONE, NULL);
    size_t n = strlen(in), cuts[2048];
    for (size_t i = 0; i < n && i < 2048; i++) cuts[i] = i;
    feed_cuts(in, n, 1, cuts, n < 2048 ? n : 2048, &r);
    CHECK_INT(r.tokens, 6);
}

/* The other APIs' usage: Responses (input/output tokens, cached in
 * input_tokens_details), Anthropic Messages (input_tokens is the prompt
 * that missed the cache: the cache reads add to it), SGLang's meta_info. */
TEST(usage_dialects_of_whole_answers)
{
    struct kvg_usage u;
    const char *resp = "{\"id\":\"resp_1\",\"object\":\"response\",\"usage\":{\"input_tokens\":40,"
                       "\"input_tokens_details\":{\"cached_tokens\":16},\"output_tokens\":5,"
                       "\"total_tokens\":45}}";
    CHECK_INT(kvg_usage_scan_json(resp, strlen(resp), &u), 1);
    CHECK_INT(u.prompt_tokens, 40);
    CHECK_INT(u.cached_tokens, 16);
    CHECK_INT(u.completion_tokens, 5);
    const char *msg = "{\"type\":\"message\",\"usage\":{\"input_tokens\":30,\"output_tokens\":7}}";
    CHECK_INT(kvg_usage_scan_json(msg, strlen(msg), &u), 1);
    CHECK_INT(u.prompt_tokens, 30);
    CHECK_INT(u.cached_found, 0);
    CHECK_INT(u.completion_tokens, 7);
    const char *anth = "{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":64,"
                       "\"cache_creation_input_tokens\":2,\"output_tokens\":3}}";
    CHECK_INT(kvg_usage_scan_json(anth, strlen(anth), &u), 1);
    CHECK_INT(u.prompt_tokens, 76);
    CHECK_INT(u.cached_tokens, 64);
    const char *sgl = "{\"text\":\"hi\",\"meta_info\":{\"id\":\"x\",\"prompt_tokens\":12,"
                      "\"completion_tokens\":2,\"cached_tokens\":8}}";
    CHECK_INT(kvg_usage_scan_json(sgl, strlen(sgl), &u), 1);
    CHECK_INT(u.prompt_tokens, 12);
    CHECK_INT(u.cached_tokens, 8);
    CHECK_INT(u.completion_tokens, 2);
}

/* A Messages stream: the prompt in message_start, the output in
 * message_delta; one token per content_block_delta. A Responses stream:
 * usage in response.completed's response; one token per *.delta event.
 * Nothing is removed (usage_unasked filters read only), at every split. */
TEST(usage_dialects_of_streams)
{
    static const char MSG_STREAM[] =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
        "\"usage\":{\"input_tokens\":25,\"output_tokens\":0}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    every_split(MSG_STREAM, 0, MSG_STREAM, 25, 2);
    struct run r;
    feed_cuts(MSG_STREAM, strlen(MSG_STREAM), 0, NULL, 0, &r);
    CHECK_INT(r.tokens, 2);
    CHECK_INT(r.token_events, 2); /* message_start and message_delta carry none */
    static const char RESP_STREAM[] =
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
        "\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\n"
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
        "\"delta\":\"x\"}\n\n"
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
        "\"resp_1\",\"usage\":{\"input_tokens\":9,\"input_tokens_details\":{\"cached_tokens\":0},"
        "\"output_tokens\":1,\"total_tokens\":10}}}\n\n";
    every_split(RESP_STREAM, 0, RESP_STREAM, 9, 1);
    feed_cuts(RESP_STREAM, strlen(RESP_STREAM), 0, NULL, 0, &r);
    CHECK_INT(r.tokens, 1);
    CHECK_INT(r.token_events, 1); /* response.created is before the first token */
    CHECK_INT(r.usage.cached_found, 1);
}

/* SGLang's /generate streams cumulative chunks: each one's new tokens are
 * the growth of meta_info.completion_tokens (one chunk may carry two), the
 * last chunk's usage is the answer's, nothing is removed. */
TEST(sglang_generate_stream_tokens)
{
#define GEN(text, n)                                                                               \
    "data: {\"text\":\"" text "\",\"output_ids\":[],\"meta_info\":{\"id\":\"g\","                  \
    "\"prompt_tokens\":7,\"completion_tokens\":" #n ",\"cached_tokens\":0}}\n\n"
    static const char in[] =
        GEN("a", 1) GEN("ab", 2) GEN("abcd", 4) GEN("abcd", 4) "data: [DONE]\n\n";
#undef GEN
    every_split(in, 0, in, 7, 4);
    size_t n = strlen(in);
    for (size_t cut = 0; cut <= n; cut++) {
        struct run r;
        feed_cuts(in, n, 0, &cut, 1, &r);
        CHECK_INT(r.tokens, 4);
        CHECK_INT(r.token_events, 3); /* the repeated last chunk adds none */
    }
}
