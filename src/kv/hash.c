/* Block and sequence hashes; see hash.h for the scheme and why it is chained. */
#include "kv/hash.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <xxhash.h>

#include "base/bytes.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#define KVG_KV_BIG_ENDIAN 1
#endif

uint64_t kvg_kv_lora_seed(const char *name, size_t len)
{
    if (!name || !len) return KVG_KV_HASH_SEED;
    return KVG_KV_HASH_SEED + XXH3_64bits(name, len);
}

uint64_t kvg_kv_local_hash(const uint32_t *tokens, uint32_t block_size, uint64_t seed)
{
#ifndef KVG_KV_BIG_ENDIAN
    /* Token ids in memory already are the little-endian bytes Dynamo hashes. */
    return XXH3_64bits_withSeed(tokens, (size_t)block_size * 4, seed);
#else
    XXH3_state_t st;
    XXH3_64bits_reset_withSeed(&st, seed);
    for (uint32_t i = 0; i < block_size; i++) {
        unsigned char b[4] = {(unsigned char)tokens[i], (unsigned char)(tokens[i] >> 8),
                              (unsigned char)(tokens[i] >> 16), (unsigned char)(tokens[i] >> 24)};
        XXH3_64bits_update(&st, b, 4);
    }
    return XXH3_64bits_digest(&st);
#endif
}

uint64_t kvg_kv_seq_next(uint64_t parent, uint64_t local)
{
    unsigned char b[16];
    kvg_put_le64(b, parent);
    kvg_put_le64(b + 8, local);
    return XXH3_64bits_withSeed(b, sizeof b, KVG_KV_HASH_SEED);
}

int kvg_kv_local_hashes(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t seed,
                        uint64_t *out, size_t max)
{
    if (!block_size) return -EINVAL;
    size_t blocks = n / block_size;
    if (blocks > INT_MAX) return -E2BIG;
    size_t w = blocks < max ? blocks : max;
    for (size_t i = 0; i < w; i++)
        out[i] = kvg_kv_local_hash(tokens + i * block_size, block_size, seed);
    return (int)blocks;
}

void kvg_kv_seq_chain(const uint64_t *local, size_t n, int has_parent, uint64_t parent,
                      uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && !has_parent)
            out[0] = local[0];
        else
            out[i] = kvg_kv_seq_next(i ? out[i - 1] : parent, local[i]);
    }
}

int kvg_kv_hash_tokens_seeded(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t seed,
                              uint64_t *out, size_t max)
{
    if (!block_size) return -EINVAL;
    size_t blocks = n / block_size < max ? n / block_size : max;
    if (blocks > INT_MAX) return -E2BIG;
    kvg_kv_hash_range(tokens, block_size, seed, 0, 0, blocks, out);
    return (int)blocks;
}

int kvg_kv_hash_tokens(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t *out,
                       size_t max)
{
    return kvg_kv_hash_tokens_seeded(tokens, n, block_size, KVG_KV_HASH_SEED, out, max);
}

uint64_t kvg_kv_salt_hash(const char *salt, size_t len)
{
    if (!salt || !len) return 0;
    uint64_t h = XXH3_64bits(salt, len);
    return h ? h : 1;
}

uint64_t kvg_kv_seq_salted(uint64_t seq, uint64_t salt_hash)
{
    unsigned char b[16];
    kvg_put_le64(b, seq);
    kvg_put_le64(b + 8, salt_hash);
    return XXH3_64bits_withSeed(b, sizeof b, KVG_KV_SALT_SEED);
}

void kvg_kv_hash_range(const uint32_t *tokens, uint32_t block_size, uint64_t seed,
                       uint64_t salt_hash, size_t from, size_t to, uint64_t *out)
{
    for (size_t i = from; i < to; i++) {
        uint64_t l = kvg_kv_local_hash(tokens + i * block_size, block_size, seed);
        /* The salt enters at block 0; every later block chains from it. */
        out[i] = i           ? kvg_kv_seq_next(out[i - 1], l)
                 : salt_hash ? kvg_kv_seq_salted(l, salt_hash)
                             : l;
    }
}

int kvg_kv_hash_request(const uint32_t *tokens, size_t n, uint32_t block_size,
                        const char *lora_name, size_t lora_len, const char *cache_salt,
                        size_t salt_len, uint64_t *out, size_t max)
{
    if (!block_size) return -EINVAL;
    size_t nb = n / block_size < max ? n / block_size : max;
    if (nb > INT_MAX) return -E2BIG;
    kvg_kv_hash_range(tokens, block_size, kvg_kv_lora_seed(lora_name, lora_len),
                      kvg_kv_salt_hash(cache_salt, salt_len), 0, nb, out);
    return (int)nb;
}
