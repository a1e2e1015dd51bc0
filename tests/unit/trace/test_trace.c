/* Unit tests for trace/: W3C traceparent parsing (hostile values
 * included) and writing, sampling decisions, span attributes, the OTLP
 * protobuf encoding walked field by field, and the exporter's accounting
 * against a collector that is not there. */
#include "support/test.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/util.h"
#include "trace/trace.h"

/* The W3C Trace Context specification's example. */
static const char EX[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(traceparent_parse_and_format)
{
    uint8_t t[16], s[8], f = 0;
    CHECK_INT(kvg_trace_parse_parent(EX, strlen(EX), t, s, &f), 0);
    CHECK_INT(t[0], 0x4b);
    CHECK_INT(t[15], 0x36);
    CHECK_INT(s[0], 0x00);
    CHECK_INT(s[7], 0xb7);
    CHECK_INT(f, 1);
    char out[KVG_TRACE_PARENT_LEN + 1];
    CHECK_INT(kvg_trace_format_parent(t, s, 1, out), KVG_TRACE_PARENT_LEN);
    CHECK_STR(out, EX);
    kvg_trace_format_parent(t, s, 0, out);
    CHECK_STR(out + 53, "00");
    /* Blanks around a header value are the header's. */
    CHECK_INT(kvg_trace_parse_parent(" \t00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
                                     58, t, s, &f),
              0);
    /* A later version may carry more after a '-'. */
    const char *v1 = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more";
    CHECK_INT(kvg_trace_parse_parent(v1, strlen(v1), t, s, &f), 0);
    CHECK_INT(f, 0);
}

TEST(traceparent_hostile_values)
{
    static const char *bad[] = {
        "",
        "00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",   /* short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011", /* v00 too long */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* no '-' after */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version ff */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", /* not hex */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-\xff\xfe",
    };
    uint8_t t[16], s[8], f;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = kvg_trace_parse_parent(bad[i], strlen(bad[i]), t, s, &f);
        if (rc != KVG_EPARSE) fprintf(stderr, "accepted: '%s'\n", bad[i]);
        CHECK_INT(rc, KVG_EPARSE);
    }
    /* A NUL inside is a bad character, not an end. */
    char nul[KVG_TRACE_PARENT_LEN];
    memcpy(nul, EX, sizeof nul);
    nul[10] = 0;
    CHECK_INT(kvg_trace_parse_parent(nul, sizeof nul, t, s, &f), KVG_EPARSE);
}

TEST(sampling_decisions)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 42);
    struct kvg_trace_ctx c;
    kvg_trace_ctx_start(&c, KVG_STR_NULL, 0, &rng);
    CHECK_INT(c.sampled, 0);
    kvg_trace_ctx_start(&c, KVG_STR_NULL, 1, &rng);
    CHECK_INT(c.sampled, 1);
    /* The client's flag decides, whatever the ratio; its trace goes on. */
    kvg_trace_ctx_start(&c, (struct kvg_str){EX, strlen(EX)}, 0, &rng);
    CHECK_INT(c.sampled, 1);
    CHECK_INT(c.trace_id[0], 0x4b);
    CHECK_INT(c.parent_id[7], 0xb7);
    CHECK(memcmp(c.span_id, c.parent_id, 8) != 0);
    char ex0[sizeof EX];
    memcpy(ex0, EX, sizeof EX);
    ex0[54] = '0';
    kvg_trace_ctx_start(&c, (struct kvg_str){ex0, strlen(ex0)}, 1, &rng);
    CHECK_INT(c.sampled, 0);
    /* A bad header: a new trace, no parent. */
    kvg_trace_ctx_start(&c, KVG_STR("garbage"), 1, &rng);
    CHECK_INT(c.sampled, 1);
    static const uint8_t zero[8];
    CHECK(!memcmp(c.parent_id, zero, 8));
    /* The ratio: 20000 draws at 0.3, within 6 standard deviations (65). */
    int n = 0;
    for (int i = 0; i < 20000; i++) {
        kvg_trace_ctx_start(&c, KVG_STR_NULL, 0.3, &rng);
        n += c.sampled;
    }
    CHECK(n > 6000 - 390 && n < 6000 + 390);
}

TEST(attributes_cut_whole_characters)
{
    static struct kvg_trace_span s;
    uint8_t id[16] = {1}, sid[8] = {2};
    kvg_trace_span_init(&s, id, NULL, sid, "x", KVG_TRACE_INTERNAL, 10, 5);
    CHECK(s.end_ns >= s.start_ns); /* an end before the start is the start */
    char fill[KVG_TRACE_STR_BYTES - 1];
    memset(fill, 'a', sizeof fill);
    kvg_trace_attr_str(&s, "a", fill, sizeof fill);
    kvg_trace_attr_str(&s, "b", "\xc3\xa9", 2); /* one byte left: no half of 'é' */
    CHECK_INT(s.attrs[1].len, 0);
    for (int i = 2; i < KVG_TRACE_MAX_ATTRS + 3; i++) kvg_trace_attr_int(&s, "n", i);
    CHECK_INT(s.nattrs, KVG_TRACE_MAX_ATTRS);
    CHECK_INT(s.dropped, 3);
}

