/* Storage for the tokenizer: the string arena, the string -> id map of the
 * vocabulary, the (left, right) -> merge map of the BPE model, and the
 * growable per-call arrays (ids, spans, scratch).
 *
 * Both maps use open addressing with linear probing at a load factor under
 * one half: one or two cache lines per lookup, no allocation per entry, and
 * a single free at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

int64_t kvg__tok_arena_add(struct kvg_tok_arena *a, const char *s, size_t n)
{
    if (n > UINT32_MAX - a->len) return KVG_ETOOBIG; /* offsets are 32-bit */
    if (a->len + n > a->cap) {
        size_t cap = a->cap ? a->cap : 4096;
        while (cap < a->len + n) cap *= 2;
        char *p = realloc(a->p, cap);
        if (!p) return -ENOMEM;
        a->p = p;
        a->cap = cap;
    }
    if (n && s) memcpy(a->p + a->len, s, n);
    int64_t off = (int64_t)a->len;
    a->len += n;
    return off;
}

int64_t kvg__tok_arena_str(struct kvg_tok_arena *a, const char *s, size_t n)
{
    int64_t off = kvg__tok_arena_add(a, s, n);
    if (off < 0) return off;
    int64_t z = kvg__tok_arena_add(a, "", 1);
    return z < 0 ? z : off;
}

uint32_t kvg__tok_hash(const char *s, size_t n)
{
    return (uint32_t)XXH3_64bits(s, n);
}

static uint32_t table_size(size_t expected)
{
    uint32_t size = 16;
    while (size < expected * 2 + 16) size *= 2;
    return size;
}

int kvg__tok_smap_init(struct kvg_tok_smap *m, size_t expected)
{
    uint32_t size = table_size(expected);
    m->slots = malloc((size_t)size * sizeof *m->slots);
    if (!m->slots) return -ENOMEM;
    for (uint32_t i = 0; i < size; i++) m->slots[i].id = KVG_TOK_NONE;
    m->mask = size - 1;
    m->count = 0;
    return 0;
}

void kvg__tok_smap_free(struct kvg_tok_smap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->mask = m->count = 0;
}

static int smap_grow(struct kvg_tok_smap *m)
{
    struct kvg_tok_smap bigger;
    int rc = kvg__tok_smap_init(&bigger, (size_t)(m->mask + 1));
    if (rc) return rc;
    for (uint32_t i = 0; i <= m->mask; i++) {
        struct kvg_tok_slot *s = &m->slots[i];
        if (s->id == KVG_TOK_NONE) continue;
        uint32_t j = s->hash & bigger.mask;
        while (bigger.slots[j].id != KVG_TOK_NONE) j = (j + 1) & bigger.mask;
        bigger.slots[j] = *s;
        bigger.count++;
    }
    free(m->slots);
    *m = bigger;
    return 0;
}

