/* The start-up model: its measured defaults, learning from actuations, draws. */
#include <math.h>

#include "support/test.h"

#include "autoscale/startup.h"
#include "base/err.h"

TEST(defaults_are_seed_000)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_COLD, 0.5), 430, 0.5);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_COLD, 0.9), 471, 0.5);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD, 0.5), 200, 0.5);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM, 0.5), 68, 0.5);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_WARM, 0.1), 97, 0.5);
    /* fetch is slower than cold is slower than warm */
    CHECK(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_FETCH) >
          kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD));
    /* an unknown model gets the 32B's figures */
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "llama-70b", KVG_AUTOSCALE_COLD, 0.5), 430, 0.5);
    CHECK_INT(kvg_autoscale_node_parse("fetch"), KVG_AUTOSCALE_FETCH);
    CHECK_INT(kvg_autoscale_node_parse("hot"), -1);
}

TEST(learning_is_conservative_until_min_samples)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    /* Faster than the default: the default p90 holds until 5 samples. */
    for (int i = 0; i < 4; i++)
        kvg_autoscale_startup_observe(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD, 100 + i, -1);
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD), 204, 0.5);
    kvg_autoscale_startup_observe(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD, 104, -1);
    CHECK_INT(kvg_autoscale_startup_samples(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD), 5);
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD), 104, 1e-9);
    /* A slow sample before min_samples raises the lead at once. */
    kvg_autoscale_startup_observe(&m, "qwen2.5-32b", KVG_AUTOSCALE_WARM, 600, -1);
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-32b", KVG_AUTOSCALE_WARM), 600, 1e-9);
    /* Warm-up time adds to the lead once seen. */
    kvg_autoscale_startup_observe(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD, -1, 30);
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_COLD), 134, 1e-9);
}

TEST(learning_keeps_the_recent_window)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    for (int i = 0; i < 40; i++)
        kvg_autoscale_startup_observe(&m, "x", KVG_AUTOSCALE_COLD, 1000, -1);
    for (int i = 0; i < KVG_AUTOSCALE_STARTUP_KEEP; i++)
        kvg_autoscale_startup_observe(&m, "x", KVG_AUTOSCALE_COLD, 50, -1);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "x", KVG_AUTOSCALE_COLD, 0.9), 50, 1e-9);
    /* Learning for "x" did not touch the 32B it borrowed its defaults from. */
    CHECK_INT(kvg_autoscale_startup_samples(&m, "qwen2.5-32b", KVG_AUTOSCALE_COLD), 0);
}

TEST(set_validates_and_draws_follow_the_dist)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    struct kvg_autoscale_startup_dist bad = {10, 20, 30};
    CHECK_INT(kvg_autoscale_startup_set(&m, "y", KVG_AUTOSCALE_COLD, bad), KVG_ECONFIG);
    struct kvg_autoscale_startup_dist d = {100, 80, 150};
    CHECK_INT(kvg_autoscale_startup_set(&m, "y", KVG_AUTOSCALE_COLD, d), 0);
    struct kvg_rng r;
    kvg_rng_seed(&r, 7);
    int below = 0, n = 4000;
    for (int i = 0; i < n; i++) {
        double x = kvg_autoscale_startup_draw(&m, "y", KVG_AUTOSCALE_COLD, &r);
        CHECK(x > 0);
        below += x <= 150;
    }
    CHECK_NEAR((double)below / n, 0.9, 0.03);
    kvg_rng_seed(&r, 7);
    double a = kvg_autoscale_startup_draw(&m, "y", KVG_AUTOSCALE_COLD, &r);
    kvg_rng_seed(&r, 7);
    CHECK_NEAR(kvg_autoscale_startup_draw(&m, "y", KVG_AUTOSCALE_COLD, &r), a, 0);
}

