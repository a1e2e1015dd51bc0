/* Approximate (TTL) KV index; see approx.h. It shares table.c with the
 * precise index: an entry's key is the block's own sequence hash (so a
 * re-routed block is found and renewed) and its stamp is the expiry time, so
 * each worker's list is ordered by expiry and the oldest record of all is at
 * one of the list tails. */
#include "kv/approx.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "kv/table.h"

struct kvg_kv_approx {
    pthread_rwlock_t lock;
    struct kvg_kv_tab t;
    uint32_t ttl_ms;
    uint64_t max_blocks, prune_to;
    uint64_t expired, pruned;
    /* Earliest expiry among all records (valid when have_exp): lets a lookup
     * see without the exclusive lock that nothing has expired yet. */
    _Atomic uint32_t next_exp;
    _Atomic int have_exp;
};

int kvg_kv_approx_new(const struct kvg_kv_approx_opts *o, struct kvg_kv_approx **out)
{
    struct kvg_kv_approx_opts d = {0};
    if (!o) o = &d;
    if (o->ttl_ms > (1u << 30) || o->prune_target < 0 || o->prune_target > 1) return -EINVAL;
    struct kvg_kv_approx *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    int rc = kvg_kv_tab_init(&a->t, o->max_workers ? o->max_workers : 64);
    if (rc) {
        free(a);
        return rc;
    }
    kvg_kv_tab_age_enable(&a->t); /* pruning takes the oldest of all, many at a time */
    if ((rc = pthread_rwlock_init(&a->lock, NULL))) {
        kvg_kv_tab_free(&a->t);
        free(a);
        return -rc;
    }
    a->ttl_ms = o->ttl_ms ? o->ttl_ms : 120000;
    a->max_blocks = o->max_blocks ? o->max_blocks : 1u << 20;
    double target = o->prune_target > 0 ? o->prune_target : 0.8;
    a->prune_to = (uint64_t)((double)a->max_blocks * target);
    *out = a;
    return 0;
}

void kvg_kv_approx_free(struct kvg_kv_approx *a)
{
    if (!a) return;
    pthread_rwlock_destroy(&a->lock);
    kvg_kv_tab_free(&a->t);
    free(a);
}

/* Recomputes next_exp after the lists changed (exclusive lock held). */
static void note_next(struct kvg_kv_approx *a, uint32_t now)
{
    int w = kvg_kv_tab_oldest(&a->t, now);
    if (w >= 0) atomic_store_explicit(&a->next_exp, a->t.tail_stamp[w], memory_order_relaxed);
    atomic_store_explicit(&a->have_exp, w >= 0, memory_order_release);
}

static uint64_t expire_locked(struct kvg_kv_approx *a, uint32_t now)
{
    uint64_t n = 0;
    for (;;) {
        int w = kvg_kv_tab_oldest(&a->t, now);
        if (w < 0 || (int32_t)(now - a->t.tail_stamp[w]) < 0) break;
        kvg_kv_tab_remove(&a->t, (uint32_t)w, a->t.w[w].tail);
        n++;
    }
    a->expired += n;
    return n;
}

int kvg_kv_approx_add_worker(struct kvg_kv_approx *a, uint32_t slot)
{
    pthread_rwlock_wrlock(&a->lock);
    int rc = kvg_kv_tab_worker_open(&a->t, slot);
    pthread_rwlock_unlock(&a->lock);
    return rc;
}

int kvg_kv_approx_remove_worker(struct kvg_kv_approx *a, uint32_t slot)
{
    if (slot >= a->t.max_workers) return -EINVAL;
    pthread_rwlock_wrlock(&a->lock);
    if (a->t.w[slot].state != KVG_KV_W_LIVE) {
        pthread_rwlock_unlock(&a->lock);
        return -ENOENT;
    }
    int n = (int)kvg_kv_tab_drain(&a->t, slot, UINT32_MAX);
    kvg_kv_tab_worker_close(&a->t, slot);
    pthread_rwlock_unlock(&a->lock);
    return n;
}

/* Blocks added or pruned per hold of the exclusive lock: a big prompt's
 * record lets the lookups of other requests in between (a hold stays in the
 * milliseconds, where the whole record of a 50 MB prompt took seconds). */
