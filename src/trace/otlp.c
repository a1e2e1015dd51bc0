/* OTLP/HTTP's protobuf body for spans: an ExportTraceServiceRequest
 * written by hand from the field numbers of the OpenTelemetry protocol's
 * .proto files (opentelemetry/proto/{collector/trace,trace,common,resource}/v1):
 * the handful of messages and fields kvgate fills, nothing generated.
 *
 * A nested message is length-prefixed, so each is measured first: a
 * writer without a buffer only counts. A measure never nests a measure
 * (counting a message counts its parts once), so a span is walked once
 * per level above it, not once per path. */
#include <errno.h>
#include <string.h>

#include "base/bytes.h"
#include "base/err.h"
#include "trace/trace.h"

struct pb {
    struct kvg_buf *b; /* NULL: count only */
    size_t n;          /* bytes counted */
    int err;
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static void put(struct pb *w, const void *p, size_t n)
{
    w->n += n;
    if (w->b && !w->err) w->err = kvg_buf_append(w->b, p, n);
}

static void varint(struct pb *w, uint64_t v)
{
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(w, t, k);
}

static void tag(struct pb *w, unsigned field, unsigned wt)
{
    varint(w, (uint64_t)field << 3 | wt);
}

static void f_varint(struct pb *w, unsigned field, uint64_t v)
{
    tag(w, field, WT_VARINT);
    varint(w, v);
}

static void f_fixed64(struct pb *w, unsigned field, uint64_t v)
{
    uint8_t t[8];
    kvg_put_le64(t, v);
    tag(w, field, WT_I64);
    put(w, t, 8);
}

static void f_bytes(struct pb *w, unsigned field, const void *p, size_t n)
{
    tag(w, field, WT_LEN);
    varint(w, n);
    put(w, p, n);
}

static void f_str(struct pb *w, unsigned field, const char *s)
{
    f_bytes(w, field, s, strlen(s));
}

/* A nested message: fn writes its fields. */
static void f_msg(struct pb *w, unsigned field, void (*fn)(struct pb *, const void *),
                  const void *arg)
{
    size_t len;
    if (w->b) {
        struct pb m = {0};
        fn(&m, arg);
        len = m.n;
    } else {
        size_t before = w->n;
        fn(w, arg);
        len = w->n - before;
        w->n = before; /* counted again below, with its tag and length */
    }
    tag(w, field, WT_LEN);
    varint(w, len);
    if (w->b)
        fn(w, arg);
    else
        w->n += len;
}

/* ---- common.proto: KeyValue {1 key, 2 AnyValue value}; AnyValue {1
 * string_value, 2 bool_value, 3 int_value, 4 double_value}. */

struct kv {
    const char *key;
    const struct kvg_trace_attr *a;
    const char *str; /* the span's str[] */
    const char *s;   /* a plain string value instead of a */
};

static void any_value(struct pb *w, const void *arg)
{
    const struct kv *kv = arg;
    if (kv->s) {
        f_str(w, 1, kv->s);
        return;
    }
    const struct kvg_trace_attr *a = kv->a;
    switch (a->type) {
    case KVG_TRACE_A_STR:
        f_bytes(w, 1, kv->str + a->off, a->len);
        break;
    case KVG_TRACE_A_BOOL:
        f_varint(w, 2, (uint64_t)a->v.i);
        break;
    case KVG_TRACE_A_INT:
        f_varint(w, 3, (uint64_t)a->v.i); /* int64: two's complement */
        break;
    default: {
        uint64_t bits;
        memcpy(&bits, &a->v.d, 8);
        f_fixed64(w, 4, bits);
    }
    }
}

static void key_value(struct pb *w, const void *arg)
{
    const struct kv *kv = arg;
    f_str(w, 1, kv->key);
    f_msg(w, 2, any_value, kv);
}

static void str_attr(struct pb *w, unsigned field, const char *key, const char *v)
{
    if (!v || !v[0]) return;
    struct kv kv = {.key = key, .s = v};
    f_msg(w, field, key_value, &kv);
}

/* ---- trace.proto: Span, Span.Event {1 time_unix_nano, 2 name}, Status
 * {2 message, 3 code}. */

static void event(struct pb *w, const void *arg)
{
    const struct kvg_trace_span *s = arg;
    f_fixed64(w, 1, s->event_ns);
    f_str(w, 2, s->event);
}

static void status(struct pb *w, const void *arg)
{
    const struct kvg_trace_span *s = arg;
    f_varint(w, 3, s->status);
}

static int nonzero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 1;
    return 0;
}

/* Span {1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 7
 * start_time_unix_nano, 8 end_time_unix_nano, 9 attributes, 10
 * dropped_attributes_count, 11 events, 15 status}. */
static void span(struct pb *w, const void *arg)
{
    const struct kvg_trace_span *s = arg;
    f_bytes(w, 1, s->trace_id, 16);
    f_bytes(w, 2, s->span_id, 8);
    if (nonzero(s->parent_id, 8)) f_bytes(w, 4, s->parent_id, 8);
    f_str(w, 5, s->name ? s->name : s->name_buf);
    f_varint(w, 6, s->kind);
    f_fixed64(w, 7, s->start_ns);
    f_fixed64(w, 8, s->end_ns);
    for (size_t i = 0; i < s->nattrs; i++) {
        struct kv kv = {.key = s->attrs[i].key, .a = &s->attrs[i], .str = s->str};
        f_msg(w, 9, key_value, &kv);
    }
    if (s->dropped) f_varint(w, 10, s->dropped);
    if (s->event) f_msg(w, 11, event, s);
    if (s->status != KVG_TRACE_UNSET) f_msg(w, 15, status, s);
}

struct batch {
    const struct kvg_trace_resource *res;
    const struct kvg_trace_span *const *spans;
    size_t n;
};

/* resource.proto: Resource {1 attributes}. */
static void resource(struct pb *w, const void *arg)
{
    const struct kvg_trace_resource *r = ((const struct batch *)arg)->res;
    str_attr(w, 1, "service.name", r->service_name);
    str_attr(w, 1, "service.version", r->service_version);
    str_attr(w, 1, "service.instance.id", r->instance_id);
    str_attr(w, 1, "telemetry.sdk.language", "c");
}

/* common.proto: InstrumentationScope {1 name}. */
static void scope(struct pb *w, const void *arg)
{
    (void)arg;
    f_str(w, 1, "kvgate");
}

/* ScopeSpans {1 scope, 2 spans}. */
static void scope_spans(struct pb *w, const void *arg)
{
    const struct batch *b = arg;
    f_msg(w, 1, scope, NULL);
    for (size_t i = 0; i < b->n; i++) f_msg(w, 2, span, b->spans[i]);
}

/* ResourceSpans {1 resource, 2 scope_spans}. */
static void resource_spans(struct pb *w, const void *arg)
{
    f_msg(w, 1, resource, arg);
    f_msg(w, 2, scope_spans, arg);
}

int kvg_trace_encode(const struct kvg_trace_resource *res,
                     const struct kvg_trace_span *const *spans, size_t n, struct kvg_buf *out)
{
    struct batch b = {res, spans, n};
    struct pb w = {.b = out};
    /* ExportTraceServiceRequest {1 resource_spans}. */
    f_msg(&w, 1, resource_spans, &b);
    return w.err;
}
