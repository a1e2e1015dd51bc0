/* What routing reads of a request body: duplicate keys refused, a
 * cache_salt seeding the block hashes as the engine seeds its blocks, a
 * Messages body read as the chat request it is. */
#include <stdlib.h>
#include <string.h>

#include "jinja/chat.h"
#include "base/err.h"
#include "kv/hash.h"
#include "proxy/route_input.h"
#include "support/test.h"
#include "tokenizer/tokenizer.h"

static struct kvg_rinput_tokenizer rt;

static void setup(void)
{
    static struct kvg_tok *tok;
    static struct kvg_jinja_chat *chat;
    char err[256];
    if (tok) return;
    CHECK_INT(kvg_tok_load("builtin:bytes", NULL, &tok, err, sizeof err), 0);
    CHECK_INT(kvg_jinja_chat_new(NULL, NULL, NULL, &chat, err, sizeof err), 0);
    rt = (struct kvg_rinput_tokenizer){tok, chat, 16, NULL};
}

static int parse(const char *body, struct kvg_rinput *ri)
{
    char msg[128];
    return kvg_rinput_parse(ri, body, strlen(body), KVG_API_COMPLETIONS, msg, sizeof msg);
}

TEST(duplicate_keys_refused)
{
    struct kvg_rinput ri;
    CHECK(parse("{\"model\":\"a\",\"prompt\":\"x\",\"model\":\"b\"}", &ri) != 0);
    CHECK(parse("{\"model\":\"a\",\"prompt\":[{\"k\":1,\"k\":2}]}", &ri) != 0);
    CHECK(parse("{\"model\":\"a\",\"prompt\":\"x\",\"max_tokens\":1}", &ri) == 0);
    kvg_rinput_free(&ri);
    /* many keys: the sorted path */
    char big[4096];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"prompt\":\"x\"");
    for (int i = 0; i < 40; i++) n += (size_t)snprintf(big + n, sizeof big - n, ",\"k%d\":1", i);
    snprintf(big + n, sizeof big - n, ",\"k7\":2}");
    CHECK(parse(big, &ri) != 0);
    big[n] = 0;
    strcat(big, "}");
    CHECK(parse(big, &ri) == 0);
    kvg_rinput_free(&ri);
}

TEST(model_too_long_refused)
{
    struct kvg_rinput ri;
    char body[600];
    snprintf(body, sizeof body, "{\"model\":\"%0300d\",\"prompt\":\"x\"}", 0);
    CHECK(parse(body, &ri) != 0);
}

TEST(cache_salt_seeds_hashes)
{
    setup();
    char prompt[100];
    memset(prompt, 'a', 64);
    prompt[64] = 0;
    char plain[256], salted[256], other[256];
    snprintf(plain, sizeof plain, "{\"model\":\"m\",\"prompt\":\"%s\"}", prompt);
    snprintf(salted, sizeof salted, "{\"model\":\"m\",\"prompt\":\"%s\",\"cache_salt\":\"t-a\"}",
             prompt);
    snprintf(other, sizeof other, "{\"model\":\"m\",\"prompt\":\"%s\",\"cache_salt\":\"t-b\"}",
             prompt);
    struct kvg_rinput a, b, c;
    CHECK_INT(parse(plain, &a), 0);
    CHECK_INT(parse(salted, &b), 0);
    CHECK_INT(parse(other, &c), 0);
    kvg_rinput_tokenize(&a, &rt, 0);
    kvg_rinput_tokenize(&b, &rt, 0);
    kvg_rinput_tokenize(&c, &rt, 0);
    CHECK(a.nhashes > 0);
    CHECK_INT(a.nhashes, b.nhashes);
    CHECK(a.hashes[0] != b.hashes[0]);
    CHECK(b.hashes[0] != c.hashes[0]);
    uint64_t want[16];
    int n = kvg_kv_hash_request(b.ids, b.nids, 16, NULL, 0, "t-a", 3, want, 16);
    CHECK_INT(n, (int)b.nhashes);
    CHECK(!memcmp(want, b.hashes, b.nhashes * sizeof *want));
    kvg_rinput_free(&a);
    kvg_rinput_free(&b);
    kvg_rinput_free(&c);
    struct kvg_rinput d;
    CHECK(parse("{\"model\":\"m\",\"prompt\":\"x\",\"cache_salt\":5}", &d) != 0);
    CHECK(parse("{\"model\":\"m\",\"prompt\":\"x\",\"cache_salt\":\"\"}", &d) != 0);
}

/* A request whose model is a LoRA adapter is hashed with the adapter's name,
 * as vLLM seeds the adapter's blocks (BlockStored lora_name). */
