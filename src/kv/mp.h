/* A small, strict msgpack reader for KV-event batches (internal to src/kv).
 *
 * Why not msgpack-c's unpacker: it allocates storage for a container's
 * declared element count before checking that the bytes exist, so a 5-byte
 * message can ask for gigabytes, and its C API has no size limits. Engine
 * events come from the network, so this reader walks the bytes in place:
 * no allocation, every declared length checked against the bytes left,
 * iterative skipping (no recursion, so no depth limit to get wrong).
 * msgpack-c's packer is still what the tests and benchmark use to produce
 * batches. A reader points into caller-owned bytes and owns nothing. */
#ifndef KVG_KV_MP_H
#define KVG_KV_MP_H

#include <stddef.h>
#include <stdint.h>

enum kvg_kv_mp_type {
    KVG_KV_MP_NIL,
    KVG_KV_MP_BOOL,
    KVG_KV_MP_UINT, /* non-negative integer (any msgpack int encoding) */
    KVG_KV_MP_INT,  /* negative integer */
    KVG_KV_MP_FLOAT,
    KVG_KV_MP_STR,
    KVG_KV_MP_BIN,
    KVG_KV_MP_ARRAY,
    KVG_KV_MP_MAP,
    KVG_KV_MP_EXT,
};

struct kvg_kv_mp {
    const uint8_t *p, *end;
};

struct kvg_kv_mpval {
    enum kvg_kv_mp_type type;
    union {
        uint64_t u; /* UINT, BOOL */
        int64_t i;  /* INT */
        double f;   /* FLOAT */
        uint32_t n; /* ARRAY: elements, MAP: pairs (the elements follow) */
        struct {
            const uint8_t *p; /* STR, BIN, EXT payload (in the input) */
            uint32_t len;
        } s;
    } v;
};

/* Reads one value's header. Scalars and strings are consumed whole; for an
 * array or map only the header is consumed and v.n tells how many values
 * (2n for a map) follow. Returns 0, or KVG_EPARSE on truncated/invalid input
 * (including a container that declares more elements than bytes remain). */
int kvg_kv_mp_read(struct kvg_kv_mp *r, struct kvg_kv_mpval *v);

/* Skips one complete value, containers included. 0 or KVG_EPARSE. */
int kvg_kv_mp_skip(struct kvg_kv_mp *r);

#endif
