/* What the KV-aware policies share: how many leading blocks of the request
 * each candidate holds, from the precise index (engine events) or, when the
 * engines publish none, from an approximate index of what the router itself
 * sent where; and what the request's LoRA adapter costs on each. */
#include <string.h>

#include "kv/approx.h"
#include "kv/index.h"
#include "router/policy.h"
#include "router/policy_kv.h"

void kvg_policy_matched(struct kvg_kv_index *kv, struct kvg_kv_approx *approx,
                        struct kvg_worker *const *cand, size_t n, const struct kvg_route_ctx *ctx,
                        uint32_t *matched)
{
    uint32_t per_slot[KVG_POLICY_MAX_SLOTS];
    memset(matched, 0, n * sizeof *matched);
    if (!ctx->block_hashes || !ctx->nblocks) return;
    size_t nslots = KVG_POLICY_MAX_SLOTS;
    if (kv) {
        size_t mw = kvg_kv_index_max_workers(kv);
        if (mw < nslots) nslots = mw;
        kvg_kv_index_match(kv, ctx->block_hashes, ctx->nblocks, per_slot, nslots);
    } else if (approx) {
        kvg_kv_approx_match(approx, ctx->block_hashes, ctx->nblocks, per_slot, nslots, ctx->now_ms);
    } else {
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (cand[i]->slot >= 0 && (size_t)cand[i]->slot < nslots)
            matched[i] = per_slot[cand[i]->slot];
}

void kvg_policy_record(struct kvg_kv_approx *approx, struct kvg_worker *w,
                       const struct kvg_route_ctx *ctx)
{
    if (!approx || !ctx->block_hashes || !ctx->nblocks || w->slot < 0) return;
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
