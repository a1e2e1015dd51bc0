/* Unit tests for base/hash: FNV-1a 64 against the published test vectors,
 * continuation, the string form, and the short-seed variant's values (worked
 * out by hand with Python's integers, since nothing publishes them). */
#include "support/test.h"

#include "base/hash.h"

TEST(fnv1a64_known_vectors)
{
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "", 0) == 0xcbf29ce484222325ull);
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "foobar", 6) == 0x85944171f73967e8ull);
}

TEST(fnv1a64_bytes_above_0x7f_are_unsigned)
{
    /* One byte 0xff: (seed ^ 0xff) * prime, not seed ^ (sign-extended -1). */
    uint64_t want = (KVG_HASH_FNV1A64_SEED ^ 0xffull) * KVG_HASH_FNV1A64_PRIME;
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "\xff", 1) == want);
}

TEST(fnv1a64_continues_and_hashes_nul_bytes)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "foo", 3);
    CHECK(kvg_hash_fnv1a64(h, "bar", 3) == 0x85944171f73967e8ull);
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, "a\0b", 3) == 0xe5d29919042666b2ull);
}

TEST(fnv1a64_str_stops_before_the_nul)
{
    CHECK(kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, "foobar") == 0x85944171f73967e8ull);
    CHECK(kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, "") == KVG_HASH_FNV1A64_SEED);
    CHECK(kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, "a\0b") == 0xaf63dc4c8601ec8cull);
}

TEST(fnv1a64_short_seed_values)
{
    CHECK(KVG_HASH_FNV1A64_SEED_SHORT == 1469598103934665603ull);
    CHECK(kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED_SHORT, "a", 1) == 0x44bd8ad473cd9906ull);
    CHECK(kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED_SHORT, "foobar") == 0x88fad7c0a8ff07f2ull);
}
