/* kv_aware: NVIDIA Dynamo's KV router cost. For each candidate
 *   prefill_blocks = (prompt tokens - overlap_credit * block_size
 *                     [+ prefill tokens already assigned to it]) / block_size
 * overlap_credit = GPU blocks + host-tier blocks x (1 - host_tier_cost), as
 * Dynamo's newer cost credits a host hit (its host cache hit weight); the
 * blocks the request adds to the worker's KV are all but the held ones.
 * decode_blocks  = KV blocks its requests in flight added + the blocks this
 *                    request would add (blocks it already holds count once)
 *   cost = overlap_weight * (prefill_blocks + lora_blocks) + decode_blocks
 * (lower wins), lora_blocks being what a cold load of the request's LoRA
 * adapter costs there (kvg_policy_lora_cost: 0 where it is loaded).
 * overlap comes from the precise index (engine KV events) or, for engines
 * that publish none, from the approximate index of what the router sent
 * where (records live --router-ttl-secs). Temperature 0 takes the minimum;
 * ties (every new prefix ties on an idle pool) go to the fewer requests in
 * flight, then the lower engine load, then the fewer prefixes this router
 * placed there lately, then the smaller cached set, then at random: a coin
 * toss would stack prefixes on one engine, where they evict each other; T > 0
 * samples p ~ exp(-(c - min) / ((max - min) * T)). The charges (prefill until
 * the first token, blocks until the end) are the pool's (kvg_pick). */
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

struct kvaware {
    struct kvg_policy base;
    struct kvg_kv_index *kv;      /* not owned */
    struct kvg_kv_approx *approx; /* owned; used when kv is NULL */
    double w, temp;
    int track_prefill;
    struct kvg_policy_opts o; /* a copy (its kv pointer is the one above) */
    pthread_mutex_t mu;       /* guards placed[] (routing threads share the policy) */
    struct kvg_policy_placed placed[KVG_POLICY_MAX_SLOTS];
};

/* The tie-break keys of candidate i, compared in order (lower wins). */
struct tie_keys {
    double inflight, engine, placed, tree;
};

static int tie_less(const struct tie_keys *a, const struct tie_keys *b)
{
    if (a->inflight != b->inflight) return a->inflight < b->inflight;
    /* Engine load only when both report it fresh: unknown is no evidence. */
    if (a->engine >= 0 && b->engine >= 0 && a->engine != b->engine) return a->engine < b->engine;
    if (a->placed != b->placed) return a->placed < b->placed;
    return a->tree < b->tree;
}

static int tie_equal(const struct tie_keys *a, const struct tie_keys *b)
{
    return !tie_less(a, b) && !tie_less(b, a);
}

/* Among the candidates of minimal cost, the best by tie_keys, ties at random
 * (mu held). */
static int break_tie(struct kvaware *k, struct kvg_worker *const *cand, size_t n,
                     const double *cost, double cmin, const struct kvg_route_ctx *ctx)
{
    int best = -1;
    size_t ties = 0;
    struct tie_keys bk = {0};
    for (size_t i = 0; i < n; i++) {
        if (cost[i] > cmin) continue;
        int slot = cand[i]->slot;
        struct tie_keys ki = {
            .inflight = kvg_policy_inflight(cand[i]),
            .engine = kvg_policy_engine_load(cand[i], ctx),
            .placed = slot >= 0 && slot < KVG_POLICY_MAX_SLOTS
                          ? kvg_policy_placements(&k->placed[slot], ctx->now_ms)
                          : 0,
            .tree = k->kv && slot >= 0 ? (double)kvg_kv_index_worker_entries(k->kv, (uint32_t)slot)
                                       : 0};
        if (best < 0 || tie_less(&ki, &bk)) {
            best = (int)i;
            bk = ki;
            ties = 1;
        } else if (tie_equal(&ki, &bk) && kvg_rng_below(ctx->rng, ++ties) == 0) {
            best = (int)i;
        }
    }
    return best;
}

/* A pick of w, w holding `matched` leading blocks, places a prefix when w
 * holds less than half of the request (mu held). */
static void count_place(struct kvaware *k, struct kvg_worker *w, const struct kvg_route_ctx *ctx,
                        uint32_t matched)
{
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    if (w->slot >= 0 && w->slot < KVG_POLICY_MAX_SLOTS && 2.0 * matched * bs < (double)ctx->ntokens)
        kvg_policy_place(&k->placed[w->slot], ctx->now_ms);
}