TEST(adapter_model_seeds_hashes)
{
    setup();
    char body[256];
    snprintf(body, sizeof body, "{\"model\":\"sql-lora\",\"prompt\":\"%064d\"}", 0);
    struct kvg_rinput base, lora;
    CHECK_INT(parse(body, &base), 0);
    CHECK_INT(parse(body, &lora), 0);
    lora.adapter = 1;
    kvg_rinput_tokenize(&base, &rt, 0);
    kvg_rinput_tokenize(&lora, &rt, 0);
    CHECK(lora.nhashes > 0);
    CHECK(base.hashes[0] != lora.hashes[0]);
    uint64_t want[16];
    int n = kvg_kv_hash_request(lora.ids, lora.nids, 16, "sql-lora", 8, NULL, 0, want, 16);
    CHECK_INT(n, (int)lora.nhashes);
    CHECK(!memcmp(want, lora.hashes, lora.nhashes * sizeof *want));
    struct kvg_route_ctx ctx = {0};
    kvg_rinput_ctx(&lora, &ctx);
    CHECK_INT(ctx.lora.len, 8);
    kvg_rinput_ctx(&base, &ctx);
    CHECK_INT(ctx.lora.len, 0);
    kvg_rinput_free(&base);
    kvg_rinput_free(&lora);
}

/* The OpenAI shape kvgate relies on: a body the engine would answer with a
 * 500 is a 400 here, with the field at fault in param. */
static const char *shape_param(const char *body, int chat)
{
    static struct kvg_rinput ri;
    static char param[48];
    char msg[128];
    int rc = kvg_rinput_parse(&ri, body, strlen(body), chat ? KVG_API_CHAT : KVG_API_COMPLETIONS,
                              msg, sizeof msg);
    if (rc == 0) {
        kvg_rinput_free(&ri);
        return "";
    }
    snprintf(param, sizeof param, "%s", ri.bad_param ? ri.bad_param : "?");
    return param;
}

TEST(request_shape_checked_with_param)
{
    CHECK_STR(shape_param("{\"messages\":\"hi\"}", 1), "messages");
    CHECK_STR(shape_param("{\"model\":\"m\"}", 1), "messages");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},\"x\"]}", 1),
              "messages[1]");
    CHECK_STR(shape_param("{\"messages\":[{\"content\":\"a\"}]}", 1), "messages[0].role");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":7,\"content\":\"a\"}]}", 1),
              "messages[0].role");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", 1), "");
    CHECK_STR(shape_param("{\"messages\":[]}", 1), "");
    /* The content a role requires, the roles OpenAI knows. */
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\"}]}", 1), "messages[0].content");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":"
                          "\"system\",\"content\":null}]}",
                          1),
              "messages[1].content");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\",\"content\":7}]}", 1),
              "messages[0].content");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"wizard\",\"content\":\"a\"}]}", 1),
              "messages[0].role");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"assistant\"}]}", 1), "messages[0].content");
    CHECK_STR(shape_param("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                          "\"text\":\"a\"}]},{\"role\":\"assistant\",\"tool_calls\":[]},{"
                          "\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"c\"},{"
                          "\"role\":\"assistant\",\"content\":null}]}",
                          1),
              "");
    CHECK_STR(shape_param("{\"prompt\":7}", 0), "prompt");
    CHECK_STR(shape_param("{\"prompt\":{\"a\":1}}", 0), "prompt");
    CHECK_STR(shape_param("{\"prompt\":[\"a\",1]}", 0), "prompt");
    CHECK_STR(shape_param("{\"prompt\":[1,2.5]}", 0), "prompt");
    CHECK_STR(shape_param("{\"prompt\":[[1,2],[\"x\"]]}", 0), "prompt");
    CHECK_STR(shape_param("{\"prompt\":\"a\"}", 0), "");
    CHECK_STR(shape_param("{\"prompt\":[\"a\",\"b\"]}", 0), "");
    CHECK_STR(shape_param("{\"prompt\":[1,2,3]}", 0), "");
    CHECK_STR(shape_param("{\"prompt\":[[1,2],[3]]}", 0), "");
    CHECK_STR(shape_param("{\"model\":\"m\"}", 0), ""); /* the engine says what it wants */
}

/* A NUL in a prompt is data: routed on the ids the engine computes. */
TEST(nul_in_prompt_is_data)
{
    setup();
    struct kvg_rinput ri;
    const char body[] = "{\"model\":\"m\",\"prompt\":\"a\\u0000b\"}";
    CHECK_INT(parse(body, &ri), 0);
    kvg_rinput_tokenize(&ri, &rt, 0);
    CHECK_INT(ri.tokenize_error, 0);
    CHECK_INT((int)ri.nids, 4); /* builtin:bytes: BOS, a, NUL, b */
    CHECK_INT((int)ri.ids[1], 'a');
    CHECK_INT((int)ri.ids[2], 0);
    CHECK_INT((int)ri.ids[3], 'b');
    kvg_rinput_free(&ri);
    /* Beside U+10FFFF (once the mask, refused) both are read exactly. */
    const char odd[] = "{\"model\":\"m\",\"prompt\":\"a\\u0000\\udbff\\udfff\"}";
    CHECK_INT(parse(odd, &ri), 0);
    kvg_rinput_tokenize(&ri, &rt, 0);
    CHECK_INT(ri.tokenize_error, 0);
    CHECK_INT((int)ri.nids, 7); /* BOS, a, NUL, the 4 bytes of U+10FFFF */
    CHECK_INT((int)ri.ids[2], 0);
    CHECK_INT((int)ri.ids[3], 0xF4);
    kvg_rinput_free(&ri);
}

