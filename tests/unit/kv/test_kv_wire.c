/* The engines' own KV-event payloads (tests/fixtures/kv-wire/, made by
 * vLLM's and SGLang's encoders; its README says what each holds and what a
 * correct consumer does): every file is decoded and applied, and the index
 * state the README names is checked (held or not, per salt, adapter, tier,
 * group, rank). The folder is part of the repository: a missing file fails,
 * it does not skip. */
#include <dirent.h>
#include <errno.h>
#include <msgpack.h>
#include <stdlib.h>

#include "base/err.h"
#include "kv/events.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "support/test.h"

#define BS 16
#define MAXF 4096

/* tests/fixtures/kv-wire from $KVG_ROOT (set by tests/run.sh), else from the
 * current folder (the repository root). */
static const char *wire_dir(char *buf, size_t n)
{
    const char *root = getenv("KVG_ROOT");
    snprintf(buf, n, "%s/tests/fixtures/kv-wire", root ? root : ".");
    return buf;
}

/* Reads one payload file into buf; fails the test when it is missing. */
static size_t load(const char *name, uint8_t *buf)
{
    char dir[4096], path[4200];
    snprintf(path, sizeof path, "%s/%s.bin", wire_dir(dir, sizeof dir), name);
    FILE *f = fopen(path, "rb");
    if (!f) kvg_test_fail(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, MAXF, f);
    fclose(f);
    CHECK(n > 0 && n < MAXF);
    return n;
}

static struct kvg_kv_index *mk(void)
{
    struct kvg_kv_index_opts o = {.block_size = BS, .max_workers = 4};
    struct kvg_kv_index *idx = NULL;
    CHECK_INT(kvg_kv_index_new(&o, &idx), 0);
    CHECK_INT(kvg_kv_index_add_worker(idx, 0), 0);
    return idx;
}

/* Decodes name into b, checking it reads whole (no skipped event) with the
 * rank expected; returns the number of events. */
static int decode(struct kvg_kv_batch *b, uint8_t *buf, const char *name, int64_t rank)
{
    size_t n = load(name, buf);
    int rc = kvg_kv_decode_batch(b, buf, n);
    if (rc < 0) printf("  %s: %d (%s)\n", name, rc, b->err ? b->err : "");
    CHECK(rc >= 0);
    CHECK_INT(b->n_bad, 0);
    CHECK_INT(b->dp_rank, rank);
    return rc;
}

static void apply(struct kvg_kv_index *idx, struct kvg_kv_batch *b)
{
    struct kvg_kv_apply_result r;
    CHECK_INT(kvg_kv_index_apply(idx, 0, b, &r), 0);
    CHECK_INT(r.orphans, 0);
}

static uint32_t ids[64];

/* Tokens 100..100+n, the prompt every store in the folder carries. */
static const uint32_t *prompt(void)
{
    for (uint32_t i = 0; i < 64; i++) ids[i] = 100 + i;
    return ids;
}

/* Worker 0's tier-aware match of 100..131 for a request of that adapter
 * and salt (NULL: none). */
static struct kvg_kv_tier_match req(struct kvg_kv_index *idx, const char *lora, const char *salt)
{
    struct kvg_kv_tier_match out[4];
    int rc = kvg_kv_index_match_request(idx, prompt(), 32, lora, lora ? strlen(lora) : 0, salt,
                                        salt ? strlen(salt) : 0, out, 4);
    CHECK(rc >= 0);
    return out[0];
}

static uint32_t total(struct kvg_kv_tier_match m)
{
    return m.gpu + m.host + m.other;
}

static const char *const basics[] = {"sglang_map", "sglang_meta", "vllm_0181ea3",
                                     "vllm_legacy_array", "vllm_newest"};

