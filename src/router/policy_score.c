/* score: llm-d's scheduler profile, a weighted sum of scorers in [0, 1],
 * highest total wins, ties at random (the max-score picker):
 *   precise prefix  matched / request blocks from the precise index, a block
 *                   held in host memory counted 1 - host_tier_cost (llm-d
 *                   weighs tiers the same way: gpu 1, cpu 0.8); the 2025
 *                   llm-d (whose benchmark the presets reproduce) min-max
 *                   normalised it across pods instead: (s - min) / (max - min),
 *                   all equal -> 1 (prefix_minmax);
 *   approx prefix   matched / request blocks from an index of where this
 *                   router sent earlier requests (llm-d's estimated scorer);
 *   queue           (maxQ - q) / (maxQ - minQ) over candidates, all equal -> 1,
 *                   q = the engine's waiting requests (unknown counts as the
 *                   worst);
 *   kv utilisation  1 - kv_usage (unknown -> 0);
 *   load-aware      q = 0 -> 0.5, else 0.5 * (1 - min(q, T) / T);
 *   LoRA            b / (b + lora_blocks), b = the prompt's blocks, lora_blocks
 *                   what a cold load of the request's adapter costs there
 *                   (kvg_policy_lora_cost): 1 where it is loaded; only for
 *                   requests that name an adapter.
 * Presets: precise = 3 precise + 2 kv + 2 queue; estimated = 1 approx + 1 kv
 * + 1 queue; load = 1 queue + 1 kv. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "kv/approx.h"
#include "kv/index.h"
#include "router/policy.h"
#include "router/policy_kv.h"

struct scorep {
    struct kvg_policy base;
    struct kvg_kv_index *kv;      /* not owned */
    struct kvg_kv_approx *approx; /* owned, for the approximate prefix scorer */
    double wp, wa, wq, wk, wl;
    int minmax;
    uint32_t load_t;
    const char *name;
    struct kvg_policy_opts o; /* a copy, for the LoRA cost */
};

static int select_score(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                        const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct scorep *s = (struct scorep *)p;
    if (n == 0) return KVG_ENOWORKER;
    double total[n];
    uint32_t pm[n], am[n];
    double q[n], kvu[n], qmin = INFINITY, qmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        struct kvg_engine_load l = kvg_worker_load(cand[i], ctx->now_ms, ctx->load_max_age_ms);
        q[i] = l.waiting; /* < 0 unknown: counted as the worst below */
        kvu[i] = l.kv_usage;
        if (q[i] >= 0 && q[i] < qmin) qmin = q[i];
        if (q[i] >= 0 && q[i] > qmax) qmax = q[i];
        total[i] = 0;
    }
    double pc[n]; /* precise matches weighed by tier */
    if (s->wp > 0) kvg_policy_matched(s->kv, NULL, cand, n, ctx, s->o.host_tier_cost, pm, pc);
    if (s->wa > 0) kvg_policy_matched(NULL, s->approx, cand, n, ctx, 0, am, NULL);
    double nb = ctx->nblocks ? (double)ctx->nblocks : 1;
    double lora[n];
    kvg_policy_lora_cost(&s->o, cand, n, ctx, lora);
    double lb = ctx->block_size ? (double)ctx->ntokens / ctx->block_size : 0;
    if (lb < 1) lb = 1;
    double pmin = INFINITY, pmax = -INFINITY;
    for (size_t i = 0; s->wp > 0 && i < n; i++) {
        if (pc[i] < pmin) pmin = pc[i];
        if (pc[i] > pmax) pmax = pc[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (s->wp > 0) {
            double sc = s->minmax ? (pmax > pmin ? (pc[i] - pmin) / (pmax - pmin) : 1.0)
                                  : fmin(1.0, pc[i] / nb);
            total[i] += s->wp * sc;
        }
        if (s->wa > 0) total[i] += s->wa * fmin(1.0, am[i] / nb);
        if (s->wq > 0) {
            double sc = q[i] < 0 ? 0 : (qmax > qmin ? (qmax - q[i]) / (qmax - qmin) : 1.0);
            total[i] += s->wq * sc;
        }
        if (s->wk > 0) total[i] += s->wk * (kvu[i] < 0 ? 0 : 1.0 - fmin(1.0, kvu[i]));
        if (s->wl > 0) {
            double sc = q[i] < 0    ? 0
                        : q[i] == 0 ? 0.5
                                    : 0.5 * (1.0 - fmin(q[i], s->load_t) / s->load_t);
            total[i] += s->wl * sc;
        }
        if (s->o.w_lora > 0 && ctx->lora.len) total[i] += s->o.w_lora * (lb / (lb + lora[i]));
        if (ex && ex->scores) {
            if (ctx->lora.len) ex->scores[i].lora_cost = lora[i];
            ex->scores[i].matched_blocks = s->wp > 0   ? (double)pm[i]
                                           : s->wa > 0 ? (double)am[i]
                                                       : -1;
            ex->scores[i].waiting = q[i];
            ex->scores[i].kv_usage = kvu[i];
            ex->scores[i].score = total[i];
        }
    }
    int best = -1;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (best < 0 || total[i] > total[best]) {
            best = (int)i;
            ties = 1;
        } else if (total[i] == total[best] && kvg_rng_below(ctx->rng, ++ties) == 0) {
            best = (int)i;
        }
    }
    if (s->wa > 0 && !ctx->dry_run) kvg_policy_record(s->approx, cand[best], ctx);
    if (ex) snprintf(ex->note, sizeof ex->note, "%s: score %.3f", s->name, total[best]);
    return best;
}