/* A Messages body is checked by the parse (a client error whatever the
 * policy) and read as its chat form only when the text or the render needs
 * it: the same routing text and token ids as the chat request it is, on
 * each path (placeholders; the plain bytes when a text starts with the
 * placeholders' byte). */
TEST(messages_read_as_their_chat_twin)
{
    setup();
    static const char *const bodies[] = {
        "{\"model\":\"m\",\"max_tokens\":4,\"system\":\"You are a careful assistant who answers "
        "in full sentences.\",\"messages\":[{\"role\":\"user\",\"content\":\"What is the capital "
        "of France, and why is it the capital?\"}]}",
        "{\"model\":\"m\",\"max_tokens\":4,\"system\":[{\"type\":\"text\",\"text\":\"one\"},"
        "{\"type\":\"text\",\"text\":\"two\"}],\"messages\":[{\"role\":\"system\",\"content\":"
        "\"three\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
        "{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"assistant\",\"content\":\"c\"}]}",
        "{\"model\":\"m\",\"max_tokens\":4,\"system\":[{\"type\":\"text\",\"text\":\"\\u0001 a "
        "system prompt that starts with the placeholders' byte\"},{\"type\":\"text\",\"text\":"
        "\"and a second block\"}],\"messages\":[{\"role\":\"user\",\"content\":\"\\u0001r0\"}]}",
        NULL, /* a tool schema deeper than the fast reader reads: cJSON's trees */
    };
    char deep[8192];
    size_t k = (size_t)snprintf(deep, sizeof deep,
                                "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":"
                                "\"user\",\"content\":\"a question long enough to be named, not "
                                "copied\"}],\"tools\":[{\"name\":\"t\",\"input_schema\":");
    for (int d = 0; d < 600; d++) k += (size_t)snprintf(deep + k, sizeof deep - k, "{\"a\":");
    k += (size_t)snprintf(deep + k, sizeof deep - k, "1");
    for (int d = 0; d < 600; d++) deep[k++] = '}';
    snprintf(deep + k, sizeof deep - k, "}]}");
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        const char *body = bodies[i] ? bodies[i] : deep;
        struct kvg_rinput m, m2, c;
        char msg[256];
        CHECK_INT(kvg_rinput_parse(&m, body, strlen(body), KVG_API_MESSAGES, msg, sizeof msg), 0);
        CHECK_INT(kvg_rinput_parse(&m2, body, strlen(body), KVG_API_MESSAGES, msg, sizeof msg), 0);
        CHECK(m.rjson == NULL); /* not read yet */
        struct kvg_api_err e;
        struct kvg_buf twin;
        kvg_buf_init(&twin, 0);
        CHECK_INT(kvg_api_to_chat(KVG_API_MESSAGES, m.json, &twin, &e), 0);
        CHECK_INT(kvg_rinput_parse(&c, twin.data, twin.len, KVG_API_CHAT, msg, sizeof msg), 0);
        CHECK_INT(kvg_rinput_text(&m), 0);
        CHECK_INT(kvg_rinput_text(&c), 0);
        CHECK(m.text.len > 0 && m.text.len == c.text.len &&
              !memcmp(m.text.data, c.text.data, c.text.len));
        /* m2: rendered without the text read first */
        kvg_rinput_tokenize(&m2, &rt, 0);
        kvg_rinput_tokenize(&c, &rt, 0);
        /* The deep schema is past the template's nesting: the twin's refusal. */
        CHECK_INT(m2.tokenize_error, c.tokenize_error);
        CHECK(bodies[i] ? m2.tokenize_error == 0 && m2.nids > 0 : m2.tokenize_error != 0);
        CHECK(m2.nids == c.nids && (!c.nids || !memcmp(m2.ids, c.ids, c.nids * sizeof *c.ids)));
        kvg_buf_free(&twin);
        kvg_rinput_free(&m);
        kvg_rinput_free(&m2);
        kvg_rinput_free(&c);
    }
    /* Refused by the parse, in the parameter's name, tree or no tree. */
    static const char *const bad[][2] = {
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {"{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
         "\"type\":\"nope\"}]}]}",
         "messages[0].content[0].type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct kvg_rinput m;
        char msg[256];
        CHECK_INT(
            kvg_rinput_parse(&m, bad[i][0], strlen(bad[i][0]), KVG_API_MESSAGES, msg, sizeof msg),
            KVG_EPARSE);
        CHECK_STR(m.bad_param ? m.bad_param : "", bad[i][1]);
    }
}