#define HOLD_BLOCKS 4096

/* Prunes the oldest records down to prune_to once over max_blocks, letting
 * lookups in every HOLD_BLOCKS (exclusive lock held on entry and exit). */
static void prune_locked(struct kvg_kv_approx *a, uint32_t now)
{
    if (a->t.n_entries <= a->max_blocks) return;
    uint32_t held = 0;
    while (a->t.n_entries > a->prune_to) {
        int w = kvg_kv_tab_oldest(&a->t, now);
        if (w < 0) break;
        kvg_kv_tab_remove(&a->t, (uint32_t)w, a->t.w[w].tail);
        a->pruned++;
        if (++held == HOLD_BLOCKS) {
            held = 0;
            pthread_rwlock_unlock(&a->lock);
            pthread_rwlock_wrlock(&a->lock);
        }
    }
}

int kvg_kv_approx_record(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                         uint64_t now_ms)
{
    if (slot >= a->t.max_workers) return -EINVAL;
    uint32_t now = (uint32_t)now_ms, exp = now + a->ttl_ms;
    int rc = 0;
    pthread_rwlock_wrlock(&a->lock);
    if (a->t.w[slot].state != KVG_KV_W_LIVE) {
        pthread_rwlock_unlock(&a->lock);
        return KVG_ENOTFOUND;
    }
    expire_locked(a, now);
    /* Deepest first: when pruning takes this worker's oldest records, the
     * tail of a prompt goes before its head. */
    size_t held = 0;
    for (size_t i = n; i-- > 0;) {
        if (++held > HOLD_BLOCKS) {
            held = 0;
            pthread_rwlock_unlock(&a->lock);
            pthread_rwlock_wrlock(&a->lock);
            if (a->t.w[slot].state != KVG_KV_W_LIVE) break; /* removed meanwhile */
        }
        uint32_t e = kvg_kv_tab_key_find(&a->t, slot, seq[i], 0);
        if (e != KVG_KV_NIL) {
            kvg_kv_tab_touch(&a->t, slot, e, exp);
        } else if (kvg_kv_tab_add(&a->t, slot, seq[i], seq[i], KVG_KV_LAST, exp) == KVG_KV_NIL) {
            rc = -ENOMEM;
            break;
        }
    }
    prune_locked(a, now);
    note_next(a, now);
    pthread_rwlock_unlock(&a->lock);
    return rc ? rc : (int)n;
}

int kvg_kv_approx_expire(struct kvg_kv_approx *a, uint64_t now_ms)
{
    uint32_t now = (uint32_t)now_ms;
    pthread_rwlock_wrlock(&a->lock);
    uint64_t n = expire_locked(a, now);
    note_next(a, now);
    pthread_rwlock_unlock(&a->lock);
    return (int)n;
}

int kvg_kv_approx_match(struct kvg_kv_approx *a, const uint64_t *seq, size_t n, uint32_t *matched,
                        size_t nslots, uint64_t now_ms)
{
    uint32_t now = (uint32_t)now_ms;
    if (atomic_load_explicit(&a->have_exp, memory_order_acquire) &&
        (int32_t)(now - atomic_load_explicit(&a->next_exp, memory_order_relaxed)) >= 0)
        kvg_kv_approx_expire(a, now_ms);
    pthread_rwlock_rdlock(&a->lock);
    uint32_t best = kvg_kv_tab_match(&a->t, seq, n, matched, nslots, 0, 0);
    pthread_rwlock_unlock(&a->lock);
    return (int)best;
}

void kvg_kv_approx_stats(struct kvg_kv_approx *a, struct kvg_kv_approx_stats *st)
{
    memset(st, 0, sizeof *st);
    pthread_rwlock_rdlock(&a->lock);
    st->entries = a->t.n_entries;
    st->nodes = a->t.n_nodes;
    st->bytes = kvg_kv_tab_bytes(&a->t) + sizeof *a;
    st->expired = a->expired;
    st->pruned = a->pruned;
    for (uint32_t w = 0; w < a->t.max_workers; w++) st->workers += a->t.w[w].state == KVG_KV_W_LIVE;
    pthread_rwlock_unlock(&a->lock);
}
