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
#include "base/lfstack.h"
#include "base/lock.h"
#include "kv/table.h"

/* A record an event loop could not make at once (see approx.h): the next
 * holder of the exclusive lock makes it. */
struct deferred {
    struct kvg_lfs_node link; /* first */
    uint32_t slot;
    uint32_t now;
    size_t n;
    uint64_t seq[];
};

/* Blocks waiting in deferred records at most: past it a loop's record is
 * dropped (counted), as the index is approximate anyway. */
#define DEFER_MAX_BLOCKS (1u << 16)
/* Blocks added or pruned per hold of the exclusive lock: a big prompt's
 * record lets the lookups of other requests in between, and a hold (tens of
 * microseconds at most) ends within KVG_LOCK_TRY_NS unless its thread is
 * preempted. */
#define HOLD_BLOCKS 128

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
    uint32_t latest; /* the latest now a change brought (exclusive lock) */
    int pruning;     /* a prune is under way: down to prune_to, budget by budget */
    kvg_lfs deferred;
    _Atomic uint64_t deferred_blocks;
    _Atomic uint64_t busy_lookups, deferred_records, dropped_records;
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
    for (struct kvg_lfs_node *d = kvg_lfs_take(&a->deferred), *next; d; d = next) {
        next = d->next;
        free(d);
    }
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

static void lock_ex(struct kvg_kv_approx *a);

/* What one hold of the exclusive lock may drop (expired or pruned records):
 * a caller that must not wait drops a bounded share and leaves the rest to
 * the next writer, so that a loop never does a million at once; the others
 * drop everything, letting lookups in every HOLD_BLOCKS. */
struct budget {
    uint64_t left; /* UINT64_MAX: no bound */
    int relock;    /* let go of the lock every HOLD_BLOCKS */
    uint32_t held;
};

/* Whether the caller may drop one more record (exclusive lock held). Every
 * HOLD_BLOCKS it lets go of the lock and takes it again first; the caller
 * then looks at the table again. */
static int spend(struct kvg_kv_approx *a, struct budget *b)
{
    if (!b->left) return 0;
    if (b->left != UINT64_MAX) b->left--;
    if (b->relock && ++b->held == HOLD_BLOCKS) {
        b->held = 0;
        pthread_rwlock_unlock(&a->lock);
        lock_ex(a);
    }
    return 1;
}

static uint64_t expire_locked(struct kvg_kv_approx *a, uint32_t now, struct budget *b)
{
    uint64_t n = 0;
    for (;;) {
        int w = kvg_kv_tab_oldest(&a->t, now);
        if (w < 0 || (int32_t)(now - a->t.tail_stamp[w]) < 0 || !spend(a, b)) break;
        w = kvg_kv_tab_oldest(&a->t, now); /* spend may have let go of the lock */
        if (w < 0 || (int32_t)(now - a->t.tail_stamp[w]) < 0) break;
        kvg_kv_tab_remove(&a->t, (uint32_t)w, a->t.w[w].tail);
        n++;
    }
    a->expired += n;
    return n;
}

/* Adds or renews slot's records of seq[0..n), deepest first: when pruning
 * takes this worker's oldest records, the tail of a prompt goes before its
 * head. With `chunked`, the exclusive lock is let go every HOLD_BLOCKS
 * (lock_ex on re-entry). 0, or -ENOMEM. */
static int record_locked(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                         uint32_t now, int chunked)
{
    uint32_t exp = now + a->ttl_ms;
    size_t held = 0;
    for (size_t i = n; i-- > 0;) {
        if (chunked && ++held > HOLD_BLOCKS) {
            held = 0;
            pthread_rwlock_unlock(&a->lock);
            lock_ex(a);
            if (a->t.w[slot].state != KVG_KV_W_LIVE) break; /* removed meanwhile */
        }
        uint32_t e = kvg_kv_tab_key_find(&a->t, slot, seq[i], 0);
        if (e != KVG_KV_NIL)
            kvg_kv_tab_touch(&a->t, slot, e, exp);
        else if (kvg_kv_tab_add(&a->t, slot, seq[i], seq[i], KVG_KV_LAST, exp) == KVG_KV_NIL)
            return -ENOMEM;
    }
    return 0;
}

