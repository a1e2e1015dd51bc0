/* Unit tests for kvg_api_to_chat: Responses and Messages requests as the
 * chat request vLLM makes of them (exact JSON out), the shapes Codex and
 * Claude Code send, and the refusals with their parameter. */
#include "support/test.h"

#include <errno.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

static char g_out[65536];
static struct kvg_api_err g_err;

static int g_refs_differ, g_refs_used, g_refs_declined;

/* The placeholder path (kvg_api_to_chat_refs, then parse and resolve) must
 * give the very tree the bytes give: counted in g_refs_differ. */
static void check_refs(enum kvg_api_kind kind, const cJSON *t, const char *bytes, size_t n)
{
    struct kvg_json_arena a1 = {0}, a2 = {0};
    struct kvg_api_refs refs = {0};
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    struct kvg_api_err e;
    cJSON *want = kvg_json_parse_in(&a1, bytes, n), *got = NULL;
    /* every string a placeholder: each writer of the converters is tried */
    kvg__api_ref_min_len = 1;
    int rc = kvg_api_to_chat_refs(kind, t, &b, &refs, &e);
    kvg__api_ref_min_len = 48;
    if (rc == 0) {
        got = kvg_json_parse_in(&a2, b.data, b.len);
        if (got && !a2.blocks) { /* declined by the fast reader: the caller converts plainly */
            g_refs_declined++;
            goto done;
        }
        if (got && kvg_api_refs_resolve(got, &refs)) got = NULL;
    } else if (rc == -EAGAIN) { /* composed text starting with the mark: likewise */
        g_refs_declined++;
        goto done;
    }
    g_refs_used += refs.n > 0;
    if (!want || !got || !kvg_json_same(want, got)) {
        g_refs_differ++;
        printf("# refs path differs for %.*s\n", (int)(n > 200 ? 200 : n), bytes);
        char *x = got ? cJSON_PrintUnformatted(got) : NULL;
        printf("# got %s\n# refs bytes %.*s\n", x ? x : "(none)", (int)b.len, b.data);
        free(x);
    }
done:
    kvg_json_free(&a2, got);
    kvg_json_free(&a1, want);
    kvg_api_refs_free(&refs);
    kvg_buf_free(&b);
}

/* The chat body (NUL-ended copy in g_out), or NULL with g_err filled. */
static const char *conv(enum kvg_api_kind kind, const char *json)
{
    struct kvg_json_arena a = {0};
    cJSON *t = kvg_json_parse_in(&a, json, strlen(json));
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    memset(&g_err, 0, sizeof(g_err));
    if (!t) {
        printf("# unparsable test input\n");
        return NULL;
    }
    int rc = kvg_api_to_chat(kind, t, &b, &g_err);
    if (!rc) check_refs(kind, t, b.data, b.len);
    kvg_json_free(&a, t);
    if (rc) {
        kvg_buf_free(&b);
        return NULL;
    }
    snprintf(g_out, sizeof(g_out), "%.*s", (int)b.len, b.data);
    kvg_buf_free(&b);
    /* every output is JSON */
    cJSON *back = cJSON_ParseWithLength(g_out, strlen(g_out));
    if (!back) return "(not json)";
    cJSON_Delete(back);
    return g_out;
}

#define R KVG_API_RESPONSES
#define M KVG_API_MESSAGES

