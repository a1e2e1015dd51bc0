/* Rendering tests: the exact text of a small registry, escaping of label
 * values and HELP text, number spelling, the buffer cap, and a round trip
 * through our own parser with awkward label values. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "metrics/metrics.h"
#include "metrics/parse.h"
#include "support/test.h"

static struct kvg_buf out;

static const char *render(struct kvg_metrics_registry *r)
{
    kvg_buf_free(&out);
    kvg_buf_init(&out, 1 << 20);
    if (kvg_metrics_render(r, &out)) return "(render failed)";
    return kvg_buf_cstr(&out) ? out.data : "";
}

TEST(exact_text_small_registry)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fg, *fh;
    struct kvg_metrics_series *c1, *c2, *g, *h;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const char *const lc[] = {"route", "code"};
    const char *const lh[] = {"model"};
    const double b[] = {0.0625, 0.125, 0.5};
    CHECK_INT(kvg_metrics_counter(r, "kvg_requests_total", "Requests received.", lc, 2, &fc), 0);
    CHECK_INT(kvg_metrics_gauge(r, "kvg_workers", "Workers in the pool.", NULL, 0, &fg), 0);
    CHECK_INT(
        kvg_metrics_histogram(r, "kvg_ttft_seconds", "Time to first token.", lh, 1, b, 3, &fh), 0);
    const char *const v1[] = {"/v1/chat/completions", "200"}, *const v2[] = {"/v1/completions",
                                                                             "429"};
    const char *const vq[] = {"qwen"};
    CHECK_INT(kvg_metrics_series(fc, v1, 2, &c1), 0);
    CHECK_INT(kvg_metrics_series(fc, v2, 2, &c2), 0);
    CHECK_INT(kvg_metrics_series(fg, NULL, 0, &g), 0);
    CHECK_INT(kvg_metrics_series(fh, vq, 1, &h), 0);
    kvg_metrics_add(c1, 3);
    kvg_metrics_inc(c2);
    kvg_metrics_set(g, 2);
    kvg_metrics_observe(h, 0.03125);
    kvg_metrics_observe(h, 0.125);
    kvg_metrics_observe(h, 0.25);
    kvg_metrics_observe(h, 7);
    CHECK_STR(render(r), "# HELP kvg_requests_total Requests received.\n"
                         "# TYPE kvg_requests_total counter\n"
                         "kvg_requests_total{route=\"/v1/chat/completions\",code=\"200\"} 3\n"
                         "kvg_requests_total{route=\"/v1/completions\",code=\"429\"} 1\n"
                         "# HELP kvg_workers Workers in the pool.\n"
                         "# TYPE kvg_workers gauge\n"
                         "kvg_workers 2\n"
                         "# HELP kvg_ttft_seconds Time to first token.\n"
                         "# TYPE kvg_ttft_seconds histogram\n"
                         "kvg_ttft_seconds_bucket{model=\"qwen\",le=\"0.0625\"} 1\n"
                         "kvg_ttft_seconds_bucket{model=\"qwen\",le=\"0.125\"} 2\n"
                         "kvg_ttft_seconds_bucket{model=\"qwen\",le=\"0.5\"} 3\n"
                         "kvg_ttft_seconds_bucket{model=\"qwen\",le=\"+Inf\"} 4\n"
                         "kvg_ttft_seconds_sum{model=\"qwen\"} 7.40625\n"
                         "kvg_ttft_seconds_count{model=\"qwen\"} 4\n");
    kvg_metrics_series_release(c1);
    kvg_metrics_series_release(c2);
    kvg_metrics_series_release(g);
    kvg_metrics_series_release(h);
    kvg_metrics_registry_free(r);
    kvg_buf_free(&out);
}

TEST(escaping)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *f;
    struct kvg_metrics_series *s, *e;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const char *const l[] = {"path", "model"};
    CHECK_INT(kvg_metrics_gauge(r, "kvg_odd", "Line one\nwith \\ and \"quotes\".", l, 2, &f), 0);
    const char *const v[] = {"a\\b\"c\nd", "\xe6\xa8\xa1\xe5\x9e\x8b/\xc3\xbc"};
    const char *const empty[] = {"", ""};
    CHECK_INT(kvg_metrics_series(f, v, 2, &s), 0);
    CHECK_INT(kvg_metrics_series(f, empty, 2, &e), 0);
    kvg_metrics_set(s, -1.5);
    CHECK_STR(render(r),
              "# HELP kvg_odd Line one\\nwith \\\\ and \"quotes\".\n"
              "# TYPE kvg_odd gauge\n"
              "kvg_odd{path=\"a\\\\b\\\"c\\nd\",model=\"\xe6\xa8\xa1\xe5\x9e\x8b/\xc3\xbc\"} "
              "-1.5\n"
              "kvg_odd{path=\"\",model=\"\"} 0\n");
    kvg_metrics_series_release(s);
    kvg_metrics_series_release(e);
    kvg_metrics_registry_free(r);
    kvg_buf_free(&out);
}

TEST(number_spelling)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *f;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const char *const l[] = {"k"};
    CHECK_INT(kvg_metrics_gauge(r, "g", "x", l, 1, &f), 0);
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {1e21, "1e+21"},
        {123456789.125, "123456789.125"},
        {-0.0, "-0"},
        {1.0 / 3, "0.3333333333333333"},
        {NAN, "NaN"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
        {0.1 + 0.2, "0.30000000000000004"},
    };
    struct kvg_metrics_series *s[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char k[8];
        snprintf(k, sizeof k, "%zu", i);
        const char *const v[] = {k};
        CHECK_INT(kvg_metrics_series(f, v, 1, &s[i]), 0);
        kvg_metrics_set(s[i], cases[i].v);
    }
    const char *text = render(r);
    CHECK(!strncmp(text, "# HELP g x\n# TYPE g gauge\n", 26));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[96];
        snprintf(line, sizeof line, "g{k=\"%zu\"} %s\n", i, cases[i].text);
        if (!strstr(text, line)) kvg_test_fail(__FILE__, __LINE__, "missing %s", line);
        kvg_metrics_series_release(s[i]);
    }
    kvg_metrics_registry_free(r);
    kvg_buf_free(&out);
}

TEST(buffer_cap_restores_length)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *f;
    struct kvg_metrics_series *s;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    CHECK_INT(kvg_metrics_gauge(r, "a_rather_long_metric_name", "with some help text", NULL, 0, &f),
              0);
    CHECK_INT(kvg_metrics_series(f, NULL, 0, &s), 0);
    struct kvg_buf b;
    kvg_buf_init(&b, 48);
    CHECK_INT(kvg_buf_append_str(&b, "head\n"), 0);
    CHECK_INT(kvg_metrics_render(r, &b), KVG_ETOOBIG);
    CHECK_INT(b.len, 5);
    kvg_buf_free(&b);
    kvg_metrics_series_release(s);
    kvg_metrics_registry_free(r);
}

/* What we render, our parser reads back: names, unescaped label values,
 * values. (promtool checks the same text in tests/integration.) */
