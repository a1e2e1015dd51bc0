/* Planners on synthetic signals: each rule and its hysteresis. */
#include "support/test.h"

#include <math.h>
#include <string.h>

#include "autoscale/planner.h"
#include "base/err.h"
#include "planner_fixture.h"

TEST(registry)
{
    struct kvg_autoscale_opts o = opts();
    struct kvg_autoscale_planner *p;
    CHECK_INT(kvg_autoscale_planner_new("hpa", &o, &p), KVG_ENOTFOUND);
    snprintf(o.queue_preset, sizeof o.queue_preset, "cpu");
    CHECK_INT(kvg_autoscale_planner_new("queue", &o, &p), KVG_ECONFIG);
    o = opts();
    o.max_replicas = 0;
    CHECK_INT(kvg_autoscale_planner_new("queue", &o, &p), KVG_ECONFIG);
    o = opts();
    o.static_replicas = 7;
    p = make("static", &o);
    struct kvg_autoscale_decision d;
    struct kvg_autoscale_signals s = steady(0, 2, 100);
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK_INT(d.desired, 7);
    kvg_autoscale_planner_free(p);
}

TEST(queue_llmd_prefill_backlog_and_kv)
{
    struct kvg_autoscale_opts o = opts();
    struct kvg_autoscale_planner *p = make("queue", &o);
    struct kvg_autoscale_signals s = steady(0, 2, 1);
    /* 60k prompt tokens in flight / 10k tok/s = 6 s of backlog; / 1.5 s = 4 */
    s.inflight_prompt_tokens = 60000;
    s.kv_usage_sum = 1.2; /* 1.5 replicas at 0.8 */
    struct kvg_autoscale_decision d;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    CHECK(d.acted);
    CHECK(strstr(d.reason, "prefill backlog") != NULL);
    /* Within the polling interval nothing changes. */
    s.now = 10;
    s.inflight_prompt_tokens = 600000;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    CHECK(!d.acted);
    /* KV decides when it is the larger: 4.0 / 0.8 = 5 */
    s.now = 30;
    s.ready = 4;
    s.inflight_prompt_tokens = 0;
    s.kv_usage_sum = 4.0;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 5);
    CHECK(strstr(d.reason, "KV usage") != NULL);
    kvg_autoscale_planner_free(p);
}

TEST(queue_tolerance_upcap_and_down_stabilization)
{
    struct kvg_autoscale_opts o = opts();
    snprintf(o.queue_preset, sizeof o.queue_preset, "waiting");
    struct kvg_autoscale_planner *p = make("queue", &o);
    struct kvg_autoscale_decision d;
    struct kvg_autoscale_signals s = steady(0, 4, 1);
    s.waiting = 21; /* 4.2 replicas: within 10% of 4 */
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    s.now = 30;
    s.waiting = 500; /* 100 replicas, capped at max(2x4, 4+4) = 8 */
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 8);
    /* The load goes away: held at the window's highest for 300 s. */
    s.ready = 8;
    s.waiting = 0;
    for (int t = 60; t <= 300; t += 30) {
        s.now = t;
        kvg_autoscale_plan(p, &s, &d);
        CHECK_INT(d.desired, 8);
    }
    s.now = 361;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 1); /* min_replicas */
    kvg_autoscale_planner_free(p);
}

TEST(queue_to_and_from_zero)
{
    struct kvg_autoscale_opts o = opts();
    o.min_replicas = 0;
    snprintf(o.queue_preset, sizeof o.queue_preset, "waiting");
    struct kvg_autoscale_planner *p = make("queue", &o);
    struct kvg_autoscale_decision d;
    struct kvg_autoscale_signals s = steady(0, 1, 0);
    s.running = 0;
    for (int t = 0; t < 300; t += 30) {
        s.now = t;
        kvg_autoscale_plan(p, &s, &d);
        CHECK_INT(d.desired, 1);
    }
    s.now = 330;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 0);
    s.now = 360;
    s.ready = 0;
    s.queued = 3;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 1);
    kvg_autoscale_planner_free(p);
}

