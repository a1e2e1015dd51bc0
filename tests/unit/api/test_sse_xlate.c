/* Unit tests for the stream translator (api/sse_xlate.c, sse_events.c): a
 * recorded chat stream as the Responses and Messages streams (exact bytes
 * for a short one, the event sequence for a long one), the same output
 * however the input is split (every byte alone, random cuts), the cut
 * stream's error event, an engine's error, the event bound. */
#include "support/test.h"

#include <stdlib.h>

#include "api/api.h"
#include "base/err.h"
#include "base/util.h"

/* One chat chunk whose first choice has the given delta. */
#define CH(delta)                                                                                  \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"         \
    "\"delta\":" delta ",\"finish_reason\":null}]}\n\n"

/* A vLLM chat stream: role chunk, reasoning, text, two tool calls (the
 * first's arguments in pieces), finish, the usage chunk, [DONE]. */
// clang-format off
static const char g_long[] =
    CH("{\"role\":\"assistant\",\"content\":\"\"}")
    CH("{\"reasoning\":\"Let me\"}")
    CH("{\"reasoning\":\" think\"}")
    CH("{\"content\":\"Hello\"}")
    CH("{\"content\":\" w\xc3\xb6rld \\\"q\\\" a\\u0000b\"}")
    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\","
       "\"function\":{\"name\":\"ls\",\"arguments\":\"\"}}]}")
    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"d\\\":\"}}]}")
    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"/\\\"}\"}}]}")
    CH("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\","
       "\"function\":{\"name\":\"cat\",\"arguments\":\"{}\"}}]}")
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":9,"
    "\"total_tokens\":21,\"prompt_tokens_details\":{\"cached_tokens\":8},"
    "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n"
    "data: [DONE]\n\n";

static const char g_short[] =
    CH("{\"role\":\"assistant\",\"content\":\"\"}")
    CH("{\"content\":\"Hi\"}")
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n"
    "data: [DONE]\n\n";
// clang-format on

/* The namespace map the translators are given (NULL: none). */
static const struct kvg_buf *g_namespaces;

static void xctx(struct kvg_api_xctx *x, enum kvg_api_kind kind)
{
    memset(x, 0, sizeof(*x));
    x->namespaces = g_namespaces;
    x->kind = kind;
    x->created = 1700000000;
    snprintf(x->model, sizeof x->model, "sim");
    snprintf(x->id, sizeof x->id, kind == KVG_API_RESPONSES ? "resp_7" : "msg_7");
}

/* Feeds s in pieces: one byte at a time (one_by_one), else cuts[] are the
 * piece lengths (0 ends the list: the rest in one piece; NULL: whole); then
 * ends the stream (cut or not). */
static int run(enum kvg_api_kind kind, const char *s, size_t n, const size_t *cuts, int one_by_one,
               int cut, struct kvg_buf *out)
{
    struct kvg_api_xctx x;
    struct kvg_api_sse_xlate t;
    int rc = 0;
    xctx(&x, kind);
    kvg_api_sse_xlate_init(&t, &x);
    size_t off = 0;
    for (size_t k = 0; !rc && off < n; k++) {
        size_t take = one_by_one ? 1 : cuts && cuts[k] ? cuts[k] : n - off;
        if (take > n - off) take = n - off;
        rc = kvg_api_sse_xlate_feed(&t, s + off, take, out);
        off += take;
    }
    if (!rc) rc = kvg_api_sse_xlate_end(&t, cut, out);
    kvg_api_sse_xlate_free(&t);
    return rc;
}

static char *whole(enum kvg_api_kind kind, const char *s, size_t n)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (run(kind, s, n, NULL, 0, 0, &b)) {
        kvg_buf_free(&b);
        return NULL;
    }
    char *r = strdup(kvg_buf_cstr(&b) ? b.data : "");
    kvg_buf_free(&b);
    return r;
}

