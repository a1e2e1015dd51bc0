/* kvgate autoscale's reading of a gateway's /metrics (autoscale/sources.h):
 * the counters, a histogram's growth between two reads (a restart starts it
 * over) and the bucket quantile, interpolated inside its bucket as
 * Prometheus' histogram_quantile does. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/sources.h"
#include "support/test.h"

static const char READ1[] =
    "# TYPE kvgate_requests_total counter\n"
    "kvgate_requests_total{route=\"/v1/chat/completions\",code=\"2xx\"} 3\n"
    "kvgate_requests_total{route=\"/v1/completions\",code=\"2xx\"} 5\n"
    "kvgate_requests_total{route=\"/v1/completions\",code=\"5xx\"} 2\n"
    "kvgate_tokens_total{kind=\"prompt\"} 800\n"
    "kvgate_tokens_total{kind=\"cached\"} 200\n"
    "kvgate_tokens_total{kind=\"completion\"} 80\n"
    "kvgate_admission_queue_waiting 4\n"
    "kvgate_time_to_first_token_seconds_bucket{le=\"0.1\"} 2\n"
    "kvgate_time_to_first_token_seconds_bucket{le=\"0.2\"} 6\n"
    "kvgate_time_to_first_token_seconds_bucket{le=\"0.4\"} 8\n"
    "kvgate_time_to_first_token_seconds_bucket{le=\"+Inf\"} 8\n"
    "kvgate_time_to_first_token_seconds_sum 1.2\n"
    "kvgate_time_to_first_token_seconds_count 8\n"
    "kvgate_time_to_first_byte_seconds_bucket{le=\"0.1\",route=\"/v1/completions\"} 9\n"
    "this line is not metrics\n"
    "kvgate_inter_token_latency_seconds_bucket{le=\"0.01\"} 1\n"
    "kvgate_inter_token_latency_seconds_bucket{le=\"+Inf\"} 1\n"
    "kvgate_inter_token_latency_seconds_sum 0.005\n"
    "kvgate_inter_token_latency_seconds_count 1\n";

TEST(sources_gateway_read)
{
    struct kvg_autoscale_gw_read r;
    kvg_autoscale_gw_parse(READ1, strlen(READ1), NULL, &r);
    CHECK_NEAR(r.requests, 10, 0);
    CHECK_NEAR(r.ok, 8, 0);
    CHECK_NEAR(r.tokens[0], 800, 0);
    CHECK_NEAR(r.tokens[1], 200, 0);
    CHECK_NEAR(r.tokens[2], 80, 0);
    CHECK_NEAR(r.queued, 4, 0);
    CHECK_INT(r.ttft.n, 4); /* the first-byte histogram is not taken for it */
    CHECK_INT(r.ttft.bad, 0);
    CHECK_NEAR(r.ttft.le[2], 0.4, 0);
    CHECK(isinf(r.ttft.le[3]));
    CHECK_NEAR(r.ttft.cum[1], 6, 0);
    CHECK_NEAR(r.ttft.sum, 1.2, 1e-12);
    CHECK_NEAR(r.ttft.count, 8, 0);
    CHECK_INT(r.itl.n, 2);
    CHECK_NEAR(r.itl.count, 1, 0);
}

TEST(sources_histogram_refused)
{
    static const char unordered[] = "kvgate_time_to_first_token_seconds_bucket{le=\"0.2\"} 1\n"
                                    "kvgate_time_to_first_token_seconds_bucket{le=\"0.1\"} 1\n"
                                    "kvgate_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n";
    static const char no_inf[] = "kvgate_inter_token_latency_seconds_bucket{le=\"0.1\"} 1\n";
    struct kvg_autoscale_gw_read r;
    kvg_autoscale_gw_parse(unordered, strlen(unordered), NULL, &r);
    CHECK_INT(r.ttft.bad, 1);
    kvg_autoscale_gw_parse(no_inf, strlen(no_inf), NULL, &r);
    CHECK_INT(r.itl.bad, 1);
    double c[KVG_AUTOSCALE_HIST_BUCKETS] = {0}, sum = 0, n = 0;
    CHECK(kvg_autoscale_hist_delta(&r.itl, &r.itl, c, &sum, &n) < 0);
}