TEST(sla_sizes_from_token_rates)
{
    struct kvg_autoscale_opts o = opts();
    o.role = KVG_AUTOSCALE_PREFILL;
    struct kvg_autoscale_planner *p = make("sla", &o);
    struct kvg_autoscale_decision d;
    /* 20 req/s x 2000 = 40k tok/s over 10k -> 4 prefill replicas */
    struct kvg_autoscale_signals s = steady(0, 2, 20);
    s.ttft_mean = 0.4; /* p_corr 2 -> min(1, .) = 1 */
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    /* observed TTFT below the profile's (cache hits): p_corr 0.5 halves it */
    s.now = 180;
    s.ttft_mean = 0.1;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 2);
    /* no traffic: the interval is skipped, the count kept */
    s.now = 360;
    s.arrival_rate = 0;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 2);
    CHECK(strstr(d.reason, "no traffic") != NULL);
    kvg_autoscale_planner_free(p);
}

TEST(sla_decode_uses_itl_correction)
{
    struct kvg_autoscale_opts o = opts();
    o.role = KVG_AUTOSCALE_DECODE;
    o.itl_target_s = 0.05;
    o.prof.itl_idle_s = 0.01;
    o.prof.itl_per_seq_s = 0.001; /* ITL 50 ms at 40 seqs: 800 tok/s a replica */
    struct kvg_autoscale_planner *p = make("sla", &o);
    struct kvg_autoscale_decision d;
    struct kvg_autoscale_signals s = steady(0, 4, 32); /* 3200 out tok/s */
    s.running = 40;
    s.itl_mean = 0.02; /* expected 0.01 + 0.001*10 = 0.02: d_corr 1 */
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    s.now = 180;
    s.itl_mean = 0.04; /* twice slower than profiled: ITL allowed 25 ms -> 15 seqs, 600 tok/s */
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 6);
    kvg_autoscale_planner_free(p);
}

TEST(kvgate_forecasts_at_the_startup_horizon_and_counts_starting)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    o.cold_share = 1; /* lead = 32B cold p90, 471 s */
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    /* A ramp of +0.02 req/s per second: load = rate*2000/10000 + rate*100/1000 = 0.3 rate. */
    double rate = 10;
    uint32_t ready = 3;
    for (int t = 0; t <= 600; t += 15) {
        rate = 10 + 0.02 * t;
        struct kvg_autoscale_signals s = steady(t, ready, rate);
        kvg_autoscale_plan(p, &s, &d);
    }
    /* at t = 600: rate 22 (load 6.6); at +486 s rate ~31.7 (load ~9.5) */
    CHECK(d.horizon_s > 470);
    CHECK(d.forecast > 8.5 && d.forecast < 10.5);
    CHECK(d.desired >= 9 && d.desired <= 11);
    /* Replicas already starting count: asked again with them, no more. */
    uint32_t want = d.desired;
    struct kvg_autoscale_signals s = steady(615, ready, rate);
    s.starting = want - ready;
    kvg_autoscale_plan(p, &s, &d);
    CHECK(d.desired <= want + 1);
    kvg_autoscale_planner_free(p);
}

/* The same ramp on a clock 20x faster (a miniature): start-ups of seconds
 * (the model scaled by 0.05), a 1 s interval and a 15 s window. The trend
 * must come as early, in window terms, as it does at 300 s. */
TEST(kvgate_window_sets_its_clock)
{
    struct kvg_autoscale_startup su;
    kvg_autoscale_startup_init(&su);
    kvg_autoscale_startup_scale(&su, 0.05);
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    o.cold_share = 1; /* lead = 32B cold p90 x 0.05, 23.55 s */
    o.startup = &su;
    o.interval_s = 1;
    o.window_s = 15;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    double rate = 10;
    for (int t = 0; t <= 30; t++) {
        rate = 10 + 0.4 * t; /* the ramp above, 20x faster */
        struct kvg_autoscale_signals s = steady(t, 3, rate);
        kvg_autoscale_plan(p, &s, &d);
    }
    /* at t = 30: rate 22 (load 6.6); at +24.55 s + 7.5 s of level lag the
     * Theil-Sen line reads ~33 (load ~9.9), with the level at its median */
    CHECK(d.horizon_s > 23 && d.horizon_s < 26);
    CHECK(d.forecast > 8.5 && d.forecast < 10.5);
    CHECK(d.desired >= 9 && d.desired <= 11);
    kvg_autoscale_planner_free(p);
    /* The default 300 s window on that 30 s ramp: no trend yet (the history
     * spans less than the window), the level only. */
    o.window_s = 300;
    p = make("kvgate", &o);
    for (int t = 0; t <= 30; t++) {
        struct kvg_autoscale_signals s = steady(t, 3, 10 + 0.4 * t);
        kvg_autoscale_plan(p, &s, &d);
    }
    CHECK(d.forecast < 6.7);
    kvg_autoscale_planner_free(p);
}

