/* kvgate bench's flags: scenario presets, overrides after them wherever
 * they stand, stage lists, and refusals. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/err.h"
#include "bench/routing/routing.h"
#include "support/test.h"

static int parse(struct kvg_bench_cfg *c, const char *const *args, int n)
{
    char *argv[64];
    argv[0] = (char *)"bench";
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    FILE *keep = stderr;
    stderr = fopen("/dev/null", "w"); /* refusals print why; not here */
    int rc = kvg_cmd_bench_parse(c, n + 1, argv);
    fclose(stderr);
    stderr = keep;
    return rc;
}

TEST(llmd73_preset)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--scenario", "llmd-73"};
    CHECK_INT(parse(&c, a, 2), 0);
    CHECK_STR(c.scenario, "llmd-73");
    CHECK_INT(c.mode, KVG_BENCH_OFFLINE);
    CHECK_INT(c.des.engines, 8);
    CHECK_INT(c.des.profile.block_size, 64);
    CHECK_INT(c.des.profile.kv_capacity_tokens, 307328);
    CHECK_INT(c.des.wl.groups, 150);
    CHECK_INT(c.des.wl.prompts_per_group, 5);
    CHECK_INT(c.des.wl.system_len, 6000);
    CHECK_INT(c.des.wl.question_len, 1200);
    CHECK_INT(c.des.wl.nstages, 17);
    CHECK_INT(c.des.wl.warmup, 1);
    CHECK_NEAR(c.des.wl.stage[0].rate, 15, 0);
    CHECK_NEAR(c.des.wl.stage[0].secs, 50, 0);
    CHECK_NEAR(c.des.wl.stage[16].rate, 60, 0);
    double total = 0;
    for (size_t i = 0; i < c.des.wl.nstages; i++) total += c.des.wl.stage[i].secs;
    CHECK_NEAR(total, 502, 0);
    CHECK_INT(c.npolicies, 7); /* llm-d's four, then kvgate's three */
    CHECK_STR(c.policies[0], "precise");
    CHECK_STR(c.policies[6], "prefix_affinity");
    CHECK_INT(c.npub, 4);
}

TEST(overrides_after_the_scenario_wherever_they_stand)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--output-len",   "1000",   "--scenario", "llmd-73",   "--policies",
                       "random,precise", "--seed", "9",          "--profile", "qwen3-32b-h100-tp2"};
    CHECK_INT(parse(&c, a, 10), 0);
    CHECK_INT(c.des.wl.output_len, 1000);
    CHECK_INT(c.npolicies, 2);
    CHECK_STR(c.policies[1], "precise");
    CHECK_INT(c.des.seed, 9);
    CHECK_INT(c.des.wl.seed, 9);
    CHECK_STR(c.des.profile.name, "qwen3-32b-h100-tp2");
}

TEST(stage_lists)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--stages", "15x50,c8x30,2.5x10", "--warmup-stages", "1"};
    CHECK_INT(parse(&c, a, 4), 0);
    CHECK_INT(c.des.wl.nstages, 3);
    CHECK_NEAR(c.des.wl.stage[0].rate, 15, 0);
    CHECK_INT(c.des.wl.stage[1].conc, 8);
    CHECK_NEAR(c.des.wl.stage[1].secs, 30, 0);
    CHECK_NEAR(c.des.wl.stage[2].rate, 2.5, 0);
    CHECK_INT(c.des.wl.warmup, 1);
    const char *bad[][2] = {{"--stages", "15"},
                            {"--stages", "x5"},
                            {"--stages", "5x0"},
                            {"--stages", "c1.5x4"},
                            {"--stages", "5x5;3x1"}};
    for (int i = 0; i < 5; i++) CHECK_INT(parse(&c, bad[i], 2), -1);
}

TEST(refusals)
{
    static struct kvg_bench_cfg c;
    const char *a1[] = {"--scenario", "nope"};
    CHECK_INT(parse(&c, a1, 2), -1);
    const char *a2[] = {"--bogus", "1"};
    CHECK_INT(parse(&c, a2, 2), -1);
    const char *a3[] = {"--mode", "live"}; /* no target, nothing spawned */
    CHECK_INT(parse(&c, a3, 2), -1);
    const char *a4[] = {"--engines", "0"};
    CHECK_INT(parse(&c, a4, 2), -1);
    const char *a5[] = {"--seed"};
    CHECK_INT(parse(&c, a5, 1), -1);
    const char *a6[] = {"--profile", "no-such-gpu"};
    CHECK_INT(parse(&c, a6, 2), -1);
    const char *a7[] = {"--mode", "live", "--spawn-sims", "2"};
    CHECK_INT(parse(&c, a7, 4), 0);
    CHECK(c.des.wl.printable); /* live text is the byte tokenizer's ids */
    CHECK_INT(c.des.engines, 2);
}

TEST(mini_is_live_and_offline_able)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--scenario", "llmd-73-mini"};
    CHECK_INT(parse(&c, a, 2), 0);
    CHECK_INT(c.mode, KVG_BENCH_LIVE);
    CHECK_INT(c.spawn_sims, 4);
    CHECK(c.speed > 1);
    const char *b[] = {"--scenario", "llmd-73-mini", "--mode", "offline"};
    CHECK_INT(parse(&c, b, 4), 0);
    CHECK_INT(c.mode, KVG_BENCH_OFFLINE);
    CHECK_INT(c.des.engines, 4);
}
