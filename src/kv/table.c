/* Paged node/entry pools, per-worker LRU lists and hash chains, and the
 * longest-prefix walk; see table.h for the layout and why it is shaped so. */
#include "kv/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE_SHIFT KVG_KV_PAGE_SHIFT
#define PAGE_ITEMS (1u << PAGE_SHIFT)
#define HUGE (2u << 20)
#define MAX_NODES KVG_KV_NODE_MASK
#define MAX_ENTRIES 0xfffffff0u

#define N(t, i) kvg_kv_tab_node((t), (i))
#define E(t, i) kvg_kv_tab_entry((t), (i))

#define bucket kvg_kv_bucket

/* Big arrays are walked at random by every lookup: on 2 MB pages (where the
 * kernel allows transparent huge pages on request) a cold walk costs cache
 * misses but no TLB misses. Freed with free(). */
static void *big_alloc(size_t n)
{
    if (n < HUGE) return malloc(n);
    void *p = NULL;
    if (posix_memalign(&p, HUGE, (n + HUGE - 1) & ~(size_t)(HUGE - 1))) return NULL;
    madvise(p, (n + HUGE - 1) & ~(size_t)(HUGE - 1), MADV_HUGEPAGE);
    return p;
}

/* ---- incrementally doubling bucket arrays (see struct kvg_kv_chain) ---- */

int kvg_kv_chain_init(struct kvg_kv_chain *c, uint32_t nbuckets)
{
    memset(c, 0, sizeof *c);
    if (!(c->b = big_alloc((size_t)nbuckets * sizeof *c->b))) return -ENOMEM;
    memset(c->b, 0xff, (size_t)nbuckets * sizeof *c->b);
    c->mask = nbuckets - 1;
    return 0;
}

void kvg_kv_chain_free(struct kvg_kv_chain *c)
{
    free(c->b);
    free(c->ob);
    memset(c, 0, sizeof *c);
}

size_t kvg_kv_chain_bytes(const struct kvg_kv_chain *c)
{
    if (!c->b) return 0;
    return ((size_t)c->mask + 1 + (c->ob ? (size_t)c->omask + 1 : 0)) * sizeof(uint32_t);
}

/* Starts doubling once there are more than `load` items per bucket. A
 * failed allocation only leaves chains longer. */
void kvg_kv_chain_maybe_grow(struct kvg_kv_chain *c, uint32_t items, uint32_t load)
{
    if (c->ob || items <= (uint64_t)load * (c->mask + 1) || c->mask >= 0x3fffffff) return;
    uint32_t nmask = c->mask * 2 + 1;
    uint32_t *nb = big_alloc(((size_t)nmask + 1) * sizeof *nb);
    if (!nb) return;
    memset(nb, 0xff, ((size_t)nmask + 1) * sizeof *nb);
    c->ob = c->b;
    c->omask = c->mask;
    c->mpos = 0;
    c->b = nb;
    c->mask = nmask;
}

void kvg_kv_chain_done_bucket(struct kvg_kv_chain *c)
{
    c->ob[c->mpos] = KVG_KV_NIL;
    if (++c->mpos > c->omask) {
        free(c->ob);
        c->ob = NULL;
        c->mpos = 0;
    }
}

#define MIGRATE_STEPS 8 /* old buckets moved per write */

static void node_migrate(struct kvg_kv_tab *t)
{
    struct kvg_kv_chain *c = &t->nc;
    for (int s = 0; s < MIGRATE_STEPS && c->ob; s++) {
        for (uint32_t i = c->ob[c->mpos], next; i != KVG_KV_NIL; i = next) {
            struct kvg_kv_node *n = N(t, i);
            next = n->next;
            uint32_t *h = &c->b[bucket(n->key, c->mask)];
            n->next = *h;
            *h = i;
        }
        kvg_kv_chain_done_bucket(c);
    }
}

static void key_migrate(struct kvg_kv_tab *t, struct kvg_kv_chain *c)
{
    for (int s = 0; s < MIGRATE_STEPS && c->ob; s++) {
        for (uint32_t i = c->ob[c->mpos], next; i != KVG_KV_NIL; i = next) {
            struct kvg_kv_entry *e = E(t, i);
            next = e->chain;
            uint32_t *h = &c->b[bucket(kvg_kv_entry_key(e), c->mask)];
            e->chain = *h;
            *h = i;
        }
        kvg_kv_chain_done_bucket(c);
    }
}