/* A short interval does not shorten the trend's history: samples are kept
 * one per 3W / 60, so at a 1 s interval the default window still sees its
 * slope once the history spans 300 s. */
TEST(kvgate_history_is_thinned_to_the_window)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    o.cold_share = 1;
    o.interval_s = 1;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    for (int t = 0; t <= 600; t++) {
        struct kvg_autoscale_signals s = steady(t, 3, 10 + 0.02 * t);
        kvg_autoscale_plan(p, &s, &d);
    }
    /* as in kvgate_forecasts_at_the_startup_horizon_and_counts_starting */
    CHECK(d.forecast > 8.5 && d.forecast < 10.5);
    kvg_autoscale_planner_free(p);
}

TEST(kvgate_prices_cache_hits_and_young_replicas)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    /* 20 req/s: prefill 4 + decode 2 = 6; with half the prompt cached, 2 + 2 = 4 */
    struct kvg_autoscale_signals s = steady(0, 4, 20);
    s.cache_hit = 0.5;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    kvg_autoscale_planner_free(p);
    o.cold_cache_penalty = 0.5;
    p = make("kvgate", &o);
    /* Two of four ready are young (worth half): 4 needed = 2 old + 2/0.5 = 6 */
    s.young = 2;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 6);
    kvg_autoscale_planner_free(p);
}

/* One decision of a fresh kvgate planner on `s`. */
static struct kvg_autoscale_decision kvgate_once(const struct kvg_autoscale_opts *o,
                                                 const struct kvg_autoscale_signals *s)
{
    struct kvg_autoscale_planner *p = make("kvgate", o);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_plan(p, s, &d), 0);
    kvg_autoscale_planner_free(p);
    return d;
}

TEST(kvgate_backlog_floor_drains_within_a_minute_bounded)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    /* Load 0.3 (1 req/s) on 2 ready replicas. */
    struct kvg_autoscale_signals s = steady(0, 2, 1);
    /* 120k uncached tokens (12 replica-seconds): the 2 ready replicas drain
     * it within the minute. (Sized on the 2 s TTFT target it asked for 6.) */
    s.inflight_prompt_tokens = 120000;
    struct kvg_autoscale_decision d = kvgate_once(&o, &s);
    CHECK(d.desired <= 2);
    CHECK(strncmp(d.reason, "backlog:", 8) != 0);
    /* 1.5M (150 replica-seconds): 0.3 + 150 / 60 = 2.8 -> 3 (on the TTFT
     * target: 75, the cap 32). */
    s.inflight_prompt_tokens = 1.5e6;
    d = kvgate_once(&o, &s);
    CHECK_INT(d.desired, 3);
    CHECK(strncmp(d.reason, "backlog:", 8) == 0);
    /* 10M (1,000 replica-seconds would be 17): one interval grows the pool
     * at most twofold. */
    s.inflight_prompt_tokens = 10e6;
    d = kvgate_once(&o, &s);
    CHECK_INT(d.desired, 4);
    /* The 1.5M backlog with one replica already starting: it counts (no
     * more is asked for) and is kept (not cancelled as unneeded). */
    s.inflight_prompt_tokens = 1.5e6;
    s.starting = 1;
    d = kvgate_once(&o, &s);
    CHECK_INT(d.desired, 3);
}

TEST(kvgate_scale_down_hysteresis_one_at_a_time)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    o.down_hold_s = 120;
    o.down_util = 0.8;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    uint32_t ready = 10;
    int t = 0;
    /* load 3.0 (10 req/s) on 10 replicas: not before the hold has passed */
    for (; t < 120; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, t < 15 ? 30 : 10);
        kvg_autoscale_plan(p, &s, &d);
        CHECK(d.desired >= ready);
    }
    int steps = 0;
    for (; t < 1200 && ready > 1; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, 10);
        kvg_autoscale_plan(p, &s, &d);
        CHECK(d.desired >= ready - 1); /* never more than one at a time */
        if (d.desired < ready) steps++;
        ready = d.desired;
    }
    /* from 5, 3.0 still fits in 4 at 0.8 (3.2); from 4 it does not fit in 3 (2.4) */
    CHECK_INT(ready, 4);
    CHECK_INT(steps, 6);
    /* a bump to 3.9 fits in the 4 there are: no change either way */
    struct kvg_autoscale_signals s = steady(t, ready, 13);
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 4);
    kvg_autoscale_planner_free(p);
}