TEST(responses_string_input_and_instructions)
{
    CHECK_STR(conv(R, "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":\"Hi\","
                      "\"max_output_tokens\":64,\"temperature\":0.7,\"stream\":true,"
                      "\"store\":false,\"metadata\":{\"a\":1}}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
              "{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":64,\"temperature\":0.7,"
              "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    /* empty instructions add nothing, as in the engine */
    CHECK_STR(conv(R, "{\"model\":\"m\",\"instructions\":\"\",\"input\":\"x\",\"stream\":false}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"stream\":false}");
}

TEST(responses_items_roles_and_parts)
{
    CHECK_STR(conv(R, "{\"model\":\"m\",\"input\":["
                      "{\"role\":\"developer\",\"content\":\"dev rules\"},"
                      "{\"type\":\"message\",\"role\":\"user\",\"content\":["
                      "{\"type\":\"input_text\",\"text\":\"look\"},"
                      "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,AA\","
                      "\"detail\":\"low\"}]},"
                      "{\"type\":\"message\",\"role\":\"system\",\"content\":[{\"type\":"
                      "\"input_text\",\"text\":\"s\"}]}]}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"dev rules\"},"
              "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
              "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AA\","
              "\"detail\":\"low\"}}]},"
              "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"s\"}]}]}");
}

TEST(responses_tool_turns_merge_into_one_assistant_message)
{
    /* reasoning, then the text, then two calls: one assistant turn; the
     * outputs as tool messages; an assistant item after a full one starts
     * a new message */
    CHECK_STR(conv(R, "{\"model\":\"m\",\"input\":["
                      "{\"role\":\"user\",\"content\":\"q\"},"
                      "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"content\":["
                      "{\"type\":\"reasoning_text\",\"text\":\"think\"}],"
                      "\"encrypted_content\":\"opaque\"},"
                      "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_1\",\"status\":"
                      "\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"calling\","
                      "\"annotations\":[]}]},"
                      "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"ls\","
                      "\"arguments\":\"{\\\"d\\\":\\\"/\\\"}\"},"
                      "{\"type\":\"function_call\",\"call_id\":\"c2\",\"namespace\":\"ma\","
                      "\"name\":\"spawn\",\"arguments\":\"{}\"},"
                      "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"a b\"},"
                      "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":["
                      "{\"type\":\"input_text\",\"text\":\"ok\"}]},"
                      "{\"role\":\"assistant\",\"content\":\"done\"},"
                      "{\"role\":\"assistant\",\"content\":\"more\"}]}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"},"
              "{\"role\":\"assistant\",\"content\":\"calling\",\"reasoning\":\"think\","
              "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
              "\"ls\",\"arguments\":\"{\\\"d\\\":\\\"/\\\"}\"}},{\"id\":\"c2\",\"type\":"
              "\"function\",\"function\":{\"name\":\"ma__spawn\",\"arguments\":\"{}\"}}]},"
              "{\"role\":\"tool\",\"content\":\"a b\",\"tool_call_id\":\"c1\"},"
              "{\"role\":\"tool\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],"
              "\"tool_call_id\":\"c2\"},"
              "{\"role\":\"assistant\",\"content\":\"done\"},"
              "{\"role\":\"assistant\",\"content\":\"more\"}]}");
    /* a call with no assistant message before it opens one; a summary is
     * the reasoning when there is no content */
    CHECK_STR(conv(R, "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\","
                      "\"arguments\":\"1\"},{\"type\":\"reasoning\",\"summary\":[{\"type\":"
                      "\"summary_text\",\"text\":\"sum\"}]}]}"),
              "{\"messages\":[{\"role\":\"assistant\",\"reasoning\":\"sum\",\"tool_calls\":["
              "{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":"
              "\"1\"}}]}]}");
}

/* What Codex sends (reference agent-wire.md): developer messages, function
 * and namespace tools, the hosted web_search, additional_tools items,
 * store/include/prompt_cache_key/reasoning/client_metadata, no
 * instructions and no max_output_tokens. */
TEST(responses_codex_shape)
{
    CHECK_STR(conv(R, "{\"model\":\"sim-coder\",\"input\":["
                      "{\"type\":\"additional_tools\",\"role\":\"developer\",\"tools\":["
                      "{\"type\":\"namespace\",\"name\":\"clock\",\"description\":\"d\",\"tools\":["
                      "{\"type\":\"function\",\"name\":\"now\",\"parameters\":{\"type\":"
                      "\"object\",\"properties\":{}}},{\"type\":\"custom\",\"name\":\"x\"}]}]},"
                      "{\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\":"
                      "\"input_text\",\"text\":\"base\"}]},"
                      "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                      "\"input_text\",\"text\":\"<env/>\"}]},"
                      "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                      "\"input_text\",\"text\":\"hi\"}]}],"
                      "\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\",\"description\":"
                      "\"run\",\"strict\":false,\"parameters\":{\"type\":\"object\",\"properties\":"
                      "{\"cmd\":{\"type\":\"string\"}},\"required\":[\"cmd\"]}},"
                      "{\"type\":\"namespace\",\"name\":\"multi_agent_v1\",\"description\":\"m\","
                      "\"tools\":[{\"type\":\"function\",\"name\":\"spawn\",\"parameters\":{}}]},"
                      "{\"type\":\"web_search\",\"external_web_access\":false}],"
                      "\"tool_choice\":\"auto\",\"parallel_tool_calls\":true,"
                      "\"reasoning\":{\"summary\":\"auto\"},\"store\":false,"
                      "\"include\":[\"reasoning.encrypted_content\"],\"stream\":true,"
                      "\"prompt_cache_key\":\"th-1\",\"client_metadata\":{\"x\":\"y\"}}"),
              "{\"model\":\"sim-coder\",\"messages\":["
              "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"base\"}]},"
              "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<env/>\"}]},"
              "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}],"
              "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"exec_command\","
              "\"description\":\"run\",\"parameters\":{\"type\":\"object\",\"properties\":"
              "{\"cmd\":{\"type\":\"string\"}},\"required\":[\"cmd\"]},\"strict\":false}},"
              "{\"type\":\"function\",\"function\":{\"name\":\"multi_agent_v1__spawn\","
              "\"parameters\":{}}},"
              "{\"type\":\"function\",\"function\":{\"name\":\"clock__now\",\"parameters\":"
              "{\"type\":\"object\",\"properties\":{}}}}],"
              "\"tool_choice\":\"auto\",\"parallel_tool_calls\":true,\"stream\":true,"
              "\"stream_options\":{\"include_usage\":true}}");
}

TEST(responses_options)
{
    CHECK_STR(
        conv(R, "{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],"
                "\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"},\"top_p\":0.5,"
                "\"top_k\":20,\"reasoning\":{\"effort\":\"low\"},\"text\":{\"format\":"
                "{\"type\":\"json_schema\",\"name\":\"s\",\"schema\":{\"type\":\"object\"},"
                "\"strict\":true}}}"),
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":"
        "\"function\",\"function\":{\"name\":\"f\"}},\"top_p\":0.5,\"top_k\":20,"
        "\"reasoning_effort\":\"low\",\"response_format\":{\"type\":\"json_schema\","
        "\"json_schema\":{\"name\":\"s\",\"schema\":{\"type\":\"object\"},\"strict\":true}}}");
    /* only hosted tools: neither tools nor tool_choice */
    CHECK_STR(conv(R, "{\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}],\"tool_choice\":"
                      "\"required\"}"),
              "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
}

TEST(responses_nul_and_escapes_kept)
{
    CHECK_STR(conv(R, "{\"input\":\"a\\u0000b\\\"\\n\\u00e9\"}"),
              "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\\\"\\n\xc3\xa9\"}]}");
}

TEST(responses_refusals_name_their_param)
{
    CHECK(!conv(R,
                "{\"input\":[{\"role\":\"user\",\"content\":\"a\"},{\"type\":\"web_search_call\","
                "\"id\":\"w\"}]}"));
    CHECK_STR(g_err.param, "input[1].type");
    CHECK(strstr(g_err.msg, "web_search_call"));
    CHECK(!conv(R, "{\"input\":[{\"type\":\"item_reference\",\"id\":\"x\"}]}"));
    CHECK_STR(g_err.param, "input[0].type");
    CHECK(!conv(R, "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                   "\"text\":\"a\"},{\"type\":\"input_file\",\"file_id\":\"f\"}]}]}"));
    CHECK_STR(g_err.param, "input[0].content[1].type");
    CHECK(!conv(R, "{\"input\":[{\"role\":\"robot\",\"content\":\"a\"}]}"));
    CHECK_STR(g_err.param, "input[0].role");
    CHECK(!conv(R, "{\"input\":[{\"role\":\"user\"}]}"));
    CHECK_STR(g_err.param, "input[0].content");
    CHECK(!conv(R, "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\"}]}"));
    CHECK_STR(g_err.param, "input[0].arguments");
    CHECK(!conv(R, "{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\"}]}"));
    CHECK_STR(g_err.param, "input[0].output");
    CHECK(!conv(R, "{\"input\":[5]}"));
    CHECK_STR(g_err.param, "input[0]");
    CHECK(!conv(R, "{\"input\":7}"));
    CHECK_STR(g_err.param, "input");
    CHECK(!conv(R, "{\"input\":\"x\",\"max_output_tokens\":\"9\"}"));
    CHECK_STR(g_err.param, "max_output_tokens");
    CHECK(!conv(R, "{\"input\":\"x\",\"max_output_tokens\":1.5}"));
    CHECK_STR(g_err.param, "max_output_tokens");
    CHECK(!conv(R, "{\"input\":\"x\",\"model\":3}"));
    CHECK_STR(g_err.param, "model");
    CHECK(!conv(R, "{\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}"));
    CHECK_STR(g_err.param, "tools[0].name");
    CHECK(!conv(R, "{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],"
                   "\"tool_choice\":\"sometimes\"}"));
    CHECK_STR(g_err.param, "tool_choice");
    CHECK(!conv(R, "{\"input\":\"x\",\"stream\":1}"));
    CHECK_STR(g_err.param, "stream");
    CHECK(!conv(R, "[1]"));
    CHECK_STR(g_err.param, "");
    CHECK(g_err.msg[0]);
}

TEST(to_chat_failure_leaves_out_unchanged)
{
    struct kvg_json_arena a = {0};
    const char *j = "{\"input\":[{\"role\":\"user\",\"content\":\"a\"},{\"type\":\"bogus\"}]}";
    cJSON *t = kvg_json_parse_in(&a, j, strlen(j));
    struct kvg_buf b;
    struct kvg_api_err e;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_buf_append_str(&b, "keep"), 0);
    CHECK_INT(kvg_api_to_chat(R, t, &b, &e), KVG_EPARSE);
    CHECK_INT(b.len, 4);
    CHECK_INT(kvg_api_to_chat(KVG_API_CHAT, t, &b, &e), KVG_EPARSE);
    kvg_json_free(&a, t);
    kvg_buf_free(&b);
}

TEST(messages_basic)
{
    CHECK_STR(conv(M, "{\"model\":\"m\",\"max_tokens\":100,\"system\":\"sys\",\"messages\":["
                      "{\"role\":\"user\",\"content\":\"hi\"},"
                      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"yo\"}]}],"
                      "\"stop_sequences\":[\"END\"],\"temperature\":1,\"top_p\":0.9,\"top_k\":5,"
                      "\"stream\":true,\"metadata\":{\"user_id\":\"u\"}}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},"
              "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yo\"}],"
              "\"max_tokens\":100,\"stop\":[\"END\"],\"temperature\":1,\"top_p\":0.9,\"top_k\":5,"
              "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
}

TEST(messages_tool_turns)
{
    CHECK_STR(conv(M, "{\"model\":\"m\",\"max_tokens\":10,\"messages\":["
                      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                      "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":"
                      "\"image/png\",\"data\":\"QQ==\"}}]},"
                      "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":"
                      "\"hm\",\"signature\":\"s\"},{\"type\":\"redacted_thinking\",\"data\":\"x\"},"
                      "{\"type\":\"text\",\"text\":\"calling\"},{\"type\":\"tool_use\",\"id\":"
                      "\"tu1\",\"name\":\"Bash\",\"input\":{\"cmd\":\"ls\",\"n\":2}}]},"
                      "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
                      "\"tu1\",\"content\":[{\"type\":\"text\",\"text\":\"l1\"},{\"type\":\"text\","
                      "\"text\":\"l2\"},{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":"
                      "\"http://i/x.png\"}}]},{\"type\":\"text\",\"text\":\"next\"}]},"
                      "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
                      "\"tu2\",\"content\":\"only\",\"is_error\":true}]}],"
                      "\"tools\":[{\"name\":\"Bash\",\"description\":\"run\",\"input_schema\":"
                      "{\"type\":\"object\"},\"cache_control\":{\"type\":\"ephemeral\"}},"
                      "{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}],"
                      "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true}}"),
              "{\"model\":\"m\",\"messages\":["
              "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":"
              "\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,QQ==\"}}]},"
              "{\"role\":\"assistant\",\"content\":\"calling\",\"reasoning\":\"hm\",\"tool_calls\":"
              "[{\"id\":\"tu1\",\"type\":\"function\",\"function\":{\"name\":\"Bash\","
              "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\",\\\"n\\\":2}\"}}]},"
              "{\"role\":\"tool\",\"tool_call_id\":\"tu1\",\"content\":\"l1\\nl2\"},"
              "{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
              "\"http://i/x.png\"}}]},"
              "{\"role\":\"user\",\"content\":\"next\"},"
              "{\"role\":\"tool\",\"tool_call_id\":\"tu2\",\"content\":\"only\"}],"
              "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"description\":"
              "\"run\",\"parameters\":{\"type\":\"object\"}}}],\"tool_choice\":\"required\","
              "\"parallel_tool_calls\":false,\"max_tokens\":10}");
}

/* What Claude Code sends (reference agent-wire.md): system as 3 text blocks
 * (the first its billing header) with cache_control, a role "system"
 * message after the first user message, thinking adaptive,
 * context_management, output_config, metadata. */
TEST(messages_claude_code_shape)
{
    CHECK_STR(
        conv(M, "{\"model\":\"sim-coder\",\"max_tokens\":32000,\"stream\":true,"
                "\"system\":[{\"type\":\"text\",\"text\":\"x-anthropic-billing-header: "
                "cc_version=2.1.332; cc_entrypoint=sdk-cli;\"},{\"type\":\"text\",\"text\":"
                "\"You are Claude Code.\",\"cache_control\":{\"type\":\"ephemeral\"}},"
                "{\"type\":\"text\",\"text\":\" Be careful.\",\"cache_control\":{\"type\":"
                "\"ephemeral\"}}],"
                "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                "\"<system-reminder>r</system-reminder>\"},{\"type\":\"text\",\"text\":"
                "\"fix it\",\"cache_control\":{\"type\":\"ephemeral\"}}]},"
                "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\" cwd=/w\","
                "\"cache_control\":{\"type\":\"ephemeral\"}}]}],"
                "\"tools\":[{\"name\":\"Read\",\"description\":\"read\",\"input_schema\":"
                "{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"string\"}}}}],"
                "\"metadata\":{\"user_id\":\"{\\\"session_id\\\":\\\"s\\\"}\"},"
                "\"thinking\":{\"type\":\"adaptive\",\"display\":\"omitted\"},"
                "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\"}]},"
                "\"output_config\":{\"effort\":\"high\"}}"),
        "{\"model\":\"sim-coder\",\"messages\":["
        "{\"role\":\"system\",\"content\":\"You are Claude Code. Be careful. cwd=/w\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
        "\"<system-reminder>r</system-reminder>\"},{\"type\":\"text\",\"text\":\"fix it\"}]}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"Read\",\"description\":"
        "\"read\",\"parameters\":{\"type\":\"object\",\"properties\":{\"p\":{\"type\":"
        "\"string\"}}}}}],\"tool_choice\":\"auto\",\"max_tokens\":32000,"
        "\"reasoning_effort\":\"high\",\"stream\":true,\"stream_options\":"
        "{\"include_usage\":true}}");
    /* the second turn's system message is a plain string */
    CHECK_STR(conv(M,
                   "{\"model\":\"m\",\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":"
                   "\"S\"}],\"messages\":[{\"role\":\"user\",\"content\":\"u\"},{\"role\":"
                   "\"system\",\"content\":\" T\"},{\"role\":\"assistant\",\"content\":\"a\"}]}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"S T\"},"
              "{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"assistant\",\"content\":\"a\"}],"
              "\"max_tokens\":5}");
}

TEST(messages_engine_defaults)
{
    /* roles ctx and msg read as user; an input_schema without a type gets
     * "type":"object" */
    CHECK_STR(conv(M, "{\"max_tokens\":3,\"messages\":[{\"role\":\"ctx\",\"content\":\"c\"},"
                      "{\"role\":\"msg\",\"content\":[{\"type\":\"text\",\"text\":\"m\"}]}],"
                      "\"tools\":[{\"name\":\"a\",\"input_schema\":{}},{\"name\":\"b\","
                      "\"input_schema\":{\"properties\":{}}}]}"),
              "{\"messages\":[{\"role\":\"user\",\"content\":\"c\"},{\"role\":\"user\","
              "\"content\":\"m\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
              "\"a\",\"parameters\":{\"type\":\"object\"}}},{\"type\":\"function\",\"function\":"
              "{\"name\":\"b\",\"parameters\":{\"properties\":{},\"type\":\"object\"}}}],"
              "\"tool_choice\":\"auto\",\"max_tokens\":3}");
}

TEST(messages_assistant_tool_result_is_text)
{
    /* in an assistant message a tool_result is a text part; alone, the
     * plain string */
    CHECK_STR(conv(M, "{\"max_tokens\":3,\"messages\":[{\"role\":\"assistant\",\"content\":"
                      "[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"r\\\"\"}]},"
                      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                      "{\"type\":\"tool_result\",\"content\":[{\"type\":\"text\",\"text\":\"x\"},"
                      "{\"type\":\"text\",\"text\":\"y\"}]}]}]}"),
              "{\"messages\":[{\"role\":\"assistant\",\"content\":\"Tool result: r\\\"\"},"
              "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
              "{\"type\":\"text\",\"text\":\"Tool result: x\\ny\"}]}],\"max_tokens\":3}");
}

TEST(messages_count_tokens)
{
    /* no max_tokens needed, no sampling members */
    CHECK_STR(conv(KVG_API_COUNT_TOKENS, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                                         "\"content\":\"hi\"}],\"stream\":true,\"top_k\":3}"),
              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
}

TEST(messages_refusals_name_their_param)
{
    CHECK(!conv(M, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
    CHECK_STR(g_err.param, "max_tokens");
    CHECK(!conv(M, "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[]}"));
    CHECK_STR(g_err.param, "max_tokens");
    CHECK(!conv(M, "{\"model\":\"m\",\"max_tokens\":9}"));
    CHECK_STR(g_err.param, "messages");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                   "\"text\",\"text\":\"a\"},{\"type\":\"hologram\"}]}]}"));
    CHECK_STR(g_err.param, "messages[0].content[1].type");
    CHECK(strstr(g_err.msg, "hologram"));
    CHECK(!conv(M, "{\"max_tokens\":9,\"system\":[{\"type\":\"text\",\"text\":\"a\"},5],"
                   "\"messages\":[]}"));
    CHECK_STR(g_err.param, "system[1].type");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[{\"role\":\"tool\",\"content\":\"a\"}]}"));
    CHECK_STR(g_err.param, "messages[0].role");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                   "\"tool_use\",\"name\":\"f\"}]}]}"));
    CHECK_STR(g_err.param, "messages[0].content[0].id");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[],\"tools\":[{\"name\":\"f\"}]}"));
    CHECK_STR(g_err.param, "tools[0].input_schema");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[],\"tool_choice\":{\"type\":\"tool\"}}"));
    CHECK_STR(g_err.param, "tool_choice.name");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[],\"stop_sequences\":[1]}"));
    CHECK_STR(g_err.param, "stop_sequences");
    CHECK(!conv(M, "{\"max_tokens\":9,\"messages\":[1]}"));
    CHECK_STR(g_err.param, "messages[0]");
}