/* ---- side maps: counters by key (duplicate entries, extra references) ---- */

static uint64_t dup_key(uint32_t node, uint32_t w)
{
    return (uint64_t)node << 32 | w | 1ull << 63;
}

/* (worker, engine key) folded into one non-zero key; a collision needs two
 * 63-bit mixes to agree. */
static uint64_t ref_key(uint32_t w, uint64_t key)
{
    uint64_t k = (key ^ ((uint64_t)w << 40 | w)) * 0x9E3779B97F4A7C15ull;
    return (k ^ k >> 29) | 1ull << 63;
}

static void cnt_free(struct kvg_kv_cnt *m)
{
    free(m->keys);
    free(m->cnt);
    memset(m, 0, sizeof *m);
}

static uint32_t cnt_slot(const struct kvg_kv_cnt *m, uint64_t k)
{
    uint32_t i = bucket(k, m->mask);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & m->mask;
    return i;
}

static int cnt_grow(struct kvg_kv_cnt *m)
{
    uint32_t omask = m->mask, nmask = m->keys ? omask * 2 + 1 : 15;
    uint64_t *ok = m->keys;
    uint32_t *oc = m->cnt;
    uint64_t *nk = calloc((size_t)nmask + 1, sizeof *nk);
    uint32_t *nc = calloc((size_t)nmask + 1, sizeof *nc);
    if (!nk || !nc) {
        free(nk);
        free(nc);
        return -ENOMEM;
    }
    m->keys = nk;
    m->cnt = nc;
    m->mask = nmask;
    if (ok) {
        for (uint32_t i = 0; i <= omask; i++) {
            if (!ok[i]) continue;
            uint32_t s = cnt_slot(m, ok[i]);
            nk[s] = ok[i];
            nc[s] = oc[i];
        }
    }
    free(ok);
    free(oc);
    return 0;
}

static int cnt_inc(struct kvg_kv_cnt *m, uint64_t k)
{
    if ((!m->keys || (m->n + 1) * 4 > (m->mask + 1) * 3) && cnt_grow(m)) return -ENOMEM;
    uint32_t s = cnt_slot(m, k);
    if (!m->keys[s]) {
        m->keys[s] = k;
        m->n++;
    }
    m->cnt[s]++;
    return 0;
}

/* Removes k's counter; returns what it was. */
static uint32_t cnt_del(struct kvg_kv_cnt *m, uint64_t k)
{
    if (!m->n) return 0;
    uint32_t s = cnt_slot(m, k), was = m->cnt[s];
    if (!m->keys[s]) return 0;
    /* Backward-shift deletion keeps linear probing correct without tombstones. */
    m->n--;
    uint32_t hole = s;
    for (uint32_t i = (s + 1) & m->mask; m->keys[i]; i = (i + 1) & m->mask) {
        uint32_t home = bucket(m->keys[i], m->mask);
        if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
            m->keys[hole] = m->keys[i];
            m->cnt[hole] = m->cnt[i];
            hole = i;
        }
    }
    m->keys[hole] = 0;
    m->cnt[hole] = 0;
    return was;
}

/* 1 if k had a count (now one fewer), 0 if it had none. */
static int cnt_dec(struct kvg_kv_cnt *m, uint64_t k)
{
    if (!m->n) return 0;
    uint32_t s = cnt_slot(m, k);
    if (!m->keys[s]) return 0;
    if (--m->cnt[s] == 0) cnt_del(m, k);
    return 1;
}

static size_t cnt_bytes(const struct kvg_kv_cnt *m)
{
    return m->keys ? ((size_t)m->mask + 1) * (sizeof(uint64_t) + sizeof(uint32_t)) : 0;
}

