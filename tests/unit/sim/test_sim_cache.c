/* Unit tests for the simulated engine's prefix cache: LRU eviction order
 * (tail of a chain first, least recently used chains first), reset, and the
 * KV event stream replayed into an independent mirror reproducing the
 * engine's resident block set exactly after thousands of random requests,
 * aborts and resets, for block sizes 16 and 64. The mirror lives here, not
 * in src: it is what a router's index would do with the events. */
#include "support/test.h"

#include <errno.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "unit/sim/sim_helpers.h"

/* ---- a plain hash set of block hashes (0 never occurs) */
struct hset {
    uint64_t *k;
    size_t cap, n;
};

static size_t hs_home(const struct hset *s, uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 20) & (s->cap - 1);
}

static int hs_has(const struct hset *s, uint64_t h)
{
    for (size_t i = hs_home(s, h);; i = (i + 1) & (s->cap - 1)) {
        if (s->k[i] == h) return 1;
        if (!s->k[i]) return 0;
    }
}

static void hs_add(struct hset *s, uint64_t h)
{
    size_t i = hs_home(s, h);
    while (s->k[i]) i = (i + 1) & (s->cap - 1);
    s->k[i] = h;
    s->n++;
}

static void hs_del(struct hset *s, uint64_t h)
{
    size_t m = s->cap - 1, i = hs_home(s, h);
    while (s->k[i] != h) i = (i + 1) & m;
    for (size_t j = i;;) {
        j = (j + 1) & m;
        if (!s->k[j]) break;
        size_t home = hs_home(s, s->k[j]);
        if (i <= j ? (home > i && home <= j) : (home > i || home <= j)) continue;
        s->k[i] = s->k[j];
        i = j;
    }
    s->k[i] = 0;
    s->n--;
}

struct mirror {
    struct hset set;
    uint64_t root;
    uint32_t bs;
    uint64_t stored, removed, cleared;
};