TEST(every_file_decodes_whole)
{
    char dir[4096];
    DIR *d = opendir(wire_dir(dir, sizeof dir));
    if (!d) kvg_test_fail(__FILE__, __LINE__, "no folder %s: %s", dir, strerror(errno));
    struct dirent *de;
    int files = 0;
    struct kvg_kv_batch b;
    static uint8_t buf[MAXF];
    kvg_kv_batch_init(&b, NULL);
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".bin")) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 4), de->d_name);
        size_t n = load(name, buf);
        int rc = kvg_kv_decode_batch(&b, buf, n);
        if (rc < 0 || b.n_bad) printf("  %s: rc %d bad %u (%s)\n", name, rc, b.n_bad, b.err);
        CHECK(rc >= 0);
        CHECK_INT(b.n_bad, 0);
        CHECK_INT(b.n_unknown, 0);
        /* Every store's tokens are 100.. in order, whatever the encoding. */
        for (uint32_t e = 0; e < b.n_events; e++)
            for (uint32_t i = 0; b.events[e].type == KVG_KV_EV_STORED && i < b.events[e].n_tokens;
                 i++)
                CHECK(b.tokens[b.events[e].token_off + i] >= 100);
        files++;
    }
    closedir(d);
    CHECK_INT(files, 27);
    kvg_kv_batch_free(&b);
}

TEST(basic_store_remove_clear_every_producer_both_ranks)
{
    static uint8_t buf[MAXF];
    for (size_t p = 0; p < sizeof basics / sizeof basics[0]; p++) {
        for (int rk = 0; rk < 2; rk++) {
            char name[128];
            snprintf(name, sizeof name, "%s_basic_%s", basics[p], rk ? "rankNone" : "rank0");
            struct kvg_kv_batch b;
            kvg_kv_batch_init(&b, NULL);
            struct kvg_kv_index *idx = mk();
            CHECK_INT(decode(&b, buf, name, rk ? -1 : 0), 3);
            apply(idx, &b);
            CHECK_INT(total(req(idx, NULL, NULL)), 0); /* nothing held after the batch */
            CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 0);
            CHECK_INT(decode(&b, buf, name, rk ? -1 : 0), 3);
            CHECK_INT(b.events[0].tier, KVG_KV_TIER_GPU);
            CHECK_INT(b.events[0].sliding_window, -1); /* nil is none, not 0 */
            b.n_events = 1;                            /* replaying only the store */
            apply(idx, &b);
            struct kvg_kv_tier_match m = req(idx, NULL, NULL);
            CHECK_INT(m.gpu, 2);
            CHECK_INT(m.host + m.other, 0);
            kvg_kv_index_free(idx);
            kvg_kv_batch_free(&b);
        }
    }
}

TEST(empty_batch_belongs_to_rank_2)
{
    static uint8_t buf[MAXF];
    for (size_t p = 0; p < sizeof basics / sizeof basics[0]; p++) {
        char name[128];
        snprintf(name, sizeof name, "%s_empty_rank2", basics[p]);
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        CHECK_INT(decode(&b, buf, name, 2), 0);
        kvg_kv_batch_free(&b);
    }
}

/* Same as the int form. The store's parent_block_hash is its own first
 * hash in these files, read as no parent (the old index orphaned it). */
TEST(byte_hashes_like_int_hashes)
{
    static uint8_t buf[MAXF];
    static const char *const names[] = {"vllm_0181ea3_byteshashes", "vllm_legacy_array_byteshashes",
                                        "vllm_newest_byteshashes"};
    for (size_t p = 0; p < 3; p++) {
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        struct kvg_kv_index *idx = mk();
        CHECK_INT(decode(&b, buf, names[p], 0), 2);
        CHECK(b.hashes[0] == 12485983763222269057ull);
        apply(idx, &b);
        CHECK_INT(req(idx, NULL, NULL).gpu, 1); /* the 2nd block was removed */
        kvg_kv_index_free(idx);
        idx = mk(); /* the store alone, from a fresh index */
        CHECK_INT(decode(&b, buf, names[p], 0), 2);
        b.n_events = 1;
        apply(idx, &b);
        CHECK_INT(req(idx, NULL, NULL).gpu, 2);
        kvg_kv_index_free(idx);
        kvg_kv_batch_free(&b);
    }
}

/* The parent (engine hash 7) of the allfields store: one block of tokens
 * 1..16 on the same tier and group, under the same adapter and salt. */
