/* kvgate bench --scenario pd: aggregated engines against prefill/decode
 * splits, offline in virtual time (pd.c runs one setup, pd_report.c writes
 * the report's tables; src/cmd/bench_pd.c is the command). */
#ifndef KVG_BENCH_PD_PD_H
#define KVG_BENCH_PD_PD_H

#include <stdint.h>
#include <stdio.h>

struct cJSON;

struct kvg_bench_pd_opts {
    uint32_t requests, prompt, output;
    uint64_t seed;
    const char *profile; /* a kvgate sim profile */
    struct cJSON *rows;  /* optional, the caller's array: each run appends its figures */
};

void kvg_bench_pd_opts_default(struct kvg_bench_pd_opts *o);
/* Writes the whole report to f (and a row per run into o->rows when set).
 * 0, or -1 when an engine cannot be built or memory runs out. */
int kvg_bench_pd_report(FILE *f, const struct kvg_bench_pd_opts *o);

#endif
