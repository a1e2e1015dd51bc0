/* The gate's head check without keys: the admin API is for loopback clients
 * only; everything else is open. */
#include <string.h>

#include "gateway/gate.h"
#include "support/test.h"

TEST(peer_loopback)
{
    CHECK(kvg_gate_peer_loopback("127.0.0.1:5000"));
    CHECK(kvg_gate_peer_loopback("127.8.9.1:1"));
    CHECK(kvg_gate_peer_loopback("[::1]:80"));
    CHECK(kvg_gate_peer_loopback("[::ffff:127.0.0.1]:80"));
    CHECK(!kvg_gate_peer_loopback("10.0.0.7:5000"));
    CHECK(!kvg_gate_peer_loopback("1127.0.0.1:5000"));
    CHECK(!kvg_gate_peer_loopback("[::2]:80"));
    CHECK(!kvg_gate_peer_loopback("::1:80")); /* not the server's form: never trusted */
    CHECK(!kvg_gate_peer_loopback(""));
}

TEST(no_keys_admin_loopback_only)
{
    struct kvg_gate g;
    memset(&g, 0, sizeof g); /* auth_on 0: no keys file */
    struct kvg_gate_deny d;
    struct kvg_str none = {NULL, 0};
    CHECK_INT(kvg_gate_check_head(&g, KVG_GATE_ADMIN, none, "127.0.0.1:4000", NULL, &d), 0);
    CHECK_INT(kvg_gate_check_head(&g, KVG_GATE_ADMIN, none, "192.168.1.9:4000", NULL, &d), 1);
    CHECK_INT(d.r.status, 403);
    CHECK_STR(d.r.code, "admin_loopback_only");
    CHECK_INT(kvg_gate_check_head(&g, KVG_GATE_API, none, "192.168.1.9:4000", NULL, &d), 0);
    CHECK_INT(kvg_gate_check_head(&g, KVG_GATE_READ, none, "192.168.1.9:4000", NULL, &d), 0);
    CHECK_INT(kvg_gate_check_head(&g, KVG_GATE_PUBLIC, none, "192.168.1.9:4000", NULL, &d), 0);
}

/* Anthropic's x-api-key is a key as Authorization: Bearer is; both naming
 * different keys is no credential. */
TEST(credential_from_authorization_or_x_api_key)
{
    char buf[64];
    struct kvg_str none = {NULL, 0};
    struct kvg_str c = kvg_gate_credential(KVG_STR("Bearer sk-a"), none, buf, sizeof buf);
    CHECK(c.len == 11 && !memcmp(c.p, "Bearer sk-a", 11));
    c = kvg_gate_credential(none, KVG_STR(" sk-a "), buf, sizeof buf);
    CHECK(c.len == 11 && !memcmp(c.p, "Bearer sk-a", 11));
    c = kvg_gate_credential(KVG_STR("Bearer  sk-a"), KVG_STR("sk-a"), buf, sizeof buf);
    CHECK(c.p && c.len == 12);
    c = kvg_gate_credential(KVG_STR("Bearer sk-a"), KVG_STR("sk-b"), buf, sizeof buf);
    CHECK(c.p && c.len == 0);
    c = kvg_gate_credential(KVG_STR("Basic Zm9vOmJhcg=="), KVG_STR("sk-b"), buf, sizeof buf);
    CHECK(c.p && c.len == 0);
    c = kvg_gate_credential(none, none, buf, sizeof buf);
    CHECK(c.p == NULL);
    /* A key too long for the buffer is no key, not a cut one. */
    c = kvg_gate_credential(none,
                            KVG_STR("0123456789012345678901234567890123456789012345678901234567"),
                            buf, sizeof buf);
    CHECK(c.p && c.len == 0);
}
