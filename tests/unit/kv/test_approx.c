/* Dynamo's approximate mode: records of routed blocks with a TTL, renewal,
 * longest prefix, pruning to the size bound, worker removal. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/err.h"
#include "kv/approx.h"
#include "support/test.h"

static struct kvg_kv_approx *mk(uint32_t workers, uint32_t ttl, uint64_t max, double target)
{
    struct kvg_kv_approx_opts o = {
        .max_workers = workers, .ttl_ms = ttl, .max_blocks = max, .prune_target = target};
    struct kvg_kv_approx *a = NULL;
    CHECK_INT(kvg_kv_approx_new(&o, &a), 0);
    for (uint32_t w = 0; w < workers; w++) CHECK_INT(kvg_kv_approx_add_worker(a, w), 0);
    return a;
}

static const uint64_t A[6] = {11, 12, 13, 14, 15, 16}, B[6] = {21, 22, 23, 24, 25, 26};

TEST(records_expire_after_ttl_and_renew)
{
    struct kvg_kv_approx *a = mk(2, 1000, 0, 0);
    uint32_t out[2];
    CHECK_INT(kvg_kv_approx_record(a, 0, A, 3, 10000), 3);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 2, 10500), 3);
    CHECK_INT(out[0], 3);
    CHECK_INT(out[1], 0);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 2, 10999), 3);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 2, 11000), 0); /* expired at 10000 + 1000 */
    /* Renewal: routed again at 800 ms, the first two blocks only. */
    CHECK_INT(kvg_kv_approx_record(a, 0, A, 3, 20000), 3);
    CHECK_INT(kvg_kv_approx_record(a, 0, A, 2, 20800), 2);
    CHECK_INT(kvg_kv_approx_match(a, A, 3, out, 2, 21500), 2);
    CHECK_INT(kvg_kv_approx_match(a, A, 3, out, 2, 21800), 0);
    struct kvg_kv_approx_stats st;
    kvg_kv_approx_stats(a, &st);
    CHECK_INT(st.entries, 0);
    CHECK_INT(st.nodes, 0);
    CHECK_INT(st.expired, 6);
    kvg_kv_approx_free(a);
}

TEST(longest_prefix_per_worker)
{
    struct kvg_kv_approx *a = mk(3, 5000, 0, 0);
    uint32_t out[3];
    kvg_kv_approx_record(a, 0, A, 6, 1);
    kvg_kv_approx_record(a, 1, A, 2, 2);
    kvg_kv_approx_record(a, 2, B, 6, 3);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 3, 4), 6);
    CHECK_INT(out[0], 6);
    CHECK_INT(out[1], 2);
    CHECK_INT(out[2], 0);
    /* A divergent block stops the match. */
    uint64_t mixed[3] = {A[0], B[1], A[2]};
    CHECK_INT(kvg_kv_approx_match(a, mixed, 3, out, 3, 5), 1);
    CHECK_INT(out[1], 1);
    CHECK_INT(kvg_kv_approx_record(a, 3, A, 1, 5), -EINVAL);
    CHECK_INT(kvg_kv_approx_remove_worker(a, 0), 6);
    CHECK_INT(kvg_kv_approx_record(a, 0, A, 1, 6), KVG_ENOTFOUND);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 3, 7), 2);
    CHECK_INT(out[0], 0);
    kvg_kv_approx_free(a);
}

TEST(prune_to_target_oldest_first)
{
    struct kvg_kv_approx *a = mk(2, 60000, 10, 0.5);
    uint32_t out[2];
    struct kvg_kv_approx_stats st;
    kvg_kv_approx_record(a, 0, A, 6, 100);
    kvg_kv_approx_record(a, 1, B, 6, 200); /* 12 > 10: prune down to 5 */
    kvg_kv_approx_stats(a, &st);
    CHECK_INT(st.entries, 5);
    CHECK_INT(st.pruned, 7);
    CHECK_INT(kvg_kv_approx_match(a, A, 6, out, 2, 300), 0);
    CHECK_INT(kvg_kv_approx_match(a, B, 6, out, 2, 300), 5); /* its deepest block went */
    CHECK_INT(out[1], 5);
    CHECK(st.bytes > 0);
    kvg_kv_approx_free(a);
}