/* Where a pool of role r at `rate` settles from 10 replicas (down_util du). */
static uint32_t settles_at(enum kvg_autoscale_role r, double du, double rate)
{
    struct kvg_autoscale_opts o = opts();
    o.role = r;
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    o.down_hold_s = 120;
    o.down_util = du;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    uint32_t ready = 10;
    for (int t = 0; t < 1500 && ready > 1; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, rate);
        kvg_autoscale_plan(p, &s, &d);
        ready = d.desired;
    }
    kvg_autoscale_planner_free(p);
    return ready;
}

/* down_util's default is the role's: a decode pool's rest may run to 0.9
 * (its ITL grows with the batch, no queue), the others' to 0.8. A load of
 * 3.4 replicas fits in 4 at 0.9 (3.6), not at 0.8 (3.2). */
TEST(kvgate_a_decode_pool_scales_down_to_0_9_the_others_to_0_8)
{
    CHECK_INT(settles_at(KVG_AUTOSCALE_DECODE, 0, 34), 4);            /* 100 x 34 / 1000 */
    CHECK_INT(settles_at(KVG_AUTOSCALE_PREFILL, 0, 17), 5);           /* 2000 x 17 / 10000 */
    CHECK_INT(settles_at(KVG_AUTOSCALE_AGGREGATED, 0, 11.333333), 5); /* (0.2 + 0.1) x 11.33 */
    /* the operator's down_util holds for every role */
    CHECK_INT(settles_at(KVG_AUTOSCALE_DECODE, 0.8, 34), 5);
    CHECK_INT(settles_at(KVG_AUTOSCALE_PREFILL, 0.9, 17), 4);
}

TEST(kvgate_to_zero_and_back_on_the_gateway_queue)
{
    struct kvg_autoscale_opts o = opts();
    o.min_replicas = 0;
    o.zero_idle_s = 300;
    o.down_hold_s = 60;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    uint32_t ready = 1;
    int t = 0;
    for (; t <= 300; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, 0);
        s.running = 0;
        kvg_autoscale_plan(p, &s, &d);
        ready = d.desired;
    }
    CHECK_INT(ready, 0);
    struct kvg_autoscale_signals s = steady(t, 0, 0);
    s.running = 0;
    s.queued = 2;
    kvg_autoscale_plan(p, &s, &d);
    CHECK(d.desired >= 1);
    CHECK(strstr(d.reason, "from zero") != NULL);
    kvg_autoscale_planner_free(p);
}

/* kvgate (o, without the young-cache penalty) on 7 replicas at 20 req/s
 * (load 6.0, 6.6 with headroom) for 5 minutes: the level a burst comes
 * over. *t is the next tick. */
static struct kvg_autoscale_planner *kvgate_at_level(struct kvg_autoscale_opts o,
                                                     struct kvg_autoscale_decision *d, int *t)
{
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    for (*t = 0; *t < 300; *t += 15) {
        struct kvg_autoscale_signals s = steady(*t, 7, 20);
        kvg_autoscale_plan(p, &s, d);
    }
    return p;
}

TEST(kvgate_sizes_on_the_level_not_a_burst)
{
    struct kvg_autoscale_decision d;
    int t;
    struct kvg_autoscale_planner *p = kvgate_at_level(opts(), &d, &t);
    CHECK_INT(d.desired, 7);
    /* A window at twice the rate without a backlog: the 5-minute median does
     * not move, and no replica is asked for that would come after it. */
    struct kvg_autoscale_signals s = steady(t, 7, 40);
    kvg_autoscale_plan(p, &s, &d);
    CHECK_INT(d.desired, 7);
    /* The same rate held for over half the window moves the level: it scales. */
    for (t += 15; t < 600; t += 15) {
        s = steady(t, 7, 40);
        kvg_autoscale_plan(p, &s, &d);
    }
    CHECK(d.desired >= 13);
    kvg_autoscale_planner_free(p);
}

