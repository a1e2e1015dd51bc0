/* The offline simulator on tiny scenarios: deterministic per seed, every
 * request accounted for, a cache-friendly policy beating random on a
 * shared-prefix workload through the same router code, both KV event paths
 * giving the same index, timeouts, unknown policies, chat and traces, and
 * the bench's oracle placement. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "bench/des.h"
#include "support/test.h"

/* Two tiny engines, 12 groups of 4 prompts (256 + 48 tokens): the groups
 * fill ~70% of the two caches, so where a request goes decides its hits. */
static void tiny(struct kvg_bench_des_opts *o, const char *policy)
{
    kvg_log_set_level(KVG_LOG_WARN); /* the pool logs every worker it adds */
    kvg_bench_des_opts_default(o);
    o->engines = 2;
    snprintf(o->policy, sizeof o->policy, "%s", policy);
    struct kvg_bench_wl_opts *w = &o->wl;
    w->groups = 12;
    w->prompts_per_group = 4;
    w->system_len = 256;
    w->question_len = 48;
    w->output_len = 16;
    w->printable = 1;
    w->stage[0] = (struct kvg_bench_stage){.rate = 20, .secs = 3};
    w->stage[1] = (struct kvg_bench_stage){.rate = 60, .secs = 5};
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

/* Everything but the wall-clock fields. */
static int same(struct kvg_bench_summary a, struct kvg_bench_summary b)
{
    a.wall_s = b.wall_s = 0;
    a.route_us_mean = b.route_us_mean = 0;
    return !memcmp(&a, &b, sizeof a);
}

TEST(deterministic)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary a, b, c;
    tiny(&o, "random");
    CHECK_INT(run(&o, &a), 0);
    CHECK_INT(run(&o, &b), 0);
    CHECK(a.requests > 200);
    CHECK(same(a, b));
    o.seed = 2;
    o.wl.seed = 2;
    CHECK_INT(run(&o, &c), 0);
    CHECK(!same(a, c));
}

/* --route-salt changes the router's random choices only: the same requests
 * arrive (same count, same prompt tokens), routed differently. */
TEST(route_salt_changes_routing_only)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary a, b;
    tiny(&o, "random");
    CHECK_INT(run(&o, &a), 0);
    o.route_salt = 1;
    CHECK_INT(run(&o, &b), 0);
    CHECK_INT(a.requests, b.requests);
    CHECK_INT(a.prompt_tokens, b.prompt_tokens);
    CHECK(a.cached_tokens != b.cached_tokens || a.ttft_p90 != b.ttft_p90);
}

/* A policy that read the wall clock or a global random source would make
 * the offline mode irreproducible: every policy must give the same run twice. */
TEST(deterministic_for_every_policy)
{
    const char *pols[] = {"precise",     "estimated",       "load",         "kv_aware",
                          "cache_aware", "round_robin",     "power_of_two", "least_load",
                          "prefix_hash", "prefix_affinity", "oracle"};
    for (size_t i = 0; i < sizeof pols / sizeof pols[0]; i++) {
        struct kvg_bench_des_opts o;
        static struct kvg_bench_summary a, b;
        tiny(&o, pols[i]);
        CHECK_INT(run(&o, &a), 0);
        CHECK_INT(run(&o, &b), 0);
        CHECK_INT(a.status, 0);
        if (!same(a, b)) printf("  %s differs between two identical runs\n", pols[i]);
        CHECK(same(a, b));
    }
}

TEST(every_request_accounted_for)
{
    const char *pols[] = {"random", "round_robin", "precise", "cache_aware"};
    for (size_t i = 0; i < 4; i++) {
        struct kvg_bench_des_opts o;
        static struct kvg_bench_summary s;
        tiny(&o, pols[i]);
        CHECK_INT(run(&o, &s), 0);
        CHECK_INT(s.status, 0);
        CHECK_INT(s.completed + s.errors, s.requests);
        CHECK_INT(s.errors, 0);
        CHECK(s.warmup_requests > 30);
        /* Every measured request emitted exactly its 16 tokens. */
        CHECK_INT(s.output_tokens, 16 * s.requests);
        /* Stage arrivals add up to the measured requests. */
        uint64_t sum = 0;
        for (size_t k = 0; k < s.nstages; k++) sum += s.stage[k].arrivals;
        CHECK_INT(sum, s.requests);
        /* Engine samples per stage, the warm-up's included. */
        for (size_t k = 0; k < s.nstages; k++) {
            CHECK(s.stage[k].kv_mean > 0 && s.stage[k].kv_mean <= s.stage[k].kv_max);
            CHECK(s.stage[k].kv_max <= 100);
            CHECK(s.stage[k].queue_mean <= s.stage[k].queue_max);
        }
        CHECK(s.ttft_p50 > 0 && s.ttft_p50 <= s.ttft_p90 && s.ttft_p90 <= s.ttft_p99);
        CHECK(s.ttft_p99 <= s.ttft_max);
        CHECK(s.output_tokens_per_s > 0 && s.requests_per_s > 0);
        CHECK(s.kv_mean > 0 && s.kv_max <= 100);
    }
}

