/* Span records and W3C trace context: parsing a client's traceparent,
 * writing the one each upstream leg carries, new ids, and the attributes
 * of a span (copied into the record, so a span outlives the request that
 * made it). */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "trace/trace.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* W3C: lowercase only */
}

/* n bytes from 2n hex characters at p; -1 on a bad character. */
static int unhex(const char *p, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

int kvg_trace_parse_parent(const char *p, size_t n, uint8_t trace_id[16], uint8_t parent_id[8],
                           uint8_t *flags)
{
    /* Surrounding blanks are the header's, not the value's (RFC 9110 5.5). */
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (!p || n < KVG_TRACE_PARENT_LEN) return KVG_EPARSE;
    uint8_t version, fl;
    if (unhex(p, &version, 1) || version == 0xff) return KVG_EPARSE;
    /* Version 00 is exactly its length; a later one may append fields
     * after a '-' (W3C: parse what version 00 defines). */
    if (version == 0 ? n != KVG_TRACE_PARENT_LEN
                     : n > KVG_TRACE_PARENT_LEN && p[KVG_TRACE_PARENT_LEN] != '-')
        return KVG_EPARSE;
    if (p[2] != '-' || p[35] != '-' || p[52] != '-') return KVG_EPARSE;
    uint8_t t[16], s[8];
    if (unhex(p + 3, t, 16) || unhex(p + 36, s, 8) || unhex(p + 53, &fl, 1)) return KVG_EPARSE;
    if (all_zero(t, 16) || all_zero(s, 8)) return KVG_EPARSE;
    memcpy(trace_id, t, 16);
    memcpy(parent_id, s, 8);
    *flags = fl;
    return 0;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
}

size_t kvg_trace_format_parent(const uint8_t trace_id[16], const uint8_t span_id[8], int sampled,
                               char *out)
{
    memcpy(out, "00-", 3);
    tohex(trace_id, 16, out + 3);
    out[35] = '-';
    tohex(span_id, 8, out + 36);
    out[52] = '-';
    out[53] = '0';
    out[54] = sampled ? '1' : '0';
    out[55] = 0;
    return KVG_TRACE_PARENT_LEN;
}

void kvg_trace_new_id(struct kvg_rng *rng, uint8_t *id, size_t n)
{
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = kvg_rng_next(rng);
            memcpy(id + i, &v, KVG_MIN(8, n - i));
        }
    } while (all_zero(id, n));
}

void kvg_trace_ctx_start(struct kvg_trace_ctx *c, struct kvg_str traceparent, double ratio,
                         struct kvg_rng *rng)
{
    uint8_t flags;
    memset(c, 0, sizeof *c);
    if (traceparent.p && !kvg_trace_parse_parent(traceparent.p, traceparent.len, c->trace_id,
                                                 c->parent_id, &flags)) {
        c->sampled = flags & 1; /* the caller decided: a parent-based sampler */
    } else {
        kvg_trace_new_id(rng, c->trace_id, 16);
        c->sampled = ratio >= 1 || (ratio > 0 && kvg_rng_double(rng) < ratio);
    }
    kvg_trace_new_id(rng, c->span_id, 8);
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, read once: spans are timed with the
 * monotonic clock (the proxy's), collectors want Unix time. */
static int64_t unix_offset(void)
{
    static _Atomic int64_t off;
    static _Atomic int set;
    if (!atomic_load_explicit(&set, memory_order_acquire)) {
        struct timespec r, m;
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &m);
        int64_t o = ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000 +
                    ((int64_t)r.tv_nsec - (int64_t)m.tv_nsec);
        atomic_store_explicit(&off, o, memory_order_relaxed);
        atomic_store_explicit(&set, 1, memory_order_release);
    }
    return atomic_load_explicit(&off, memory_order_relaxed);
}

uint64_t kvg_trace_unix_ns(uint64_t mono_ns)
{
    return mono_ns ? (uint64_t)((int64_t)mono_ns + unix_offset()) : 0;
}

void kvg_trace_span_init(struct kvg_trace_span *s, const uint8_t trace_id[16],
                         const uint8_t parent_id[8], const uint8_t span_id[8], const char *name,
                         int kind, uint64_t start_mono_ns, uint64_t end_mono_ns)
{
    s->name = name;
    s->name_buf[0] = 0;
    s->kind = (uint8_t)kind;
    s->status = KVG_TRACE_UNSET;
    s->event = NULL;
    s->event_ns = 0;
    s->nattrs = s->dropped = 0;
    s->str_len = 0;
    memcpy(s->trace_id, trace_id, 16);
    if (parent_id)
        memcpy(s->parent_id, parent_id, 8);
    else
        memset(s->parent_id, 0, 8);
    memcpy(s->span_id, span_id, 8);
    s->start_ns = kvg_trace_unix_ns(start_mono_ns);
    s->end_ns = kvg_trace_unix_ns(end_mono_ns < start_mono_ns ? start_mono_ns : end_mono_ns);
}

static struct kvg_trace_attr *attr_add(struct kvg_trace_span *s, const char *key, int type)
{
    if (s->nattrs >= KVG_TRACE_MAX_ATTRS) {
        s->dropped++;
        return NULL;
    }
    struct kvg_trace_attr *a = &s->attrs[s->nattrs++];
    a->key = key;
    a->type = (uint8_t)type;
    a->off = a->len = 0;
    a->v.i = 0;
    return a;
}

void kvg_trace_attr_str(struct kvg_trace_span *s, const char *key, const char *v, size_t n)
{
    struct kvg_trace_attr *a = attr_add(s, key, KVG_TRACE_A_STR);
    if (!a) return;
    size_t room = sizeof s->str - s->str_len, k = v ? KVG_MIN(n, room) : 0;
    /* A cut must not split a UTF-8 sequence: protobuf strings are UTF-8. */
    if (k < n)
        while (k && ((unsigned char)v[k] & 0xc0) == 0x80) k--;
    if (k) memcpy(s->str + s->str_len, v, k);
    a->off = s->str_len;
    a->len = (uint16_t)k;
    s->str_len = (uint16_t)(s->str_len + k);
}

void kvg_trace_attr_int(struct kvg_trace_span *s, const char *key, int64_t v)
{
    struct kvg_trace_attr *a = attr_add(s, key, KVG_TRACE_A_INT);
    if (a) a->v.i = v;
}

void kvg_trace_attr_double(struct kvg_trace_span *s, const char *key, double v)
{
    struct kvg_trace_attr *a = attr_add(s, key, KVG_TRACE_A_DOUBLE);
    if (a) a->v.d = v;
}

void kvg_trace_attr_bool(struct kvg_trace_span *s, const char *key, int v)
{
    struct kvg_trace_attr *a = attr_add(s, key, KVG_TRACE_A_BOOL);
    if (a) a->v.i = v != 0;
}
