/* base/json_edit.h: members removed, set and added on the client's bytes,
 * every other byte copied as sent. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "base/err.h"
#include "base/json_edit.h"

#define RM KVG_JSON_REMOVE
#define SET KVG_JSON_SET

static char res[4096];

/* The edited text (in res) and the call's return in *rc. */
static const char *edit(const char *s, const struct kvg_json_edit *e, size_t ne, int *rc)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 1 << 20);
    *rc = kvg_json_edit(s, strlen(s), e, ne, &b);
    snprintf(res, sizeof res, "%.*s", (int)b.len, b.data ? b.data : "");
    kvg_buf_free(&b);
    return res;
}

TEST(remove_at_each_position_keeps_commas_and_whitespace)
{
    int rc;
    struct kvg_json_edit e[] = {RM("x")};
    CHECK_STR(edit("{\"x\":1,\"a\":2,\"b\":3}", e, 1, &rc), "{\"a\":2,\"b\":3}");
    CHECK_INT(rc, 1);
    CHECK_STR(edit("{\"a\":2,\"x\":1,\"b\":3}", e, 1, &rc), "{\"a\":2,\"b\":3}");
    CHECK_STR(edit("{\"a\":2,\"b\":3,\"x\":1}", e, 1, &rc), "{\"a\":2,\"b\":3}");
    CHECK_STR(edit("{\"x\":1}", e, 1, &rc), "{}");
    CHECK_STR(edit(" { \"x\" : [1,{\"y\":\"}\"}] } \n", e, 1, &rc), " { } \n");
    CHECK_STR(edit("{\n  \"a\": 2,\n  \"x\": 1,\n  \"b\": 3\n}", e, 1, &rc),
              "{\n  \"a\": 2,\n  \"b\": 3\n}");
    CHECK_STR(edit("{\n  \"x\": 1,\n  \"a\": 2\n}", e, 1, &rc), "{\n  \"a\": 2\n}");
    CHECK_STR(edit("{\n  \"a\": 2,\n  \"x\": 1\n}", e, 1, &rc), "{\n  \"a\": 2\n}");
    /* absent: nothing changes, the bytes are the input's */
    CHECK_STR(edit("{ \"a\" :2 }", e, 1, &rc), "{ \"a\" :2 }");
    CHECK_INT(rc, 0);
    CHECK_STR(edit("{}", e, 1, &rc), "{}");
    CHECK_INT(rc, 0);
}

TEST(nested_members_and_strings_are_untouched)
{
    int rc;
    struct kvg_json_edit e[] = {RM("x")};
    CHECK_STR(edit("{\"a\":{\"x\":1},\"s\":\"\\\"x\\\":1\",\"x\":{\"x\":[\"x\"]}}", e, 1, &rc),
              "{\"a\":{\"x\":1},\"s\":\"\\\"x\\\":1\"}");
    CHECK_INT(rc, 1);
}

TEST(duplicate_keys)
{
    int rc;
    struct kvg_json_edit r[] = {RM("x")};
    CHECK_STR(edit("{\"x\":1,\"a\":2,\"x\":3,\"x\":4}", r, 1, &rc), "{\"a\":2}");
    CHECK_INT(rc, 3);
    /* SET keeps the first (the one cJSON reads) with the new value; later ones go */
    struct kvg_json_edit s[] = {SET("x", "9")};
    CHECK_STR(edit("{\"x\":1,\"a\":2,\"x\":3}", s, 1, &rc), "{\"x\":9,\"a\":2}");
    CHECK_INT(rc, 2);
}

TEST(set_replaces_in_place_or_adds)
{
    int rc;
    struct kvg_json_edit e[] = {SET("max_tokens", "1"),
                                SET("stream", "false"),
                                {.op = KVG_JSON_EDIT_REPLACE,
                                 .name = "max_completion_tokens",
                                 .value = "1",
                                 .value_len = 1}};
    CHECK_STR(edit("{\"max_tokens\" : 512,\"p\":\"q\"}", e, 3, &rc),
              "{\"max_tokens\" : 1,\"p\":\"q\",\"stream\":false}");
    CHECK_INT(rc, 2);
    CHECK_STR(edit("{\"max_completion_tokens\":7}", e, 3, &rc),
              "{\"max_completion_tokens\":1,\"max_tokens\":1,\"stream\":false}");
    CHECK_INT(rc, 3);
    CHECK_STR(edit("{ }", e, 3, &rc), "{\"max_tokens\":1,\"stream\":false }");
    struct kvg_json_edit first = {
        .op = KVG_JSON_EDIT_SET, .name = "a", .value = "[]", .value_len = 2, .at_start = 1};
    CHECK_STR(edit("  {\"b\":1 , \"c\": 2}", &first, 1, &rc), "  {\"a\":[],\"b\":1 , \"c\": 2}");
    CHECK_STR(edit("{}", &first, 1, &rc), "{\"a\":[]}");
    struct kvg_json_edit both[] = {first, RM("b")};
    CHECK_STR(edit("{\"b\":1}", both, 2, &rc), "{\"a\":[]}");
    CHECK_INT(rc, 2);
}