TEST(cache_friendly_beats_random)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary rnd, pre, ca;
    tiny(&o, "random");
    CHECK_INT(run(&o, &rnd), 0);
    tiny(&o, "precise");
    CHECK_INT(run(&o, &pre), 0);
    tiny(&o, "cache_aware");
    CHECK_INT(run(&o, &ca), 0);
    CHECK_INT(rnd.status, 0);
    CHECK_INT(pre.status, 0);
    CHECK_INT(ca.status, 0);
    /* Random spreads each group over both caches and evicts; a router that
     * follows the prefix keeps nearly everything cached. */
    CHECK(rnd.cache_hit_ratio < 0.85);
    CHECK(pre.cache_hit_ratio > rnd.cache_hit_ratio + 0.15);
    CHECK(ca.cache_hit_ratio > rnd.cache_hit_ratio + 0.15);
    CHECK(pre.ttft_mean < rnd.ttft_mean);
    CHECK(ca.ttft_mean < rnd.ttft_mean);
    /* The precise index really was fed: it holds blocks of both engines. */
    CHECK(pre.kv_events > 0 && pre.index_entries > 0);
}

TEST(wire_and_direct_paths_agree)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary d, w;
    tiny(&o, "precise");
    o.kv_path = KVG_BENCH_KV_DIRECT;
    CHECK_INT(run(&o, &d), 0);
    o.kv_path = KVG_BENCH_KV_WIRE;
    CHECK_INT(run(&o, &w), 0);
    CHECK_INT(d.status, 0);
    CHECK(d.kv_events > 0);
    CHECK(same(d, w));
}

TEST(unknown_policy_reported)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary s;
    tiny(&o, "no_such_policy");
    CHECK_INT(run(&o, &s), 0);
    CHECK_INT(s.status, KVG_ENOTFOUND);
    CHECK(strstr(s.note, "no_such_policy"));
    CHECK_STR(s.policy, "no_such_policy");
}

/* The oracle sends group g to engine g mod N, always the same one, so after
 * the warm-up every prompt is found cached where it goes; it needs groups,
 * so a chat workload is not run. */
TEST(oracle_places_groups)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary orc, pre, chat;
    tiny(&o, "oracle");
    CHECK_INT(run(&o, &orc), 0);
    CHECK_INT(orc.status, 0);
    CHECK_INT(orc.completed + orc.errors, orc.requests);
    CHECK_INT(orc.errors, 0);
    tiny(&o, "precise");
    CHECK_INT(run(&o, &pre), 0);
    /* Measured requests come after a warm-up that saw all 48 prompts, and
     * nothing is evicted: each prompt (256 + ' ' + 48 = 305 tokens, 19 full
     * blocks of 16) finds all its blocks cached and recomputes 1 token. */
    CHECK(fabs(orc.cache_hit_ratio - (1 - 1.0 / 305)) < 1e-9);
    CHECK(orc.cache_hit_ratio >= pre.cache_hit_ratio - 1e-9);
    tiny(&o, "oracle");
    o.wl.kind = KVG_BENCH_WL_CHAT;
    o.wl.turns = 2;
    o.wl.user_len = 20;
    o.wl.chat_groups = 2;
    o.wl.chat_system_len = 50;
    CHECK_INT(run(&o, &chat), 0);
    CHECK_INT(chat.status, KVG_ENOTFOUND);
    CHECK(strstr(chat.note, "shared_prefix"));
}

TEST(timeouts_and_rejections_counted)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary s;
    tiny(&o, "random");
    /* Far past capacity with a short patience: many give up waiting. */
    o.wl.stage[1] = (struct kvg_bench_stage){.rate = 2000, .secs = 2};
    o.timeout_s = 0.2;
    CHECK_INT(run(&o, &s), 0);
    CHECK(s.timeouts > 0);
    CHECK_INT(s.errors, s.timeouts);
    CHECK_INT(s.completed + s.errors, s.requests);
    CHECK(s.ttft_max <= 0.2 + 0.05 + 1e-9); /* nobody measured past the limit (+1 scrape) */
    /* Prompts longer than the engine's context are refused, not served. */
    tiny(&o, "random");
    o.wl.system_len = 3000;
    CHECK_INT(run(&o, &s), 0);
    CHECK_INT(s.errors, s.requests);
    CHECK_INT(s.completed, 0);
}

TEST(chat_and_closed_loop)
{
    struct kvg_bench_des_opts o;
    static struct kvg_bench_summary s;
    tiny(&o, "random");
    struct kvg_bench_wl_opts *w = &o.wl;
    w->kind = KVG_BENCH_WL_CHAT;
    w->turns = 4;
    w->user_len = 20;
    w->chat_groups = 3;
    w->chat_system_len = 100;
    w->think_s = 0.2;
    w->max_context = 1500;
    w->stage[0] = (struct kvg_bench_stage){.conc = 4, .secs = 2};
    w->stage[1] = (struct kvg_bench_stage){.conc = 8, .secs = 6};
    CHECK_INT(run(&o, &s), 0);
    CHECK(s.requests > 20);
    CHECK_INT(s.completed + s.errors, s.requests);
    CHECK_INT(s.errors, 0);
    /* Later turns carry earlier ones: more prompt tokens than first turns
     * alone (121 each) would give, and the engines find them cached. */
    CHECK(s.prompt_tokens > 121 * s.requests);
    CHECK(s.cache_hit_ratio > 0.3);
}