int kvg__tok_smap_put(struct kvg_tok_smap *m, const char *arena, uint32_t off, uint32_t len,
                      uint32_t id)
{
    if ((m->count + 1) * 2 > m->mask + 1) {
        int rc = smap_grow(m);
        if (rc) return rc;
    }
    uint32_t h = kvg__tok_hash(arena + off, len), i = h & m->mask;
    for (;;) {
        struct kvg_tok_slot *s = &m->slots[i];
        if (s->id == KVG_TOK_NONE) {
            *s = (struct kvg_tok_slot){.hash = h, .id = id, .off = off, .len = len};
            m->count++;
            return 0;
        }
        if (s->hash == h && s->len == len && !memcmp(arena + s->off, arena + off, len)) {
            s->id = id;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
}

int64_t kvg__tok_smap_get(const struct kvg_tok_smap *m, const char *arena, const char *key,
                          size_t n)
{
    if (!m->slots) return -1;
    uint32_t h = kvg__tok_hash(key, n), i = h & m->mask;
    for (;;) {
        const struct kvg_tok_slot *s = &m->slots[i];
        if (s->id == KVG_TOK_NONE) return -1;
        if (s->hash == h && s->len == n && !memcmp(arena + s->off, key, n)) return s->id;
        i = (i + 1) & m->mask;
    }
}

/* The merge table is probed for every pair of every uncached word: denser
 * (load up to 0.7) means fewer cache misses than shorter probe runs save. */
static uint32_t merge_table_size(size_t expected)
{
    uint32_t size = 16;
    while ((size_t)size * 7 < expected * 10 + 16) size *= 2;
    return size;
}

int kvg__tok_mmap_init(struct kvg_tok_mmap *m, size_t expected)
{
    uint32_t size = merge_table_size(expected);
    m->slots = malloc((size_t)size * sizeof *m->slots);
    if (!m->slots) return -ENOMEM;
    for (uint32_t i = 0; i < size; i++) m->slots[i].key = UINT64_MAX;
    m->mask = size - 1;
    m->count = 0;
    return 0;
}

void kvg__tok_mmap_free(struct kvg_tok_mmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->mask = m->count = 0;
}

static int mmap_grow(struct kvg_tok_mmap *m)
{
    struct kvg_tok_mmap bigger;
    int rc = kvg__tok_mmap_init(&bigger, (size_t)(m->mask + 1) * 7 / 10 + 1);
    if (rc) return rc;
    for (uint32_t i = 0; i <= m->mask; i++) {
        struct kvg_tok_mslot *s = &m->slots[i];
        if (s->key == UINT64_MAX) continue;
        uint32_t j = (uint32_t)((s->key * 0x9E3779B97F4A7C15ull) >> 32) & bigger.mask;
        while (bigger.slots[j].key != UINT64_MAX) j = (j + 1) & bigger.mask;
        bigger.slots[j] = *s;
        bigger.count++;
    }
    free(m->slots);
    *m = bigger;
    return 0;
}

int kvg__tok_mmap_put(struct kvg_tok_mmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id)
{
    if ((size_t)(m->count + 1) * 10 > (size_t)(m->mask + 1) * 7) {
        int rc = mmap_grow(m);
        if (rc) return rc;
    }
    uint64_t key = ((uint64_t)a << 32) | b;
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    for (;;) {
        struct kvg_tok_mslot *s = &m->slots[i];
        if (s->key == UINT64_MAX) {
            *s = (struct kvg_tok_mslot){.key = key, .rank = rank, .id = id};
            m->count++;
            return 0;
        }
        if (s->key == key) {
            s->rank = rank;
            s->id = id;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
}

int kvg__tok_ids_grow(struct kvg_tok_ids *a, size_t more)
{
    size_t cap = a->cap ? a->cap : 64;
    while (cap < a->n + more) cap *= 2;
    uint32_t *v = realloc(a->v, cap * sizeof *v);
    if (!v) return -ENOMEM;
    a->v = v;
    a->cap = cap;
    return 0;
}

int kvg__tok_spans_push(struct kvg_tok_spans *sp, size_t a, size_t b, int32_t id, int m)
{
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 64;
        struct kvg_tok_span *v = realloc(sp->v, cap * sizeof *v);
        if (!v) return -ENOMEM;
        sp->v = v;
        sp->cap = cap;
    }
    sp->v[sp->n++] = (struct kvg_tok_span){.a = a, .b = b, .id = id, .m = m};
    return 0;
}

int kvg__tok_scratch_init(struct kvg_tok_scratch *s, size_t input_len)
{
    memset(s, 0, sizeof *s);
    /* Normalizers and Metaspace can grow the text (NFD, Prepend, Replace with
     * a longer content); past 16x something is wrong with the input. */
    s->limit = input_len * 16 + 65536;
    for (int i = 0; i < 2; i++) kvg_buf_init(&s->norm[i], s->limit);
    for (int i = 0; i < KVG_TOK_MAX_PRE; i++) kvg_buf_init(&s->pre[i], s->limit);
    s->md = pcre2_match_data_create(1, NULL);
    return s->md ? 0 : -ENOMEM;
}

void kvg__tok_scratch_free(struct kvg_tok_scratch *s)
{
    for (int i = 0; i < 2; i++) kvg_buf_free(&s->norm[i]);
    for (int i = 0; i < KVG_TOK_MAX_PRE; i++) kvg_buf_free(&s->pre[i]);
    for (int i = 0; i < KVG_TOK_MAX_PRE + 2; i++) free(s->spans[i].v);
    if (s->md) pcre2_match_data_free(s->md);
    free(s->sym);
    free(s->rank);
    free(s->mid);
    free(s->prev);
    free(s->next);
    free(s->heap);
    memset(s, 0, sizeof *s);
}
