/* The longest-prefix walk over several tables at once: one per memory tier,
 * fastest first, answering "how far does each worker hold this prompt on
 * the GPU, on GPU or host memory, on any tier". See table.h. */
#include <string.h>

#include "kv/table.h"

uint32_t kvg_kv_tab_match_levels(const struct kvg_kv_tab *const *tabs, uint32_t ntabs,
                                 const uint64_t *seq, size_t n, uint32_t *out, size_t nslots,
                                 int stamp_used, uint32_t stamp)
{
    uint64_t cand[KVG_KV_MATCH_LEVELS][KVG_KV_MAX_WORKERS / 64];
    const struct kvg_kv_tab *t0 = tabs[0];
    size_t stride = nslots;
    memset(out, 0, (size_t)ntabs * stride * sizeof *out);
    if (nslots > t0->max_workers) nslots = t0->max_workers;
    uint32_t words = (uint32_t)((nslots + 63) / 64), last = ntabs - 1;
    uint64_t any = 0;
    for (uint32_t j = 0; j < words; j++) {
        uint64_t c = t0->live[j];
        if (j == words - 1 && nslots % 64) c &= (1ull << (nslots % 64)) - 1;
        for (uint32_t l = 0; l < ntabs; l++) cand[l][j] = c;
        any |= c;
    }
    static const uint64_t none[KVG_KV_MAX_WORKERS / 64];
    size_t i = 0;
    for (; i < n && any; i++) {
        const uint64_t *bits[KVG_KV_MATCH_LEVELS];
        for (uint32_t l = 0; l < ntabs; l++) {
            const struct kvg_kv_tab *t = tabs[l];
            uint32_t ni = t->n_nodes ? kvg_kv_tab_find_node(t, seq[i]) : KVG_KV_NIL;
            bits[l] = none;
            if (ni == KVG_KV_NIL) continue;
            struct kvg_kv_node *nd = kvg_kv_tab_node(t, ni);
            bits[l] = nd->bits;
            uint64_t used = 0;
            for (uint32_t j = 0; j < words; j++) used |= nd->bits[j] & cand[last][j];
            if (stamp_used && used &&
                atomic_load_explicit(&nd->used, memory_order_relaxed) != stamp)
                atomic_store_explicit(&nd->used, stamp, memory_order_relaxed);
        }
        /* Level l: the union of tiers 0..l must hold every block so far.
         * Read-only first: on most blocks nobody drops out at any level. */
        uint64_t lost = 0;
        for (uint32_t j = 0; j < words; j++) {
            uint64_t acc = 0;
            for (uint32_t l = 0; l < ntabs; l++) {
                acc |= bits[l][j];
                lost |= cand[l][j] & ~acc;
            }
        }
        if (!lost) continue;
        any = 0;
        for (uint32_t j = 0; j < words; j++) {
            uint64_t acc = 0;
            for (uint32_t l = 0; l < ntabs; l++) {
                acc |= bits[l][j];
                uint64_t keep = acc & cand[l][j];
                for (uint64_t drop = cand[l][j] & ~keep; drop; drop &= drop - 1)
                    out[l * stride + j * 64 + (uint32_t)__builtin_ctzll(drop)] = (uint32_t)i;
                cand[l][j] = keep;
            }
            any |= cand[last][j];
        }
    }
    for (uint32_t l = 0; l < ntabs; l++)
        for (uint32_t j = 0; j < words; j++)
            for (uint64_t c = cand[l][j]; c; c &= c - 1)
                out[l * stride + j * 64 + (uint32_t)__builtin_ctzll(c)] = (uint32_t)i;
    uint32_t best = 0;
    for (size_t w = 0; w < nslots; w++)
        if (out[last * stride + w] > best) best = out[last * stride + w];
    return best;
}
