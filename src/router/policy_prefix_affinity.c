/* prefix_affinity: kvgate's own KV-aware policy. Keep every prefix on the
 * worker that holds it, place new prefixes evenly, and leave a holder only
 * when it is past a load bound.
 *
 *  - hit: the best-matching worker holds at least min_match of the prompt
 *    (matched blocks from the precise index, or without engine events from
 *    what this router sent where). Among the workers with that best match
 *    and within the load bound, the one with the fewest requests in flight
 *    (this router's count, or the engine's when it says more:
 *    kvg_policy_shared_load, src/router/policy.h).
 *  - spill: every best holder is past the bound (in flight > bound x the
 *    candidates' mean + 1: consistent hashing with bounded loads, Mirrokni
 *    et al.): the least loaded candidate takes it (for a LoRA request,
 *    the least loaded within the bound with its adapter loaded, if any).
 *  - miss: a new prefix. Among candidates within the load bound whose
 *    placements (prefixes this router placed there, a count that halves
 *    every 10 minutes) are at most their mean + 1, the one the prefix's
 *    first block ranks first by rendezvous hashing over worker URLs (for a
 *    LoRA request, among those with its adapter loaded, if any).
 *
 * Why placements and not load: the score presets and Dynamo's cost weigh
 * instantaneous load against overlap at every request, so a prefix drifts to
 * whichever worker looks idle at the moment it first arrives and stays there;
 * how many prefixes each worker ends up with is then left to chance, and the
 * workers with more of them run out of KV first (preemptions, a p99 tail).
 * Counting placements spreads prefixes like the bench's oracle does (the
 * groups of llm-d's benchmark evenly over the pods), assuming prefixes of
 * similar traffic; the load bound catches the hot ones. A spill places a
 * copy of the prefix, so it counts as a placement too.
 *
 * Why rendezvous among the workers within one placement of the mean, not
 * the least placed: kvgate runs as replicas behind a balancer, each routing
 * alone. With the fewest placements (ties at random) every replica put a
 * new prefix on a worker of its own, and without engine events (each
 * replica's index is its own routing history) a group's requests spread
 * over up to N workers (bench/results/fleet.md). A key every replica
 * computes alike (the prompt's first block, which the LoRA adapter and cache
 * salt seed) picks the same worker on every replica without a word between
 * them, and the bound keeps each worker within one prefix of the mean
 * (consistent hashing with bounded loads; tests/unit/router/test_place.c:
 * 30 of 40 new prefixes on one worker in 3 replicas that met them in
 * different orders, 14 with the bound at the mean itself; 1.25 x mean + 1
 * agreed more but cost one router p90 TTFT on llmd-73 and agentic). */
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
#include "router/ring.h"

struct affp {
    struct kvg_policy base;
    struct kvg_kv_index *kv;      /* not owned */
    struct kvg_kv_approx *approx; /* owned; used when kv is NULL */
    struct kvg_policy_opts o;     /* a copy, for the LoRA cost (its kv is the one above) */
    double min_match, bound;
    pthread_mutex_t mu; /* guards placed[] (routing threads share the policy) */
    struct kvg_policy_placed placed[KVG_POLICY_MAX_SLOTS];
};

/* The decayed placement count of slot at now (mu held). */
static double placements(struct affp *a, int slot, uint64_t now)
{
    if (slot < 0 || slot >= KVG_POLICY_MAX_SLOTS) return 0;
    return kvg_policy_placements(&a->placed[slot], now);
}

static void place(struct affp *a, int slot, uint64_t now)
{
    if (slot < 0 || slot >= KVG_POLICY_MAX_SLOTS) return;
    kvg_policy_place(&a->placed[slot], now);
}

/* Index of the candidate with the smallest (k1, k2), ties at random; only
 * candidates with ok[i] set (all when ok is NULL). */
static int argmin2(const double *k1, const double *k2, const int *ok, size_t n, struct kvg_rng *rng)
{
    int best = -1;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (ok && !ok[i]) continue;
        if (best < 0 || k1[i] < k1[best] || (k1[i] == k1[best] && k2[i] < k2[best])) {
            best = (int)i;
            ties = 1;
        } else if (k1[i] == k1[best] && k2[i] == k2[best] && kvg_rng_below(rng, ++ties) == 0) {
            best = (int)i;
        }
    }
    return best;
}

/* The miss rule: rendezvous hashing of the prompt's first block over the
 * candidates within the load bound and the mean placements + 1; the rule
 * (fewest placements, then fewest in flight) without a block to key on.
 * -1 when no candidate is within the load bound. */
static int place_new(struct kvg_worker *const *cand, size_t n, const double *placed,
                     const double *inflight, const int *within, const struct kvg_route_ctx *ctx)
{
    if (!ctx->nblocks || !ctx->block_hashes) return argmin2(placed, inflight, within, n, ctx->rng);
    double mean = 0;
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
        if (within[i]) mean += placed[i], nw++;
    if (!nw) return -1;
    mean /= (double)nw;
    int best = -1;
    uint64_t bs = 0;
    for (size_t i = 0; i < n; i++) {
        /* (the epsilon: equal counts may average a rounding below themselves) */
        if (!within[i] || placed[i] > mean + 1 + 1e-9) continue;
        char buf[600];
        int len = snprintf(buf, sizeof buf, "%016llx:%s", (unsigned long long)ctx->block_hashes[0],
                           cand[i]->url);
        uint64_t h = kvg_ring_hash(buf, (size_t)KVG_MIN(len, (int)sizeof buf - 1));
        if (best < 0 || h > bs) best = (int)i, bs = h;
    }
    return best;
}

