/* The PD day's per-role profile, measured in advance as Dynamo's profiler
 * does: one prefill replica's highest input tokens/s whose TTFT p90 stays
 * within the TTFT target, and one decode replica's highest output tokens/s
 * whose ITL p90 stays within the ITL target. Each at the scenario's mean
 * ISL / OSL, on prompts that miss the cache, Poisson arrivals at a flat rate
 * (bisection), seeded. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale_int.h"
#include "bench/stats.h"

enum { CAL_STEPS = 10 };

/* One flat-rate run's requests on one engine. */
struct cal {
    struct kvg_sim *e;
    uint32_t *prompt;
    uint32_t isl, osl;
    int decode;
    double *arrival, *t_first, *t_last;
    uint32_t *ntok;
    size_t n, cap;
};

static int grow(struct cal *c)
{
    size_t cap = c->cap ? c->cap * 2 : 1024;
    double *a = realloc(c->arrival, cap * sizeof *a);
    if (!a) return -ENOMEM;
    c->arrival = a;
    double *f = realloc(c->t_first, cap * sizeof *f);
    if (!f) return -ENOMEM;
    c->t_first = f;
    double *l = realloc(c->t_last, cap * sizeof *l);
    if (!l) return -ENOMEM;
    c->t_last = l;
    uint32_t *k = realloc(c->ntok, cap * sizeof *k);
    if (!k) return -ENOMEM;
    c->ntok = k;
    c->cap = cap;
    return 0;
}

static int submit(struct cal *c, double t)
{
    int rc;
    if (c->n == c->cap && (rc = grow(c))) return rc;
    uint64_t id = c->n;
    /* A distinct first token gives every block its own hash: no hits. */
    c->prompt[0] = (uint32_t)(id % 0x7fffffffu) + 1;
    struct kvg_sim_request r = {.id = id,
                                .prompt = c->prompt,
                                .prompt_len = c->isl,
                                .max_tokens = c->decode ? c->osl : 1,
                                .ignore_eos = 1,
                                .arrival = t,
                                .remote_tokens = c->decode ? c->isl : 0};
    if ((rc = kvg_sim_submit(c->e, &r))) return rc;
    c->arrival[id] = t;
    c->t_first[id] = c->t_last[id] = INFINITY;
    c->ntok[id] = 0;
    c->n++;
    return 0;
}

static void account(struct cal *c, const struct kvg_sim_step *st, double t)
{
    for (size_t i = 0; i < st->n_updates; i++) {
        const struct kvg_sim_update *u = &st->updates[i];
        if (!(u->flags & KVG_SIM_UP_TOKEN) || u->id >= c->n) continue;
        if (!c->ntok[u->id]) c->t_first[u->id] = t;
        c->t_last[u->id] = t;
        c->ntok[u->id]++;
    }
}

/* Runs rate req/s for dur seconds on a fresh engine (seeded) and sets *p90
 * to the TTFT p90 (prefill) or the per-request mean ITL p90 (decode); a
 * request unfinished timeout_s after the last arrival counts as infinite. */
static int cal_run(const struct kvg_bench_scale_opts *o, int decode, double rate, double dur,
                   double *p90)
{
    struct cal c = {.decode = decode};
    c.isl = (uint32_t)lround(kvg__scale_isl_mean(o));
    c.osl = o->osl > 1 ? o->osl : 2;
    struct kvg_sim_config sc;
    kvg_sim_config_init(&sc, &o->profile);
    sc.seed = o->seed * 1000003ull + 17 + (uint64_t)decode;
    sc.emit_events = 0;
    int rc = kvg_sim_create(&sc, &c.e);
    if (rc) return rc;
    c.prompt = malloc(c.isl * sizeof *c.prompt);
    struct kvg_bench_samples s;
    kvg_bench_samples_init(&s);
    if (!c.prompt) rc = -ENOMEM;
    for (uint32_t i = 1; !rc && i < c.isl; i++) c.prompt[i] = 32 + i % 95;
    struct kvg_rng rng;
    kvg_rng_seed(&rng, o->seed * 7919 + 3 + (uint64_t)decode);
    double ta = -log(1 - kvg_rng_double(&rng)) / rate, busy = 0, end = dur + o->timeout_s;
    int stepping = 0;
    struct kvg_sim_step st;
    while (!rc) {
        if (stepping && (busy <= ta || ta >= dur)) {
            account(&c, &st, busy);
            stepping = 0;
            if (busy >= end) break;
            if (!kvg_sim_idle(c.e)) {
                kvg_sim_step(c.e, busy, &st);
                stepping = 1;
                busy += st.duration;
            }
        } else if (ta < dur) {
            if ((rc = submit(&c, ta))) break;
            if (!stepping) {
                kvg_sim_step(c.e, ta, &st);
                stepping = 1;
                busy = ta + st.duration;
            }
            ta += -log(1 - kvg_rng_double(&rng)) / rate;
        } else {
            break;
        }
    }
    for (size_t i = 0; !rc && i < c.n; i++) {
        double x = INFINITY;
        if (!decode && c.ntok[i])
            x = c.t_first[i] - c.arrival[i];
        else if (decode && c.ntok[i] == c.osl)
            x = (c.t_last[i] - c.t_first[i]) / (c.osl - 1);
        if (kvg_bench_samples_add(&s, x)) rc = -ENOMEM;
    }
    *p90 = c.n ? kvg_bench_samples_pct(&s, 90) : 0;
    kvg_bench_samples_free(&s);
    kvg_sim_free(c.e);
    free(c.prompt);
    free(c.arrival);
    free(c.t_first);
    free(c.t_last);
    free(c.ntok);
    return rc;
}

/* The highest rate in (0, hi] whose p90 is within target (bisection). */
static int bisect(const struct kvg_bench_scale_opts *o, int decode, double hi, double target,
                  double *rate, double *at)
{
    double lo = 0;
    *at = 0;
    for (int i = 0; i < CAL_STEPS; i++) {
        double mid = (lo + hi) / 2, p90;
        int rc = cal_run(o, decode, mid, 600, &p90);
        if (rc) return rc;
        if (p90 <= target)
            lo = mid, *at = p90;
        else
            hi = mid;
    }
    *rate = lo;
    return lo > 0 ? 0 : KVG_ECONFIG;
}

int kvg_bench_scale_pd_calibrate(const struct kvg_bench_scale_opts *o,
                                 struct kvg_bench_scale_pd_profile *out)
{
    memset(out, 0, sizeof *out);
    struct kvg_autoscale_profile b1;
    kvg__scale_derive_profile(o, 0, &b1);
    double isl = round(kvg__scale_isl_mean(o));
    double osl = o->osl > 1 ? o->osl : 2;
    out->batch1_prefill_tps = b1.prefill_tps;
    out->batch1_decode_tps = b1.decode_tps;
    /* Upper bounds: twice the batch-1 figures (batching amortizes the
     * fixed step cost, so the knee may lie above batch 1). */
    double rate;
    int rc = bisect(o, 0, 2 * b1.prefill_tps / isl, o->aopts.ttft_target_s, &rate,
                    &out->prefill_ttft_p90_s);
    if (rc) return rc;
    out->prefill_tps = rate * isl;
    rc =
        bisect(o, 1, 2 * b1.decode_tps / osl, o->aopts.itl_target_s, &rate, &out->decode_itl_p90_s);
    if (rc) return rc;
    out->decode_tps = rate * osl;
    return 0;
}