/* ---- A protobuf walker: the first field number f of a message. */
struct fld {
    int wt;
    uint64_t v; /* varint, fixed64 */
    const uint8_t *p;
    size_t n; /* a length-delimited field's bytes */
};

static int rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* Walks the whole message (every length must fit: -1 otherwise); the
 * k-th (0-based) field numbered f into out. 1 found, 0 not, -1 bad. */
static int field(const uint8_t *p, size_t n, unsigned f, int k, struct fld *out)
{
    const uint8_t *end = p + n;
    int found = 0;
    while (p < end) {
        uint64_t key, v = 0;
        if (rd_varint(&p, end, &key)) return -1;
        struct fld x = {.wt = (int)(key & 7)};
        if (x.wt == 0) {
            if (rd_varint(&p, end, &v)) return -1;
            x.v = v;
        } else if (x.wt == 1) {
            if (end - p < 8) return -1;
            for (int i = 0; i < 8; i++) x.v |= (uint64_t)p[i] << (8 * i);
            p += 8;
        } else if (x.wt == 2) {
            if (rd_varint(&p, end, &v) || v > (uint64_t)(end - p)) return -1;
            x.p = p;
            x.n = (size_t)v;
            p += v;
        } else {
            return -1;
        }
        if ((key >> 3) == f && k-- == 0 && !found) {
            *out = x;
            found = 1;
        }
    }
    return found;
}

TEST(otlp_encoding_fields)
{
    static struct kvg_trace_span a, b;
    uint8_t tid[16], sid[8], pid[8];
    for (int i = 0; i < 16; i++) tid[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 8; i++) sid[i] = (uint8_t)(0xa0 + i), pid[i] = (uint8_t)(0x10 + i);
    kvg_trace_span_init(&a, tid, pid, sid, "route", KVG_TRACE_INTERNAL, 1000, 2000);
    kvg_trace_attr_str(&a, "kvgate.worker", "http://w:1", 10);
    kvg_trace_attr_int(&a, "kvgate.route.matched_blocks", -3);
    kvg_trace_attr_double(&a, "kvgate.ttft_s", 0.25);
    kvg_trace_attr_bool(&a, "kvgate.stream", 1);
    a.status = KVG_TRACE_ERROR;
    a.event = "first_token";
    a.event_ns = 12345;
    kvg_trace_span_init(&b, tid, NULL, pid, NULL, KVG_TRACE_SERVER, 1000, 3000);
    snprintf(b.name_buf, sizeof b.name_buf, "POST /v1/chat/completions");
    const struct kvg_trace_span *spans[] = {&a, &b};
    struct kvg_trace_resource res = {.service_name = "kvgate"};
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    CHECK_INT(kvg_trace_encode(&res, spans, 2, &out), 0);
    const uint8_t *p = (const uint8_t *)out.data;
    struct fld rs, r, kv, v, ss, sc, sp, x;
    CHECK_INT(field(p, out.len, 1, 0, &rs), 1); /* resource_spans */
    CHECK_INT((size_t)(rs.p + rs.n - p), out.len);
    CHECK_INT(field(rs.p, rs.n, 1, 0, &r), 1); /* resource */
    CHECK_INT(field(r.p, r.n, 1, 0, &kv), 1);  /* attributes[0] */
    CHECK_INT(field(kv.p, kv.n, 1, 0, &x), 1);
    CHECK(x.n == 12 && !memcmp(x.p, "service.name", 12));
    CHECK_INT(field(kv.p, kv.n, 2, 0, &v), 1);
    CHECK_INT(field(v.p, v.n, 1, 0, &x), 1);
    CHECK(x.n == 6 && !memcmp(x.p, "kvgate", 6));
    CHECK_INT(field(rs.p, rs.n, 2, 0, &ss), 1); /* scope_spans */
    CHECK_INT(field(ss.p, ss.n, 1, 0, &sc), 1);
    CHECK_INT(field(sc.p, sc.n, 1, 0, &x), 1);
    CHECK(x.n == 6 && !memcmp(x.p, "kvgate", 6));
    CHECK_INT(field(ss.p, ss.n, 2, 0, &sp), 1); /* spans[0] */
    CHECK_INT(field(sp.p, sp.n, 1, 0, &x), 1);
    CHECK(x.n == 16 && !memcmp(x.p, tid, 16));
    CHECK_INT(field(sp.p, sp.n, 2, 0, &x), 1);
    CHECK(x.n == 8 && !memcmp(x.p, sid, 8));
    CHECK_INT(field(sp.p, sp.n, 4, 0, &x), 1);
    CHECK(x.n == 8 && !memcmp(x.p, pid, 8));
    CHECK_INT(field(sp.p, sp.n, 5, 0, &x), 1);
    CHECK(x.n == 5 && !memcmp(x.p, "route", 5));
    CHECK_INT(field(sp.p, sp.n, 6, 0, &x), 1);
    CHECK_INT(x.v, KVG_TRACE_INTERNAL);
    CHECK_INT(field(sp.p, sp.n, 7, 0, &x), 1);
    CHECK_INT(x.wt, 1);
    CHECK_INT(x.v, kvg_trace_unix_ns(1000));
    CHECK_INT(field(sp.p, sp.n, 8, 0, &x), 1);
    CHECK_INT(x.v - kvg_trace_unix_ns(1000), 1000);
    /* attributes[1]: an int64 of -3, two's complement in ten bytes. */
    CHECK_INT(field(sp.p, sp.n, 9, 1, &kv), 1);
    CHECK_INT(field(kv.p, kv.n, 2, 0, &v), 1);
    CHECK_INT(field(v.p, v.n, 3, 0, &x), 1);
    CHECK_INT((int64_t)x.v, -3);
    CHECK_INT(field(sp.p, sp.n, 9, 2, &kv), 1); /* the double */
    CHECK_INT(field(kv.p, kv.n, 2, 0, &v), 1);
    CHECK_INT(field(v.p, v.n, 4, 0, &x), 1);
    double d;
    memcpy(&d, &x.v, 8);
    CHECK_NEAR(d, 0.25, 0);
    CHECK_INT(field(sp.p, sp.n, 9, 3, &kv), 1); /* the bool */
    CHECK_INT(field(kv.p, kv.n, 2, 0, &v), 1);
    CHECK_INT(field(v.p, v.n, 2, 0, &x), 1);
    CHECK_INT(x.v, 1);
    CHECK_INT(field(sp.p, sp.n, 11, 0, &x), 1); /* the event */
    struct fld en;
    CHECK_INT(field(x.p, x.n, 2, 0, &en), 1);
    CHECK(en.n == 11 && !memcmp(en.p, "first_token", 11));
    CHECK_INT(field(sp.p, sp.n, 15, 0, &x), 1); /* status */
    CHECK_INT(field(x.p, x.n, 3, 0, &en), 1);
    CHECK_INT(en.v, KVG_TRACE_ERROR);
    /* spans[1]: a root (no parent field), its name from name_buf. */
    CHECK_INT(field(ss.p, ss.n, 2, 1, &sp), 1);
    CHECK_INT(field(sp.p, sp.n, 4, 0, &x), 0);
    CHECK_INT(field(sp.p, sp.n, 5, 0, &x), 1);
    CHECK(x.n == 25 && !memcmp(x.p, "POST /v1/chat/completions", 25));
    kvg_buf_free(&out);
}

