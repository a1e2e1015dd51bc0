/* The start-up model (startup.h): measured start-ups as defaults, learned
 * p90s from observed actuations. */
#include "autoscale/startup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/stats.h"

#define Z90 1.2815515655446004 /* the standard normal's 90th percentile */

/* Measured: vLLM on Modal H100s, each start in a fresh container, median
 * (range) of four starts from `vllm serve` to /health.
 * fetch = cold + image pull and extract (BentoML: 5-6 + 3-4 min, so 480-600 s,
 * 540 median) + weights download (65.5 GB in 143 s; the 7B's 15 GB at that
 * rate is 33 s).
 * asleep1, asleep2, restore: published figures, not measured here
 * (docs/autoscale.md, "Start classes", has the table with sources):
 *   32B asleep1 2.9 s: vLLM's sleep-mode blog, Qwen3-Coder-30B-A3B on an
 *     A100 wakes from level 1 in 2.87 s (47.4 s cold); low/high +-20%
 *     (one figure published, the spread is an assumption);
 *   7B asleep1 0.85 s (0.7-1.0): an estimate, the host-to-GPU copy rate
 *     that 2.87 s for ~61 GB implies (~21 GB/s) over the 7B's 15 GB;
 *   asleep2 = 3.2 x asleep1: the blog's small models wake from level 2
 *     3.1-3.3x slower (0.26 -> 0.85 s, 0.82 -> 2.58 s); no 7B/32B figure;
 *   restore 7B 10 s (5-15): Dynamo Snapshot's docs, "warm restore ~10 s",
 *     and its blog's <5 s with local NVMe; 32B 15 s (12-20): SGLang
 *     Qwen3.5-35B-A3B restored from a Modal snapshot in 12-20 s. */
static const struct {
    const char *model;
    struct kvg_autoscale_startup_dist d[KVG_AUTOSCALE_NODE_STATES];
} g_seed[] = {
    {"qwen2.5-7b",
     {{68, 68, 75},
      {200, 189, 204},
      {773, 702, 837},
      {0.85, 0.7, 1.0},
      {2.7, 2.2, 3.2},
      {10, 5, 15}}},
    {"qwen2.5-32b",
     {{139, 97, 343},
      {430, 310, 471},
      {1113, 933, 1214},
      {2.9, 2.3, 3.5},
      {9.2, 7.4, 11.2},
      {15, 12, 20}}},
};

void kvg_autoscale_startup_init(struct kvg_autoscale_startup *m)
{
    memset(m, 0, sizeof *m);
    m->min_samples = 5;
    for (size_t i = 0; i < sizeof g_seed / sizeof g_seed[0]; i++)
        for (int s = 0; s < KVG_AUTOSCALE_NODE_STATES; s++)
            kvg_autoscale_startup_set(m, g_seed[i].model, (enum kvg_autoscale_node)s,
                                      g_seed[i].d[s]);
}

static struct kvg_autoscale_startup_key *find(const struct kvg_autoscale_startup *m,
                                              const char *model)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->keys[i].model, model))
            return (struct kvg_autoscale_startup_key *)&m->keys[i];
    return NULL;
}

/* The key for model: its own, else the 32B's defaults copied into a new key
 * (so learning stays per model), else NULL when the table is full. */
static struct kvg_autoscale_startup_key *get(struct kvg_autoscale_startup *m, const char *model)
{
    struct kvg_autoscale_startup_key *k = find(m, model);
    if (k || m->n >= KVG_AUTOSCALE_STARTUP_MODELS) return k;
    const struct kvg_autoscale_startup_key *base = find(m, "qwen2.5-32b");
    k = &m->keys[m->n++];
    memset(k, 0, sizeof *k);
    snprintf(k->model, sizeof k->model, "%s", model);
    for (int s = 0; s < KVG_AUTOSCALE_NODE_STATES; s++)
        k->dflt[s] = base ? base->dflt[s] : g_seed[1].d[s];
    return k;
}

/* Read-only lookup with the same fallback as get(). */
static const struct kvg_autoscale_startup_dist *dist_of(const struct kvg_autoscale_startup *m,
                                                        const char *model,
                                                        enum kvg_autoscale_node st,
                                                        const struct kvg_autoscale_startup_key **kp)
{
    const struct kvg_autoscale_startup_key *k = find(m, model);
    if (!k) k = find(m, "qwen2.5-32b");
    *kp = k;
    return k ? &k->dflt[st] : &g_seed[1].d[st];
}

