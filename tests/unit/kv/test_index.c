/* The precise index: longest prefix across workers, block-size splitting and
 * mismatch, BlockRemoved, AllBlocksCleared, worker removal, the LRU bound,
 * duplicate engine hashes, LoRA separation, a randomized comparison against
 * a naive model, and concurrent use. Events go through the real decoder. */
#include <errno.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/util.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "support/test.h"

#define BS 4

struct pk {
    msgpack_sbuffer sb;
    msgpack_packer p;
};

static void str(struct pk *k, const char *s)
{
    msgpack_pack_str(&k->p, strlen(s));
    msgpack_pack_str_body(&k->p, s, strlen(s));
}

static void begin(struct pk *k, int nev)
{
    msgpack_sbuffer_init(&k->sb);
    msgpack_packer_init(&k->p, &k->sb, msgpack_sbuffer_write);
    msgpack_pack_array(&k->p, 2);
    msgpack_pack_double(&k->p, 1.0);
    msgpack_pack_array(&k->p, (size_t)nev);
}

static void ev_stored(struct pk *k, const uint64_t *eh, size_t neh, int has_parent, uint64_t parent,
                      const uint32_t *tok, size_t ntok, uint32_t ebs, const char *lora)
{
    msgpack_pack_array(&k->p, 8);
    str(k, "BlockStored");
    msgpack_pack_array(&k->p, neh);
    for (size_t i = 0; i < neh; i++) msgpack_pack_uint64(&k->p, eh[i]);
    if (has_parent)
        msgpack_pack_uint64(&k->p, parent);
    else
        msgpack_pack_nil(&k->p);
    msgpack_pack_array(&k->p, ntok);
    for (size_t i = 0; i < ntok; i++) msgpack_pack_uint32(&k->p, tok[i]);
    msgpack_pack_uint32(&k->p, ebs);
    msgpack_pack_nil(&k->p);
    str(k, "GPU");
    if (lora)
        str(k, lora);
    else
        msgpack_pack_nil(&k->p);
}

static void ev_removed(struct pk *k, const uint64_t *eh, size_t neh)
{
    msgpack_pack_array(&k->p, 2);
    str(k, "BlockRemoved");
    msgpack_pack_array(&k->p, neh);
    for (size_t i = 0; i < neh; i++) msgpack_pack_uint64(&k->p, eh[i]);
}

/* Decodes the packed batch and applies it to slot w. */
static int apply(struct kvg_kv_index *idx, uint32_t w, struct pk *k,
                 struct kvg_kv_apply_result *res)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    int rc = kvg_kv_decode_batch(&b, k->sb.data, k->sb.size);
    if (rc >= 0) rc = kvg_kv_index_apply(idx, w, &b, res);
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&k->sb);
    return rc;
}

/* Stores blocks [from, to) of a prompt on w in one event, engine block size
 * BS * k, engine hashes base + block index (chained to base + from - 1). */
static struct kvg_kv_apply_result store(struct kvg_kv_index *idx, uint32_t w, const uint32_t *tok,
                                        uint32_t from, uint32_t to, uint64_t base)
{
    uint64_t eh[256];
    struct pk k;
    struct kvg_kv_apply_result res;
    for (uint32_t i = from; i < to; i++) eh[i - from] = base + i;
    begin(&k, 1);
    ev_stored(&k, eh, to - from, from > 0, base + from - 1, tok + from * BS, (to - from) * BS, BS,
              NULL);
    int rc = apply(idx, w, &k, &res);
    CHECK_INT(rc, 0);
    return res;
}

static void remove_ehs(struct kvg_kv_index *idx, uint32_t w, const uint64_t *eh, size_t n)
{
    struct pk k;
    begin(&k, 1);
    ev_removed(&k, eh, n);
    CHECK_INT(apply(idx, w, &k, NULL), 0);
}

static void prompt(uint32_t *t, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) t[i] = seed * 100003u + (uint32_t)i;
}