TEST(expire_call_and_bad_options)
{
    struct kvg_kv_approx *a = mk(1, 100, 0, 0);
    kvg_kv_approx_record(a, 0, A, 4, 0);
    kvg_kv_approx_record(a, 0, B, 2, 50);
    CHECK_INT(kvg_kv_approx_expire(a, 99), 0);
    CHECK_INT(kvg_kv_approx_expire(a, 100), 4);
    CHECK_INT(kvg_kv_approx_expire(a, 150), 2);
    kvg_kv_approx_free(a);
    struct kvg_kv_approx_opts bad = {.prune_target = 1.5};
    CHECK_INT(kvg_kv_approx_new(&bad, &a), -EINVAL);
    /* Defaults: Dynamo's 120 s. */
    CHECK_INT(kvg_kv_approx_new(NULL, &a), 0);
    kvg_kv_approx_add_worker(a, 0);
    uint32_t out[1];
    kvg_kv_approx_record(a, 0, A, 1, 1000);
    CHECK_INT(kvg_kv_approx_match(a, A, 1, out, 1, 120999), 1);
    CHECK_INT(kvg_kv_approx_match(a, A, 1, out, 1, 121000), 0);
    kvg_kv_approx_free(a);
}

/* The _nowait calls (an event loop's): with the lock held elsewhere for
 * long, a record is deferred, not lost, and made by the next holder of the
 * exclusive lock; a lookup gives up with -EBUSY and no match. The long
 * holder here is a lookup of a 300,000-block chain (shared lock) and an
 * expiry of 300,000 records (exclusive lock); each attempt is retried up to
 * 20 times, in case the holder had not taken the lock yet. */
#define LONG_N 300000

struct holder {
    struct kvg_kv_approx *a;
    const uint64_t *seq;
    int expire; /* else a lookup */
    _Atomic int started;
};

static void *hold(void *arg)
{
    struct holder *h = arg;
    uint32_t out[2];
    atomic_store(&h->started, 1);
    if (h->expire)
        kvg_kv_approx_expire(h->a, 1000000);
    else
        kvg_kv_approx_match(h->a, h->seq, LONG_N, out, 2, 100);
    return NULL;
}

static uint64_t *long_chain(void)
{
    uint64_t *seq = malloc(LONG_N * sizeof *seq);
    CHECK(seq != NULL);
    for (size_t i = 0; i < LONG_N; i++) seq[i] = 1000000 + i;
    return seq;
}

TEST(nowait_record_is_deferred_then_made)
{
    struct kvg_kv_approx *a = mk(2, 60000, 1u << 22, 0);
    uint64_t *seq = long_chain();
    CHECK_INT(kvg_kv_approx_record(a, 1, seq, LONG_N, 100), LONG_N);
    struct kvg_kv_approx_stats st;
    int deferred = 0;
    for (int attempt = 0; attempt < 20 && !deferred; attempt++) {
        struct holder h = {.a = a, .seq = seq};
        pthread_t th;
        CHECK_INT(pthread_create(&th, NULL, hold, &h), 0);
        while (!atomic_load(&h.started)) usleep(100);
        usleep(2000);
        CHECK_INT(kvg_kv_approx_record_nowait(a, 0, A, 6, 200), 6);
        pthread_join(th, NULL);
        kvg_kv_approx_stats(a, &st);
        deferred = st.deferred_records > 0;
    }
    CHECK(deferred);
    CHECK_INT(st.dropped_records, 0);
    /* The next exclusive holder (here a nowait lookup's) makes it. */
    uint32_t out[2];
    CHECK_INT(kvg_kv_approx_match_nowait(a, A, 6, out, 2, 300), 6);
    CHECK_INT(out[0], 6);
    CHECK_INT(out[1], 0);
    kvg_kv_approx_stats(a, &st);
    CHECK_INT(st.entries, LONG_N + 6);
    free(seq);
    kvg_kv_approx_free(a);
}

