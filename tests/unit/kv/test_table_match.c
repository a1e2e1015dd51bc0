/* kvg_kv_tab_match (the staged look-ahead walk of kv/table_match.c) against a
 * naive reference: per worker, count the leading blocks whose node holds
 * its bit. Random tables of 1 to 1,100 slots (one bitmap word, sixteen,
 * a partial last one), closed slots, slot counts below and above the
 * table's, prefixes with holes, absent blocks, repeated blocks, and small
 * keys that share buckets while the node chains double. The `used` stamps
 * must land on exactly the nodes the reference says some candidate still
 * matched, and the one-table kvg_kv_tab_match_levels must agree; the tier
 * walk over three tables is checked against a reference of its own. The
 * holder sets the nodes share (kv/table_set.c) are checked for consistency
 * after every round of changes, and for sharing on their own. */
#include <stdlib.h>
#include <string.h>

#include "kv/table.h"
#include "support/test.h"

#define KEYS                                                                                       \
    3000 /* sequence hashes 1..KEYS-1: small keys share buckets; > 2,048 nodes double the chains   \
          */
#define MAXQ 300
#define MAXW 1100

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int holds(const struct kvg_kv_tab *t, uint64_t seq, uint32_t w)
{
    uint32_t ni = kvg_kv_tab_find_node(t, seq);
    return ni != KVG_KV_NIL && kvg_kv_tab_node_has(t, ni, w);
}

/* Reference prefix of worker w over seq[0..n). */
static uint32_t ref_prefix(const struct kvg_kv_tab *t, const uint64_t *seq, size_t n, uint32_t w)
{
    if (!(t->live[w / 64] >> (w % 64) & 1)) return 0;
    uint32_t k = 0;
    while (k < n && holds(t, seq[k], w)) k++;
    return k;
}

static uint32_t used_of(const struct kvg_kv_tab *t, uint64_t seq)
{
    uint32_t ni = kvg_kv_tab_find_node(t, seq);
    return ni == KVG_KV_NIL ? 0 : atomic_load(&kvg_kv_tab_node(t, ni)->used);
}

/* One query against the reference. */
static void check_query(const struct kvg_kv_tab *t, const uint64_t *seq, size_t n, size_t nslots,
                        uint32_t stamp)
{
    static uint32_t out[MAXW + 100], lv[MAXW + 100], ref[MAXW + 100], before[KEYS];
    static uint8_t want[KEYS];
    for (uint64_t k = 1; k < KEYS; k++) before[k] = used_of(t, k);
    memset(want, 0, sizeof want);
    uint32_t best = 0;
    size_t walk = nslots < t->max_workers ? nslots : t->max_workers;
    for (size_t w = 0; w < nslots; w++) {
        ref[w] = w < walk ? ref_prefix(t, seq, n, (uint32_t)w) : 0;
        if (ref[w] > best) best = ref[w];
        /* Blocks 0..ref[w]-1 were walked with w still a candidate. */
        for (uint32_t k = 0; k < ref[w]; k++) want[seq[k]] = 1;
    }
    for (size_t w = 0; w < nslots; w++) out[w] = 0xdeadbeef;
    CHECK_INT(kvg_kv_tab_match(t, seq, n, out, nslots, 1, stamp), best);
    for (size_t w = 0; w < nslots; w++) CHECK_INT(out[w], ref[w]);
    for (uint64_t k = 1; k < KEYS; k++) {
        if (kvg_kv_tab_find_node(t, k) == KVG_KV_NIL) continue;
        CHECK_INT(used_of(t, k), want[k] ? stamp : before[k]);
    }
    const struct kvg_kv_tab *one[1] = {t};
    CHECK_INT(kvg_kv_tab_match_levels(one, 1, seq, n, lv, nslots, 0, 0), best);
    for (size_t w = 0; w < nslots; w++) CHECK_INT(lv[w], ref[w]);
}

/* A prompt-like query: a run of distinct keys from `from`, then maybe a
 * repeat or an absent key, then more keys. */
static size_t make_query(uint64_t *s, uint64_t *seq)
{
    size_t n = (size_t)(rnd(s) % MAXQ);
    uint64_t from = 1 + rnd(s) % (KEYS - 1);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = (uint32_t)(rnd(s) % 100);
        if (r < 2 && i)
            seq[i] = seq[rnd(s) % i];
        else if (r < 3)
            seq[i] = KEYS + rnd(s) % 1000000; /* no node */
        else
            seq[i] = 1 + (from + i) % (KEYS - 1);
    }
    return n;
}

