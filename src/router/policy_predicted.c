/* predicted_latency: kvgate's latency-predicting policy. For each candidate
 *
 *   predicted TTFT = t0 + (prefill queued ahead + uncached prompt tokens) x spt
 *
 * where the prefill ahead is what the router has charged to the worker and
 * not yet seen a first token for (active_prefill_tokens), the uncached
 * tokens come from the precise index (or, without engine events, from what
 * this router sent where), and t0 (seconds) and spt (seconds per prefill
 * token) are learned online from the pool's answers: every first token
 * reports the work that was ahead of it and the time it took
 * (on_first_token). Before any has answered, --predict-prefill-tps.
 *
 * Why one rate for the pool, not one per worker: an answer's time holds
 * whatever was ahead of it that the router did not charge (the decode
 * steps it shared; with replicas behind a balancer, the other replicas'
 * prompts), so a worker's own rate was a load signal, stale, noisy and
 * different on every replica. Any difference between two workers' rates
 * decided every new prefix (equal work otherwise), and a holder whose
 * answers came slow lost its prompts to workers holding less of them: on
 * llm-d's workload one router spread its groups (p90 TTFT 6.44 s, 94.2%
 * cache hits; 0.079 s and 98.6% with one rate, seeds 1-3) and 8 replicas
 * lost half their hits; even engines twice as fast as the others
 * (hetero-fast), the case rates per worker were for, were served worse
 * with them (p90 0.179 against 0.093 s): bench/results/fleet.md,
 * 2026-12-07 (3). One rate ranks the candidates by their prefill tokens
 * alone, which the cache (the same index on every replica) and the
 * router's charges decide; a faster engine shows as its queue draining
 * sooner.
 *
 * The ITL bound: a worker's inter-token latency grows with the KV its
 * decoding requests read every step, so a candidate whose decode blocks in
 * flight (with this request's) exceed bound x the candidates' mean + this
 * request's blocks is not eligible (--predict-itl-bound, 2), nor one that
 * the engine's own KV capacity (when scraped) could not hold without
 * preempting. When none is eligible, all are.
 *
 * Lowest predicted TTFT wins; ties (equal predictions: an idle cluster, a
 * new prefix, the holders of a shared prompt) go to the less loaded worker
 * (kvg_policy_load_now: with its own counts alone, 8 replicas put chat's
 * sessions on the engines the others had just filled, p90 TTFT +16% over
 * one router; +2% with the others' counted), then at random.
 *
 * The learning: TTFT ~ t0 + work x spt. Requests with little work (under
 * one block) measure t0; the others measure spt = (ttft - t0) / work. Both
 * are exponential averages (weight 1/8), clamped to sane ranges so that one
 * odd answer (a retry, a stalled stream) moves them little. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "kv/approx.h"
#include "kv/index.h"
#include "router/policy.h"
#include "router/policy_kv.h"

#define ALPHA 0.125
#define SMALL_WORK 64 /* tokens: below this an answer measures t0 only */

struct learned {
    double t0, spt;
    uint32_t n; /* answers seen */
};

struct predp {
    struct kvg_policy base;
    struct kvg_kv_index *kv;      /* not owned */
    struct kvg_kv_approx *approx; /* owned; used when kv is NULL */
    double prior_spt, itl_bound;
    pthread_mutex_t mu; /* guards m */
    struct learned m;   /* the pool's (see the top) */
};

