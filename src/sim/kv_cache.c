/* Block pool, prefix-cache map, LRU free queue and KV event log of the
 * simulated engine; see kv_cache.h for the vLLM behaviour it reproduces.
 *
 * Layout: per-block arrays (hash, refcount, free-queue links) indexed by block
 * id; the free queue is an intrusive doubly linked list (head = next victim);
 * the hash -> block map is open addressing with linear probing and
 * backward-shift deletion (hash 0 marks an empty slot, which is why block
 * hashes are never 0). The event log keeps offsets into two growable arrays
 * (hashes, token ids) and turns them into pointers when viewed. */
#include "sim/kv_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct hmap {
    uint64_t *key; /* 0: empty slot */
    int32_t *val;
    uint32_t mask;
};

struct ev_rec {
    enum kvg_sim_event_type type;
    int has_parent;
    uint64_t parent;
    size_t hoff, toff;
    uint32_t nh, nt;
    const char *lora, *salt; /* not owned */
    int lora_id;
    uint8_t cpu; /* medium "CPU" */
};

struct kvg_sim_kvc {
    uint32_t nb, bs;
    uint64_t *hash; /* 0: not cached */
    int32_t *ref;
    int32_t *prev, *next;
    uint8_t *in_free;
    int32_t head, tail;
    uint32_t nfree, ncached;

    struct hmap map;

    /* What a GPU block's BlockStored said, kept when a CPU tier is on so
     * that its eviction can store it there: tokens (bs per block), parent,
     * tags. */
    uint32_t *btok;
    uint64_t *bparent;
    uint8_t *bhas_parent;
    const char **blora, **bsalt;
    int32_t *blora_id;

    /* The CPU tier: cn entries, an LRU list (chead = next victim), a free
     * stack, and the same per-entry record as the GPU's. */
    uint32_t cn, cused;
    struct hmap cmap;
    uint64_t *chash, *cparent;
    uint8_t *chas_parent;
    uint32_t *ctok;
    const char **clora, **csalt;
    int32_t *clora_id, *cprev, *cnext, *cfree;
    int32_t chead, ctail;
    uint32_t nfree_c;

    int emit;
    struct ev_rec *ev;
    size_t nev, capev;
    uint64_t *eh;
    size_t neh, capeh;
    uint32_t *et;
    size_t net, capet;
    struct kvg_sim_event *view;
    size_t capview;
    uint64_t lost;
};

/* ---- hash -> block maps (the GPU's and the CPU tier's) */

static int hmap_init(struct hmap *m, uint32_t entries)
{
    uint32_t slots = 16;
    while (slots < 2 * (uint64_t)entries) slots *= 2;
    m->mask = slots - 1;
    m->key = calloc(slots, sizeof *m->key);
    m->val = calloc(slots, sizeof *m->val);
    return m->key && m->val ? 0 : -ENOMEM;
}

static void hmap_free(struct hmap *m)
{
    free(m->key);
    free(m->val);
}

static uint32_t slot_of(const struct hmap *m, uint64_t h)
{
    return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & m->mask;
}

static int32_t map_get(const struct hmap *m, uint64_t h)
{
    for (uint32_t i = slot_of(m, h);; i = (i + 1) & m->mask) {
        if (m->key[i] == h) return m->val[i];
        if (m->key[i] == 0) return -1;
    }
}

/* A map holds at most `entries` keys in 2*entries+ slots, so a free slot
 * always exists. */
static void map_put(struct hmap *m, uint64_t h, int32_t b)
{
    uint32_t i = slot_of(m, h);
    while (m->key[i] != 0 && m->key[i] != h) i = (i + 1) & m->mask;
    m->key[i] = h;
    m->val[i] = b;
}

static void map_del(struct hmap *m, uint64_t h)
{
    uint32_t i = slot_of(m, h);
    while (m->key[i] != h) {
        if (m->key[i] == 0) return;
        i = (i + 1) & m->mask;
    }
    /* Backward shift: move later entries of the probe run into the hole when
     * their home slot is not cyclically inside (hole, their position]. */
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->key[j] == 0) break;
        uint32_t home = slot_of(m, m->key[j]);
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in_range) continue;
        m->key[i] = m->key[j];
        m->val[i] = m->val[j];
        i = j;
    }
    m->key[i] = 0;
}

/* ---- free queue */