/* Series per model (kvgate_tokens_total{model,kind}, the latency
 * histograms {model}): summed over the models, bucket by bucket. */
TEST(sources_gateway_models_summed)
{
    static const char two[] =
        "kvgate_tokens_total{model=\"a\",kind=\"prompt\"} 10\n"
        "kvgate_tokens_total{model=\"b\",kind=\"prompt\"} 5\n"
        "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"0.1\"} 1\n"
        "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"+Inf\"} 2\n"
        "kvgate_time_to_first_token_seconds_sum{model=\"a\"} 0.3\n"
        "kvgate_time_to_first_token_seconds_count{model=\"a\"} 2\n"
        "kvgate_time_to_first_token_seconds_bucket{model=\"b\",le=\"0.1\"} 3\n"
        "kvgate_time_to_first_token_seconds_bucket{model=\"b\",le=\"+Inf\"} 3\n"
        "kvgate_time_to_first_token_seconds_sum{model=\"b\"} 0.15\n"
        "kvgate_time_to_first_token_seconds_count{model=\"b\"} 3\n";
    struct kvg_autoscale_gw_read r;
    kvg_autoscale_gw_parse(two, strlen(two), NULL, &r);
    CHECK_NEAR(r.tokens[0], 15, 0);
    CHECK_INT(r.ttft.bad, 0);
    CHECK_INT(r.ttft.n, 2);
    CHECK_NEAR(r.ttft.cum[0], 4, 0);
    CHECK_NEAR(r.ttft.cum[1], 5, 0);
    CHECK_NEAR(r.ttft.sum, 0.45, 1e-12);
    CHECK_NEAR(r.ttft.count, 5, 0);
}

/* The second read: 4 more observations, 2 of them in (0.2, 0.4]. */
TEST(sources_histogram_growth)
{
    struct kvg_autoscale_gw_read a, b;
    kvg_autoscale_gw_parse(READ1, strlen(READ1), NULL, &a);
    b = a;
    b.ttft.cum[0] = 3;  /* +1 in (0, 0.1] */
    b.ttft.cum[1] = 7;  /* +0 in (0.1, 0.2] */
    b.ttft.cum[2] = 10; /* +1 in (0.2, 0.4] */
    b.ttft.cum[3] = 12; /* +2 past 0.4 */
    b.ttft.sum = 3.2;
    b.ttft.count = 12;
    double c[KVG_AUTOSCALE_HIST_BUCKETS] = {0}, sum = 0, n = 0;
    CHECK_INT(kvg_autoscale_hist_delta(&b.ttft, &a.ttft, c, &sum, &n), 0);
    CHECK_NEAR(c[0], 1, 0);
    CHECK_NEAR(c[1], 0, 0);
    CHECK_NEAR(c[2], 1, 0);
    CHECK_NEAR(c[3], 2, 0);
    CHECK_NEAR(sum, 2.0, 1e-12);
    CHECK_NEAR(n, 4, 0);
    /* A restarted gateway (fewer observations): its counts since the start. */
    memset(c, 0, sizeof c);
    sum = n = 0;
    CHECK_INT(kvg_autoscale_hist_delta(&a.ttft, &b.ttft, c, &sum, &n), 0);
    CHECK_NEAR(c[0], 2, 0);
    CHECK_NEAR(c[1], 4, 0);
    CHECK_NEAR(c[2], 2, 0);
    CHECK_NEAR(c[3], 0, 0);
    CHECK_NEAR(n, 8, 0);
    /* Other buckets than before: refused. */
    b.ttft.le[1] = 0.3;
    CHECK(kvg_autoscale_hist_delta(&b.ttft, &a.ttft, c, &sum, &n) < 0);
}

