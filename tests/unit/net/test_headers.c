/* Unit tests for the header accumulator shared by the HTTP server and
 * client: names and values arriving in pieces, and both limits. */
#include "support/test.h"

#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "net/headers.h"

static int view_is(struct kvg_str v, const char *s)
{
    return v.len == strlen(s) && !memcmp(v.p, s, v.len);
}

TEST(pieces_join_into_one_header)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append(&b, "/url", 4); /* the server keeps the URL in front */
    struct kvg__http_hdrs h;
    kvg__http_hdrs_init(&h, &b, 8);
    CHECK_INT(kvg__http_hdrs_name(&h, "Cont", 4), 0);
    CHECK_INT(kvg__http_hdrs_name(&h, "ent-Type", 8), 0);
    CHECK_INT(kvg__http_hdrs_value(&h, "appli", 5), 0);
    CHECK_INT(kvg__http_hdrs_value(&h, "cation/json", 11), 0);
    CHECK_INT(kvg__http_hdrs_name(&h, "X", 1), 0);
    CHECK_INT(kvg__http_hdrs_value(&h, "", 0), 0); /* an empty value */
    CHECK_INT(h.n, 2);
    struct kvg_http_header v[2];
    kvg__http_hdrs_views(&h, v);
    CHECK(view_is(v[0].name, "Content-Type"));
    CHECK(view_is(v[0].value, "application/json"));
    CHECK(view_is(v[1].name, "X"));
    CHECK_INT(v[1].value.len, 0);
    /* Reset keeps the memory, forgets the headers. */
    kvg__http_hdrs_reset(&h);
    kvg_buf_reset(&b);
    CHECK_INT(h.n, 0);
    CHECK_INT(kvg__http_hdrs_name(&h, "A", 1), 0);
    CHECK_INT(kvg__http_hdrs_value(&h, "1", 1), 0);
    kvg__http_hdrs_views(&h, v);
    CHECK(view_is(v[0].name, "A") && view_is(v[0].value, "1"));
    kvg__http_hdrs_free(&h);
    kvg_buf_free(&b);
}

TEST(limits)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 64);
    struct kvg__http_hdrs h;
    kvg__http_hdrs_init(&h, &b, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(kvg__http_hdrs_name(&h, "N", 1), 0);
        CHECK_INT(kvg__http_hdrs_value(&h, "v", 1), 0);
    }
    CHECK_INT(kvg__http_hdrs_name(&h, "N", 1), KVG_ETOOBIG); /* a 4th header */
    CHECK_INT(h.n, 3);
    kvg__http_hdrs_reset(&h);
    kvg_buf_reset(&b);
    char big[100];
    memset(big, 'x', sizeof big);
    CHECK_INT(kvg__http_hdrs_name(&h, "N", 1), 0);
    CHECK_INT(kvg__http_hdrs_value(&h, big, sizeof big), KVG_ETOOBIG); /* the buffer's 64 */
    kvg__http_hdrs_free(&h);
    kvg_buf_free(&b);
}