static void random_tables(uint32_t workers, int rounds, uint64_t seed)
{
    static uint8_t held[MAXW][KEYS];
    memset(held, 0, sizeof held);
    struct kvg_kv_tab t;
    CHECK_INT(kvg_kv_tab_init(&t, workers), 0);
    uint64_t s = seed;
    for (uint32_t w = 0; w < workers; w++)
        if (rnd(&s) % 8) CHECK_INT(kvg_kv_tab_worker_open(&t, w), 0);
    uint64_t seq[MAXQ];
    uint32_t stamp = 1;
    for (int round = 0; round < rounds; round++) {
        /* Workers take runs of keys (prompts to some depth) and drop a few
         * (holes in their prefixes); the node chains double meanwhile. */
        int ops = (int)(rnd(&s) % 400);
        for (int o = 0; o < ops; o++) {
            uint32_t w = (uint32_t)(rnd(&s) % workers);
            if (!(t.live[w / 64] >> (w % 64) & 1)) continue;
            uint64_t k0 = 1 + rnd(&s) % (KEYS - 1), len = 1 + rnd(&s) % 200;
            int add = rnd(&s) % 4 != 0;
            for (uint64_t j = 0; j < (add ? len : 1 + len / 20); j++) {
                uint64_t k = 1 + (k0 + j) % (KEYS - 1);
                if (add && !held[w][k]) {
                    CHECK(kvg_kv_tab_add(&t, w, k, k, KVG_KV_LAST, stamp) != KVG_KV_NIL);
                    held[w][k] = 1;
                } else if (!add && held[w][k]) {
                    CHECK_INT(kvg_kv_tab_remove_key(&t, w, k), 1);
                    held[w][k] = 0;
                }
            }
        }
        CHECK_INT(kvg_kv_tab_sets_check(&t), 0);
        CHECK(t.n_sets <= t.n_nodes);
        for (int q = 0; q < 4; q++) {
            size_t n = make_query(&s, seq);
            size_t nslots = (size_t)(rnd(&s) % (workers + 70));
            check_query(&t, seq, n, nslots, ++stamp);
        }
    }
    kvg_kv_tab_free(&t);
}

TEST(match_agrees_with_reference_one_word)
{
    random_tables(1, 60, 0x1234567);
    random_tables(63, 120, 0x2345678);
    random_tables(64, 120, 0x3456789);
}

TEST(match_agrees_with_reference_many_words)
{
    random_tables(130, 150, 0x456789a);
    random_tables(1024, 80, 0x56789ab);
    random_tables(1100, 60, 0x6789abc);
}

/* Every live worker holding every block: nobody drops out, the walk goes
 * to the end with all candidates (the benchmark's worst case). */
TEST(match_with_every_worker_holding_everything)
{
    struct kvg_kv_tab t;
    CHECK_INT(kvg_kv_tab_init(&t, 1024), 0);
    for (uint32_t w = 0; w < 1024; w++) CHECK_INT(kvg_kv_tab_worker_open(&t, w), 0);
    uint64_t seq[MAXQ];
    for (uint32_t k = 0; k < MAXQ; k++) seq[k] = 1 + k;
    for (uint32_t w = 0; w < 1024; w++)
        for (uint32_t k = 0; k < 200; k++)
            CHECK(kvg_kv_tab_add(&t, w, seq[k], seq[k], KVG_KV_LAST, 1) != KVG_KV_NIL);
    check_query(&t, seq, 200, 1024, 7);
    check_query(&t, seq, MAXQ - 1, 1024, 8); /* stops at the first absent block */
    check_query(&t, seq, 5, 1000, 9);
    kvg_kv_tab_free(&t);
}

/* Nodes held by the same workers name one set; a change of holders moves a
 * node to the set of its new holders, and a set goes with its last node. */
