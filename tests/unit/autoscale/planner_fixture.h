/* The planners' synthetic pool (tests/unit/autoscale/test_planners.c and
 * test_correction.c): a profile, a planner by name, a steady pool's signals. */
#ifndef KVG_TEST_PLANNER_FIXTURE_H
#define KVG_TEST_PLANNER_FIXTURE_H

#include <string.h>

#include "autoscale/planner.h"
#include "support/test.h"

static struct kvg_autoscale_opts opts(void)
{
    struct kvg_autoscale_opts o;
    kvg_autoscale_opts_default(&o);
    o.prof = (struct kvg_autoscale_profile){
        .prefill_tps = 10000, .decode_tps = 1000, .ttft_idle_s = 0.2, .itl_idle_s = 0.02};
    o.max_replicas = 32;
    return o;
}

static struct kvg_autoscale_planner *make(const char *name, const struct kvg_autoscale_opts *o)
{
    struct kvg_autoscale_planner *p = NULL;
    CHECK_INT(kvg_autoscale_planner_new(name, o, &p), 0);
    return p;
}

/* A steady pool: ready replicas, a rate in req/s at ISL 2000 / OSL 100. */
static struct kvg_autoscale_signals steady(double now, uint32_t ready, double rate)
{
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.now = now;
    s.ready = ready;
    s.arrival_rate = rate;
    s.isl = 2000;
    s.osl = 100;
    s.input_tps = rate * 2000;
    s.output_tps = rate * 100;
    s.ttft_mean = s.ttft_p90 = 0.2;
    s.itl_mean = s.itl_p90 = 0.02;
    s.running = rate * 2;
    s.slo_miss = s.slo_miss_ttft = s.slo_miss_itl = s.slo_miss_prefill = s.slo_miss_decode = -1;
    return s;
}

#endif
