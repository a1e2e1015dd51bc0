/* The precise index against the simulated engine's real cache: 4 engine
 * models serve thousands of random requests with shared prefixes; their KV
 * events travel the wire format (encode -> decode -> apply) into one index.
 * Afterwards, for every prompt, the index's matched blocks for each worker
 * must equal the prefix that engine really holds (walked with the engine's
 * own chained hashes over its resident set). */
#include "support/test.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "kv/events.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "sim/kv_events.h"
#include "sim/sim.h"

#define NE 4
#define BS 16
#define NPROMPTS 64
#define PLEN 320

static uint32_t prompts[NPROMPTS][PLEN];

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Blocks of p the engine holds from the start, by its own hash chain. */
static uint32_t engine_prefix(const uint64_t *resident, size_t n, const uint32_t *p, uint64_t seed)
{
    uint64_t parent = kvg_sim_root_hash(seed);
    uint32_t k = 0;
    for (; k < PLEN / BS; k++) {
        uint64_t h = kvg_sim_block_hash(parent, p + k * BS, BS);
        if (!bsearch(&h, resident, n, sizeof *resident, cmp_u64)) break;
        parent = h;
    }
    return k;
}

static void pump(struct kvg_sim *e, uint32_t slot, struct kvg_kv_index *idx, struct kvg_kv_batch *b)
{
    struct kvg_sim_events ev;
    kvg_sim_events(e, &ev);
    if (ev.n) {
        void *buf;
        size_t len;
        CHECK_INT(kvg_sim_kv_encode(ev.ev, ev.n, 0, 0, slot % 2 ? KVG_SIM_KV_MAP : KVG_SIM_KV_ARRAY,
                                    &buf, &len),
                  0);
        CHECK(kvg_kv_decode_batch(b, buf, len) >= 0);
        CHECK_INT(kvg_kv_index_apply(idx, slot, b, NULL), 0);
        free(buf);
    }
    kvg_sim_events_clear(e);
}

TEST(index_matches_engine_caches_after_random_traffic)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 99);
    /* 8 families of prompts: a shared 160-token prefix, then their own. */
    for (int i = 0; i < NPROMPTS; i++)
        for (int t = 0; t < PLEN; t++)
            prompts[i][t] =
                t < 160 ? (uint32_t)(1000 * (i % 8) + t) : (uint32_t)kvg_rng_below(&rng, 30000);
    struct kvg_kv_index_opts io = {.block_size = BS, .max_workers = 8};
    struct kvg_kv_index *idx;
    CHECK_INT(kvg_kv_index_new(&io, &idx), 0);
    struct kvg_sim *eng[NE];
    const struct kvg_sim_profile *prof = kvg_sim_profile_find("tiny");
    CHECK(prof != NULL);
    for (int i = 0; i < NE; i++) {
        struct kvg_sim_config c;
        kvg_sim_config_init(&c, prof);
        c.seed = (uint64_t)i;
        c.profile.kv_capacity_tokens = 2048; /* small: evictions happen all the time */
        CHECK_INT(kvg_sim_create(&c, &eng[i]), 0);
        CHECK_INT(kvg_kv_index_add_worker(idx, (uint32_t)i), 0);
    }
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    double now = 0;
    for (uint64_t id = 1; id <= 3000; id++) {
        int w = (int)kvg_rng_below(&rng, NE);
        int p = (int)kvg_rng_below(&rng, NPROMPTS);
        struct kvg_sim_request r = {.id = id,
                                    .prompt = prompts[p],
                                    .prompt_len = PLEN,
                                    .max_tokens = 1 + (uint32_t)kvg_rng_below(&rng, 20),
                                    .ignore_eos = 1,
                                    .arrival = now};
        CHECK_INT(kvg_sim_submit(eng[w], &r), 0);
        /* a step or two on every engine, events published after each */
        for (int i = 0; i < NE; i++) {
            struct kvg_sim_step st;
            for (int s = 0; s < 2 && !kvg_sim_idle(eng[i]); s++) {
                CHECK_INT(kvg_sim_step(eng[i], now, &st), 0);
                pump(eng[i], (uint32_t)i, idx, &b);
            }
        }
        now += 0.01;
    }
    for (int i = 0; i < NE; i++) { /* drain */
        struct kvg_sim_step st;
        for (int s = 0; s < 100000 && !kvg_sim_idle(eng[i]); s++) {
            kvg_sim_step(eng[i], now, &st);
            pump(eng[i], (uint32_t)i, idx, &b);
        }
        CHECK(kvg_sim_idle(eng[i]));
    }
    int compared = 0, nonzero = 0;
    for (int i = 0; i < NE; i++) {
        size_t n = kvg_sim_cached_hashes(eng[i], NULL, 0);
        uint64_t *res = malloc((n ? n : 1) * sizeof *res);
        kvg_sim_cached_hashes(eng[i], res, n);
        qsort(res, n, sizeof *res, cmp_u64);
        for (int p = 0; p < NPROMPTS; p++) {
            uint64_t seq[PLEN / BS];
            uint32_t matched[8];
            CHECK_INT(kvg_kv_hash_tokens(prompts[p], PLEN, BS, seq, PLEN / BS), PLEN / BS);
            kvg_kv_index_match(idx, seq, PLEN / BS, matched, 8);
            uint32_t truth = engine_prefix(res, n, prompts[p], 42);
            CHECK_INT(matched[i], truth);
            compared++;
            nonzero += truth > 0;
        }
        free(res);
        kvg_sim_free(eng[i]);
    }
    CHECK_INT(compared, NE * NPROMPTS);
    CHECK(nonzero > 20); /* the comparison is not all zeros */
    kvg_kv_batch_free(&b);
    kvg_kv_index_free(idx);
}
