/* The pool's scale-down and slow-start filters: a draining worker takes no
 * new request, a worker with a partial share takes about that share of its
 * candidacies, and all of them when no full-share worker is a candidate;
 * and the autoscaler's workers outlive a reload's worker list. */
#include "support/test.h"

#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "router/pool.h"

static int picks_of(struct kvg_pool *pool, struct kvg_route_ctx *c, const char *url, int n)
{
    int hits = 0;
    for (int i = 0; i < n; i++) {
        struct kvg_pick pk;
        memset(&pk, 0, sizeof pk);
        int known;
        if (kvg_pool_pick(pool, c, NULL, 0, &pk, &known, NULL)) continue;
        hits += !strcmp(pk.w->url, url);
        kvg_pool_release(pool, &pk, KVG_OUT_OK, c);
    }
    return hits;
}

TEST(draining_and_slow_start_shape_the_picks)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("round_robin", &o, &p), 0);
    struct kvg_pool pool;
    CHECK_INT(kvg_pool_init(&pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9001"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9002"), 0);
    struct kvg_worker *ws[2];
    CHECK_INT(kvg_pool_snapshot(&pool, ws, 2), 2);
    struct kvg_worker *a = strcmp(ws[0]->url, "http://127.0.0.1:9001") ? ws[1] : ws[0];
    struct kvg_worker *b = a == ws[0] ? ws[1] : ws[0];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7);
    struct kvg_route_ctx c;
    memset(&c, 0, sizeof c);
    c.rng = &rng;
    CHECK(picks_of(&pool, &c, a->url, 100) > 30); /* both serve */
    atomic_store(&b->draining, 1);
    CHECK_INT(picks_of(&pool, &c, b->url, 100), 0);
    atomic_store(&a->draining, 1); /* all draining: no candidate */
    struct kvg_pick pk;
    int known;
    CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &pk, &known, NULL), KVG_ENOWORKER);
    atomic_store(&a->draining, 0);
    atomic_store(&b->draining, 0);
    /* b prewarming (share 0): a takes everything. */
    atomic_store(&b->share_permille, 0);
    CHECK_INT(picks_of(&pool, &c, b->url, 100), 0);
    /* b at 20%: round robin offers it half the time, it keeps 1 in 5. */
    atomic_store(&b->share_permille, 200);
    int hb = picks_of(&pool, &c, b->url, 1000);
    CHECK(hb > 40 && hb < 200);
    /* b alone (a unhealthy): it serves everything despite its share. */
    atomic_store(&b->share_permille, 0);
    atomic_store(&a->healthy, 0);
    CHECK_INT(picks_of(&pool, &c, b->url, 50), 50);
    kvg_worker_unref(ws[0]);
    kvg_worker_unref(ws[1]);
    kvg_pool_destroy(&pool);
}

/* A reload's list (kvg_pool_set) replaces the configured workers but
 * leaves the autoscaler's (w->scaled) in the pool: it removes them itself. */
TEST(a_reload_keeps_the_autoscalers_workers)
{
    struct kvg_pool pool;
    struct kvg_policy_opts o;
    struct kvg_policy *p;
    kvg_policy_opts_default(&o);
    CHECK_INT(kvg_policy_new("round_robin", &o, &p), 0);
    CHECK_INT(kvg_pool_init(&pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:8001"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:8100"), 0);
    struct kvg_worker *ws[4];
    CHECK_INT(kvg_pool_snapshot(&pool, ws, 4), 2);
    atomic_store(&ws[1]->scaled, 1);
    kvg_worker_unref(ws[0]);
    kvg_worker_unref(ws[1]);
    char *urls[] = {"http://127.0.0.1:8002"};
    CHECK_INT(kvg_pool_set(&pool, urls, 1), 0);
    size_t n = kvg_pool_snapshot(&pool, ws, 4);
    CHECK_INT(n, 2);
    CHECK_STR(ws[0]->url, "http://127.0.0.1:8100");
    CHECK_STR(ws[1]->url, "http://127.0.0.1:8002");
    for (size_t i = 0; i < n; i++) kvg_worker_unref(ws[i]);
    CHECK_INT(kvg_pool_remove(&pool, "http://127.0.0.1:8100"), 0);
    kvg_pool_destroy(&pool);
}