TEST(xlate_messages_short_exact)
{
    char *r = whole(KVG_API_MESSAGES, g_short, sizeof g_short - 1);
    CHECK_STR(r,
              "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"
              "\"msg_7\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":"
              "\"sim\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":"
              "0,\"output_tokens\":0}}}\n\n"
              "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
              "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
              "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
              "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
              "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
              "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
              "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":3,"
              "\"output_tokens\":1}}\n\n"
              "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    free(r);
}

TEST(xlate_responses_short_exact)
{
    char *r = whole(KVG_API_RESPONSES, g_short, sizeof g_short - 1);
#define OBJ0(type, seq)                                                                            \
    "event: " type "\ndata: {\"type\":\"" type "\",\"sequence_number\":" seq ",\"response\":"      \
    "{\"id\":\"resp_7\",\"object\":\"response\",\"created_at\":1700000000,\"status\":"             \
    "\"in_progress\",\"error\":null,\"incomplete_details\":null,\"model\":\"sim\",\"output\":[],"  \
    "\"parallel_tool_calls\":true,\"tool_choice\":\"auto\",\"tools\":[],\"usage\":null}}\n\n"
    CHECK_STR(
        r,
        OBJ0("response.created", "0") OBJ0(
            "response.in_progress",
            "1") "event: response.output_item.added\ndata: "
                 "{\"type\":\"response.output_item.added\","
                 "\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"msg_7_0\",\"type\":"
                 "\"message\",\"role\":\"assistant\",\"content\":[],\"status\":\"in_progress\"}}"
                 "\n\n"
                 "event: response.content_part.added\ndata: "
                 "{\"type\":\"response.content_part.added\","
                 "\"sequence_number\":3,\"item_id\":\"msg_7_0\",\"output_index\":0,\"content_"
                 "index\":0,"
                 "\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[],\"logprobs\":"
                 "[]}}\n\n"
                 "event: response.output_text.delta\ndata: "
                 "{\"type\":\"response.output_text.delta\","
                 "\"sequence_number\":4,\"item_id\":\"msg_7_0\",\"output_index\":0,\"content_"
                 "index\":0,"
                 "\"delta\":\"Hi\",\"logprobs\":[]}\n\n"
                 "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\","
                 "\"sequence_number\":5,\"item_id\":\"msg_7_0\",\"output_index\":0,\"content_"
                 "index\":0,"
                 "\"text\":\"Hi\",\"logprobs\":[]}\n\n"
                 "event: response.content_part.done\ndata: "
                 "{\"type\":\"response.content_part.done\","
                 "\"sequence_number\":6,\"item_id\":\"msg_7_0\",\"output_index\":0,\"content_"
                 "index\":0,"
                 "\"part\":{\"type\":\"output_text\",\"text\":\"Hi\",\"annotations\":[],"
                 "\"logprobs\":[]}}\n\n"
                 "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                 "\"sequence_number\":7,\"output_index\":0,\"item\":{\"id\":\"msg_7_0\",\"type\":"
                 "\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
                 "\"text\":"
                 "\"Hi\",\"annotations\":[],\"logprobs\":[]}],\"status\":\"completed\"}}\n\n"
                 "event: response.completed\ndata: "
                 "{\"type\":\"response.completed\",\"sequence_number\":8,"
                 "\"response\":{\"id\":\"resp_7\",\"object\":\"response\",\"created_at\":"
                 "1700000000,"
                 "\"status\":\"completed\",\"error\":null,\"incomplete_details\":null,\"model\":"
                 "\"sim\","
                 "\"output\":[{\"id\":\"msg_7_0\",\"type\":\"message\",\"role\":\"assistant\","
                 "\"content\":"
                 "[{\"type\":\"output_text\",\"text\":\"Hi\",\"annotations\":[],\"logprobs\":[]}],"
                 "\"status\":\"completed\"}],\"parallel_tool_calls\":true,\"tool_choice\":\"auto\","
                 "\"tools\":[],\"usage\":{\"input_tokens\":3,\"input_tokens_details\":{\"cached_"
                 "tokens\":0},"
                 "\"output_tokens\":1,\"output_tokens_details\":{\"reasoning_tokens\":0},"
                 "\"total_tokens\":4}}}\n\n");
    free(r);
}

/* The events of out in order: "type" of each, and each data parses as JSON
 * whose type is the event name. */
static int event_types(const char *s, char *types, size_t cap)
{
    types[0] = 0;
    size_t tl = 0;
    while (*s) {
        if (strncmp(s, "event: ", 7)) return -1;
        const char *nl = strchr(s, '\n');
        if (!nl || strncmp(nl + 1, "data: ", 6)) return -1;
        const char *d = nl + 7, *end = strstr(d, "\n\n");
        if (!end) return -1;
        cJSON *j = cJSON_ParseWithLength(d, (size_t)(end - d));
        cJSON *ty = cJSON_GetObjectItem(j, "type");
        int ok = cJSON_IsString(ty) && strlen(ty->valuestring) == (size_t)(nl - s - 7) &&
                 !strncmp(ty->valuestring, s + 7, (size_t)(nl - s - 7));
        if (ok) tl += (size_t)snprintf(types + tl, cap - tl, "%s ", ty->valuestring);
        cJSON_Delete(j);
        if (!ok || tl >= cap) return -1;
        s = end + 2;
    }
    return 0;
}

TEST(xlate_messages_long_sequence)
{
    char *r = whole(KVG_API_MESSAGES, g_long, sizeof g_long - 1);
    char types[2048];
    CHECK(r);
    CHECK_INT(event_types(r, types, sizeof types), 0);
    CHECK_STR(types,
              "message_start content_block_start content_block_delta content_block_delta "
              "content_block_delta content_block_stop content_block_start content_block_delta "
              "content_block_delta content_block_stop content_block_start content_block_delta "
              "content_block_delta content_block_stop content_block_start content_block_delta "
              "content_block_stop message_delta message_stop ");
    CHECK(strstr(r, "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" think\"}"));
    CHECK(strstr(r, "{\"type\":\"signature_delta\",\"signature\":\""));
    CHECK(strstr(r, "\"text\":\" w\xc3\xb6rld \\\"q\\\" a\\u0000b\""));
    CHECK(strstr(r, "\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"call_a\","
                    "\"name\":\"ls\",\"input\":{}}"));
    CHECK(strstr(r, "\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
                    "\"{\\\"d\\\":\"}"));
    CHECK(strstr(r, "\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"call_b\""));
    CHECK(strstr(r, "\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":"
                    "{\"input_tokens\":12,\"output_tokens\":9}"));
    free(r);
}

TEST(xlate_responses_long_sequence)
{
    char *r = whole(KVG_API_RESPONSES, g_long, sizeof g_long - 1);
    char types[4096];
    CHECK(r);
    CHECK_INT(event_types(r, types, sizeof types), 0);
    CHECK_STR(types,
              "response.created response.in_progress "
              "response.output_item.added response.content_part.added "
              "response.reasoning_text.delta response.reasoning_text.delta "
              "response.reasoning_text.done response.content_part.done response.output_item.done "
              "response.output_item.added response.content_part.added "
              "response.output_text.delta response.output_text.delta "
              "response.output_text.done response.content_part.done response.output_item.done "
              "response.output_item.added response.function_call_arguments.delta "
              "response.function_call_arguments.delta response.function_call_arguments.done "
              "response.output_item.done "
              "response.output_item.added response.function_call_arguments.delta "
              "response.function_call_arguments.done response.output_item.done "
              "response.completed ");
    CHECK(strstr(r, "\"text\":\"Let me think\""));
    CHECK(strstr(r, "\"text\":\"Hello w\xc3\xb6rld \\\"q\\\" a\\u0000b\""));
    CHECK(strstr(r, "{\"id\":\"fc_7_2\",\"type\":\"function_call\",\"call_id\":\"call_a\","
                    "\"name\":\"ls\",\"arguments\":\"{\\\"d\\\":\\\"/\\\"}\",\"status\":"
                    "\"completed\"}"));
    CHECK(strstr(r, "\"usage\":{\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":8},"
                    "\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":2},"
                    "\"total_tokens\":21}"));
    /* the final object repeats the four items */
    const char *fin = strstr(r, "event: response.completed");
    CHECK(fin && strstr(fin, "\"id\":\"rs_7_0\"") && strstr(fin, "\"id\":\"msg_7_1\"") &&
          strstr(fin, "\"id\":\"fc_7_3\""));
    /* sequence numbers count from 0 without a gap */
    int seq = 0;
    for (const char *p = strstr(r, "\"sequence_number\":"); p;
         p = strstr(p + 1, "\"sequence_number\":"), seq++)
        CHECK_INT(atoi(p + 18), seq);
    CHECK_INT(seq, 26);
    free(r);
}

