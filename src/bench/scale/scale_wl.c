/* The diurnal scenario's traffic: the day's shape, bursts, and prompts that
 * share system prompts. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/scale/scale_int.h"

/* Relative load per hour (local time, interpolated, cyclic). The DeepSeek
 * day (V3/R1 inference, 2025-02-27/28) peaked at 278 nodes against a mean of
 * 226.75, 1.226x; this curve has the same peak-to-mean (1.23 after
 * normalising) with a night trough at ~0.68x the mean and the afternoon peak
 * a plain day of chat traffic shows. The exact curve is ours. */
static const double g_hourly[24] = {0.85, 0.77, 0.71, 0.67, 0.65, 0.67, 0.75, 0.83,
                                    0.92, 1.05, 1.12, 1.15, 1.10, 1.12, 1.16, 1.18,
                                    1.17, 1.12, 1.08, 1.10, 1.12, 1.05, 0.92, 0.80};

static double hourly_mean(void)
{
    double s = 0;
    for (int i = 0; i < 24; i++) s += g_hourly[i];
    return s / 24;
}

double kvg_bench_scale_shape(double h)
{
    h = fmod(h, 24);
    if (h < 0) h += 24;
    int i = (int)h;
    double f = h - i;
    return (g_hourly[i] * (1 - f) + g_hourly[(i + 1) % 24] * f) / hourly_mean();
}

static double shape_max(void)
{
    double mx = 0;
    for (int i = 0; i < 24; i++) mx = fmax(mx, g_hourly[i]);
    return mx / hourly_mean();
}

double kvg__scale_wl_rate(const struct scale_wl *w, double t)
{
    const struct kvg_bench_scale_opts *o = w->o;
    if (o->flat) return o->mean_rate;
    double r = o->mean_rate * kvg_bench_scale_shape(t / o->day_s * 24);
    for (uint32_t b = 0; b < o->bursts && b < 64; b++)
        if (t >= w->burst_at[b] && t < w->burst_at[b] + o->burst_s) r *= o->burst_mult;
    return r;
}

int kvg__scale_wl_init(struct scale_wl *w, const struct kvg_bench_scale_opts *o)
{
    memset(w, 0, sizeof *w);
    w->o = o;
    if (!o->groups || o->groups > KVG_BENCH_SCALE_GROUPS || !(o->day_s > 0) || !(o->mean_rate > 0))
        return -EINVAL;
    kvg_rng_seed(&w->rng, o->seed * 0x9e3779b97f4a7c15ull + 0xd1u);
    for (uint32_t b = 0; b < o->bursts && b < 64; b++)
        w->burst_at[b] = o->day_s * (8 + 14 * kvg_rng_double(&w->rng)) / 24;
    double mult = o->bursts ? o->burst_mult : 1;
    w->lambda_max = o->mean_rate * shape_max() * (mult > 1 ? mult * mult : 1);
    double z = 0;
    for (uint32_t g = 0; g < o->groups; g++) z += pow(g + 1, -o->zipf_s);
    double c = 0;
    for (uint32_t g = 0; g < o->groups; g++) {
        c += pow(g + 1, -o->zipf_s) / z;
        w->zipf_cdf[g] = c;
    }
    size_t n = (size_t)o->groups * (o->prefix_len ? o->prefix_len : 1);
    if (!(w->prefix = malloc(n * sizeof *w->prefix))) return -ENOMEM;
    for (size_t i = 0; i < n; i++) w->prefix[i] = 1000 + (uint32_t)kvg_rng_below(&w->rng, 30000);
    return 0;
}

void kvg__scale_wl_free(struct scale_wl *w)
{
    free(w->prefix);
    w->prefix = NULL;
}

int kvg__scale_wl_next(struct scale_wl *w, struct scale_req *r)
{
    const struct kvg_bench_scale_opts *o = w->o;
    /* Thinning: candidates at the highest rate, kept at rate(t) / max. */
    for (;;) {
        double u = 1.0 - kvg_rng_double(&w->rng);
        w->t += -log(u) / w->lambda_max;
        if (w->t >= o->day_s) return 1;
        if (kvg_rng_double(&w->rng) * w->lambda_max <= kvg__scale_wl_rate(w, w->t)) break;
    }
    r->arrival = w->t;
    double u = kvg_rng_double(&w->rng);
    uint32_t g = 0;
    while (g + 1 < o->groups && u > w->zipf_cdf[g]) g++;
    r->group = g;
    uint32_t span = o->suffix_max > o->suffix_min ? o->suffix_max - o->suffix_min + 1 : 1;
    r->prompt_len = o->prefix_len + o->suffix_min + (uint32_t)kvg_rng_below(&w->rng, span);
    /* Geometric output length with mean osl (at least 1, at most osl_max). */
    double q = 1.0 / (o->osl > 1 ? o->osl : 1);
    double v = ceil(log(1.0 - kvg_rng_double(&w->rng)) / log(1 - q + 1e-12));
    if (!(v >= 1)) v = 1;
    if (v > o->osl_max) v = o->osl_max;
    r->max_tokens = (uint32_t)v;
    r->suffix_seed = kvg_rng_next(&w->rng);
    w->issued++;
    return 0;
}

void kvg__scale_wl_prompt(const struct scale_wl *w, const struct scale_req *r, uint32_t *buf)
{
    const struct kvg_bench_scale_opts *o = w->o;
    uint32_t p = o->prefix_len < r->prompt_len ? o->prefix_len : r->prompt_len;
    memcpy(buf, w->prefix + (size_t)r->group * o->prefix_len, p * sizeof *buf);
    struct kvg_rng rr;
    kvg_rng_seed(&rr, r->suffix_seed);
    for (uint32_t i = p; i < r->prompt_len; i++)
        buf[i] = 1000 + (uint32_t)kvg_rng_below(&rr, 30000);
}
