/* The autoscale signal builder (autoscale/signals.h): windows over recorded
 * ticks, their edges, unknown fields when nothing was observed, measured
 * ISL / OSL, the multi-thread feed folded against a pool's targets, and
 * the same recorded requests through serve's path (the feed, folded each
 * tick) and the benchmark's (the builder at each event's time) giving the
 * same signals. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/signals.h"
#include "support/test.h"

static struct kvg_autoscale_obs *mk(size_t nb)
{
    struct kvg_autoscale_obs *o = NULL;
    CHECK_INT(kvg_autoscale_obs_new(nb, 64, &o), 0);
    return o;
}

static void window(struct kvg_autoscale_obs *o, double now, double tick, double span,
                   struct kvg_autoscale_signals *s)
{
    memset(s, 0, sizeof *s);
    s->now = now;
    kvg_autoscale_obs_window(o, tick, span, s);
}

TEST(signals_empty_window_is_unknown)
{
    struct kvg_autoscale_obs *o = mk(8);
    struct kvg_autoscale_signals s;
    window(o, 0, 1, 4, &s); /* no bucket closed yet */
    CHECK_NEAR(s.arrival_rate, 0, 0);
    CHECK(s.isl < 0 && s.osl < 0 && s.input_tps < 0);
    CHECK(s.ttft_mean < 0 && s.ttft_p90 < 0 && s.itl_mean < 0 && s.itl_p90 < 0);
    CHECK(s.cache_hit < 0 && s.slo_miss < 0 && s.slo_miss_ttft < 0 && s.slo_miss_itl < 0);
    CHECK(s.slo_miss_prefill < 0 && s.slo_miss_decode < 0);
    for (int i = 0; i < 3; i++) kvg_autoscale_obs_next(o); /* quiet ticks */
    window(o, 3, 1, 4, &s);
    CHECK_NEAR(s.arrival_rate, 0, 0);
    CHECK_NEAR(s.output_tps, 0, 0);
    CHECK(s.isl < 0 && s.osl < 0 && s.ttft_mean < 0 && s.slo_miss < 0 && s.cache_hit < 0);
    kvg_autoscale_obs_free(o);
}

/* Ticks of 1 s: tick k's events at k + 0.5, the tick closed at k + 1. */
TEST(signals_window_over_ticks)
{
    struct kvg_autoscale_obs *o = mk(16);
    for (int k = 0; k < 6; k++) {
        double t = k + 0.5;
        /* tick k: k + 1 arrivals of 100 prompt tokens, 10 tokens out,
         * one first token with TTFT k / 10, one finish with ITL k / 100. */
        for (int i = 0; i <= k; i++) kvg_autoscale_obs_arrive(o, 100);
        kvg_autoscale_obs_tokens(o, 10);
        kvg_autoscale_obs_cached(o, 25, 100);
        kvg_autoscale_obs_first(o, t, k / 10.0);
        kvg_autoscale_obs_finish(o, t, k / 100.0, k == 5 ? KVG_AUTOSCALE_MISS_ITL : 0, 100, 20);
        kvg_autoscale_obs_next(o);
    }
    struct kvg_autoscale_signals s;
    /* A 3 s window at 6: ticks 3, 4, 5 (4 + 5 + 6 arrivals over 3 s). */
    window(o, 6, 1, 3, &s);
    CHECK_NEAR(s.arrival_rate, 15.0 / 3, 1e-12);
    CHECK_NEAR(s.input_tps, 1500.0 / 3, 1e-9);
    CHECK_NEAR(s.output_tps, 30.0 / 3, 1e-12);
    CHECK_NEAR(s.isl, 100, 1e-12);
    CHECK_NEAR(s.osl, 20, 1e-12);
    CHECK_NEAR(s.cache_hit, 0.25, 1e-12);
    CHECK_NEAR(s.slo_miss, 1.0 / 3, 1e-12);
    CHECK_NEAR(s.slo_miss_itl, 1.0 / 3, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 0, 0);
    CHECK_NEAR(s.ttft_mean, 0.4, 1e-12);
    /* p90 of 0.3, 0.4, 0.5 interpolated: 0.3 + 1.8 * 0.1. */
    CHECK_NEAR(s.ttft_p90, 0.48, 1e-12);
    CHECK_NEAR(s.itl_mean, 0.04, 1e-12);
    /* Edges: a 2.5 s window covers 3 ticks (rounded up), samples from 3.0
     * on; a window longer than the ring covers what it holds. */
    window(o, 6, 1, 2.5, &s);
    CHECK_NEAR(s.arrival_rate, 5, 1e-12);
    CHECK_NEAR(s.ttft_mean, 0.4, 1e-12);
    window(o, 6, 1, 100, &s); /* 6 closed ticks: 21 arrivals over 6 s */
    CHECK_NEAR(s.arrival_rate, 21.0 / 6, 1e-12);
    CHECK_NEAR(s.ttft_mean, 0.25, 1e-12);
    /* The filling bucket is not in the window. */
    for (int i = 0; i < 50; i++) kvg_autoscale_obs_arrive(o, 100);
    window(o, 6.5, 1, 1, &s);
    CHECK_NEAR(s.arrival_rate, 6, 1e-12);
    kvg_autoscale_obs_free(o);
}

