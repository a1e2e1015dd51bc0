/* A pool whose every new replica wakes or restores (node: asleep1, asleep2,
 * restore) plans on that class's lead (startup.c, lead_mix's rest), where
 * it took a warm start's. */
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
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.ready = 1;
    s.arrival_rate = 5;
    s.input_tps = 5 * 2000;
    s.output_tps = 5 * 100;
    s.slo_miss = -1;
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_plan(p, &s, &d), 0);
    CHECK_NEAR(d.horizon_s, asleep + 15, 1e-9);
    kvg_autoscale_planner_free(p);
}
