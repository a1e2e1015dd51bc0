/* The kvgate planner's correction on the observed SLO (planner_kvgate.c):
 * what it learns from the miss share, near capacity only, how it forgets,
 * and which share each pool (aggregated, prefill, decode) reads. */
#include "support/test.h"

#include "autoscale/planner.h"
#include "base/err.h"
#include "planner_fixture.h"

TEST(kvgate_corrects_on_the_observed_slo)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    /* 20 req/s at 60% hit: prefill 1.6 + decode 2 = 3.6 replicas' worth */
    uint32_t ready = 4;
    int t = 0;
    for (; t < 300; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, 20);
        s.cache_hit = 0.6;
        s.slo_miss = 0.05; /* 5% miss: each replica worth less */
        kvg_autoscale_plan(p, &s, &d);
        ready = d.desired;
    }
    CHECK(ready >= 6);
    CHECK(strstr(d.reason, "x1.") != NULL || strstr(d.reason, "x2.00") != NULL);
    /* No misses for long: it gives the slack back, one replica at a time. */
    uint32_t high = ready;
    for (; t < 3600; t += 15) {
        struct kvg_autoscale_signals s = steady(t, ready, 20);
        s.cache_hit = 0.6;
        s.slo_miss = 0;
        kvg_autoscale_plan(p, &s, &d);
        CHECK(d.desired + 1 >= ready);
        ready = d.desired;
    }
    CHECK(ready < high);
    CHECK(ready >= 3); /* the correction stops at 0.6x: 3.6 x 0.6 = 2.2, over 0.8 */
    kvg_autoscale_planner_free(p);
}

/* The correction factor the last decision used ("x%.2f" in its reason). */
static double corr_of(const struct kvg_autoscale_decision *d)
{
    const char *x = strstr(d->reason, "%, x");
    double c = -1;
    if (x) sscanf(x + 4, "%lf", &c);
    return c;
}

