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
