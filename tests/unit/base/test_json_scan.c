/* base/json_scan.h: the top-level members of a body, by their bytes. */
#include "support/test.h"

#include <string.h>

#include "base/err.h"
#include "base/json_scan.h"

struct seen {
    char keys[8][32], vals[8][64];
    int esc[8], n, stop_at;
};

static int note(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct seen *v = ud;
    if (v->n == v->stop_at) return 7;
    snprintf(v->keys[v->n], sizeof v->keys[0], "%.*s", (int)(m->key_end - m->key), s + m->key);
    snprintf(v->vals[v->n], sizeof v->vals[0], "%.*s", (int)(m->val_end - m->val), s + m->val);
    v->esc[v->n++] = m->key_escaped;
    return 0;
}

static int scan(const char *s, struct seen *v, size_t *open, size_t *close)
{
    memset(v, 0, sizeof *v);
    v->stop_at = -1;
    return kvg_json_members(s, strlen(s), note, v, open, close);
}

TEST(members_in_order_with_their_bytes)
{
    struct seen v;
    size_t o = 0, c = 0;
    const char *s =
        " { \"model\" : \"m\\\"x\",\"kv_transfer_params\":{\"a\":[1,\"}\"]},\"n\":-1.5e3 } ";
    CHECK_INT(scan(s, &v, &o, &c), 0);
    CHECK_INT(v.n, 3);
    CHECK_STR(v.keys[0], "model");
    CHECK_STR(v.vals[0], "\"m\\\"x\"");
    CHECK_STR(v.keys[1], "kv_transfer_params");
    CHECK_STR(v.vals[1], "{\"a\":[1,\"}\"]}");
    CHECK_STR(v.vals[2], "-1.5e3");
    CHECK_INT((int)o, 1);
    CHECK(s[c] == '}' && c == strlen(s) - 2);
    CHECK_INT(scan("{}", &v, &o, &c), 0);
    CHECK_INT(v.n, 0);
}

TEST(escaped_keys_are_flagged)
{
    struct seen v;
    CHECK_INT(scan("{\"kv\\u005ftransfer_params\":1,\"b\\\\\":2,\"c\":3}", &v, NULL, NULL), 0);
    CHECK_INT(v.esc[0], 1);
    CHECK_INT(v.esc[1], 1);
    CHECK_INT(v.esc[2], 0);
}

TEST(malformed_is_refused_and_cb_stops)
{
    struct seen v;
    CHECK_INT(scan("[1,2]", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("{\"a\":1,}", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("{\"a\" 1}", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("{\"a\":1", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("{\"a\":{\"b\":1}", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("{\"a\":\"unterminated}", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(scan("", &v, NULL, NULL), KVG_EPARSE);
    CHECK_INT(kvg_json_members(NULL, 5, note, &v, NULL, NULL), KVG_EPARSE);
    memset(&v, 0, sizeof v);
    v.stop_at = 1;
    CHECK_INT(kvg_json_members("{\"a\":1,\"b\":2}", 13, note, &v, NULL, NULL), 7);
    CHECK_INT(v.n, 1);
}
