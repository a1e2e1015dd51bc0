/* Unit tests for base/utf8: validation (overlongs, surrogates, range,
 * truncation) and the bounded decoder built on the same rules. */
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
