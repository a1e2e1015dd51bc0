/* Statistics of one benchmark run: exact percentiles over stored samples (TTFT,
 * engine queue, KV usage), a log-bucketed histogram where storing every sample
 * would cost too much (inter-token latency: one gap per output token), and the
 * summary figures the report prints for one policy.
 *
 * Exact percentiles are base/stats.h's: linear interpolation between closest
 * ranks (numpy's default, which inference-perf uses).
 *
 * Nothing here is thread-safe: each run owns its own accumulators. */
#ifndef KVG_BENCH_STATS_H
#define KVG_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* ---- Exact samples. */
struct kvg_bench_samples {
    double *v; /* owned; grown by add */
    size_t n, cap;
    double sum, max;
    int sorted;
};

void kvg_bench_samples_init(struct kvg_bench_samples *s);
void kvg_bench_samples_free(struct kvg_bench_samples *s);
/* 0 or -ENOMEM. */
int kvg_bench_samples_add(struct kvg_bench_samples *s, double x);
/* p in [0, 100]; sorts the samples on first use. NAN when empty. */
double kvg_bench_samples_pct(struct kvg_bench_samples *s, double p);
double kvg_bench_samples_mean(const struct kvg_bench_samples *s);

/* ---- Histogram: KVG_BENCH_HIST_PER_DECADE log-spaced buckets per decade
 * from 1e-6 to 1e6 (seconds), so a percentile is within ~1.2% of the exact
 * value; the mean is exact. */
#define KVG_BENCH_HIST_PER_DECADE 200
#define KVG_BENCH_HIST_DECADES 12
#define KVG_BENCH_HIST_BUCKETS (KVG_BENCH_HIST_PER_DECADE * KVG_BENCH_HIST_DECADES + 2)

struct kvg_bench_hist {
    uint64_t *count; /* KVG_BENCH_HIST_BUCKETS, owned */
    uint64_t n;
    double sum, max;
};

int kvg_bench_hist_init(struct kvg_bench_hist *h);
void kvg_bench_hist_free(struct kvg_bench_hist *h);
void kvg_bench_hist_add(struct kvg_bench_hist *h, double x);
/* The geometric middle of the bucket holding the p-th percentile (0 lands in
 * the first bucket: reported as 0). NAN when empty. */
double kvg_bench_hist_pct(const struct kvg_bench_hist *h, double p);
double kvg_bench_hist_mean(const struct kvg_bench_hist *h);
/* Adds every count of b into a. */
void kvg_bench_hist_merge(struct kvg_bench_hist *a, const struct kvg_bench_hist *b);

/* ---- What the report shows for one policy, and for each load stage. */
#define KVG_BENCH_MAX_STAGES 64
#define KVG_BENCH_MAX_SEEDS 16
#define KVG_BENCH_MAX_LOAD_WINDOWS 128

struct kvg_bench_stage_sum {
    double rate;        /* offered requests/s (0 for a concurrency stage) */
    uint32_t conc;      /* concurrency of a closed-loop stage, else 0 */
    double start, secs; /* the stage's window, seconds from the run's start */
    uint64_t arrivals;  /* requests that arrived in the stage */
    uint64_t completed; /* requests that finished inside the window */
    double ttft_mean, ttft_p50, ttft_p90, ttft_p99; /* of the stage's arrivals */
    double output_tokens_per_s;                     /* tokens emitted inside the window */
    double requests_per_s;                          /* completions inside the window */
    double queue_mean, queue_max; /* engines' waiting requests, sampled in the window */
    double kv_mean, kv_max;       /* engines' KV usage in %, sampled in the window */
};