TEST(holder_sets_are_shared)
{
    struct kvg_kv_tab t;
    CHECK_INT(kvg_kv_tab_init(&t, 1024), 0);
    for (uint32_t w = 0; w < 1024; w++) CHECK_INT(kvg_kv_tab_worker_open(&t, w), 0);
    for (uint32_t w = 0; w < 10; w++)
        for (uint64_t k = 1; k <= 100; k++)
            CHECK(kvg_kv_tab_add(&t, w * 100, k, k, KVG_KV_LAST, 1) != KVG_KV_NIL);
    CHECK_INT(t.n_nodes, 100);
    CHECK_INT(t.n_sets, 1);
    uint32_t s0 = kvg_kv_tab_node(&t, kvg_kv_tab_find_node(&t, 1))->set;
    CHECK_INT(kvg_kv_tab_set(&t, s0)->refs, 100);
    CHECK_INT(kvg_kv_tab_set(&t, s0)->count, 10);
    /* Worker 300 drops blocks 51..100: those fifty share a second set. */
    for (uint64_t k = 51; k <= 100; k++) CHECK_INT(kvg_kv_tab_remove_key(&t, 300, k), 1);
    CHECK_INT(t.n_sets, 2);
    uint32_t s1 = kvg_kv_tab_node(&t, kvg_kv_tab_find_node(&t, 100))->set;
    CHECK(s1 != s0);
    CHECK_INT(kvg_kv_tab_set(&t, s1)->refs, 50);
    CHECK_INT(kvg_kv_tab_set(&t, s1)->count, 9);
    CHECK_INT(kvg_kv_tab_sets_check(&t), 0);
    /* It takes them back: the fifty return to the first set, the second goes. */
    for (uint64_t k = 51; k <= 100; k++)
        CHECK(kvg_kv_tab_add(&t, 300, k, k, KVG_KV_LAST, 2) != KVG_KV_NIL);
    CHECK_INT(t.n_sets, 1);
    CHECK_INT(kvg_kv_tab_node(&t, kvg_kv_tab_find_node(&t, 100))->set, s0);
    /* A node alone in its set changes it in place: no new set is made. */
    CHECK(kvg_kv_tab_add(&t, 7, 500, 500, KVG_KV_LAST, 3) != KVG_KV_NIL);
    uint32_t s2 = kvg_kv_tab_node(&t, kvg_kv_tab_find_node(&t, 500))->set, hw = t.set_hw;
    CHECK(kvg_kv_tab_add(&t, 8, 500, 500, KVG_KV_LAST, 3) != KVG_KV_NIL);
    CHECK_INT(kvg_kv_tab_node(&t, kvg_kv_tab_find_node(&t, 500))->set, s2);
    CHECK_INT(t.set_hw, hw);
    CHECK_INT(kvg_kv_tab_set(&t, s2)->count, 2);
    CHECK_INT(kvg_kv_tab_sets_check(&t), 0);
    /* Every worker drained: no node, no set is left, and room for a set per
     * node was kept all along. */
    CHECK((uint64_t)t.n_spages << KVG_KV_SET_SHIFT >= t.node_hw);
    for (uint32_t w = 0; w < 1024; w++) kvg_kv_tab_drain(&t, w, 1000);
    CHECK_INT(t.n_nodes, 0);
    CHECK_INT(t.n_sets, 0);
    CHECK_INT(kvg_kv_tab_sets_check(&t), 0);
    kvg_kv_tab_free(&t);
}

/* ---- kvg_kv_tab_match_levels over three tiers against the reference ---- */

#define TIERS 3

/* Leading blocks of seq[0..n) that worker w holds in the union of tiers
 * 0..l (0 unless w is live in tier 0, whose live slots count). */
static uint32_t ref_level(const struct kvg_kv_tab *const *tabs, uint32_t l, const uint64_t *seq,
                          size_t n, uint32_t w)
{
    if (!(tabs[0]->live[w / 64] >> (w % 64) & 1)) return 0;
    uint32_t k = 0;
    for (; k < n; k++) {
        int in = 0;
        for (uint32_t x = 0; x <= l && !in; x++) in = holds(tabs[x], seq[k], w);
        if (!in) break;
    }
    return k;
}