TEST(signals_ring_wraps)
{
    struct kvg_autoscale_obs *o = mk(4); /* windows of at most 3 ticks */
    for (int k = 0; k < 10; k++) {
        kvg_autoscale_obs_arrive(o, k);
        kvg_autoscale_obs_next(o);
    }
    struct kvg_autoscale_signals s;
    window(o, 10, 1, 60, &s);
    CHECK_NEAR(s.arrival_rate, 1, 1e-12);
    CHECK_NEAR(s.isl, (7 + 8 + 9) / 3.0, 1e-12);
    kvg_autoscale_obs_free(o);
}

/* Prompt lengths unknown at arrival: ISL from the finished requests'
 * usage; one arrival of unknown length in the window makes the arrivals'
 * own sum partial, so the finishes' figure stands. */
TEST(signals_isl_osl_measured_at_finish)
{
    struct kvg_autoscale_obs *o = mk(8);
    for (int i = 0; i < 4; i++) kvg_autoscale_obs_arrive(o, -1);
    kvg_autoscale_obs_arrive(o, 999);
    kvg_autoscale_obs_finish(o, 0.5, 0.01, 0, 300, 40);
    kvg_autoscale_obs_finish(o, 0.5, 0.02, 0, 500, 60);
    kvg_autoscale_obs_finish(o, 0.5, -1, KVG_AUTOSCALE_MISS_FAILED, -1, -1); /* no lengths, ITL */
    kvg_autoscale_obs_next(o);
    struct kvg_autoscale_signals s;
    window(o, 1, 1, 1, &s);
    CHECK_NEAR(s.arrival_rate, 5, 1e-12);
    CHECK_NEAR(s.isl, 400, 1e-12);
    CHECK_NEAR(s.input_tps, 2000, 1e-9);
    CHECK_NEAR(s.osl, 50, 1e-12);
    CHECK_NEAR(s.slo_miss, 1.0 / 3, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 1.0 / 3, 1e-12); /* a failed request misses both */
    CHECK_NEAR(s.slo_miss_itl, 1.0 / 3, 1e-12);
    CHECK_NEAR(s.itl_mean, 0.015, 1e-12);
    CHECK(s.ttft_mean < 0); /* no first token seen */
    CHECK(s.cache_hit < 0);
    kvg_autoscale_obs_free(o);
}

/* The share over each target from a recorded window: the judge against
 * the targets, then one request of each kind through the builder. */
