/* Unicode pieces of the tokenizer: UTF-8 encoding, lossy
 * decoding (Rust's from_utf8_lossy), White_Space / \w classes, lowercase,
 * and NFC/NFD against a sample of Unicode's own NormalizationTest.txt. */
#include <stdlib.h>

#include "test_tok_util.h"

TEST(utf8_put_roundtrip)
{
    static const uint32_t cps[] = {0, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        char b[4];
        size_t n = kvg_utf8_put(cps[i], b);
        CHECK(kvg_utf8_valid(b, n));
        uint32_t back;
        CHECK_INT(kvg_utf8_decode_fast(b, SIZE_MAX, &back), n);
        CHECK_INT(back, cps[i]);
    }
}

static const char *lossy(const char *s, size_t n)
{
    static char out[256];
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg__tok_utf8_lossy(s, n, &b), 0);
    snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
    kvg_buf_free(&b);
    return out;
}

/* Expected values are Rust's String::from_utf8_lossy results. */
TEST(utf8_lossy_maximal_subparts)
{
    CHECK_STR(lossy("abc", 3), "abc");
    CHECK_STR(lossy("a\xF0\x90\x80z", 5), "a\xEF\xBF\xBDz");                     /* one FFFD */
    CHECK_STR(lossy("\xC0\x80", 2), "\xEF\xBF\xBD\xEF\xBF\xBD");                 /* two */
    CHECK_STR(lossy("\xED\xA0\x80", 3), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* three */
    CHECK_STR(lossy("\xE2\x82"
                    "A",
                    3),
              "\xEF\xBF\xBD"
              "A");
    CHECK_STR(lossy("\xF4\x90\x80\x80", 4), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK_STR(lossy("\xE4\xBD\xA0\xE4", 4), "\xE4\xBD\xA0\xEF\xBF\xBD");
}

TEST(classes)
{
    CHECK(kvg__tok_is_space(' ') && kvg__tok_is_space('\t') && kvg__tok_is_space('\r'));
    CHECK(kvg__tok_is_space(0x85) && kvg__tok_is_space(0xA0) && kvg__tok_is_space(0x3000));
    CHECK(kvg__tok_is_space(0x2028) && kvg__tok_is_space(0x202F));
    CHECK(!kvg__tok_is_space(0x180E) && !kvg__tok_is_space(0x200B) && !kvg__tok_is_space(0x1C));
    CHECK(!kvg__tok_is_space('a'));
    CHECK(kvg__tok_is_word('a') && kvg__tok_is_word('_') && kvg__tok_is_word('7'));
    CHECK(kvg__tok_is_word(0xE9) && kvg__tok_is_word(0x4F60) && kvg__tok_is_word(0x0301));
    CHECK(kvg__tok_is_word(0x200D)); /* Join_Control */
    CHECK(kvg__tok_is_word(0x0663)); /* ARABIC-INDIC DIGIT THREE (Nd) */
    CHECK(!kvg__tok_is_word('-') && !kvg__tok_is_word(' ') && !kvg__tok_is_word(0x1F600));
    CHECK(!kvg__tok_is_word(0xBD)); /* VULGAR FRACTION ONE HALF: No, not \w */
}

TEST(unicode15_detection)
{
    CHECK(kvg__tok_unicode_has_age15("a\xF0\x9E\x93\xB0", 5)); /* U+1E4F0 */
    CHECK(kvg__tok_unicode_has_age15("\xE0\xB3\xB3", 3));      /* U+0CF3 */
    CHECK(kvg__tok_unicode_has_age15("x\xF0\xB1\x8D\x90", 5)); /* U+31350 */
    CHECK(!kvg__tok_unicode_has_age15("abc \xE4\xBD\xA0 \xF0\x9F\x98\x80", 12));
    CHECK(!kvg__tok_unicode_has_age15("\xE0\xB3\xB2", 3)); /* U+0CF2, older */
    CHECK(!kvg__tok_unicode_has_age15("", 0));
}

static const char *lower(const char *s)
{
    static char out[64];
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    for (size_t i = 0; s[i];) {
        uint32_t cp;
        i += kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        CHECK_INT(kvg__tok_lower_append(cp, &b), 0);
    }
    snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
    kvg_buf_free(&b);
    return out;
}

TEST(lowercase)
{
    CHECK_STR(lower("ABC xyz"), "abc xyz");
    CHECK_STR(lower("ÀÉÎ"), "àéî");
    CHECK_STR(lower("ΣΑΣ"), "σασ"); /* char by char: no final sigma */
    CHECK_STR(lower("İ"), "i\xCC\x87");
    CHECK_STR(lower("ĀĂĄ"), "āăą"); /* stride-2 run */
    CHECK_STR(lower("Ω"), "ω");
    CHECK_STR(lower("\xE2\x84\xA6"), "ω"); /* OHM SIGN */
    CHECK_STR(lower("Ǆ"), "ǆ");
    CHECK_STR(lower("ДЖ"), "дж");
    CHECK_STR(lower("𐐀"), "𐐨"); /* Deseret */
}

static void hex_to_utf8(const char *hex, struct kvg_buf *out)
{
    kvg_buf_reset(out);
    for (const char *p = hex; *p;) {
        char *end;
        unsigned long cp = strtoul(p, &end, 16);
        if (end == p) break;
        char b[4];
        kvg_buf_append(out, b, kvg_utf8_put((uint32_t)cp, b));
        p = end;
    }
}

static const char *root(void)
{
    const char *r = getenv("KVG_ROOT");
    return r ? r : ".";
}

/* Every sampled line: NFC(source) == NFC column, NFD(source) == NFD column,
 * and the quick check never says "already NFC" for text that is not. */
TEST(normalization_test_sample)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/nfc_cases.txt", root());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[1024];
    struct kvg_buf src, nfc, nfd, got;
    kvg_buf_init(&src, 0);
    kvg_buf_init(&nfc, 0);
    kvg_buf_init(&nfd, 0);
    kvg_buf_init(&got, 0);
    int cases = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *c2 = strchr(line, ';'), *c3 = c2 ? strchr(c2 + 1, ';') : NULL;
        if (!c3) continue;
        *c2++ = 0;
        *c3++ = 0;
        hex_to_utf8(line, &src);
        hex_to_utf8(c2, &nfc);
        hex_to_utf8(c3, &nfd);
        cases++;
        kvg_buf_reset(&got);
        CHECK_INT(kvg__tok_unicode_nf(src.data, src.len, 1, &got), 0);
        int ok = got.len == nfc.len && !memcmp(got.data, nfc.data, got.len);
        kvg_buf_reset(&got);
        CHECK_INT(kvg__tok_unicode_nf(src.data, src.len, 0, &got), 0);
        ok = ok && got.len == nfd.len && !memcmp(got.data, nfd.data, got.len);
        int same = src.len == nfc.len && !memcmp(src.data, nfc.data, src.len);
        if (kvg__tok_unicode_nfc_quick(src.data, src.len) && !same) ok = 0;
        if (!ok && bad++ < 5) fprintf(stderr, "normalization mismatch for %s\n", line);
    }
    fclose(f);
    kvg_buf_free(&src);
    kvg_buf_free(&nfc);
    kvg_buf_free(&nfd);
    kvg_buf_free(&got);
    CHECK(cases > 1000);
    CHECK_INT(bad, 0);
}