static void store_parent7(struct kvg_kv_index *idx)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
#define S(lit) (msgpack_pack_str(&pk, strlen(lit)), msgpack_pack_str_body(&pk, lit, strlen(lit)))
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 12);
    S("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 7);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, BS);
    for (int i = 1; i <= BS; i++) msgpack_pack_int(&pk, i);
    msgpack_pack_int(&pk, BS);
    msgpack_pack_int(&pk, 3);
    S("CPU");
    S("adapterX");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 2);
    S("adapterX");
    S("s");
    msgpack_pack_int(&pk, 1);
    S("sliding_window");
    msgpack_pack_int(&pk, 128);
#undef S
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    CHECK_INT(kvg_kv_decode_batch(&b, sb.data, sb.size), 1);
    CHECK_INT(b.events[0].cache_salt.len, 1);
    apply(idx, &b);
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

/* Aux-group (sliding window) match of 1..16 + 100..131 for an adapter and
 * salt. */
static uint32_t aux_match(struct kvg_kv_index *idx, const char *lora, const char *salt)
{
    uint32_t t[48], out[4];
    uint64_t seq[3];
    for (int i = 0; i < BS; i++) t[i] = (uint32_t)i + 1;
    for (int i = 0; i < 32; i++) t[BS + i] = 100 + (uint32_t)i;
    int nb = kvg_kv_hash_request(t, 48, BS, lora, lora ? strlen(lora) : 0, salt,
                                 salt ? strlen(salt) : 0, seq, 3);
    CHECK_INT(nb, 3);
    CHECK(kvg_kv_index_match_aux(idx, seq, 3, out, 4) >= 0);
    return out[0];
}

TEST(allfields_cpu_tier_group_1_adapter_salt_rank_1)
{
    static uint8_t buf[MAXF];
    static const char *const names[] = {"vllm_0181ea3_allfields", "vllm_legacy_array_allfields",
                                        "vllm_newest_allfields"};
    const uint64_t h1 = 12485983763222269057ull, h2 = 8232530639259721955ull;
    for (size_t p = 0; p < 3; p++) {
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        struct kvg_kv_index *idx = mk();
        store_parent7(idx);
        CHECK_INT(decode(&b, buf, names[p], 1), 2);
        const struct kvg_kv_event *st = &b.events[0], *rm = &b.events[1];
        CHECK_INT(st->tier, KVG_KV_TIER_HOST);
        CHECK_INT(st->group_idx, 1);
        CHECK_INT(st->sliding_window, 128);
        CHECK(st->spec_kind.len == 14 && !memcmp(st->spec_kind.p, "sliding_window", 14));
        CHECK(st->lora_name.len == 8 && !memcmp(st->lora_name.p, "adapterX", 8));
        CHECK(st->cache_salt.len == 1 && st->cache_salt.p[0] == 's');
        CHECK_INT(st->salt_block, 0);
        CHECK(st->has_parent && st->parent == 7);
        CHECK_INT(rm->tier, KVG_KV_TIER_GPU);
        CHECK_INT(rm->group_idx, 1);
        apply(idx, &b);
        /* The GPU-tier removal left the CPU-tier copy. */
        CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_HOST, 1, h1), 1);
        CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_HOST, 1, h2), 1);
        CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_GPU, 1, h1), 0);
        CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_HOST, 0, h1), 0); /* another group */
        /* Held in group 1 under adapter and salt only. */
        CHECK_INT(aux_match(idx, "adapterX", "s"), 3);
        CHECK_INT(aux_match(idx, "adapterX", NULL), 0);
        CHECK_INT(aux_match(idx, NULL, "s"), 0);
        CHECK_INT(aux_match(idx, NULL, NULL), 0);
        CHECK_INT(aux_match(idx, "adapterX", "t"), 0);
        /* A sliding-window group never decides prefix reuse. */
        struct kvg_kv_index_stats ss;
        kvg_kv_index_stats(idx, &ss);
        CHECK_INT(ss.aux_entries, 3);
        CHECK_INT(ss.tier_entries[KVG_KV_TIER_HOST], 3);
        CHECK_INT(total(req(idx, "adapterX", "s")), 0);
        kvg_kv_index_free(idx);
        kvg_kv_batch_free(&b);
    }
}

