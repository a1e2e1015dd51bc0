/* The BPE model: one pre-tokenized word in, ids out.
 *
 * Semantics are HF tokenizers' (models/bpe): start from one symbol per
 * character (byte-level: per byte), with <0xXX> byte fallback and the unknown
 * token (fused or not) for characters missing from the vocabulary; then
 * repeatedly apply the lowest-ranked merge present, the leftmost one on a tie;
 * with ignore_merges, a word that is itself in the vocabulary is one token.
 *
 * Speed: merges are an open-addressing table of (left id, right id); short
 * words (nearly all) merge in small arrays by rescanning the ranks, which
 * beats a heap below a few dozen symbols; long words (runs of spaces, base64)
 * use a binary heap with lazy invalidation, O(n log n). Results of words up
 * to 24 bytes / 8 ids are kept in a shared cache: a direct-mapped table of
 * 64-byte entries, each guarded by a sequence counter (a seqlock), so that
 * readers never write shared memory and a writer that finds an entry busy
 * simply skips caching. No allocation per word: work arrays live in the
 * per-call scratch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

#define SMALL_WORD 48

int kvg__tok_cache_alloc(struct kvg_tok *tok, uint32_t entries)
{
    free(tok->cache);
    tok->cache = NULL;
    tok->cache_mask = 0;
    if (entries == 0) return 0;
    tok->cache = aligned_alloc(64, (size_t)entries * sizeof *tok->cache);
    if (!tok->cache) return -ENOMEM;
    for (uint32_t i = 0; i < entries; i++)
        for (int k = 0; k < 8; k++) atomic_init(&tok->cache[i].w[k], 0);
    tok->cache_mask = entries - 1;
    return 0;
}

static inline uint64_t cache_hash(const uint64_t k[3], size_t n)
{
    uint64_t h = (k[0] ^ (n * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ k[1] ^ (h >> 31)) * 0x94D049BB133111EBull;
    h = (h ^ k[2] ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

static int cache_get(const struct kvg_tok *tok, const uint64_t k[3], size_t n, uint64_t h,
                     struct kvg_tok_ids *out)
{
    struct kvg_tok_cache_entry *e = &tok->cache[h & tok->cache_mask];
    uint64_t m1 = atomic_load_explicit(&e->w[0], memory_order_acquire);
    if ((m1 & 1) || ((m1 >> 32) & 0xFF) != n) return 0;
    uint64_t d[7];
    for (int i = 0; i < 7; i++) d[i] = atomic_load_explicit(&e->w[i + 1], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&e->w[0], memory_order_relaxed) != m1) return 0;
    if (d[0] != k[0] || d[1] != k[1] || d[2] != k[2]) return 0;
    size_t nids = (m1 >> 40) & 0xFF;
    if (out->n + nids > out->cap && kvg__tok_ids_grow(out, nids)) return -ENOMEM;
    for (size_t i = 0; i < nids; i++) out->v[out->n++] = (uint32_t)(d[3 + i / 2] >> (32 * (i & 1)));
    return 1;
}

static void cache_put(const struct kvg_tok *tok, const uint64_t k[3], size_t n, uint64_t h,
                      const uint32_t *ids, size_t nids)
{
    struct kvg_tok_cache_entry *e = &tok->cache[h & tok->cache_mask];
    uint64_t m = atomic_load_explicit(&e->w[0], memory_order_relaxed);
    if (m & 1) return; /* another writer is in it: skip rather than wait */
    uint32_t seq = (uint32_t)m;
    uint64_t busy = (m & ~(uint64_t)0xFFFFFFFF) | (uint32_t)(seq + 1);
    if (!atomic_compare_exchange_strong_explicit(&e->w[0], &m, busy, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    uint64_t d[7] = {k[0], k[1], k[2], 0, 0, 0, 0};
    for (size_t i = 0; i < nids; i++) d[3 + i / 2] |= (uint64_t)ids[i] << (32 * (i & 1));
    for (int i = 0; i < 7; i++) atomic_store_explicit(&e->w[i + 1], d[i], memory_order_relaxed);
    uint64_t meta = (uint32_t)(seq + 2) | ((uint64_t)n << 32) | ((uint64_t)nids << 40);
    atomic_store_explicit(&e->w[0], meta, memory_order_release);
}

static int reserve_work(struct kvg_tok_scratch *s, size_t m)
{
    if (m <= s->bpe_cap) return 0;
    size_t cap = s->bpe_cap ? s->bpe_cap : 256;
    while (cap < m) cap *= 2;
    uint32_t *sym = realloc(s->sym, cap * sizeof *sym);
    if (!sym) return -ENOMEM;
    s->sym = sym;
    uint32_t *rank = realloc(s->rank, cap * sizeof *rank);
    if (!rank) return -ENOMEM;
    s->rank = rank;
    uint32_t *mid = realloc(s->mid, cap * sizeof *mid);
    if (!mid) return -ENOMEM;
    s->mid = mid;
    int32_t *prev = realloc(s->prev, cap * sizeof *prev);
    if (!prev) return -ENOMEM;
    s->prev = prev;
    int32_t *next = realloc(s->next, cap * sizeof *next);
    if (!next) return -ENOMEM;
    s->next = next;
    uint64_t *heap = realloc(s->heap, 3 * cap * sizeof *heap);
    if (!heap) return -ENOMEM;
    s->heap = heap;
    s->bpe_cap = cap;
    return 0;
}

static inline void pair_rank(const struct kvg_tok_mmap *mm, uint32_t a, uint32_t b, uint32_t *rank,
                             uint32_t *mid)
{
    const struct kvg_tok_mslot *sl = kvg_tok_mmap_get(mm, a, b);
    *rank = sl ? sl->rank : UINT32_MAX;
    *mid = sl ? sl->id : 0;
}

static size_t merge_small(const struct kvg_tok_mmap *mm, uint32_t *sym, uint32_t *rank,
                          uint32_t *mid, size_t m)
{
    for (size_t i = 0; i + 1 < m; i++) pair_rank(mm, sym[i], sym[i + 1], &rank[i], &mid[i]);
    while (m > 1) {
        uint32_t best = UINT32_MAX;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; i++)
            if (rank[i] < best) {
                best = rank[i];
                bi = i;
            }
        if (best == UINT32_MAX) break;
        sym[bi] = mid[bi];
        /* Drop symbol bi+1; pair j (j > bi) becomes old pair j+1. */
        memmove(&sym[bi + 1], &sym[bi + 2], (m - bi - 2) * sizeof *sym);
        if (m >= bi + 3) {
            memmove(&rank[bi + 1], &rank[bi + 2], (m - bi - 3) * sizeof *rank);
            memmove(&mid[bi + 1], &mid[bi + 2], (m - bi - 3) * sizeof *mid);
        }
        m--;
        if (bi > 0) pair_rank(mm, sym[bi - 1], sym[bi], &rank[bi - 1], &mid[bi - 1]);
        if (bi + 1 < m) pair_rank(mm, sym[bi], sym[bi + 1], &rank[bi], &mid[bi]);
    }
    return m;
}

