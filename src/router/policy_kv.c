/* What the KV-aware policies share: how many leading blocks of the request
 * each candidate holds, from the precise index (engine events) or, when the
 * engines publish none, from an approximate index of what the router itself
 * sent where; and what the request's LoRA adapter costs on each. */
#include <math.h>
#include <string.h>

#include "kv/approx.h"
#include "kv/index.h"
#include "router/policy.h"
#include "router/policy_kv.h"

void kvg_policy_matched(struct kvg_kv_index *kv, struct kvg_kv_approx *approx,
                        struct kvg_worker *const *cand, size_t n, const struct kvg_route_ctx *ctx,
                        double host_cost, uint32_t *matched, double *credit)
{
    memset(matched, 0, n * sizeof *matched);
    if (credit) memset(credit, 0, n * sizeof *credit);
    if (!ctx->block_hashes || !ctx->nblocks) return;
    /* Only the slots of these candidates: the lookup's buffers stay small. */
    size_t nslots = 0;
    for (size_t i = 0; i < n; i++)
        if (cand[i]->slot >= 0 && (size_t)cand[i]->slot + 1 > nslots)
            nslots = (size_t)cand[i]->slot + 1;
    if (nslots > KVG_POLICY_MAX_SLOTS) nslots = KVG_POLICY_MAX_SLOTS;
    if (kv) {
        struct kvg_kv_tier_match tm[nslots ? nslots : 1];
        size_t mw = kvg_kv_index_max_workers(kv);
        if (mw < nslots) nslots = mw;
        if (kvg_kv_index_match_tiers(kv, ctx->block_hashes, ctx->nblocks, tm, nslots) < 0) return;
        for (size_t i = 0; i < n; i++) {
            if (cand[i]->slot < 0 || (size_t)cand[i]->slot >= nslots) continue;
            const struct kvg_kv_tier_match *t = &tm[cand[i]->slot];
            matched[i] = t->gpu + t->host + t->other;
            if (credit) credit[i] = t->gpu + t->host * (1.0 - host_cost);
        }
        return;
    }
    if (!approx) return;
    uint32_t per_slot[nslots ? nslots : 1];
    if (ctx->nowait)
        kvg_kv_approx_match_nowait(approx, ctx->block_hashes, ctx->nblocks, per_slot, nslots,
                                   ctx->now_ms);
    else
        kvg_kv_approx_match(approx, ctx->block_hashes, ctx->nblocks, per_slot, nslots, ctx->now_ms);
    for (size_t i = 0; i < n; i++) {
        if (cand[i]->slot < 0 || (size_t)cand[i]->slot >= nslots) continue;
        matched[i] = per_slot[cand[i]->slot];
        if (credit) credit[i] = matched[i];
    }
}

void kvg_policy_record(struct kvg_kv_approx *approx, struct kvg_worker *w,
                       const struct kvg_route_ctx *ctx)
{
    if (!approx || !ctx->block_hashes || !ctx->nblocks || w->slot < 0) return;
    if (ctx->nowait && kvg_kv_approx_record_nowait(approx, (uint32_t)w->slot, ctx->block_hashes,
                                                   ctx->nblocks, ctx->now_ms) != KVG_ENOTFOUND)
        return;
    /* A worker's first record opens its slot (once: the loop may wait then). */
    if (kvg_kv_approx_record(approx, (uint32_t)w->slot, ctx->block_hashes, ctx->nblocks,
                             ctx->now_ms) == KVG_ENOTFOUND &&
        kvg_kv_approx_add_worker(approx, (uint32_t)w->slot) >= 0)
        kvg_kv_approx_record(approx, (uint32_t)w->slot, ctx->block_hashes, ctx->nblocks,
                             ctx->now_ms);
}

int kvg_policy_lora_cost(const struct kvg_policy_opts *o, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, double *cost)
{
    memset(cost, 0, n * sizeof *cost);
    if (!ctx->lora.len) return 0;
    int loaded[n], nactive[n], max_lora[n], holders = 0;
    for (size_t i = 0; i < n; i++) {
        loaded[i] = kvg_worker_lora_loaded(cand[i], ctx->lora.p, ctx->lora.len, ctx->now_ms,
                                           ctx->load_max_age_ms, &nactive[i], &max_lora[i]);
        holders += loaded[i];
    }
    uint32_t bs = ctx->block_size ? ctx->block_size : 16;
    double prompt_blocks = (double)ctx->ntokens / bs;
    for (size_t i = 0; i < n; i++) {
        if (loaded[i]) continue;
        double c = o->lora_load_cost;
        if (max_lora[i] > 0 && nactive[i] >= max_lora[i]) c *= 2; /* evicts another adapter */
        if (o->lora_max_workers && (uint32_t)holders >= o->lora_max_workers) c += prompt_blocks;
        cost[i] = c;
    }
    return holders;
}

double kvg_policy_placements(const struct kvg_policy_placed *p, uint64_t now)
{
    if (p->count == 0 || now <= p->at_ms) return p->count;
    return p->count * exp2(-(double)(now - p->at_ms) / KVG_POLICY_PLACED_HALF_LIFE_MS);
}

void kvg_policy_place(struct kvg_policy_placed *p, uint64_t now)
{
    p->count = kvg_policy_placements(p, now) + 1;
    p->at_ms = now;
}