static struct kvg_kv_index *mk(uint32_t workers, uint64_t max)
{
    struct kvg_kv_index_opts o = {.block_size = BS, .max_workers = workers, .max_entries = max};
    struct kvg_kv_index *idx = NULL;
    CHECK_INT(kvg_kv_index_new(&o, &idx), 0);
    for (uint32_t w = 0; w < workers; w++) CHECK_INT(kvg_kv_index_add_worker(idx, w), 0);
    return idx;
}

static int lookup(struct kvg_kv_index *idx, const uint32_t *tok, size_t ntok, uint32_t *out,
                  size_t nslots)
{
    return kvg_kv_index_match_tokens(idx, tok, ntok, KVG_KV_HASH_SEED, out, nslots);
}

TEST(longest_prefix_across_workers)
{
    struct kvg_kv_index *idx = mk(8, 0);
    uint32_t p[8 * BS], q[8 * BS], out[10];
    prompt(p, 8 * BS, 1);
    memcpy(q, p, sizeof q);
    q[BS] ^= 1; /* q shares block 0 with p */
    store(idx, 0, p, 0, 8, 100);
    store(idx, 1, p, 0, 4, 200);
    store(idx, 1, p, 4, 6, 200); /* chained to 203 */
    store(idx, 2, p, 0, 2, 300);
    struct kvg_kv_apply_result r = store(idx, 2, p, 3, 5, 300); /* parent 302 unknown */
    CHECK_INT(r.orphans, 1);
    CHECK_INT(r.stored_blocks, 0);
    store(idx, 3, q, 0, 8, 400);
    store(idx, 4, p, 0, 1, 500);
    r = store(idx, 4, p, 2, 8, 600); /* parent 601 unknown: skipped */
    CHECK_INT(r.orphans, 1);
    CHECK_INT(kvg_kv_index_remove_worker(idx, 7), 0);
    for (int i = 0; i < 10; i++) out[i] = 777;
    CHECK_INT(lookup(idx, p, 8 * BS + 3, out, 10), 8);
    CHECK_INT(out[0], 8);
    CHECK_INT(out[1], 6);
    CHECK_INT(out[2], 2);
    CHECK_INT(out[3], 1);
    CHECK_INT(out[4], 1);
    CHECK_INT(out[5], 0);
    CHECK_INT(out[7], 0);
    CHECK_INT(out[8], 0); /* beyond the index's slots */
    CHECK_INT(out[9], 0);
    /* Only 3 slots asked: nothing written past them. */
    out[3] = 777;
    CHECK_INT(lookup(idx, p, 8 * BS, out, 3), 8);
    CHECK_INT(out[3], 777);
    CHECK_INT(lookup(idx, q, 8 * BS, out, 8), 8);
    CHECK_INT(out[0], 1);
    CHECK_INT(out[3], 8);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 8);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 1), 6);
    kvg_kv_index_free(idx);
}

TEST(same_block_at_another_position_does_not_match)
{
    struct kvg_kv_index *idx = mk(2, 0);
    uint32_t p[2 * BS], out[2];
    prompt(p, 2 * BS, 2);
    store(idx, 0, p, 0, 2, 1);
    CHECK_INT(lookup(idx, p + BS, BS, out, 2), 0); /* block 1 alone, at position 0 */
    CHECK_INT(lookup(idx, p, BS, out, 2), 1);
    kvg_kv_index_free(idx);
}

TEST(engine_block_size_multiple_is_split)
{
    struct kvg_kv_index *idx = mk(2, 0);
    uint32_t p[8 * BS], out[2];
    uint64_t eh[4] = {11, 12, 13, 14};
    struct pk k;
    struct kvg_kv_apply_result r;
    prompt(p, 8 * BS, 3);
    /* Engine blocks of 2 * BS tokens: 2 engine blocks = 4 router blocks. */
    begin(&k, 1);
    ev_stored(&k, eh, 2, 0, 0, p, 4 * BS, 2 * BS, NULL);
    CHECK_INT(apply(idx, 0, &k, &r), 0);
    CHECK_INT(r.stored_blocks, 4);
    CHECK_INT(lookup(idx, p, 8 * BS, out, 2), 4);
    /* Chained to engine block 12: the parent is its last router block. */
    begin(&k, 1);
    ev_stored(&k, eh + 2, 2, 1, 12, p + 4 * BS, 4 * BS, 2 * BS, NULL);
    CHECK_INT(apply(idx, 0, &k, &r), 0);
    CHECK_INT(lookup(idx, p, 8 * BS, out, 2), 8);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 8);
    /* Removing engine block 12 removes router blocks 2 and 3. */
    remove_ehs(idx, 0, eh + 1, 1);
    CHECK_INT(lookup(idx, p, 8 * BS, out, 2), 2);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 6);
    kvg_kv_index_free(idx);
}