static int select_kv(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                     const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct kvaware *k = (struct kvaware *)p;
    if (n == 0) return KVG_ENOWORKER;
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    uint32_t matched[n];
    double credit[n];
    kvg_policy_matched(k->kv, k->approx, cand, n, ctx, k->o.host_tier_cost, matched, credit);
    double lora[n];
    kvg_policy_lora_cost(&k->o, cand, n, ctx, lora);
    double cost[n], cmin = INFINITY, cmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double isl = (double)ctx->ntokens;
        double held = (double)matched[i] * bs, cached = credit[i] * bs;
        double prefill = isl > cached ? isl - cached : 0;
        double new_blocks = (isl > held ? isl - held : 0) / bs;
        if (k->track_prefill) prefill += (double)atomic_load(&cand[i]->active_prefill_tokens);
        double prefill_blocks = prefill / bs;
        double decode_blocks = (double)atomic_load(&cand[i]->active_decode_blocks) + new_blocks;
        cost[i] = k->w * (prefill_blocks + lora[i]) + decode_blocks;
        if (cost[i] < cmin) cmin = cost[i];
        if (cost[i] > cmax) cmax = cost[i];
        if (ex && ex->scores) {
            ex->scores[i].matched_blocks = matched[i];
            ex->scores[i].prefill_blocks = prefill_blocks;
            ex->scores[i].decode_blocks = decode_blocks;
            ex->scores[i].score = cost[i];
            if (ctx->lora.len) ex->scores[i].lora_cost = lora[i];
        }
    }
    int best = -1;
    if (k->temp > 0 && cmax > cmin) {
        double wsum = 0, wts[n];
        for (size_t i = 0; i < n; i++)
            wsum += wts[i] = exp(-(cost[i] - cmin) / ((cmax - cmin) * k->temp));
        double u = kvg_rng_double(ctx->rng) * wsum;
        for (size_t i = 0; i < n && best < 0; i++)
            if ((u -= wts[i]) <= 0) best = (int)i;
        if (best < 0) best = (int)n - 1;
    }
    pthread_mutex_lock(&k->mu);
    if (best < 0) best = break_tie(k, cand, n, cost, cmin, ctx);
    if (!ctx->dry_run) count_place(k, cand[best], ctx, matched[best]);
    pthread_mutex_unlock(&k->mu);
    if (!k->kv && !ctx->dry_run) kvg_policy_record(k->approx, cand[best], ctx);
    if (ex)
        snprintf(ex->note, sizeof ex->note, "%s, cost %.1f", k->kv ? "precise" : "approximate",
                 cost[best]);
    return best;
}

/* As a pick of w (policy.h, place). */
static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct kvaware *k = (struct kvaware *)p;
    uint32_t matched;
    kvg_policy_matched(k->kv, k->approx, &w, 1, ctx, 0, &matched, NULL);
    pthread_mutex_lock(&k->mu);
    count_place(k, w, ctx, matched);
    pthread_mutex_unlock(&k->mu);
    if (!k->kv) kvg_policy_record(k->approx, w, ctx); /* the precise index has w's events */
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    struct kvaware *k = (struct kvaware *)p;
    if (w->slot < 0) return;
    if (k->approx) kvg_kv_approx_remove_worker(k->approx, (uint32_t)w->slot);
    if (w->slot < KVG_POLICY_MAX_SLOTS) {
        pthread_mutex_lock(&k->mu);
        k->placed[w->slot] = (struct kvg_policy_placed){0, 0}; /* the slot's next worker */
        pthread_mutex_unlock(&k->mu);
    }
}

static void destroy(struct kvg_policy *p)
{
    struct kvaware *k = (struct kvaware *)p;
    kvg_kv_approx_free(k->approx);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

static int reads_events(const struct kvg_policy *p)
{
    return ((const struct kvaware *)p)->kv != NULL;
}

static const struct kvg_policy_ops ops = {.name = "kv_aware",
                                          .wants_tokens = 1,
                                          .select = select_kv,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .reads_events = reads_events,
                                          .place = place_on};

int kvg_policy_kv_aware_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct kvaware *k = calloc(1, sizeof *k);
    if (!k) return -ENOMEM;
    k->base.ops = &ops;
    k->kv = o->kv;
    k->w = o->overlap_weight;
    k->temp = o->temperature;
    k->track_prefill = o->track_prefill;
    k->o = *o;
    pthread_mutex_init(&k->mu, NULL);
    if (!k->kv) {
        struct kvg_kv_approx_opts ao = {.max_workers = KVG_POLICY_MAX_SLOTS,
                                        .ttl_ms = o->approx_ttl_ms};
        int rc = kvg_kv_approx_new(&ao, &k->approx);
        if (rc) {
            pthread_mutex_destroy(&k->mu);
            free(k);
            return rc;
        }
    }
    *out = &k->base;
    return 0;
}
