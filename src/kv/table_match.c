/* The longest-prefix walk over one table (see kvg_kv_tab_match in table.h):
 * the lookup every routing decision makes, so it is shaped around the cache
 * misses of a cold or half-warm index at fleet size (1,024 workers: a node
 * is 24 B, its holder set's bitmap 128 B, two more cache lines, which the
 * walk reads only where a block's set is not the one before it). */
#include <string.h>

#include "kv/table.h"

/* Staged look-ahead, in blocks: block i + PF_BUCKET has its bucket fetched,
 * i + PF_HEAD the first node of its chain (the bucket having arrived), and
 * i + PF_FIND is looked up for good, its set's bitmap lines fetched (when
 * the set is not the one fetched last), and the node index kept for when
 * the walk gets there. Each stage only touches lines the stage before
 * fetched, so several misses are in flight at once instead of bucket, node,
 * bitmap in a row per block. A set that fits in one line (set_size <= 64:
 * up to 320 slots) has no bitmap lines to fetch apart and the node is looked
 * up where the walk is: at 64 workers the staged lookup and the bitmap
 * prefetch measured slower (p50 3.1-3.6 us against 2.6-2.9 us). The
 * distances: bench/results/router.md, "Lookups (issue 19)". */
#define PF_BUCKET 32
#define PF_HEAD 16
#define PF_FIND 8
#define RING 16 /* looked-up nodes kept: > PF_FIND, a power of two */

/* The lines of words [lo, hi) of a bitmap: only those the walk reads. */
static inline void prefetch_bits(const uint64_t *bits, uint32_t lo, uint32_t hi)
{
    uintptr_t a = (uintptr_t)&bits[lo] & ~(uintptr_t)63;
    uintptr_t end = (uintptr_t)&bits[hi - 1];
    for (; a <= end; a += 64) __builtin_prefetch((const void *)a);
}

static inline void prefetch_head(const struct kvg_kv_tab *t, uint64_t seq)
{
    uint32_t h = t->nc.b[kvg_kv_bucket(seq, t->nc.mask)];
    if (h != KVG_KV_NIL) __builtin_prefetch(kvg_kv_tab_node(t, h));
}

/* Looks seq up and fetches the bitmap words the walk will read of its set,
 * unless that set was the last one fetched (*last). */
static inline uint32_t find_ahead(const struct kvg_kv_tab *t, uint64_t seq, uint32_t lo,
                                  uint32_t hi, uint32_t *last)
{
    uint32_t ni = kvg_kv_tab_find_node(t, seq);
    if (ni != KVG_KV_NIL) {
        uint32_t s = kvg_kv_tab_node(t, ni)->set;
        if (s != *last) prefetch_bits(kvg_kv_tab_set_bits(t, s), lo, hi);
        *last = s;
    }
    return ni;
}

uint32_t kvg_kv_tab_match(const struct kvg_kv_tab *t, const uint64_t *seq, size_t n, uint32_t *out,
                          size_t nslots, int stamp_used, uint32_t stamp)
{
    uint64_t cand[KVG_KV_MAX_WORKERS / 64];
    uint32_t found[RING], fetched = KVG_KV_NIL;
    if (nslots > t->max_workers) {
        memset(out + t->max_workers, 0, (nslots - t->max_workers) * sizeof *out);
        nslots = t->max_workers;
    }
    memset(out, 0, nslots * sizeof *out);
    uint32_t words = (uint32_t)((nslots + 63) / 64);
    for (uint32_t j = 0; j < words; j++) {
        cand[j] = t->live[j];
        if (j == words - 1 && nslots % 64) cand[j] &= (1ull << (nslots % 64)) - 1;
    }
    /* Candidates live in words [lo, hi); the others are zero and are neither
     * read from the nodes nor fetched: once a prompt's holders are a few
     * workers, a block costs one bitmap line instead of all of them. */
    uint32_t lo = 0, hi = words;
    while (lo < hi && !cand[lo]) lo++;
    while (hi > lo && !cand[hi - 1]) hi--;
    if (lo == hi) n = 0;
    for (size_t k = 0; k < PF_BUCKET && k < n; k++)
        __builtin_prefetch(&t->nc.b[kvg_kv_bucket(seq[k], t->nc.mask)]);
    size_t fd = t->set_size > 64 ? PF_FIND : 0;
    for (size_t k = fd; k < PF_HEAD && k < n; k++) prefetch_head(t, seq[k]);
    for (size_t k = 0; k < fd && k < n; k++) found[k] = find_ahead(t, seq[k], lo, hi, &fetched);
    /* The set the candidates were last intersected with: they are all in it,
     * so a block naming it again loses none and its bitmap is not read. */
    uint32_t within = KVG_KV_NIL;
    uint32_t best = 0;
    size_t i = 0;
    for (; i < n; i++) {
        if (i + PF_BUCKET < n)
            __builtin_prefetch(&t->nc.b[kvg_kv_bucket(seq[i + PF_BUCKET], t->nc.mask)]);
        if (i + PF_HEAD < n) prefetch_head(t, seq[i + PF_HEAD]);
        if (!fd)
            found[i % RING] = kvg_kv_tab_find_node(t, seq[i]);
        else if (i + fd < n)
            found[(i + fd) % RING] = find_ahead(t, seq[i + fd], lo, hi, &fetched);
        uint32_t ni = found[i % RING];
        if (ni == KVG_KV_NIL) break;
        struct kvg_kv_node *nd = kvg_kv_tab_node(t, ni);
        uint64_t lost = 0;
        const uint64_t *bits = NULL;
        if (nd->set != within) {
            /* Read-only first: on most blocks no candidate drops out, and
             * then nothing is stored. */
            bits = kvg_kv_tab_set_bits(t, nd->set);
            for (uint32_t j = lo; j < hi; j++) lost |= cand[j] & ~bits[j];
            within = nd->set;
        }
        if (lost) {
            for (uint32_t j = lo; j < hi; j++) {
                uint64_t keep = bits[j] & cand[j];
                kvg_kv_put_bits(out + j * 64, cand[j] & ~keep, (uint32_t)i);
                cand[j] = keep;
            }
            best = (uint32_t)i; /* values written only grow along the walk */
            while (lo < hi && !cand[lo]) lo++;
            while (hi > lo && !cand[hi - 1]) hi--;
            if (lo == hi) break;
        }
        if (stamp_used && atomic_load_explicit(&nd->used, memory_order_relaxed) != stamp)
            atomic_store_explicit(&nd->used, stamp, memory_order_relaxed);
    }
    if (lo < hi) {
        for (uint32_t j = lo; j < hi; j++) kvg_kv_put_bits(out + j * 64, cand[j], (uint32_t)i);
        best = (uint32_t)i;
    }
    return best;
}
