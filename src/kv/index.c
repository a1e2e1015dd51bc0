/* The precise KV index: locking, event application and the LRU bound over
 * the storage of table.c. See index.h for the contract. */
#include "kv/index.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "kv/hash.h"
#include "kv/table.h"

/* Tables: prefix-deciding groups by tier (0..TIERS), then the other groups
 * by tier. t[0] also holds the authoritative slot states and live bitmap;
 * every table opens and closes slots with it. */
#define NTAB (2 * KVG_KV_TIERS)
#define AUX KVG_KV_TIERS

struct kvg_kv_index {
    pthread_rwlock_t lock;
    struct kvg_kv_tab t[NTAB];
    uint32_t block_size;
    uint64_t max_entries;
    /* Logical clock: +1 per exclusive hold; entries and lookup stamps use it
     * to order "stored" against "used". Read under the shared lock. */
    uint32_t clock;
    uint64_t evictions;
    _Atomic uint64_t lookups, rd_contended, wr_contended;
    _Atomic int rd_waiting; /* lookups blocked on the lock right now */
};

int kvg_kv_index_new(const struct kvg_kv_index_opts *o, struct kvg_kv_index **out)
{
    if (!o || !o->block_size) return -EINVAL;
    struct kvg_kv_index *idx = calloc(1, sizeof *idx);
    if (!idx) return -ENOMEM;
    int rc = 0;
    for (int i = 0; i < NTAB && !rc; i++) {
        rc = kvg_kv_tab_init(&idx->t[i], o->max_workers ? o->max_workers : 64);
        /* Eviction takes the oldest tail over every slot once per entry:
         * a heap keeps that O(log workers) instead of a scan of all of them
         * (at 1,024 workers the scan made ingest ~10x slower). */
        if (!rc) kvg_kv_tab_age_enable(&idx->t[i]);
    }
    if (rc) {
        for (int i = 0; i < NTAB; i++) kvg_kv_tab_free(&idx->t[i]);
        free(idx);
        return rc;
    }
    /* Writers first: a steady stream of lookups must not starve events. */
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    rc = pthread_rwlock_init(&idx->lock, &a);
    pthread_rwlockattr_destroy(&a);
    if (rc) {
        for (int i = 0; i < NTAB; i++) kvg_kv_tab_free(&idx->t[i]);
        free(idx);
        return -rc;
    }
    idx->block_size = o->block_size;
    idx->max_entries = o->max_entries ? o->max_entries : 1ull << 23;
    idx->clock = 1;
    *out = idx;
    return 0;
}

void kvg_kv_index_free(struct kvg_kv_index *idx)
{
    if (!idx) return;
    pthread_rwlock_destroy(&idx->lock);
    for (int i = 0; i < NTAB; i++) kvg_kv_tab_free(&idx->t[i]);
    free(idx);
}

uint32_t kvg_kv_index_block_size(const struct kvg_kv_index *idx)
{
    return idx->block_size;
}

uint32_t kvg_kv_index_max_workers(const struct kvg_kv_index *idx)
{
    return idx->t[0].max_workers;
}

static int slot_live(const struct kvg_kv_index *idx, uint32_t slot)
{
    return idx->t[0].w[slot].state == KVG_KV_W_LIVE;
}

static uint64_t n_entries(const struct kvg_kv_index *idx)
{
    uint64_t n = 0;
    for (int i = 0; i < NTAB; i++) n += idx->t[i].n_entries;
    return n;
}

static void wr_lock(struct kvg_kv_index *idx)
{
    if (pthread_rwlock_trywrlock(&idx->lock)) {
        atomic_fetch_add_explicit(&idx->wr_contended, 1, memory_order_relaxed);
        pthread_rwlock_wrlock(&idx->lock);
    }
    idx->clock++;
}

static void rd_lock(struct kvg_kv_index *idx)
{
    if (pthread_rwlock_tryrdlock(&idx->lock)) {
        atomic_fetch_add_explicit(&idx->rd_contended, 1, memory_order_relaxed);
        atomic_fetch_add(&idx->rd_waiting, 1);
        pthread_rwlock_rdlock(&idx->lock);
        atomic_fetch_sub(&idx->rd_waiting, 1);
    }
}