static void split_invariance(enum kvg_api_kind kind, const char *s, size_t n)
{
    char *one = whole(kind, s, n);
    struct kvg_buf b;
    CHECK(one);
    kvg_buf_init(&b, 0);
    CHECK_INT(run(kind, s, n, NULL, 1, 0, &b), 0);
    CHECK_STR(kvg_buf_cstr(&b), one);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 42);
    for (int round = 0; round < 200; round++) {
        size_t cuts[64] = {0};
        for (int k = 0; k < 63; k++) cuts[k] = 1 + kvg_rng_below(&rng, round % 2 ? 7 : 90);
        kvg_buf_reset(&b);
        CHECK_INT(run(kind, s, n, cuts, 0, 0, &b), 0);
        CHECK_STR(kvg_buf_cstr(&b), one);
    }
    kvg_buf_free(&b);
    free(one);
}

TEST(xlate_split_anywhere_same_output)
{
    split_invariance(KVG_API_MESSAGES, g_long, sizeof g_long - 1);
    split_invariance(KVG_API_RESPONSES, g_long, sizeof g_long - 1);
    split_invariance(KVG_API_MESSAGES, g_short, sizeof g_short - 1);
    split_invariance(KVG_API_RESPONSES, g_short, sizeof g_short - 1);
}