int kvg_kv_tab_init(struct kvg_kv_tab *t, uint32_t max_workers)
{
    memset(t, 0, sizeof *t);
    if (max_workers == 0 || max_workers > KVG_KV_MAX_WORKERS) return -EINVAL;
    t->max_workers = max_workers;
    t->words = (max_workers + 63) / 64;
    t->node_size = sizeof(struct kvg_kv_node);
    t->node_free = t->entry_free = KVG_KV_NIL;
    t->w = calloc(max_workers, sizeof *t->w);
    t->tail_stamp = calloc(max_workers, sizeof *t->tail_stamp);
    t->live = calloc(t->words, sizeof *t->live);
    if (kvg_kv_chain_init(&t->nc, 1024) || kvg_kv_tab_sets_init(t) || !t->w || !t->tail_stamp ||
        !t->live) {
        kvg_kv_tab_free(t);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < max_workers; i++) t->w[i].head = t->w[i].tail = KVG_KV_NIL;
    return 0;
}

void kvg_kv_tab_free(struct kvg_kv_tab *t)
{
    for (uint32_t i = 0; i < t->n_npages; i++) free(t->npages[i]);
    for (uint32_t i = 0; i < t->n_epages; i++) free(t->epages[i]);
    if (t->w)
        for (uint32_t i = 0; i < t->max_workers; i++) kvg_kv_chain_free(&t->w[i].kc);
    free(t->npages);
    free(t->epages);
    kvg_kv_chain_free(&t->nc);
    kvg_kv_tab_sets_free(t);
    free(t->w);
    free(t->tail_stamp);
    free(t->live);
    cnt_free(&t->dup);
    cnt_free(&t->refs);
    kvg_heap_free(&t->age);
    memset(t, 0, sizeof *t);
}

size_t kvg_kv_tab_bytes(const struct kvg_kv_tab *t)
{
    size_t b = sizeof *t;
    b += (size_t)t->n_npages * (PAGE_ITEMS * t->node_size + sizeof(void *));
    b += (size_t)t->n_epages * (PAGE_ITEMS * sizeof(struct kvg_kv_entry) + sizeof(void *));
    b += kvg_kv_chain_bytes(&t->nc) + kvg_kv_tab_sets_bytes(t);
    b += (size_t)t->max_workers * (sizeof *t->w + sizeof *t->tail_stamp);
    b += (size_t)t->words * 8;
    for (uint32_t i = 0; i < t->max_workers; i++) b += kvg_kv_chain_bytes(&t->w[i].kc);
    b += cnt_bytes(&t->dup) + cnt_bytes(&t->refs);
    if (t->age_on) b += (t->age.cap + 1) * t->age.size;
    return b;
}

/* Appends one page to a pool's page table. */
static int add_page(void ***pages, uint32_t *n, size_t page_bytes)
{
    void **p = realloc(*pages, ((size_t)*n + 1) * sizeof *p);
    if (!p) return -ENOMEM;
    *pages = p;
    if (!(p[*n] = big_alloc(page_bytes))) return -ENOMEM;
    (*n)++;
    return 0;
}

static uint32_t node_alloc(struct kvg_kv_tab *t)
{
    uint32_t i = t->node_free;
    if (i != KVG_KV_NIL) {
        t->node_free = N(t, i)->next;
        return i;
    }
    if (t->node_hw >= MAX_NODES) return KVG_KV_NIL;
    if ((t->node_hw >> PAGE_SHIFT) == t->n_npages &&
        add_page((void ***)&t->npages, &t->n_npages, PAGE_ITEMS * t->node_size))
        return KVG_KV_NIL;
    return t->node_hw++;
}

/* A free node names no set: kvg_kv_tab_sets_check tells them apart so. */
static void node_free(struct kvg_kv_tab *t, uint32_t i)
{
    struct kvg_kv_node *n = N(t, i);
    n->set = KVG_KV_NIL;
    n->next = t->node_free;
    t->node_free = i;
    t->n_nodes--;
}

static uint32_t entry_alloc(struct kvg_kv_tab *t)
{
    uint32_t i = t->entry_free;
    if (i != KVG_KV_NIL) {
        t->entry_free = E(t, i)->chain;
        return i;
    }
    if (t->entry_hw >= MAX_ENTRIES) return KVG_KV_NIL;
    if ((t->entry_hw >> PAGE_SHIFT) == t->n_epages &&
        add_page((void ***)&t->epages, &t->n_epages, PAGE_ITEMS * sizeof(struct kvg_kv_entry)))
        return KVG_KV_NIL;
    return t->entry_hw++;
}