int kvg_autoscale_startup_set(struct kvg_autoscale_startup *m, const char *model,
                              enum kvg_autoscale_node st, struct kvg_autoscale_startup_dist d)
{
    if ((unsigned)st >= KVG_AUTOSCALE_NODE_STATES || !(d.lo > 0) || d.lo > d.median ||
        d.median > d.hi)
        return KVG_ECONFIG;
    struct kvg_autoscale_startup_key *k = find(m, model);
    if (!k) {
        if (m->n >= KVG_AUTOSCALE_STARTUP_MODELS) return KVG_ETOOBIG;
        k = &m->keys[m->n++];
        memset(k, 0, sizeof *k);
        snprintf(k->model, sizeof k->model, "%s", model);
        for (int s = 0; s < KVG_AUTOSCALE_NODE_STATES; s++) k->dflt[s] = d;
    }
    k->dflt[st] = d;
    return 0;
}

void kvg_autoscale_startup_scale(struct kvg_autoscale_startup *m, double f)
{
    if (!(f > 0)) return;
    for (size_t i = 0; i < m->n; i++)
        for (int s = 0; s < KVG_AUTOSCALE_NODE_STATES; s++) {
            struct kvg_autoscale_startup_dist *d = &m->keys[i].dflt[s];
            d->median *= f;
            d->lo *= f;
            d->hi *= f;
        }
}

void kvg_autoscale_startup_observe(struct kvg_autoscale_startup *m, const char *model,
                                   enum kvg_autoscale_node st, double health_s, double warm_s)
{
    struct kvg_autoscale_startup_key *k = get(m, model);
    if (!k || (unsigned)st >= KVG_AUTOSCALE_NODE_STATES) return;
    if (health_s >= 0) k->health[st][k->nhealth[st]++ % KVG_AUTOSCALE_STARTUP_KEEP] = health_s;
    if (warm_s >= 0) k->warm[st][k->nwarm[st]++ % KVG_AUTOSCALE_STARTUP_KEEP] = warm_s;
}

/* Nearest-rank p-quantile of the kept samples (n of them ever seen). Not
 * base/stats.h's interpolation: the lead is a start-up time actually seen
 * (tests/unit/autoscale/test_startup.c asserts such figures). */
static double sample_pct(const double *ring, uint32_t seen, double p)
{
    size_t n = seen < KVG_AUTOSCALE_STARTUP_KEEP ? seen : KVG_AUTOSCALE_STARTUP_KEEP;
    double v[KVG_AUTOSCALE_STARTUP_KEEP];
    memcpy(v, ring, n * sizeof *v);
    kvg_stats_sort(v, n);
    size_t r = (size_t)ceil(p * (double)n);
    return v[r ? r - 1 : 0];
}

static double sample_max(const double *ring, uint32_t seen)
{
    size_t n = seen < KVG_AUTOSCALE_STARTUP_KEEP ? seen : KVG_AUTOSCALE_STARTUP_KEEP;
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        if (ring[i] > mx) mx = ring[i];
    return mx;
}

/* Inverse of the standard normal CDF by bisection on erfc: exact enough,
 * and only called per planning tick. */
static double norm_inv(double p)
{
    double lo = -8, hi = 8;
    for (int i = 0; i < 80; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2.0)) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

static double dist_at_z(const struct kvg_autoscale_startup_dist *d, double z)
{
    double s = z >= 0 ? log(d->hi / d->median) / Z90 : log(d->median / d->lo) / Z90;
    return d->median * exp(z * s);
}

double kvg_autoscale_startup_pct(const struct kvg_autoscale_startup *m, const char *model,
                                 enum kvg_autoscale_node st, double p)
{
    if ((unsigned)st >= KVG_AUTOSCALE_NODE_STATES) return NAN;
    if (p <= 0) p = 1e-6;
    if (p >= 1) p = 1 - 1e-6;
    const struct kvg_autoscale_startup_key *k;
    const struct kvg_autoscale_startup_dist *d = dist_of(m, model, st, &k);
    /* Only the model's own key holds its samples (the fallback's are another model's). */
    if (k && strcmp(k->model, model)) k = NULL;
    double prior = dist_at_z(d, norm_inv(p));
    if (!k || !k->nhealth[st]) return prior;
    if (k->nhealth[st] < m->min_samples) {
        double mx = sample_max(k->health[st], k->nhealth[st]);
        return mx > prior ? mx : prior;
    }
    return sample_pct(k->health[st], k->nhealth[st], p);
}

