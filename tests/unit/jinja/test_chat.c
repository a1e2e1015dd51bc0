/* Unit tests of chat request rendering (jinja/chat.c, jinja/chat_request.c): the
 * built-in ChatML template, the OpenAI request -> template context
 * conversion that mirrors vLLM (content parts, tool calls and their
 * arguments, tools, chat_template_kwargs, add_generation_prompt), the error
 * kinds, and rendering one compiled template from several threads. Expected
 * texts of the built-in template were confirmed with @huggingface/jinja. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "support/test.h"
#include "jinja/chat.h"
#include "jinja/chat_int.h"

static int render(const char *tpl, const char *bos, const char *eos, const char *req, char **got,
                  struct kvg_jinja_chat_info *info, char *err, size_t errlen)
{
    struct kvg_jinja_chat *c = NULL;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = kvg_jinja_chat_new(tpl, bos, eos, &c, err, errlen);
    if (!rc) rc = kvg_jinja_chat_render(c, req, strlen(req), NULL, &b, info, err, errlen);
    *got = strdup(b.data && kvg_buf_cstr(&b) ? b.data : "");
    kvg_buf_free(&b);
    kvg_jinja_chat_free(c);
    return rc;
}

#define CHECK_RENDER(tpl, req, want)                                                               \
    do {                                                                                           \
        char err_[512] = "", *got_;                                                                \
        int rc_ = render(tpl, "<s>", "</s>", req, &got_, NULL, err_, sizeof(err_));                \
        char copy_[4096];                                                                          \
        snprintf(copy_, sizeof(copy_), "%s", got_);                                                \
        free(got_);                                                                                \
        if (rc_) kvg_test_fail(__FILE__, __LINE__, "render failed %d: %s", rc_, err_);             \
        CHECK_STR(copy_, want);                                                                    \
    } while (0)

static int rc_of(const char *tpl, const char *req, char *err, size_t errlen)
{
    char *got;
    int rc = render(tpl, NULL, NULL, req, &got, NULL, err, errlen);
    free(got);
    return rc;
}

TEST(builtin_template)
{
    CHECK_RENDER(NULL,
                 "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                 "{\"role\":\"user\",\"content\":\"hi\"}]}",
                 "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                 "<|im_start|>assistant\n");
}

TEST(builtin_template_with_tools_and_calls)
{
    CHECK_RENDER(
        NULL,
        "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": "
        "\\\"Paris\\\", \\\"days\\\": 2}\"}}]},"
        "{\"role\":\"tool\",\"content\":\"sunny\",\"tool_call_id\":\"c1\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"parameters\":{\"type\":\"object\"}}}],\"add_generation_prompt\":false}",
        "<|im_start|>tools\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
        "\"description\": null, \"parameters\": {\"type\": \"object\"}}}\n<|im_end|>\n"
        "<|im_start|>user\nweather?<|im_end|>\n<|im_start|>assistant\n\n<tool_call>{\"name\": "
        "\"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}</tool_call>"
        "<|im_end|>\n<|im_start|>tool\nsunny<|im_end|>\n");
}

TEST(messages_as_vllm_builds_them)
{
    CHECK_RENDER(
        "{{ messages | tojson }}",
        "{\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
        "\"text\":\"\"},{\"type\":\"text\",\"text\":null},\"b\",{\"type\":\"refusal\",\"refusal\":"
        "\"no\"},{\"type\":\"thinking\",\"thinking\":\"t\"}],\"name\":\"bob\",\"extra\":1},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning\":\"why\",\"tool_calls\":["
        "{\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{bad\"}},"
        "{\"id\":\"y\",\"function\":{\"arguments\":\" 1.0 \",\"name\":\"g\"}},"
        "{\"id\":\"z\",\"function\":{\"name\":\"h\"}},"
        "{\"id\":\"w\",\"function\":{\"name\":\"k\",\"arguments\":{\"o\":[1]}}}]},"
        "{\"role\":\"assistant\",\"content\":\"plain\",\"tool_calls\":[]},"
        "{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"x\"},"
        "{\"role\":\"developer\",\"content\":\"d\"}]}",
        "[{\"role\": \"user\", \"content\": \"a\\nb\\nno\\nt\", \"name\": \"bob\"}, "
        "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": ["
        "{\"id\": \"x\", \"function\": {\"name\": \"f\", \"arguments\": {}}}, "
        "{\"id\": \"y\", \"function\": {\"arguments\": 1, \"name\": \"g\"}}, "
        "{\"id\": \"z\", \"function\": {\"name\": \"h\", \"arguments\": {}}}, "
        "{\"id\": \"w\", \"function\": {\"name\": \"k\", \"arguments\": {\"o\": [1]}}}], "
        "\"reasoning\": \"why\", \"reasoning_content\": \"why\"}, "
        "{\"role\": \"assistant\", \"content\": \"plain\"}, "
        "{\"role\": \"tool\", \"content\": \"r\", \"tool_call_id\": \"x\"}, "
        "{\"role\": \"developer\", \"content\": \"d\", \"tools\": null}]");
}

TEST(tools_as_pydantic_dumps_them)
{
    CHECK_RENDER("{{ tools | tojson }}|{{ tools is none }}",
                 "{\"messages\":[],\"tools\":[{\"function\":{\"strict\":true,\"name\":\"f\"},"
                 "\"x\":1},{\"type\":\"function\",\"function\":{\"name\":\"g\",\"description\":"
                 "\"d\",\"parameters\":{\"type\":\"object\"}}}]}",
                 "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": null, "
                 "\"parameters\": null, \"strict\": true}, \"x\": 1}, {\"type\": \"function\", "
                 "\"function\": {\"name\": \"g\", \"description\": \"d\", \"parameters\": "
                 "{\"type\": \"object\"}}}]|false");
    CHECK_RENDER("{{ tools is none }}", "{\"messages\":[]}", "true");
}

TEST(kwargs_and_generation_prompt)
{
    const char *tpl = "{{ add_generation_prompt }} {{ enable_thinking }} {{ bos_token }}|"
                      "{{ eos_token }} {{ reasoning_effort }}";
    CHECK_RENDER(tpl,
                 "{\"messages\":[],\"chat_template_kwargs\":{\"enable_thinking\":false,"
                 "\"bos_token\":\"X\",\"add_generation_prompt\":false,\"tokenize\":true}}",
                 "true false X|</s> ");
    CHECK_RENDER(tpl,
                 "{\"messages\":[],\"add_generation_prompt\":false,\"reasoning_effort\":\"low\"}",
                 "false  <s>|</s> low");
    char *got, err[256];
    struct kvg_jinja_chat_info info;
    CHECK_INT(render("x", NULL, NULL, "{\"messages\":[],\"add_special_tokens\":true}", &got, &info,
                     err, sizeof(err)),
              0);
    free(got);
    CHECK_INT(info.add_special_tokens, 1);
    CHECK_INT(info.add_generation_prompt, 1);
}

TEST(error_kinds)
{
    char err[512];
    CHECK_INT(rc_of("x", "{\"messages\": [", err, sizeof(err)), KVG_EPARSE);
    CHECK_INT(rc_of("x", "[]", err, sizeof(err)), KVG_EPARSE);
    CHECK_INT(rc_of("x", "{}", err, sizeof(err)), KVG_EPARSE);
    CHECK_INT(rc_of("x", "{\"messages\":[{\"role\":1}]}", err, sizeof(err)), KVG_EPARSE);
    CHECK_INT(rc_of("x", "{\"messages\":[],\"add_generation_prompt\":\"yes\"}", err, sizeof(err)),
              KVG_EPARSE);
    CHECK_INT(rc_of("x", "{\"messages\":[],\"tools\":[{\"type\":\"custom\"}]}", err, sizeof(err)),
              KVG_EPARSE);
    CHECK_INT(rc_of("x", "{\"messages\":[],\"chat_template_kwargs\":{\"messages\":[]}}", err,
                    sizeof(err)),
              KVG_EPARSE);
    CHECK_INT(rc_of("x",
                    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
                    "\"image_url\":{\"url\":\"u\"}}]}]}",
                    err, sizeof(err)),
              KVG_EUNSUPP);
    CHECK_INT(rc_of("x",
                    "{\"messages\":[],\"continue_final_message\":true,"
                    "\"add_generation_prompt\":false}",
                    err, sizeof(err)),
              KVG_EUNSUPP);
    /* A NUL is data (issue 13), beside U+10FFFF too (no mask any more). */
    CHECK_INT(rc_of("x", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", err,
                    sizeof(err)),
              0);
    CHECK_INT(rc_of("x",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000\\udbff\\udfff\"}]}",
                    err, sizeof(err)),
              0);
    CHECK_INT(
        rc_of("x", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", err, sizeof(err)),
        KVG_EUTF8);
    CHECK_INT(
        rc_of("x", "{\"messages\":[],\"chat_template_kwargs\":{\"none\":1}}", err, sizeof(err)),
        KVG_ETEMPLATE);
    CHECK_INT(rc_of("{{ raise_exception('roles must alternate') }}", "{\"messages\":[]}", err,
                    sizeof(err)),
              KVG_ETEMPLATE);
    CHECK_STR(err, "roles must alternate");
    CHECK_INT(rc_of("{% if %}", "{\"messages\":[]}", err, sizeof(err)), KVG_ETEMPLATE);
}

