/* Holder sets: the bitmaps of worker slots that nodes name, one per
 * distinct content (see table.h). A set is found by the XOR of its slots'
 * keys, which one slot in or out changes in O(1), then compared word by
 * word. A node whose holders change moves to the set of its new holders;
 * the set it leaves is freed with its last node, or changed in place when
 * that node was its only one and no set has the new content yet. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv/table.h"

#define SET_ITEMS (1u << KVG_KV_SET_SHIFT)
#define S(t, s) kvg_kv_tab_set((t), (s))
#define BITS(t, s) kvg_kv_tab_set_bits((t), (s))

/* A slot's key: a fixed mix, so that XORs of different sets rarely agree.
 * An agreement costs only a bitmap compare; it is never taken for a match. */
static inline uint64_t slot_key(uint32_t w)
{
    uint64_t z = (uint64_t)w * 0x9E3779B97F4A7C15ull + 0x6A09E667F3BCC909ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int kvg_kv_tab_sets_init(struct kvg_kv_tab *t)
{
    size_t sz = 8 * (size_t)t->words + sizeof(struct kvg_kv_set);
    size_t align = t->words >= 8 ? 64 : 8; /* whole lines once a bitmap is one */
    t->set_size = (sz + align - 1) & ~(align - 1);
    t->set_free = KVG_KV_NIL;
    return kvg_kv_chain_init(&t->sc, 64);
}

void kvg_kv_tab_sets_free(struct kvg_kv_tab *t)
{
    for (uint32_t i = 0; i < t->n_spages; i++) free(t->spages[i]);
    free(t->spages);
    t->spages = NULL;
    t->n_spages = 0;
    kvg_kv_chain_free(&t->sc);
}

/* Pages are reserved ahead (kvg_kv_tab_set_reserve); only the sets ever
 * used are counted, the rest of a page not having been touched. */
size_t kvg_kv_tab_sets_bytes(const struct kvg_kv_tab *t)
{
    return (size_t)t->set_hw * t->set_size + (size_t)t->n_spages * sizeof(void *) +
           kvg_kv_chain_bytes(&t->sc);
}

int kvg_kv_tab_set_reserve(struct kvg_kv_tab *t, uint32_t nodes)
{
    while ((uint64_t)t->n_spages * SET_ITEMS < nodes) {
        uint8_t **p = realloc(t->spages, ((size_t)t->n_spages + 1) * sizeof *p);
        if (!p) return -ENOMEM;
        t->spages = p;
        void *pg = NULL;
        if (posix_memalign(&pg, 64, SET_ITEMS * t->set_size)) return -ENOMEM;
        p[t->n_spages++] = pg;
    }
    return 0;
}

static void set_migrate(struct kvg_kv_tab *t)
{
    struct kvg_kv_chain *c = &t->sc;
    for (int k = 0; k < 8 && c->ob; k++) {
        for (uint32_t i = c->ob[c->mpos], next; i != KVG_KV_NIL; i = next) {
            struct kvg_kv_set *x = S(t, i);
            next = x->next;
            uint32_t *h = &c->b[kvg_kv_bucket(x->hash, c->mask)];
            x->next = *h;
            *h = i;
        }
        kvg_kv_chain_done_bucket(c);
    }
}

static void set_link(struct kvg_kv_tab *t, uint32_t s)
{
    uint32_t *h = &t->sc.b[kvg_kv_bucket(S(t, s)->hash, t->sc.mask)];
    S(t, s)->next = *h;
    *h = s;
}

static int unlink_from(struct kvg_kv_tab *t, uint32_t *pp, uint32_t s)
{
    for (; *pp != KVG_KV_NIL; pp = &S(t, *pp)->next) {
        if (*pp == s) {
            *pp = S(t, s)->next;
            return 1;
        }
    }
    return 0;
}

static void set_unlink(struct kvg_kv_tab *t, uint32_t s)
{
    uint64_t h = S(t, s)->hash;
    if (!unlink_from(t, &t->sc.b[kvg_kv_bucket(h, t->sc.mask)], s)) {
        uint32_t *o = kvg_kv_chain_old(&t->sc, h);
        if (o) unlink_from(t, o, s);
    }
}

/* The live set equal to s's bitmap with w's bit flipped (s = NIL: empty),
 * whose hash is h and count cnt; KVG_KV_NIL if none. */
static uint32_t set_find(const struct kvg_kv_tab *t, uint32_t s, uint32_t w, uint64_t h,
                         uint32_t cnt)
{
    const uint64_t *sb = s == KVG_KV_NIL ? NULL : BITS(t, s);
    uint64_t flip = 1ull << (w % 64);
    for (int pass = 0; pass < 2; pass++) {
        const uint32_t *hp =
            pass ? kvg_kv_chain_old(&t->sc, h) : &t->sc.b[kvg_kv_bucket(h, t->sc.mask)];
        for (uint32_t i = hp ? *hp : KVG_KV_NIL; i != KVG_KV_NIL; i = S(t, i)->next) {
            const struct kvg_kv_set *x = S(t, i);
            if (x->hash != h || x->count != cnt) continue;
            const uint64_t *xb = BITS(t, i);
            uint32_t j = 0;
            for (; j < t->words; j++) {
                uint64_t want = (sb ? sb[j] : 0) ^ (j == w / 64 ? flip : 0);
                if (xb[j] != want) break;
            }
            if (j == t->words) return i;
        }
    }
    return KVG_KV_NIL;
}

static void set_release(struct kvg_kv_tab *t, uint32_t s)
{
    if (s == KVG_KV_NIL || --S(t, s)->refs) return;
    set_unlink(t, s);
    S(t, s)->next = t->set_free;
    t->set_free = s;
    t->n_sets--;
}

static uint32_t set_alloc(struct kvg_kv_tab *t)
{
    uint32_t s = t->set_free;
    if (s != KVG_KV_NIL) {
        t->set_free = S(t, s)->next;
        return s;
    }
    if ((uint64_t)t->set_hw >= (uint64_t)t->n_spages * SET_ITEMS) return KVG_KV_NIL;
    return t->set_hw++;
}

/* The move of one node from s to (s with w's bit flipped), whose count is
 * cnt (> 0). */
static uint32_t set_flip(struct kvg_kv_tab *t, uint32_t s, uint32_t w, uint32_t cnt)
{
    kvg_kv_chain_maybe_grow(&t->sc, t->n_sets + 1, 2);
    set_migrate(t);
    uint64_t h = (s == KVG_KV_NIL ? 0 : S(t, s)->hash) ^ slot_key(w);
    uint64_t flip = 1ull << (w % 64);
    uint32_t f = set_find(t, s, w, h, cnt);
    if (f != KVG_KV_NIL) {
        S(t, f)->refs++;
        set_release(t, s);
        return f;
    }
    if (s != KVG_KV_NIL && S(t, s)->refs == 1) { /* nobody else sees it change */
        set_unlink(t, s);
        BITS(t, s)[w / 64] ^= flip;
        S(t, s)->hash = h;
        S(t, s)->count = cnt;
        set_link(t, s);
        return s;
    }
    if ((f = set_alloc(t)) == KVG_KV_NIL) return KVG_KV_NIL;
    uint64_t *fb = BITS(t, f);
    if (s == KVG_KV_NIL)
        memset(fb, 0, 8 * (size_t)t->words);
    else
        memcpy(fb, BITS(t, s), 8 * (size_t)t->words);
    fb[w / 64] ^= flip;
    struct kvg_kv_set *x = S(t, f);
    x->hash = h;
    x->refs = 1;
    x->count = cnt;
    x->spare = 0;
    set_link(t, f);
    t->n_sets++;
    set_release(t, s);
    return f;
}

uint32_t kvg_kv_tab_set_add(struct kvg_kv_tab *t, uint32_t s, uint32_t w)
{
    return set_flip(t, s, w, (s == KVG_KV_NIL ? 0 : S(t, s)->count) + 1);
}

uint32_t kvg_kv_tab_set_del(struct kvg_kv_tab *t, uint32_t s, uint32_t w)
{
    if (S(t, s)->count == 1) {
        set_release(t, s);
        return KVG_KV_NIL;
    }
    /* Cannot fail: sets live only while named, and there is room for one
     * per node (kvg_kv_tab_set_reserve before every node is made). */
    return set_flip(t, s, w, S(t, s)->count - 1);
}

int kvg_kv_tab_sets_check(const struct kvg_kv_tab *t)
{
    uint32_t *refs = calloc((size_t)t->set_hw + 1, sizeof *refs);
    if (!refs) return -1;
    int bad = 0;
    for (uint32_t i = 0; i < t->node_hw && !bad; i++) {
        uint32_t s = kvg_kv_tab_node(t, i)->set;
        if (s == KVG_KV_NIL) continue; /* free node */
        if (s >= t->set_hw)
            bad = 1;
        else
            refs[s]++;
    }
    uint32_t live = 0;
    for (uint32_t s = 0; s < t->set_hw && !bad; s++) {
        if (!refs[s]) continue;
        live++;
        const struct kvg_kv_set *x = S(t, s);
        const uint64_t *b = BITS(t, s);
        uint64_t h = 0;
        uint32_t cnt = 0;
        for (uint32_t w = 0; w < t->words * 64; w++) {
            if (!(b[w / 64] >> (w % 64) & 1)) continue;
            if (w >= t->max_workers) bad = 1;
            h ^= slot_key(w);
            cnt++;
        }
        if (x->refs != refs[s] || x->hash != h || x->count != cnt || !cnt) bad = 1;
        /* In its chain, and the first set of this content found there. */
        uint32_t found = KVG_KV_NIL;
        for (int pass = 0; pass < 2 && found == KVG_KV_NIL; pass++) {
            const uint32_t *hp =
                pass ? kvg_kv_chain_old(&t->sc, h) : &t->sc.b[kvg_kv_bucket(h, t->sc.mask)];
            for (uint32_t i = hp ? *hp : KVG_KV_NIL; i != KVG_KV_NIL; i = S(t, i)->next) {
                if (S(t, i)->hash == h && S(t, i)->count == cnt &&
                    !memcmp(BITS(t, i), b, 8 * (size_t)t->words)) {
                    found = i;
                    break;
                }
            }
        }
        if (found != s) bad = 1; /* missing from its chain, or a duplicate before it */
    }
    if (live != t->n_sets) bad = 1;
    free(refs);
    return bad ? -1 : 0;
}
