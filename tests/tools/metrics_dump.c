/* Test helper for tests/integration/metrics_promtool.sh.
 *
 *   metrics_dump            builds a registry with every kind of metric and
 *                           awkward label values, updates it from several
 *                           threads, removes a worker, prints the rendering
 *   metrics_dump --parse    reads exposition text on stdin with kvgate's
 *                           parser; prints "samples N" (rc 0) or the error
 *                           and its line (rc 1)
 *   metrics_dump --load     same input, prints the normalised load view
 *
 * The first mode is what promtool checks; the other two let the script hold
 * kvgate's parser against promtool's on the same bytes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "metrics/load.h"
#include "metrics/metrics.h"
#include "metrics/parse.h"

#define CHECK_RC(expr)                                                                             \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0) {                                                                             \
            fprintf(stderr, "%s: %s\n", #expr, kvg_strerror(rc_));                                 \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* Label values a careless renderer gets wrong. */
static const char *const awkward[] = {
    "http://10.0.0.7:8000",
    "back\\slash",
    "dq\"uote",
    "new\nline",
    "",
    "{braces},commas=equals",
    "\xe6\xa8\xa1\xe5\x9e\x8b-\xc3\xbc-\xf0\x9f\x9a\x80", /* CJK, Latin-1, an emoji */
    "le=\"0.5\"",
    "  spaces and\ttab  ",
    "trailing backslash\\",
};
#define NAWK (sizeof awkward / sizeof awkward[0])

struct ctx {
    struct kvg_metrics_series *req[NAWK], *lat[NAWK], *inflight, *frac;
};

static void *hammer(void *arg)
{
    struct ctx *c = arg;
    for (int i = 0; i < 10000; i++) {
        size_t k = (size_t)i % NAWK;
        kvg_metrics_inc(c->req[k]);
        kvg_metrics_observe(c->lat[k], (double)(i % 50) / 10.0);
        kvg_metrics_inc(c->inflight);
        kvg_metrics_dec(c->inflight);
        kvg_metrics_add(c->frac, 0.125);
    }
    return NULL;
}

static int dump(void)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *freq, *flat, *finfl, *ffrac, *fload, *fup, *fempty, *fbytes;
    struct ctx c;
    CHECK_RC(kvg_metrics_registry_new(0, &r));
    const char *const l_req[] = {"worker", "code"};
    const char *const l_w[] = {"worker"};
    double lat_b[12];
    CHECK_RC(kvg_metrics_buckets_exp(0.001, 2.5, 12, lat_b));
    CHECK_RC(kvg_metrics_counter(r, "kvgate_requests_total",
                                 "Requests routed, by worker and status code.", l_req, 2, &freq));
    CHECK_RC(kvg_metrics_histogram(r, "kvgate_ttft_seconds",
                                   "Time to first token seen by the gateway (s).\n"
                                   "Second line with a \\ backslash and \"quotes\".",
                                   l_w, 1, lat_b, 12, &flat));
    CHECK_RC(
        kvg_metrics_gauge(r, "kvgate_inflight_requests", "Requests in flight.", NULL, 0, &finfl));
    CHECK_RC(kvg_metrics_counter(r, "kvgate_busy_seconds_total", "Busy time.", NULL, 0, &ffrac));
    CHECK_RC(kvg_metrics_gauge(r, "kvgate_worker_load", "Engine-reported load; NaN when unknown.",
                               l_w, 1, &fload));
    CHECK_RC(kvg_metrics_gauge(r, "kvgate_up", "1 while serving.", NULL, 0, &fup));
    CHECK_RC(
        kvg_metrics_gauge(r, "kvgate_never_used", "No series: not rendered.", l_w, 1, &fempty));
    const double byte_b[] = {1024, 65536, 1048576};
    CHECK_RC(kvg_metrics_histogram(r, "kvgate_request_bytes", "Request body size.", NULL, 0, byte_b,
                                   3, &fbytes));

    for (size_t k = 0; k < NAWK; k++) {
        const char *const v_req[] = {awkward[k], k % 2 ? "200" : "429"};
        const char *const v_w[] = {awkward[k]};
        CHECK_RC(kvg_metrics_series(freq, v_req, 2, &c.req[k]));
        CHECK_RC(kvg_metrics_series(flat, v_w, 1, &c.lat[k]));
    }
    CHECK_RC(kvg_metrics_series(finfl, NULL, 0, &c.inflight));
    CHECK_RC(kvg_metrics_series(ffrac, NULL, 0, &c.frac));

    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, hammer, &c)) return 2;
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);

    struct kvg_metrics_series *load[3], *up, *bytes, *gone;
    const char *const w0[] = {awkward[0]}, *const w1[] = {awkward[6]},
                      *const w2[] = {"http://removed:8000"};
    CHECK_RC(kvg_metrics_series(fload, w0, 1, &load[0]));
    CHECK_RC(kvg_metrics_series(fload, w1, 1, &load[1]));
    CHECK_RC(kvg_metrics_series(fload, w2, 1, &load[2]));
    kvg_metrics_set(load[0], 0.8125);
    kvg_metrics_set(load[1], NAN);
    kvg_metrics_set(load[2], -INFINITY);
    CHECK_RC(kvg_metrics_series(fup, NULL, 0, &up));
    kvg_metrics_set(up, 1);
    CHECK_RC(kvg_metrics_series(fbytes, NULL, 0, &bytes));
    kvg_metrics_observe(bytes, 100);
    kvg_metrics_observe(bytes, 5e6);
    const char *const v_gone[] = {"http://removed:8000", "200"};
    CHECK_RC(kvg_metrics_series(freq, v_gone, 2, &gone));
    kvg_metrics_inc(gone);
    /* The worker leaves the pool: every series labelled with it goes. */
    CHECK_RC(kvg_metrics_remove_label(r, "worker", "http://removed:8000"));

    struct kvg_buf out;
    kvg_buf_init(&out, 1 << 22);
    CHECK_RC(kvg_metrics_render(r, &out));
    fwrite(out.data, 1, out.len, stdout);
    kvg_buf_free(&out);

    for (size_t k = 0; k < NAWK; k++) {
        kvg_metrics_series_release(c.req[k]);
        kvg_metrics_series_release(c.lat[k]);
    }
    kvg_metrics_series_release(c.inflight);
    kvg_metrics_series_release(c.frac);
    for (int i = 0; i < 3; i++) kvg_metrics_series_release(load[i]);
    kvg_metrics_series_release(up);
    kvg_metrics_series_release(bytes);
    kvg_metrics_series_release(gone);
    kvg_metrics_registry_free(r);
    return 0;
}