TEST(strict_json_for_tool_arguments)
{
    CHECK_INT(kvg__jinja_chat_json_strict("{\"a\": [1, 2.5e3, -0.5]}", 21), 1);
    CHECK_INT(kvg__jinja_chat_json_strict("{\"a\": 01}", 9), 0);
    CHECK_INT(kvg__jinja_chat_json_strict("[1.]", 4), 0);
    CHECK_INT(kvg__jinja_chat_json_strict("\"a\tb\"", 5), 0);
    CHECK_INT(kvg__jinja_chat_json_strict("\"a\\u0000\"", 9), -1);
    CHECK_INT(kvg__jinja_chat_json_strict("\"unterminated", 13), 0);
}

struct worker {
    const struct kvg_jinja_chat *chat;
    const char *req;
    const char *want;
    int bad;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    char err[256];
    for (int i = 0; i < 300; i++) {
        kvg_buf_reset(&b);
        if (kvg_jinja_chat_render(w->chat, w->req, strlen(w->req), NULL, &b, NULL, err,
                                  sizeof(err)) ||
            b.len != strlen(w->want) || memcmp(b.data, w->want, b.len))
            w->bad++;
    }
    kvg_buf_free(&b);
    return NULL;
}

TEST(one_template_many_threads)
{
    struct kvg_jinja_chat *chat;
    char err[256];
    const char *tpl = "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 "
                      "%}{{ m.role | upper }}:{{ m.content[::-1] }};{% endfor %}{{ ns.n }}";
    CHECK_INT(kvg_jinja_chat_new(tpl, NULL, NULL, &chat, err, sizeof(err)), 0);
    const char *req = "{\"messages\":[{\"role\":\"user\",\"content\":\"abc\"},"
                      "{\"role\":\"assistant\",\"content\":\"xyz\"}]}";
    struct worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.chat = chat, .req = req, .want = "USER:cba;ASSISTANT:zyx;2"};
        CHECK_INT(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    kvg_jinja_chat_free(chat);
    for (int i = 0; i < 4; i++) CHECK_INT(w[i].bad, 0);
}