static void fq_unlink(struct kvg_sim_kvc *c, int32_t b)
{
    int32_t p = c->prev[b], n = c->next[b];
    if (p >= 0)
        c->next[p] = n;
    else
        c->head = n;
    if (n >= 0)
        c->prev[n] = p;
    else
        c->tail = p;
    c->prev[b] = c->next[b] = -1;
    c->in_free[b] = 0;
    c->nfree--;
}

static void fq_push_tail(struct kvg_sim_kvc *c, int32_t b)
{
    c->prev[b] = c->tail;
    c->next[b] = -1;
    if (c->tail >= 0)
        c->next[c->tail] = b;
    else
        c->head = b;
    c->tail = b;
    c->in_free[b] = 1;
    c->nfree++;
}

static void fq_push_head(struct kvg_sim_kvc *c, int32_t b)
{
    c->next[b] = c->head;
    c->prev[b] = -1;
    if (c->head >= 0)
        c->prev[c->head] = b;
    else
        c->tail = b;
    c->head = b;
    c->in_free[b] = 1;
    c->nfree++;
}

/* ---- event log */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static void log_event(struct kvg_sim_kvc *c, enum kvg_sim_event_type type, int has_parent,
                      uint64_t parent, const uint64_t *h, uint32_t nh, const uint32_t *t,
                      uint32_t nt)
{
    if (!c->emit) return;
    if (grow((void **)&c->ev, &c->capev, c->nev + 1, sizeof *c->ev) ||
        grow((void **)&c->eh, &c->capeh, c->neh + nh, sizeof *c->eh) ||
        grow((void **)&c->et, &c->capet, c->net + nt, sizeof *c->et)) {
        c->lost++;
        return;
    }
    struct ev_rec *r = &c->ev[c->nev++];
    r->cpu = 0;
    r->type = type;
    r->has_parent = has_parent;
    r->parent = parent;
    r->hoff = c->neh;
    r->nh = nh;
    r->toff = c->net;
    r->nt = nt;
    r->lora = r->salt = NULL;
    r->lora_id = 0;
    if (nh) memcpy(c->eh + c->neh, h, nh * sizeof *h);
    if (nt) memcpy(c->et + c->net, t, nt * sizeof *t);
    c->neh += nh;
    c->net += nt;
}

/* ---- CPU tier */

/* Remembers what block b's BlockStored carries (block i of a request). */
static void keep_record(struct kvg_sim_kvc *c, int32_t b, const uint64_t *hashes,
                        const uint32_t *tokens, uint32_t i, const char *lora, int lora_id,
                        const char *salt)
{
    memcpy(c->btok + (size_t)b * c->bs, tokens + (size_t)i * c->bs, c->bs * sizeof *tokens);
    c->bhas_parent[b] = i > 0;
    c->bparent[b] = i > 0 ? hashes[i - 1] : 0;
    c->blora[b] = lora;
    c->blora_id[b] = lora_id;
    c->bsalt[b] = i == 0 ? salt : NULL; /* vLLM salts a request's first block only */
}

static void lru_unlink(struct kvg_sim_kvc *c, int32_t x)
{
    int32_t p = c->cprev[x], n = c->cnext[x];
    if (p >= 0)
        c->cnext[p] = n;
    else
        c->chead = n;
    if (n >= 0)
        c->cprev[n] = p;
    else
        c->ctail = p;
}

static void lru_push_tail(struct kvg_sim_kvc *c, int32_t x)
{
    c->cprev[x] = c->ctail;
    c->cnext[x] = -1;
    if (c->ctail >= 0)
        c->cnext[c->ctail] = x;
    else
        c->chead = x;
    c->ctail = x;
}

/* Drops the CPU tier's least recently used block (BlockRemoved "CPU"). */
static void cpu_evict_one(struct kvg_sim_kvc *c)
{
    int32_t x = c->chead;
    uint64_t h = c->chash[x];
    lru_unlink(c, x);
    map_del(&c->cmap, h);
    c->cfree[c->nfree_c++] = x;
    c->cused--;
    size_t before = c->nev;
    log_event(c, KVG_SIM_EV_REMOVED, 0, 0, &h, 1, NULL, 0);
    if (c->nev > before) c->ev[c->nev - 1].cpu = 1;
}

/* GPU block b is being evicted: its copy goes to the CPU tier (a block
 * already there is only refreshed: the offloading cache stores it once). */
