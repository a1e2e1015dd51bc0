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

struct kvg_kv_index {
    pthread_rwlock_t lock;
    struct kvg_kv_tab t;
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
    int rc = kvg_kv_tab_init(&idx->t, o->max_workers ? o->max_workers : 64);
    if (rc) {
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
        kvg_kv_tab_free(&idx->t);
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
    kvg_kv_tab_free(&idx->t);
    free(idx);
}

uint32_t kvg_kv_index_block_size(const struct kvg_kv_index *idx)
{
    return idx->block_size;
}

uint32_t kvg_kv_index_max_workers(const struct kvg_kv_index *idx)
{
    return idx->t.max_workers;
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
    struct kvg_kv_tab *t = &idx->t;
    for (;;) {
        int w = kvg_kv_tab_oldest(t, idx->clock);
        if (w < 0) return 0;
        uint32_t ei = t->w[w].tail;
        struct kvg_kv_entry *e = kvg_kv_tab_entry(t, ei);
        struct kvg_kv_node *n = kvg_kv_tab_node(t, e->node & ~KVG_KV_LAST);
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
    while (idx->t.n_entries > idx->max_entries && evict_one(idx)) n++;
    return n;
}

int kvg_kv_index_add_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    wr_lock(idx);
    int rc = kvg_kv_tab_worker_open(&idx->t, slot);
    unlock(idx);
    return rc;
}

/* Drops a slot's entries in bounded holds so that lookups keep flowing while
 * a big worker goes. */
static int drain(struct kvg_kv_index *idx, uint32_t slot)
{
    int total = 0;
    for (;;) {
        uint32_t n = kvg_kv_tab_drain(&idx->t, slot, 4096);
        total += (int)n;
        if (n < 4096) return total;
        relock(idx);
    }
}

int kvg_kv_index_remove_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t.max_workers) return -EINVAL;
    wr_lock(idx);
    struct kvg_kv_wslot *ws = &idx->t.w[slot];
    if (ws->state != KVG_KV_W_LIVE) {
        unlock(idx);
        return -ENOENT;
    }
    ws->state = KVG_KV_W_DRAINING; /* events rejected, lookups skip it */
    idx->t.live[slot / 64] &= ~(1ull << (slot % 64));
    int n = drain(idx, slot);
    kvg_kv_tab_worker_close(&idx->t, slot);
    unlock(idx);
    return n;
}