static int select_pred(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                       const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct predp *d = (struct predp *)p;
    if (n == 0) return KVG_ENOWORKER;
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    uint32_t matched[n];
    kvg_policy_matched(d->kv, d->approx, cand, n, ctx, 0, matched, NULL);
    double pred[n], blocks[n], mean_blocks = 0;
    pthread_mutex_lock(&d->mu);
    struct learned m = d->m;
    pthread_mutex_unlock(&d->mu);
    double total_blocks = ctx->ntokens ? ((double)ctx->ntokens + bs - 1) / bs : 0;
    for (size_t i = 0; i < n; i++) {
        double cached = (double)matched[i] * bs;
        double uncached = ctx->ntokens > cached ? (double)ctx->ntokens - cached : 0;
        double ahead = (double)atomic_load(&cand[i]->active_prefill_tokens);
        pred[i] = m.t0 + (ahead + uncached) * m.spt;
        double own = total_blocks > matched[i] ? total_blocks - matched[i] : 0;
        blocks[i] = (double)atomic_load(&cand[i]->active_decode_blocks) + own;
        mean_blocks += blocks[i];
    }
    mean_blocks /= (double)n;
    int ok[n], any = 0;
    for (size_t i = 0; i < n; i++) {
        struct kvg_engine_load l = kvg_worker_load(cand[i], ctx->now_ms, ctx->load_max_age_ms);
        double own = total_blocks > matched[i] ? total_blocks - matched[i] : 0;
        ok[i] = blocks[i] <= d->itl_bound * mean_blocks + own;
        /* Blocks the engine would need beyond what it has: preemptions. */
        if (l.kv_blocks && l.kv_usage >= 0 && l.kv_usage * (double)l.kv_blocks + own > l.kv_blocks)
            ok[i] = 0;
        any |= ok[i];
    }
    double load[n];
    for (size_t i = 0; i < n; i++) load[i] = kvg_policy_load_now(cand[i], ctx);
    int best = -1;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (any && !ok[i]) continue;
        if (best < 0 || pred[i] < pred[best] || (pred[i] == pred[best] && load[i] < load[best])) {
            best = (int)i;
            ties = 1;
        } else if (pred[i] == pred[best] && load[i] == load[best] &&
                   kvg_rng_below(ctx->rng, ++ties) == 0) {
            best = (int)i;
        }
    }
    for (size_t i = 0; ex && ex->scores && i < n; i++) {
        ex->scores[i].matched_blocks = matched[i];
        ex->scores[i].decode_blocks = blocks[i];
        ex->scores[i].score = pred[i];
    }
    if (!d->kv && !ctx->dry_run) kvg_policy_record(d->approx, cand[best], ctx);
    if (ex)
        snprintf(ex->note, sizeof ex->note, "predicted TTFT %.3f s%s", pred[best],
                 any ? "" : " (every candidate past the ITL bound)");
    return best;
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static void on_first_token(struct kvg_policy *p, struct kvg_worker *w, uint64_t work,
                           uint64_t ttft_ms)
{
    struct predp *d = (struct predp *)p;
    (void)w; /* every worker's answer teaches the pool's rate */
    double t = (double)ttft_ms / 1000.0;
    pthread_mutex_lock(&d->mu);
    struct learned *m = &d->m;
    if (work < SMALL_WORK) {
        m->t0 += ALPHA * (clamp(t, 0, 10) - m->t0);
    } else {
        /* The first answers move the estimate faster: no worker waits long
         * on a prior that may be 10x off. */
        double a = m->n < 8 ? 1.0 / (m->n + 1) : ALPHA;
        double obs = clamp((t - m->t0) / (double)work, 1e-8, 1e-1);
        m->spt += a * (obs - m->spt);
    }
    m->n++;
    pthread_mutex_unlock(&d->mu);
}

/* As a pick of w: in approximate mode its blocks are recorded (the precise
 * index learns them from w's events). */
static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct predp *d = (struct predp *)p;
    if (!d->kv) kvg_policy_record(d->approx, w, ctx);
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    struct predp *d = (struct predp *)p;
    if (w->slot < 0) return;
    if (d->approx) kvg_kv_approx_remove_worker(d->approx, (uint32_t)w->slot);
}

static void destroy(struct kvg_policy *p)
{
    struct predp *d = (struct predp *)p;
    kvg_kv_approx_free(d->approx);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static const struct kvg_policy_ops ops = {.name = "predicted_latency",
                                          .wants_tokens = 1,
                                          .select = select_pred,
                                          .on_first_token = on_first_token,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .place = place_on};

int kvg_policy_predicted_latency_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    if (!(o->predict_prefill_tps > 0) || !(o->predict_itl_bound >= 1)) return KVG_ECONFIG;
    struct predp *d = calloc(1, sizeof *d);
    if (!d) return -ENOMEM;
    d->base.ops = &ops;
    d->kv = o->kv;
    d->prior_spt = 1.0 / o->predict_prefill_tps;
    d->itl_bound = o->predict_itl_bound;
    d->m = (struct learned){0.02, d->prior_spt, 0};
    if (pthread_mutex_init(&d->mu, NULL)) {
        free(d);
        return -ENOMEM;
    }
    if (!d->kv) {
        struct kvg_kv_approx_opts ao = {.max_workers = KVG_POLICY_MAX_SLOTS,
                                        .ttl_ms = o->approx_ttl_ms};
        int rc = kvg_kv_approx_new(&ao, &d->approx);
        if (rc) {
            destroy(&d->base);
            return rc;
        }
    }
    *out = &d->base;
    return 0;
}
