/* Unit tests for base/buf: limits, JSON escaping, views. */
#include "support/test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"

TEST(buf_limit_is_enforced)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 8);
    CHECK_INT(kvg_buf_append(&b, "12345678", 8), 0);
    CHECK_INT(kvg_buf_append(&b, "9", 1), KVG_ETOOBIG);
    CHECK_INT(b.len, 8);
    kvg_buf_free(&b);
}

TEST(buf_printf_long)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_INT(kvg_buf_printf(&b, "<%s>%d", big, 42), 0);
    CHECK_INT(b.len, 999 + 4);
    CHECK(!memcmp(b.data + b.len - 3, ">42", 3));
    kvg_buf_free(&b);
}

TEST(buf_json_escape)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const char in[] = "a\"b\\c\nd\x01\xc3\xa9";
    CHECK_INT(kvg_buf_append_json_str(&b, in, sizeof in - 1), 0);
    CHECK_STR(kvg_buf_cstr(&b), "\"a\\\"b\\\\c\\nd\\u0001\xc3\xa9\"");
    kvg_buf_free(&b);
}

/* The escape one byte at a time, as JSON wants it: the reference the
 * word-at-a-time scan must agree with. */
static void naive_escape(struct kvg_buf *b, const unsigned char *s, size_t n)
{
    kvg_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        char e[8];
        if (c == '"' || c == '\\') {
            e[0] = '\\', e[1] = (char)c;
            kvg_buf_append(b, e, 2);
        } else if (c < 0x20) {
            const char *named = c == '\n'   ? "\\n"
                                : c == '\r' ? "\\r"
                                : c == '\t' ? "\\t"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                            : NULL;
            if (named)
                kvg_buf_append(b, named, 2);
            else
                kvg_buf_printf(b, "\\u%04x", c);
        } else {
            kvg_buf_append(b, s + i, 1);
        }
    }
    kvg_buf_append(b, "\"", 1);
}

/* Random strings, mostly plain with escapes and UTF-8 high bytes sprinkled
 * at every offset of the 8-byte words: the same bytes as the reference. */
TEST(buf_json_escape_matches_bytewise)
{
    uint64_t x = 88172645463325252ull;
    for (int t = 0; t < 3000; t++) {
        unsigned char s[80];
        size_t n = (size_t)(t % 80);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned r = (unsigned)(x % 100);
            s[i] = r < 70   ? (unsigned char)('a' + x % 26)
                   : r < 78 ? (unsigned char)(0x80 + x % 128)
                   : r < 84 ? (unsigned char)(x % 32)
                   : r < 90 ? '"'
                   : r < 95 ? '\\'
                            : (unsigned char)(0x1f + x % 4); /* 0x1f..0x22 around the bounds */
        }
        struct kvg_buf a, b;
        kvg_buf_init(&a, 0);
        kvg_buf_init(&b, 0);
        CHECK_INT(kvg_buf_append_json_str(&a, (const char *)s, n), 0);
        naive_escape(&b, s, n);
        CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
        kvg_buf_free(&a);
        kvg_buf_free(&b);
    }
}

TEST(buf_consume_and_views)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "hello world");
    kvg_buf_consume(&b, 6);
    CHECK_STR(kvg_buf_cstr(&b), "world");
    struct kvg_str s = {b.data, b.len};
    CHECK(kvg_str_eq(s, "world"));
    CHECK(kvg_str_eq_nocase(s, "WORLD"));
    CHECK(!kvg_str_eq(s, "worl"));
    char *d = kvg_str_dup(s);
    CHECK_STR(d, "world");
    free(d);
    kvg_buf_free(&b);
}