TEST(sources_bucket_quantile)
{
    const double le[4] = {0.1, 0.2, 0.4, INFINITY};
    const double c[4] = {0, 10, 10, 0};
    /* rank q * 20 inside its bucket: 0.5 -> the top of (0.1, 0.2];
     * 0.9 -> 8 of the 10 in (0.2, 0.4]; 0.25 -> half of (0.1, 0.2]. */
    CHECK_NEAR(kvg_autoscale_hist_quantile(c, le, 4, 0.5), 0.2, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_quantile(c, le, 4, 0.9), 0.36, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_quantile(c, le, 4, 0.25), 0.15, 1e-12);
    /* The first bucket starts at 0; the +Inf bucket answers the highest bound. */
    const double first[4] = {4, 0, 0, 0}, inf[4] = {0, 0, 0, 5}, none[4] = {0};
    CHECK_NEAR(kvg_autoscale_hist_quantile(first, le, 4, 0.5), 0.05, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_quantile(inf, le, 4, 0.9), 0.4, 1e-12);
    CHECK(kvg_autoscale_hist_quantile(none, le, 4, 0.9) < 0);
}

/* Two scrapes of a gateway serving models a and b with --slo-ttft-secs 1
 * --slo-itl-secs 0.05, in its exposition's shape. */
static const char SLO1[] = "kvgate_requests_total{route=\"/v1/completions\",code=\"2xx\"} 30\n"
                           "kvgate_requests_total{route=\"/v1/completions\",code=\"5xx\"} 1\n"
                           "kvgate_model_requests_total{model=\"a\",class=\"2xx\"} 20\n"
                           "kvgate_model_requests_total{model=\"a\",class=\"5xx\"} 1\n"
                           "kvgate_model_requests_total{model=\"b\",class=\"2xx\"} 10\n"
                           "kvgate_tokens_total{model=\"a\",kind=\"prompt\"} 2000\n"
                           "kvgate_tokens_total{model=\"b\",kind=\"prompt\"} 500\n"
                           "kvgate_admission_queue_waiting 3\n"
                           "# TYPE kvgate_slo_requests_total counter\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"met\"} 15\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"ttft_missed\"} 2\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"itl_missed\"} 2\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"both_missed\"} 1\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"failed\"} 1\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"met\"} 10\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"ttft_missed\"} 0\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"itl_missed\"} 0\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"both_missed\"} 0\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"failed\"} 0\n"
                           "kvgate_slo_target_seconds{latency=\"ttft\"} 1\n"
                           "kvgate_slo_target_seconds{latency=\"itl\"} 0.05\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"0.5\"} 10\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"2\"} 18\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"+Inf\"} 20\n"
                           "kvgate_time_to_first_token_seconds_sum{model=\"a\"} 14\n"
                           "kvgate_time_to_first_token_seconds_count{model=\"a\"} 20\n";
/* 10 more requests of a since: 4 met, 2 over TTFT, 1 over ITL, 1 over
 * both, 2 failed; b none. TTFT: 2 more in (0, 0.5], 4 in (0.5, 2], 0 past. */
static const char SLO2[] = "kvgate_model_requests_total{model=\"a\",class=\"2xx\"} 28\n"
                           "kvgate_model_requests_total{model=\"a\",class=\"5xx\"} 3\n"
                           "kvgate_model_requests_total{model=\"b\",class=\"2xx\"} 10\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"met\"} 19\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"ttft_missed\"} 4\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"itl_missed\"} 3\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"both_missed\"} 2\n"
                           "kvgate_slo_requests_total{model=\"a\",result=\"failed\"} 3\n"
                           "kvgate_slo_requests_total{model=\"b\",result=\"met\"} 10\n"
                           "kvgate_slo_target_seconds{latency=\"ttft\"} 1\n"
                           "kvgate_slo_target_seconds{latency=\"itl\"} 0.05\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"0.5\"} 12\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"2\"} 24\n"
                           "kvgate_time_to_first_token_seconds_bucket{model=\"a\",le=\"+Inf\"} 26\n"
                           "kvgate_time_to_first_token_seconds_sum{model=\"a\"} 20\n"
                           "kvgate_time_to_first_token_seconds_count{model=\"a\"} 26\n";

/* A pool of model a reads a's series alone: its answers from
 * kvgate_model_requests_total, no queue (no
 * kvgate_admission_queue_model_waiting of it here). */
