/* FNV-1a, 64-bit: the one copy every part hashes names, keys and bodies with
 * (quota keys, metric label sets, adapter and trace names, media items).
 * Bytes are hashed in order, one at a time, so the value does not depend on
 * the machine's byte order. A hash can be continued: pass the previous value
 * as the start to hash several pieces as if they were one. */
#ifndef KVG_BASE_HASH_H
#define KVG_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The standard offset basis and prime. */
#define KVG_HASH_FNV1A64_SEED 0xcbf29ce484222325ull
#define KVG_HASH_FNV1A64_PRIME 0x100000001b3ull
/* The offset basis with its last decimal digit dropped (1469598103934665603,
 * not 14695981039346656037): the start sim's mm_hash, serve's view
 * generation and autoscale's prefix keys were written with. Kept so their
 * values do not change; new code starts from KVG_HASH_FNV1A64_SEED. */
#define KVG_HASH_FNV1A64_SEED_SHORT 1469598103934665603ull

/* FNV-1a 64 of p[0..n), starting from h. */
static inline uint64_t kvg_hash_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * KVG_HASH_FNV1A64_PRIME;
    return h;
}

/* The same over the NUL-terminated s, the NUL not hashed. */
static inline uint64_t kvg_hash_fnv1a64_str(uint64_t h, const char *s)
{
    for (const unsigned char *b = (const unsigned char *)s; *b; b++)
        h = (h ^ *b) * KVG_HASH_FNV1A64_PRIME;
    return h;
}

#endif