TEST(sglang_salted_store_only_matches_its_salt)
{
    static uint8_t buf[MAXF];
    static const char *const names[] = {"sglang_meta_salted_only", "sglang_map_salted_session"};
    for (size_t p = 0; p < 2; p++) {
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        struct kvg_kv_index *idx = mk();
        CHECK_INT(decode(&b, buf, names[p], 0), 1);
        CHECK(b.events[0].cache_salt.len == 8 && !memcmp(b.events[0].cache_salt.p, "tenant-a", 8));
        apply(idx, &b);
        CHECK_INT(req(idx, NULL, "tenant-a").gpu, 2);
        CHECK_INT(total(req(idx, NULL, NULL)), 0);
        CHECK_INT(total(req(idx, NULL, "tenant-b")), 0);
        kvg_kv_index_free(idx);
        kvg_kv_batch_free(&b);
    }
}

/* One unsalted store, then a salted one continuing it: both decoded (the
 * old decoder rejected the batch). The unsalted block matches unsalted
 * requests; the salted one is keyed with its salt starting at its block, so
 * no unsalted or other-salt request matches it. */
TEST(sglang_mixed_batch_is_not_rejected_whole)
{
    static uint8_t buf[MAXF];
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    struct kvg_kv_index *idx = mk();
    CHECK_INT(decode(&b, buf, "sglang_meta_mixed", 0), 2);
    CHECK_INT(b.events[0].cache_salt.len, 0);
    CHECK_INT(b.events[1].cache_salt.len, 8);
    apply(idx, &b);
    CHECK_INT(req(idx, NULL, NULL).gpu, 1);
    CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_GPU, -1, 292198561560375959ull), 1);
    /* Exactly the salted key: the chain of block 1, salted at block 2. */
    uint64_t seq[2], s2[2];
    kvg_kv_hash_tokens(prompt(), 32, BS, seq, 2);
    s2[0] = seq[0];
    s2[1] = kvg_kv_seq_salted(seq[1], kvg_kv_salt_hash("tenant-a", 8));
    uint32_t out[4];
    CHECK_INT(kvg_kv_index_match(idx, s2, 2, out, 4), 2);
    s2[1] = kvg_kv_seq_salted(seq[1], kvg_kv_salt_hash("tenant-b", 8));
    CHECK_INT(kvg_kv_index_match(idx, s2, 2, out, 4), 1);
    kvg_kv_index_free(idx);
    kvg_kv_batch_free(&b);
}

TEST(sglang_cpu_pinned_is_host_memory)
{
    static uint8_t buf[MAXF];
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    struct kvg_kv_index *idx = mk();
    CHECK_INT(decode(&b, buf, "sglang_meta_cpu_pinned", 0), 1);
    CHECK_INT(b.events[0].tier, KVG_KV_TIER_HOST);
    apply(idx, &b);
    struct kvg_kv_tier_match m = req(idx, NULL, NULL);
    CHECK_INT(m.gpu, 0);
    CHECK_INT(m.host, 2);
    CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_GPU, -1, (uint64_t)-6833423357158946249ll), 0);
    CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_HOST, -1, (uint64_t)-6833423357158946249ll), 1);
    kvg_kv_index_free(idx);
    kvg_kv_batch_free(&b);
}

TEST(eagle_bigrams_read_the_first_of_each_pair)
{
    static uint8_t buf[MAXF];
    static const char *const names[] = {"sglang_meta_eagle_bigrams", "sglang_map_eagle_bigrams"};
    for (size_t p = 0; p < 2; p++) {
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        struct kvg_kv_index *idx = mk();
        CHECK_INT(decode(&b, buf, names[p], 0), 1);
        CHECK(b.events[0].bigram_tokens);
        CHECK_INT(b.events[0].n_tokens, 16);
        for (uint32_t i = 0; i < 16; i++) CHECK_INT(b.tokens[b.events[0].token_off + i], 100 + i);
        apply(idx, &b);
        CHECK_INT(req(idx, NULL, NULL).gpu, 1);
        kvg_kv_index_free(idx);
        kvg_kv_batch_free(&b);
    }
}