/* A Responses request's namespace tools (one in tools, one in an
 * additional_tools item), and a chat stream calling a namespace function,
 * a plain one, and a flat name no namespace declares. */
static const char g_ns_req[] =
    "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"name\":\"ls\"},"
    "{\"type\":\"namespace\",\"name\":\"multi_agent_v1\",\"tools\":[{\"type\":\"function\","
    "\"name\":\"spawn\"},{\"type\":\"custom\",\"name\":\"free\"}]}],"
    "\"input\":[{\"type\":\"additional_tools\",\"tools\":[{\"type\":\"namespace\",\"name\":"
    "\"clock\",\"tools\":[{\"type\":\"function\",\"name\":\"now\"}]}]}]}";
// clang-format off
static const char g_ns_stream[] =
    CH("{\"role\":\"assistant\",\"content\":\"\"}")
    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\","
       "\"function\":{\"name\":\"multi_agent_v1__spawn\",\"arguments\":\"{}\"}}]}")
    CH("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\","
       "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}")
    CH("{\"tool_calls\":[{\"index\":2,\"id\":\"call_c\",\"type\":\"function\","
       "\"function\":{\"name\":\"multi_agent_v1__free\",\"arguments\":\"{}\"}}]}")
    CH("{\"tool_calls\":[{\"index\":3,\"id\":\"call_d\",\"type\":\"function\","
       "\"function\":{\"name\":\"clock__now\",\"arguments\":\"{}\"}}]}")
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: [DONE]\n\n";
// clang-format on

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

TEST(xlate_responses_namespace_calls)
{
    cJSON *req = cJSON_Parse(g_ns_req);
    struct kvg_buf ns;
    kvg_buf_init(&ns, 0);
    CHECK(req);
    CHECK_INT(kvg_api_namespaces(req, &ns), 0);
    CHECK_INT((int)ns.len, (int)sizeof("multi_agent_v1\0spawn\0clock\0now"));
    g_namespaces = &ns;
    char *r = whole(KVG_API_RESPONSES, g_ns_stream, sizeof g_ns_stream - 1);
    CHECK(r);
    /* added (in_progress), done, and the final object: the namespace form */
    CHECK_INT(count_of(r, "\"call_id\":\"call_a\",\"namespace\":\"multi_agent_v1\",\"name\":"
                          "\"spawn\""),
              3);
    CHECK_INT(count_of(r, "\"call_id\":\"call_d\",\"namespace\":\"clock\",\"name\":\"now\""), 3);
    /* a plain function, and a flat name no namespace function has, as they came */
    CHECK_INT(count_of(r, "\"call_id\":\"call_b\",\"name\":\"ls\""), 3);
    CHECK_INT(count_of(r, "\"call_id\":\"call_c\",\"name\":\"multi_agent_v1__free\""), 3);
    CHECK_INT(count_of(r, "\"namespace\""), 6);
    /* the arguments' done event names the function as the item does */
    CHECK(strstr(r, "\"output_index\":0,\"name\":\"spawn\",\"arguments\":\"{}\""));
    /* a Messages stream has no namespaces: flat names */
    char *m = whole(KVG_API_MESSAGES, g_ns_stream, sizeof g_ns_stream - 1);
    CHECK(m && strstr(m, "\"name\":\"multi_agent_v1__spawn\"") && !strstr(m, "namespace"));
    split_invariance(KVG_API_RESPONSES, g_ns_stream, sizeof g_ns_stream - 1);
    g_namespaces = NULL;
    free(m);
    free(r);
    kvg_buf_free(&ns);
    cJSON_Delete(req);
}

