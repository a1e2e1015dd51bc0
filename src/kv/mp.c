/* Strict in-place msgpack reader; see mp.h for why kvgate has its own. */
#include "kv/mp.h"

#include <string.h>

#include "base/err.h"

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* Consumes n bytes, or fails without moving. */
static const uint8_t *take(struct kvg_kv_mp *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) return NULL;
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static int rd_uint(struct kvg_kv_mp *r, int n, struct kvg_kv_mpval *v)
{
    const uint8_t *q = take(r, (size_t)n);
    if (!q) return KVG_EPARSE;
    v->type = KVG_KV_MP_UINT;
    v->v.u = be(q, n);
    return 0;
}

static int rd_int(struct kvg_kv_mp *r, int n, struct kvg_kv_mpval *v)
{
    const uint8_t *q = take(r, (size_t)n);
    if (!q) return KVG_EPARSE;
    uint64_t u = be(q, n);
    int64_t s;
    switch (n) {
    case 1:
        s = (int8_t)u;
        break;
    case 2:
        s = (int16_t)u;
        break;
    case 4:
        s = (int32_t)u;
        break;
    default:
        memcpy(&s, &u, 8);
        break;
    }
    if (s >= 0) {
        v->type = KVG_KV_MP_UINT;
        v->v.u = (uint64_t)s;
    } else {
        v->type = KVG_KV_MP_INT;
        v->v.i = s;
    }
    return 0;
}

/* A str/bin/ext payload of len bytes. */
static int rd_bytes(struct kvg_kv_mp *r, enum kvg_kv_mp_type t, uint64_t len,
                    struct kvg_kv_mpval *v)
{
    const uint8_t *q = take(r, (size_t)len);
    if (!q) return KVG_EPARSE;
    v->type = t;
    v->v.s.p = q;
    v->v.s.len = (uint32_t)len;
    return 0;
}

static int rd_len(struct kvg_kv_mp *r, int n, uint64_t *len)
{
    const uint8_t *q = take(r, (size_t)n);
    if (!q) return KVG_EPARSE;
    *len = be(q, n);
    return 0;
}

/* Every element takes at least one byte, so a count above the bytes left is
 * a lie: reject it before anyone sizes anything by it. */
static int container(struct kvg_kv_mp *r, enum kvg_kv_mp_type t, uint64_t n, struct kvg_kv_mpval *v)
{
    uint64_t need = t == KVG_KV_MP_MAP ? 2 * n : n;
    if (need > (uint64_t)(r->end - r->p)) return KVG_EPARSE;
    v->type = t;
    v->v.n = (uint32_t)n;
    return 0;
}

int kvg_kv_mp_read(struct kvg_kv_mp *r, struct kvg_kv_mpval *v)
{
    const uint8_t *q = take(r, 1);
    uint64_t len;
    if (!q) return KVG_EPARSE;
    uint8_t c = *q;
    if (c <= 0x7f) {
        v->type = KVG_KV_MP_UINT;
        v->v.u = c;
        return 0;
    }
    if (c >= 0xe0) {
        v->type = KVG_KV_MP_INT;
        v->v.i = (int8_t)c;
        return 0;
    }
    if ((c & 0xf0) == 0x80) return container(r, KVG_KV_MP_MAP, c & 0x0f, v);
    if ((c & 0xf0) == 0x90) return container(r, KVG_KV_MP_ARRAY, c & 0x0f, v);
    if ((c & 0xe0) == 0xa0) return rd_bytes(r, KVG_KV_MP_STR, c & 0x1f, v);
    switch (c) {
    case 0xc0:
        v->type = KVG_KV_MP_NIL;
        return 0;
    case 0xc2:
    case 0xc3:
        v->type = KVG_KV_MP_BOOL;
        v->v.u = c == 0xc3;
        return 0;
    case 0xc4:
    case 0xc5:
    case 0xc6: {
        int n = 1 << (c - 0xc4);
        if (rd_len(r, n, &len)) return KVG_EPARSE;
        return rd_bytes(r, KVG_KV_MP_BIN, len, v);
    }
    case 0xc7:
    case 0xc8:
    case 0xc9: { /* ext 8/16/32: length, type byte, payload */
        int n = 1 << (c - 0xc7);
        if (rd_len(r, n, &len) || !take(r, 1)) return KVG_EPARSE;
        return rd_bytes(r, KVG_KV_MP_EXT, len, v);
    }
    case 0xca: {
        const uint8_t *f = take(r, 4);
        if (!f) return KVG_EPARSE;
        uint32_t u = (uint32_t)be(f, 4);
        float x;
        memcpy(&x, &u, 4);
        v->type = KVG_KV_MP_FLOAT;
        v->v.f = x;
        return 0;
    }
    case 0xcb: {
        const uint8_t *f = take(r, 8);
        if (!f) return KVG_EPARSE;
        uint64_t u = be(f, 8);
        memcpy(&v->v.f, &u, 8);
        v->type = KVG_KV_MP_FLOAT;
        return 0;
    }
    case 0xcc:
        return rd_uint(r, 1, v);
    case 0xcd:
        return rd_uint(r, 2, v);
    case 0xce:
        return rd_uint(r, 4, v);
    case 0xcf:
        return rd_uint(r, 8, v);
    case 0xd0:
        return rd_int(r, 1, v);
    case 0xd1:
        return rd_int(r, 2, v);
    case 0xd2:
        return rd_int(r, 4, v);
    case 0xd3:
        return rd_int(r, 8, v);
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: /* fixext 1..16: type byte + payload */
        if (!take(r, 1)) return KVG_EPARSE;
        return rd_bytes(r, KVG_KV_MP_EXT, 1u << (c - 0xd4), v);
    case 0xd9:
    case 0xda:
    case 0xdb: {
        int n = 1 << (c - 0xd9);
        if (rd_len(r, n, &len)) return KVG_EPARSE;
        return rd_bytes(r, KVG_KV_MP_STR, len, v);
    }
    case 0xdc:
    case 0xdd: {
        if (rd_len(r, c == 0xdc ? 2 : 4, &len)) return KVG_EPARSE;
        return container(r, KVG_KV_MP_ARRAY, len, v);
    }
    case 0xde:
    case 0xdf: {
        if (rd_len(r, c == 0xde ? 2 : 4, &len)) return KVG_EPARSE;
        return container(r, KVG_KV_MP_MAP, len, v);
    }
    default:
        return KVG_EPARSE; /* 0xc1 is never used */
    }
}

int kvg_kv_mp_skip(struct kvg_kv_mp *r)
{
    /* Values still to skip. Each read consumes at least one byte, so the loop
     * ends within (bytes left) iterations whatever the counts claim. */
    uint64_t pending = 1;
    struct kvg_kv_mpval v;
    while (pending) {
        if (kvg_kv_mp_read(r, &v)) return KVG_EPARSE;
        pending--;
        if (v.type == KVG_KV_MP_ARRAY)
            pending += v.v.n;
        else if (v.type == KVG_KV_MP_MAP)
            pending += 2 * (uint64_t)v.v.n;
    }
    return 0;
}