static void unlock(struct kvg_kv_index *idx)
{
    pthread_rwlock_unlock(&idx->lock);
}

/* Between two holds of one long write (a big batch, a worker drain). The
 * lock prefers writers, so a writer that re-locks at once would keep the
 * lookups it just woke out for as long as it has work: wait (at most 50 us)
 * until they are in, then queue behind them. */
static void relock(struct kvg_kv_index *idx)
{
    unlock(idx);
    if (atomic_load(&idx->rd_waiting)) {
        uint64_t until = kvg_now_ns() + 50000;
        while (atomic_load(&idx->rd_waiting) && kvg_now_ns() < until) sched_yield();
    }
    wr_lock(idx);
}

/* Evicts one entry, least recently used first; 0 when there is none.
 * A tail entry whose block a lookup matched after it was queued is moved to
 * the head instead (at most once per hold: its new stamp is the current
 * clock, which no lookup stamp can equal during an exclusive hold). */
static int evict_one(struct kvg_kv_index *idx)
{
    for (;;) {
        struct kvg_kv_tab *t = NULL;
        int w = -1;
        int32_t age = 0;
        for (int i = 0; i < NTAB; i++) { /* the oldest tail over every table */
            int x = kvg_kv_tab_oldest(&idx->t[i], idx->clock);
            int32_t a = x < 0 ? 0 : (int32_t)(idx->clock - idx->t[i].tail_stamp[x]);
            if (x >= 0 && (w < 0 || a > age)) {
                t = &idx->t[i];
                w = x;
                age = a;
            }
        }
        if (w < 0) return 0;
        uint32_t ei = t->w[w].tail;
        struct kvg_kv_entry *e = kvg_kv_tab_entry(t, ei);
        struct kvg_kv_node *n = kvg_kv_tab_node(t, e->node & KVG_KV_NODE_MASK);
        uint32_t used = atomic_load_explicit(&n->used, memory_order_relaxed);
        if ((int32_t)(used - e->stamp) >= 0) {
            kvg_kv_tab_touch(t, (uint32_t)w, ei, idx->clock);
            continue;
        }
        kvg_kv_tab_remove(t, (uint32_t)w, ei);
        idx->evictions++;
        return 1;
    }
}

static uint32_t enforce_bound(struct kvg_kv_index *idx)
{
    uint32_t n = 0;
    while (n_entries(idx) > idx->max_entries && evict_one(idx)) n++;
    return n;
}

int kvg_kv_index_add_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    wr_lock(idx);
    int rc = kvg_kv_tab_worker_open(&idx->t[0], slot);
    for (int i = 1; i < NTAB && !rc; i++)
        if ((rc = kvg_kv_tab_worker_open(&idx->t[i], slot)))
            for (int j = 0; j < i; j++) kvg_kv_tab_worker_close(&idx->t[j], slot);
    unlock(idx);
    return rc;
}

/* Drops a slot's entries in bounded holds so that lookups keep flowing while
 * a big worker goes. */
static int drain(struct kvg_kv_index *idx, uint32_t slot)
{
    int total = 0;
    for (int i = 0; i < NTAB; i++) {
        for (;;) {
            uint32_t n = kvg_kv_tab_drain(&idx->t[i], slot, 4096);
            total += (int)n;
            if (n < 4096) break;
            relock(idx);
        }
    }
    return total;
}

int kvg_kv_index_remove_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t[0].max_workers) return -EINVAL;
    wr_lock(idx);
    struct kvg_kv_wslot *ws = &idx->t[0].w[slot];
    if (ws->state != KVG_KV_W_LIVE) {
        unlock(idx);
        return -ENOENT;
    }
    ws->state = KVG_KV_W_DRAINING; /* events rejected, lookups skip it */
    idx->t[0].live[slot / 64] &= ~(1ull << (slot % 64));
    int n = drain(idx, slot);
    for (int i = 0; i < NTAB; i++) kvg_kv_tab_worker_close(&idx->t[i], slot);
    unlock(idx);
    return n;
}