/* vLLM's offloading connector publishes its CPU copies as BlockStored with
 * no tokens, no parent and block_size 0: the copy is placed on the blocks
 * the worker holds already, router block by router block, so a GPU removal
 * leaves it; a copy of a block the index never saw is an orphan. */
static void ev_copy(struct pk *k, const uint64_t *eh, size_t neh, const char *medium)
{
    msgpack_pack_array(&k->p, 8);
    str(k, "BlockStored");
    msgpack_pack_array(&k->p, neh);
    for (size_t i = 0; i < neh; i++) msgpack_pack_uint64(&k->p, eh[i]);
    msgpack_pack_nil(&k->p);
    msgpack_pack_array(&k->p, 0);
    msgpack_pack_uint32(&k->p, 0);
    msgpack_pack_nil(&k->p);
    str(k, medium);
    msgpack_pack_nil(&k->p);
}

TEST(offloaded_copies_without_tokens)
{
    struct kvg_kv_index *idx = mk(2, 0);
    uint32_t p[8 * BS];
    uint64_t eh[4] = {21, 22, 23, 24}, seq[8];
    struct pk k;
    struct kvg_kv_apply_result r;
    struct kvg_kv_tier_match tm[2];
    prompt(p, 8 * BS, 5);
    CHECK_INT(kvg_kv_hash_request(p, 8 * BS, BS, NULL, 0, NULL, 0, seq, 8), 8);
    /* Engine blocks of 2 * BS: four engine blocks, eight router blocks. */
    begin(&k, 1);
    ev_stored(&k, eh, 4, 0, 0, p, 8 * BS, 2 * BS, NULL);
    CHECK_INT(apply(idx, 0, &k, &r), 0);
    begin(&k, 1);
    ev_copy(&k, eh, 4, "CPU");
    CHECK_INT(apply(idx, 0, &k, &r), 0);
    CHECK_INT(r.stored_blocks, 8);
    CHECK_INT(r.orphans, 0);
    remove_ehs(idx, 0, eh, 4); /* medium absent: the GPU's */
    kvg_kv_index_match_tiers(idx, seq, 8, tm, 2);
    CHECK_INT(tm[0].gpu, 0);
    CHECK_INT(tm[0].host, 8); /* the whole prefix, on the host tier */
    CHECK_INT(tm[1].host, 0);
    /* A copy of blocks never stored: nothing placed, counted. */
    uint64_t unknown[1] = {99};
    begin(&k, 1);
    ev_copy(&k, unknown, 1, "CPU");
    CHECK_INT(apply(idx, 1, &k, &r), 0);
    CHECK_INT(r.stored_blocks, 0);
    CHECK_INT(r.orphans, 1);
    /* Tokens with block_size 0 still make no sense: the decoder skips that
     * event (test_events), nothing is stored. */
    begin(&k, 1);
    ev_stored(&k, eh, 1, 0, 0, p, BS, 0, NULL);
    CHECK_INT(apply(idx, 1, &k, &r), 0);
    CHECK_INT(r.stored_blocks, 0);
    kvg_kv_index_free(idx);
}