/* The records loops deferred, oldest first (exclusive lock held). Each is
 * made as of the latest time a change brought if that is later than when it
 * was routed, so that every worker's list stays in expiry order. */
static void apply_deferred(struct kvg_kv_approx *a)
{
    for (struct deferred *r = (struct deferred *)kvg_lfs_take(&a->deferred), *next; r; r = next) {
        next = (struct deferred *)r->link.next;
        if ((int32_t)(r->now - a->latest) > 0) a->latest = r->now;
        if (a->t.w[r->slot].state == KVG_KV_W_LIVE)
            record_locked(a, r->slot, r->seq, r->n, a->latest, 0);
        atomic_fetch_sub_explicit(&a->deferred_blocks, r->n, memory_order_relaxed);
        free(r);
    }
}

static void lock_ex(struct kvg_kv_approx *a)
{
    pthread_rwlock_wrlock(&a->lock);
    apply_deferred(a);
}

/* For a caller that must not wait (base/lock.h). 0 or -EBUSY. */
static int lock_try(struct kvg_kv_approx *a, int excl)
{
    if (kvg_rwlock_try_for(&a->lock, excl, KVG_LOCK_TRY_NS)) return -EBUSY;
    if (excl) apply_deferred(a);
    return 0;
}

int kvg_kv_approx_add_worker(struct kvg_kv_approx *a, uint32_t slot)
{
    lock_ex(a);
    int rc = kvg_kv_tab_worker_open(&a->t, slot);
    pthread_rwlock_unlock(&a->lock);
    return rc;
}

int kvg_kv_approx_remove_worker(struct kvg_kv_approx *a, uint32_t slot)
{
    if (slot >= a->t.max_workers) return -EINVAL;
    lock_ex(a);
    if (a->t.w[slot].state != KVG_KV_W_LIVE) {
        pthread_rwlock_unlock(&a->lock);
        return -ENOENT;
    }
    int n = (int)kvg_kv_tab_drain(&a->t, slot, UINT32_MAX);
    kvg_kv_tab_worker_close(&a->t, slot);
    pthread_rwlock_unlock(&a->lock);
    return n;
}

/* Prunes the oldest records down to prune_to once over max_blocks, within
 * the budget (exclusive lock held on entry and exit). A bounded caller goes
 * on with a prune another began (still over prune_to), so that loop-only
 * traffic keeps the index bounded too. */
static void prune_locked(struct kvg_kv_approx *a, uint32_t now, struct budget *b)
{
    if (a->t.n_entries <= a->max_blocks && !a->pruning) return;
    a->pruning = 1;
    while (a->t.n_entries > a->prune_to) {
        if (!spend(a, b)) return;              /* first: it may let go of the lock */
        int w = kvg_kv_tab_oldest(&a->t, now); /* then the table as it is */
        if (w < 0) break;
        kvg_kv_tab_remove(&a->t, (uint32_t)w, a->t.w[w].tail);
        a->pruned++;
    }
    a->pruning = 0;
}

static int defer(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                 uint32_t now)
{
    uint64_t before = atomic_fetch_add_explicit(&a->deferred_blocks, n, memory_order_relaxed);
    struct deferred *d = before + n > DEFER_MAX_BLOCKS ? NULL : malloc(sizeof *d + n * sizeof *seq);
    if (!d) {
        atomic_fetch_sub_explicit(&a->deferred_blocks, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&a->dropped_records, 1, memory_order_relaxed);
        return before + n > DEFER_MAX_BLOCKS ? -EBUSY : -ENOMEM;
    }
    *d = (struct deferred){.slot = slot, .now = now, .n = n};
    memcpy(d->seq, seq, n * sizeof *seq);
    kvg_lfs_push(&a->deferred, &d->link);
    atomic_fetch_add_explicit(&a->deferred_records, 1, memory_order_relaxed);
    return (int)n;
}