static void cpu_put(struct kvg_sim_kvc *c, int32_t b)
{
    uint64_t h = c->hash[b];
    int32_t x = map_get(&c->cmap, h);
    if (x >= 0) {
        lru_unlink(c, x);
        lru_push_tail(c, x);
        return;
    }
    if (c->cused == c->cn) cpu_evict_one(c);
    x = c->cfree[--c->nfree_c];
    c->cused++;
    c->chash[x] = h;
    c->cparent[x] = c->bparent[b];
    c->chas_parent[x] = c->bhas_parent[b];
    c->clora[x] = c->blora[b];
    c->clora_id[x] = c->blora_id[b];
    c->csalt[x] = c->bsalt[b];
    memcpy(c->ctok + (size_t)x * c->bs, c->btok + (size_t)b * c->bs, c->bs * sizeof *c->ctok);
    map_put(&c->cmap, h, x);
    lru_push_tail(c, x);
    size_t before = c->nev;
    log_event(c, KVG_SIM_EV_STORED, c->chas_parent[x], c->cparent[x], &h, 1,
              c->ctok + (size_t)x * c->bs, c->bs);
    if (c->nev == before) return;
    struct ev_rec *r = &c->ev[c->nev - 1];
    r->cpu = 1;
    r->lora = c->clora[x];
    r->lora_id = c->clora_id[x];
    r->salt = c->csalt[x];
}

/* Forgets the CPU tier's blocks (part of AllBlocksCleared). */
static void cpu_reset(struct kvg_sim_kvc *c)
{
    if (!c->cn) return;
    memset(c->cmap.key, 0, ((size_t)c->cmap.mask + 1) * sizeof *c->cmap.key);
    c->chead = c->ctail = -1;
    c->cused = 0;
    c->nfree_c = c->cn;
    for (uint32_t i = 0; i < c->cn; i++) c->cfree[i] = (int32_t)(c->cn - 1 - i);
}

int kvg_sim_kvc_enable_cpu(struct kvg_sim_kvc *c, uint32_t n)
{
    if (!n || c->cn) return n ? -EINVAL : 0;
    size_t nb = c->nb, bs = c->bs;
    c->btok = malloc(nb * bs * sizeof *c->btok);
    c->bparent = calloc(nb, sizeof *c->bparent);
    c->bhas_parent = calloc(nb, 1);
    c->blora = calloc(nb, sizeof *c->blora);
    c->bsalt = calloc(nb, sizeof *c->bsalt);
    c->blora_id = calloc(nb, sizeof *c->blora_id);
    c->chash = calloc(n, sizeof *c->chash);
    c->cparent = calloc(n, sizeof *c->cparent);
    c->chas_parent = calloc(n, 1);
    c->ctok = malloc((size_t)n * bs * sizeof *c->ctok);
    c->clora = calloc(n, sizeof *c->clora);
    c->csalt = calloc(n, sizeof *c->csalt);
    c->clora_id = calloc(n, sizeof *c->clora_id);
    c->cprev = malloc(n * sizeof *c->cprev);
    c->cnext = malloc(n * sizeof *c->cnext);
    c->cfree = malloc(n * sizeof *c->cfree);
    int rc = hmap_init(&c->cmap, n);
    if (rc || !c->btok || !c->bparent || !c->bhas_parent || !c->blora || !c->bsalt ||
        !c->blora_id || !c->chash || !c->cparent || !c->chas_parent || !c->ctok || !c->clora ||
        !c->csalt || !c->clora_id || !c->cprev || !c->cnext || !c->cfree)
        return -ENOMEM; /* the arrays go with kvg_sim_kvc_free */
    c->cn = n;
    cpu_reset(c);
    return 0;
}

uint32_t kvg_sim_kvc_cpu_lookup(struct kvg_sim_kvc *c, const uint64_t *hashes, uint32_t n)
{
    if (!c->cn) return 0;
    uint32_t k = 0;
    for (; k < n; k++) {
        int32_t x = map_get(&c->cmap, hashes[k]);
        if (x < 0) break;
        lru_unlink(c, x);
        lru_push_tail(c, x);
    }
    return k;
}

uint32_t kvg_sim_kvc_cpu_num_blocks(const struct kvg_sim_kvc *c)
{
    return c->cn;
}

uint32_t kvg_sim_kvc_cpu_num_cached(const struct kvg_sim_kvc *c)
{
    return c->cused;
}

