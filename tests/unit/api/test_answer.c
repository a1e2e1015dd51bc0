/* Unit tests for kvg_api_answer_from_chat: whole chat answers as the
 * Responses object and the Messages answer (exact JSON), and what is not a
 * chat answer. */
#include "support/test.h"

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"

static char g_out[16384];

/* The namespace map the translator is given (NULL: none). */
static const struct kvg_buf *g_namespaces;

static const char *ans(enum kvg_api_kind kind, const char *chat)
{
    struct kvg_api_xctx x = {.kind = kind, .created = 1700000000, .namespaces = g_namespaces};
    struct kvg_buf b;
    snprintf(x.model, sizeof x.model, "sim-coder");
    snprintf(x.id, sizeof x.id, kind == KVG_API_RESPONSES ? "resp_abc" : "msg_abc");
    kvg_buf_init(&b, 0);
    int rc = kvg_api_answer_from_chat(&x, chat, strlen(chat), &b);
    snprintf(g_out, sizeof g_out, "%.*s", (int)b.len, b.data ? b.data : "");
    kvg_buf_free(&b);
    if (rc) return NULL;
    cJSON *back = cJSON_Parse(g_out);
    if (!back) return "(not json)";
    cJSON_Delete(back);
    return g_out;
}

static const char chat_full[] =
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\","
    "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi \\\"you\\\"\","
    "\"reasoning\":\"think\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
    "\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"d\\\": \\\"/\\\"}\"}}]},"
    "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,"
    "\"total_tokens\":15,\"prompt_tokens_details\":{\"cached_tokens\":4},"
    "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}";

TEST(answer_responses_object)
{
    CHECK_STR(ans(KVG_API_RESPONSES, chat_full),
              "{\"id\":\"resp_abc\",\"object\":\"response\",\"created_at\":1700000000,"
              "\"status\":\"completed\",\"error\":null,\"incomplete_details\":null,"
              "\"model\":\"sim-coder\",\"output\":["
              "{\"id\":\"rs_abc_0\",\"summary\":[],\"type\":\"reasoning\",\"content\":[{\"text\":"
              "\"think\",\"type\":\"reasoning_text\"}],\"status\":\"completed\"},"
              "{\"id\":\"msg_abc_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":"
              "[{\"type\":\"output_text\",\"text\":\"Hi \\\"you\\\"\",\"annotations\":[],"
              "\"logprobs\":[]}],\"status\":\"completed\"},"
              "{\"id\":\"fc_abc_2\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":"
              "\"ls\",\"arguments\":\"{\\\"d\\\": \\\"/\\\"}\",\"status\":\"completed\"}],"
              "\"parallel_tool_calls\":true,\"tool_choice\":\"auto\",\"tools\":[],\"usage\":"
              "{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},"
              "\"output_tokens\":5,\"output_tokens_details\":{\"reasoning_tokens\":2},"
              "\"total_tokens\":15}}");
}

TEST(answer_responses_incomplete)
{
    CHECK_STR(
        ans(KVG_API_RESPONSES,
            "{\"choices\":[{\"message\":{\"content\":\"abc\"},\"finish_reason\":\"length\"}]}"),
        "{\"id\":\"resp_abc\",\"object\":\"response\",\"created_at\":1700000000,"
        "\"status\":\"incomplete\",\"error\":null,\"incomplete_details\":{\"reason\":"
        "\"max_output_tokens\"},\"model\":\"sim-coder\",\"output\":["
        "{\"id\":\"msg_abc_0\",\"type\":\"message\",\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"output_text\",\"text\":\"abc\",\"annotations\":[],\"logprobs\":[]}],"
        "\"status\":\"completed\"}],\"parallel_tool_calls\":true,\"tool_choice\":\"auto\","
        "\"tools\":[],\"usage\":{\"input_tokens\":0,\"input_tokens_details\":"
        "{\"cached_tokens\":0},\"output_tokens\":0,\"output_tokens_details\":"
        "{\"reasoning_tokens\":0},\"total_tokens\":0}}");
}

TEST(answer_messages)
{
    /* the signature is made from the answer's id and the block's index */
    CHECK_STR(ans(KVG_API_MESSAGES, chat_full),
              "{\"id\":\"msg_abc\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
              "{\"type\":\"thinking\",\"thinking\":\"think\",\"signature\":"
              "\"1e34354c34b18c79c9e8e57cf1597f3c\"},{\"type\":\"text\",\"text\":\"Hi "
              "\\\"you\\\"\"},{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"ls\",\"input\":"
              "{\"d\":\"/\"}}],\"model\":\"sim-coder\",\"stop_reason\":\"tool_use\","
              "\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}");
}

TEST(answer_messages_blocks)
{
    const char *r = ans(KVG_API_MESSAGES, chat_full);
    CHECK(r);
    const char *tail = strstr(r, "\"},{\"type\":\"text\"");
    CHECK(tail);
    CHECK_STR(tail, "\"},{\"type\":\"text\",\"text\":\"Hi \\\"you\\\"\"},{\"type\":\"tool_use\","
                    "\"id\":\"call_1\",\"name\":\"ls\",\"input\":{\"d\":\"/\"}}],"
                    "\"model\":\"sim-coder\",\"stop_reason\":\"tool_use\",\"stop_sequence\":null,"
                    "\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}");
    /* the signature: 32 hex digits, the same for the same answer */
    const char *sig = strstr(r, "\"signature\":\"");
    CHECK(sig);
    sig += 13;
    for (int i = 0; i < 32; i++) CHECK(strchr("0123456789abcdef", sig[i]));
    CHECK_INT(sig[32], '"');
}