TEST(block_size_mismatch_and_inconsistent_events_are_reported)
{
    struct kvg_kv_index *idx = mk(1, 0);
    uint32_t p[12], out[1];
    uint64_t eh[2] = {1, 2};
    struct pk k;
    struct kvg_kv_apply_result r;
    prompt(p, 12, 4);
    begin(&k, 3);
    ev_stored(&k, eh, 2, 0, 0, p, 12, 6, NULL); /* 6 is not a multiple of 4 */
    ev_stored(&k, eh, 1, 0, 0, p, 2, 2, NULL);  /* smaller than the pool's */
    ev_stored(&k, eh, 2, 0, 0, p, 12, 4, NULL); /* 12 tokens for 2 blocks of 4 */
    CHECK_INT(apply(idx, 0, &k, &r), 0);
    CHECK_INT(r.block_size_mismatch, 2);
    CHECK_INT(r.inconsistent, 1);
    CHECK_INT(r.stored_blocks, 0);
    CHECK_INT(lookup(idx, p, 12, out, 1), 0);
    kvg_kv_index_free(idx);
}

TEST(removed_and_cleared)
{
    struct kvg_kv_index *idx = mk(2, 0);
    uint32_t p[6 * BS], out[2];
    struct kvg_kv_index_stats st;
    prompt(p, 6 * BS, 5);
    store(idx, 0, p, 0, 6, 10);
    store(idx, 1, p, 0, 6, 10);
    uint64_t gone[2] = {13, 999}; /* block 3, and a hash nobody has */
    remove_ehs(idx, 0, gone, 2);
    CHECK_INT(lookup(idx, p, 6 * BS, out, 2), 6);
    CHECK_INT(out[0], 3);
    CHECK_INT(out[1], 6);
    /* AllBlocksCleared on worker 1 only. */
    struct pk k;
    struct kvg_kv_apply_result r;
    begin(&k, 1);
    msgpack_pack_array(&k.p, 1);
    str(&k, "AllBlocksCleared");
    CHECK_INT(apply(idx, 1, &k, &r), 0);
    CHECK_INT(r.cleared, 1);
    CHECK_INT(r.cleared_entries, 6);
    CHECK_INT(lookup(idx, p, 6 * BS, out, 2), 3);
    CHECK_INT(out[1], 0);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 5);
    CHECK_INT(st.nodes, 5);
    CHECK_INT(kvg_kv_index_clear_worker(idx, 0), 5);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 0);
    CHECK_INT(st.nodes, 0);
    CHECK_INT(st.workers, 2);
    kvg_kv_index_free(idx);
}

TEST(remove_worker_drops_everything_and_frees_the_slot)
{
    struct kvg_kv_index *idx = mk(3, 0);
    uint32_t p[4 * BS], out[3];
    struct kvg_kv_index_stats st;
    prompt(p, 4 * BS, 6);
    for (uint32_t w = 0; w < 3; w++) store(idx, w, p, 0, 4, 50);
    CHECK_INT(kvg_kv_index_remove_worker(idx, 1), 4);
    CHECK_INT(kvg_kv_index_remove_worker(idx, 1), -ENOENT);
    CHECK_INT(lookup(idx, p, 4 * BS, out, 3), 4);
    CHECK_INT(out[1], 0);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 8);
    CHECK_INT(st.workers, 2);
    /* Events for a removed slot are refused. */
    struct pk k;
    uint64_t eh = 1;
    begin(&k, 1);
    ev_stored(&k, &eh, 1, 0, 0, p, BS, BS, NULL);
    CHECK_INT(apply(idx, 1, &k, NULL), KVG_ENOTFOUND);
    /* The slot comes back empty. */
    CHECK_INT(kvg_kv_index_add_worker(idx, 1), 0);
    CHECK_INT(kvg_kv_index_add_worker(idx, 1), -EEXIST);
    CHECK_INT(kvg_kv_index_add_worker(idx, 3), -EINVAL);
    CHECK_INT(lookup(idx, p, 4 * BS, out, 3), 4);
    CHECK_INT(out[1], 0);
    for (uint32_t w = 0; w < 3; w++) kvg_kv_index_remove_worker(idx, w);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 0);
    CHECK_INT(st.nodes, 0);
    kvg_kv_index_free(idx);
}