size_t kvg_sim_kvc_cpu_hashes(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (int32_t x = c->cn ? c->chead : -1; x >= 0; x = c->cnext[x]) {
        if (n < cap) out[n] = c->chash[x];
        n++;
    }
    return n;
}

/* ---- lifecycle */

int kvg_sim_kvc_create(uint32_t num_blocks, uint32_t block_size, int emit_events,
                       struct kvg_sim_kvc **out)
{
    struct kvg_sim_kvc *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->nb = num_blocks;
    c->bs = block_size;
    c->emit = emit_events;
    c->hash = calloc(num_blocks, sizeof *c->hash);
    c->ref = calloc(num_blocks, sizeof *c->ref);
    c->prev = malloc(num_blocks * sizeof *c->prev);
    c->next = malloc(num_blocks * sizeof *c->next);
    c->in_free = calloc(num_blocks, 1);
    int mrc = hmap_init(&c->map, num_blocks);
    c->chead = c->ctail = -1;
    if (!c->hash || !c->ref || !c->prev || !c->next || !c->in_free || mrc) {
        kvg_sim_kvc_free(c);
        return -ENOMEM;
    }
    c->head = c->tail = -1;
    for (uint32_t b = 0; b < num_blocks; b++) fq_push_tail(c, (int32_t)b);
    *out = c;
    return 0;
}

void kvg_sim_kvc_free(struct kvg_sim_kvc *c)
{
    if (!c) return;
    free(c->hash);
    free(c->ref);
    free(c->prev);
    free(c->next);
    free(c->in_free);
    hmap_free(&c->map);
    hmap_free(&c->cmap);
    free(c->btok);
    free(c->bparent);
    free(c->bhas_parent);
    free(c->blora);
    free(c->bsalt);
    free(c->blora_id);
    free(c->chash);
    free(c->cparent);
    free(c->chas_parent);
    free(c->ctok);
    free(c->clora);
    free(c->csalt);
    free(c->clora_id);
    free(c->cprev);
    free(c->cnext);
    free(c->cfree);
    free(c->ev);
    free(c->eh);
    free(c->et);
    free(c->view);
    free(c);
}

uint32_t kvg_sim_kvc_num_free(const struct kvg_sim_kvc *c)
{
    return c->nfree;
}

uint32_t kvg_sim_kvc_num_cached(const struct kvg_sim_kvc *c)
{
    return c->ncached;
}

/* ---- operations */

uint32_t kvg_sim_kvc_lookup(const struct kvg_sim_kvc *c, const uint64_t *hashes, uint32_t n,
                            int32_t *blocks_out, uint32_t *n_free)
{
    uint32_t k = 0, nf = 0;
    for (; k < n; k++) {
        int32_t b = map_get(&c->map, hashes[k]);
        if (b < 0) break;
        blocks_out[k] = b;
        nf += c->ref[b] == 0;
    }
    *n_free = nf;
    return k;
}

void kvg_sim_kvc_touch(struct kvg_sim_kvc *c, const int32_t *blocks, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int32_t b = blocks[i];
        if (c->ref[b]++ == 0) fq_unlink(c, b);
    }
}

static void evict(struct kvg_sim_kvc *c, int32_t b)
{
    uint64_t h = c->hash[b];
    if (c->cn) cpu_put(c, b);
    map_del(&c->map, h);
    c->hash[b] = 0;
    c->ncached--;
    log_event(c, KVG_SIM_EV_REMOVED, 0, 0, &h, 1, NULL, 0);
}

void kvg_sim_kvc_alloc(struct kvg_sim_kvc *c, int32_t *out, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int32_t b = c->head;
        fq_unlink(c, b);
        if (c->hash[b]) evict(c, b);
        c->ref[b] = 1;
        out[i] = b;
    }
}

/* Logs a BlockStored of blocks [run, to) with the request's tags. */
static void log_stored(struct kvg_sim_kvc *c, const uint64_t *hashes, const uint32_t *tokens,
                       uint32_t run, uint32_t to, const char *lora, int lora_id, const char *salt)
{
    size_t before = c->nev;
    log_event(c, KVG_SIM_EV_STORED, run > 0, run > 0 ? hashes[run - 1] : 0, hashes + run, to - run,
              tokens + (size_t)run * c->bs, (to - run) * c->bs);
    if (c->nev == before) return;
    struct ev_rec *r = &c->ev[c->nev - 1];
    r->lora = lora;
    r->lora_id = lora_id;
    r->salt = run == 0 ? salt : NULL;
}

