/* The table's age order (kvg_kv_tab_oldest with kvg_kv_tab_age_enable)
 * against the linear scan it replaces, on random adds, touches, removals
 * and oldest-first pruning; and the approximate index's pruning on top. */
#include <stdlib.h>

#include "kv/approx.h"
#include "kv/table.h"
#include "support/test.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random operations on a table of `workers` slots, stamps moving forward
 * by 0-2 per step (many equal stamps: the tie order is checked too).
 * After each one the age order must name the scan's slot. */
static void random_ops(uint32_t workers, int steps, uint64_t seed)
{
    struct kvg_kv_tab t;
    CHECK_INT(kvg_kv_tab_init(&t, workers), 0);
    kvg_kv_tab_age_enable(&t);
    for (uint32_t w = 0; w < workers; w++) CHECK_INT(kvg_kv_tab_worker_open(&t, w), 0);
    uint64_t s = seed;
    uint32_t clock = 0xfffff000u; /* crosses the 2^32 wrap */
    uint64_t next_key = 1;
    for (int i = 0; i < steps; i++) {
        clock += (uint32_t)(rnd(&s) % 3);
        uint32_t w = (uint32_t)(rnd(&s) % workers), r = (uint32_t)(rnd(&s) % 100);
        if (r < 55) {
            uint64_t k = next_key++;
            CHECK(kvg_kv_tab_add(&t, w, k, k, KVG_KV_LAST, clock) != KVG_KV_NIL);
        } else if (r < 70 && t.w[w].count) {
            /* Touch the tail (the case that moves it) or the head. */
            uint32_t e = r & 1 ? t.w[w].tail : t.w[w].head;
            kvg_kv_tab_touch(&t, w, e, clock);
        } else if (r < 80 && t.w[w].count) {
            kvg_kv_tab_remove(&t, w, t.w[w].head); /* not a tail change unless alone */
        } else if (r < 97) {
            int o = kvg_kv_tab_oldest(&t, clock);
            CHECK_INT(o, kvg_kv_tab_oldest_scan(&t, clock));
            if (o >= 0) kvg_kv_tab_remove(&t, (uint32_t)o, t.w[o].tail);
        } else {
            kvg_kv_tab_drain(&t, w, (uint32_t)(rnd(&s) % 50));
        }
        CHECK_INT(kvg_kv_tab_oldest(&t, clock), kvg_kv_tab_oldest_scan(&t, clock));
        /* Stale elements stay bounded by the rebuild rule. */
        CHECK(t.age.n <= 2 * (size_t)workers + 65);
    }
    /* Prune everything oldest first: the scan agrees to the end. */
    int o;
    while ((o = kvg_kv_tab_oldest(&t, clock)) >= 0) {
        CHECK_INT(o, kvg_kv_tab_oldest_scan(&t, clock));
        kvg_kv_tab_remove(&t, (uint32_t)o, t.w[o].tail);
    }
    CHECK_INT(t.n_entries, 0);
    CHECK_INT(kvg_kv_tab_oldest_scan(&t, clock), -1);
    kvg_kv_tab_free(&t);
}

TEST(age_order_matches_scan_few_workers)
{
    random_ops(3, 20000, 1);
}

TEST(age_order_matches_scan_many_workers)
{
    random_ops(200, 30000, 7);
}

TEST(age_order_matches_scan_max_workers)
{
    random_ops(KVG_KV_MAX_WORKERS, 20000, 99);
}

/* Approximate pruning on many slots: after random records the survivors
 * are the newest records, as a reference list of (expiry, slot, depth)
 * sorted oldest first says. */
TEST(approx_prune_keeps_newest)
{
    enum { W = 64, REQ = 200, MAXB = 1000 };
    struct kvg_kv_approx_opts o = {
        .max_workers = W, .ttl_ms = 1u << 30, .max_blocks = MAXB, .prune_target = 0.5};
    struct kvg_kv_approx *a = NULL;
    CHECK_INT(kvg_kv_approx_new(&o, &a), 0);
    for (uint32_t w = 0; w < W; w++) CHECK_INT(kvg_kv_approx_add_worker(a, w), 0);
    uint64_t s = 5, seq[40];
    uint32_t slot_of[REQ], len_of[REQ];
    for (uint32_t r = 0; r < REQ; r++) {
        slot_of[r] = (uint32_t)(rnd(&s) % W);
        len_of[r] = 1 + (uint32_t)(rnd(&s) % 40);
        for (uint32_t b = 0; b < len_of[r]; b++) seq[b] = (uint64_t)r << 16 | b;
        CHECK_INT(kvg_kv_approx_record(a, slot_of[r], seq, len_of[r], 1000 + r), (int)len_of[r]);
    }
    struct kvg_kv_approx_stats st;
    kvg_kv_approx_stats(a, &st);
    CHECK(st.entries <= MAXB);
    /* Every request is newer than all before it: the survivors are a
     * suffix of requests, the oldest of them cut from its deepest block. */
    uint64_t kept = 0;
    uint32_t out[W];
    int whole = 1;
    for (uint32_t r = REQ; r-- > 0;) {
        for (uint32_t b = 0; b < len_of[r]; b++) seq[b] = (uint64_t)r << 16 | b;
        kvg_kv_approx_match(a, seq, len_of[r], out, W, 2000);
        uint32_t m = out[slot_of[r]];
        if (!whole) CHECK_INT(m, 0);
        if (m < len_of[r]) whole = 0;
        kept += m;
    }
    CHECK_INT(kept, st.entries);
    kvg_kv_approx_free(a);
}