TEST(lru_bound_evicts_least_recently_used)
{
    uint32_t a[3 * BS], b[3 * BS], c[2 * BS], out[2];
    struct kvg_kv_index_stats st;
    prompt(a, 3 * BS, 10);
    prompt(b, 3 * BS, 11);
    prompt(c, 2 * BS, 12);

    /* No lookups: the oldest entries go, the deepest of a chain first. */
    struct kvg_kv_index *idx = mk(1, 6);
    store(idx, 0, a, 0, 3, 100);
    store(idx, 0, b, 0, 3, 200);
    struct kvg_kv_apply_result r = store(idx, 0, c, 0, 2, 300);
    CHECK_INT(r.evicted, 2);
    CHECK_INT(lookup(idx, a, 3 * BS, out, 1), 1);
    CHECK_INT(lookup(idx, b, 3 * BS, out, 1), 3);
    CHECK_INT(lookup(idx, c, 2 * BS, out, 1), 2);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 6);
    CHECK_INT(st.evictions, 2);
    kvg_kv_index_free(idx);

    /* A lookup counts as use: a is kept, b loses its tail. */
    idx = mk(1, 6);
    store(idx, 0, a, 0, 3, 100);
    store(idx, 0, b, 0, 3, 200);
    CHECK_INT(lookup(idx, a, 3 * BS, out, 1), 3);
    store(idx, 0, c, 0, 2, 300);
    CHECK_INT(lookup(idx, a, 3 * BS, out, 1), 3);
    CHECK_INT(lookup(idx, b, 3 * BS, out, 1), 1);
    CHECK_INT(lookup(idx, c, 2 * BS, out, 1), 2);
    kvg_kv_index_free(idx);

    /* A re-stored block is used too. */
    idx = mk(1, 6);
    store(idx, 0, a, 0, 3, 100);
    store(idx, 0, b, 0, 3, 200);
    store(idx, 0, a, 0, 3, 100);
    store(idx, 0, c, 0, 2, 300);
    CHECK_INT(lookup(idx, a, 3 * BS, out, 1), 3);
    CHECK_INT(lookup(idx, b, 3 * BS, out, 1), 1);
    kvg_kv_index_free(idx);

    /* The bound is global: the oldest entries of any worker go. */
    idx = mk(2, 6);
    store(idx, 0, a, 0, 3, 100);
    store(idx, 1, b, 0, 3, 200);
    store(idx, 1, c, 0, 1, 300);
    CHECK_INT(lookup(idx, a, 3 * BS, out, 2), 2);
    CHECK_INT(out[0], 2);
    CHECK_INT(lookup(idx, b, 3 * BS, out, 2), 3);
    CHECK_INT(out[1], 3);
    kvg_kv_index_free(idx);
}

TEST(same_tokens_under_two_engine_hashes)
{
    struct kvg_kv_index *idx = mk(1, 0);
    uint32_t p[2 * BS], out[1];
    struct kvg_kv_index_stats st;
    prompt(p, 2 * BS, 20);
    store(idx, 0, p, 0, 2, 1);  /* hashes 1, 2 */
    store(idx, 0, p, 0, 2, 11); /* hashes 11, 12: same blocks */
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 4);
    CHECK_INT(st.nodes, 2);
    CHECK_INT(st.dup_entries, 2);
    uint64_t first[2] = {1, 2}, second[2] = {11, 12};
    remove_ehs(idx, 0, first, 2);
    CHECK_INT(lookup(idx, p, 2 * BS, out, 1), 2); /* still held under 11, 12 */
    remove_ehs(idx, 0, second, 2);
    CHECK_INT(lookup(idx, p, 2 * BS, out, 1), 0);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, 0);
    CHECK_INT(st.nodes, 0);
    CHECK_INT(st.dup_entries, 0);
    /* One engine hash at two places (older SGLang hashes a page by its
     * content alone): both are held, and it takes two removals to forget
     * the hash. */
    uint32_t q[BS];
    uint64_t five = 5;
    prompt(q, BS, 21);
    store(idx, 0, p, 0, 1, 5);
    store(idx, 0, q, 0, 1, 5);
    CHECK_INT(lookup(idx, p, BS, out, 1), 1);
    CHECK_INT(lookup(idx, q, BS, out, 1), 1);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 2);
    remove_ehs(idx, 0, &five, 1);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 2);
    remove_ehs(idx, 0, &five, 1);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 0);
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.ref_extra, 0);
    kvg_kv_index_free(idx);
}

