/* OpenTelemetry traces: span records, W3C trace context, and the exporter
 * that sends them over OTLP/HTTP (protobuf) to a collector.
 *
 * The proxy builds spans on its loop threads and hands each finished one
 * to kvg_trace_submit, which copies it into a bounded queue and returns: a
 * full queue drops the span and counts it. One exporter thread (export.c)
 * takes batches off the queue, encodes them (otlp.c) and POSTs them to
 * URL/v1/traces with the blocking client (net/https.h). A slow or dead
 * collector costs the exporter thread its time, never a request's: the
 * batch it could not send is dropped and counted too.
 *
 * What goes in a span is the caller's choice; kvgate's proxy puts names,
 * counts, workers and statuses there, never prompt or completion text
 * (docs/tracing.md). */
#ifndef KVG_TRACE_TRACE_H
#define KVG_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/util.h"
#include "metrics/metrics.h"

/* ---- W3C trace context (traceparent), pure. */

/* "00-" 32 hex "-" 16 hex "-" 2 hex: 55 characters. */
#define KVG_TRACE_PARENT_LEN 55

struct kvg_trace_ctx {
    uint8_t trace_id[16];
    uint8_t parent_id[8]; /* the caller's span (all zero: kvgate starts the trace) */
    uint8_t span_id[8];   /* kvgate's server span */
    int sampled;          /* spans are recorded and exported */
};

/* Parses a traceparent header value (W3C Trace Context, level 1): version
 * 00 exactly 55 characters; a later version at least that long with '-'
 * after the flags when longer; lowercase hex; trace and parent ids not all
 * zero; version ff refused. 0 and the ids and flags, or KVG_EPARSE. */
int kvg_trace_parse_parent(const char *p, size_t n, uint8_t trace_id[16], uint8_t parent_id[8],
                           uint8_t *flags);
/* Writes "00-<trace>-<span>-<flags>" into out (KVG_TRACE_PARENT_LEN + 1
 * bytes, NUL-terminated); returns KVG_TRACE_PARENT_LEN. */
size_t kvg_trace_format_parent(const uint8_t trace_id[16], const uint8_t span_id[8], int sampled,
                               char *out);
/* n random bytes into id, not all zero (W3C: an all-zero id is invalid). */
void kvg_trace_new_id(struct kvg_rng *rng, uint8_t *id, size_t n);
/* A request's context: the client's traceparent continued when it parses
 * (its sampled flag decides), else a new trace sampled with probability
 * ratio; a new server span id either way. */
void kvg_trace_ctx_start(struct kvg_trace_ctx *c, struct kvg_str traceparent, double ratio,
                         struct kvg_rng *rng);

/* ---- Span records. */

#define KVG_TRACE_MAX_ATTRS 20
#define KVG_TRACE_STR_BYTES 768

/* OTLP's SpanKind and Status codes (opentelemetry/proto/trace/v1/trace.proto). */
enum kvg_trace_kind { KVG_TRACE_INTERNAL = 1, KVG_TRACE_SERVER = 2, KVG_TRACE_CLIENT = 3 };
enum kvg_trace_status { KVG_TRACE_UNSET = 0, KVG_TRACE_OK = 1, KVG_TRACE_ERROR = 2 };
enum kvg_trace_attr_type { KVG_TRACE_A_STR, KVG_TRACE_A_INT, KVG_TRACE_A_DOUBLE, KVG_TRACE_A_BOOL };

struct kvg_trace_attr {
    const char *key; /* a static string */
    uint8_t type;
    uint16_t off, len; /* a string: its bytes in the span's str[] */
    union {
        int64_t i;
        double d;
    } v;
};

/* One finished span, self-contained (copied whole into the queue). */
struct kvg_trace_span {
    uint8_t trace_id[16], span_id[8], parent_id[8]; /* parent all zero: a root span */
    const char *name;                               /* static; name_buf when NULL */
    char name_buf[96];
    uint8_t kind, status;
    uint64_t start_ns, end_ns; /* Unix time */
    const char *event;         /* one event (static name), NULL none */
    uint64_t event_ns;         /* its Unix time */
    uint8_t nattrs, dropped;   /* attributes kept, and those that did not fit */
    uint16_t str_len;
    struct kvg_trace_attr attrs[KVG_TRACE_MAX_ATTRS];
    char str[KVG_TRACE_STR_BYTES];
};