/* Min-heap of (rank << 32 | position): lowest rank first, leftmost on ties. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = v;
    return top;
}

static size_t merge_heap(const struct kvg_tok_mmap *mm, struct kvg_tok_scratch *s, uint32_t *sym,
                         size_t m)
{
    int32_t *prev = s->prev, *next = s->next;
    uint64_t *heap = s->heap;
    size_t hn = 0;
    for (size_t i = 0; i < m; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < m ? (int32_t)(i + 1) : -1;
    }
    for (size_t i = 0; i + 1 < m; i++) {
        const struct kvg_tok_mslot *sl = kvg_tok_mmap_get(mm, sym[i], sym[i + 1]);
        if (sl) heap_push(heap, &hn, (uint64_t)sl->rank << 32 | i);
    }
    while (hn) {
        uint64_t top = heap_pop(heap, &hn);
        uint32_t rank = (uint32_t)(top >> 32);
        int32_t p = (int32_t)(uint32_t)top, q = next[p];
        /* Stale entries: p was merged away, or its pair changed since. */
        if (prev[p] == -2 || q < 0) continue;
        const struct kvg_tok_mslot *sl = kvg_tok_mmap_get(mm, sym[p], sym[q]);
        if (!sl || sl->rank != rank) continue;
        sym[p] = sl->id;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        prev[q] = -2;
        if (prev[p] >= 0) {
            sl = kvg_tok_mmap_get(mm, sym[prev[p]], sym[p]);
            if (sl) heap_push(heap, &hn, (uint64_t)sl->rank << 32 | (uint32_t)prev[p]);
        }
        if (next[p] >= 0) {
            sl = kvg_tok_mmap_get(mm, sym[p], sym[next[p]]);
            if (sl) heap_push(heap, &hn, (uint64_t)sl->rank << 32 | (uint32_t)p);
        }
    }
    size_t w = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) sym[w++] = sym[i];
    return w;
}

size_t kvg__tok_bpe_merge(const struct kvg_tok *tok, struct kvg_tok_scratch *s, uint32_t *syms,
                          size_t m, int force_heap)
{
    if (m < 2 || !tok->merges.slots) return m;
    if (m <= SMALL_WORD && !force_heap) return merge_small(&tok->merges, syms, s->rank, s->mid, m);
    return merge_heap(&tok->merges, s, syms, m);
}

