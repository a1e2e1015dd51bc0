/* kvgate bench --scenario pd: aggregated engines against prefill/decode
 * splits, offline in virtual time (pd.c runs one setup, pd_report.c writes
 * the report's tables; src/cmd/bench_pd.c is the command). */
#ifndef KVG_BENCH_PD_PD_H
#define KVG_BENCH_PD_PD_H

#include <stdint.h>
#include <stdio.h>

struct kvg_bench_pd_opts {
    const char *out; /* the report file */
    uint32_t requests, prompt, output;
    uint64_t seed;
    const char *profile; /* a kvgate sim profile */
};

void kvg_bench_pd_opts_default(struct kvg_bench_pd_opts *o);
/* Writes the whole report to f. 0, or -1 when an engine cannot be built. */
int kvg_bench_pd_report(FILE *f, const struct kvg_bench_pd_opts *o);

#endif