int kvg_kv_index_clear_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t[0].max_workers) return -EINVAL;
    wr_lock(idx);
    if (!slot_live(idx, slot)) {
        unlock(idx);
        return -ENOENT;
    }
    int n = drain(idx, slot);
    unlock(idx);
    return n;
}

/* How a BlockStored maps onto router blocks: k router blocks per engine
 * block, or 0 when the event must be skipped (res says why). */
static uint32_t stored_split(const struct kvg_kv_index *idx, const struct kvg_kv_event *ev,
                             struct kvg_kv_apply_result *res)
{
    uint32_t bs = idx->block_size, ebs = ev->block_size;
    if (ebs % bs) {
        res->block_size_mismatch++;
        return 0;
    }
    if ((uint64_t)ev->n_hashes * ebs != ev->n_tokens) {
        res->inconsistent++;
        return 0;
    }
    return ebs / bs;
}

/* Block seed of a BlockStored: its LoRA adapter's, as requests get theirs. */
static uint64_t event_seed(const struct kvg_kv_event *ev)
{
    if (ev->lora_name.len) return kvg_kv_lora_seed(ev->lora_name.p, ev->lora_name.len);
    /* Only a numeric id: keep those blocks apart from the base model's even
     * though no request can name them. */
    if (ev->has_lora_id && ev->lora_id)
        return KVG_KV_HASH_SEED + kvg_kv_seq_next(0x4c6f5241, (uint64_t)ev->lora_id);
    return KVG_KV_HASH_SEED;
}

/* Engine key of a block hash in a KV group: group 0 (or none) keeps the
 * hash, others mix the group in, since vLLM names a block alike in every
 * group and each group evicts on its own. */
static uint64_t group_key(uint64_t h, int64_t group)
{
    return group > 0 ? kvg_kv_seq_next(h ^ 0x67726f7570ull, (uint64_t)group) : h;
}

/* Whether an event's group decides prefix reuse: full attention (and MLA,
 * a full-attention variant), or no kind given (single-group engines). */
static int prefix_group(const struct kvg_kv_event *ev)
{
    const struct kvg_str *k = &ev->spec_kind;
    if (!k->len) return 1;
    return (k->len >= 4 && !memcmp(k->p, "full", 4)) || (k->len >= 3 && !memcmp(k->p, "mla", 3));
}

/* The parent's entry: the event's own table first, then the other tiers of
 * its class, then the other class. */
static uint32_t find_parent(struct kvg_kv_index *idx, uint32_t slot, int home, uint64_t key,
                            struct kvg_kv_tab **where)
{
    int order[NTAB], k = 0, base = home >= AUX ? AUX : 0, other = base ? 0 : AUX;
    order[k++] = home;
    for (int i = base; i < base + KVG_KV_TIERS; i++)
        if (i != home) order[k++] = i;
    for (int i = other; i < other + KVG_KV_TIERS; i++) order[k++] = i;
    for (int i = 0; i < NTAB; i++) {
        uint32_t e = kvg_kv_tab_key_find(&idx->t[order[i]], slot, key, 1);
        if (e != KVG_KV_NIL) {
            *where = &idx->t[order[i]];
            return e;
        }
    }
    return KVG_KV_NIL;
}

static int is_own_hash(const struct kvg_kv_batch *b, const struct kvg_kv_event *ev)
{
    for (uint32_t i = 0; i < ev->n_hashes; i++)
        if (b->hashes[ev->hash_off + i] == ev->parent) return 1;
    return 0;
}

/* Prefetch distances of the BlockStored loop (it runs deepest first), in
 * blocks, per chain depth (kvg_kv_tab_prefetch_node / _key). */
static const int64_t ST_AHEAD[4] = {16, 11, 7, 3};