static int read_stdin(struct kvg_buf *in)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        int rc = kvg_buf_append(in, chunk, n);
        if (rc) return rc;
    }
    return 0;
}

static void print_field(const char *name, unsigned known, unsigned bit, double v)
{
    if (known & bit)
        printf("%s %.17g\n", name, v);
    else
        printf("%s unknown\n", name);
}

int main(int argc, char **argv)
{
    if (argc == 1) return dump();
    struct kvg_buf in;
    kvg_buf_init(&in, 16 << 20); /* engine bodies are bounded the same way */
    CHECK_RC(read_stdin(&in));
    int rc = 0;
    if (!strcmp(argv[1], "--parse")) {
        struct kvg_metrics_parser ps;
        struct kvg_metrics_sample s;
        size_t n = 0;
        kvg_metrics_parser_init(&ps, in.data ? in.data : "", in.len);
        while ((rc = kvg_metrics_parser_next(&ps, &s)) > 0) n++;
        if (rc < 0)
            printf("error %s at line %zu\n", kvg_strerror(rc), ps.line);
        else
            printf("samples %zu\n", n);
    } else if (!strcmp(argv[1], "--load")) {
        struct kvg_metrics_load l;
        rc = kvg_metrics_load_parse(in.data ? in.data : "", in.len, &l);
        printf("rc %d\nflavor %s\n", rc, kvg_metrics_flavor_name(l.flavor));
        print_field("waiting", l.known, KVG_METRICS_HAS_WAITING, l.waiting);
        print_field("running", l.known, KVG_METRICS_HAS_RUNNING, l.running);
        print_field("kv_usage", l.known, KVG_METRICS_HAS_KV_USAGE, l.kv_usage);
        print_field("block_size", l.known, KVG_METRICS_HAS_BLOCK_SIZE, (double)l.block_size);
        print_field("num_gpu_blocks", l.known, KVG_METRICS_HAS_NUM_GPU_BLOCKS,
                    (double)l.num_gpu_blocks);
        print_field("kv_capacity_tokens", l.known, KVG_METRICS_HAS_KV_CAPACITY,
                    (double)l.kv_capacity_tokens);
        print_field("prefix_queries", l.known, KVG_METRICS_HAS_PREFIX_QUERIES, l.prefix_queries);
        print_field("prefix_hits", l.known, KVG_METRICS_HAS_PREFIX_HITS, l.prefix_hits);
        print_field("cache_hit_rate", l.known, KVG_METRICS_HAS_CACHE_HIT_RATE, l.cache_hit_rate);
        printf("engines %u\n", l.engines);
    } else {
        fprintf(stderr, "usage: metrics_dump [--parse | --load] < text\n");
        rc = -1;
    }
    kvg_buf_free(&in);
    return rc < 0 ? 1 : 0;
}
