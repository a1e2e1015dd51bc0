/* The offline simulator with several routers (des.h, routers): one router is
 * the single-router run, every request is still accounted for, runs stay
 * deterministic per seed and balancer, herding is only measured between
 * routers, and the load spread is a ratio to the mean. */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "bench/des.h"
#include "support/test.h"

/* test_des.c's tiny shared-prefix workload on four engines. */
static void tiny(struct kvg_bench_des_opts *o, const char *policy, uint32_t routers)
{
    kvg_log_set_level(KVG_LOG_WARN);
    kvg_bench_des_opts_default(o);
    o->engines = 4;
    o->routers = routers;
    snprintf(o->policy, sizeof o->policy, "%s", policy);
    struct kvg_bench_wl_opts *w = &o->wl;
    w->groups = 12;
    w->prompts_per_group = 4;
    w->system_len = 256;
    w->question_len = 48;
    w->output_len = 16;
    w->printable = 1;
    w->stage[0] = (struct kvg_bench_stage){.rate = 20, .secs = 3};
    w->stage[1] = (struct kvg_bench_stage){.rate = 60, .secs = 25};
    w->nstages = 2;
    w->warmup = 1;
}

static int run(const struct kvg_bench_des_opts *o, struct kvg_bench_summary *s)
{
    char err[256] = "";
    int rc = kvg_bench_des_run(o, s, err, sizeof err);
    if (rc) printf("  run %s: %s\n", o->policy, err);
    return rc;
}

static int same(struct kvg_bench_summary a, struct kvg_bench_summary b)
{
    a.wall_s = b.wall_s = 0;
    a.route_us_mean = b.route_us_mean = 0;
    return !memcmp(&a, &b, sizeof a);
}

TEST(one_router_is_the_plain_run)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary a, b;
    tiny(&o, "prefix_affinity", 1);
    CHECK_INT(run(&o, &a), 0);
    o.balancer = KVG_BENCH_BAL_RANDOM; /* nothing to balance over */
    CHECK_INT(run(&o, &b), 0);
    CHECK(same(a, b));
    CHECK_INT(a.routers, 1);
    CHECK(a.herd_ratio == 0);
    /* Two full 10 s windows of load, spread no better than even; the worst
     * is one of the windows listed. */
    CHECK(a.max_load_ratio_10s >= 1 && a.max_load_ratio_10s <= 4);
    CHECK_INT(a.nload_win, 2);
    double worst = 0;
    for (size_t w = 0; w < a.nload_win; w++) {
        CHECK(a.load_ratio_win[w] >= 1);
        if (a.load_ratio_win[w] > worst) worst = a.load_ratio_win[w];
    }
    CHECK(worst == a.max_load_ratio_10s);
    CHECK(a.load_ratio_win[(size_t)(a.max_load_window_s / 10)] == worst);
}

TEST(every_request_accounted_for_with_routers)
{
    const char *pols[] = {"random", "prefix_affinity", "precise", "kv_aware", "cache_aware"};
    for (size_t i = 0; i < sizeof pols / sizeof pols[0]; i++) {
        struct kvg_bench_des_opts o;
        static struct kvg_bench_summary one, many;
        tiny(&o, pols[i], 1);
        CHECK_INT(run(&o, &one), 0);
        tiny(&o, pols[i], 5);
        CHECK_INT(run(&o, &many), 0);
        CHECK_INT(many.status, 0);
        CHECK_INT(many.routers, 5);
        /* The same requests arrive, whoever routes them. */
        CHECK_INT(many.requests, one.requests);
        CHECK_INT(many.prompt_tokens, one.prompt_tokens);
        CHECK_INT(many.completed + many.errors, many.requests);
        CHECK_INT(many.errors, 0);
        CHECK_INT(many.output_tokens, 16 * many.requests);
        CHECK(many.herd_ratio > 0 && many.herd_ratio < 1);
        CHECK(many.max_load_ratio_10s >= 1);
    }
}

TEST(deterministic_per_balancer)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary a, b, c;
    tiny(&o, "kv_aware", 8);
    o.balancer = KVG_BENCH_BAL_RANDOM;
    CHECK_INT(run(&o, &a), 0);
    CHECK_INT(run(&o, &b), 0);
    CHECK(same(a, b));
    o.balancer = KVG_BENCH_BAL_ROUND_ROBIN;
    CHECK_INT(run(&o, &c), 0);
    CHECK(!same(a, c));
}

TEST(too_many_routers_refused)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary s;
    tiny(&o, "random", KVG_BENCH_MAX_ROUTERS + 1);
    char err[256] = "";
    CHECK(kvg_bench_des_run(&o, &s, err, sizeof err) < 0);
    CHECK(strstr(err, "routers") != NULL);
}