static void store_prefetch(const struct kvg_kv_tab *t, uint32_t slot, const struct kvg_kv_event *ev,
                           const uint64_t *eh, uint32_t k, const uint64_t *seq, uint32_t R,
                           int64_t r)
{
    for (int d = 0; d < 4; d++) {
        int64_t a = r - ST_AHEAD[d];
        if (a < 0 || a >= R) continue;
        kvg_kv_tab_prefetch_node(t, seq[a], d);
        if (d < KVG_KV_PF_KEY_DEPTH)
            kvg_kv_tab_prefetch_key(t, slot, group_key(eh[a / k], ev->group_idx), d);
    }
}

/* Inserts one BlockStored whose local hashes are in seq[0..R). Called with
 * the lock held; may release and retake it between chunks (*budget counts
 * the blocks done in this hold). Returns 0, KVG_ENOTFOUND or -ENOMEM. */
static int apply_stored(struct kvg_kv_index *idx, uint32_t slot, const struct kvg_kv_batch *b,
                        const struct kvg_kv_event *ev, uint32_t k, uint64_t *seq,
                        struct kvg_kv_apply_result *res, uint32_t *budget)
{
    int aux = !prefix_group(ev), home = (int)ev->tier + (aux ? AUX : 0);
    struct kvg_kv_tab *t = &idx->t[home];
    uint32_t R = ev->n_hashes * k;
    int has_parent = 0, salted = 0;
    uint64_t parent_seq = 0;
    if (ev->has_parent) {
        struct kvg_kv_tab *pt = NULL;
        uint32_t pe = find_parent(idx, slot, home, group_key(ev->parent, ev->group_idx), &pt);
        if (pe != KVG_KV_NIL) {
            uint32_t pn = kvg_kv_tab_entry(pt, pe)->node;
            parent_seq = kvg_kv_tab_node(pt, pn & KVG_KV_NODE_MASK)->key;
            salted = !!(pn & KVG_KV_SALTED);
            has_parent = 1;
        } else if (is_own_hash(b, ev)) {
            /* Unknown and one of its own hashes: not a parent (a repeated
             * content-only page would have been found above). */
            res->self_parent++;
        } else {
            res->orphans++;
            return 0;
        }
    }
    /* Chain; a salt not yet carried by the parent's chain starts at the
     * event's salted block. */
    uint64_t salt = kvg_kv_salt_hash(ev->cache_salt.p, ev->cache_salt.len);
    uint32_t salt_from = salted || !salt ? R : ev->salt_block * k;
    for (uint32_t r = 0; r < R; r++) {
        if (r || has_parent) seq[r] = kvg_kv_seq_next(r ? seq[r - 1] : parent_seq, seq[r]);
        if (r == salt_from) seq[r] = kvg_kv_seq_salted(seq[r], salt);
    }
    const uint64_t *eh = b->hashes + ev->hash_off;
    for (int64_t r = (int64_t)R - 1 + ST_AHEAD[0]; r >= R; r--)
        store_prefetch(t, slot, ev, eh, k, seq, R, r);
    /* Deepest first, so that the chain's head ends up newest in the list. */
    for (uint32_t r = R; r-- > 0;) {
        uint32_t i = r / k, j = r % k;
        uint64_t key = group_key(eh[i], ev->group_idx);
        uint32_t flags =
            (j == k - 1 ? KVG_KV_LAST : 0) | (salted || r >= salt_from ? KVG_KV_SALTED : 0);
        store_prefetch(t, slot, ev, eh, k, seq, R, r);
        uint32_t e = kvg_kv_tab_key_find_at(t, slot, key, seq[r]);
        if (e != KVG_KV_NIL) { /* stored again: refresh */
            kvg_kv_tab_touch(t, slot, e, idx->clock);
        } else {
            /* The hash already names a block elsewhere: one more reference. */
            if (j == k - 1 && kvg_kv_tab_key_find(t, slot, key, 1) != KVG_KV_NIL) {
                if (kvg_kv_tab_ref(t, slot, key)) return -ENOMEM;
                res->repeated++;
            }
            if (kvg_kv_tab_add(t, slot, seq[r], key, flags, idx->clock) == KVG_KV_NIL)
                return -ENOMEM;
        }
        res->stored_blocks++;
        res->aux_blocks += (uint32_t)aux;
        if (++*budget >= KVG_KV_APPLY_CHUNK) {
            res->evicted += enforce_bound(idx);
            relock(idx);
            *budget = 0;
            if (!slot_live(idx, slot)) return KVG_ENOTFOUND;
        }
    }
    return 0;
}