TEST(set_inside_a_member_object)
{
    int rc;
    struct kvg_json_edit e = {.op = KVG_JSON_EDIT_SET_IN,
                              .name = "stream_options",
                              .inner = "include_usage",
                              .value = "true",
                              .value_len = 4};
    CHECK_STR(edit("{\"a\":1}", &e, 1, &rc),
              "{\"a\":1,\"stream_options\":{\"include_usage\":true}}");
    CHECK_INT(rc, 1);
    CHECK_STR(edit("{\"stream_options\" :null}", &e, 1, &rc),
              "{\"stream_options\" :{\"include_usage\":true}}");
    CHECK_STR(
        edit("{\"stream_options\":{ \"include_usage\": false, \"c\":1 },\"z\":0}", &e, 1, &rc),
        "{\"stream_options\":{ \"include_usage\": true, \"c\":1 },\"z\":0}");
    CHECK_STR(edit("{\"stream_options\":{\"c\":1}}", &e, 1, &rc),
              "{\"stream_options\":{\"c\":1,\"include_usage\":true}}");
    edit("{\"stream_options\":[1]}", &e, 1, &rc);
    CHECK_INT(rc, KVG_EUNSUPP);
}

TEST(escaped_keys_match_their_text)
{
    int rc;
    struct kvg_json_edit e[] = {RM("priority")};
    CHECK_STR(edit("{\"pr\\u0069ority\":9,\"a\":1}", e, 1, &rc), "{\"a\":1}");
    CHECK_INT(rc, 1);
    CHECK_STR(edit("{\"\\u0070riorit\\u0079\":9}", e, 1, &rc), "{}");
    /* a different text is kept, whatever its escapes */
    CHECK_STR(edit("{\"priority\\u0000\":9}", e, 1, &rc), "{\"priority\\u0000\":9}");
    CHECK_INT(rc, 0);
    CHECK_STR(edit("{\"priorit\\u0079x\":9}", e, 1, &rc), "{\"priorit\\u0079x\":9}");
    CHECK_STR(edit("{\"prio\\nrity\":9}", e, 1, &rc), "{\"prio\\nrity\":9}");
    CHECK(kvg_json_key_is("a\\/b", 0, 4, "a/b"));
    CHECK(kvg_json_key_is("a\\\"", 0, 3, "a\""));
    CHECK(!kvg_json_key_is("a\\u00", 0, 5, "a"));
    CHECK(!kvg_json_key_is("\\u00e9", 0, 6, "e"));
    CHECK(!kvg_json_key_is("ab", 0, 2, "a"));
    CHECK(!kvg_json_key_is("a", 0, 1, "ab"));
}

TEST(nul_strings_and_big_integers_are_kept_byte_for_byte)
{
    int rc;
    const char *in = "{\"prompt\":\"a\\u0000b\\udbff\\udfff\",\"seed\":12345678901234567890123,"
                     "\"f\":1.0e+2,\"max_tokens\":3}";
    struct kvg_json_edit e[] = {SET("max_tokens", "1"), RM("kv_transfer_params")};
    CHECK_STR(edit(in, e, 2, &rc),
              "{\"prompt\":\"a\\u0000b\\udbff\\udfff\",\"seed\":12345678901234567890123,"
              "\"f\":1.0e+2,\"max_tokens\":1}");
    CHECK_INT(rc, 1);
}

TEST(refuses_what_is_not_one_object)
{
    int rc;
    struct kvg_json_edit e[] = {RM("x")};
    const char *bad[] = {"", "[1]", "{\"x\":1", "{\"x\" 1}", "{\"x\":1,}", "{x:1}", "\"s\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        edit(bad[i], e, 1, &rc);
        CHECK_INT(rc, KVG_EPARSE);
    }
    struct kvg_json_edit many[KVG_JSON_EDIT_MAX + 1];
    for (size_t i = 0; i < KVG_JSON_EDIT_MAX + 1; i++) many[i] = (struct kvg_json_edit)RM("x");
    edit("{}", many, KVG_JSON_EDIT_MAX + 1, &rc);
    CHECK(rc < 0);
}

TEST(joined_drops_only_the_whitespace_between_members)
{
    struct kvg_json_edit e[] = {RM("x"), SET("z", "0")};
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const char *in = " { \"a\" : 1 ,\n \"x\":2, \"b\":\"s p\" } ";
    CHECK_INT(kvg_json_edit_joined(in, strlen(in), e, 2, &b), 2);
    CHECK_INT((int)b.len, (int)strlen(" {\"a\" : 1,\"b\":\"s p\",\"z\":0} "));
    CHECK(b.data && !memcmp(b.data, " {\"a\" : 1,\"b\":\"s p\",\"z\":0} ", b.len));
    kvg_buf_free(&b);
}
