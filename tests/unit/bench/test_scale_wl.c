/* The realistic day's traffic (bench/scale/scale_wl.c) against the
 * published figures it is calibrated to (bench/results/autoscale-
 * realistic.md): each stream's 90 s and 180 s windows over its centred
 * 20-minute mean stay within the traces' maxima, the conversation bursts'
 * prompts make prefill tokens burstier than requests, the heavy stream
 * comes from a few clients on their own prompts, and the day's level
 * repeats within +-15% across seeds. */
#include <math.h>
#include <stdlib.h>

#include "bench/scale/scale_int.h"
#include "support/test.h"

static struct kvg_bench_scale_opts day(uint64_t seed, double heavy_share)
{
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    o.seed = seed;
    o.heavy_share = heavy_share;
    return o;
}

/* Mean of f over [a, b), sampled per second. */
static double mean_rate(const struct scale_wl *w, double a, double b)
{
    double s = 0;
    int n = 0;
    for (double t = a; t < b; t += 1, n++) s += kvg__scale_wl_rate(w, t);
    return n ? s / n : 0;
}

/* The highest ratio of a len-second window's mean rate to the centred
 * 1,200 s mean, over windows starting at each burst (where the maxima are). */
static double worst(const struct scale_wl *w, const struct scale_burst *b, uint32_t n, double len)
{
    double mx = 0;
    for (uint32_t i = 0; i < n; i++) {
        double mid = b[i].at + len / 2;
        if (mid < 600 || mid + 600 > w->o->day_s) continue;
        for (double a = b[i].at - len + 1; a <= b[i].at + b[i].len; a += 5) {
            double c = a + len / 2;
            mx = fmax(mx, mean_rate(w, a, a + len) / mean_rate(w, c - 600, c + 600));
        }
    }
    return mx;
}

TEST(conversation_windows_within_azure_2023)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct kvg_bench_scale_opts o = day(seed, 0);
        struct scale_wl w;
        CHECK_INT(kvg__scale_wl_init(&w, &o), 0);
        CHECK(w.nconv >= 2);
        double r90 = worst(&w, w.conv, w.nconv, 90), r180 = worst(&w, w.conv, w.nconv, 180);
        /* The traces: 90 s max 1.23 (p99 1.21), 180 s max 1.16; the
         * compressed curve's slope adds at most a little. */
        CHECK(r90 > 1.1 && r90 <= 1.23);
        CHECK(r180 > 1.05 && r180 <= 1.18);
        /* Prefill tokens: requests x prompts, within 1.49 at 90 s. */
        CHECK(r90 * w.conv[0].prompt <= 1.49 && r90 * w.conv[0].prompt > 1.3);
        kvg__scale_wl_free(&w);
    }
}

TEST(heavy_stream_windows_within_azure_code_2023)
{
    struct kvg_bench_scale_opts o = day(2, 0.9); /* nearly all heavy: its own ratios */
    struct scale_wl w;
    CHECK_INT(kvg__scale_wl_init(&w, &o), 0);
    CHECK(w.nheavy >= 2);
    double r90 = worst(&w, w.heavy, w.nheavy, 90), r180 = worst(&w, w.heavy, w.nheavy, 180);
    /* A real burst (its own volume lifts the centred mean too) ... */
    CHECK(r90 > 1.5 && r90 <= 3.24);  /* Azure code 2023: 90 s max 3.24 */
    CHECK(r180 <= 1.85 + 0.1 * 0.21); /* 180 s max 1.85 (the 10% conversation's own burst) */
    kvg__scale_wl_free(&w);
}

TEST(heavy_bursts_come_from_their_client_on_its_prompt)
{
    struct kvg_bench_scale_opts o = day(1, 0.1);
    struct scale_wl w;
    CHECK_INT(kvg__scale_wl_init(&w, &o), 0);
    const struct scale_burst *b = &w.heavy[0];
    uint64_t in = 0, theirs = 0, heavy = 0, n = 0;
    double conv_prompt = 0, burst_prompt = 0;
    uint64_t nc = 0, nb = 0;
    struct scale_req r;
    while (!kvg__scale_wl_next(&w, &r)) {
        n++;
        heavy += r.client >= 0;
        if (r.client >= 0) CHECK_INT(r.group, o.groups - 1 - (uint32_t)r.client);
        if (r.arrival >= b->at && r.arrival < b->at + b->len) {
            in++;
            theirs += r.client == (int)b->client;
        }
        int in_conv = 0;
        for (uint32_t i = 0; i < w.nconv; i++)
            in_conv |= r.arrival >= w.conv[i].at && r.arrival < w.conv[i].at + w.conv[i].len;
        if (r.client < 0 && in_conv) {
            burst_prompt += r.prompt_len;
            nb++;
        } else if (r.client < 0) {
            conv_prompt += r.prompt_len;
            nc++;
        }
    }
    /* Share of heavy traffic near heavy_share (bursts add a little). */
    CHECK(heavy > n * 0.09 && heavy < n * 0.13);
    /* In its burst the client sends the heavy stream's excess over the
     * level: (mult - 1) / mult of it, times the heavy share of the total. */
    double want = 0.1 * (b->mult - 1) / (0.9 * 1.2 + 0.1 * b->mult);
    CHECK(theirs > in * want * 0.8);
    CHECK_NEAR(burst_prompt / nb / (conv_prompt / nc), 1.2, 0.03);
    kvg__scale_wl_free(&w);
}

TEST(day_level_repeats_within_15_percent_and_stress_stays)
{
    double lo = INFINITY, hi = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        struct kvg_bench_scale_opts o = day(seed, 0.1);
        struct scale_wl w;
        CHECK_INT(kvg__scale_wl_init(&w, &o), 0);
        double lvl = w.hourly[12] / 1.10; /* the curve's noon point */
        lo = fmin(lo, lvl);
        hi = fmax(hi, lvl);
        kvg__scale_wl_free(&w);
    }
    CHECK(lo >= 0.85 - 1e-9 && hi <= 1.15 + 1e-9 && hi - lo > 0.05);
    /* --stress: the day curve as it was, its bursts at burst_mult. */
    struct kvg_bench_scale_opts o = day(1, 0.1);
    o.stress = 1;
    struct scale_wl w;
    CHECK_INT(kvg__scale_wl_init(&w, &o), 0);
    double t = w.burst_at[0] + 1;
    CHECK_NEAR(kvg__scale_wl_rate(&w, t) / (o.mean_rate * kvg_bench_scale_shape(t / o.day_s * 24)),
               1.5, 0.5 + 1e-9); /* 1.5, or 2.25 where two overlap */
    kvg__scale_wl_free(&w);
}