/* As a pick of w: the approximate prefix scorer's index records it (the
 * precise scorer reads w's events). */
static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct scorep *s = (struct scorep *)p;
    if (s->wa > 0) kvg_policy_record(s->approx, w, ctx);
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    struct scorep *s = (struct scorep *)p;
    if (s->approx && w->slot >= 0) kvg_kv_approx_remove_worker(s->approx, (uint32_t)w->slot);
}

static void destroy(struct kvg_policy *p)
{
    struct scorep *s = (struct scorep *)p;
    kvg_kv_approx_free(s->approx);
    free(s);
}

static int reads_events(const struct kvg_policy *p)
{
    return ((const struct scorep *)p)->wp > 0;
}

static const struct kvg_policy_ops ops = {.name = "score",
                                          .wants_tokens = 1,
                                          .select = select_score,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .reads_events = reads_events,
                                          .place = place_on};

static int make(const struct kvg_policy_opts *o, const char *name, double wp, double wa, double wq,
                double wk, double wl, struct kvg_policy **out)
{
    struct scorep *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->base.ops = &ops;
    s->name = name;
    s->kv = o->kv;
    s->wp = wp;
    s->wa = wa;
    s->wq = wq;
    s->wk = wk;
    s->wl = wl;
    s->minmax = o->prefix_minmax;
    s->load_t = o->load_threshold ? o->load_threshold : 128;
    s->o = *o;
    if (wp > 0 && !s->kv) {
        /* No engine events: the precise scorer has nothing to read. Use what
         * the router routed instead, and say so in explanations. */
        s->wa += wp;
        s->wp = 0;
    }
    if (s->wa > 0) {
        struct kvg_kv_approx_opts ao = {.max_workers = KVG_POLICY_MAX_SLOTS,
                                        .ttl_ms = 1u << 30, /* LRU-bounded, not timed */
                                        .max_blocks = o->approx_capacity * 64};
        int rc = kvg_kv_approx_new(&ao, &s->approx);
        if (rc) {
            free(s);
            return rc;
        }
    }
    *out = &s->base;
    return 0;
}

int kvg_policy_score_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, "score", o->w_prefix_precise, o->w_prefix_approx, o->w_queue, o->w_kv_util,
                o->w_load, out);
}

int kvg_policy_precise_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, "precise", 3, 0, 2, 2, 0, out);
}

int kvg_policy_estimated_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, "estimated", 0, 1, 1, 1, 0, out);
}

int kvg_policy_load_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, "load", 0, 0, 1, 1, 0, out);
}
