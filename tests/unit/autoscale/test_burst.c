/* The kvgate planner's burst margin (planner_kvgate.c, burst_margin()):
 * a prefill pool keeps the prior's margin for its first hour, then the
 * newest burst's (the highest it saw in the last three hours when none was
 * past the prior); other roles keep none
 * unless told; the scale-down hysteresis does not stack on it. The pool
 * follows each answer at once (an actuator with no start-up). */
#include "support/test.h"

#include <string.h>

#include "autoscale/planner.h"

/* Load 0.2 replicas' worth a req/s on a prefill pool (ISL 2000 at 10000
 * tokens/s a replica). */
static struct kvg_autoscale_opts opts(enum kvg_autoscale_role role)
{
    struct kvg_autoscale_opts o;
    kvg_autoscale_opts_default(&o);
    o.role = role;
    o.prof = (struct kvg_autoscale_profile){
        .prefill_tps = 10000, .decode_tps = 1000, .ttft_idle_s = 0.2, .itl_idle_s = 0.02};
    o.max_replicas = 64;
    o.cold_cache_penalty = 0;
    o.burst_headroom = -1; /* the learned margin these tests are about (asked for) */
    return o;
}

struct pool {
    struct kvg_autoscale_planner *p;
    struct kvg_autoscale_decision d;
    uint32_t ready;
    double t;
};

static void pool_init(struct pool *x, const struct kvg_autoscale_opts *o, uint32_t ready)
{
    memset(x, 0, sizeof *x);
    CHECK_INT(kvg_autoscale_planner_new("kvgate", o, &x->p), 0);
    x->ready = ready;
}

/* rate req/s (ISL 2000, OSL 100) until `until`, one plan per 15 s. */
static void run(struct pool *x, double until, double rate)
{
    for (; x->t < until; x->t += 15) {
        struct kvg_autoscale_signals s;
        memset(&s, 0, sizeof s);
        s.now = x->t;
        s.ready = x->ready;
        s.arrival_rate = rate;
        s.isl = 2000;
        s.osl = 100;
        s.input_tps = rate * 2000;
        s.output_tps = rate * 100;
        s.running = rate * 2;
        s.slo_miss = s.slo_miss_ttft = s.slo_miss_itl = s.slo_miss_prefill = s.slo_miss_decode = -1;
        CHECK_INT(kvg_autoscale_plan(x->p, &s, &x->d), 0);
        x->ready = x->d.desired;
    }
}

TEST(prefill_margin_prior_then_learned_then_forgotten)
{
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    struct pool x;
    pool_init(&x, &o, 11);
    /* 50 req/s, load 10: in the first hour the prior's 1.49 (14.9 -> 15),
     * not the headroom's 1.1 (11). */
    run(&x, 3000, 50);
    CHECK_INT(x.d.desired, 15);
    /* An hour without bursts: the learned margin is the load's own
     * (none); the hysteresis (one fewer when 11 fits in it at 0.8) takes
     * the pool down to 14. */
    run(&x, 6000, 50);
    CHECK_INT(x.d.desired, 14);
    /* A 120 s burst at 1.7x: the margin learns it at once and keeps it
     * (17) after the burst is over ... */
    run(&x, 6120, 85);
    CHECK_INT(x.d.desired, 17);
    run(&x, 6000 + 2 * 3600, 50);
    CHECK_INT(x.d.desired, 17);
    /* ... for three hours (36 W), then the hysteresis brings it back. */
    run(&x, 6120 + 3 * 3600 + 900, 50);
    CHECK_INT(x.d.desired, 14);
    kvg_autoscale_planner_free(x.p);
}

TEST(margin_only_in_prefill_pools_unless_set)
{
    /* A decode pool and an aggregated one under the same burst answer as
     * with burst_headroom 0 at every interval. */
    enum kvg_autoscale_role roles[] = {KVG_AUTOSCALE_DECODE, KVG_AUTOSCALE_AGGREGATED};
    for (size_t r = 0; r < 2; r++) {
        struct kvg_autoscale_opts o = opts(roles[r]), off = o;
        off.burst_headroom = 0;
        struct pool a, b;
        pool_init(&a, &o, 4);
        pool_init(&b, &off, 4);
        double rates[] = {20, 34, 20};
        double ends[] = {3000, 3120, 9000};
        for (size_t k = 0; k < 3; k++)
            for (double t = a.t; t < ends[k]; t += 15) {
                run(&a, t + 15, rates[k]);
                run(&b, t + 15, rates[k]);
                CHECK_INT(a.d.desired, b.d.desired);
            }
        kvg_autoscale_planner_free(a.p);
        kvg_autoscale_planner_free(b.p);
    }
    /* Set, an aggregated pool keeps it too. */
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_AGGREGATED);
    o.burst_headroom = 0.5;
    o.prof.decode_tps = 1e9; /* the load is the prompts' alone: 0.2 a req/s */
    struct pool x;
    pool_init(&x, &o, 1);
    run(&x, 1200, 45); /* 9 x 1.5 = 13.5 */
    CHECK_INT(x.d.desired, 14);
    kvg_autoscale_planner_free(x.p);
}

TEST(no_margin_unless_asked)
{
    /* By default a prefill pool keeps none: 50 req/s, load 10, the
     * headroom's 1.1 (11) where the learned margin's prior holds 15. */
    struct kvg_autoscale_opts d;
    kvg_autoscale_opts_default(&d);
    CHECK_NEAR(d.burst_headroom, 0, 0);
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    o.burst_headroom = d.burst_headroom;
    struct pool x;
    pool_init(&x, &o, 11);
    run(&x, 3000, 50);
    CHECK_INT(x.d.desired, 11);
    kvg_autoscale_planner_free(x.p);
}

