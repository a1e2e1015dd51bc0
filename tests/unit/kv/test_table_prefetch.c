/* The table's cache hints (kvg_kv_tab_prefetch_node / _key / _remove) at
 * every depth and stage, on present and absent keys, on live and free
 * slots, while the node and key chains double: they only read, so the
 * table must answer exactly as a reference model of its (worker, key)
 * entries says, and under ASan every chain walk they do stays in bounds. */
#include <stdlib.h>
#include <string.h>

#include "kv/table.h"
#include "support/test.h"

#define W 8
#define KEYS 3000 /* keys per worker in the model; small keys share buckets */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The sequence hash of worker w's key k: workers share some blocks (the
 * same seq from two workers) so nodes have several holders. */
static uint64_t seq_of(uint32_t w, uint64_t k)
{
    return k % 3 ? k * 31 + w : k * 31;
}

static void all_hints(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, uint64_t seq)
{
    for (int d = 0; d < 5; d++) {
        kvg_kv_tab_prefetch_node(t, seq, d);
        kvg_kv_tab_prefetch_key(t, w, key, d);
    }
    for (int s = 0; s < KVG_KV_PF_REMOVE_STAGES; s++) kvg_kv_tab_prefetch_remove(t, w, key, s);
}

/* Every model entry is found, every absent one is not, the counts agree. */
static void check_model(const struct kvg_kv_tab *t, uint8_t (*held)[KEYS])
{
    uint64_t n = 0;
    for (uint32_t w = 0; w < W; w++) {
        uint32_t cnt = 0;
        for (uint64_t k = 1; k < KEYS; k++) {
            uint32_t e = kvg_kv_tab_key_find_at(t, w, k, seq_of(w, k));
            CHECK_INT(e != KVG_KV_NIL, held[w][k]);
            cnt += held[w][k];
            if (!held[w][k]) continue;
            uint32_t ni = kvg_kv_tab_find_node(t, seq_of(w, k));
            CHECK(ni != KVG_KV_NIL);
            CHECK(kvg_kv_tab_node_has(t, ni, w));
        }
        CHECK_INT(t->w[w].count, cnt);
        n += cnt;
    }
    CHECK_INT(t->n_entries, n);
}

TEST(prefetch_hints_leave_the_table_as_the_model)
{
    static uint8_t held[W][KEYS];
    memset(held, 0, sizeof held);
    struct kvg_kv_tab t;
    CHECK_INT(kvg_kv_tab_init(&t, W), 0);
    for (uint32_t w = 0; w < W - 1; w++) CHECK_INT(kvg_kv_tab_worker_open(&t, w), 0);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int step = 0; step < 60000; step++) {
        uint32_t w = (uint32_t)(rnd(&s) % W);
        uint64_t k = 1 + rnd(&s) % (KEYS - 1);
        all_hints(&t, w, k, seq_of(w, k)); /* slot W - 1 stays free */
        if (w == W - 1) continue;
        if (rnd(&s) % 100 < 60) {
            if (!held[w][k]) {
                CHECK(kvg_kv_tab_add(&t, w, seq_of(w, k), k, KVG_KV_LAST, (uint32_t)step) !=
                      KVG_KV_NIL);
                held[w][k] = 1;
            }
        } else {
            CHECK_INT(kvg_kv_tab_remove_key(&t, w, k), held[w][k]);
            held[w][k] = 0;
        }
        if (step % 5000 == 0) check_model(&t, held);
    }
    check_model(&t, held);
    /* Remove everything, hinting each removal first: nothing is left. */
    for (uint32_t w = 0; w < W - 1; w++)
        for (uint64_t k = 1; k < KEYS; k++) {
            all_hints(&t, w, k, seq_of(w, k));
            CHECK_INT(kvg_kv_tab_remove_key(&t, w, k), held[w][k]);
            held[w][k] = 0;
        }
    check_model(&t, held);
    CHECK_INT(t.n_nodes, 0);
    kvg_kv_tab_free(&t);
}