TEST(scale_moves_the_defaults_not_the_samples)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    kvg_autoscale_startup_observe(&m, "qwen2.5-32b", KVG_AUTOSCALE_COLD, 500, -1);
    struct kvg_rng r;
    kvg_rng_seed(&r, 3);
    double a = kvg_autoscale_startup_draw(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM, &r);
    kvg_autoscale_startup_scale(&m, 0.05);
    /* The 7B warm p90 75 s reads 3.75 s, and draws follow (same rng: x0.05). */
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM), 3.75, 0.05);
    kvg_rng_seed(&r, 3);
    CHECK_NEAR(kvg_autoscale_startup_draw(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM, &r), a * 0.05,
               1e-9);
    /* A model added later borrows the scaled 32B figures. */
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "llama-70b", KVG_AUTOSCALE_COLD, 0.5), 21.5, 0.05);
    /* The 500 s observation is kept as seen: it is no default. */
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-32b", KVG_AUTOSCALE_COLD), 500, 1e-9);
    /* A factor that is not positive changes nothing. */
    kvg_autoscale_startup_scale(&m, 0);
    kvg_autoscale_startup_scale(&m, -1);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM, 0.5), 3.4, 1e-9);
}

TEST(start_classes_and_prior_vs_learned)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    /* The published figures' medians and p90s (startup.c's table). */
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_ASLEEP1, 0.5), 2.9, 1e-3);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_ASLEEP1, 0.9), 3.5, 1e-3);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-32b", KVG_AUTOSCALE_RESTORE, 0.9), 20, 1e-3);
    CHECK_NEAR(kvg_autoscale_startup_pct(&m, "qwen2.5-7b", KVG_AUTOSCALE_RESTORE, 0.5), 10, 1e-3);
    /* Each class is faster than the one below it: asleep1 < asleep2 < restore < warm. */
    static const enum kvg_autoscale_node order[] = {KVG_AUTOSCALE_ASLEEP1, KVG_AUTOSCALE_ASLEEP2,
                                                    KVG_AUTOSCALE_RESTORE, KVG_AUTOSCALE_WARM,
                                                    KVG_AUTOSCALE_COLD};
    for (int model = 0; model < 2; model++)
        for (size_t i = 0; i + 1 < sizeof order / sizeof order[0]; i++)
            CHECK(
                kvg_autoscale_startup_lead(&m, model ? "qwen2.5-32b" : "qwen2.5-7b", order[i]) <
                kvg_autoscale_startup_lead(&m, model ? "qwen2.5-32b" : "qwen2.5-7b", order[i + 1]));
    for (int st = 0; st < KVG_AUTOSCALE_NODE_STATES; st++)
        CHECK_INT(kvg_autoscale_node_parse(kvg_autoscale_node_name((enum kvg_autoscale_node)st)),
                  st);
    /* Prior and learned side by side: no sample, no learned figure; the
     * prior is the default's p90 whatever was learned. */
    CHECK(isnan(kvg_autoscale_startup_learned(&m, "qwen2.5-7b", KVG_AUTOSCALE_ASLEEP1, 0.9)));
    for (int i = 0; i < 5; i++)
        kvg_autoscale_startup_observe(&m, "qwen2.5-7b", KVG_AUTOSCALE_ASLEEP1, 0.3 + 0.1 * i, -1);
    CHECK_NEAR(kvg_autoscale_startup_learned(&m, "qwen2.5-7b", KVG_AUTOSCALE_ASLEEP1, 0.9), 0.7,
               1e-9);
    CHECK_NEAR(kvg_autoscale_startup_prior(&m, "qwen2.5-7b", KVG_AUTOSCALE_ASLEEP1, 0.9), 1.0,
               1e-3);
    CHECK_NEAR(kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_ASLEEP1), 0.7, 1e-9);
}

/* A fast share of the nodes (fast_class) weighs into the lead where new
 * replicas land: all fast, the lead is that class's; half fast, a mixture's
 * p90 is still bounded by its slowest class with a share (the cold nodes'). */
TEST(fast_share_moves_the_lead_mix)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    const char *md = "qwen2.5-32b";
    double cold = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_COLD);
    double rest = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_RESTORE);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_WARM), cold, 1e-9);
    m.fast_class = KVG_AUTOSCALE_RESTORE;
    m.fast_share = 1;
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_WARM), rest, 1e-9);
    m.fast_share = 0.5;
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_WARM), cold, 1e-9);
    /* 97% fast: the cold nodes hold 1.5% (< 5%), the warm ones too. */
    m.fast_share = 0.97;
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_WARM), rest, 1e-9);
    /* Learned from what is seen, as live: five restores of 8 s. */
    for (int i = 0; i < 5; i++) kvg_autoscale_startup_observe(&m, md, KVG_AUTOSCALE_RESTORE, 8, -1);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_WARM), 8, 1e-9);
}