int kvg_kv_index_clear_worker(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t.max_workers) return -EINVAL;
    wr_lock(idx);
    if (idx->t.w[slot].state != KVG_KV_W_LIVE) {
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

/* Inserts one BlockStored whose local hashes are in seq[0..R). Called with
 * the lock held; may release and retake it between chunks (*budget counts
 * the blocks done in this hold). Returns 0 or KVG_ENOTFOUND. */
static int apply_stored(struct kvg_kv_index *idx, uint32_t slot, const struct kvg_kv_batch *b,
                        const struct kvg_kv_event *ev, uint32_t k, uint64_t *seq,
                        struct kvg_kv_apply_result *res, uint32_t *budget)
{
    struct kvg_kv_tab *t = &idx->t;
    uint32_t R = ev->n_hashes * k;
    int has_parent = 0;
    uint64_t parent_seq = 0;
    if (ev->has_parent) {
        uint32_t pe = kvg_kv_tab_key_find(t, slot, ev->parent, 1);
        if (pe == KVG_KV_NIL) {
            res->orphans++;
            return 0;
        }
        parent_seq = kvg_kv_tab_node(t, kvg_kv_tab_entry(t, pe)->node & ~KVG_KV_LAST)->key;
        has_parent = 1;
    }
    kvg_kv_seq_chain(seq, R, has_parent, parent_seq, seq);
    const uint64_t *eh = b->hashes + ev->hash_off;
    /* Deepest first, so that the chain's head ends up newest in the list. */
    for (uint32_t r = R; r-- > 0;) {
        uint32_t i = r / k, j = r % k;
        if (r >= 8) { /* overlap the cache misses of the next blocks */
            kvg_kv_tab_prefetch_node(t, seq[r - 8]);
            kvg_kv_tab_prefetch_key(t, slot, eh[(r - 8) / k]);
        }
        if (j == k - 1) {
            uint32_t e = kvg_kv_tab_key_find(t, slot, eh[i], 0);
            if (e != KVG_KV_NIL) {
                struct kvg_kv_entry *en = kvg_kv_tab_entry(t, e);
                if (k == 1 && kvg_kv_tab_node(t, en->node & ~KVG_KV_LAST)->key == seq[r]) {
                    kvg_kv_tab_touch(t, slot, e, idx->clock);
                    goto next;
                }
                kvg_kv_tab_remove_key(t, slot, eh[i]);
            }
        }
        if (kvg_kv_tab_add(t, slot, seq[r], eh[i], j == k - 1, idx->clock) == KVG_KV_NIL)
            return -ENOMEM;
    next:
        res->stored_blocks++;
        if (++*budget >= KVG_KV_APPLY_CHUNK) {
            res->evicted += enforce_bound(idx);
            relock(idx);
            *budget = 0;
            if (t->w[slot].state != KVG_KV_W_LIVE) return KVG_ENOTFOUND;
        }
    }
    return 0;
}

int kvg_kv_index_apply(struct kvg_kv_index *idx, uint32_t slot, struct kvg_kv_batch *b,
                       struct kvg_kv_apply_result *res)
{
    struct kvg_kv_apply_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    if (slot >= idx->t.max_workers) return -EINVAL;

    /* Hash every BlockStored's tokens before taking the lock: this is most
     * of the work, and it needs nothing shared. */
    struct kvg_kv_apply_result probe = {0};
    size_t need = 0;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        if (ev->type == KVG_KV_EV_STORED && stored_split(idx, ev, &probe))
            need += ev->n_tokens / idx->block_size;
    }
    int rc = kvg_kv_batch_scratch(b, need ? need : 1);
    if (rc) return rc;
    size_t off = 0;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        if (ev->type != KVG_KV_EV_STORED || !stored_split(idx, ev, &probe)) continue;
        kvg_kv_local_hashes(b->tokens + ev->token_off, ev->n_tokens, idx->block_size,
                            event_seed(ev), b->scratch + off, need - off);
        off += ev->n_tokens / idx->block_size;
    }

    struct kvg_kv_tab *t = &idx->t;
    uint32_t budget = 0;
    off = 0;
    rc = 0;
    wr_lock(idx);
    if (t->w[slot].state != KVG_KV_W_LIVE) rc = KVG_ENOTFOUND;
    for (uint32_t i = 0; i < b->n_events && !rc; i++) {
        const struct kvg_kv_event *ev = &b->events[i];
        const uint64_t *eh = b->hashes + ev->hash_off;
        switch (ev->type) {
        case KVG_KV_EV_STORED: {
            uint32_t k = stored_split(idx, ev, res);
            if (!k) break;
            rc = apply_stored(idx, slot, b, ev, k, b->scratch + off, res, &budget);
            off += ev->n_tokens / idx->block_size;
            break;
        }
        case KVG_KV_EV_REMOVED:
            for (uint32_t h = 0; h < ev->n_hashes && !rc; h++) {
                if (h + 8 < ev->n_hashes) kvg_kv_tab_prefetch_key(t, slot, eh[h + 8]);
                res->removed_blocks += kvg_kv_tab_remove_key(t, slot, eh[h]);
                if (++budget >= KVG_KV_APPLY_CHUNK) {
                    relock(idx);
                    budget = 0;
                    if (t->w[slot].state != KVG_KV_W_LIVE) rc = KVG_ENOTFOUND;
                }
            }
            break;
        case KVG_KV_EV_CLEARED:
            res->cleared++;
            res->cleared_entries += (uint32_t)drain(idx, slot);
            budget = 0;
            if (t->w[slot].state != KVG_KV_W_LIVE) rc = KVG_ENOTFOUND;
            break;
        }
        if (!rc) res->events++;
    }
    res->evicted += enforce_bound(idx);
    unlock(idx);
    return rc;
}

int kvg_kv_index_match(struct kvg_kv_index *idx, const uint64_t *seq, size_t n, uint32_t *matched,
                       size_t nslots)
{
    atomic_fetch_add_explicit(&idx->lookups, 1, memory_order_relaxed);
    rd_lock(idx);
    uint32_t best = kvg_kv_tab_match(&idx->t, seq, n, matched, nslots, 1, idx->clock);
    unlock(idx);
    return (int)best;
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

void kvg_kv_index_stats(struct kvg_kv_index *idx, struct kvg_kv_index_stats *st)
{
    memset(st, 0, sizeof *st);
    rd_lock(idx);
    st->entries = idx->t.n_entries;
    st->nodes = idx->t.n_nodes;
    st->bytes = kvg_kv_tab_bytes(&idx->t) + sizeof *idx;
    st->max_entries = idx->max_entries;
    st->evictions = idx->evictions;
    st->dup_entries = idx->t.dup_entries;
    for (uint32_t w = 0; w < idx->t.max_workers; w++)
        st->workers += idx->t.w[w].state == KVG_KV_W_LIVE;
    unlock(idx);
    st->lookups = atomic_load_explicit(&idx->lookups, memory_order_relaxed);
    st->rd_contended = atomic_load_explicit(&idx->rd_contended, memory_order_relaxed);
    st->wr_contended = atomic_load_explicit(&idx->wr_contended, memory_order_relaxed);
    st->block_size = idx->block_size;
}

uint64_t kvg_kv_index_worker_entries(struct kvg_kv_index *idx, uint32_t slot)
{
    if (slot >= idx->t.max_workers) return 0;
    rd_lock(idx);
    uint64_t n = idx->t.w[slot].count;
    unlock(idx);
    return n;
}
