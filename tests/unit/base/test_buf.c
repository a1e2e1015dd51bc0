/* Unit tests for base/buf: limits, JSON escaping, views. */
#include "support/test.h"

#include <stdlib.h>

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