TEST(round_trip_through_parser)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fh;
    struct kvg_metrics_series *c, *h;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const char *const l[] = {"worker", "note"};
    const double b[] = {0.001, 2.5e3};
    CHECK_INT(kvg_metrics_counter(r, "kvg_routed_total", "h", l, 2, &fc), 0);
    CHECK_INT(kvg_metrics_histogram(r, "kvg_lat_seconds", "h", l, 2, b, 2, &fh), 0);
    const char *const v[] = {"http://[::1]:8000/", "tab\there, {brace}=\"q\" \\n\n"};
    CHECK_INT(kvg_metrics_series(fc, v, 2, &c), 0);
    CHECK_INT(kvg_metrics_series(fh, v, 2, &h), 0);
    kvg_metrics_add(c, 1234.5);
    kvg_metrics_observe(h, 0.0005);
    kvg_metrics_observe(h, 1e9);
    const char *text = render(r);

    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample s;
    kvg_metrics_parser_init(&ps, text, strlen(text));
    int n = 0, rc;
    while ((rc = kvg_metrics_parser_next(&ps, &s)) > 0) {
        const struct kvg_str *w = kvg_metrics_sample_label(&s, "worker");
        const struct kvg_str *note = kvg_metrics_sample_label(&s, "note");
        CHECK(w && w->len == strlen(v[0]) && !memcmp(w->p, v[0], w->len));
        CHECK(note && note->len == strlen(v[1]) && !memcmp(note->p, v[1], note->len));
        if (kvg_str_eq(s.name, "kvg_routed_total")) CHECK_NEAR(s.value, 1234.5, 0);
        if (kvg_str_eq(s.name, "kvg_lat_seconds_sum")) CHECK_NEAR(s.value, 1e9 + 0.0005, 0);
        if (kvg_str_eq(s.name, "kvg_lat_seconds_count")) CHECK_NEAR(s.value, 2, 0);
        if (kvg_str_eq(s.name, "kvg_lat_seconds_bucket")) {
            const struct kvg_str *le = kvg_metrics_sample_label(&s, "le");
            CHECK(le);
            CHECK_NEAR(s.value, kvg_str_eq(*le, "+Inf") ? 2 : 1, 0);
        }
        n++;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(n, 1 + 3 + 2);
    kvg_metrics_series_release(c);
    kvg_metrics_series_release(h);
    kvg_metrics_registry_free(r);
    kvg_buf_free(&out);
}