TEST(xlate_crlf_comments_and_no_done)
{
    /* CRLF lines, an SSE comment, an event: line, "data:" without a space,
     * no [DONE] and no final blank line: the same answer */
    static const char s[] = ": keep-alive\r\n\r\nevent: chunk\r\ndata:{\"choices\":[{\"delta\":"
                            "{\"content\":\"Hi\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},"
                            "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,"
                            "\"completion_tokens\":1}}";
    char *a = whole(KVG_API_MESSAGES, g_short, sizeof g_short - 1);
    char *b = whole(KVG_API_MESSAGES, s, sizeof s - 1);
    CHECK_STR(b, a);
    free(a);
    free(b);
}

TEST(xlate_cut_stream_gets_error_event)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    size_t half = (sizeof g_long - 1) / 2;
    CHECK_INT(run(KVG_API_MESSAGES, g_long, half, NULL, 0, 1, &b), 0);
    const char *r = kvg_buf_cstr(&b);
    CHECK(strstr(r, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                    "\"message\":\"the engine's stream ended before its end\"}}\n\n"));
    CHECK(!strstr(r, "message_stop"));
    kvg_buf_reset(&b);
    CHECK_INT(run(KVG_API_RESPONSES, g_long, half, NULL, 0, 1, &b), 0);
    r = kvg_buf_cstr(&b);
    CHECK(strstr(r, "event: error\ndata: {\"type\":\"error\",\"sequence_number\":"));
    CHECK(strstr(r, "\"code\":\"server_error\",\"message\":\"the engine's stream ended before its "
                    "end\",\"param\":null}\n\n"));
    CHECK(!strstr(r, "response.completed"));
    kvg_buf_free(&b);
}

TEST(xlate_engine_error_event)
{
    static const char s[] =
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
        "data: {\"error\":{\"message\":\"out of \\\"memory\\\"\",\"code\":500}}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"ignored\"}}]}\n\n"
        "data: [DONE]\n\n";
    char *r = whole(KVG_API_MESSAGES, s, sizeof s - 1);
    CHECK(r);
    CHECK(strstr(r, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"out of "
                    "\\\"memory\\\"\"}}"));
    CHECK(!strstr(r, "ignored"));
    CHECK(!strstr(r, "message_stop"));
    free(r);
}

TEST(xlate_garbage_is_skipped_and_output_stays_json)
{
    static const char s[] = "data: not json\n\ndata: [1,2]\n\ndata: {\"choices\":5}\n\n"
                            "data: {\"choices\":[{\"delta\":{\"content\":7,\"tool_calls\":[5,"
                            "{\"index\":-3,\"function\":{\"name\":\"f\"}}]}}]}\n\n";
    char *r = whole(KVG_API_RESPONSES, s, sizeof s - 1);
    char types[2048];
    CHECK(r);
    CHECK_INT(event_types(r, types, sizeof types), 0);
    CHECK_STR(types, "response.created response.in_progress response.output_item.added "
                     "response.function_call_arguments.done response.output_item.done "
                     "response.completed ");
    free(r);
}

TEST(xlate_event_past_the_bound)
{
    struct kvg_api_xctx x;
    struct kvg_api_sse_xlate t;
    struct kvg_buf out;
    xctx(&x, KVG_API_MESSAGES);
    kvg_api_sse_xlate_init(&t, &x);
    kvg_buf_init(&out, 0);
    char *big = malloc(KVG_API_XLATE_MAX_EVENT + 10);
    memset(big, 'x', KVG_API_XLATE_MAX_EVENT + 10);
    memcpy(big, "data: ", 6);
    int rc = 0;
    for (size_t off = 0; !rc && off < KVG_API_XLATE_MAX_EVENT + 10; off += 4096) {
        size_t n = KVG_API_XLATE_MAX_EVENT + 10 - off;
        rc = kvg_api_sse_xlate_feed(&t, big + off, n < 4096 ? n : 4096, &out);
    }
    CHECK_INT(rc, KVG_ETOOBIG);
    CHECK(t.ev.len <= KVG_API_XLATE_MAX_EVENT);
    free(big);
    kvg_api_sse_xlate_free(&t);
    kvg_buf_free(&out);
}

TEST(xlate_empty_stream_still_answers)
{
    char *r = whole(KVG_API_MESSAGES, "", 0);
    char types[512];
    CHECK(r);
    CHECK_INT(event_types(r, types, sizeof types), 0);
    CHECK_STR(types, "message_start message_delta message_stop ");
    free(r);
}