TEST(signals_miss_split_by_target)
{
    const double tt = 2.0, it = 0.05;
    CHECK_INT(kvg_autoscale_obs_judge(0, 1.9, 0.04, -1, tt, it), 0);
    CHECK_INT(kvg_autoscale_obs_judge(0, 2.1, 0.04, -1, tt, it), KVG_AUTOSCALE_MISS_TTFT);
    CHECK_INT(kvg_autoscale_obs_judge(0, 1.9, 0.06, -1, tt, it), KVG_AUTOSCALE_MISS_ITL);
    CHECK_INT(kvg_autoscale_obs_judge(0, 2.1, 0.06, -1, tt, it), KVG_AUTOSCALE_MISS_FAILED);
    CHECK_INT(kvg_autoscale_obs_judge(1, 0.1, 0.01, -1, tt, it), KVG_AUTOSCALE_MISS_FAILED);
    CHECK_INT(kvg_autoscale_obs_judge(0, -1, -1, -1, tt, it), 0);    /* not seen: not judged */
    CHECK_INT(kvg_autoscale_obs_judge(0, 2.0, 0.05, -1, tt, it), 0); /* at the target is within */
    /* Ticks of 1 s. Tick 0: 3 TTFT-only, 1 ITL-only, 1 both, 1 failed, 4
     * within. Tick 1: 2 ITL-only, 8 within. */
    struct kvg_autoscale_obs *o = mk(8);
    static const double rec0[][2] = {{2.5, 0.01}, {3.0, 0.02}, {2.2, 0.03},
                                     {0.5, 0.09}, {2.5, 0.09}, {0.4, 0.01},
                                     {0.3, 0.01}, {1.0, 0.04}, {0.2, 0.05}};
    for (size_t i = 0; i < sizeof rec0 / sizeof *rec0; i++)
        kvg_autoscale_obs_finish(o, 0.5, rec0[i][1],
                                 kvg_autoscale_obs_judge(0, rec0[i][0], rec0[i][1], -1, tt, it),
                                 100, 10);
    kvg_autoscale_obs_finish(o, 0.5, -1, kvg_autoscale_obs_judge(1, -1, -1, -1, tt, it), -1, -1);
    kvg_autoscale_obs_next(o);
    struct kvg_autoscale_signals s;
    window(o, 1, 1, 1, &s); /* tick 0: 10 finished */
    CHECK_NEAR(s.slo_miss, 6.0 / 10, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 5.0 / 10, 1e-12); /* 3 + both + failed */
    CHECK_NEAR(s.slo_miss_itl, 3.0 / 10, 1e-12);  /* 1 + both + failed */
    for (int i = 0; i < 10; i++)
        kvg_autoscale_obs_finish(o, 1.5, i < 2 ? 0.07 : 0.02,
                                 kvg_autoscale_obs_judge(0, 0.5, i < 2 ? 0.07 : 0.02, -1, tt, it),
                                 100, 10);
    kvg_autoscale_obs_next(o);
    window(o, 2, 1, 1, &s); /* tick 1 alone */
    CHECK_NEAR(s.slo_miss, 0.2, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 0, 0);
    CHECK_NEAR(s.slo_miss_itl, 0.2, 1e-12);
    window(o, 2, 1, 2, &s); /* both: 20 finished */
    CHECK_NEAR(s.slo_miss, 8.0 / 20, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 5.0 / 20, 1e-12);
    CHECK_NEAR(s.slo_miss_itl, 5.0 / 20, 1e-12);
    kvg_autoscale_obs_free(o);
}

/* A PD window's misses by leg (signals.h), from a recorded window: each
 * request's TTFT, mean ITL and prefill leg (seconds from arrival to its
 * end; 0 none on a prefill replica, INFINITY never ended, -1 one leg). */
static const struct {
    int failed;
    double ttft, itl, pre;
    unsigned want;
} legrec[] = {
    {0, 2.5, 0.01, 2.3, KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_PREFILL}, /* queued prefill */
    {0, 2.5, 0.01, 0.4,
     KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_DECODE}, /* waited for decode */
    {0, 1.0, 0.09, 0.4, KVG_AUTOSCALE_MISS_ITL | KVG_AUTOSCALE_MISS_DECODE},
    {0, 3.0, 0.09, 2.5,
     KVG_AUTOSCALE_MISS_FAILED | KVG_AUTOSCALE_MISS_PREFILL | KVG_AUTOSCALE_MISS_DECODE},
    {1, -1, -1, INFINITY,
     KVG_AUTOSCALE_MISS_FAILED | KVG_AUTOSCALE_MISS_PREFILL},                /* never prefilled */
    {1, -1, -1, 0.5, KVG_AUTOSCALE_MISS_FAILED | KVG_AUTOSCALE_MISS_DECODE}, /* failed after */
    {0, 1.0, 0.02, 0, 0},                                                    /* decode only */
    {0, 2.4, 0.02, 0, KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_DECODE},
    /* At the target, under it: the larger part of the TTFT either way. */
    {0, 2.1, 0.02, 2.0, KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_PREFILL},
    {0, 2.2, 0.02, 1.5, KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_PREFILL},
    {0, 2.2, 0.02, 1.0, KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_DECODE},
};

