/* The kvgate planner's two lead times (planner_kvgate.c): with parked
 * replicas (standby) it sizes on a wake's horizon for what they can cover
 * and on a start's past that; a pool whose every new replica wakes or
 * restores plans on that class's lead (startup.c, lead_mix's rest). */
#include "support/test.h"

#include <string.h>

#include "autoscale/planner.h"

static struct kvg_autoscale_opts opts(void)
{
    struct kvg_autoscale_opts o;
    kvg_autoscale_opts_default(&o);
    o.prof = (struct kvg_autoscale_profile){
        .prefill_tps = 10000, .decode_tps = 1000, .ttft_idle_s = 0.2, .itl_idle_s = 0.02};
    o.max_replicas = 64;
    o.cold_cache_penalty = 0;
    return o;
}

/* One plan at t of a pool at `rate` req/s (ISL 2000, OSL 100) with `ready`
 * replicas and `parked` ones that wake in wake_s. */
static void plan(struct kvg_autoscale_planner *p, double t, double rate, uint32_t ready,
                 uint32_t parked, double wake_s, struct kvg_autoscale_decision *d)
{
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.now = t;
    s.ready = ready;
    s.parked = parked;
    s.wake_lead_s = wake_s;
    s.arrival_rate = rate;
    s.isl = 2000;
    s.osl = 100;
    s.input_tps = rate * 2000;
    s.output_tps = rate * 100;
    s.running = rate * 2;
    s.slo_miss = -1;
    CHECK_INT(kvg_autoscale_plan(p, &s, d), 0);
}

TEST(parked_replicas_shorten_the_horizon_within_what_they_cover)
{
    struct kvg_autoscale_opts o = opts();
    struct kvg_autoscale_planner *cold = NULL, *pk = NULL, *few = NULL;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &cold), 0);
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &pk), 0);
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &few), 0);
    struct kvg_autoscale_decision dc, dp, df;
    uint32_t rc = 1, rp = 1, rf = 1;
    double start_lead = 0;
    int shorter = 0, fewer = 0, slow_past_parked = 0;
    /* A ramp from 5 to ~29 req/s over 20 minutes (load 1.1 to ~6.1
     * replicas' worth); each pool follows its answer at once. */
    for (double t = 0; t < 1200; t += 15) {
        double rate = 5 + t / 50;
        plan(cold, t, rate, rc, 0, 0, &dc);
        plan(pk, t, rate, rp, 16, 5, &dp);
        plan(few, t, rate, rf, 1, 5, &df);
        start_lead = dc.horizon_s;
        /* Never sized for more than the pool without parked replicas. */
        CHECK(dp.desired <= dc.desired);
        if (dp.horizon_s < dc.horizon_s) {
            shorter++;
            CHECK_NEAR(dp.horizon_s, 5 + 15, 1e-9);
        }
        if (dp.desired < dc.desired) fewer++;
        /* One parked replica cannot cover a ramp the start's horizon sees
         * past it: that pool plans on the start's lead. */
        if (df.horizon_s == dc.horizon_s && t > 600) slow_past_parked++;
        rc = dc.desired, rp = dp.desired, rf = df.desired;
    }
    CHECK(start_lead > 60); /* the default start is minutes, not a wake */
    CHECK(shorter > 0);
    CHECK(fewer > 0); /* the trend times a start's lead is load not yet due */
    CHECK(slow_past_parked > 0);
    kvg_autoscale_planner_free(cold);
    kvg_autoscale_planner_free(pk);
    kvg_autoscale_planner_free(few);
}

TEST(no_parked_or_unknown_wake_keeps_the_start_lead)
{
    struct kvg_autoscale_opts o = opts();
    struct kvg_autoscale_planner *a = NULL, *b = NULL;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &a), 0);
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &b), 0);
    struct kvg_autoscale_decision da, db;
    for (double t = 0; t < 900; t += 15) {
        plan(a, t, 5 + t / 50, 4, 0, 0, &da);
        plan(b, t, 5 + t / 50, 4, 8, 0, &db); /* parked, wake time unknown */
        CHECK_NEAR(da.horizon_s, db.horizon_s, 1e-9);
        CHECK_INT(da.desired, db.desired);
    }
    kvg_autoscale_planner_free(a);
    kvg_autoscale_planner_free(b);
}

TEST(a_pool_of_woken_replicas_plans_on_their_lead)
{
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    const char *md = "qwen2.5-7b";
    double asleep = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_ASLEEP1);
    double warm = kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_WARM);
    CHECK(asleep < warm);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0, 0, KVG_AUTOSCALE_ASLEEP1), asleep, 1e-9);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0, 0, KVG_AUTOSCALE_WARM), warm, 1e-9);
    /* Cold nodes beside them still set the mixture's p90. */
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&m, md, 0.5, 0, KVG_AUTOSCALE_ASLEEP1),
               kvg_autoscale_startup_lead(&m, md, KVG_AUTOSCALE_COLD), 1e-9);
    /* And the planner reads it from its options. */
    struct kvg_autoscale_opts o = opts();
    snprintf(o.model, sizeof o.model, "%s", md);
    o.startup = &m;
    o.node = KVG_AUTOSCALE_ASLEEP1;
    o.cold_share = o.fetch_share = 0; /* the defaults' half of cold nodes would set the p90 */
    struct kvg_autoscale_planner *p = NULL;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &p), 0);
    struct kvg_autoscale_decision d;
    plan(p, 0, 5, 1, 0, 0, &d);
    CHECK_NEAR(d.horizon_s, asleep + 15, 1e-9);
    kvg_autoscale_planner_free(p);
}
