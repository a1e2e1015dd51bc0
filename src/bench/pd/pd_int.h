/* Between the offline PD benchmark's engine model (pd.c) and its report
 * (pd_report.c); not a public face. */
#ifndef KVG_BENCH_PD_PD_INT_H
#define KVG_BENCH_PD_PD_INT_H

#include <stdint.h>

#include "bench/stats.h"
#include "pd/pd.h"
#include "router/policy.h"

#define KVG_BENCH_PD_MAX_ENG 8

/* One run's setup. Engines: np prefill then nd decode (np 0: nd aggregated). */
struct kvg_bench_pd_setup {
    const char *profile;
    uint32_t requests, prompt, output;
    uint64_t seed;
    int np, nd;
    double rate;    /* Poisson arrivals, req/s */
    double link_bw; /* every transfer's bandwidth when labels is NULL, bytes/s */
    /* Per engine (prefills first): locality labels; the link of a transfer
     * is then kvg_sim_link_of(prefill's, decode's), as kvgate sim takes it. */
    const char *const *labels;
    /* The decode pick: NULL = the decode with the fewest requests; else this
     * router policy (kvgate's pd_decode) over the decodes, told the
     * prefill's labels when near. */
    struct kvg_policy *decode_pick;
    int near;
    /* A decode refuses a request its KV has no room for (what wastes a
     * prefill under overload); early_rejection: kvgate's predictor at the
     * door (kvg_pd_has_room with pd's defaults). */
    int decode_admission, early_rejection;
};

struct kvg_bench_pd_stats {
    struct kvg_bench_samples ttft, itl, xfer;
    uint32_t served, good;
    uint32_t door_rejected, decode_refused;
    uint64_t wasted_prefill_tokens;
    uint32_t by_link[4]; /* transfers by link (node, rack, zone, across) */
    double duration;     /* first arrival to the last finish, s */
};

/* Runs s in virtual time (deterministic for its seed); st is the caller's,
 * freed with kvg__bench_pd_stats_free. 0 or -1 (an unknown profile, too
 * many engines, no memory). */
int kvg__bench_pd_run(const struct kvg_bench_pd_setup *s, struct kvg_bench_pd_stats *st);
void kvg__bench_pd_stats_free(struct kvg_bench_pd_stats *st);

#endif
