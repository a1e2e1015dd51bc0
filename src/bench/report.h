/* Reports of kvgate bench: a markdown table (the seed's columns first: p90
 * TTFT and output tokens/s), JSON with every figure (one object per policy),
 * SVG plots drawn here (no plotting library), and the shape checks of the
 * llm-d reproduction. All writers take the caller's FILE and never close it. */
#ifndef KVG_BENCH_REPORT_H
#define KVG_BENCH_REPORT_H

#include <stdio.h>

#include "bench/stats.h"

/* A published row to compare with (llm-d's 73-capacity report). */
struct kvg_bench_published {
    const char *policy; /* the kvgate policy name that reproduces it */
    const char *label;  /* the publisher's name for it */
    double output_tokens_per_s, requests_per_s, ttft_p90, ttft_mean, itl_mean;
    double queue_mean, queue_p90, queue_max, kv_mean, kv_p90, kv_max;
    /* Per measured stage (the stages after the warm-up), NULL if unknown. */
    const double *stage_ttft_p90, *stage_tok_s;
    size_t nstage;
};

struct kvg_bench_report {
    const char *title;    /* heading */
    const char *scenario; /* name, or "custom" */
    const char *mode;     /* "offline" / "live" */
    const char *command;  /* how to reproduce it */
    const char *setup;    /* markdown paragraph(s): workload, engines, calibration */
    uint64_t seed;
    const struct kvg_bench_summary *s; /* one per policy, in the order asked */
    size_t n;
    const struct kvg_bench_published *pub; /* may be NULL */
    size_t npub;
    const char *svg_ttft, *svg_throughput; /* file names to link, may be NULL */
};

/* The markdown report. 0 or -EIO. */
int kvg_bench_report_md(const struct kvg_bench_report *r, FILE *f);
/* JSON: an array with one object per policy (every figure, its stages, and
 * the scenario, mode and seed repeated in each). 0, -ENOMEM or -EIO. */
int kvg_bench_report_json(const struct kvg_bench_report *r, FILE *f);
/* TTFT p50 (dashed) and p90 (solid) per policy per load stage, log scale. */
int kvg_bench_svg_ttft(const struct kvg_bench_report *r, FILE *f);
/* Output tokens/s per policy per load stage. */
int kvg_bench_svg_throughput(const struct kvg_bench_report *r, FILE *f);

/* The llm-d shape (issue 6) over the policies that ran: precise p90 TTFT at
 * most 1/20 of random's, estimated between them, load within 2x of random,
 * precise tokens/s at least 1.6x random's, and the best kvgate policy
 * (kv_aware, cache_aware or any non-llm-d one) beating precise on both.
 * Writes one markdown bullet per check into f; returns the number of checks
 * that failed, or -1 when the needed policies did not all run. */
int kvg_bench_shape_check(const struct kvg_bench_summary *s, size_t n, FILE *f);

#endif