TEST(exporter_counts_what_a_dead_collector_loses)
{
    struct kvg_trace_config c;
    kvg_trace_config_default(&c);
    /* A port nothing listens on: connect is refused at once. */
    snprintf(c.endpoint, sizeof c.endpoint, "http://127.0.0.1:1/base/");
    c.queue_spans = 4;
    c.batch_spans = 2;
    c.flush_ms = 10;
    c.timeout_ms = 1000;
    char err[256];
    struct kvg_trace *t;
    CHECK_INT(kvg_trace_new(&c, NULL, &t, err, sizeof err), 0);
    static struct kvg_trace_span s;
    uint8_t tid[16] = {1}, sid[8] = {1};
    kvg_trace_span_init(&s, tid, NULL, sid, "x", KVG_TRACE_INTERNAL, 1, 2);
    int full = 0;
    for (int i = 0; i < 50; i++) full += kvg_trace_submit(t, &s) == -ENOBUFS;
    struct kvg_trace_stats st;
    for (int i = 0; i < 500; i++) { /* bounded: 5 s */
        kvg_trace_stats(t, &st);
        if (st.exported + st.dropped_full + st.dropped_export == st.submitted) break;
        usleep(10000);
    }
    kvg_trace_free(t);
    CHECK_INT(st.submitted, 50);
    CHECK_INT(st.exported, 0);
    CHECK_INT(st.dropped_full, (uint64_t)full);
    CHECK_INT(st.dropped_full + st.dropped_export, 50);
    CHECK(st.failed_batches > 0);

    /* Bad settings are refused with a message. */
    snprintf(c.endpoint, sizeof c.endpoint, "ftp://x");
    CHECK_INT(kvg_trace_new(&c, NULL, &t, err, sizeof err), KVG_ECONFIG);
    snprintf(c.endpoint, sizeof c.endpoint, "http://127.0.0.1:1");
    c.sample = 1.5;
    CHECK_INT(kvg_trace_new(&c, NULL, &t, err, sizeof err), KVG_ECONFIG);
}