TEST(kvgate_correction_goes_down_only_as_far_as_the_pool_proves)
{
    struct kvg_autoscale_opts o = opts();
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    /* 10 req/s (load 3.0) on 10 replicas held there (a trough, hysteresis):
     * no misses, but one replica fewer is nowhere near tight, so nothing
     * is learned about capacity. */
    for (int t = 0; t < 1800; t += 15) {
        struct kvg_autoscale_signals s = steady(t, 10, 10);
        s.slo_miss = 0;
        kvg_autoscale_plan(p, &s, &d);
    }
    CHECK_NEAR(corr_of(&d), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    /* The same load on 4 held replicas: it walks down to where 3 would just
     * fit at down_util (3 x 0.8 / (3.0 x 1.1) = 0.73), not to its 0.5 floor. */
    p = make("kvgate", &o);
    for (int t = 0; t < 3600; t += 15) {
        struct kvg_autoscale_signals s = steady(t, 4, 10);
        s.slo_miss = 0;
        kvg_autoscale_plan(p, &s, &d);
    }
    CHECK_NEAR(corr_of(&d), 3 * 0.8 / 3.3, 0.01);
    /* Misses past 95% of the budget raise it again, 2% an interval. */
    double before = corr_of(&d);
    struct kvg_autoscale_signals s = steady(3600, 4, 10);
    s.slo_miss = 0.05;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_NEAR(corr_of(&d), before * 1.02, 0.005);
    /* ... but not while replicas start: those misses are the ramp's. */
    before = corr_of(&d);
    s.now = 3615;
    s.starting = 2;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_NEAR(corr_of(&d), before, 1e-9);
    kvg_autoscale_planner_free(p);
}

/* kvgate on a pool held at `ready` replicas at `rate` req/s, a share
 * miss_ttft of the requests over the TTFT target and miss_itl over the ITL
 * target (as many as can over both: either is the larger), from t0 for n
 * intervals; the last factor. */
static double corr_split(struct kvg_autoscale_planner *p, int t0, int n, uint32_t ready,
                         double rate, double miss_ttft, double miss_itl)
{
    struct kvg_autoscale_decision d;
    for (int i = 0; i < n; i++) {
        struct kvg_autoscale_signals s = steady(t0 + 15 * i, ready, rate);
        s.slo_miss_ttft = miss_ttft;
        s.slo_miss_itl = miss_itl;
        s.slo_miss = miss_ttft > miss_itl ? miss_ttft : miss_itl;
        kvg_autoscale_plan(p, &s, &d);
    }
    return corr_of(&d);
}

/* The same, a share miss over both targets. */
static double corr_after(struct kvg_autoscale_planner *p, int t0, int n, uint32_t ready,
                         double rate, double miss)
{
    return corr_split(p, t0, n, ready, rate, miss, miss);
}

/* The band on a 99% goal: misses under 60% of the budget (0.6%) teach
 * more capacity, past 95% (0.95%) less, between them the factor holds
 * (load 3.0 on 4 held replicas, 40 intervals a step). */
TEST(kvgate_correction_holds_between_60_and_95_percent_of_the_budget)
{
    struct kvg_autoscale_opts o = opts();
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    double c = corr_after(p, 0, 40, 4, 10, 0.005); /* 50%: down (it held at 0.8 / 0.4) */
    CHECK(c < 0.95);
    CHECK_NEAR(corr_after(p, 600, 40, 4, 10, 0.007), c, 0.03); /* the EWMA's tail */
    c = corr_after(p, 1200, 40, 4, 10, 0.007);
    CHECK_NEAR(corr_after(p, 1800, 40, 4, 10, 0.009), c, 1e-9); /* 90%: holds (it rose at 0.8) */
    CHECK(corr_after(p, 2400, 40, 4, 10, 0.012) > c * 1.2);     /* 120%: up */
    kvg_autoscale_planner_free(p);
}

TEST(kvgate_split_pool_correction_learns_only_near_capacity)
{
    struct kvg_autoscale_opts o = opts();
    o.cold_cache_penalty = 0;
    o.role = KVG_AUTOSCALE_PREFILL; /* load 0.2 a req/s: 15 req/s is 3.0 */
    /* Load 3.0 on 4 replicas (75% of their profile), no misses for an hour:
     * a pool under its profiled capacity does not prove it higher, so the
     * factor stays 1 (the aggregated rule walks it down to 3 x 0.8 / 3.3 =
     * 0.73, and the pool after it). */
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    CHECK_NEAR(corr_after(p, 0, 240, 4, 15, 0), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    /* On 2 (150% of their profile) without misses it does: down to what
     * the pool proves, 1 / 1.5, not to its 0.5 floor. */
    p = make("kvgate", &o);
    double c = corr_after(p, 0, 240, 2, 15, 0);
    CHECK_NEAR(c, 1 / 1.5, 0.005);
    /* Misses past 95% of the budget there raise it again, 2% an interval. */
    CHECK_NEAR(corr_after(p, 3600, 1, 2, 15, 0.05), c * 1.02, 0.005);
    /* ... but not while replicas start: those misses are the ramp's. */
    struct kvg_autoscale_decision d;
    struct kvg_autoscale_signals s = steady(3615, 2, 15);
    s.slo_miss = s.slo_miss_ttft = s.slo_miss_itl = 0.05;
    s.starting = 2;
    kvg_autoscale_plan(p, &s, &d);
    double before = corr_of(&d);
    s.now = 3630;
    kvg_autoscale_plan(p, &s, &d);
    CHECK_NEAR(corr_of(&d), before, 1e-9);
    kvg_autoscale_planner_free(p);
    /* Misses on a pool far under what it is believed to hold (10 replicas
     * at 30%: the decode pool's wait, say) are not its capacity's: the
     * factor does not rise (the aggregated rule raises it 2% an interval). */
    p = make("kvgate", &o);
    CHECK_NEAR(corr_after(p, 0, 40, 10, 15, 0.05), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    /* A factor raised near capacity is given back once misses stop. */
    p = make("kvgate", &o);
    CHECK(corr_after(p, 0, 20, 4, 15, 0.05) > 1.2);
    CHECK_NEAR(corr_after(p, 300, 120, 4, 15, 0), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
}

/* Each pool corrects on the misses it answers for: a decode pool on ITL,
 * a prefill pool on TTFT. Load 3.0 on 4 replicas (75% of their profile:
 * near enough for misses to raise the factor, too light for no misses to
 * lower it). */
TEST(kvgate_split_pools_correct_on_their_own_target)
{
    struct kvg_autoscale_opts o = opts();
    o.cold_cache_penalty = 0;
    o.role = KVG_AUTOSCALE_DECODE; /* 0.1 a req/s: 30 req/s is 3.0 */
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    /* 5% over the TTFT target (the prefill side's burst), none over ITL:
     * 20 intervals leave the decode factor where it was. */
    CHECK_NEAR(corr_split(p, 0, 20, 4, 30, 0.05, 0), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    /* The same share over the ITL target raises it (1.02 an interval). */
    p = make("kvgate", &o);
    CHECK(corr_split(p, 0, 20, 4, 30, 0, 0.05) > 1.2);
    kvg_autoscale_planner_free(p);
    o.role = KVG_AUTOSCALE_PREFILL; /* 0.2 a req/s: 15 req/s is 3.0 */
    p = make("kvgate", &o);
    CHECK_NEAR(corr_split(p, 0, 20, 4, 15, 0, 0.05), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    p = make("kvgate", &o);
    CHECK(corr_split(p, 0, 20, 4, 15, 0.05, 0) > 1.2);
    kvg_autoscale_planner_free(p);
}

/* An aggregated pool's decisions on signals with no split beside those on
 * the same signals with split(t, i)'s: the same, interval by interval. */
static void aggregated_unmoved_by(void (*split)(struct kvg_autoscale_signals *t, int i))
{
    struct kvg_autoscale_opts o = opts();
    struct kvg_autoscale_planner *a = make("kvgate", &o), *b = make("kvgate", &o);
    uint32_t ready = 4;
    for (int i = 0; i < 400; i++) {
        double miss = i % 40 < 8 ? 0.05 : i % 40 < 12 ? 0.005 : 0;
        struct kvg_autoscale_signals s = steady(15 * i, ready, 10 + (i % 50) * 0.4);
        s.cache_hit = 0.5;
        s.slo_miss = miss;
        struct kvg_autoscale_signals t = s;
        split(&t, i);
        struct kvg_autoscale_decision da, db;
        CHECK_INT(kvg_autoscale_plan(a, &s, &da), 0);
        CHECK_INT(kvg_autoscale_plan(b, &t, &db), 0);
        CHECK_INT(da.desired, db.desired);
        CHECK(memcmp(&da.need, &db.need, sizeof da.need) == 0);
        CHECK(memcmp(&da.forecast, &db.forecast, sizeof da.forecast) == 0);
        CHECK_STR(da.reason, db.reason);
        ready = da.desired;
    }
    kvg_autoscale_planner_free(a);
    kvg_autoscale_planner_free(b);
}

/* Split shares that would tell either side something else. */
static void split_by_target(struct kvg_autoscale_signals *t, int i)
{
    t->slo_miss_ttft = i % 2 ? 0 : 0.5;
    t->slo_miss_itl = i % 3 ? 0.5 : 0;
}

static void split_by_leg(struct kvg_autoscale_signals *t, int i)
{
    split_by_target(t, i);
    t->slo_miss_prefill = i % 2 ? 0.5 : 0;
    t->slo_miss_decode = i % 5 ? 0 : 0.5;
}

/* An aggregated pool answers for both targets: it reads the share over
 * either, and the split beside it changes none of its decisions. */
TEST(kvgate_aggregated_ignores_the_split)
{
    aggregated_unmoved_by(split_by_target);
}

/* The same for the split by leg (a PD pool's, signals.h). */
TEST(kvgate_aggregated_ignores_the_leg_split)
{
    aggregated_unmoved_by(split_by_leg);
}

/* kvgate on a PD pool (as corr_split) whose requests' misses are split by
 * leg: a share miss_pre on the prefill leg, miss_dec on the decode leg, all
 * of them TTFT misses (the decode leg's: the wait for a decode replica). */
static double corr_legs(struct kvg_autoscale_planner *p, int t0, int n, uint32_t ready, double rate,
                        double miss_pre, double miss_dec)
{
    struct kvg_autoscale_decision d;
    for (int i = 0; i < n; i++) {
        struct kvg_autoscale_signals s = steady(t0 + 15 * i, ready, rate);
        s.slo_miss = s.slo_miss_ttft = miss_pre + miss_dec;
        s.slo_miss_itl = 0;
        s.slo_miss_prefill = miss_pre;
        s.slo_miss_decode = miss_dec;
        kvg_autoscale_plan(p, &s, &d);
    }
    return corr_of(&d);
}

/* With the legs timed, each PD pool corrects on its own leg's misses: TTFT
 * misses of requests that waited for a decode replica raise the decode
 * factor (on ITL alone it saw none) and not the prefill one; those of a
 * prefill leg past the target raise the prefill factor only. */
TEST(kvgate_split_pools_correct_on_their_own_leg)
{
    struct kvg_autoscale_opts o = opts();
    o.cold_cache_penalty = 0;
    o.role = KVG_AUTOSCALE_DECODE; /* 30 req/s is 3.0 on 4 */
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    CHECK(corr_legs(p, 0, 20, 4, 30, 0, 0.05) > 1.2);
    kvg_autoscale_planner_free(p);
    p = make("kvgate", &o);
    CHECK_NEAR(corr_legs(p, 0, 20, 4, 30, 0.05, 0), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    o.role = KVG_AUTOSCALE_PREFILL; /* 15 req/s is 3.0 on 4 */
    p = make("kvgate", &o);
    CHECK_NEAR(corr_legs(p, 0, 20, 4, 15, 0, 0.05), 1.0, 1e-9);
    kvg_autoscale_planner_free(p);
    p = make("kvgate", &o);
    CHECK(corr_legs(p, 0, 20, 4, 15, 0.05, 0) > 1.2);
    kvg_autoscale_planner_free(p);
}

TEST(kvgate_correction_forgets_a_burst_within_a_minute)
{
    struct kvg_autoscale_opts o = opts();
    o.headroom = 0;
    o.cold_cache_penalty = 0;
    struct kvg_autoscale_planner *p = make("kvgate", &o);
    struct kvg_autoscale_decision d;
    /* One minute at 5% misses (a burst), then none: the factor rises while
     * the last minute's misses are over budget and stops soon after (no
     * windup: 4 + 7 rises at most, 1.02^11 = 1.24). */
    int t = 0, rises = 0;
    double last = 1;
    for (; t < 900; t += 15) {
        struct kvg_autoscale_signals s = steady(t, 8, 20);
        s.slo_miss = t < 60 ? 0.05 : 0;
        kvg_autoscale_plan(p, &s, &d);
        if (corr_of(&d) > last + 1e-9) rises++;
        last = corr_of(&d);
    }
    CHECK(rises >= 4);
    CHECK(rises <= 11);
    CHECK(last < 1.25);
    kvg_autoscale_planner_free(p);
}
