/* Statistics of kvgate bench: percentiles against hand-computed values
 * (numpy's linear interpolation), the histogram's error bound, merging, and
 * the median over seeds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "support/test.h"

TEST(percentiles_hand_computed)
{
    struct kvg_bench_samples s;
    kvg_bench_samples_init(&s);
    /* Added out of order: the percentile sorts. */
    const double v[] = {40, 15, 50, 20, 35};
    for (int i = 0; i < 5; i++) CHECK_INT(kvg_bench_samples_add(&s, v[i]), 0);
    /* sorted 15 20 35 40 50; h = p/100 * 4 */
    CHECK_NEAR(kvg_bench_samples_pct(&s, 0), 15, 1e-12);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 100), 50, 1e-12);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 50), 35, 1e-12);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 40), 29, 1e-12);  /* h=1.6: 20 + .6*15 */
    CHECK_NEAR(kvg_bench_samples_pct(&s, 90), 46, 1e-12);  /* h=3.6: 40 + .6*10 */
    CHECK_NEAR(kvg_bench_samples_pct(&s, 99), 49.6, 1e-9); /* h=3.96 */
    CHECK_NEAR(kvg_bench_samples_mean(&s), 32, 1e-12);
    CHECK_NEAR(s.max, 50, 0);
    kvg_bench_samples_free(&s);
}

TEST(percentiles_small_and_empty)
{
    struct kvg_bench_samples s;
    kvg_bench_samples_init(&s);
    CHECK(isnan(kvg_bench_samples_pct(&s, 50)));
    CHECK(isnan(kvg_bench_samples_mean(&s)));
    kvg_bench_samples_add(&s, 7);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 90), 7, 0);
    kvg_bench_samples_add(&s, 1);
    /* [1, 7]: p50 = 4, p90 = 1 + 0.9 * 6 */
    CHECK_NEAR(kvg_bench_samples_pct(&s, 50), 4, 1e-12);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 90), 6.4, 1e-12);
    /* Adding after a percentile re-sorts. */
    kvg_bench_samples_add(&s, 0);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 0), 0, 0);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 50), 1, 1e-12);
    kvg_bench_samples_free(&s);
}

TEST(percentiles_many)
{
    struct kvg_bench_samples s;
    kvg_bench_samples_init(&s);
    for (int i = 1000; i >= 0; i--) kvg_bench_samples_add(&s, i); /* 0..1000 */
    CHECK_NEAR(kvg_bench_samples_pct(&s, 90), 900, 1e-9);
    CHECK_NEAR(kvg_bench_samples_pct(&s, 99.9), 999, 1e-9);
    CHECK_NEAR(kvg_bench_samples_mean(&s), 500, 1e-9);
    kvg_bench_samples_free(&s);
}

TEST(histogram_within_bound)
{
    struct kvg_bench_hist h;
    CHECK_INT(kvg_bench_hist_init(&h), 0);
    struct kvg_bench_samples s;
    kvg_bench_samples_init(&s);
    /* Inter-token gaps from 5 ms to 2 s, spread geometrically. */
    for (int i = 0; i < 5000; i++) {
        double x = 0.005 * pow(400.0, i / 4999.0);
        kvg_bench_hist_add(&h, x);
        kvg_bench_samples_add(&s, x);
    }
    const double ps[] = {1, 10, 50, 90, 99};
    for (int i = 0; i < 5; i++) {
        double exact = kvg_bench_samples_pct(&s, ps[i]), approx = kvg_bench_hist_pct(&h, ps[i]);
        CHECK(fabs(approx / exact - 1) < 0.012);
    }
    CHECK_NEAR(kvg_bench_hist_mean(&h), kvg_bench_samples_mean(&s), 1e-9);
    CHECK_NEAR(h.max, 2.0, 1e-9);
    kvg_bench_samples_free(&s);
    kvg_bench_hist_free(&h);
}

TEST(histogram_zero_and_merge)
{
    struct kvg_bench_hist a, b;
    kvg_bench_hist_init(&a);
    kvg_bench_hist_init(&b);
    CHECK(isnan(kvg_bench_hist_pct(&a, 50)));
    /* Tokens of one chunk arrive 0 s apart: they stay 0, not 1e-6. */
    for (int i = 0; i < 6; i++) kvg_bench_hist_add(&a, 0);
    for (int i = 0; i < 4; i++) kvg_bench_hist_add(&b, 0.1);
    CHECK_NEAR(kvg_bench_hist_pct(&a, 90), 0, 0);
    kvg_bench_hist_merge(&a, &b);
    CHECK_INT(a.n, 10);
    CHECK_NEAR(kvg_bench_hist_mean(&a), 0.04, 1e-12);
    CHECK_NEAR(kvg_bench_hist_pct(&a, 50), 0, 0);              /* rank 4.5 -> 5th value: 0 */
    CHECK(fabs(kvg_bench_hist_pct(&a, 90) / 0.1 - 1) < 0.012); /* rank 8.1 -> a 0.1 */
    CHECK_NEAR(a.max, 0.1, 0);
    kvg_bench_hist_free(&a);
    kvg_bench_hist_free(&b);
}

TEST(summary_median_over_seeds)
{
    struct kvg_bench_summary runs[3], out;
    memset(runs, 0, sizeof runs);
    const double p90[] = {3, 1, 2}, tok[] = {10, 30, 20};
    for (int i = 0; i < 3; i++) {
        snprintf(runs[i].policy, sizeof runs[i].policy, "precise");
        runs[i].ttft_p90 = p90[i];
        runs[i].output_tokens_per_s = tok[i];
        runs[i].requests = 100 + (uint64_t)i;
        runs[i].nstages = 2;
        runs[i].stage[1].ttft_p90 = p90[i] * 10;
    }
    const uint64_t seeds[] = {7, 8, 9};
    kvg_bench_summary_median(runs, seeds, 3, &out);
    CHECK_STR(out.policy, "precise");
    CHECK_NEAR(out.ttft_p90, 2, 0);
    CHECK_NEAR(out.output_tokens_per_s, 20, 0);
    CHECK_INT(out.requests, 101);
    CHECK_NEAR(out.stage[1].ttft_p90, 20, 0);
    CHECK_INT(out.nseeds, 3);
    CHECK_INT(out.seed[2], 9);
    CHECK_NEAR(out.seed_ttft_p90[0], 3, 0);
    CHECK_NEAR(out.seed_tok_s[1], 30, 0);
    /* Even count: the lower middle. */
    kvg_bench_summary_median(runs, seeds, 2, &out);
    CHECK_NEAR(out.ttft_p90, 1, 0);
}