double kvg_autoscale_startup_lead(const struct kvg_autoscale_startup *m, const char *model,
                                  enum kvg_autoscale_node st)
{
    double h = kvg_autoscale_startup_pct(m, model, st, 0.9);
    const struct kvg_autoscale_startup_key *k = find(m, model);
    if (k && (unsigned)st < KVG_AUTOSCALE_NODE_STATES && k->nwarm[st])
        h += sample_pct(k->warm[st], k->nwarm[st], 0.9);
    return h;
}

double kvg_autoscale_startup_lead_mix(const struct kvg_autoscale_startup *m, const char *model,
                                      double cold_share, double fetch_share,
                                      enum kvg_autoscale_node rest_class)
{
    double rest = m->fast_share > 0 && m->fast_share <= 1 ? 1 - m->fast_share : 1;
    double share[KVG_AUTOSCALE_NODE_STATES] = {0};
    share[KVG_AUTOSCALE_COLD] = cold_share * rest;
    share[KVG_AUTOSCALE_FETCH] = fetch_share * rest;
    if ((unsigned)rest_class >= KVG_AUTOSCALE_NODE_STATES) rest_class = KVG_AUTOSCALE_WARM;
    share[rest_class] += (1 - cold_share - fetch_share) * rest;
    if (rest < 1 && (unsigned)m->fast_class < KVG_AUTOSCALE_NODE_STATES)
        share[m->fast_class] += m->fast_share;
    double lead = 0;
    for (int st = 0; st < KVG_AUTOSCALE_NODE_STATES; st++) {
        if (share[st] < 0.05) continue;
        double l = kvg_autoscale_startup_lead(m, model, (enum kvg_autoscale_node)st);
        if (l > lead) lead = l;
    }
    return lead;
}

double kvg_autoscale_startup_prior(const struct kvg_autoscale_startup *m, const char *model,
                                   enum kvg_autoscale_node st, double p)
{
    if ((unsigned)st >= KVG_AUTOSCALE_NODE_STATES) return NAN;
    const struct kvg_autoscale_startup_key *k;
    return dist_at_z(dist_of(m, model, st, &k), norm_inv(p <= 0 ? 1e-6 : p >= 1 ? 1 - 1e-6 : p));
}

double kvg_autoscale_startup_learned(const struct kvg_autoscale_startup *m, const char *model,
                                     enum kvg_autoscale_node st, double p)
{
    const struct kvg_autoscale_startup_key *k = find(m, model);
    if (!k || (unsigned)st >= KVG_AUTOSCALE_NODE_STATES || !k->nhealth[st]) return NAN;
    return sample_pct(k->health[st], k->nhealth[st], p);
}

uint32_t kvg_autoscale_startup_samples(const struct kvg_autoscale_startup *m, const char *model,
                                       enum kvg_autoscale_node st)
{
    const struct kvg_autoscale_startup_key *k = find(m, model);
    return k && (unsigned)st < KVG_AUTOSCALE_NODE_STATES ? k->nhealth[st] : 0;
}

double kvg_autoscale_startup_draw(const struct kvg_autoscale_startup *m, const char *model,
                                  enum kvg_autoscale_node st, struct kvg_rng *rng)
{
    const struct kvg_autoscale_startup_key *k;
    const struct kvg_autoscale_startup_dist *d = dist_of(m, model, st, &k);
    /* Box-Muller; u1 in (0, 1] so the log is finite. */
    double u1 = 1.0 - kvg_rng_double(rng), u2 = kvg_rng_double(rng);
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    return dist_at_z(d, z);
}

const char *kvg_autoscale_node_name(enum kvg_autoscale_node st)
{
    switch (st) {
    case KVG_AUTOSCALE_WARM:
        return "warm";
    case KVG_AUTOSCALE_COLD:
        return "cold";
    case KVG_AUTOSCALE_FETCH:
        return "fetch";
    case KVG_AUTOSCALE_ASLEEP1:
        return "asleep1";
    case KVG_AUTOSCALE_ASLEEP2:
        return "asleep2";
    case KVG_AUTOSCALE_RESTORE:
        return "restore";
    }
    return "?";
}

int kvg_autoscale_node_parse(const char *s)
{
    for (int i = 0; i < KVG_AUTOSCALE_NODE_STATES; i++)
        if (!strcmp(s, kvg_autoscale_node_name((enum kvg_autoscale_node)i))) return i;
    return -1;
}