/* A BlockStored without tokens (vLLM's offloading connector: "these blocks
 * now also live on this medium"): each engine hash names blocks this worker
 * already holds on another tier, and the copy gets the same router blocks
 * there. A hash the index does not know cannot be placed: counted as an
 * orphan, never guessed. */
static int apply_copy(struct kvg_kv_index *idx, uint32_t slot, const struct kvg_kv_batch *b,
                      const struct kvg_kv_event *ev, struct kvg_kv_apply_result *res)
{
    int aux = !prefix_group(ev), home = (int)ev->tier + (aux ? AUX : 0);
    int base = aux ? AUX : 0;
    struct kvg_kv_tab *t = &idx->t[home];
    const uint64_t *eh = b->hashes + ev->hash_off;
    for (uint32_t i = 0; i < ev->n_hashes; i++) {
        uint64_t key = group_key(eh[i], ev->group_idx);
        uint32_t ents[64], n = 0;
        struct kvg_kv_tab *from = NULL;
        for (int tb = base; tb < base + KVG_KV_TIERS && !n; tb++) {
            if (tb == home) continue;
            n = kvg_kv_tab_key_all(&idx->t[tb], slot, key, ents, KVG_ARRAY_LEN(ents));
            from = &idx->t[tb];
        }
        if (!n) {
            if (kvg_kv_tab_key_find(t, slot, key, 0) == KVG_KV_NIL) res->orphans++;
            continue;
        }
        for (uint32_t j = 0; j < n; j++) {
            const struct kvg_kv_entry *src = kvg_kv_tab_entry(from, ents[j]);
            uint32_t flags = src->node & (KVG_KV_LAST | KVG_KV_SALTED);
            uint64_t seq = kvg_kv_tab_node(from, src->node & KVG_KV_NODE_MASK)->key;
            uint32_t e = kvg_kv_tab_key_find_at(t, slot, key, seq);
            if (e != KVG_KV_NIL)
                kvg_kv_tab_touch(t, slot, e, idx->clock);
            else if (kvg_kv_tab_add(t, slot, seq, key, flags, idx->clock) == KVG_KV_NIL)
                return -ENOMEM;
            res->stored_blocks++;
            res->aux_blocks += (uint32_t)aux;
        }
    }
    return 0;
}

/* Prefetch distances of the BlockRemoved loop, in hashes, per stage of
 * kvg_kv_tab_prefetch_remove (key chain, node and neighbours, node chain). */
static const int64_t RM_AHEAD[KVG_KV_PF_REMOVE_STAGES] = {24, 20, 16, 12, 8, 5, 2};

static void remove_prefetch(const struct kvg_kv_index *idx, uint32_t slot,
                            const struct kvg_kv_event *ev, const uint64_t *eh, int64_t h)
{
    for (int s = 0; s < KVG_KV_PF_REMOVE_STAGES; s++) {
        int64_t a = h + RM_AHEAD[s];
        if (a < 0 || a >= ev->n_hashes) continue;
        uint64_t key = group_key(eh[a], ev->group_idx);
        for (int c = 0; c < NTAB; c += AUX) {
            const struct kvg_kv_tab *t = &idx->t[(int)ev->tier + c];
            if (t->w[slot].count) kvg_kv_tab_prefetch_remove(t, slot, key, s);
        }
    }
}

/* BlockRemoved: from its tier, both classes (the group key tells groups
 * apart). */