TEST(answer_messages_stop_reasons_and_bad_arguments)
{
    CHECK_STR(ans(KVG_API_MESSAGES,
                  "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":[{\"id\":\"c\","
                  "\"function\":{\"name\":\"f\",\"arguments\":\"not json\"}}]},"
                  "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,"
                  "\"completion_tokens\":1}}"),
              "{\"id\":\"msg_abc\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
              "{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"f\",\"input\":{}}],\"model\":"
              "\"sim-coder\",\"stop_reason\":\"max_tokens\",\"stop_sequence\":null,\"usage\":"
              "{\"input_tokens\":3,\"output_tokens\":1}}");
    CHECK_STR(ans(KVG_API_MESSAGES, "{\"choices\":[{\"message\":{\"content\":\"x\"},"
                                    "\"finish_reason\":\"stop\"}]}"),
              "{\"id\":\"msg_abc\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
              "{\"type\":\"text\",\"text\":\"x\"}],\"model\":\"sim-coder\",\"stop_reason\":"
              "\"end_turn\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,"
              "\"output_tokens\":0}}");
    CHECK_STR(ans(KVG_API_MESSAGES, "{\"choices\":[{\"message\":{\"content\":\"a\\u0000b\"},"
                                    "\"finish_reason\":\"abort\"}]}"),
              "{\"id\":\"msg_abc\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
              "{\"type\":\"text\",\"text\":\"a\\u0000b\"}],\"model\":\"sim-coder\",\"stop_reason\":"
              "null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}");
}

TEST(answer_not_a_chat_answer)
{
    static const char *bad[] = {"",
                                "nope",
                                "[]",
                                "{}",
                                "{\"choices\":[]}",
                                "{\"choices\":[{\"message\":3}]}",
                                "{\"choices\":{}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!ans(KVG_API_RESPONSES, bad[i]));
        CHECK_INT(strlen(g_out), 0);
        CHECK(!ans(KVG_API_MESSAGES, bad[i]));
    }
    CHECK(!ans(KVG_API_CHAT, chat_full));
}

TEST(answer_responses_namespace_call)
{
    static const char body[] =
        "{\"tools\":[{\"type\":\"namespace\",\"name\":\"ma\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"spawn\"},{\"type\":\"function\",\"name\":\"a\\u0000b\"}]},"
        "{\"type\":\"namespace\",\"name\":\"ma__x\",\"tools\":[{\"type\":\"function\","
        "\"name\":\"y\"}]}]}";
    struct kvg_json_arena ar = {0};
    cJSON *req = kvg_json_parse_in(&ar, body, sizeof body - 1); /* its NUL escape kept */
    struct kvg_buf ns;
    kvg_buf_init(&ns, 0);
    CHECK(req);
    CHECK_INT(kvg_api_namespaces(req, &ns), 0);
    g_namespaces = &ns;
    const char *r =
        ans(KVG_API_RESPONSES,
            "{\"choices\":[{\"message\":{\"tool_calls\":["
            "{\"id\":\"c1\",\"function\":{\"name\":\"ma__spawn\",\"arguments\":\"{}\"}},"
            "{\"id\":\"c2\",\"function\":{\"name\":\"ma__x__y\",\"arguments\":\"{}\"}},"
            "{\"id\":\"c3\",\"function\":{\"name\":\"ma__spawnx\",\"arguments\":\"{}\"}},"
            "{\"id\":\"c4\",\"function\":{\"name\":\"ma__\",\"arguments\":\"{}\"}}]},"
            "\"finish_reason\":\"tool_calls\"}]}");
    CHECK(r);
    CHECK(r && strstr(r, "\"call_id\":\"c1\",\"namespace\":\"ma\",\"name\":\"spawn\","));
    /* a namespace whose name holds the separator: the declared split */
    CHECK(r && strstr(r, "\"call_id\":\"c2\",\"namespace\":\"ma__x\",\"name\":\"y\","));
    /* names no namespace function has: as the engine gave them */
    CHECK(r && strstr(r, "\"call_id\":\"c3\",\"name\":\"ma__spawnx\","));
    CHECK(r && strstr(r, "\"call_id\":\"c4\",\"name\":\"ma__\","));
    /* the function whose name holds a NUL has no entry */
    CHECK_INT((int)ns.len, (int)sizeof("ma\0spawn\0ma__x\0y"));
    /* Messages answers have no namespaces */
    r = ans(KVG_API_MESSAGES, "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"c1\","
                              "\"function\":{\"name\":\"ma__spawn\",\"arguments\":\"{}\"}}]}}]}");
    CHECK(r && strstr(r, "\"name\":\"ma__spawn\"") && !strstr(r, "namespace"));
    g_namespaces = NULL;
    kvg_buf_free(&ns);
    kvg_json_free(&ar, req);
}
