/* kvgate autoscale's reading of a gateway's /metrics (autoscale/sources.h):
 * the counters, a histogram's growth between two reads (a restart starts it
 * over) and the bucket quantile, interpolated inside its bucket as
 * Prometheus' histogram_quantile does. */
#include <math.h>
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
    kvg_autoscale_gw_parse(READ1, strlen(READ1), &r);
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
    kvg_autoscale_gw_parse(unordered, strlen(unordered), &r);
    CHECK_INT(r.ttft.bad, 1);
    kvg_autoscale_gw_parse(no_inf, strlen(no_inf), &r);
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
    kvg_autoscale_gw_parse(two, strlen(two), &r);
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
    kvg_autoscale_gw_parse(READ1, strlen(READ1), &a);
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