static uint32_t remove_hash(struct kvg_kv_index *idx, uint32_t slot, const struct kvg_kv_event *ev,
                            uint64_t h)
{
    uint64_t key = group_key(h, ev->group_idx);
    uint32_t n = 0;
    for (int c = 0; c < NTAB; c += AUX) {
        struct kvg_kv_tab *t = &idx->t[(int)ev->tier + c];
        if (t->w[slot].count) n += kvg_kv_tab_remove_key(t, slot, key);
    }
    return n;
}

int kvg_kv_index_apply(struct kvg_kv_index *idx, uint32_t slot, struct kvg_kv_batch *b,
                       struct kvg_kv_apply_result *res)
{
    struct kvg_kv_apply_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    if (slot >= idx->t[0].max_workers) return -EINVAL;

    /* Hash every BlockStored's tokens before taking the lock: this is most
     * of the work, and it needs nothing shared. */
    struct kvg_kv_apply_result probe = {0};
    size_t need = 0;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        if (ev->type == KVG_KV_EV_STORED && ev->n_tokens && stored_split(idx, ev, &probe))
            need += ev->n_tokens / idx->block_size;
    }
    int rc = kvg_kv_batch_scratch(b, need ? need : 1);
    if (rc) return rc;
    size_t off = 0;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        if (ev->type != KVG_KV_EV_STORED || !ev->n_tokens || !stored_split(idx, ev, &probe))
            continue;
        kvg_kv_local_hashes(b->tokens + ev->token_off, ev->n_tokens, idx->block_size,
                            event_seed(ev), b->scratch + off, need - off);
        off += ev->n_tokens / idx->block_size;
    }

    uint32_t budget = 0;
    off = 0;
    rc = 0;
    wr_lock(idx);
    if (!slot_live(idx, slot)) rc = KVG_ENOTFOUND;
    for (uint32_t i = 0; i < b->n_events && !rc; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        const uint64_t *eh = b->hashes + ev->hash_off;
        switch (ev->type) {
        case KVG_KV_EV_STORED: {
            if (!ev->n_tokens && ev->n_hashes) {
                rc = apply_copy(idx, slot, b, ev, res);
                break;
            }
            uint32_t k = stored_split(idx, ev, res);
            if (!k) break;
            rc = apply_stored(idx, slot, b, ev, k, b->scratch + off, res, &budget);
            off += ev->n_tokens / idx->block_size;
            break;
        }
        case KVG_KV_EV_REMOVED:
            /* The first hashes' stages, then each hash's further ones. */
            for (int64_t h = -RM_AHEAD[0]; h < 0; h++) remove_prefetch(idx, slot, ev, eh, h);
            for (uint32_t h = 0; h < ev->n_hashes && !rc; h++) {
                remove_prefetch(idx, slot, ev, eh, h);
                res->removed_blocks += remove_hash(idx, slot, ev, eh[h]);
                if (++budget >= KVG_KV_APPLY_CHUNK) {
                    relock(idx);
                    budget = 0;
                    if (!slot_live(idx, slot)) rc = KVG_ENOTFOUND;
                }
            }
            break;
        case KVG_KV_EV_CLEARED:
            res->cleared++;
            res->cleared_entries += (uint32_t)drain(idx, slot);
            budget = 0;
            if (!slot_live(idx, slot)) rc = KVG_ENOTFOUND;
            break;
        }
        if (!rc) res->events++;
    }
    res->evicted += enforce_bound(idx);
    unlock(idx);
    return rc;
}

/* Walks the tables from `first` (prefix or aux), every tier. */
static uint32_t match_class(struct kvg_kv_index *idx, int first, const uint64_t *seq, size_t n,
                            uint32_t *levels, size_t nslots)
{
    const struct kvg_kv_tab *tabs[KVG_KV_TIERS];
    for (int i = 0; i < KVG_KV_TIERS; i++) tabs[i] = &idx->t[first + i];
    /* Levels are per tier only when the walk has several to look at. */
    return kvg_kv_tab_match_levels(tabs, KVG_KV_TIERS, seq, n, levels, nslots, 1, idx->clock);
}

