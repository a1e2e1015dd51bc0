/* Unit tests for base/utf8: validation (overlongs, surrogates, range,
 * truncation), the bounded decoder built on the same rules, and the unchecked
 * decoder's results on valid and invalid input. */
#include "support/test.h"

#include "base/utf8.h"

TEST(utf8_valid)
{
    CHECK(kvg_utf8_valid("", 0));
    CHECK(kvg_utf8_valid("plain ascii text, long enough for the fast path", 47));
    CHECK(kvg_utf8_valid("\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80", 9));
    CHECK(kvg_utf8_valid("a\0b", 3));             /* NUL is valid UTF-8 */
    CHECK(kvg_utf8_valid("\xF4\x8F\xBF\xBF", 4)); /* U+10FFFF */
    CHECK(!kvg_utf8_valid("\x80", 1));
    CHECK(!kvg_utf8_valid("\xC0\x80", 2));         /* overlong NUL */
    CHECK(!kvg_utf8_valid("\xC1\xBF", 2));         /* overlong */
    CHECK(!kvg_utf8_valid("\xE0\x9F\xBF", 3));     /* overlong 3-byte */
    CHECK(!kvg_utf8_valid("\xED\xA0\x80", 3));     /* surrogate U+D800 */
    CHECK(!kvg_utf8_valid("\xF0\x8F\xBF\xBF", 4)); /* overlong 4-byte */
    CHECK(!kvg_utf8_valid("\xF4\x90\x80\x80", 4)); /* > U+10FFFF */
    CHECK(!kvg_utf8_valid("\xF5\x80\x80\x80", 4));
    CHECK(!kvg_utf8_valid("\xE4\xBD", 2)); /* truncated */
    CHECK(!kvg_utf8_valid("abcdefgh\xE4\xBD", 10));
    CHECK(!kvg_utf8_valid("\xC3\x28", 2));
    CHECK(!kvg_utf8_valid("\xFF", 1));
}

TEST(utf8_decode)
{
    uint32_t cp = 0;
    CHECK_INT(kvg_utf8_decode("A", 1, &cp), 1);
    CHECK_INT(cp, 0x41);
    CHECK_INT(kvg_utf8_decode("\xC3\xA9", 2, &cp), 2);
    CHECK_INT(cp, 0xE9);
    CHECK_INT(kvg_utf8_decode("\xE4\xBD\xA0", 3, &cp), 3);
    CHECK_INT(cp, 0x4F60);
    CHECK_INT(kvg_utf8_decode("\xF4\x8F\xBF\xBF", 4, &cp), 4);
    CHECK_INT(cp, 0x10FFFF);
    CHECK_INT(kvg_utf8_decode("\xE4\xBD\xA0", 2, &cp), 0); /* cut by the bound */
    CHECK_INT(kvg_utf8_decode("\xED\xA0\x80", 3, &cp), 0); /* surrogate */
    CHECK_INT(kvg_utf8_decode("\x80", 1, &cp), 0);
    CHECK_INT(kvg_utf8_decode("", 0, &cp), 0);
}

TEST(utf8_decode_refuses_overlongs_and_range)
{
    uint32_t cp = 0;
    CHECK_INT(kvg_utf8_decode("\xC0\x80", 2, &cp), 0);         /* overlong NUL */
    CHECK_INT(kvg_utf8_decode("\xC1\xBF", 2, &cp), 0);         /* overlong 0x7F */
    CHECK_INT(kvg_utf8_decode("\xE0\x9F\xBF", 3, &cp), 0);     /* overlong 0x7FF */
    CHECK_INT(kvg_utf8_decode("\xF0\x8F\xBF\xBF", 4, &cp), 0); /* overlong 0xFFFF */
    CHECK_INT(kvg_utf8_decode("\xF4\x90\x80\x80", 4, &cp), 0); /* U+110000 */
    CHECK_INT(kvg_utf8_decode("\xF8\x88\x80\x80", 4, &cp), 0); /* 5-byte lead */
    CHECK_INT(kvg_utf8_decode("\xC3\x41", 2, &cp), 0);         /* no continuation */
    CHECK_INT(kvg_utf8_decode("\xEF\xBF\xBF", 3, &cp), 3);     /* noncharacters are valid */
    CHECK_INT(cp, 0xFFFF);
}

/* Every valid sequence decodes alike checked and unchecked. */
TEST(utf8_decode_fast_agrees_on_valid_text)
{
    static const char s[] = "a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\x7F";
    size_t n = sizeof s - 1, i = 0, count = 0;
    while (i < n) {
        uint32_t a = 0, b = 1;
        size_t la = kvg_utf8_decode(s + i, n - i, &a);
        size_t lb = kvg_utf8_decode_fast(s + i, n - i, &b);
        size_t lm = kvg_utf8_decode_fast(s + i, SIZE_MAX, &b);
        CHECK(la > 0);
        CHECK_INT(la, lb);
        CHECK_INT(la, lm);
        CHECK_INT(a, b);
        CHECK_INT(kvg_utf8_decode_fast(s + i, n - i, NULL), la);
        CHECK_INT(kvg_utf8_len_fast((uint8_t)s[i], 1), la);
        CHECK_INT(kvg_utf8_len_fast((uint8_t)s[i], 2), la);
        i += la;
        count++;
    }
    CHECK_INT(count, 6);
}

/* What the unchecked forms give on invalid input: the lead byte alone sets
 * the length, cut to the bytes left, and the payload bits are taken as they
 * are (the jinja engine's and the tokenizer's behaviour, kept). */
TEST(utf8_decode_fast_on_invalid_input)
{
    uint32_t cp = 7;
    CHECK_INT(kvg_utf8_decode_fast("", 0, &cp), 0);
    CHECK_INT(cp, 0);
    CHECK_INT(kvg_utf8_decode_fast("\xC0\x80", 2, &cp), 2); /* overlong: not refused */
    CHECK_INT(cp, 0);
    CHECK_INT(kvg_utf8_decode_fast("\xED\xA0\x80", 3, &cp), 3); /* a surrogate passes */
    CHECK_INT(cp, 0xD800);
    CHECK_INT(kvg_utf8_decode_fast("\xF4\x90\x80\x80", 4, &cp), 4);
    CHECK_INT(cp, 0x110000);
    CHECK_INT(kvg_utf8_decode_fast("\x80\x80", 2, &cp), 2); /* stray byte: counts 2 */
    CHECK_INT(cp, 0);
    CHECK_INT(kvg_utf8_decode_fast("\xE4\xBD", 2, &cp), 2); /* cut: the bits of 2 bytes */
    CHECK_INT(cp, ((0xE4 & 0x1F) << 6) | (0xBD & 0x3F));
    CHECK_INT(kvg_utf8_decode_fast("\xE4", 1, &cp), 1); /* one byte: itself */
    CHECK_INT(cp, 0xE4);
    CHECK_INT(kvg_utf8_decode_fast("\xFF\x80\x80\x80", 4, &cp), 4);
    CHECK_INT(kvg_utf8_len_fast(0x80, 1), 1);
    CHECK_INT(kvg_utf8_len_fast(0xBF, 1), 1);
    CHECK_INT(kvg_utf8_len_fast(0xBF, 2), 2);
    CHECK_INT(kvg_utf8_len_fast(0xC0, 1), 2);
    CHECK_INT(kvg_utf8_len_fast(0xF8, 1), 4);
}