/* The candidates within the load bound that have a LoRA request's adapter
 * loaded (kvg_policy_lora_cost 0 there) in ok[]; 0 when the request is for
 * the base model or none is. A LoRA request's spill and a new prefix of it
 * go among these first: elsewhere the adapter loads cold and may evict
 * another (bench/results/fleet.md, "a load bound": multi-LoRA's cold loads
 * 572 -> 797 with the bound at 1.5 before this rule, 506 after it at 2). */
static int lora_within(const struct kvg_policy_opts *o, struct kvg_worker *const *cand, size_t n,
                       const int *within, const struct kvg_route_ctx *ctx, int *ok)
{
    if (!ctx->lora.len) return 0;
    double cost[n];
    if (kvg_policy_lora_cost(o, cand, n, ctx, cost) <= 0) return 0; /* loaded nowhere */
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= ok[i] = within[i] && cost[i] == 0;
    return any;
}

static int select_affinity(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                           const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct affp *a = (struct affp *)p;
    if (n == 0) return KVG_ENOWORKER;
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    uint32_t matched[n], mbest = 0;
    double inflight[n], placed[n], mean = 0;
    int holder[n], within[n];
    kvg_policy_matched(a->kv, a->approx, cand, n, ctx, 0, matched, NULL);
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < n; i++) {
        inflight[i] = kvg_policy_shared_load(cand[i], ctx);
        placed[i] = placements(a, cand[i]->slot, ctx->now_ms);
        mean += inflight[i];
        if (matched[i] > mbest) mbest = matched[i];
    }
    mean /= (double)n;
    int hit = mbest > 0 && (double)mbest * bs >= a->min_match * (double)ctx->ntokens;
    for (size_t i = 0; i < n; i++) {
        within[i] = inflight[i] <= a->bound * mean + 1;
        holder[i] = hit && matched[i] == mbest && within[i];
    }
    const char *why = "hit: the holder with the fewest in flight";
    int best = hit ? argmin2(inflight, placed, holder, n, ctx->rng) : -1;
    int lw[n], lora = best < 0 && lora_within(&a->o, cand, n, within, ctx, lw);
    if (best < 0 && hit) {
        why = lora ? "spill: every holder past the load bound, the least loaded with the adapter"
                   : "spill: every holder past the load bound, the least loaded";
        best = argmin2(inflight, placed, lora ? lw : NULL, n, ctx->rng);
    } else if (best < 0) {
        why = lora ? "miss: the prefix's rendezvous worker among the least placed with the adapter"
                   : "miss: the prefix's rendezvous worker among the least placed";
        best = place_new(cand, n, placed, inflight, lora ? lw : within, ctx);
        if (best < 0) best = argmin2(placed, inflight, NULL, n, ctx->rng);
    }
    if (!hit || !holder[best])
        if (!ctx->dry_run) place(a, cand[best]->slot, ctx->now_ms);
    pthread_mutex_unlock(&a->mu);
    for (size_t i = 0; ex && ex->scores && i < n; i++) {
        ex->scores[i].matched_blocks = matched[i];
        ex->scores[i].score = placed[i];
    }
    if (!a->kv && !ctx->dry_run) kvg_policy_record(a->approx, cand[best], ctx);
    if (ex) snprintf(ex->note, sizeof ex->note, "%s", why);
    return best;
}

/* As a pick of w: a placement unless w already held the prompt (a hit), and
 * in approximate mode the blocks recorded; the precise index learns them
 * from w's own events. */
static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct affp *a = (struct affp *)p;
    uint32_t bs = ctx->block_size ? ctx->block_size : 16, matched;
    kvg_policy_matched(a->kv, a->approx, &w, 1, ctx, 0, &matched, NULL);
    int held = matched > 0 && (double)matched * bs >= a->min_match * (double)ctx->ntokens;
    pthread_mutex_lock(&a->mu);
    if (!held) place(a, w->slot, ctx->now_ms);
    pthread_mutex_unlock(&a->mu);
    if (!a->kv) kvg_policy_record(a->approx, w, ctx);
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    struct affp *a = (struct affp *)p;
    if (w->slot < 0) return;
    if (a->approx) kvg_kv_approx_remove_worker(a->approx, (uint32_t)w->slot);
    if (w->slot < KVG_POLICY_MAX_SLOTS) {
        pthread_mutex_lock(&a->mu);
        a->placed[w->slot] =
            (struct kvg_policy_placed){0, 0}; /* a worker reusing the slot starts afresh */
        pthread_mutex_unlock(&a->mu);
    }
}

static void destroy(struct kvg_policy *p)
{
    struct affp *a = (struct affp *)p;
    kvg_kv_approx_free(a->approx);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static int reads_events(const struct kvg_policy *p)
{
    return ((const struct affp *)p)->kv != NULL;
}

static const struct kvg_policy_ops ops = {.name = "prefix_affinity",
                                          .wants_tokens = 1,
                                          .select = select_affinity,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .reads_events = reads_events,
                                          .place = place_on};

int kvg_policy_prefix_affinity_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    if (!(o->affinity_load_bound >= 1) || !(o->affinity_min_match >= 0) ||
        o->affinity_min_match > 1)
        return KVG_ECONFIG;
    struct affp *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    a->base.ops = &ops;
    a->kv = o->kv;
    a->o = *o;
    a->min_match = o->affinity_min_match;
    a->bound = o->affinity_load_bound;
    if (pthread_mutex_init(&a->mu, NULL)) {
        free(a);
        return -ENOMEM;
    }
    if (!a->kv) {
        struct kvg_kv_approx_opts ao = {.max_workers = KVG_POLICY_MAX_SLOTS,
                                        .ttl_ms = o->approx_ttl_ms};
        int rc = kvg_kv_approx_new(&ao, &a->approx);
        if (rc) {
            destroy(&a->base);
            return rc;
        }
    }
    *out = &a->base;
    return 0;
}