static int single_tier(const struct kvg_kv_index *idx)
{
    for (int i = 1; i < KVG_KV_TIERS; i++)
        if (idx->t[i].n_nodes) return 0;
    return 1;
}

int kvg_kv_index_match(struct kvg_kv_index *idx, const uint64_t *seq, size_t n, uint32_t *matched,
                       size_t nslots)
{
    atomic_fetch_add_explicit(&idx->lookups, 1, memory_order_relaxed);
    rd_lock(idx);
    uint32_t best;
    if (single_tier(idx)) { /* the common case: GPU only, one walk of one table */
        best = kvg_kv_tab_match(&idx->t[0], seq, n, matched, nslots, 1, idx->clock);
    } else {
        struct kvg_kv_tier_match stack[64], *tm = stack;
        if (nslots > 64 && !(tm = malloc(nslots * sizeof *tm))) {
            unlock(idx);
            return -ENOMEM;
        }
        unlock(idx);
        int rc = kvg_kv_index_match_tiers(idx, seq, n, tm, nslots);
        for (size_t w = 0; w < nslots; w++) matched[w] = tm[w].gpu + tm[w].host + tm[w].other;
        if (tm != stack) free(tm);
        return rc;
    }
    unlock(idx);
    return (int)best;
}

int kvg_kv_index_match_tiers(struct kvg_kv_index *idx, const uint64_t *seq, size_t n,
                             struct kvg_kv_tier_match *out, size_t nslots)
{
    uint32_t stack[3 * 64], *lv = stack;
    if (nslots > 64 && !(lv = malloc(3 * nslots * sizeof *lv))) return -ENOMEM;
    atomic_fetch_add_explicit(&idx->lookups, 1, memory_order_relaxed);
    rd_lock(idx);
    /* GPU only (no offload events seen): the one-table walk, which keeps
     * several cache misses in flight, instead of three tables per block. */
    int one = single_tier(idx);
    uint32_t best = one ? kvg_kv_tab_match(&idx->t[0], seq, n, lv, nslots, 1, idx->clock)
                        : match_class(idx, 0, seq, n, lv, nslots);
    unlock(idx);
    for (size_t w = 0; w < nslots; w++) {
        out[w].gpu = lv[w];
        out[w].host = one ? 0 : lv[nslots + w] - lv[w];
        out[w].other = one ? 0 : lv[2 * nslots + w] - lv[nslots + w];
    }
    if (lv != stack) free(lv);
    return (int)best;
}

int kvg_kv_index_match_aux(struct kvg_kv_index *idx, const uint64_t *seq, size_t n,
                           uint32_t *matched, size_t nslots)
{
    uint32_t stack[3 * 64], *lv = stack;
    if (nslots > 64 && !(lv = malloc(3 * nslots * sizeof *lv))) return -ENOMEM;
    rd_lock(idx);
    uint32_t best = match_class(idx, AUX, seq, n, lv, nslots);
    unlock(idx);
    memcpy(matched, lv + 2 * nslots, nslots * sizeof *matched);
    if (lv != stack) free(lv);
    return (int)best;
}

/* Sequence hashes of a request into a stack buffer or a heap one (*heap,
 * the caller frees). */
static int request_seq(const struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                       const char *lora, size_t lora_len, const char *salt, size_t salt_len,
                       uint64_t *stackbuf, size_t stackn, uint64_t **seq)
{
    size_t blocks = n / idx->block_size;
    *seq = stackbuf;
    if (blocks > stackn && !(*seq = malloc(blocks * sizeof **seq))) return -ENOMEM;
    return kvg_kv_hash_request(tokens, n, idx->block_size, lora, lora_len, salt, salt_len, *seq,
                               blocks);
}

