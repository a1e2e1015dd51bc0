/* Helpers of the KV-aware policies (kv_aware, score); see policy_kv.c. */
#ifndef KVG_ROUTER_POLICY_KV_H
#define KVG_ROUTER_POLICY_KV_H

#include <stdint.h>

#include "base/err.h"
#include "router/policy.h"

#define KVG_POLICY_MAX_SLOTS 4096

struct kvg_kv_approx;

/* matched[i] = leading blocks of ctx->block_hashes that cand[i] holds on
 * any memory tier: from kv when non-NULL, else from approx, else 0.
 * credit (nullable) gets what they save in prefill blocks: a GPU block 1, a
 * host-memory block 1 - host_cost (it comes back over PCIe), a block on a
 * slower tier 0 (disk and shared tiers are not weighed yet: a miss). The
 * approximate index knows no tiers: its blocks count as GPU blocks. */
void kvg_policy_matched(struct kvg_kv_index *kv, struct kvg_kv_approx *approx,
                        struct kvg_worker *const *cand, size_t n, const struct kvg_route_ctx *ctx,
                        double host_cost, uint32_t *matched, double *credit);
/* LoRA: cost[i] = what running the request's adapter (ctx->lora) costs on
 * cand[i], in prefill-block equivalents (policy.h, lora_load_cost): 0 for a
 * base-model request or where the adapter is loaded. Returns how many
 * candidates have it loaded. */
int kvg_policy_lora_cost(const struct kvg_policy_opts *o, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, double *cost);
/* Approximate mode: remember that the request's blocks went to w. */
void kvg_policy_record(struct kvg_kv_approx *approx, struct kvg_worker *w,
                       const struct kvg_route_ctx *ctx);

/* Prefixes this router placed on a worker, a count that halves every
 * KVG_POLICY_PLACED_HALF_LIFE_MS: how new prefixes are spread evenly
 * (prefix_affinity's misses, kv_aware's ties). The caller guards it. */
#define KVG_POLICY_PLACED_HALF_LIFE_MS (600.0 * 1000)
struct kvg_policy_placed {
    double count;
    uint64_t at_ms; /* when count was last brought up to date */
};
/* The decayed count at now. */
double kvg_policy_placements(const struct kvg_policy_placed *p, uint64_t now);
/* One more placement at now. */
void kvg_policy_place(struct kvg_policy_placed *p, uint64_t now);

#endif