TEST(to_chat_deep_parameters_written_whole)
{
    /* parameters nested as deep as the reader allows */
    struct kvg_buf j;
    kvg_buf_init(&j, 0);
    kvg_buf_append_str(&j, "{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\","
                           "\"parameters\":{\"a\":");
    for (int i = 0; i < 900; i++) kvg_buf_append_str(&j, "[");
    for (int i = 0; i < 900; i++) kvg_buf_append_str(&j, "]");
    kvg_buf_append_str(&j, "}}]}");
    const char *r = conv(R, kvg_buf_cstr(&j));
    if (!r) printf("# %s %s\n", g_err.param, g_err.msg);
    CHECK(r);
    CHECK(strstr(r, "[[[[") != NULL);
    kvg_buf_free(&j);
}

/* The placeholder path over long texts: messages, system blocks, tool
 * results, a tool's input written into a string (its own scratch buffer:
 * no placeholder inside it), a \u0000 and escapes in a long text, a short
 * text that starts with the placeholder's byte. Each conv() compares it
 * with the bytes' tree; this test checks placeholders were used at all. */
TEST(to_chat_refs_same_tree_as_bytes)
{
    const char *L = "a long conversation turn, well past the placeholder's minimum length";
    char body[4096];
    snprintf(body, sizeof body,
             "{\"model\":\"m\",\"max_tokens\":9,\"system\":[{\"type\":\"text\",\"text\":\"%s 1\"},"
             "{\"type\":\"text\",\"text\":\"%s 2\"}],\"messages\":[{\"role\":\"user\",\"content\":"
             "\"%s \\u0000 \\\"quoted\\\" \\\\ \\n done\"},{\"role\":\"assistant\",\"content\":"
             "[{\"type\":\"text\",\"text\":\"%s 3\"},{\"type\":\"tool_use\",\"id\":\"t1\","
             "\"name\":\"f\",\"input\":{\"q\":\"%s 4\"}}]},{\"role\":\"user\",\"content\":"
             "[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"%s 5\"},"
             "{\"type\":\"text\",\"text\":\"\\u0001r0\"}]}]}",
             L, L, L, L, L, L);
    int used = g_refs_used;
    CHECK(conv(M, body) != NULL);
    CHECK(g_refs_used == used + 1);
    snprintf(body, sizeof body,
             "{\"model\":\"m\",\"instructions\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":"
             "[{\"type\":\"input_text\",\"text\":\"%s\"}]},{\"type\":\"function_call\","
             "\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{\\\"x\\\":\\\"%s\\\"}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"%s\"}]}",
             L, L, L, L);
    CHECK(conv(R, body) != NULL);
    CHECK(g_refs_used == used + 2);
    /* joined system blocks starting with the mark: composed text, declined */
    int declined = g_refs_declined;
    CHECK(conv(M, "{\"max_tokens\":9,\"system\":[{\"type\":\"text\",\"text\":\"\\u0001r0\"},"
                  "{\"type\":\"text\",\"text\":\"b\"}],\"messages\":[]}") != NULL);
    CHECK(g_refs_declined == declined + 1);
    CHECK_INT(g_refs_differ, 0);
}

/* A placeholder the refs do not hold is refused, never left in the tree. */
TEST(to_chat_refs_resolve_refuses_unknown)
{
    struct kvg_json_arena a = {0};
    const char *j = "{\"m\":[{\"c\":\"\\u0001r5\"}]}";
    cJSON *t = kvg_json_parse_in(&a, j, strlen(j));
    struct kvg_api_refs refs = {0};
    CHECK(t != NULL);
    CHECK_INT(kvg_api_refs_resolve(t, &refs), KVG_EPARSE);
    kvg_json_free(&a, t);
}
