/* Sample arrays and histograms for the benchmark's figures; see stats.h. */
#include "bench/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"

void kvg_bench_samples_init(struct kvg_bench_samples *s)
{
    memset(s, 0, sizeof *s);
}

void kvg_bench_samples_free(struct kvg_bench_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

int kvg_bench_samples_add(struct kvg_bench_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        double *v = realloc(s->v, c * sizeof *v);
        if (!v) return -ENOMEM;
        s->v = v;
        s->cap = c;
    }
    s->v[s->n++] = x;
    s->sum += x;
    if (s->n == 1 || x > s->max) s->max = x;
    s->sorted = 0;
    return 0;
}

double kvg_bench_samples_pct(struct kvg_bench_samples *s, double p)
{
    if (!s->n) return NAN;
    if (!s->sorted) {
        kvg_stats_sort(s->v, s->n);
        s->sorted = 1;
    }
    return kvg_stats_pct_sorted(s->v, s->n, p);
}

double kvg_bench_samples_mean(const struct kvg_bench_samples *s)
{
    return s->n ? s->sum / (double)s->n : NAN;
}

/* Bucket 0 holds values below 1e-6 (zero gaps: tokens of one chunk); the last
 * holds values of 1e6 and more. */
static size_t bucket_of(double x)
{
    if (!(x >= 1e-6)) return 0;
    double b = (log10(x) + 6.0) * KVG_BENCH_HIST_PER_DECADE;
    if (b >= KVG_BENCH_HIST_PER_DECADE * KVG_BENCH_HIST_DECADES) return KVG_BENCH_HIST_BUCKETS - 1;
    return 1 + (size_t)b;
}

static double bucket_mid(size_t i)
{
    if (i == 0) return 0;
    if (i == KVG_BENCH_HIST_BUCKETS - 1) return 1e6;
    return pow(10.0, ((double)(i - 1) + 0.5) / KVG_BENCH_HIST_PER_DECADE - 6.0);
}

int kvg_bench_hist_init(struct kvg_bench_hist *h)
{
    memset(h, 0, sizeof *h);
    h->count = calloc(KVG_BENCH_HIST_BUCKETS, sizeof *h->count);
    return h->count ? 0 : -ENOMEM;
}

void kvg_bench_hist_free(struct kvg_bench_hist *h)
{
    free(h->count);
    memset(h, 0, sizeof *h);
}

void kvg_bench_hist_add(struct kvg_bench_hist *h, double x)
{
    h->count[bucket_of(x)]++;
    if (!h->n || x > h->max) h->max = x;
    h->n++;
    h->sum += x;
}

double kvg_bench_hist_pct(const struct kvg_bench_hist *h, double p)
{
    if (!h->n) return NAN;
    /* The same rank rule as the exact samples, on bucket midpoints. */
    double rank = p / 100.0 * (double)(h->n - 1);
    uint64_t want = (uint64_t)rank, seen = 0;
    for (size_t i = 0; i < KVG_BENCH_HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen > want) return bucket_mid(i);
    }
    return h->max;
}

double kvg_bench_hist_mean(const struct kvg_bench_hist *h)
{
    return h->n ? h->sum / (double)h->n : NAN;
}

void kvg_bench_hist_merge(struct kvg_bench_hist *a, const struct kvg_bench_hist *b)
{
    for (size_t i = 0; i < KVG_BENCH_HIST_BUCKETS; i++) a->count[i] += b->count[i];
    if (b->n && (!a->n || b->max > a->max)) a->max = b->max;
    a->n += b->n;
    a->sum += b->sum;
}

/* Median of n values picked by an accessor, lower middle for an even n. */
static double median_of(double *v, size_t n)
{
    kvg_stats_sort(v, n);
    return v[(n - 1) / 2];
}

void kvg_bench_summary_median(const struct kvg_bench_summary *runs, const uint64_t *seeds, size_t n,
                              struct kvg_bench_summary *out)
{
    double v[KVG_BENCH_MAX_SEEDS];
    if (n > KVG_BENCH_MAX_SEEDS) n = KVG_BENCH_MAX_SEEDS;
    *out = runs[0];
#define MED(field)                                                                                 \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < n; i_++) v[i_] = (double)runs[i_].field;                          \
        out->field = median_of(v, n);                                                              \
    } while (0)
    MED(requests);
    MED(completed);
    MED(errors);
    MED(timeouts);
    MED(warmup_requests);
    MED(ttft_mean);
    MED(ttft_p50);
    MED(ttft_p90);
    MED(ttft_p99);
    MED(ttft_max);
    MED(itl_mean);
    MED(itl_p50);
    MED(itl_p90);
    MED(itl_p99);
    MED(e2e_mean);
    MED(e2e_p90);
    MED(output_tokens_per_s);
    MED(requests_per_s);
    MED(drain_s);
    MED(output_tokens);
    MED(prompt_tokens);
    MED(cached_tokens);
    MED(cache_hit_ratio);
    MED(queue_mean);
    MED(queue_p90);
    MED(queue_max);
    MED(kv_mean);
    MED(kv_p90);
    MED(kv_max);
    MED(preemptions);
    MED(lora_loads);
    MED(routers);
    MED(max_load_ratio_10s);
    MED(herd_ratio);
    MED(kv_events);
    MED(kv_batches);
    MED(index_entries);
    MED(wall_s);
    MED(route_us_mean);
    for (size_t k = 0; k < out->nstages; k++) {
        MED(stage[k].arrivals);
        MED(stage[k].completed);
        MED(stage[k].ttft_mean);
        MED(stage[k].ttft_p50);
        MED(stage[k].ttft_p90);
        MED(stage[k].ttft_p99);
        MED(stage[k].output_tokens_per_s);
        MED(stage[k].requests_per_s);
        MED(stage[k].queue_mean);
        MED(stage[k].queue_max);
        MED(stage[k].kv_mean);
        MED(stage[k].kv_max);
    }
    for (size_t i = 1; i < n; i++)
        if (runs[i].nload_win < out->nload_win) out->nload_win = runs[i].nload_win;
    for (size_t k = 0; k < out->nload_win; k++) {
        MED(load_ratio_win[k]);
        MED(load_mean_win[k]);
    }
#undef MED
    out->nseeds = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        out->seed[i] = seeds[i];
        out->seed_ttft_p90[i] = runs[i].ttft_p90;
        out->seed_tok_s[i] = runs[i].output_tokens_per_s;
        out->seed_cache_hit[i] = runs[i].cache_hit_ratio;
        out->seed_max_load[i] = runs[i].max_load_ratio_10s;
    }
}