/* A positional BlockStored of one block of tok..tok+15 with engine hash h
 * (parent p when non-zero), in group g of kind `kind`. */
static void one_store(struct kvg_kv_index *idx, uint64_t h, uint64_t p, uint32_t tok, int g,
                      const char *kind)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 11);
    msgpack_pack_str(&pk, 11);
    msgpack_pack_str_body(&pk, "BlockStored", 11);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, h);
    if (p)
        msgpack_pack_uint64(&pk, p);
    else
        msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, BS);
    for (uint32_t i = 0; i < BS; i++) msgpack_pack_uint32(&pk, tok + i);
    msgpack_pack_int(&pk, BS);
    for (int i = 0; i < 4; i++) msgpack_pack_nil(&pk); /* lora_id, medium, lora_name, extra */
    msgpack_pack_int(&pk, g);
    msgpack_pack_str(&pk, strlen(kind));
    msgpack_pack_str_body(&pk, kind, strlen(kind));
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    CHECK_INT(kvg_kv_decode_batch(&b, sb.data, sb.size), 1);
    apply(idx, &b);
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

static void one_remove(struct kvg_kv_index *idx, uint64_t h, int g)
{
    uint8_t m[40];
    size_t n = 0;
    m[n++] = 0x92, m[n++] = 0x01, m[n++] = 0x91, m[n++] = 0x94, m[n++] = 0xac;
    memcpy(m + n, "BlockRemoved", 12), n += 12;
    m[n++] = 0x91, m[n++] = 0xcf;
    for (int i = 7; i >= 0; i--) m[n++] = (uint8_t)(h >> (8 * i));
    m[n++] = 0xc0, m[n++] = (uint8_t)g;
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    CHECK_INT(kvg_kv_decode_batch(&b, m, n), 1);
    apply(idx, &b);
    kvg_kv_batch_free(&b);
}

/* Hybrid model: the same engine hashes in a full-attention group 0 and a
 * sliding-window group 1; the window's eviction leaves the prefix. */
TEST(sliding_window_eviction_keeps_full_attention_prefix)
{
    struct kvg_kv_index *idx = mk();
    one_store(idx, 41, 0, 100, 0, "full_attention");
    one_store(idx, 42, 41, 116, 0, "full_attention");
    one_store(idx, 41, 0, 100, 1, "sliding_window");
    one_store(idx, 42, 41, 116, 1, "sliding_window");
    CHECK_INT(req(idx, NULL, NULL).gpu, 2);
    one_remove(idx, 41, 1);
    one_remove(idx, 42, 1);
    CHECK_INT(req(idx, NULL, NULL).gpu, 2);
    CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_GPU, 1, 41), 0);
    CHECK_INT(kvg_kv_index_held(idx, 0, KVG_KV_TIER_GPU, 0, 41), 1);
    one_remove(idx, 42, 0);
    CHECK_INT(req(idx, NULL, NULL).gpu, 1);
    kvg_kv_index_free(idx);
}

/* Older SGLang: a page hashed by content alone, repeated in one prompt. */
TEST(repeated_content_hash_is_refcounted)
{
    struct kvg_kv_index *idx = mk();
    struct kvg_kv_tier_match out[4];
    uint32_t t[2 * BS];
    for (int i = 0; i < 2 * BS; i++) t[i] = 500 + (uint32_t)(i % BS);
    one_store(idx, 9, 0, 500, 0, "full_attention");
    one_store(idx, 9, 9, 500, 0, "full_attention");
    CHECK_INT(kvg_kv_index_match_request(idx, t, 2 * BS, NULL, 0, NULL, 0, out, 4), 2);
    one_remove(idx, 9, 0); /* the first removal keeps it */
    CHECK_INT(kvg_kv_index_match_request(idx, t, 2 * BS, NULL, 0, NULL, 0, out, 4), 2);
    one_remove(idx, 9, 0); /* the second forgets it */
    CHECK_INT(kvg_kv_index_match_request(idx, t, 2 * BS, NULL, 0, NULL, 0, out, 4), 0);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 0);
    kvg_kv_index_free(idx);
}