TEST(lora_blocks_only_match_the_same_adapter)
{
    struct kvg_kv_index *idx = mk(1, 0);
    uint32_t p[BS], out[1];
    uint64_t eh = 7;
    struct pk k;
    prompt(p, BS, 30);
    begin(&k, 1);
    ev_stored(&k, &eh, 1, 0, 0, p, BS, BS, "sql-lora");
    CHECK_INT(apply(idx, 0, &k, NULL), 0);
    CHECK_INT(lookup(idx, p, BS, out, 1), 0);
    CHECK_INT(kvg_kv_index_match_tokens(idx, p, BS, kvg_kv_lora_seed("sql-lora", 8), out, 1), 1);
    kvg_kv_index_free(idx);
}

TEST(tables_grow_incrementally_without_losing_blocks)
{
    /* 300 prompts of 32 blocks on one worker: the node table and the
     * worker's key table double several times, each doubling spread over
     * later writes; every block must stay findable all along. */
    enum { NPR = 300, PB = 32 };
    static uint32_t tok[NPR][PB * BS];
    struct kvg_kv_index *idx = mk(2, 0);
    uint32_t out[2];
    for (int p = 0; p < NPR; p++) {
        prompt(tok[p], PB * BS, 1000u + (uint32_t)p);
        store(idx, p % 2, tok[p], 0, PB, (uint64_t)p << 20);
        for (int q = 0; q <= p; q++) {
            CHECK_INT(lookup(idx, tok[q], PB * BS, out, 2), PB);
            CHECK_INT(out[q % 2], PB);
        }
    }
    /* Remove the second half of every other prompt while tables may still
     * be migrating. */
    for (int p = 0; p < NPR; p += 2) {
        uint64_t eh[PB / 2];
        for (int i = 0; i < PB / 2; i++) eh[i] = ((uint64_t)p << 20) + PB / 2 + (uint64_t)i;
        remove_ehs(idx, 0, eh, PB / 2);
    }
    for (int p = 0; p < NPR; p++) {
        CHECK_INT(lookup(idx, tok[p], PB * BS, out, 2), p % 2 ? PB : PB / 2);
    }
    struct kvg_kv_index_stats st;
    kvg_kv_index_stats(idx, &st);
    CHECK_INT(st.entries, NPR * PB - (NPR / 2) * (PB / 2));
    CHECK_INT(st.nodes, st.entries);
    kvg_kv_index_free(idx);
}

/* ---- randomized comparison with a naive model ---- */

#define NP 6
#define NB 12
#define NW 4

static uint32_t g_tok[NP][NB * BS];
static uint64_t g_seq[NP][NB];
static uint64_t g_all[NP * NB]; /* distinct sequence hashes */
static int g_nall;
static unsigned char g_has[NW][NP * NB]; /* model: worker holds block */

static int seq_id(uint64_t s)
{
    for (int i = 0; i < g_nall; i++)
        if (g_all[i] == s) return i;
    return -1;
}

static uint64_t eh_of(uint64_t seq)
{
    return seq ^ 0x5555aaaa5555aaaaull; /* content-derived, like an engine's */
}