TEST(sources_gateway_one_model)
{
    struct kvg_autoscale_gw_read a, b, all, none;
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "a", &a);
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "b", &b);
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "", &all);
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "c", &none);
    CHECK_NEAR(a.requests, 21, 0);
    CHECK_NEAR(a.ok, 20, 0);
    CHECK_NEAR(a.failed, 1, 0);
    CHECK_NEAR(a.tokens[0], 2000, 0);
    CHECK_NEAR(a.queued, 0, 0);
    CHECK_INT(a.model_seen, 1);
    CHECK_INT(a.ttft.n, 3);
    CHECK_NEAR(a.slo[KVG_AUTOSCALE_SLO_MET], 15, 0);
    CHECK_NEAR(a.slo_target[0], 1, 0);
    CHECK_NEAR(a.slo_target[1], 0.05, 0);
    CHECK_NEAR(b.requests, 10, 0);
    CHECK_NEAR(b.tokens[0], 500, 0);
    CHECK_INT(b.ttft.n, 0);
    CHECK_NEAR(b.slo[KVG_AUTOSCALE_SLO_MET], 10, 0);
    /* All models: the route counters, the queue, every model's sums. */
    CHECK_NEAR(all.requests, 31, 0);
    CHECK_NEAR(all.failed, 1, 0);
    CHECK_NEAR(all.queued, 3, 0);
    CHECK_NEAR(all.tokens[0], 2500, 0);
    CHECK_NEAR(all.slo[KVG_AUTOSCALE_SLO_MET], 25, 0);
    CHECK_INT(all.model_seen, 0);
    /* A model no series names: nothing, and said so. */
    CHECK_INT(none.model_seen, 0);
    CHECK_NEAR(none.requests, 0, 0);
    CHECK_INT(none.has_slo, 0);
    CHECK_NEAR(none.slo_target[0], 1, 0); /* the gateway's targets are every model's */
}

TEST(sources_slo_exact)
{
    struct kvg_autoscale_gw_read r1, r2;
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "a", &r1);
    kvg_autoscale_gw_parse(SLO2, strlen(SLO2), "a", &r2);
    struct kvg_autoscale_slo_delta d;
    CHECK_INT(kvg_autoscale_slo_delta(&r2, &r1, 1, 0.05, &d), 0);
    CHECK_INT(d.exact, 1);
    CHECK_NEAR(d.finished, 10, 0);
    CHECK_NEAR(d.ttft, 2 + 1 + 2, 0); /* ttft_missed, both, failed */
    CHECK_NEAR(d.itl, 1 + 1 + 2, 0);  /* itl_missed, both, failed */
    CHECK_NEAR(d.either, 10 - 4, 0);  /* all but met */
    /* A restarted gateway: its counts since the start (a counter fell). */
    CHECK_INT(kvg_autoscale_slo_delta(&r1, &r2, 1, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 21, 0);
    CHECK_NEAR(d.either, 6, 0);
    /* The series new since the last read (a gateway restarted with
     * targets): all of it. */
    struct kvg_autoscale_gw_read old = r1;
    old.has_slo = 0;
    memset(old.slo, 0, sizeof old.slo);
    CHECK_INT(kvg_autoscale_slo_delta(&r2, &old, 1, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 31, 0);
}

/* Other targets than the pool's (or no counter): the TTFT share from the
 * histogram, interpolated inside the bucket; ITL and either unknown. */
TEST(sources_slo_from_histogram)
{
    struct kvg_autoscale_gw_read r1, r2;
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "a", &r1);
    kvg_autoscale_gw_parse(SLO2, strlen(SLO2), "a", &r2);
    struct kvg_autoscale_slo_delta d;
    CHECK_INT(kvg_autoscale_slo_delta(&r2, &r1, 1, 0.1, &d), 0); /* ITL target differs */
    CHECK_INT(d.exact, 0);
    CHECK_NEAR(d.finished, 8 + 2, 0); /* 2xx + 5xx growth */
    /* 4 in (0.5, 2]: (2 - 1) / (2 - 0.5) of them over 1 s, + 2 failed. */
    CHECK_NEAR(d.ttft, 4 * (1.0 / 1.5) + 2, 1e-12);
    r2.has_slo = 0; /* no counter at all: the same */
    CHECK_INT(kvg_autoscale_slo_delta(&r2, &r1, 1, 0.05, &d), 0);
    CHECK_INT(d.exact, 0);
    CHECK_NEAR(d.ttft, 4 * (1.0 / 1.5) + 2, 1e-12);
    /* Model b without the counter and with no TTFT histogram: nothing known. */
    struct kvg_autoscale_gw_read b1, b2;
    kvg_autoscale_gw_parse(SLO1, strlen(SLO1), "b", &b1);
    kvg_autoscale_gw_parse(SLO2, strlen(SLO2), "b", &b2);
    b2.has_slo = 0;
    CHECK_INT(kvg_autoscale_slo_delta(&b2, &b1, 1, 0.05, &d), -ENOENT);
}

