/* Added tokens: leftmost-longest matching, single_word, lstrip / rstrip,
 * normalized tokens matched after the normalizer, HF's id assignment, and
 * skip_special on decode. The tokenizer is char-level without merges (each
 * printable ASCII char c has id c - 32), so the ids show exactly where added
 * tokens matched and which spaces they swallowed. Expected ids were taken
 * from HF tokenizers on the same JSON. */
#include <stdlib.h>

#include "test_tok_util.h"

static struct kvg_tok *added_tok(void)
{
    struct kvg_buf v;
    kvg_buf_init(&v, 0);
    kvg_buf_append(&v, "{", 1);
    for (int c = 32; c < 127; c++) {
        char ch = (char)c;
        kvg_buf_append_json_str(&v, &ch, 1);
        kvg_buf_printf(&v, ":%d,", c - 32);
    }
    kvg_buf_append_str(&v, "\"\xC2\xA0\":95,\"\xC3\xA9\":96}");
    /* The flags come first: with a repeated key the first one counts. */
#define A(c, id, flags)                                                                            \
    "{\"id\":" #id ",\"content\":\"" c "\"," flags ",\"single_word\":false,\"lstrip\":false,"      \
    "\"rstrip\":false,\"normalized\":false,\"special\":false}"
    const char *added =
        "[" A("<x>", 97, "\"special\":true,\"lstrip\":true,\"rstrip\":true") "," A("ab", 98, "\"single_word\":true") "," A(
            "[m]", 99,
            "\"normalized\":true") "," A("abc", 100,
                                         "\"a\":"
                                         "0") "," A("abcd", 101,
                                                    "\"a\":0") "," A("bc", 102,
                                                                     "\"a\":0") "," A("<y>", 103,
                                                                                      "\"special\":"
                                                                                      "true,"
                                                                                      "\"lstrip\":"
                                                                                      "true") "," A("\xC3\xA9",
                                                                                                    104,
                                                                                                    "\"normalized\":true") "]";
#undef A
    char *j = tt_json(kvg_buf_cstr(&v), "[]", NULL, added,
                      "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},"
                      "{\"type\":\"NFC\"}]}",
                      NULL, NULL, NULL);
    struct kvg_tok *t = NULL;
    CHECK_INT(tt_load_json(j, &t), 0);
    free(j);
    kvg_buf_free(&v);
    return t;
}

TEST(matching_rules)
{
    struct kvg_tok *t = added_tok();
    CHECK_STR(tt_encs(t, "q  <x>  r"), "81 97 82"); /* lstrip + rstrip swallow the spaces */
    CHECK_STR(tt_encs(t, "<x><x>"), "97 97");
    CHECK_STR(tt_encs(t, " <x>"), "97");
    /* single_word "ab": only between non-word chars. */
    CHECK_STR(tt_encs(t, "ab abc xab ab_ ab\xC3\xA9 ab."),
              "98 0 100 0 88 65 66 0 65 66 63 0 65 66 96 0 98 14");
    CHECK_STR(tt_encs(t, "xyz[M]Z"), "88 89 90 99 90"); /* normalized token after Lowercase */
    CHECK_STR(tt_encs(t, "abcd abce bcd"), "101 0 100 69 0 102 68"); /* leftmost-longest */
    CHECK_STR(tt_encs(t, "a <y> <x>\xC2\xA0 b"), "65 103 97 66");
    CHECK_STR(tt_encs(t, "E\xCC\x81 \xC3\x89"), "96 0 96"); /* é is in the vocabulary: id 96 */
    CHECK_STR(tt_encs(t, ""), "");
    kvg_tok_free(t);
}

TEST(ids_flags_and_decode)
{
    struct kvg_tok *t = added_tok();
    CHECK_INT(kvg_tok_token_to_id(t, "<x>"), 97);
    CHECK_INT(kvg_tok_token_to_id(t, "\xC3\xA9"), 96);
    CHECK_INT(kvg_tok_token_to_id(t, "nope"), -1);
    CHECK(kvg_tok_is_special(t, 97) && kvg_tok_is_special(t, 103));
    CHECK(!kvg_tok_is_special(t, 98) && !kvg_tok_is_special(t, 65));
    CHECK_INT(kvg_tok_vocab_size(t), 104); /* max id + 1 */
    size_t len;
    CHECK_STR(kvg_tok_id_to_token(t, 100, &len), "abc");
    CHECK_INT(len, 3);
    CHECK(kvg_tok_id_to_token(t, 5000, NULL) == NULL);
    /* No decoder: tokens joined with spaces (HF's default). */
    CHECK_STR(tt_dec(t, "81 97 82", 0), "q <x> r");
    CHECK_STR(tt_dec(t, "81 97 82", 1), "q r");
    CHECK_STR(tt_dec(t, "65 103 97 66", 1), "a b");
    CHECK_STR(tt_dec(t, "65 9999 66", 0), "a b"); /* unknown ids dropped, as HF does */
    kvg_tok_free(t);
}

/* The prefix cache cuts after added tokens: with lstrip / rstrip /
 * single_word / leftmost-longest tokens on both sides of every cut, the ids
 * are still those of the uncached encoder. */
TEST(prefix_cache_exact_around_added_tokens)
{
    struct kvg_tok *t = added_tok();
    static const char *const frag[] = {"<x>",      "ab",  "abc", "abcd", "bc", " ",
                                       "  ",       "[M]", "[m]", "<y>",  "q",  "\xC3\xA9",
                                       "\xC2\xA0", "_",   ".",   "a",    "<",  "x>"};
    uint64_t reused = 0;
    CHECK_INT(tt_check_prefix_cache(t, frag, KVG_ARRAY_LEN(frag), 3000, 1 << 20, 7, &reused, NULL),
              0);
    CHECK(reused > 0);
    /* A cache too small for most segments: still exact, still bounded. */
    CHECK_INT(tt_check_prefix_cache(t, frag, KVG_ARRAY_LEN(frag), 1000, 600, 8, NULL, NULL), 0);
    kvg_tok_free(t);
}