TEST(signals_miss_split_by_leg)
{
    const double tt = 2.0, it = 0.05;
    struct kvg_autoscale_obs *o = mk(8);
    size_t n = sizeof legrec / sizeof *legrec;
    for (size_t i = 0; i < n; i++) {
        unsigned m = kvg_autoscale_obs_judge(legrec[i].failed, legrec[i].ttft, legrec[i].itl,
                                             legrec[i].pre, tt, it);
        CHECK_INT(m, legrec[i].want | KVG_AUTOSCALE_LEG);
        kvg_autoscale_obs_finish(o, 0.5, legrec[i].itl, m, 100, 10);
    }
    /* One request of one leg (an aggregated one) over the TTFT target: no
     * leg bits, counted in the shares' denominator only. */
    CHECK_INT(kvg_autoscale_obs_judge(0, 2.5, 0.01, -1, tt, it), KVG_AUTOSCALE_MISS_TTFT);
    kvg_autoscale_obs_finish(o, 0.5, 0.01, kvg_autoscale_obs_judge(0, 2.5, 0.01, -1, tt, it), 100,
                             10);
    kvg_autoscale_obs_next(o);
    struct kvg_autoscale_signals s;
    window(o, 1, 1, 1, &s); /* 12 finished */
    CHECK_NEAR(s.slo_miss, 11.0 / 12, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 10.0 / 12, 1e-12);
    CHECK_NEAR(s.slo_miss_itl, 4.0 / 12, 1e-12);
    CHECK_NEAR(s.slo_miss_prefill, 5.0 / 12, 1e-12); /* queued, both, never, the larger part */
    CHECK_NEAR(s.slo_miss_decode, 6.0 / 12, 1e-12);
    /* A window of one-leg requests only: the leg split unknown, not 0. */
    kvg_autoscale_obs_finish(o, 1.5, 0.01, kvg_autoscale_obs_judge(0, 2.5, 0.01, -1, tt, it), 100,
                             10);
    kvg_autoscale_obs_next(o);
    window(o, 2, 1, 1, &s);
    CHECK_NEAR(s.slo_miss, 1, 0);
    CHECK(s.slo_miss_prefill < 0 && s.slo_miss_decode < 0);
    kvg_autoscale_obs_free(o);
    /* serve's path: the same requests through the feed, judged at the fold,
     * give the same shares. */
    struct kvg_autoscale_feed *f = malloc(sizeof *f);
    CHECK(f);
    CHECK_INT(kvg_autoscale_feed_init(f), 0);
    for (size_t i = 0; i < n; i++)
        kvg_autoscale_feed_finish(f, legrec[i].failed, legrec[i].ttft, legrec[i].itl, legrec[i].pre,
                                  100, 10, -1);
    kvg_autoscale_feed_finish(f, 0, 2.5, 0.01, -1, 100, 10, -1);
    struct kvg_autoscale_feed_take tk;
    CHECK_INT(kvg_autoscale_feed_take(f, &tk), 0);
    o = mk(8);
    kvg_autoscale_obs_fold(o, &tk, 0.5, tt, it);
    kvg_autoscale_feed_take_free(&tk);
    kvg_autoscale_obs_next(o);
    window(o, 1, 1, 1, &s);
    CHECK_NEAR(s.slo_miss_prefill, 5.0 / 12, 1e-12);
    CHECK_NEAR(s.slo_miss_decode, 6.0 / 12, 1e-12);
    CHECK_NEAR(s.slo_miss, 11.0 / 12, 1e-12);
    kvg_autoscale_obs_free(o);
    kvg_autoscale_feed_destroy(f);
    free(f);
}

