/* prefix_affinity: kvgate's own KV-aware policy. Keep every prefix on the
 * worker that holds it, place new prefixes evenly, and leave a holder only
 * when it is past a load bound.
 *
 *  - hit: the best-matching worker holds at least min_match of the prompt
 *    (matched blocks from the precise index, or without engine events from
 *    what this router sent where). Among the workers with that best match
 *    and within the load bound, the one with the fewest requests in flight.
 *  - spill: every best holder is past the bound (in flight > bound x the
 *    candidates' mean + 1: consistent hashing with bounded loads, Mirrokni
 *    et al.): the least loaded candidate takes it.
 *  - miss: a new prefix. Among candidates within the bound, the worker on
 *    which this router placed the fewest prefixes (a count that halves every
 *    10 minutes), then the fewest in flight.
 *
 * Why placements and not load: the score presets and Dynamo's cost weigh
 * instantaneous load against overlap at every request, so a prefix drifts to
 * whichever worker looks idle at the moment it first arrives and stays there;
 * how many prefixes each worker ends up with is then left to chance, and the
 * workers with more of them run out of KV first (preemptions, a p99 tail).
 * Counting placements spreads prefixes like the bench's oracle does (the
 * groups of llm-d's benchmark evenly over the pods), assuming prefixes of
 * similar traffic; the load bound catches the hot ones. A spill places a
 * copy of the prefix, so it counts as a placement too. */
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

struct affp {
    struct kvg_policy base;
    struct kvg_kv_index *kv;      /* not owned */
    struct kvg_kv_approx *approx; /* owned; used when kv is NULL */
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
        inflight[i] = kvg_policy_inflight(cand[i]);
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
    if (best < 0 && hit) {
        why = "spill: every holder past the load bound, the least loaded";
        best = argmin2(inflight, placed, NULL, n, ctx->rng);
    } else if (best < 0) {
        why = "miss: the worker with the fewest prefixes placed";
        best = argmin2(placed, inflight, within, n, ctx->rng);
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