TEST(randomized_against_naive_model)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 42);
    /* Prompts share prefixes of varying length with prompt 0 or 1. */
    for (int p = 0; p < NP; p++) {
        int base = p % 2, share = p < 2 ? 0 : (int)kvg_rng_below(&rng, NB);
        for (int i = 0; i < NB * BS; i++)
            g_tok[p][i] = i < share * BS ? g_tok[base][i] : (uint32_t)(p * 1000000 + i);
        kvg_kv_hash_tokens(g_tok[p], NB * BS, BS, g_seq[p], NB);
        for (int i = 0; i < NB; i++)
            if (seq_id(g_seq[p][i]) < 0) g_all[g_nall++] = g_seq[p][i];
    }
    memset(g_has, 0, sizeof g_has);
    struct kvg_kv_index *idx = mk(NW, 0);
    uint32_t out[NW];
    for (int op = 0; op < 3000; op++) {
        uint32_t w = (uint32_t)kvg_rng_below(&rng, NW);
        int p = (int)kvg_rng_below(&rng, NP), kind = (int)kvg_rng_below(&rng, 100);
        if (kind < 45) { /* store a run [a, b) chained to a - 1 */
            int a = (int)kvg_rng_below(&rng, NB), b = a + 1 + (int)kvg_rng_below(&rng, NB - a);
            uint64_t eh[NB];
            for (int i = a; i < b; i++) eh[i - a] = eh_of(g_seq[p][i]);
            struct pk k;
            begin(&k, 1);
            ev_stored(&k, eh, (size_t)(b - a), a > 0, a > 0 ? eh_of(g_seq[p][a - 1]) : 0,
                      g_tok[p] + a * BS, (size_t)(b - a) * BS, BS, NULL);
            CHECK_INT(apply(idx, w, &k, NULL), 0);
            if (a == 0 || g_has[w][seq_id(g_seq[p][a - 1])])
                for (int i = a; i < b; i++) g_has[w][seq_id(g_seq[p][i])] = 1;
        } else if (kind < 75) { /* remove a few blocks */
            uint64_t eh[3];
            for (int j = 0; j < 3; j++) {
                int i = (int)kvg_rng_below(&rng, NB);
                eh[j] = eh_of(g_seq[p][i]);
                g_has[w][seq_id(g_seq[p][i])] = 0;
            }
            remove_ehs(idx, w, eh, 3);
        } else if (kind < 77) {
            kvg_kv_index_clear_worker(idx, w);
            memset(g_has[w], 0, sizeof g_has[w]);
        } else {
            int n = 1 + (int)kvg_rng_below(&rng, NB);
            kvg_kv_index_match(idx, g_seq[p], (size_t)n, out, NW);
            for (uint32_t x = 0; x < NW; x++) {
                uint32_t want = 0;
                while ((int)want < n && g_has[x][seq_id(g_seq[p][want])]) want++;
                if (out[x] != want) printf("  op %d worker %u prompt %d\n", op, x, p);
                CHECK_INT(out[x], want);
            }
        }
    }
    struct kvg_kv_index_stats st;
    kvg_kv_index_stats(idx, &st);
    uint64_t held = 0;
    for (int x = 0; x < NW; x++)
        for (int i = 0; i < g_nall; i++) held += g_has[x][i];
    CHECK_INT(st.entries, held);
    kvg_kv_index_free(idx);
}

/* ---- concurrency: lookups while events, clears and slot changes run ---- */

struct conc {
    struct kvg_kv_index *idx;
    _Atomic int stop;
    _Atomic long reads;
    uint32_t tok[64 * BS];
};

static void *reader(void *arg)
{
    struct conc *c = arg;
    uint32_t out[8];
    long n = 0;
    while (!c->stop) {
        int best = kvg_kv_index_match_tokens(c->idx, c->tok, 64 * BS, KVG_KV_HASH_SEED, out, 8);
        if (best < 0 || best > 64) abort();
        n++;
        c->reads++;
    }
    return (void *)n;
}

TEST(concurrent_lookups_and_writes)
{
    struct conc c = {.idx = mk(8, 500)};
    prompt(c.tok, 64 * BS, 40);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, reader, &c);
    uint64_t t0 = kvg_now_ms();
    /* Enough rounds, and enough lookups interleaved with them (bounded). */
    for (int round = 0; (round < 200 || c.reads < 1000) && kvg_now_ms() - t0 < 5000; round++) {
        uint32_t w = (uint32_t)round % 8;
        store(c.idx, w, c.tok, 0, 64, 1000);
        if (round % 7 == 3) kvg_kv_index_clear_worker(c.idx, w);
        if (round % 11 == 5) {
            kvg_kv_index_remove_worker(c.idx, w);
            kvg_kv_index_add_worker(c.idx, w);
        }
    }
    c.stop = 1;
    long reads = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(th[i], &r);
        reads += (long)r;
    }
    CHECK(reads > 0);
    struct kvg_kv_index_stats st;
    kvg_kv_index_stats(c.idx, &st);
    CHECK(st.entries <= 500);
    kvg_kv_index_free(c.idx);
}