static void mirror_apply(struct mirror *m, const struct kvg_sim_events *ev)
{
    CHECK_INT(ev->lost, 0);
    for (size_t i = 0; i < ev->n; i++) {
        const struct kvg_sim_event *e = &ev->ev[i];
        switch (e->type) {
        case KVG_SIM_EV_STORED: {
            CHECK(e->n_hashes > 0);
            CHECK_INT(e->block_size, m->bs);
            CHECK_INT(e->n_tokens, (uint64_t)e->n_hashes * m->bs);
            uint64_t prev = e->has_parent ? e->parent : m->root;
            for (uint32_t b = 0; b < e->n_hashes; b++) {
                uint64_t h = e->hashes[b];
                CHECK(h == kvg_sim_block_hash(prev, e->tokens + (size_t)b * m->bs, m->bs));
                CHECK(!hs_has(&m->set, h)); /* a store is always new */
                hs_add(&m->set, h);
                prev = h;
                m->stored++;
            }
            break;
        }
        case KVG_SIM_EV_REMOVED:
            for (uint32_t b = 0; b < e->n_hashes; b++) {
                CHECK(hs_has(&m->set, e->hashes[b]));
                hs_del(&m->set, e->hashes[b]);
                m->removed++;
            }
            break;
        case KVG_SIM_EV_CLEARED:
            memset(m->set.k, 0, m->set.cap * sizeof *m->set.k);
            m->set.n = 0;
            m->cleared++;
            break;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void mirror_compare(struct mirror *m, struct kvg_sim *e)
{
    static uint64_t mine[1 << 14], theirs[1 << 14];
    size_t n = kvg_sim_cached_hashes(e, theirs, 1 << 14);
    CHECK(n <= (1 << 14));
    CHECK_INT(n, m->set.n);
    size_t k = 0;
    for (size_t i = 0; i < m->set.cap; i++)
        if (m->set.k[i]) mine[k++] = m->set.k[i];
    qsort(mine, n, sizeof *mine, cmp_u64);
    qsort(theirs, n, sizeof *theirs, cmp_u64);
    CHECK(!memcmp(mine, theirs, n * sizeof *mine));
}

static void after_step(struct h_run *R, const struct kvg_sim_step *st, void *ctx)
{
    struct mirror *m = ctx;
    struct kvg_sim_events ev;
    kvg_sim_events(R->e, &ev);
    CHECK_INT(ev.n, st->n_events);
    mirror_apply(m, &ev);
    kvg_sim_events_clear(R->e);
    struct kvg_sim_metrics mt;
    kvg_sim_get_metrics(R->e, &mt);
    CHECK_INT(mt.num_cached_blocks, m->set.n);
    if (R->steps % 97 == 0) mirror_compare(m, R->e);
}

static void mirror_run(uint32_t bs, uint64_t capacity, uint64_t seed)
{
    struct kvg_sim *e = h_engine("tiny", bs, capacity, seed);
    struct h_run *R = h_run_new(e);
    struct mirror m = {.root = kvg_sim_root_hash(42), .bs = bs};
    m.set.cap = 1 << 15;
    m.set.k = calloc(m.set.cap, sizeof *m.set.k);
    CHECK(e && R && m.set.k);
    R->after_step = after_step;
    R->ctx = &m;

    struct kvg_rng rng;
    kvg_rng_seed(&rng, seed);
    enum { NPFX = 24, NREQ = 3000 };
    static uint32_t pfx[NPFX][600], prompt[1000];
    uint32_t pfx_len[NPFX];
    for (int g = 0; g < NPFX; g++) {
        pfx_len[g] = 20 + (uint32_t)kvg_rng_below(&rng, 580);
        h_tokens(pfx[g], pfx_len[g], &rng, 1000); /* small vocab: some shared blocks */
    }
    uint64_t aborted = 0, resets = 0;
    for (uint64_t id = 0; id < NREQ; id++) {
        int g = (int)kvg_rng_below(&rng, NPFX);
        uint32_t q = 1 + (uint32_t)kvg_rng_below(&rng, 300);
        memcpy(prompt, pfx[g], pfx_len[g] * sizeof *prompt);
        /* half the questions repeat (a user asking again) */
        struct kvg_rng qr;
        kvg_rng_seed(&qr, kvg_rng_below(&rng, 2) ? id : (uint64_t)g * 7 + q % 3);
        h_tokens(prompt + pfx_len[g], q, &qr, 1000);
        CHECK_INT(h_submit(R, id, prompt, pfx_len[g] + q, 1 + (uint32_t)kvg_rng_below(&rng, 100),
                           (int)kvg_rng_below(&rng, 2)),
                  0);
        if (kvg_rng_below(&rng, 10) == 0 && id > 10) {
            uint64_t victim = id - kvg_rng_below(&rng, 10);
            if (!R->rec[victim].done && kvg_sim_abort(e, victim) == 0) {
                R->rec[victim].done = 1; /* gone */
                aborted++;
            }
        }
        uint64_t steps = kvg_rng_below(&rng, 4);
        for (uint64_t s = 0; s < steps && !kvg_sim_idle(e); s++) h_step(R);
        if (id % 700 == 699) {
            h_run_idle(R, 1000000);
            mirror_compare(&m, e);
            CHECK_INT(kvg_sim_reset_prefix_cache(e), 0);
            struct kvg_sim_events ev;
            kvg_sim_events(e, &ev);
            CHECK_INT(ev.n, 1);
            mirror_apply(&m, &ev);
            kvg_sim_events_clear(e);
            CHECK_INT(m.set.n, 0);
            resets++;
        }
    }
    h_run_idle(R, 1000000);
    mirror_compare(&m, e);
    struct kvg_sim_metrics mt;
    kvg_sim_get_metrics(e, &mt);
    /* the run really exercised the cache */
    CHECK(m.removed > 1000);
    CHECK(mt.prefix_cache_hits > 0);
    CHECK(aborted > 50);
    CHECK_INT(m.cleared, resets);
    CHECK_INT(mt.aborted, aborted);
    free(m.set.k);
    free(R);
    kvg_sim_free(e);
}

TEST(event_replay_reproduces_the_cache_bs16)
{
    mirror_run(16, 4096, 1);
}

TEST(event_replay_reproduces_the_cache_bs64)
{
    mirror_run(64, 8192, 2);
}

/* Runs one request to completion on an otherwise idle engine and returns
 * the hashes it stored (in chain order) through out. */
static uint32_t run_one(struct kvg_sim *e, const uint32_t *prompt, uint32_t len, uint64_t *out,
                        uint64_t *removed, uint32_t *nremoved)
{
    struct kvg_sim_request q = {
        .id = 77, .prompt = prompt, .prompt_len = len, .max_tokens = 1, .ignore_eos = 1};
    CHECK_INT(kvg_sim_submit(e, &q), 0);
    uint32_t n = 0;
    double t = 0;
    if (nremoved) *nremoved = 0;
    while (!kvg_sim_idle(e)) {
        struct kvg_sim_step st;
        CHECK_INT(kvg_sim_step(e, t, &st), 0);
        t += st.duration;
        struct kvg_sim_events ev;
        kvg_sim_events(e, &ev);
        for (size_t i = 0; i < ev.n; i++) {
            const struct kvg_sim_event *x = &ev.ev[i];
            for (uint32_t b = 0; b < x->n_hashes; b++) {
                if (x->type == KVG_SIM_EV_STORED && out) out[n++] = x->hashes[b];
                if (x->type == KVG_SIM_EV_REMOVED && removed) removed[(*nremoved)++] = x->hashes[b];
            }
        }
        kvg_sim_events_clear(e);
    }
    return n;
}

TEST(lru_evicts_chain_tails_first_and_least_recent_chains_first)
{
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    c.profile.kv_capacity_tokens = 256; /* 16 blocks of 16 */
    c.profile.max_model_len = 256;
    struct kvg_sim *e = NULL;
    CHECK_INT(kvg_sim_create(&c, &e), 0);
    uint32_t a[64], b[64], d[176];
    for (int i = 0; i < 64; i++) {
        a[i] = (uint32_t)(1000 + i);
        b[i] = (uint32_t)(2000 + i);
    }
    for (int i = 0; i < 176; i++) d[i] = (uint32_t)(3000 + i);
    uint64_t ha[8], hb[8], hd[16], order[32], removed[32];
    uint32_t nrem = 0;
    CHECK_INT(run_one(e, a, 64, ha, NULL, NULL), 4);
    CHECK_INT(kvg_sim_eviction_order(e, order, 32), 4);
    for (int i = 0; i < 4; i++) CHECK(order[i] == ha[3 - i]); /* A3 A2 A1 A0 */

    CHECK_INT(run_one(e, b, 64, hb, NULL, NULL), 4);
    CHECK_INT(kvg_sim_eviction_order(e, order, 32), 8);
    for (int i = 0; i < 4; i++) CHECK(order[i] == ha[3 - i] && order[4 + i] == hb[3 - i]);

    /* A again: 3 blocks hit, the last recomputed and merged with A3; no
     * event, and A's chain becomes the most recently used. */
    CHECK_INT(run_one(e, a, 64, NULL, removed, &nrem), 0);
    CHECK_INT(nrem, 0);
    CHECK_INT(kvg_sim_eviction_order(e, order, 32), 8);
    for (int i = 0; i < 4; i++) CHECK(order[i] == hb[3 - i] && order[4 + i] == ha[3 - i]);

    /* 11 blocks: the 8 never-cached blocks, then B3, B2, B1 are evicted. */
    CHECK_INT(run_one(e, d, 176, hd, removed, &nrem), 11);
    CHECK_INT(nrem, 3);
    CHECK(removed[0] == hb[3] && removed[1] == hb[2] && removed[2] == hb[1]);
    CHECK_INT(kvg_sim_eviction_order(e, order, 32), 16);
    CHECK(order[0] == hb[0]);
    for (int i = 0; i < 4; i++) CHECK(order[1 + i] == ha[3 - i]);
    for (int i = 0; i < 11; i++) CHECK(order[5 + i] == hd[10 - i]);
    kvg_sim_free(e);
}

TEST(reset_prefix_cache_needs_an_idle_pool)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[100];
    for (int i = 0; i < 100; i++) prompt[i] = (uint32_t)i;
    CHECK_INT(h_submit(R, 1, prompt, 100, 50, 1), 0);
    h_step(R);
    CHECK_INT(kvg_sim_reset_prefix_cache(e), -EBUSY);
    h_run_idle(R, 1000);
    kvg_sim_events_clear(e);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.num_cached_blocks, 9); /* 149 computed tokens */
    CHECK_INT(kvg_sim_reset_prefix_cache(e), 0);
    struct kvg_sim_events ev;
    kvg_sim_events(e, &ev);
    CHECK_INT(ev.n, 1);
    CHECK_INT(ev.ev[0].type, KVG_SIM_EV_CLEARED);
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.num_cached_blocks, 0);
    /* nothing cached any more: the same prompt misses */
    kvg_sim_events_clear(e);
    CHECK_INT(h_submit(R, 2, prompt, 100, 1, 1), 0);
    h_run_idle(R, 1000);
    CHECK_INT(R->rec[2].cached, 0);
    free(R);
    kvg_sim_free(e);
}
