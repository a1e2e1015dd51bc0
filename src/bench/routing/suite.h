/* The routing suite of kvgate bench (cmd/bench_suite.c runs it,
 * suite_report.c writes it): every workload against every policy, offline,
 * several seeds. */
#ifndef KVG_BENCH_ROUTING_SUITE_H
#define KVG_BENCH_ROUTING_SUITE_H

#include <stdio.h>

#include "bench/stats.h"

#define KVG_BENCH_SUITE_MAX 16

/* One workload's results: s[0..npolicies) are the per-policy medians (with
 * each seed's p90 TTFT and tokens/s), all borrowed. */
struct kvg_bench_suite_wl {
    const char *name, *what, *command;
    const struct kvg_bench_summary *s;
    double wall_s;
};

struct kvg_bench_suite_report {
    int smoke;
    uint32_t seeds;
    size_t npolicies;
    const char *const (*peers)[2]; /* {policy, whose default} */
    size_t npeers;
    const char *default_policy; /* kvgate serve's */
    struct kvg_bench_suite_wl wl[KVG_BENCH_SUITE_MAX];
    size_t nwl;
};

/* The markdown report / the JSON array (one object per workload and policy:
 * workload, policy, status, ttft_p90_s, ttft_p99_s, itl_p90_s,
 * output_tokens_per_s, cache_hit_ratio, their seed values and spreads, and
 * the gaps to the workload's best). 0 or a negative code; f is the caller's. */
int kvg_bench_suite_md(const struct kvg_bench_suite_report *r, FILE *f);
int kvg_bench_suite_json(const struct kvg_bench_suite_report *r, FILE *f);

#endif