/* kvgate_at_level with new replicas landing as `m` says, then one window
 * at `burst` req/s (no backlog): the decision on that window. */
static struct kvg_autoscale_decision kvgate_burst(const struct kvg_autoscale_startup *m,
                                                  double burst)
{
    struct kvg_autoscale_opts o = opts();
    o.startup = m;
    struct kvg_autoscale_decision d;
    int t;
    struct kvg_autoscale_planner *p = kvgate_at_level(o, &d, &t);
    struct kvg_autoscale_signals s = steady(t, 7, burst);
    kvg_autoscale_plan(p, &s, &d);
    kvg_autoscale_planner_free(p);
    return d;
}

/* The same burst window (26 req/s: load 7.8 over the level's 6.0) on
 * restores of 20 s (p90) is sized for (7.8 + 10% = 8.58: 9), where on
 * today's nodes (their lead minutes, kvgate_sizes_on_the_level_not_a_burst)
 * it is left to the headroom: 7; so it is with half the nodes restoring
 * (the pool's lead is its cold nodes'), and with restores whose reaction
 * is slower than W/5 (60 s). */
TEST(kvgate_reacts_to_the_last_window_when_replicas_come_sooner_than_a_burst)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    struct kvg_autoscale_decision d = kvgate_burst(&m, 26);
    CHECK_INT(d.desired, 7);
    CHECK(strstr(d.reason, "forecast:") == d.reason);
    m.fast_class = KVG_AUTOSCALE_RESTORE;
    m.fast_share = 1;
    d = kvgate_burst(&m, 26);
    CHECK_INT(d.desired, 9);
    CHECK(strstr(d.reason, "recent window:") == d.reason);
    /* Not above the level: nothing to react to. */
    d = kvgate_burst(&m, 20);
    CHECK_INT(d.desired, 7);
    m.fast_share = 0.5;
    d = kvgate_burst(&m, 26);
    CHECK_INT(d.desired, 7);
    /* Restores whose reaction (p90 60 s + 15) is slower than W/5: the
     * burst is the headroom's. */
    m.fast_share = 1;
    CHECK_INT(kvg_autoscale_startup_set(&m, "default", KVG_AUTOSCALE_RESTORE,
                                        (struct kvg_autoscale_startup_dist){45, 30, 60}),
              0);
    d = kvgate_burst(&m, 26);
    CHECK_INT(d.desired, 7);
}

/* A pool that reacts plans three times an interval (5 s at the default
 * 15 s): its reaction time is its lead plus an interval, and a 2.25x step
 * missed through the interval. A pool on today's nodes plans every 15 s. */
TEST(kvgate_reacting_pool_plans_three_times_an_interval)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    m.fast_class = KVG_AUTOSCALE_RESTORE;
    struct kvg_autoscale_opts o = opts();
    o.startup = &m;
    for (int fast = 0; fast < 2; fast++) {
        m.fast_share = fast;
        struct kvg_autoscale_planner *p = make("kvgate", &o);
        struct kvg_autoscale_decision d;
        struct kvg_autoscale_signals s = steady(0, 7, 20);
        CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
        CHECK_INT(d.acted, 1);
        s.now = 5;
        CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
        CHECK_INT(d.acted, fast);
        s.now = 15;
        CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
        CHECK_INT(d.acted, 1);
        kvg_autoscale_planner_free(p);
    }
}

/* A decode pool's emitted tokens stop at what it serves: when arrivals ask
 * more, the pool sizes on what they ask (rate x measured OSL), as it would
 * had it emitted all of it. Two planners see the same day, one with the
 * output the arrivals ask, one with it capped at its replicas' capacity. */
TEST(kvgate_decode_pool_sizes_on_the_output_its_arrivals_ask)
{
    struct kvg_autoscale_opts o = opts();
    o.role = KVG_AUTOSCALE_DECODE;
    struct kvg_autoscale_planner *seen = make("kvgate", &o), *capped = make("kvgate", &o);
    struct kvg_autoscale_decision ds, dc;
    uint32_t ready = 3, before = 0;
    for (int t = 0; t <= 1200; t += 15) {
        double rate = t < 1140 ? 20 : 60; /* 2000 then 6000 output tokens/s */
        struct kvg_autoscale_signals s = steady(t, ready, rate);
        CHECK_INT(kvg_autoscale_plan(seen, &s, &ds), 0);
        s.output_tps = fmin(s.output_tps, ready * o.prof.decode_tps);
        CHECK_INT(kvg_autoscale_plan(capped, &s, &dc), 0);
        CHECK_INT(dc.desired, ds.desired);
        if (t < 1140) before = ds.desired;
        ready = ds.desired;
    }
    CHECK(before < 4);
    CHECK(dc.desired > 6);
    kvg_autoscale_planner_free(seen);
    kvg_autoscale_planner_free(capped);
}