TEST(sources_hist_over)
{
    const double le[4] = {0.1, 0.2, 0.4, INFINITY};
    const double c[4] = {4, 10, 10, 2};
    CHECK_NEAR(kvg_autoscale_hist_over(c, le, 4, 0.15), 5 + 10 + 2, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_over(c, le, 4, 0.2), 10 + 2, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_over(c, le, 4, 0.05), 2 + 10 + 10 + 2, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_over(c, le, 4, 0), 26, 1e-12);
    CHECK_NEAR(kvg_autoscale_hist_over(c, le, 4, 1.0), 2, 1e-12); /* past the last bound */
}

/* The window: shares of its ticks' finished requests; ITL and either only
 * when every finished one was counted exactly; nothing finished: unknown. */
TEST(sources_slo_window)
{
    struct kvg_autoscale_slo_ring *R = calloc(1, sizeof *R);
    CHECK(R != NULL);
    double e, t, i;
    kvg_autoscale_slo_window(R, 4, &e, &t, &i);
    CHECK(e < 0 && t < 0 && i < 0);
    struct kvg_autoscale_slo_delta d = {
        .finished = 10, .ttft = 5, .itl = 4, .either = 6, .exact = 1};
    kvg_autoscale_slo_add(R, &d);
    kvg_autoscale_slo_next(R);
    kvg_autoscale_slo_next(R); /* an empty tick */
    kvg_autoscale_slo_window(R, 4, &e, &t, &i);
    CHECK_NEAR(e, 0.6, 1e-12);
    CHECK_NEAR(t, 0.5, 1e-12);
    CHECK_NEAR(i, 0.4, 1e-12);
    kvg_autoscale_slo_window(R, 1, &e, &t, &i); /* the empty tick alone */
    CHECK(e < 0 && t < 0 && i < 0);
    struct kvg_autoscale_slo_delta h = {.finished = 10, .ttft = 1, .exact = 0};
    kvg_autoscale_slo_add(R, &h);
    kvg_autoscale_slo_next(R);
    kvg_autoscale_slo_window(R, 4, &e, &t, &i);
    CHECK_NEAR(t, 6.0 / 20, 1e-12);
    CHECK(e < 0 && i < 0);
    free(R);
}

/* model: given marks the pool as reading that model's series. */
TEST(sources_model_key)
{
    static const char y[] = "pools:\n  - {name: a, model: m1}\n  - {name: b}\n";
    struct kvg_autoscale_config *c = malloc(sizeof *c);
    char err[256] = "";
    CHECK(c != NULL);
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), c, err, sizeof err), 0);
    CHECK_INT(c->pools[0].model_given, 1);
    CHECK_STR(c->pools[0].opts.model, "m1");
    CHECK_INT(c->pools[1].model_given, 0);
    static const char bad[] = "pools:\n  - {name: a, model: \"\"}\n";
    CHECK(kvg_autoscale_config_parse(bad, strlen(bad), c, err, sizeof err) < 0);
    CHECK(strstr(err, "model") != NULL);
    free(c);
}

/* Recorded scrapes (tests/fixtures/metrics/kvgate_gateway_*.txt, their
 * README says how): the text from $KVG_ROOT, else the current directory
 * (the repo root under tests/run.sh). The caller frees it. */
