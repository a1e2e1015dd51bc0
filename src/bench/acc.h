/* The figures of one run as it goes: TTFT, ITL, end-to-end latency per
 * measured request, tokens and completions by when they happen, engine queue
 * and KV usage samples, per stage and over the measured window (the end of
 * the warm-up stages to the end of the last stage). The offline simulator
 * and the live client both feed one, from their own clocks (seconds since
 * the start of the run). Owned by one thread. */
#ifndef KVG_BENCH_ACC_H
#define KVG_BENCH_ACC_H

#include <stdint.h>

#include "bench/stats.h"
#include "bench/workload.h"

/* Accumulated figures of one run. Only measured requests (arrived after the
 * warm-up) count, except tokens, completions and samples, which count by
 * when they happen inside the measured window. */
struct kvg_bench_acc {
    double warm_end, end;
    struct kvg_bench_samples ttft, e2e, queue, kv;
    struct kvg_bench_hist itl;
    uint64_t requests, completed, errors, timeouts, warmup_requests;
    uint64_t output_tokens, prompt_tokens, cached_tokens;
    uint64_t window_tokens, window_completed;
    double last_finish;
    size_t nstages;
    double st_start[KVG_BENCH_MAX_STAGES + 1];
    struct kvg_bench_samples st_ttft[KVG_BENCH_MAX_STAGES];
    uint64_t st_arrivals[KVG_BENCH_MAX_STAGES], st_tokens[KVG_BENCH_MAX_STAGES],
        st_completed[KVG_BENCH_MAX_STAGES];
    /* Engine samples per stage (every stage, the warm-up's too): sums,
     * counts and maxima of waiting requests and of KV usage in %. */
    double st_q_sum[KVG_BENCH_MAX_STAGES], st_q_max[KVG_BENCH_MAX_STAGES];
    double st_kv_sum[KVG_BENCH_MAX_STAGES], st_kv_max[KVG_BENCH_MAX_STAGES];
    uint64_t st_q_n[KVG_BENCH_MAX_STAGES], st_kv_n[KVG_BENCH_MAX_STAGES];
    double route_ns;
    uint64_t routed;
};

int kvg_bench_acc_init(struct kvg_bench_acc *a, const struct kvg_bench_wl *wl);
void kvg_bench_acc_free(struct kvg_bench_acc *a);
/* Which stage window t falls in, -1 outside every stage. */
int kvg_bench_acc_window(const struct kvg_bench_acc *a, double t);
/* A request arrived (counted by the stage it arrived in). */
void kvg_bench_acc_arrival(struct kvg_bench_acc *a, const struct kvg_bench_req *r);
/* Its first token came ttft seconds after arrival; cached = prompt tokens
 * the engine found in its prefix cache (-1 unknown). */
void kvg_bench_acc_first(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double ttft,
                         int64_t cached);
/* ntok output tokens arrived together at time t; gap = time since the
 * previous ones of that request (< 0 for the first). */
void kvg_bench_acc_tokens(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double t,
                          uint32_t ntok, double gap);
/* The request completed at t / failed (timeout: given up without a token). */
void kvg_bench_acc_finish(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double t);
void kvg_bench_acc_error(struct kvg_bench_acc *a, const struct kvg_bench_req *r, int timeout);
/* An engine's waiting requests and KV usage (0..1) sampled at t. */
void kvg_bench_acc_sample(struct kvg_bench_acc *a, double t, double waiting, double kv_usage);
/* Fills the summary's figures (not policy, status, wall time or KV counts). */
void kvg_bench_acc_summarize(struct kvg_bench_acc *a, const struct kvg_bench_wl *wl,
                             struct kvg_bench_summary *s);

#endif