int kvg_kv_tab_worker_open(struct kvg_kv_tab *t, uint32_t w)
{
    if (w >= t->max_workers) return -EINVAL;
    struct kvg_kv_wslot *ws = &t->w[w];
    if (ws->state == KVG_KV_W_LIVE) return -EEXIST;
    if (ws->state == KVG_KV_W_DRAINING) return -EBUSY;
    if (!ws->kc.b && kvg_kv_chain_init(&ws->kc, 16)) return -ENOMEM;
    ws->state = KVG_KV_W_LIVE;
    t->live[w / 64] |= 1ull << (w % 64);
    return 0;
}

void kvg_kv_tab_worker_close(struct kvg_kv_tab *t, uint32_t w)
{
    struct kvg_kv_wslot *ws = &t->w[w];
    kvg_kv_chain_free(&ws->kc);
    if (t->age_on && ws->tail != KVG_KV_NIL) t->age_slots--; /* its heap element goes stale */
    ws->head = ws->tail = KVG_KV_NIL;
    ws->count = 0;
    ws->state = KVG_KV_W_FREE;
    t->live[w / 64] &= ~(1ull << (w % 64));
}

static inline uint32_t node_scan(const struct kvg_kv_tab *t, uint32_t i, uint64_t seq)
{
    while (i != KVG_KV_NIL) {
        const struct kvg_kv_node *n = N(t, i);
        if (n->key == seq) return i;
        i = n->next;
    }
    return KVG_KV_NIL;
}

uint32_t kvg_kv_tab_find_node(const struct kvg_kv_tab *t, uint64_t seq)
{
    uint32_t i = node_scan(t, t->nc.b[bucket(seq, t->nc.mask)], seq);
    if (i == KVG_KV_NIL) {
        const uint32_t *o = kvg_kv_chain_old(&t->nc, seq);
        if (o) i = node_scan(t, *o, seq);
    }
    return i;
}

static uint32_t key_scan(const struct kvg_kv_tab *t, uint32_t i, uint64_t key, int want_last)
{
    uint32_t lo = (uint32_t)key, hi = (uint32_t)(key >> 32);
    while (i != KVG_KV_NIL) {
        const struct kvg_kv_entry *e = E(t, i);
        if (e->key_lo == lo && e->key_hi == hi && (!want_last || (e->node & KVG_KV_LAST))) return i;
        i = e->chain;
    }
    return KVG_KV_NIL;
}

/* Chain prefetches by depth: 0 fetches the bucket, d >= 1 walks the first
 * d - 1 items (fetched by the call of depth d - 1 a few keys earlier) and
 * fetches item d, unless the walk met the key or the end. A chain walk is a
 * series of dependent misses; issued at decreasing distances ahead, the
 * depths overlap them with the work on the keys in between. Hints only: a
 * key still in an old bucket (mid-doubling) is not followed there. */
static uint32_t node_chain_at(const struct kvg_kv_tab *t, uint64_t seq, uint32_t stop, int depth)
{
    uint32_t i = t->nc.b[bucket(seq, t->nc.mask)];
    for (int d = 1; d < depth && i != KVG_KV_NIL; d++) {
        const struct kvg_kv_node *n = N(t, i);
        if (i == stop || n->key == seq) return KVG_KV_NIL;
        i = n->next;
    }
    return i;
}

void kvg_kv_tab_prefetch_node(const struct kvg_kv_tab *t, uint64_t seq, int depth)
{
    if (!depth) {
        __builtin_prefetch(&t->nc.b[bucket(seq, t->nc.mask)]);
        return;
    }
    uint32_t i = node_chain_at(t, seq, KVG_KV_NIL, depth);
    if (i != KVG_KV_NIL) __builtin_prefetch(N(t, i));
}

static uint32_t key_chain_at(const struct kvg_kv_tab *t, const struct kvg_kv_chain *c, uint64_t key,
                             int depth)
{
    uint32_t i = c->b[bucket(key, c->mask)];
    for (int d = 1; d < depth && i != KVG_KV_NIL; d++) {
        const struct kvg_kv_entry *e = E(t, i);
        if (kvg_kv_entry_key(e) == key) return KVG_KV_NIL;
        i = e->chain;
    }
    return i;
}