/* Lengths not measured yet (no request finished in the window) read as 0
 * to the planners, but never remove a replica while requests arrive; once
 * measured, the same low load does. */
TEST(unmeasured_lengths_remove_nothing)
{
    struct kvg_autoscale_opts o = opts();
    o.down_hold_s = 0;
    const char *names[] = {"kvgate", "queue", "sla"};
    for (size_t i = 0; i < 3; i++) {
        struct kvg_autoscale_planner *p = make(names[i], &o);
        struct kvg_autoscale_signals s = steady(0, 6, 0.5);
        s.isl = s.osl = s.input_tps = s.output_tps = s.cache_hit = -1;
        s.running = 0;
        struct kvg_autoscale_decision d;
        for (int t = 0; t < 2000; t += 15) {
            s.now = t;
            CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
            CHECK_INT(d.desired, 6);
        }
        s = steady(2000, 6, 0.5); /* measured: 0.5 req/s is far below 6 replicas */
        s.running = 0;
        uint32_t low = 6;
        for (int t = 2000; t < 6000; t += 15) {
            s.now = t;
            CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
            if (d.desired < low) low = d.desired;
        }
        CHECK(low < 6);
        kvg_autoscale_planner_free(p);
    }
}

/* A pool whose every new replica wakes or restores (node: asleep1, asleep2,
 * restore) plans on that class's lead (startup.c, lead_mix's rest), where
 * it took a warm start's; cold nodes beside them still set the p90. */
TEST(kvgate_pool_of_woken_replicas_plans_on_their_lead)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    const char *md = "qwen2.5-7b";
    double asleep = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_ASLEEP1);
    double warm = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_WARM);
    CHECK(asleep < warm);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0, 0, KVG_AUTOSCALE_ASLEEP1), asleep, 1e-9);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0, 0, KVG_AUTOSCALE_WARM), warm, 1e-9);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_ASLEEP1),
               kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_COLD), 1e-9);
    struct kvg_autoscale_opts o = opts();
    snprintf(o.model, sizeof o.model, "%s", md);
    o.startup = &m;
    o.node = KVG_AUTOSCALE_ASLEEP1;
    o.cold_share = o.fetch_share = 0; /* the defaults' half of cold nodes would set the p90 */
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_signals s = steady(0, 1, 5);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK_NEAR(d.horizon_s, asleep + 5, 1e-9); /* it reacts: plans every 5 s */
    kvg_autoscale_planner_free(p);
}

/* Live ticks jitter by milliseconds: plans every 15 s on 5 s ticks stay 15 s
 * apart on the first plan's grid (before, a tick 10 ms early was not due and
 * the plan came a tick later, 20 s after the last). After a stall longer
 * than the interval the grid starts again from the late tick. */
TEST(plans_keep_their_grid_through_tick_jitter)
{
    struct kvg_autoscale_opts o = opts();
    o.interval_s = 15;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    double last = -1, gap_max = 0;
    int plans = 0;
    for (int k = 1; k <= 120; k++) {
        double jitter = k % 2 ? 0.02 : -0.01;
        struct kvg_autoscale_signals s = steady(5.0 * k + jitter, 3, 10);
        CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
        if (!d.acted) continue;
        if (last >= 0 && s.now - last > gap_max) gap_max = s.now - last;
        last = s.now;
        plans++;
    }
    CHECK(gap_max < 15.1);
    CHECK_INT(plans, 40);
    /* A 40 s stall: the next tick plans, then every 15 s from it. */
    struct kvg_autoscale_signals s = steady(last + 40, 3, 10);
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK(d.acted);
    s = steady(last + 50, 3, 10);
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK(!d.acted);
    s = steady(last + 55, 3, 10);
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK(d.acted);
    kvg_autoscale_planner_free(p);
}