static const char *nf(const char *s, int compose)
{
    static char out[256];
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg__tok_unicode_nf(s, strlen(s), compose, &b), 0);
    snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
    kvg_buf_free(&b);
    return out;
}

TEST(normalization_in_context)
{
    /* Regions inside longer text: what is around them is copied as is. */
    CHECK_STR(nf("the cafe\xCC\x81 is open", 1), "the caf\xC3\xA9 is open");
    CHECK_STR(nf("x\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8y", 1), "x\xEA\xB0\x81y"); /* jamo -> 각 */
    CHECK_STR(nf("\xEA\xB0\x81", 0), "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");
    CHECK_STR(nf("\xE2\x84\xAB", 1), "\xC3\x85"); /* ANGSTROM SIGN -> Å */
    CHECK_STR(nf("\xCC\x81"
                 "a",
                 1),
              "\xCC\x81"
              "a");                                                    /* leading mark stays */
    CHECK_STR(nf("a\xCC\xA3\xCC\x87 b", 1), "\xE1\xBA\xA1\xCC\x87 b"); /* reorder then compose */
    /* A character assigned after Unicode 9.0 is left alone (HF's tables). */
    CHECK_STR(nf("\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0", 1), "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0");
    CHECK(kvg__tok_unicode_nfc_quick("plain text \xE4\xBD\xA0\xE5\xA5\xBD", 17));
    CHECK(!kvg__tok_unicode_nfc_quick("e\xCC\x81", 3));
}