struct kvg_bench_summary {
    char policy[64];
    int status;         /* 0 ran; KVG_ENOTFOUND: policy unknown to this build; other: failed */
    char note[160];     /* why it did not run, or a remark */
    uint64_t requests;  /* measured requests (after warm-up) */
    uint64_t completed; /* of them, finished */
    uint64_t errors;    /* of them, rejected by the engine, unroutable or failed */
    uint64_t timeouts;  /* of them, given up without a first token (--timeout) */
    uint64_t warmup_requests; /* issued during the warm-up stages (not measured) */
    double ttft_mean, ttft_p50, ttft_p90, ttft_p99, ttft_max;
    double itl_mean, itl_p50, itl_p90, itl_p99;
    double e2e_mean, e2e_p90;
    double window_s;            /* measured window: end of warm-up to end of the last stage */
    double output_tokens_per_s; /* output tokens emitted inside the window / window_s */
    double requests_per_s;      /* completions inside the window / window_s */
    double drain_s;             /* last completion after the window's end */
    uint64_t output_tokens;     /* of the measured requests */
    uint64_t prompt_tokens, cached_tokens;
    double cache_hit_ratio;                  /* cached_tokens / prompt_tokens */
    double queue_mean, queue_p90, queue_max; /* engines' waiting requests, sampled */
    double kv_mean, kv_p90, kv_max;          /* engines' KV usage in %, sampled */
    uint64_t preemptions;
    uint64_t lora_loads; /* cold adapters the engines loaded (offline) */
    /* Simulator-only, several routers (des.h): how many; the largest mean
     * load (requests running or waiting on an engine, sampled every scrape)
     * any one engine had over a 10 s window of the measured period, over the
     * engines' mean in that window (1: perfectly even; 0: not measured);
     * and the share of picks whose worker another router had picked within
     * the scrape period before (what neither router's counts nor the
     * engines' metrics could show it yet; 0 with one router). The worst
     * window's start (s into the measured period), engine and that
     * engine's mean load there: where to look. */
    uint32_t routers;
    double max_load_ratio_10s, herd_ratio;
    double max_load_window_s, max_load_mean;
    uint32_t max_load_engine;
    /* Each 10 s window's ratio in order (0: idle) and the engines' mean
     * load there, the first KVG_BENCH_MAX_LOAD_WINDOWS: whether the worst
     * is the start or any, and over how much load. */
    size_t nload_win;
    double load_ratio_win[KVG_BENCH_MAX_LOAD_WINDOWS], load_mean_win[KVG_BENCH_MAX_LOAD_WINDOWS];
    /* Simulator-only: KV index work (0 in live mode). */
    uint64_t kv_events, kv_batches, index_entries;
    /* Live with spawned gateways: the gateway's own check of its prompt
     * token counts against the engines' usage (GET /workers), summed over
     * its workers, and how many of them routed in exact mode at the end
     * (kvgate's routing mode); token_checks -1: not read, 0 with workers 0
     * for a run that had no gateway to ask (offline, --target). */
    int64_t token_checks, token_mismatches;
    uint32_t workers, workers_exact;
    char mode[24];      /* the workers' routing mode when they agree, else "mixed" */
    int cached_unknown; /* live: no answer said how much of its prompt was cached */
    /* Live: retries sent for measured requests (--retries), and measured
     * requests whose 200 answer broke before its end (the SDK does not
     * retry those: in flight when their gateway died). */
    uint64_t retried, lost_in_flight;
    /* Cost of the run itself (not deterministic: excluded from comparisons). */
    double wall_s, route_us_mean;
    size_t nstages;
    struct kvg_bench_stage_sum stage[KVG_BENCH_MAX_STAGES];
    /* With --repeat R: every figure above is the median over R seeds, and
     * these are each seed's headline figures. */
    uint32_t nseeds;
    uint64_t seed[KVG_BENCH_MAX_SEEDS];
    double seed_ttft_p90[KVG_BENCH_MAX_SEEDS], seed_tok_s[KVG_BENCH_MAX_SEEDS];
    double seed_cache_hit[KVG_BENCH_MAX_SEEDS], seed_max_load[KVG_BENCH_MAX_SEEDS];
};

/* Combines n runs of one policy (different seeds) into *out: each figure is
 * the median of the runs' (the lower middle for an even n), stages included;
 * out also lists each run's seed, p90 TTFT, tokens/s, cache-hit rate and
 * worst load ratio; the load windows are those all runs have. seeds[i] is run i's
 * seed. n is 1..KVG_BENCH_MAX_SEEDS. */
void kvg_bench_summary_median(const struct kvg_bench_summary *runs, const uint64_t *seeds, size_t n,
                              struct kvg_bench_summary *out);

#endif