int kvg_kv_index_match_request(struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                               const char *lora_name, size_t lora_len, const char *cache_salt,
                               size_t salt_len, struct kvg_kv_tier_match *out, size_t nslots)
{
    uint64_t stackbuf[512], *seq;
    int nb =
        request_seq(idx, tokens, n, lora_name, lora_len, cache_salt, salt_len, stackbuf, 512, &seq);
    int rc = nb < 0 ? nb : kvg_kv_index_match_tiers(idx, seq, (size_t)nb, out, nslots);
    if (seq != stackbuf) free(seq);
    return rc;
}

int kvg_kv_index_match_tokens(struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                              uint64_t seed, uint32_t *matched, size_t nslots)
{
    uint64_t stackbuf[512], *seq = stackbuf;
    size_t blocks = n / idx->block_size;
    if (blocks > 512 && !(seq = malloc(blocks * sizeof *seq))) return -ENOMEM;
    int nb = kvg_kv_hash_tokens_seeded(tokens, n, idx->block_size, seed, seq, blocks);
    int rc = nb < 0 ? nb : kvg_kv_index_match(idx, seq, (size_t)nb, matched, nslots);
    if (seq != stackbuf) free(seq);
    return rc;
}

uint32_t kvg_kv_index_held(struct kvg_kv_index *idx, uint32_t slot, enum kvg_kv_tier tier,
                           int64_t group_idx, uint64_t engine_hash)
{
    if (slot >= idx->t[0].max_workers || (unsigned)tier >= KVG_KV_TIERS) return 0;
    uint64_t key = group_key(engine_hash, group_idx);
    uint32_t n = 0;
    rd_lock(idx);
    for (int c = 0; c < NTAB; c += AUX) {
        const struct kvg_kv_tab *t = &idx->t[(int)tier + c];
        const struct kvg_kv_chain *kc = &t->w[slot].kc;
        if (!kc->b) continue;
        /* Count every entry with the key (a split engine block has k). */
        for (int pass = 0; pass < 2; pass++) {
            const uint32_t *h = NULL;
            if (pass == 0)
                h = &kc->b[kvg_kv_bucket(key, kc->mask)];
            else if (kc->ob && kvg_kv_bucket(key, kc->omask) >= kc->mpos)
                h = &kc->ob[kvg_kv_bucket(key, kc->omask)];
            for (uint32_t i = h ? *h : KVG_KV_NIL; i != KVG_KV_NIL;) {
                const struct kvg_kv_entry *e = kvg_kv_tab_entry(t, i);
                n += kvg_kv_entry_key(e) == key;
                i = e->chain;
            }
        }
    }
    unlock(idx);
    return n;
}

void kvg_kv_index_stats(struct kvg_kv_index *idx, struct kvg_kv_index_stats *st)
{
    memset(st, 0, sizeof *st);
    rd_lock(idx);
    st->bytes = sizeof *idx;
    for (int i = 0; i < NTAB; i++) {
        const struct kvg_kv_tab *t = &idx->t[i];
        st->entries += t->n_entries;
        st->nodes += t->n_nodes;
        st->bytes += kvg_kv_tab_bytes(t);
        st->dup_entries += t->dup_entries;
        st->ref_extra += t->ref_extra;
        st->tier_entries[i % KVG_KV_TIERS] += t->n_entries;
        if (i >= AUX) st->aux_entries += t->n_entries;
    }
    st->max_entries = idx->max_entries;
    st->evictions = idx->evictions;
    for (uint32_t w = 0; w < idx->t[0].max_workers; w++) st->workers += slot_live(idx, w);
    unlock(idx);
    st->lookups = atomic_load_explicit(&idx->lookups, memory_order_relaxed);
    st->rd_contended = atomic_load_explicit(&idx->rd_contended, memory_order_relaxed);
    st->wr_contended = atomic_load_explicit(&idx->wr_contended, memory_order_relaxed);
    st->block_size = idx->block_size;
}

uint64_t kvg_kv_index_worker_entries(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t[0].max_workers) return 0;
    uint64_t n = 0;
    rd_lock(idx);
    for (int i = 0; i < NTAB; i++) n += idx->t[i].w[slot].count;
    unlock(idx);
    return n;
}