TEST(nowait_lookup_gives_up_on_a_long_hold)
{
    struct kvg_kv_approx *a = mk(2, 1000, 1u << 22, 0);
    uint64_t *seq = long_chain();
    CHECK_INT(kvg_kv_approx_record(a, 0, B, 6, 2000000), 6); /* after the holder's now */
    int busy = 0;
    for (int attempt = 0; attempt < 20 && !busy; attempt++) {
        /* Records that the holder's expiry drops, under the exclusive lock. */
        CHECK_INT(kvg_kv_approx_record(a, 1, seq, LONG_N, 100), LONG_N);
        struct holder h = {.a = a, .expire = 1};
        pthread_t th;
        CHECK_INT(pthread_create(&th, NULL, hold, &h), 0);
        while (!atomic_load(&h.started)) usleep(100);
        usleep(2000);
        uint32_t out[2] = {7, 7};
        int rc = kvg_kv_approx_match_nowait(a, B, 6, out, 2, 2000100);
        pthread_join(th, NULL);
        if (rc == -EBUSY) {
            busy = 1;
            CHECK_INT(out[0], 0);
            CHECK_INT(out[1], 0);
        } else {
            CHECK_INT(rc, 6); /* the holder had not started, or was done: a plain lookup */
        }
    }
    CHECK(busy);
    struct kvg_kv_approx_stats st;
    kvg_kv_approx_stats(a, &st);
    CHECK(st.busy_lookups >= 1);
    uint32_t out[2];
    CHECK_INT(kvg_kv_approx_match_nowait(a, B, 6, out, 2, 2000200), 6); /* free again: found */
    free(seq);
    kvg_kv_approx_free(a);
}

/* A loop's record prunes a bounded share (twice its blocks + 128) and the
 * next ones go on with it: loop-only traffic keeps the index bounded, and
 * no single loop call drops a whole prune's worth. */
TEST(nowait_record_prunes_in_bounded_steps)
{
    struct kvg_kv_approx *a = mk(1, 1000000, 1000, 0.5);
    uint64_t seq[1000];
    for (size_t i = 0; i < 1000; i++) seq[i] = 5000 + i;
    CHECK_INT(kvg_kv_approx_record(a, 0, seq, 1000, 100), 1000); /* at max_blocks, not over */
    struct kvg_kv_approx_stats st;
    uint64_t more[10];
    for (size_t i = 0; i < 10; i++) more[i] = 90000 + i;
    CHECK_INT(kvg_kv_approx_record_nowait(a, 0, more, 10, 200), 10);
    kvg_kv_approx_stats(a, &st);
    CHECK_INT(st.entries, 1010 - (2 * 10 + 128)); /* the budget, not down to 500 */
    for (int r = 0; r < 5; r++) {
        for (size_t i = 0; i < 10; i++) more[i] = 100000 + (uint64_t)r * 10 + i;
        CHECK_INT(kvg_kv_approx_record_nowait(a, 0, more, 10, 300 + (uint64_t)r), 10);
    }
    kvg_kv_approx_stats(a, &st);
    /* 862, then 724, 586, 500 (prune_to: the prune is over), then 510, 520. */
    CHECK_INT(st.entries, 520);
    CHECK_INT(st.pruned, 1060 - 520);
    kvg_kv_approx_free(a);
}

/* Writers that let go of the lock mid-prune (every 128 records) while
 * others record, blocking and not: each one looks at the table again after
 * taking the lock back (a stale oldest record once crashed the prune). */
struct writer {
    struct kvg_kv_approx *a;
    uint32_t slot;
    int nowait, bad, dropped;
};

static void *write_many(void *arg)
{
    struct writer *w = arg;
    uint64_t seq[600];
    for (int r = 0; r < 150; r++) {
        for (size_t i = 0; i < 600; i++) seq[i] = ((uint64_t)w->slot << 40) + (uint64_t)r * 600 + i;
        int rc = w->nowait
                     ? kvg_kv_approx_record_nowait(w->a, w->slot, seq, 600, 1000 + (uint64_t)r)
                     : kvg_kv_approx_record(w->a, w->slot, seq, 600, 1000 + (uint64_t)r);
        /* A loop's record past 65,536 waiting blocks is dropped (counted). */
        if (w->nowait && rc == -EBUSY)
            w->dropped++;
        else
            w->bad += rc != 600;
    }
    return NULL;
}

TEST(pruning_writers_race_safely)
{
    struct kvg_kv_approx *a = mk(3, 1000000, 2000, 0.5);
    struct writer ws[3] = {{a, 0, 0, 0, 0}, {a, 1, 0, 0, 0}, {a, 2, 1, 0, 0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++) CHECK_INT(pthread_create(&th[i], NULL, write_many, &ws[i]), 0);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_INT(ws[i].bad, 0);
    uint32_t out[3];
    uint64_t probe = 1;
    kvg_kv_approx_match(a, &probe, 1, out, 3, 2000); /* the index still reads after the race */
    struct kvg_kv_approx_stats st;
    kvg_kv_approx_stats(a, &st);
    CHECK(st.entries <= 2000 + 600 + 2 * 600 + 128);
    CHECK(st.pruned > 0);
    CHECK_INT(st.dropped_records, ws[2].dropped);
    kvg_kv_approx_free(a);
}
