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
    /* Per tier, the set of the block before (KVG_KV_NIL: no node; UNSEEN
     * before the first) and whether a candidate of the last level held it;
     * `shrunk`: whether the last level lost candidates since. When every
     * tier names the set it named the block before, every level's
     * candidates are in its union already (they were intersected with it)
     * and nobody drops out; a tier's "used" is the same unless candidates
     * dropped out since it was computed. */
    enum { UNSEEN = KVG_KV_NIL - 1 };
    uint32_t prev[KVG_KV_MATCH_LEVELS];
    int prev_used[KVG_KV_MATCH_LEVELS] = {0}, shrunk = 1;
    for (uint32_t l = 0; l < ntabs; l++) prev[l] = UNSEEN;
    size_t i = 0;
    for (; i < n && any; i++) {
        const uint64_t *bits[KVG_KV_MATCH_LEVELS];
        int same = 1;
        for (uint32_t l = 0; l < ntabs; l++) {
            const struct kvg_kv_tab *t = tabs[l];
            uint32_t ni = t->n_nodes ? kvg_kv_tab_find_node(t, seq[i]) : KVG_KV_NIL;
            struct kvg_kv_node *nd = ni == KVG_KV_NIL ? NULL : kvg_kv_tab_node(t, ni);
            uint32_t s = nd ? nd->set : KVG_KV_NIL;
            bits[l] = nd ? kvg_kv_tab_set_bits(t, s) : none;
            if (s != prev[l] || shrunk) {
                uint64_t used = 0;
                for (uint32_t j = 0; j < words && nd; j++) used |= bits[l][j] & cand[last][j];
                prev_used[l] = used != 0;
            }
            same &= s == prev[l];
            prev[l] = s;
            if (stamp_used && prev_used[l] &&
                atomic_load_explicit(&nd->used, memory_order_relaxed) != stamp)
                atomic_store_explicit(&nd->used, stamp, memory_order_relaxed);
        }
        shrunk = 0;
        if (same) continue;
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
        shrunk = 1;
        any = 0;
        for (uint32_t j = 0; j < words; j++) {
            uint64_t acc = 0;
            for (uint32_t l = 0; l < ntabs; l++) {
                acc |= bits[l][j];
                uint64_t keep = acc & cand[l][j];
                kvg_kv_put_bits(out + l * stride + j * 64, cand[l][j] & ~keep, (uint32_t)i);
                cand[l][j] = keep;
            }
            any |= cand[last][j];
        }
    }
    for (uint32_t l = 0; l < ntabs; l++)
        for (uint32_t j = 0; j < words; j++)
            kvg_kv_put_bits(out + l * stride + j * 64, cand[l][j], (uint32_t)i);
    uint32_t best = 0;
    for (size_t w = 0; w < nslots; w++)
        if (out[last * stride + w] > best) best = out[last * stride + w];
    return best;
}