TEST(signals_span)
{
    CHECK_NEAR(kvg_autoscale_obs_span("sla", 0, 0), 180, 0);
    CHECK_NEAR(kvg_autoscale_obs_span("kvgate", 0, 0), 30, 0);
    CHECK_NEAR(kvg_autoscale_obs_span("queue", 5, 0), 30, 0);
    CHECK_NEAR(kvg_autoscale_obs_span("queue", 60, 0), 60, 0);
    CHECK_NEAR(kvg_autoscale_obs_span("sla", 60, 7), 7, 0);
}

static void *feeder(void *arg)
{
    struct kvg_autoscale_feed *f = arg;
    for (int i = 0; i < 100; i++) {
        kvg_autoscale_feed_arrive(f, -1);
        kvg_autoscale_feed_first(f, 0.2);
        /* Every tenth over the 0.5 s TTFT target, every fifth over ITL. */
        kvg_autoscale_feed_finish(f, 0, i % 10 ? 0.2 : 0.9, i % 5 ? 0.01 : 0.2, -1, 100, 10,
                                  i % 2 ? 50 : -1);
    }
    kvg_autoscale_feed_finish(f, 1, -1, -1, -1, -1, -1, -1);
    return NULL;
}

TEST(signals_feed_threads_fold)
{
    struct kvg_autoscale_feed *f = malloc(sizeof *f);
    CHECK(f);
    CHECK_INT(kvg_autoscale_feed_init(f), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK_INT(pthread_create(&th[i], NULL, feeder, f), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    struct kvg_autoscale_feed_take tk;
    CHECK_INT(kvg_autoscale_feed_take(f, &tk), 0);
    CHECK_INT(tk.nttft, 400);
    CHECK_INT(tk.ndone, 404);
    struct kvg_autoscale_obs *o = mk(8);
    kvg_autoscale_obs_fold(o, &tk, 1.0, 0.5, 0.1);
    kvg_autoscale_feed_take_free(&tk);
    kvg_autoscale_obs_next(o);
    struct kvg_autoscale_signals s;
    window(o, 2, 2, 2, &s); /* one 2 s tick */
    CHECK_NEAR(s.arrival_rate, 200, 1e-9);
    CHECK_NEAR(s.output_tps, 2000, 1e-9);
    CHECK_NEAR(s.isl, 100, 1e-12);
    CHECK_NEAR(s.osl, 10, 1e-12);
    CHECK_NEAR(s.cache_hit, 0.5, 1e-12); /* only the requests that said their cache */
    /* Per thread: 20 over ITL (i % 5 == 0, the 10 over TTFT among them) and
     * the failed one. */
    CHECK_NEAR(s.slo_miss, 4 * 21.0 / 404, 1e-12);
    CHECK_NEAR(s.slo_miss_ttft, 4 * 11.0 / 404, 1e-12); /* 10 over TTFT and the failed one */
    CHECK_NEAR(s.slo_miss_itl, 4 * 21.0 / 404, 1e-12);
    CHECK_NEAR(s.ttft_mean, 0.2, 1e-12);
    /* Taken: the next take is empty. */
    CHECK_INT(kvg_autoscale_feed_take(f, &tk), 0);
    CHECK_INT(tk.nttft + tk.ndone, 0);
    CHECK_NEAR(tk.sums.arrivals, 0, 0);
    kvg_autoscale_feed_take_free(&tk);
    kvg_autoscale_feed_destroy(f);
    free(f);
    kvg_autoscale_obs_free(o);
}

/* A recorded request: arrival, first token, end (seconds), mean ITL,
 * usage, and whether it failed. */
struct rec {
    double at, first, end, itl, prompt, out, cached;
    int failed;
};

/* The targets r missed, judged here rather than by the builder's own
 * judge, so that a wrong judge fails the comparison. */
static unsigned missed(const struct rec *r, double ttft_t, double itl_t)
{
    if (r->failed) return KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_ITL;
    return (r->first - r->at > ttft_t ? KVG_AUTOSCALE_MISS_TTFT : 0u) |
           (r->itl > itl_t ? KVG_AUTOSCALE_MISS_ITL : 0u);
}

struct ev {
    double t;
    int who, kind; /* 0 arrival, 1 first token, 2 end */
};

static int ev_cmp(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

TEST(signals_live_path_equals_bench_path)
{
    /* 600 requests over 60 s: uneven arrivals, some slow, a few failed. */
    enum { N = 600 };
    static struct rec rs[N];
    static struct ev evs[3 * N];
    size_t nev = 0;
    for (int i = 0; i < N; i++) {
        struct rec *r = &rs[i];
        r->at = 0.1 * i + 0.013 * (i % 7);
        r->first = r->at + 0.05 + 0.4 * ((i * 37) % 11) / 10.0;
        r->out = 1 + (i * 13) % 40;
        r->itl = 0.01 + 0.002 * (i % 9);
        r->end = r->first + r->itl * (r->out - 1);
        r->prompt = 100 + (i * 29) % 300;
        r->cached = i % 3 ? 64 : 0;
        r->failed = i % 97 == 0;
        evs[nev++] = (struct ev){r->at, i, 0};
        if (!r->failed) evs[nev++] = (struct ev){r->first, i, 1};
        evs[nev++] = (struct ev){r->end, i, 2};
    }
    qsort(evs, nev, sizeof *evs, ev_cmp);
    const double tick = 1.0, span = 10, ttft_t = 0.3, itl_t = 0.025;
    struct kvg_autoscale_obs *bench = NULL, *live = NULL;
    CHECK_INT(kvg_autoscale_obs_new(32, 4096, &bench), 0);
    CHECK_INT(kvg_autoscale_obs_new(32, 4096, &live), 0);
    struct kvg_autoscale_feed *f = malloc(sizeof *f);
    CHECK(f && !kvg_autoscale_feed_init(f));
    size_t e = 0;
    int nmeasured = 0, nsplit = 0;
    for (int T = 1; T <= 75; T++) {
        for (; e < nev && evs[e].t <= T; e++) {
            const struct rec *r = &rs[evs[e].who];
            double t = evs[e].t, ttft = r->first - r->at;
            if (evs[e].kind == 0) {
                kvg_autoscale_obs_arrive(bench, -1); /* scale_day.c */
                kvg_autoscale_feed_arrive(f, -1);    /* serve's proxy */
            } else if (evs[e].kind == 1) {
                kvg_autoscale_obs_first(bench, t, ttft);
                kvg_autoscale_feed_first(f, ttft);
            } else if (r->failed) {
                kvg_autoscale_obs_finish(bench, t, -1, KVG_AUTOSCALE_MISS_FAILED, -1, -1);
                kvg_autoscale_feed_finish(f, 1, -1, -1, -1, -1, -1, -1);
            } else {
                kvg_autoscale_obs_tokens(bench, r->out);
                kvg_autoscale_obs_cached(bench, r->cached, r->prompt);
                kvg_autoscale_obs_finish(bench, t, r->itl, missed(r, ttft_t, itl_t), r->prompt,
                                         r->out);
                kvg_autoscale_feed_finish(f, 0, ttft, r->itl, -1, r->prompt, r->out, r->cached);
            }
        }
        /* The tick: serve folds the feed stamped mid-tick; both close. */
        struct kvg_autoscale_feed_take tk;
        CHECK_INT(kvg_autoscale_feed_take(f, &tk), 0);
        kvg_autoscale_obs_fold(live, &tk, T - tick / 2, ttft_t, itl_t);
        kvg_autoscale_feed_take_free(&tk);
        kvg_autoscale_obs_next(live);
        kvg_autoscale_obs_next(bench);
        struct kvg_autoscale_signals a, b;
        window(bench, T, tick, span, &a);
        window(live, T, tick, span, &b);
        double *x[] = {&a.arrival_rate, &a.output_tps,    &a.isl,         &a.osl,      &a.cache_hit,
                       &a.slo_miss,     &a.ttft_mean,     &a.ttft_p90,    &a.itl_mean, &a.itl_p90,
                       &a.input_tps,    &a.slo_miss_ttft, &a.slo_miss_itl};
        double *y[] = {&b.arrival_rate, &b.output_tps,    &b.isl,         &b.osl,      &b.cache_hit,
                       &b.slo_miss,     &b.ttft_mean,     &b.ttft_p90,    &b.itl_mean, &b.itl_p90,
                       &b.input_tps,    &b.slo_miss_ttft, &b.slo_miss_itl};
        for (size_t k = 0; k < sizeof x / sizeof *x; k++) CHECK_NEAR(*x[k], *y[k], 1e-9);
        nmeasured += a.ttft_p90 > 0 && a.slo_miss > 0 && a.cache_hit > 0 && a.isl > 0;
        /* The split measured something on its own: windows where the
         * shares differ, so a builder that copied one into the other fails. */
        nsplit += a.slo_miss_ttft > 0 && a.slo_miss_itl > 0 && a.slo_miss_ttft != a.slo_miss_itl &&
                  a.slo_miss > a.slo_miss_ttft && a.slo_miss > a.slo_miss_itl;
    }
    CHECK_INT(e, nev);
    CHECK(nmeasured > 50); /* the windows compared measured something */
    CHECK(nsplit > 50);
    kvg_autoscale_feed_destroy(f);
    free(f);
    kvg_autoscale_obs_free(bench);
    kvg_autoscale_obs_free(live);
}

TEST(signals_window_partial_until_its_span)
{
    struct kvg_autoscale_obs *o = mk(8);
    struct kvg_autoscale_signals s;
    for (int t = 1; t <= 5; t++) {
        kvg_autoscale_obs_arrive(o, -1);
        kvg_autoscale_obs_next(o);
        window(o, t, 1, 4, &s);
        CHECK_INT(s.partial, t < 4);
        CHECK_NEAR(s.arrival_rate, 1, 1e-12); /* over the ticks it has */
    }
    kvg_autoscale_obs_free(o);
}

/* One 5 s tick of steady traffic into o: 3 arrivals of 1000 prompt tokens,
 * 300 tokens out, 3 finishes of 100 tokens, one TTFT and ITL sample. */
static void busy_tick(struct kvg_autoscale_obs *o, double t)
{
    for (int i = 0; i < 3; i++) {
        kvg_autoscale_obs_arrive(o, 1000);
        kvg_autoscale_obs_finish(o, t, 0.02, 0, 1000, 100);
    }
    kvg_autoscale_obs_tokens(o, 300);
    kvg_autoscale_obs_first(o, t, 0.3);
    kvg_autoscale_obs_next(o);
}

/* A gateway up 20 s before its first request (a replay's start, a deploy
 * before its traffic) reads the same windows, and its planner decides the
 * same, as a builder that starts with the traffic (the benchmark's day):
 * the idle ticks observed nothing, so they are no zero-traffic signal in
 * the window nor in the planner's history (its trend), and no planner
 * decides before a request has finished (no lengths, no load). The
 * gateway's queue is a signal before that: from zero, it is planned on. */
TEST(signals_idle_ticks_before_the_first_request_observe_nothing)
{
    struct kvg_autoscale_obs *live = mk(64), *bench = mk(64);
    struct kvg_autoscale_opts o;
    kvg_autoscale_opts_default(&o);
    o.min_replicas = 2;
    o.max_replicas = 8;
    o.window_s = 30;
    o.down_hold_s = 30;
    o.prof = (struct kvg_autoscale_profile){
        .prefill_tps = 200, .decode_tps = 50, .ttft_idle_s = 0.2, .itl_idle_s = 0.02};
    struct kvg_autoscale_planner *pl = NULL, *pb = NULL;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &pl), 0);
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &pb), 0);
    struct kvg_autoscale_signals s, b;
    struct kvg_autoscale_decision dl, db;
    const int idle = 4;
    for (int k = 0; k < idle; k++) {
        kvg_autoscale_obs_next(live);
        window(live, 5.0 * (k + 1), 5, 30, &s);
        s.ready = 2;
        CHECK_INT(s.unseen, 1);
        CHECK_INT(kvg_autoscale_plan(pl, &s, &dl), 0);
        CHECK_INT(dl.desired, 2);
        CHECK_INT(dl.acted, 0);
        CHECK(strstr(dl.reason, "no request finished yet") != NULL);
    }
    /* Requests arrived and running, none finished: no lengths, no load
     * measured yet; still held, the window's traffic kept for later. */
    struct kvg_autoscale_obs *early = mk(8);
    kvg_autoscale_obs_arrive(early, -1);
    kvg_autoscale_obs_next(early);
    window(early, 5, 5, 30, &s);
    s.ready = 2;
    s.running = 1;
    CHECK_INT(s.unseen, 1);
    CHECK_NEAR(s.arrival_rate, 0.2, 1e-12);
    CHECK_INT(kvg_autoscale_plan(pl, &s, &dl), 0);
    CHECK_INT(dl.desired, 2);
    CHECK_INT(dl.acted, 0);
    kvg_autoscale_obs_finish(early, 7, 0.02, 0, 100, 10);
    kvg_autoscale_obs_next(early);
    window(early, 10, 5, 30, &s);
    CHECK_INT(s.unseen, 0);
    kvg_autoscale_obs_free(early);
    /* A pool never used: once a whole window has passed without a request
     * it has measured zero traffic and is planned on, not held at what
     * runs for as long as no request comes. */
    struct kvg_autoscale_obs *never = mk(16);
    for (int k = 0; k < 7; k++) {
        kvg_autoscale_obs_next(never);
        window(never, 5.0 * (k + 1), 5, 30, &s);
        CHECK_INT(s.unseen, k + 1 < 6);
    }
    struct kvg_autoscale_planner *pn = NULL;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &pn), 0);
    s.ready = 4;
    CHECK_INT(kvg_autoscale_plan(pn, &s, &dl), 0);
    CHECK(strstr(dl.reason, "no request finished yet") == NULL);
    kvg_autoscale_planner_free(pn);
    kvg_autoscale_obs_free(never);
    uint32_t rl = 2, rb = 2;
    int differ = 0, moved = 0;
    for (int k = 0; k < 24; k++) {
        double tb = 5.0 * (k + 1), tl = tb + 5.0 * idle;
        busy_tick(live, tl - 2.5);
        busy_tick(bench, tb - 2.5);
        window(live, tl, 5, 30, &s);
        window(bench, tb, 5, 30, &b);
        CHECK_INT(s.unseen, 0);
        CHECK_INT(s.partial, b.partial);
        CHECK_NEAR(s.arrival_rate, b.arrival_rate, 1e-12);
        CHECK_NEAR(s.arrival_rate, 0.6, 1e-12); /* over the traffic's ticks alone */
        CHECK_NEAR(s.output_tps, b.output_tps, 1e-12);
        CHECK_NEAR(s.ttft_p90, b.ttft_p90, 1e-12);
        s.ready = rl;
        b.ready = rb;
        s.running = b.running = 3;
        CHECK_INT(kvg_autoscale_plan(pl, &s, &dl), 0);
        CHECK_INT(kvg_autoscale_plan(pb, &b, &db), 0);
        differ += dl.desired != db.desired || dl.acted != db.acted;
        moved += dl.desired != 2;
        rl = dl.desired;
        rb = db.desired;
    }
    CHECK_INT(differ, 0);
    CHECK(moved > 0); /* the traffic is more than two replicas' worth */
    kvg_autoscale_planner_free(pl);
    kvg_autoscale_planner_free(pb);
    /* From zero: a queued request is planned on before its tick closes. */
    o.min_replicas = 0;
    CHECK_INT(kvg_autoscale_planner_new("kvgate", &o, &pl), 0);
    struct kvg_autoscale_obs *z = mk(8);
    kvg_autoscale_obs_next(z);
    window(z, 5, 5, 30, &s);
    s.queued = 1;
    CHECK_INT(s.unseen, 1);
    CHECK_INT(kvg_autoscale_plan(pl, &s, &dl), 0);
    CHECK(dl.desired >= 1);
    kvg_autoscale_planner_free(pl);
    kvg_autoscale_obs_free(z);
    kvg_autoscale_obs_free(live);
    kvg_autoscale_obs_free(bench);
}