static char *recorded_file(const char *name, size_t *len)
{
    const char *root = getenv("KVG_ROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/metrics/%s", root ? root : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *t = malloc(1 << 20);
    *len = t ? fread(t, 1, 1 << 20, f) : 0;
    fclose(f);
    return t;
}

static char *recorded(int i, size_t *len)
{
    char name[64];
    snprintf(name, sizeof name, "kvgate_gateway_%d.txt", i);
    return recorded_file(name, len);
}

static void read_model(int i, const char *model, struct kvg_autoscale_gw_read *r)
{
    size_t len = 0;
    char *t = recorded(i, &len);
    if (!t) kvg_test_fail(__FILE__, __LINE__, "cannot read kvgate_gateway_%d.txt", i);
    kvg_autoscale_gw_parse(t, len, model, r);
    free(t);
}

/* Between scrapes 1 and 2: model-a 3 streams (each over the 1 ms TTFT
 * target) and a whole answer, model-b 2 whole answers, model-c 2 503s (its
 * worker down); then the gateway restarted and model-a streamed once. */
TEST(sources_slo_recorded)
{
    struct kvg_autoscale_gw_read a[4], b[4], c[4], all[4];
    for (int i = 1; i <= 3; i++) {
        read_model(i, "model-a", &a[i]);
        read_model(i, "model-b", &b[i]);
        read_model(i, "model-c", &c[i]);
        read_model(i, NULL, &all[i]);
    }
    CHECK_NEAR(a[2].slo_target[0], 0.001, 1e-12);
    CHECK_NEAR(a[2].slo_target[1], 0.05, 1e-12);
    struct kvg_autoscale_slo_delta d;
    CHECK_INT(kvg_autoscale_slo_delta(&a[2], &a[1], 0.001, 0.05, &d), 0);
    CHECK_INT(d.exact, 1);
    CHECK_NEAR(d.finished, 4, 0);
    CHECK_NEAR(d.ttft, 3, 0);
    CHECK_NEAR(d.itl, 0, 0);
    CHECK_NEAR(d.either, 3, 0);
    CHECK_INT(kvg_autoscale_slo_delta(&b[2], &b[1], 0.001, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 2, 0);
    CHECK_NEAR(d.either, 0, 0);
    CHECK_INT(kvg_autoscale_slo_delta(&c[2], &c[1], 0.001, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 2, 0); /* failed: over both */
    CHECK_NEAR(d.ttft, 2, 0);
    CHECK_NEAR(d.itl, 2, 0);
    CHECK_INT(kvg_autoscale_slo_delta(&all[2], &all[1], 0.001, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 8, 0);
    CHECK_NEAR(d.either, 5, 0);
    /* The per-model answers, as the pool's arrivals. */
    CHECK_NEAR(a[2].requests - a[1].requests, 4, 0);
    CHECK_NEAR(c[2].failed - c[1].failed, 2, 0);
    CHECK_NEAR(all[2].requests - all[1].requests, 8, 0);
    /* Other targets: the TTFT share from the histogram. Its growth: one
     * stream in each of (0.01, 0.0141], (0.0141, 0.02], (0.02, 0.0283]. */
    CHECK_INT(kvg_autoscale_slo_delta(&a[2], &a[1], 0.001, 0.1, &d), 0);
    CHECK_INT(d.exact, 0);
    CHECK_NEAR(d.finished, 4, 0);
    CHECK_NEAR(d.ttft, 3, 1e-12);
    CHECK_INT(kvg_autoscale_slo_delta(&a[2], &a[1], 0.017, 0.1, &d), 0);
    CHECK_NEAR(d.ttft, (0.02 - 0.017) / (0.02 - 0.014142135623730952) + 1, 1e-9);
    /* The restart: counters below their last values count from zero. */
    CHECK_INT(kvg_autoscale_slo_delta(&a[3], &a[2], 0.001, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 1, 0);
    CHECK_NEAR(d.ttft, 1, 0);
    CHECK_INT(kvg_autoscale_slo_delta(&c[3], &c[2], 0.001, 0.05, &d), 0);
    CHECK_NEAR(d.finished, 0, 0);
    /* A model the gateway does not serve: nothing of it. */
    struct kvg_autoscale_gw_read z1, z2;
    read_model(1, "model-z", &z1);
    read_model(2, "model-z", &z2);
    CHECK_INT(z2.model_seen, 0);
    CHECK_INT(kvg_autoscale_slo_delta(&z2, &z1, 0.001, 0.05, &d), -ENOENT);
}

/* Recorded scrapes of a gateway with models: (kvgate_gateway_models_*.txt,
 * the README says how): model-a (alias a-alias) at the gateway's targets,
 * model-b with its own (5 s, 1 s), a split ab of both; between the two,
 * two streams of model-b and three of model-a's requests held in the
 * gateway queue (its one engine slot taken). */
static void read_models(int i, const char *model, struct kvg_autoscale_gw_read *r)
{
    char name[64];
    size_t len = 0;
    snprintf(name, sizeof name, "kvgate_gateway_models_%d.txt", i);
    char *t = recorded_file(name, &len);
    if (!t) kvg_test_fail(__FILE__, __LINE__, "cannot read %s", name);
    kvg_autoscale_gw_parse(t, len, model, r);
    free(t);
}

TEST(sources_models_queue_per_model)
{
    struct kvg_autoscale_gw_read a1, a2, b2, all2;
    read_models(1, "model-a", &a1);
    read_models(2, "model-a", &a2);
    read_models(2, "model-b", &b2);
    read_models(2, NULL, &all2);
    CHECK_NEAR(a1.queued, 0, 0);
    CHECK_NEAR(a2.queued, 3, 0); /* kvgate_admission_queue_model_waiting{model="model-a"} */
    CHECK_NEAR(b2.queued, 0, 0);
    CHECK_NEAR(all2.queued, 3, 0); /* the unlabelled gauge, as before */
    CHECK_INT(b2.model_seen, 1);
    /* A line of another model, or of none, is never the pool's queue. */
    static const char t[] = "kvgate_admission_queue_waiting 7\n"
                            "kvgate_admission_queue_model_waiting{model=\"x\"} 5\n"
                            "kvgate_admission_queue_model_waiting{model=\"y\"} 2\n";
    struct kvg_autoscale_gw_read x, z;
    kvg_autoscale_gw_parse(t, strlen(t), "x", &x);
    kvg_autoscale_gw_parse(t, strlen(t), "z", &z);
    CHECK_NEAR(x.queued, 5, 0);
    CHECK_NEAR(z.queued, 0, 0);
}

/* Each model's targets are its own, else the gateway's; every model
 * summed: the gateway's only when every model's are the same. */
TEST(sources_models_own_targets)
{
    struct kvg_autoscale_gw_read a1, a2, b1, b2, all;
    read_models(1, "model-a", &a1);
    read_models(2, "model-a", &a2);
    read_models(1, "model-b", &b1);
    read_models(2, "model-b", &b2);
    read_models(2, "", &all);
    CHECK_NEAR(a2.slo_target[0], 0.001, 1e-12);
    CHECK_NEAR(a2.slo_target[1], 0.05, 1e-12);
    CHECK_NEAR(b2.slo_target[0], 5, 0);
    CHECK_NEAR(b2.slo_target[1], 1, 0);
    CHECK_NEAR(all.slo_target[0], 0, 0); /* model-b's differ: not one target */
    CHECK_NEAR(all.slo_target[1], 0, 0);
    struct kvg_autoscale_slo_delta d;
    /* model-b's two streams, judged at its own targets: met, exact. */
    CHECK_INT(kvg_autoscale_slo_delta(&b2, &b1, 5, 1, &d), 0);
    CHECK_INT(d.exact, 1);
    CHECK_NEAR(d.finished, 2, 0);
    CHECK_NEAR(d.either, 0, 0);
    /* A pool with the gateway's targets for model-b: not the counter's,
     * so the TTFT share from the histogram: both streams in its first
     * bucket, (0, 10 ms], 0.9 of each over 1 ms. */
    CHECK_INT(kvg_autoscale_slo_delta(&b2, &b1, 0.001, 0.05, &d), 0);
    CHECK_INT(d.exact, 0);
    CHECK_NEAR(d.ttft, 2 * 0.9, 1e-9);
    /* The whole gateway (no one target): the histogram's, for any pool. */
    struct kvg_autoscale_gw_read all1;
    read_models(1, "", &all1);
    CHECK_INT(kvg_autoscale_slo_delta(&all, &all1, 0.001, 0.05, &d), 0);
    CHECK_INT(d.exact, 0);
    /* One model's line and the gateway's: same values, every model: exact. */
    static const char t[] = "kvgate_slo_target_seconds{model=\"\",latency=\"ttft\"} 2\n"
                            "kvgate_slo_target_seconds{model=\"m\",latency=\"ttft\"} 2\n"
                            "kvgate_slo_target_seconds{model=\"n\",latency=\"ttft\"} 2\n"
                            "kvgate_slo_target_seconds{latency=\"itl\"} 0.1\n";
    struct kvg_autoscale_gw_read r;
    kvg_autoscale_gw_parse(t, strlen(t), NULL, &r);
    CHECK_NEAR(r.slo_target[0], 2, 0);
    CHECK_NEAR(r.slo_target[1], 0.1, 0); /* an older gateway's line: no model label */
    kvg_autoscale_gw_parse(t, strlen(t), "m", &r);
    CHECK_NEAR(r.slo_target[0], 2, 0);
    CHECK_NEAR(r.slo_target[1], 0.1, 0); /* not its own: the gateway's */
}

/* A pool's model: as the gateway names it: an alias to its served model,
 * a split to its models (which a pool of one model cannot read). */
TEST(sources_models_alias)
{
    size_t len = 0;
    char *t = recorded_file("kvgate_gateway_models_2.txt", &len);
    CHECK(t != NULL);
    char to[64];
    CHECK_INT(kvg_autoscale_gw_alias(t, len, "a-alias", to, sizeof to), KVG_AUTOSCALE_ALIAS);
    CHECK_STR(to, "model-a");
    CHECK_INT(kvg_autoscale_gw_alias(t, len, "ab", to, sizeof to), KVG_AUTOSCALE_SPLIT);
    CHECK_STR(to, "model-a, model-b");
    CHECK_INT(kvg_autoscale_gw_alias(t, len, "model-a", to, sizeof to), 0);
    CHECK_STR(to, "");
    CHECK_INT(kvg_autoscale_gw_alias(t, len, "nope", to, sizeof to), 0);
    char small[6]; /* cut, terminated */
    CHECK_INT(kvg_autoscale_gw_alias(t, len, "ab", small, sizeof small), KVG_AUTOSCALE_SPLIT);
    CHECK_STR(small, "model");
    /* The alias's served model reads model-a's series. */
    struct kvg_autoscale_gw_read a;
    kvg_autoscale_gw_parse(t, len, to[0] ? to : "model-a", &a);
    CHECK_NEAR(a.queued, 3, 0);
    free(t);
    /* Hostile lines: no model, value 0, a kind not said; one body's
     * alias beats a split of the same name. */
    static const char h[] = "kvgate_model_alias_info{alias=\"q\",kind=\"alias\",model=\"\"} 1\n"
                            "kvgate_model_alias_info{alias=\"q\",kind=\"alias\",model=\"m0\"} 0\n"
                            "kvgate_model_alias_info{alias=\"q\",model=\"m9\"} 1\n"
                            "kvgate_model_alias_info{alias=\"q\",kind=\"split\",model=\"m2\"} 1\n"
                            "kvgate_model_alias_info{alias=\"q\",kind=\"alias\",model=\"m1\"} 1\n"
                            "kvgate_model_alias_info{alias=\"q\",kind=\"alias\",model=\"m3\"} 1\n";
    CHECK_INT(kvg_autoscale_gw_alias(h, strlen(h), "q", to, sizeof to), KVG_AUTOSCALE_ALIAS);
    CHECK_STR(to, "m1");
    static const char h2[] = "kvgate_model_alias_info{alias=\"q\",kind=\"alias\",model=\"m1\"} 1\n"
                             "kvgate_model_alias_info{alias=\"q\",kind=\"split\",model=\"m2\"} 1\n";
    CHECK_INT(kvg_autoscale_gw_alias(h2, strlen(h2), "q", to, sizeof to), KVG_AUTOSCALE_ALIAS);
    CHECK_STR(to, "m1");
}