/* A span of ctx's trace: parent (NULL: a root), its own id from rng
 * (NULL: id as given, 8 bytes). Times are monotonic (kvg_now_ns) and
 * converted to Unix time here. */
void kvg_trace_span_init(struct kvg_trace_span *s, const uint8_t trace_id[16],
                         const uint8_t parent_id[8], const uint8_t span_id[8], const char *name,
                         int kind, uint64_t start_mono_ns, uint64_t end_mono_ns);
/* Attributes: key is a static string; a string value is copied (cut to
 * what is left of str[]); one past KVG_TRACE_MAX_ATTRS is counted in
 * dropped. */
void kvg_trace_attr_str(struct kvg_trace_span *s, const char *key, const char *v, size_t n);
void kvg_trace_attr_int(struct kvg_trace_span *s, const char *key, int64_t v);
void kvg_trace_attr_double(struct kvg_trace_span *s, const char *key, double v);
void kvg_trace_attr_bool(struct kvg_trace_span *s, const char *key, int v);
/* Monotonic ns (kvg_now_ns) as Unix ns: the offset is read once. */
uint64_t kvg_trace_unix_ns(uint64_t mono_ns);

/* ---- OTLP encoding (otlp.c), pure. */

struct kvg_trace_resource {
    const char *service_name;    /* service.name */
    const char *service_version; /* service.version, NULL none */
    const char *instance_id;     /* service.instance.id, NULL none */
};

/* Appends an ExportTraceServiceRequest (one ResourceSpans, one ScopeSpans
 * "kvgate") of spans[0..n) to out, protobuf-encoded
 * (opentelemetry/proto/collector/trace/v1/trace_service.proto). 0 or
 * KVG_ETOOBIG / -ENOMEM from out. */
int kvg_trace_encode(const struct kvg_trace_resource *res,
                     const struct kvg_trace_span *const *spans, size_t n, struct kvg_buf *out);

/* ---- The exporter (export.c). */

struct kvg_trace_config {
    char endpoint[512];    /* http(s)://host:port[/base]: spans go to base/v1/traces */
    double sample;         /* share of new traces recorded (0..1) */
    uint32_t queue_spans;  /* spans waiting at most (2048) */
    uint32_t batch_spans;  /* spans per POST at most (512) */
    uint32_t flush_ms;     /* a partial batch waits at most this (1000) */
    uint32_t timeout_ms;   /* one POST's connect and each read (10000) */
    char service_name[64]; /* "kvgate" */
    char service_version[64];
};

void kvg_trace_config_default(struct kvg_trace_config *c);

struct kvg_trace;

/* Checks the endpoint, registers kvgate_trace_spans_exported_total and
 * kvgate_trace_spans_dropped_total{reason} in reg (NULL: none) and starts
 * the exporter thread. *out is the caller's: kvg_trace_free. 0, or
 * KVG_ECONFIG with err, or a thread or memory error. */
int kvg_trace_new(const struct kvg_trace_config *c, struct kvg_metrics_registry *reg,
                  struct kvg_trace **out, char *err, size_t errlen);
/* Stops the exporter (an export in flight is aborted; what is queued is
 * sent once more only while the collector answered the last batch) and
 * frees t. NULL is a no-op. */
void kvg_trace_free(struct kvg_trace *t);
/* The configured sample ratio. */
double kvg_trace_sample(const struct kvg_trace *t);
/* Copies s into the queue: 0, or -ENOBUFS when the queue is full (the
 * span is dropped and counted). Any thread; never waits for the exporter
 * (a short lock around the copy). */
int kvg_trace_submit(struct kvg_trace *t, const struct kvg_trace_span *s);

struct kvg_trace_stats {
    uint64_t submitted, exported, dropped_full, dropped_export, batches, failed_batches;
};
void kvg_trace_stats(const struct kvg_trace *t, struct kvg_trace_stats *out);

#endif