void kvg_kv_tab_prefetch_key(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int depth)
{
    const struct kvg_kv_chain *c = &t->w[w].kc;
    if (!c->b) return;
    if (!depth) {
        __builtin_prefetch(&c->b[bucket(key, c->mask)]);
        return;
    }
    uint32_t i = key_chain_at(t, c, key, depth);
    if (i != KVG_KV_NIL) __builtin_prefetch(E(t, i));
}

void kvg_kv_tab_prefetch_remove(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int stage)
{
    const struct kvg_kv_chain *c = &t->w[w].kc;
    if (!c->b) return;
    if (stage < KVG_KV_PF_KEY_DEPTH) {
        kvg_kv_tab_prefetch_key(t, w, key, stage);
        return;
    }
    uint32_t ei = key_scan(t, c->b[bucket(key, c->mask)], key, 0);
    if (ei == KVG_KV_NIL) return;
    const struct kvg_kv_entry *e = E(t, ei);
    uint32_t ni = e->node & KVG_KV_NODE_MASK;
    const struct kvg_kv_node *n = N(t, ni);
    if (stage == KVG_KV_PF_KEY_DEPTH) { /* what kvg_kv_tab_remove writes */
        __builtin_prefetch(n);
        if (e->prev != KVG_KV_NIL) __builtin_prefetch(E(t, e->prev));
        if (e->next != KVG_KV_NIL) __builtin_prefetch(E(t, e->next));
        return;
    }
    /* The node's chain up to the node: its unlink walks it. */
    int depth = stage - KVG_KV_PF_KEY_DEPTH - 1;
    if (!depth) {
        __builtin_prefetch(&t->nc.b[bucket(n->key, t->nc.mask)]);
        return;
    }
    uint32_t i = node_chain_at(t, n->key, ni, depth);
    if (i != KVG_KV_NIL) __builtin_prefetch(N(t, i));
}

uint32_t kvg_kv_tab_key_find_at(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, uint64_t seq)
{
    const struct kvg_kv_chain *c = &t->w[w].kc;
    if (!c->b) return KVG_KV_NIL;
    uint32_t lo = (uint32_t)key, hi = (uint32_t)(key >> 32);
    for (int pass = 0; pass < 2; pass++) {
        const uint32_t *h = pass ? kvg_kv_chain_old(c, key) : &c->b[bucket(key, c->mask)];
        for (uint32_t i = h ? *h : KVG_KV_NIL; i != KVG_KV_NIL; i = E(t, i)->chain) {
            const struct kvg_kv_entry *e = E(t, i);
            if (e->key_lo == lo && e->key_hi == hi && N(t, e->node & KVG_KV_NODE_MASK)->key == seq)
                return i;
        }
    }
    return KVG_KV_NIL;
}

uint32_t kvg_kv_tab_key_all(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, uint32_t *out,
                            uint32_t max)
{
    const struct kvg_kv_chain *c = &t->w[w].kc;
    if (!c->b) return 0;
    uint32_t lo = (uint32_t)key, hi = (uint32_t)(key >> 32), n = 0;
    for (int pass = 0; pass < 2; pass++) {
        const uint32_t *h = pass ? kvg_kv_chain_old(c, key) : &c->b[bucket(key, c->mask)];
        for (uint32_t i = h ? *h : KVG_KV_NIL; i != KVG_KV_NIL; i = E(t, i)->chain) {
            const struct kvg_kv_entry *e = E(t, i);
            if (e->key_lo == lo && e->key_hi == hi && n < max) out[n++] = i;
        }
    }
    return n;
}

uint32_t kvg_kv_tab_key_find(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int want_last)
{
    const struct kvg_kv_chain *c = &t->w[w].kc;
    if (!c->b) return KVG_KV_NIL;
    uint32_t i = key_scan(t, c->b[bucket(key, c->mask)], key, want_last);
    if (i == KVG_KV_NIL) {
        const uint32_t *o = kvg_kv_chain_old(c, key);
        if (o) i = key_scan(t, *o, key, want_last);
    }
    return i;
}

/* Unlinks item i from the chain starting at *pp (next links via `link`).
 * Returns 1 if found. */
