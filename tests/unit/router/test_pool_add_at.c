/* A worker added with its target resolved already (kvg_pool_add_at, what
 * POST /workers does after net/resolve.h): the pool looks no name up, so a
 * name nothing resolves is added with the given address, keeping its URL. */
#include "support/test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "router/pool.h"

TEST(added_with_the_given_target)
{
    struct kvg_http_target t;
    char host[256], port[16];
    CHECK_INT(kvg_http_target_split("http://engine.invalid:8100", &t, host, port), 0);
    CHECK_STR(host, "engine.invalid");
    CHECK_STR(port, "8100");
    struct sockaddr_in *in = (struct sockaddr_in *)&t.addr;
    in->sin_family = AF_INET;
    in->sin_port = htons(8100);
    in->sin_addr.s_addr = htonl(0x7f000001);
    /* An empty pool (the policy is the pool's). */
    struct kvg_pool pool;
    struct kvg_policy_opts o;
    struct kvg_policy *p;
    kvg_policy_opts_default(&o);
    CHECK_INT(kvg_policy_new("round_robin", &o, &p), 0);
    CHECK_INT(kvg_pool_init(&pool, p, NULL), 0);
    /* A rank worker: the target is its URL part's. */
    CHECK_INT(kvg_pool_add_at(&pool, "http://engine.invalid:8100@2", NULL, NULL, &t), 0);
    CHECK_INT(kvg_pool_add_at(&pool, "http://engine.invalid:8100@2", NULL, NULL, &t), -EEXIST);
    struct kvg_worker *w;
    CHECK_INT(kvg_pool_snapshot(&pool, &w, 1), 1);
    CHECK_STR(w->url, "http://engine.invalid:8100@2");
    CHECK_INT(w->dp_rank, 2);
    CHECK_STR(w->target.hostport, "engine.invalid:8100");
    CHECK(!memcmp(&w->target.addr, &t.addr, sizeof t.addr));
    kvg_worker_unref(w);
    /* Without a target the pool resolves, and this name does not. */
    CHECK(kvg_pool_add_at(&pool, "http://engine.invalid:8101", NULL, NULL, NULL) != 0);
    kvg_pool_destroy(&pool);
}

TEST(url_base)
{
    CHECK_INT((int)kvg_worker_url_base("http://a:1@3"), 10);
    CHECK_INT((int)kvg_worker_url_base("http://a:1"), 10);
    CHECK_INT((int)kvg_worker_url_base("http://a:1/x@y"), 14); /* not a rank */
}