void kvg_sim_kvc_store(struct kvg_sim_kvc *c, int32_t *blocks, const uint64_t *hashes,
                       const uint32_t *tokens, uint32_t from, uint32_t to)
{
    kvg_sim_kvc_store_tagged(c, blocks, hashes, tokens, from, to, NULL, 0, NULL);
}

void kvg_sim_kvc_store_tagged(struct kvg_sim_kvc *c, int32_t *blocks, const uint64_t *hashes,
                              const uint32_t *tokens, uint32_t from, uint32_t to, const char *lora,
                              int lora_id, const char *salt)
{
    uint32_t run = from; /* first block of the BlockStored run being built */
    for (uint32_t i = from; i < to; i++) {
        uint64_t h = hashes[i];
        int32_t have = map_get(&c->map, h);
        if (have < 0) {
            if (c->cn) keep_record(c, blocks[i], hashes, tokens, i, lora, lora_id, salt);
            c->hash[blocks[i]] = h;
            map_put(&c->map, h, blocks[i]);
            c->ncached++;
            continue;
        }
        /* Already resident (computed by another request in the same steps):
         * close the run, share the resident block, return ours unstored. */
        if (i > run) log_stored(c, hashes, tokens, run, i, lora, lora_id, salt);
        run = i + 1;
        int32_t mine = blocks[i];
        kvg_sim_kvc_touch(c, &have, 1);
        blocks[i] = have;
        if (--c->ref[mine] == 0) fq_push_head(c, mine);
    }
    if (to > run) log_stored(c, hashes, tokens, run, to, lora, lora_id, salt);
}

void kvg_sim_kvc_release(struct kvg_sim_kvc *c, const int32_t *blocks, uint32_t n)
{
    for (uint32_t i = n; i-- > 0;) {
        int32_t b = blocks[i];
        if (--c->ref[b] == 0) fq_push_tail(c, b);
    }
}

int kvg_sim_kvc_reset(struct kvg_sim_kvc *c)
{
    if (c->nfree != c->nb) return -EBUSY;
    for (uint32_t b = 0; b < c->nb; b++) c->hash[b] = 0;
    memset(c->map.key, 0, ((size_t)c->map.mask + 1) * sizeof *c->map.key);
    c->ncached = 0;
    cpu_reset(c);
    log_event(c, KVG_SIM_EV_CLEARED, 0, 0, NULL, 0, NULL, 0);
    return 0;
}

/* ---- views */

void kvg_sim_kvc_events(struct kvg_sim_kvc *c, struct kvg_sim_events *out)
{
    out->ev = NULL;
    out->n = 0;
    out->lost = c->lost;
    if (!c->nev) return;
    if (grow((void **)&c->view, &c->capview, c->nev, sizeof *c->view)) {
        /* No room for the pointer view: report the events as lost. */
        c->lost += c->nev;
        out->lost = c->lost;
        kvg_sim_kvc_events_clear(c);
        return;
    }
    for (size_t i = 0; i < c->nev; i++) {
        const struct ev_rec *r = &c->ev[i];
        struct kvg_sim_event *v = &c->view[i];
        v->type = r->type;
        v->has_parent = r->has_parent;
        v->parent = r->parent;
        v->hashes = r->nh ? c->eh + r->hoff : NULL;
        v->n_hashes = r->nh;
        v->tokens = r->nt ? c->et + r->toff : NULL;
        v->n_tokens = r->nt;
        v->block_size = c->bs;
        v->lora_name = r->lora;
        v->lora_id = r->lora_id;
        v->cache_salt = r->salt;
        v->cpu = r->cpu;
    }
    out->ev = c->view;
    out->n = c->nev;
}

void kvg_sim_kvc_events_clear(struct kvg_sim_kvc *c)
{
    c->nev = c->neh = c->net = 0;
}

size_t kvg_sim_kvc_num_events(const struct kvg_sim_kvc *c)
{
    return c->nev;
}

size_t kvg_sim_kvc_cached_hashes(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t b = 0; b < c->nb; b++) {
        if (!c->hash[b]) continue;
        if (n < cap) out[n] = c->hash[b];
        n++;
    }
    return n;
}

size_t kvg_sim_kvc_eviction_order(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (int32_t b = c->head; b >= 0; b = c->next[b]) {
        if (!c->hash[b]) continue;
        if (n < cap) out[n] = c->hash[b];
        n++;
    }
    return n;
}