static int node_unlink_from(struct kvg_kv_tab *t, uint32_t *pp, uint32_t i)
{
    for (; *pp != KVG_KV_NIL; pp = &N(t, *pp)->next) {
        if (*pp == i) {
            *pp = N(t, i)->next;
            return 1;
        }
    }
    return 0;
}

static int key_unlink_from(struct kvg_kv_tab *t, uint32_t *pp, uint32_t i)
{
    for (; *pp != KVG_KV_NIL; pp = &E(t, *pp)->chain) {
        if (*pp == i) {
            *pp = E(t, i)->chain;
            return 1;
        }
    }
    return 0;
}

/* ---- lists ---- */

static void list_push_head(struct kvg_kv_tab *t, uint32_t w, uint32_t i)
{
    struct kvg_kv_wslot *ws = &t->w[w];
    struct kvg_kv_entry *e = E(t, i);
    e->prev = KVG_KV_NIL;
    e->next = ws->head;
    if (ws->head != KVG_KV_NIL)
        E(t, ws->head)->prev = i;
    else {
        ws->tail = i;
        t->tail_stamp[w] = e->stamp;
        if (t->age_on) {
            t->age_slots++;
            kvg_kv_tab_age_note(t, w);
        }
    }
    ws->head = i;
}

static void list_unlink(struct kvg_kv_tab *t, uint32_t w, uint32_t i)
{
    struct kvg_kv_wslot *ws = &t->w[w];
    struct kvg_kv_entry *e = E(t, i);
    if (e->prev != KVG_KV_NIL)
        E(t, e->prev)->next = e->next;
    else
        ws->head = e->next;
    if (e->next != KVG_KV_NIL) {
        E(t, e->next)->prev = e->prev;
    } else {
        ws->tail = e->prev;
        t->tail_stamp[w] = ws->tail != KVG_KV_NIL ? E(t, ws->tail)->stamp : 0;
        if (t->age_on) {
            if (ws->tail != KVG_KV_NIL)
                kvg_kv_tab_age_note(t, w);
            else
                t->age_slots--;
        }
    }
}

uint32_t kvg_kv_tab_add(struct kvg_kv_tab *t, uint32_t w, uint64_t seq, uint64_t key,
                        uint32_t flags, uint32_t stamp)
{
    struct kvg_kv_wslot *ws = &t->w[w];
    /* Key chains are only walked by writes: denser (4 per bucket) to save
     * memory. Node chains are walked by every lookup: 2 per bucket. */
    kvg_kv_chain_maybe_grow(&ws->kc, ws->count + 1, 4);
    key_migrate(t, &ws->kc);
    kvg_kv_chain_maybe_grow(&t->nc, t->n_nodes + 1, 2);
    node_migrate(t);
    uint32_t ni = kvg_kv_tab_find_node(t, seq), fresh = 0;
    struct kvg_kv_node *n;
    if (ni == KVG_KV_NIL) {
        /* Room for a set per node first: a removal never needs memory. */
        if (kvg_kv_tab_set_reserve(t, t->node_hw + 1) || (ni = node_alloc(t)) == KVG_KV_NIL)
            return KVG_KV_NIL;
        n = N(t, ni);
        n->key = seq;
        atomic_store_explicit(&n->used, stamp - 1, memory_order_relaxed);
        n->set = KVG_KV_NIL;
        n->spare = 0;
        uint32_t *head = &t->nc.b[bucket(seq, t->nc.mask)];
        n->next = *head;
        *head = ni;
        t->n_nodes++;
        fresh = 1;
    }
    n = N(t, ni);
    uint32_t ei = entry_alloc(t);
    int dup = !fresh && kvg_kv_tab_node_has(t, ni, w);
    uint32_t set = n->set;
    if (ei != KVG_KV_NIL && (dup ? cnt_inc(&t->dup, dup_key(ni, w)) != 0
                                 : (set = kvg_kv_tab_set_add(t, n->set, w)) == KVG_KV_NIL)) {
        /* Return the entry to the free list. */
        E(t, ei)->chain = t->entry_free;
        t->entry_free = ei;
        ei = KVG_KV_NIL;
    }
    if (ei == KVG_KV_NIL) {
        if (fresh) { /* undo the node: it is the head of its bucket */
            t->nc.b[bucket(seq, t->nc.mask)] = n->next;
            node_free(t, ni);
        }
        return KVG_KV_NIL;
    }
    if (dup) t->dup_entries++;
    n->set = set;
    struct kvg_kv_entry *e = E(t, ei);
    e->key_lo = (uint32_t)key;
    e->key_hi = (uint32_t)(key >> 32);
    e->node = ni | (flags & (KVG_KV_LAST | KVG_KV_SALTED));
    e->stamp = stamp;
    uint32_t *kh = &ws->kc.b[bucket(key, ws->kc.mask)];
    e->chain = *kh;
    *kh = ei;
    list_push_head(t, w, ei);
    ws->count++;
    t->n_entries++;
    return ei;
}