static void check_levels(const struct kvg_kv_tab *const *tabs, const uint64_t *seq, size_t n,
                         size_t nslots, uint32_t stamp)
{
    static uint32_t out[TIERS * (MAXW + 100)], ref[TIERS][MAXW + 100], before[TIERS][KEYS];
    static uint8_t want[TIERS][KEYS];
    memset(want, 0, sizeof want);
    for (uint32_t l = 0; l < TIERS; l++)
        for (uint64_t k = 1; k < KEYS; k++) before[l][k] = used_of(tabs[l], k);
    size_t walk = nslots < tabs[0]->max_workers ? nslots : tabs[0]->max_workers;
    uint32_t best = 0;
    for (size_t w = 0; w < nslots; w++) {
        for (uint32_t l = 0; l < TIERS; l++)
            ref[l][w] = w < walk ? ref_level(tabs, l, seq, n, (uint32_t)w) : 0;
        if (ref[TIERS - 1][w] > best) best = ref[TIERS - 1][w];
        /* Block k is walked with w a candidate while w holds 0..k-1 in the
         * union of every tier: each tier's node holding w gets the stamp. */
        for (uint32_t k = 0; w < walk && k < n && k <= ref[TIERS - 1][w]; k++)
            for (uint32_t l = 0; l < TIERS; l++)
                if (holds(tabs[l], seq[k], (uint32_t)w)) want[l][seq[k]] = 1;
    }
    for (size_t x = 0; x < TIERS * nslots; x++) out[x] = 0xdeadbeef;
    CHECK_INT(kvg_kv_tab_match_levels(tabs, TIERS, seq, n, out, nslots, 1, stamp), best);
    for (uint32_t l = 0; l < TIERS; l++)
        for (size_t w = 0; w < nslots; w++) CHECK_INT(out[l * nslots + w], ref[l][w]);
    for (uint32_t l = 0; l < TIERS; l++)
        for (uint64_t k = 1; k < KEYS; k++) {
            if (kvg_kv_tab_find_node(tabs[l], k) == KVG_KV_NIL) continue;
            CHECK_INT(used_of(tabs[l], k), want[l][k] ? stamp : before[l][k]);
        }
}

static void random_tiers(uint32_t workers, int rounds, uint64_t seed)
{
    static uint8_t held[TIERS][MAXW][KEYS];
    memset(held, 0, sizeof held);
    struct kvg_kv_tab t[TIERS];
    const struct kvg_kv_tab *tabs[TIERS];
    uint64_t s = seed;
    for (uint32_t l = 0; l < TIERS; l++) {
        CHECK_INT(kvg_kv_tab_init(&t[l], workers), 0);
        tabs[l] = &t[l];
    }
    for (uint32_t w = 0; w < workers; w++)
        if (rnd(&s) % 8)
            for (uint32_t l = 0; l < TIERS; l++) CHECK_INT(kvg_kv_tab_worker_open(&t[l], w), 0);
    uint64_t seq[MAXQ];
    uint32_t stamp = 1;
    for (int round = 0; round < rounds; round++) {
        int ops = (int)(rnd(&s) % 300);
        for (int o = 0; o < ops; o++) {
            uint32_t w = (uint32_t)(rnd(&s) % workers), l = (uint32_t)(rnd(&s) % 5);
            l = l < 3 ? 0 : l - 2; /* tier 0 most often */
            if (!(t[0].live[w / 64] >> (w % 64) & 1)) continue;
            uint64_t k0 = 1 + rnd(&s) % (KEYS - 1), len = 1 + rnd(&s) % 200;
            int add = rnd(&s) % 4 != 0;
            for (uint64_t j = 0; j < (add ? len : 1 + len / 20); j++) {
                uint64_t k = 1 + (k0 + j) % (KEYS - 1);
                if (add && !held[l][w][k]) {
                    CHECK(kvg_kv_tab_add(&t[l], w, k, k, KVG_KV_LAST, stamp) != KVG_KV_NIL);
                    held[l][w][k] = 1;
                } else if (!add && held[l][w][k]) {
                    CHECK_INT(kvg_kv_tab_remove_key(&t[l], w, k), 1);
                    held[l][w][k] = 0;
                }
            }
        }
        for (uint32_t l = 0; l < TIERS; l++) CHECK_INT(kvg_kv_tab_sets_check(&t[l]), 0);
        for (int q = 0; q < 3; q++) {
            size_t n = make_query(&s, seq);
            size_t nslots = (size_t)(rnd(&s) % (workers + 70));
            check_levels(tabs, seq, n, nslots, ++stamp);
        }
    }
    for (uint32_t l = 0; l < TIERS; l++) kvg_kv_tab_free(&t[l]);
}

TEST(match_levels_agrees_with_reference)
{
    random_tiers(1, 40, 0x789abcd);
    random_tiers(64, 80, 0x89abcde);
    random_tiers(130, 60, 0x9abcdef);
    random_tiers(1024, 30, 0xabcdef1);
}