/* Unknown-character handling shared by both modes (HF merge_word): a pending
 * unk is flushed when a known character follows or at the end; with fuse_unk
 * consecutive unknowns share one. */
struct unk_state {
    int pending;
};

static int unk_char(const struct kvg_tok *tok, struct unk_state *u, uint32_t *sym, size_t *m)
{
    if (!tok->has_unk) return 0; /* no unk token: HF drops the character */
    if (tok->unk_id < 0) return KVG_ENOTFOUND;
    if (u->pending && !tok->fuse_unk) sym[(*m)++] = (uint32_t)tok->unk_id;
    u->pending = 1;
    return 0;
}

static void unk_flush(const struct kvg_tok *tok, struct unk_state *u, uint32_t *sym, size_t *m)
{
    if (u->pending) sym[(*m)++] = (uint32_t)tok->unk_id;
    u->pending = 0;
}

static int initial_symbols(const struct kvg_tok *tok, const char *w, size_t n, uint32_t *sym,
                           size_t *out_m)
{
    struct unk_state u = {0};
    size_t m = 0;
    int rc;
    if (tok->byte_level) {
        for (size_t i = 0; i < n; i++) {
            const struct kvg_tok_bsym *b = &tok->bsym[(uint8_t)w[i]];
            if (b->n && !b->fallback) {
                unk_flush(tok, &u, sym, &m);
                sym[m++] = b->ids[0];
            } else if (b->n) {
                for (int k = 0; k < b->n; k++) sym[m++] = b->ids[k];
            } else if ((rc = unk_char(tok, &u, sym, &m)))
                return rc;
        }
    } else {
        for (size_t i = 0; i < n;) {
            size_t l = kvg_utf8_len_fast((uint8_t)w[i], 1);
            int64_t id = kvg__tok_smap_get(&tok->vocab, tok->arena.p, w + i, l);
            if (id >= 0) {
                unk_flush(tok, &u, sym, &m);
                sym[m++] = (uint32_t)id;
            } else {
                int all = tok->byte_fallback;
                for (size_t k = 0; k < l && all; k++)
                    all = tok->fallback[(uint8_t)w[i + k]] != KVG_TOK_NONE;
                if (all)
                    for (size_t k = 0; k < l; k++) sym[m++] = tok->fallback[(uint8_t)w[i + k]];
                else if ((rc = unk_char(tok, &u, sym, &m)))
                    return rc;
            }
            i += l;
        }
    }
    unk_flush(tok, &u, sym, &m);
    *out_m = m;
    return 0;
}

int kvg__tok_bpe_word(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *w, size_t n)
{
    struct kvg_tok_ids *out = s->out;
    int rc;
    if (n == 0) return 0;
    if (tok->merges.count == 0 && !tok->ignore_merges) {
        /* No merges (builtin:bytes): the initial symbols are the answer. */
        size_t m;
        if ((rc = kvg__tok_ids_grow(out, 2 * n + 2))) return rc;
        if ((rc = initial_symbols(tok, w, n, out->v + out->n, &m))) return rc;
        out->n += m;
        return 0;
    }
    uint64_t key[3] = {0, 0, 0}, h = 0;
    int cacheable = tok->cache && n <= KVG_TOK_CACHE_BYTES;
    if (cacheable) {
        memcpy(key, w, n);
        h = cache_hash(key, n);
        if ((rc = cache_get(tok, key, n, h, out))) return rc < 0 ? rc : 0;
    }
    /* After the cache: a cached word's answer is the same either way, and a
     * cache probe is cheaper than a vocabulary lookup. */
    if (tok->ignore_merges) {
        const struct kvg_tok_smap *map = tok->byte_level ? &tok->raw : &tok->vocab;
        int64_t id = kvg__tok_smap_get(map, tok->arena.p, w, n);
        if (id >= 0) {
            uint32_t one = (uint32_t)id;
            if (cacheable) cache_put(tok, key, n, h, &one, 1);
            return kvg_tok_ids_push(out, one);
        }
    }
    /* At most 2 symbols per byte (a byte-level char's fallback bytes). */
    if ((rc = reserve_work(s, 2 * n + 2))) return rc;
    size_t m;
    if ((rc = initial_symbols(tok, w, n, s->sym, &m))) return rc;
    m = kvg__tok_bpe_merge(tok, s, s->sym, m, 0);
    if (out->n + m > out->cap && (rc = kvg__tok_ids_grow(out, m))) return rc;
    memcpy(out->v + out->n, s->sym, m * sizeof *s->sym);
    out->n += m;
    if (cacheable && m <= KVG_TOK_CACHE_IDS) cache_put(tok, key, n, h, s->sym, m);
    return 0;
}
