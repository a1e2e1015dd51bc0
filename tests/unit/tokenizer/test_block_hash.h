/* A block-hash function for the prefix cache's tests and its fuzz target. */
#ifndef KVG_TEST_BLOCK_HASH_H
#define KVG_TEST_BLOCK_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A chained block hash for the cache's block-hash tests (any function will
 * do: the cache must hand back exactly what it gives). ud: the tag. */
static inline void tt_block_hash(void *ud, const uint32_t *ids, uint32_t bs, size_t from, size_t to,
                                 uint64_t *h)
{
    const uint64_t *tag = ud;
    for (size_t i = from; i < to; i++) {
        uint64_t x = i ? h[i - 1] : tag[0] ^ (tag[1] << 1);
        for (uint32_t k = 0; k < bs; k++) x = (x ^ ids[i * bs + k]) * 0x100000001B3ull + k;
        h[i] = x ^ (x >> 31);
    }
}

#endif
