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

struct ev_rec {
    enum kvg_sim_event_type type;
    int has_parent;
    uint64_t parent;
    size_t hoff, toff;
    uint32_t nh, nt;
    const char *lora, *salt; /* not owned */
    int lora_id;
};

struct kvg_sim_kvc {
    uint32_t nb, bs;
    uint64_t *hash; /* 0: not cached */
    int32_t *ref;
    int32_t *prev, *next;
    uint8_t *in_free;
    int32_t head, tail;
    uint32_t nfree, ncached;

    uint64_t *mkey; /* 0: empty slot */
    int32_t *mval;
    uint32_t mmask;

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

/* ---- hash -> block map */

static uint32_t slot_of(const struct kvg_sim_kvc *c, uint64_t h)
{
    return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & c->mmask;
}

static int32_t map_get(const struct kvg_sim_kvc *c, uint64_t h)
{
    for (uint32_t i = slot_of(c, h);; i = (i + 1) & c->mmask) {
        if (c->mkey[i] == h) return c->mval[i];
        if (c->mkey[i] == 0) return -1;
    }
}

/* The map holds at most nb keys in 2*nb+ slots, so a free slot always exists. */
static void map_put(struct kvg_sim_kvc *c, uint64_t h, int32_t b)
{
    uint32_t i = slot_of(c, h);
    while (c->mkey[i] != 0 && c->mkey[i] != h) i = (i + 1) & c->mmask;
    c->mkey[i] = h;
    c->mval[i] = b;
}

static void map_del(struct kvg_sim_kvc *c, uint64_t h)
{
    uint32_t i = slot_of(c, h);
    while (c->mkey[i] != h) {
        if (c->mkey[i] == 0) return;
        i = (i + 1) & c->mmask;
    }
    /* Backward shift: move later entries of the probe run into the hole when
     * their home slot is not cyclically inside (hole, their position]. */
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & c->mmask;
        if (c->mkey[j] == 0) break;
        uint32_t home = slot_of(c, c->mkey[j]);
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in_range) continue;
        c->mkey[i] = c->mkey[j];
        c->mval[i] = c->mval[j];
        i = j;
    }
    c->mkey[i] = 0;
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

/* ---- lifecycle */

int kvg_sim_kvc_create(uint32_t num_blocks, uint32_t block_size, int emit_events,
                       struct kvg_sim_kvc **out)
{
    struct kvg_sim_kvc *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->nb = num_blocks;
    c->bs = block_size;
    c->emit = emit_events;
    uint32_t slots = 16;
    while (slots < 2 * (uint64_t)num_blocks) slots *= 2;
    c->mmask = slots - 1;
    c->hash = calloc(num_blocks, sizeof *c->hash);
    c->ref = calloc(num_blocks, sizeof *c->ref);
    c->prev = malloc(num_blocks * sizeof *c->prev);
    c->next = malloc(num_blocks * sizeof *c->next);
    c->in_free = calloc(num_blocks, 1);
    c->mkey = calloc(slots, sizeof *c->mkey);
    c->mval = calloc(slots, sizeof *c->mval);
    if (!c->hash || !c->ref || !c->prev || !c->next || !c->in_free || !c->mkey || !c->mval) {
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
    free(c->mkey);
    free(c->mval);
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
        int32_t b = map_get(c, hashes[k]);
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
    map_del(c, h);
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
        int32_t have = map_get(c, h);
        if (have < 0) {
            c->hash[blocks[i]] = h;
            map_put(c, h, blocks[i]);
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
    memset(c->mkey, 0, ((size_t)c->mmask + 1) * sizeof *c->mkey);
    c->ncached = 0;
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