TEST(hysteresis_does_not_stack_on_the_margin)
{
    /* A fixed margin 0.5 on load 10: 15. From 19 the pool comes down to
     * 15, where the margin still fits in one fewer at full use; headroom
     * 0.5 instead (the hysteresis on top: one fewer only when 15 fits at
     * 0.8) holds 19. */
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    o.burst_headroom = 0.5;
    struct pool x;
    pool_init(&x, &o, 19);
    run(&x, 1800, 50);
    CHECK_INT(x.d.desired, 15);
    kvg_autoscale_planner_free(x.p);
    o.burst_headroom = 0;
    o.headroom = 0.5;
    pool_init(&x, &o, 19);
    run(&x, 1800, 50);
    CHECK_INT(x.d.desired, 19);
    kvg_autoscale_planner_free(x.p);
}

/* The margin with a lead shorter than a burst (planner_kvgate.c,
 * react_margin()): the ratio learned, scaled by tau / (tau + T), tau the
 * reaction time (a restore's 20 s p90 + the reacting pool's 5 s interval), T the TTFT
 * target's wait (here 10 - 0.2 s, a target long enough for the scale to
 * show). Two 60 s bursts back to back, 1.5x then 2.25x the level: the
 * margin learns the highest minute's mean over the level (4 x 22.5 and 15
 * over 10: 2.1x) and on today's nodes holds the pool at 21 after them; on
 * restoring nodes 2.1 x 25 / 34.8 = 1.51: 16, the replicas the bursts
 * brought given back. The first hour's prior is set to 1 (none) to see
 * the learned margins alone. */
TEST(margin_shrinks_when_replicas_come_sooner_than_a_burst)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    o.burst_prior = 1;
    o.ttft_target_s = 10;
    o.startup = &m;
    uint32_t peak[2], after[2];
    for (int fast = 0; fast < 2; fast++) {
        m.fast_class = KVG_AUTOSCALE_RESTORE;
        m.fast_share = fast;
        struct pool x;
        pool_init(&x, &o, 11);
        run(&x, 900, 50);
        CHECK_INT(x.d.desired, 11);
        run(&x, 960, 75);
        run(&x, 1020, 112.5);
        peak[fast] = x.d.desired;
        run(&x, 2400, 50);
        after[fast] = x.d.desired;
        kvg_autoscale_planner_free(x.p);
    }
    CHECK_INT(after[0], 21);
    CHECK_INT(after[1], 16);
    /* In the burst the reacting pool was sized on it (22.5 x 1.1 = 24.75)
     * besides the margin. */
    CHECK_INT(peak[1], 25);
}

/* The margin's base (planner_kvgate.c, margin_base()): a burst long enough
 * to move the level (the median of W) must not be counted twice, in the
 * level and in the margin over it. A fixed margin 0.5 on load 10: 15. A
 * 180 s burst at 1.7x (12 of the W median's 20 samples): the pool is sized
 * on it with the headroom (17 x 1.1 = 18.7: 19), but the margin stays on
 * the 2W median (10, the trend's median slope 0: 15), where on the W
 * median it asked 17 x 1.5 = 25.5 (26) for replicas that would come after
 * the burst. */
TEST(margin_not_over_a_level_the_burst_moved)
{
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    o.burst_headroom = 0.5;
    struct pool x;
    pool_init(&x, &o, 15);
    run(&x, 3000, 50);
    CHECK_INT(x.d.desired, 15);
    run(&x, 3180, 85);
    CHECK_INT(x.d.desired, 19);
    kvg_autoscale_planner_free(x.p);
}

/* The newest burst past the prior sets the learned margin (planner_kvgate.c,
 * burst_margin()): after a 120 s burst at 1.8x and, an hour later, one at
 * 1.6x, the pool on load 10 keeps the second's margin (16), where keeping
 * the highest of three hours held the first's (18) all afternoon. */
TEST(newest_burst_replaces_an_older_larger_one)
{
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    struct pool x;
    pool_init(&x, &o, 15);
    run(&x, 6000, 50);
    run(&x, 6120, 90);
    run(&x, 9600, 50);
    CHECK_INT(x.d.desired, 18);
    run(&x, 9720, 80);
    run(&x, 9600 + 3600, 50);
    CHECK_INT(x.d.desired, 16);
    kvg_autoscale_planner_free(x.p);
}

/* A burst under the prior but past KV_BURST_NEWEST (planner_kvgate.c) is
 * the newest too: after a 2.2x step, an hour later a 1.4x burst sets the
 * margin, where at the prior's threshold the step's +120% was held the rest
 * of the day (the stress PD day's coincident bursts). A swing within the
 * headroom (1.1x) does not. */
TEST(a_burst_under_the_prior_replaces_a_larger_step)
{
    struct kvg_autoscale_opts o = opts(KVG_AUTOSCALE_PREFILL);
    struct pool x;
    pool_init(&x, &o, 15);
    run(&x, 6000, 50);
    run(&x, 6120, 110);
    run(&x, 9600, 50);
    uint32_t after_step = x.d.desired;
    CHECK(after_step >= 21);
    run(&x, 9660, 55); /* a swing within the headroom */
    run(&x, 9600 + 1800, 50);
    CHECK_INT(x.d.desired, after_step);
    run(&x, 11520, 70); /* 1.4x for 120 s */
    run(&x, 11400 + 3600, 50);
    CHECK(x.d.desired <= 15);
    kvg_autoscale_planner_free(x.p);
}
