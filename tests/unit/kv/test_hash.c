/* Block hashing: Dynamo's LocalBlockHash and SequenceHash recurrences,
 * checked against XXH3 over bytes laid out by hand. */
#include <errno.h>
#include <xxhash.h>

#include "kv/hash.h"
#include "support/test.h"

static uint64_t by_hand_local(const uint32_t *t, uint32_t bs, uint64_t seed)
{
    unsigned char b[4 * 64];
    for (uint32_t i = 0; i < bs; i++)
        for (int k = 0; k < 4; k++) b[4 * i + k] = (unsigned char)(t[i] >> (8 * k));
    return XXH3_64bits_withSeed(b, 4 * bs, seed);
}

static uint64_t by_hand_seq(uint64_t parent, uint64_t local)
{
    unsigned char b[16];
    for (int k = 0; k < 8; k++) {
        b[k] = (unsigned char)(parent >> (8 * k));
        b[8 + k] = (unsigned char)(local >> (8 * k));
    }
    return XXH3_64bits_withSeed(b, 16, 1337);
}

static void fill(uint32_t *t, size_t n, uint32_t x)
{
    for (size_t i = 0; i < n; i++) t[i] = x + (uint32_t)i * 7919u + (uint32_t)(i >> 3) * 65537u;
}

TEST(local_hash_is_xxh3_seed_1337_over_le_u32)
{
    uint32_t t[16];
    fill(t, 16, 0xfffff000u);
    CHECK(kvg_kv_local_hash(t, 16, KVG_KV_HASH_SEED) == by_hand_local(t, 16, 1337));
    CHECK(kvg_kv_local_hash(t, 16, KVG_KV_HASH_SEED) != by_hand_local(t, 16, 0));
    CHECK(kvg_kv_local_hash(t, 16, KVG_KV_HASH_SEED) != kvg_kv_local_hash(t, 15, KVG_KV_HASH_SEED));
}

TEST(sequence_hash_chains_from_parent)
{
    uint32_t t[64];
    uint64_t seq[4], loc[4];
    fill(t, 64, 11);
    CHECK_INT(kvg_kv_hash_tokens(t, 64, 16, seq, 4), 4);
    CHECK_INT(kvg_kv_local_hashes(t, 64, 16, KVG_KV_HASH_SEED, loc, 4), 4);
    CHECK(seq[0] == loc[0]);
    for (int i = 1; i < 4; i++) CHECK(seq[i] == by_hand_seq(seq[i - 1], loc[i]));
    /* Chaining the tail onto a known parent gives the same values. */
    uint64_t tail[2];
    kvg_kv_seq_chain(loc + 2, 2, 1, seq[1], tail);
    CHECK(tail[0] == seq[2] && tail[1] == seq[3]);
    /* In place. */
    kvg_kv_seq_chain(loc, 4, 0, 0, loc);
    for (int i = 0; i < 4; i++) CHECK(loc[i] == seq[i]);
}

TEST(identical_blocks_at_different_positions_differ)
{
    uint32_t t[32];
    fill(t, 16, 5);
    for (int i = 0; i < 16; i++) t[16 + i] = t[i];
    uint64_t seq[2], loc[2];
    CHECK_INT(kvg_kv_hash_tokens(t, 32, 16, seq, 2), 2);
    kvg_kv_local_hashes(t, 32, 16, KVG_KV_HASH_SEED, loc, 2);
    CHECK(loc[0] == loc[1]);
    CHECK(seq[0] != seq[1]);
}

TEST(partial_last_block_ignored_and_max_respected)
{
    uint32_t t[100];
    uint64_t seq[8], seq2[8];
    fill(t, 100, 3);
    CHECK_INT(kvg_kv_hash_tokens(t, 47, 16, seq, 8), 2);
    CHECK_INT(kvg_kv_hash_tokens(t, 15, 16, seq, 8), 0);
    CHECK_INT(kvg_kv_hash_tokens(t, 100, 16, seq, 3), 3);
    CHECK_INT(kvg_kv_local_hashes(t, 100, 16, KVG_KV_HASH_SEED, seq2, 2), 6); /* counts all */
    CHECK_INT(kvg_kv_hash_tokens(t, 100, 0, seq, 8), -EINVAL);
    /* A prompt's hashes are a prefix of a longer prompt's. */
    CHECK_INT(kvg_kv_hash_tokens(t, 96, 16, seq2, 8), 6);
    for (int i = 0; i < 3; i++) CHECK(seq[i] == seq2[i]);
    /* A different first block changes every later hash. */
    t[0] ^= 1;
    CHECK_INT(kvg_kv_hash_tokens(t, 96, 16, seq, 8), 6);
    for (int i = 0; i < 6; i++) CHECK(seq[i] != seq2[i]);
}

TEST(lora_seed_separates_adapters)
{
    uint32_t t[16];
    uint64_t a[1], b[1], c[1];
    fill(t, 16, 9);
    CHECK(kvg_kv_lora_seed(NULL, 0) == 1337);
    CHECK(kvg_kv_lora_seed("x", 0) == 1337);
    CHECK(kvg_kv_lora_seed("sql-lora", 8) == 1337 + XXH3_64bits("sql-lora", 8));
    kvg_kv_hash_tokens(t, 16, 16, a, 1);
    kvg_kv_hash_tokens_seeded(t, 16, 16, kvg_kv_lora_seed("sql-lora", 8), b, 1);
    kvg_kv_hash_tokens_seeded(t, 16, 16, KVG_KV_HASH_SEED, c, 1);
    CHECK(a[0] != b[0]);
    CHECK(a[0] == c[0]);
    CHECK(b[0] == by_hand_local(t, 16, 1337 + XXH3_64bits("sql-lora", 8)));
}