static int record(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                  uint64_t now_ms, int nowait)
{
    if (slot >= a->t.max_workers) return -EINVAL;
    uint32_t now = (uint32_t)now_ms;
    if (nowait && lock_try(a, 1)) return defer(a, slot, seq, n, now);
    if (!nowait) lock_ex(a);
    if ((int32_t)(now - a->latest) > 0) a->latest = now;
    struct budget b = {nowait ? 2 * (uint64_t)n + HOLD_BLOCKS : UINT64_MAX, !nowait, 0};
    expire_locked(a, now, &b); /* may let go of the lock: the slot is checked after */
    if (a->t.w[slot].state != KVG_KV_W_LIVE) {
        note_next(a, now);
        pthread_rwlock_unlock(&a->lock);
        return KVG_ENOTFOUND;
    }
    int rc = record_locked(a, slot, seq, n, now, !nowait);
    prune_locked(a, now, &b);
    note_next(a, now);
    pthread_rwlock_unlock(&a->lock);
    return rc ? rc : (int)n;
}

int kvg_kv_approx_record(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                         uint64_t now_ms)
{
    return record(a, slot, seq, n, now_ms, 0);
}

int kvg_kv_approx_record_nowait(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq,
                                size_t n, uint64_t now_ms)
{
    return record(a, slot, seq, n, now_ms, 1);
}

int kvg_kv_approx_expire(struct kvg_kv_approx *a, uint64_t now_ms)
{
    uint32_t now = (uint32_t)now_ms;
    lock_ex(a);
    struct budget b = {UINT64_MAX, 1, 0};
    uint64_t n = expire_locked(a, now, &b);
    note_next(a, now);
    pthread_rwlock_unlock(&a->lock);
    return (int)n;
}

static int match(struct kvg_kv_approx *a, const uint64_t *seq, size_t n, uint32_t *matched,
                 size_t nslots, uint64_t now_ms, int nowait)
{
    uint32_t now = (uint32_t)now_ms;
    int due = atomic_load_explicit(&a->have_exp, memory_order_acquire) &&
              (int32_t)(now - atomic_load_explicit(&a->next_exp, memory_order_relaxed)) >= 0;
    if (due || (nowait && !kvg_lfs_empty(&a->deferred))) {
        /* Expiry, and the loops' deferred records, need the exclusive lock:
         * a caller that must not wait tries it once (no spin: it is only
         * housekeeping) and leaves them to the next one. */
        if (!nowait) {
            kvg_kv_approx_expire(a, now_ms);
        } else if (pthread_rwlock_trywrlock(&a->lock) == 0) {
            apply_deferred(a);
            struct budget b = {HOLD_BLOCKS, 0, 0};
            if (due) expire_locked(a, now, &b);
            note_next(a, now);
            pthread_rwlock_unlock(&a->lock);
        }
    }
    if (nowait && lock_try(a, 0)) {
        memset(matched, 0, nslots * sizeof *matched);
        atomic_fetch_add_explicit(&a->busy_lookups, 1, memory_order_relaxed);
        return -EBUSY;
    }
    if (!nowait) pthread_rwlock_rdlock(&a->lock);
    uint32_t best = kvg_kv_tab_match(&a->t, seq, n, matched, nslots, 0, 0);
    pthread_rwlock_unlock(&a->lock);
    return (int)best;
}

int kvg_kv_approx_match(struct kvg_kv_approx *a, const uint64_t *seq, size_t n, uint32_t *matched,
                        size_t nslots, uint64_t now_ms)
{
    return match(a, seq, n, matched, nslots, now_ms, 0);
}

int kvg_kv_approx_match_nowait(struct kvg_kv_approx *a, const uint64_t *seq, size_t n,
                               uint32_t *matched, size_t nslots, uint64_t now_ms)
{
    return match(a, seq, n, matched, nslots, now_ms, 1);
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
    st->busy_lookups = atomic_load_explicit(&a->busy_lookups, memory_order_relaxed);
    st->deferred_records = atomic_load_explicit(&a->deferred_records, memory_order_relaxed);
    st->dropped_records = atomic_load_explicit(&a->dropped_records, memory_order_relaxed);
    for (uint32_t w = 0; w < a->t.max_workers; w++) st->workers += a->t.w[w].state == KVG_KV_W_LIVE;
    pthread_rwlock_unlock(&a->lock);
}