void kvg_kv_tab_remove(struct kvg_kv_tab *t, uint32_t w, uint32_t ei)
{
    struct kvg_kv_wslot *ws = &t->w[w];
    struct kvg_kv_entry *e = E(t, ei);
    uint64_t key = kvg_kv_entry_key(e);
    list_unlink(t, w, ei);
    if (!key_unlink_from(t, &ws->kc.b[bucket(key, ws->kc.mask)], ei)) {
        uint32_t *o = kvg_kv_chain_old(&ws->kc, key);
        if (o) key_unlink_from(t, o, ei);
    }
    uint32_t ni = e->node & KVG_KV_NODE_MASK;
    if (cnt_dec(&t->dup, dup_key(ni, w))) {
        t->dup_entries--;
    } else {
        struct kvg_kv_node *n = N(t, ni);
        if ((n->set = kvg_kv_tab_set_del(t, n->set, w)) == KVG_KV_NIL) {
            if (!node_unlink_from(t, &t->nc.b[bucket(n->key, t->nc.mask)], ni)) {
                uint32_t *o = kvg_kv_chain_old(&t->nc, n->key);
                if (o) node_unlink_from(t, o, ni);
            }
            node_free(t, ni);
        }
    }
    e->chain = t->entry_free;
    t->entry_free = ei;
    ws->count--;
    t->n_entries--;
    /* The key's last entry gone (evicted, drained): no reference is left. */
    if (t->refs.n && kvg_kv_tab_key_find(t, w, key, 0) == KVG_KV_NIL)
        t->ref_extra -= cnt_del(&t->refs, ref_key(w, key));
    /* Removal-heavy phases must finish a doubling too. */
    key_migrate(t, &ws->kc);
    node_migrate(t);
}

int kvg_kv_tab_ref(struct kvg_kv_tab *t, uint32_t w, uint64_t key)
{
    int rc = cnt_inc(&t->refs, ref_key(w, key));
    if (!rc) t->ref_extra++;
    return rc;
}

uint32_t kvg_kv_tab_remove_key(struct kvg_kv_tab *t, uint32_t w, uint64_t key)
{
    uint32_t removed = 0, e;
    if (cnt_dec(&t->refs, ref_key(w, key))) {
        t->ref_extra--;
        return 0;
    }
    while ((e = kvg_kv_tab_key_find(t, w, key, 0)) != KVG_KV_NIL) {
        kvg_kv_tab_remove(t, w, e);
        removed++;
    }
    return removed;
}

void kvg_kv_tab_touch(struct kvg_kv_tab *t, uint32_t w, uint32_t ei, uint32_t stamp)
{
    list_unlink(t, w, ei);
    E(t, ei)->stamp = stamp;
    list_push_head(t, w, ei);
}

int kvg_kv_tab_oldest_scan(const struct kvg_kv_tab *t, uint32_t ref)
{
    int best = -1;
    int32_t best_age = 0;
    for (uint32_t w = 0; w < t->max_workers; w++) {
        if (!t->w[w].count) continue;
        int32_t age = (int32_t)(ref - t->tail_stamp[w]);
        if (best < 0 || age > best_age) {
            best = (int)w;
            best_age = age;
        }
    }
    return best;
}

uint32_t kvg_kv_tab_drain(struct kvg_kv_tab *t, uint32_t w, uint32_t max)
{
    uint32_t n = 0;
    while (n < max && t->w[w].tail != KVG_KV_NIL) {
        kvg_kv_tab_remove(t, w, t->w[w].tail);
        n++;
    }
    return n;
}
