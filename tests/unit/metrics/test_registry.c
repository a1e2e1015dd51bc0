/* Registry tests: definitions and their validation, exact totals under
 * concurrent updates, series lookup and removal racing with rendering, and
 * handle lifetimes across removal and registry teardown (ASan watches). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "metrics/metrics.h"
#include "support/test.h"

static const char *const L_WORKER[] = {"worker"};

static char *render(struct kvg_metrics_registry *r)
{
    static struct kvg_buf b;
    kvg_buf_free(&b);
    kvg_buf_init(&b, 1 << 24);
    if (kvg_metrics_render(r, &b)) return NULL;
    return kvg_buf_cstr(&b) ? b.data : "";
}

TEST(definition_validation)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *f, *g;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const double b[] = {0.1, 1};
    const char *const dup[] = {"a", "a"};
    const char *const le[] = {"le"};
    const char *const reserved[] = {"__x"};
    const char *const bad_label[] = {"a-b"};

    CHECK_INT(kvg_metrics_counter(r, "requests", "h", NULL, 0, &f), -EINVAL); /* no _total */
    CHECK_INT(kvg_metrics_counter(r, "9requests_total", "h", NULL, 0, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "a b", "h", NULL, 0, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "", "h", NULL, 0, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "g", "h", dup, 2, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "g", "h", reserved, 1, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "g", "h", bad_label, 1, &f), -EINVAL);
    CHECK_INT(kvg_metrics_gauge(r, "g", "bad \xff help", NULL, 0, &f), KVG_EUTF8);
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", le, 1, b, 2, &f), -EINVAL);
    const double unsorted[] = {1, 0.5};
    const double nan_b[] = {NAN};
    const double only_inf[] = {INFINITY};
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", NULL, 0, unsorted, 2, &f), -EINVAL);
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", NULL, 0, nan_b, 1, &f), -EINVAL);
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", NULL, 0, only_inf, 1, &f), -EINVAL);
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", NULL, 0, b, 0, &f), -EINVAL);

    /* promtool's lint rules hold for our own names. */
    CHECK_INT(kvg_metrics_gauge(r, "kvg:g", "h", NULL, 0, &f), -EINVAL);       /* colon */
    CHECK_INT(kvg_metrics_gauge(r, "kvgInflight", "h", NULL, 0, &f), -EINVAL); /* camelCase */
    CHECK_INT(kvg_metrics_gauge(r, "g_total", "h", NULL, 0, &f), -EINVAL);     /* not a counter */
    CHECK_INT(kvg_metrics_gauge(r, "g", "", NULL, 0, &f), -EINVAL);            /* no help */

    /* Same definition twice: the same family; a different one: -EEXIST. */
    CHECK_INT(kvg_metrics_gauge(r, "kvg_g", "help", L_WORKER, 1, &f), 0);
    CHECK_INT(kvg_metrics_gauge(r, "kvg_g", "help", L_WORKER, 1, &g), 0);
    CHECK(f == g);
    CHECK_INT(kvg_metrics_gauge(r, "kvg_g", "other help", L_WORKER, 1, &g), -EEXIST);
    CHECK_INT(kvg_metrics_gauge(r, "kvg_g", "help", NULL, 0, &g), -EEXIST);
    CHECK_INT(kvg_metrics_counter(r, "kvg_g_total", "help", NULL, 0, &g), 0);
    CHECK_INT(kvg_metrics_counter(r, "kvg_g_total", "help", L_WORKER, 1, &g), -EEXIST);
    CHECK_INT(kvg_metrics_histogram(r, "kvg_g", "help", L_WORKER, 1, b, 2, &g), -EEXIST);

    /* A histogram's sample names are taken, both ways round. */
    const double with_inf[] = {0.1, 1, INFINITY};
    CHECK_INT(kvg_metrics_histogram(r, "lat_seconds", "h", NULL, 0, with_inf, 3, &f), 0);
    CHECK_INT(kvg_metrics_histogram(r, "lat_seconds", "h", NULL, 0, b, 2, &g), 0);
    CHECK(f == g); /* the trailing +Inf was dropped, so the definitions match */
    CHECK_INT(kvg_metrics_gauge(r, "lat_seconds_count", "h", NULL, 0, &g), -EEXIST);
    CHECK_INT(kvg_metrics_counter(r, "x_total", "h", NULL, 0, &g), 0);
    CHECK_INT(kvg_metrics_histogram(r, "x", "h", NULL, 0, b, 2, &g), 0); /* x_total is no child */
    CHECK_INT(kvg_metrics_gauge(r, "y_sum", "h", NULL, 0, &g), 0);
    CHECK_INT(kvg_metrics_histogram(r, "y", "h", NULL, 0, b, 2, &g), -EEXIST);
    kvg_metrics_registry_free(r);
}

TEST(series_validation_and_identity)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *f;
    struct kvg_metrics_series *a, *b, *c;
    CHECK_INT(kvg_metrics_registry_new(2, &r), 0);
    CHECK_INT(kvg_metrics_counter(r, "req_total", "h", L_WORKER, 1, &f), 0);
    const char *const w1[] = {"w1"}, *const w2[] = {"w2"}, *const w3[] = {"w3"};
    const char *const bad[] = {"\xc0\xaf"}; /* overlong '/' */
    const char *const two[] = {"a", "b"};
    CHECK_INT(kvg_metrics_series(f, bad, 1, &a), KVG_EUTF8);
    CHECK_INT(kvg_metrics_series(f, two, 2, &a), -EINVAL);
    CHECK_INT(kvg_metrics_series(f, NULL, 0, &a), -EINVAL);
    CHECK_INT(kvg_metrics_series(f, w1, 1, &a), 0);
    CHECK_INT(kvg_metrics_series(f, w1, 1, &b), 0);
    CHECK(a == b); /* same labels, same series, one more reference */
    CHECK_INT(kvg_metrics_series(f, w2, 1, &c), 0);
    CHECK(a != c);
    struct kvg_metrics_series *d;
    CHECK_INT(kvg_metrics_series(f, w3, 1, &d), KVG_ETOOBIG); /* cap of 2 */
    kvg_metrics_series_release(b);
    kvg_metrics_inc(a);
    CHECK_NEAR(kvg_metrics_value(a), 1, 0);
    kvg_metrics_series_release(a);
    kvg_metrics_series_release(c);
    kvg_metrics_registry_free(r);
}

TEST(update_semantics)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fg, *fh;
    struct kvg_metrics_series *c, *g, *h;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    CHECK_INT(kvg_metrics_counter(r, "c_total", "h", NULL, 0, &fc), 0);
    CHECK_INT(kvg_metrics_gauge(r, "g", "h", NULL, 0, &fg), 0);
    const double b[] = {1, 2, 4};
    CHECK_INT(kvg_metrics_histogram(r, "h", "h", NULL, 0, b, 3, &fh), 0);
    CHECK_INT(kvg_metrics_series(fc, NULL, 0, &c), 0);
    CHECK_INT(kvg_metrics_series(fg, NULL, 0, &g), 0);
    CHECK_INT(kvg_metrics_series(fh, NULL, 0, &h), 0);

    kvg_metrics_inc(c);
    kvg_metrics_add(c, 2);
    kvg_metrics_add(c, 0.5);
    kvg_metrics_add(c, -7);  /* ignored: counters only go up */
    kvg_metrics_add(c, NAN); /* ignored */
    CHECK_NEAR(kvg_metrics_value(c), 3.5, 0);

    kvg_metrics_set(g, 10);
    kvg_metrics_dec(g);
    kvg_metrics_add(g, -2.5);
    kvg_metrics_inc(g);
    CHECK_NEAR(kvg_metrics_value(g), 7.5, 0);

    kvg_metrics_observe(h, 1);   /* le=1: bounds are inclusive */
    kvg_metrics_observe(h, 1.5); /* le=2 */
    kvg_metrics_observe(h, 100); /* +Inf */
    kvg_metrics_observe(h, -3);  /* le=1 */
    kvg_metrics_observe(h, NAN); /* ignored */
    CHECK_INT(kvg_metrics_hist_count(h), 4);
    CHECK_NEAR(kvg_metrics_hist_sum(h), 99.5, 0);
    const char *out = render(r);
    CHECK(out);
    CHECK(strstr(out, "h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 3\nh_bucket{le=\"4\"} 3\n"
                      "h_bucket{le=\"+Inf\"} 4\nh_sum 99.5\nh_count 4\n"));
    CHECK(strstr(out, "c_total 3.5\n"));
    CHECK(strstr(out, "g 7.5\n"));

    double eb[4];
    CHECK_INT(kvg_metrics_buckets_exp(0.001, 2, 4, eb), 0);
    CHECK_NEAR(eb[3], 0.008, 1e-15);
    CHECK_INT(kvg_metrics_buckets_exp(0, 2, 4, eb), -EINVAL);
    CHECK_INT(kvg_metrics_buckets_exp(1, 1, 4, eb), -EINVAL);

    kvg_metrics_series_release(c);
    kvg_metrics_series_release(g);
    kvg_metrics_series_release(h);
    kvg_metrics_registry_free(r);
}

/* ---- concurrency ------------------------------------------------------- */

#define THREADS 4
#define ITERS 200000

struct hot_ctx {
    struct kvg_metrics_family *fc, *fg, *fh, *ff;
    int err;
};

static void *hot_thread(void *arg)
{
    struct hot_ctx *x = arg;
    const char *const v[] = {"shared"};
    struct kvg_metrics_series *c, *g, *h, *fr;
    /* Each thread looks the series up itself: concurrent lookups of the same
     * labels must yield the same series. */
    if (kvg_metrics_series(x->fc, v, 1, &c) || kvg_metrics_series(x->fg, v, 1, &g) ||
        kvg_metrics_series(x->fh, v, 1, &h) || kvg_metrics_series(x->ff, v, 1, &fr)) {
        x->err = 1;
        return NULL;
    }
    for (int i = 0; i < ITERS; i++) {
        kvg_metrics_inc(c);
        kvg_metrics_inc(g);
        if (i & 1) kvg_metrics_dec(g);
        kvg_metrics_observe(h, (i % 4) * 0.5); /* 0, 0.5, 1, 1.5: exact in binary */
        kvg_metrics_add(fr, 0.25);
    }
    kvg_metrics_series_release(c);
    kvg_metrics_series_release(g);
    kvg_metrics_series_release(h);
    kvg_metrics_series_release(fr);
    return NULL;
}

/* A counter mirrored from a total counted elsewhere takes the total and
 * never steps back, and renders as a counter. */
TEST(counter_mirror)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc;
    struct kvg_metrics_series *c;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    CHECK_INT(kvg_metrics_counter(r, "q_events_total", "h", NULL, 0, &fc), 0);
    CHECK_INT(kvg_metrics_series(fc, NULL, 0, &c), 0);
    kvg_metrics_counter_mirror(c, 5);
    CHECK_NEAR(kvg_metrics_value(c), 5, 0);
    kvg_metrics_counter_mirror(c, 3); /* an older reading: ignored */
    CHECK_NEAR(kvg_metrics_value(c), 5, 0);
    kvg_metrics_counter_mirror(c, 9);
    CHECK_NEAR(kvg_metrics_value(c), 9, 0);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_metrics_render(r, &b), 0);
    const char *want = "# TYPE q_events_total counter\nq_events_total 9\n";
    CHECK(memmem(b.data, b.len, want, strlen(want)) != NULL);
    kvg_buf_free(&b);
    kvg_metrics_series_release(c);
    kvg_metrics_registry_free(r);
}

TEST(histogram_read_and_quantile)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fh;
    struct kvg_metrics_series *h;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const double b[] = {1, 2, 4};
    CHECK_INT(kvg_metrics_histogram(r, "lat", "h", NULL, 0, b, 3, &fh), 0);
    CHECK_INT(kvg_metrics_series(fh, NULL, 0, &h), 0);
    uint64_t c[8];
    const double *bounds = NULL;
    CHECK_INT((int)kvg_metrics_hist_read(h, c, 8, &bounds), 4);
    CHECK(isnan(kvg_metrics_quantile(c, bounds, 4, 0.5)));
    for (int i = 0; i < 10; i++) kvg_metrics_observe(h, 1.5); /* all in (1, 2] */
    kvg_metrics_hist_read(h, c, 8, &bounds);
    CHECK_INT((int)c[1], 10);
    CHECK_NEAR(kvg_metrics_quantile(c, bounds, 4, 0.5), 1.5, 1e-9);
    CHECK_NEAR(kvg_metrics_quantile(c, bounds, 4, 1.0), 2.0, 1e-9);
    kvg_metrics_observe(h, 100); /* +Inf: the highest bound answers */
    kvg_metrics_hist_read(h, c, 8, &bounds);
    CHECK_NEAR(kvg_metrics_quantile(c, bounds, 4, 1.0), 4.0, 1e-9);
    kvg_metrics_series_release(h);
    kvg_metrics_registry_free(r);
}

TEST(concurrent_updates_exact_totals)
{
    struct kvg_metrics_registry *r;
    struct hot_ctx x = {0};
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const double b[] = {0.5, 1};
    CHECK_INT(kvg_metrics_counter(r, "hits_total", "h", L_WORKER, 1, &x.fc), 0);
    CHECK_INT(kvg_metrics_gauge(r, "inflight", "h", L_WORKER, 1, &x.fg), 0);
    CHECK_INT(kvg_metrics_histogram(r, "lat_seconds", "h", L_WORKER, 1, b, 2, &x.fh), 0);
    CHECK_INT(kvg_metrics_counter(r, "frac_total", "h", L_WORKER, 1, &x.ff), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK_INT(pthread_create(&t[i], NULL, hot_thread, &x), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK_INT(x.err, 0);

    const char *const v[] = {"shared"};
    struct kvg_metrics_series *c, *g, *h, *fr;
    CHECK_INT(kvg_metrics_series(x.fc, v, 1, &c), 0);
    CHECK_INT(kvg_metrics_series(x.fg, v, 1, &g), 0);
    CHECK_INT(kvg_metrics_series(x.fh, v, 1, &h), 0);
    CHECK_INT(kvg_metrics_series(x.ff, v, 1, &fr), 0);
    CHECK_NEAR(kvg_metrics_value(c), (double)THREADS * ITERS, 0);
    CHECK_NEAR(kvg_metrics_value(g), (double)THREADS * ITERS / 2, 0);
    CHECK_NEAR(kvg_metrics_value(fr), THREADS * ITERS * 0.25, 0);
    CHECK_INT(kvg_metrics_hist_count(h), (long long)THREADS * ITERS);
    CHECK_NEAR(kvg_metrics_hist_sum(h), THREADS * (ITERS / 4) * 3.0, 0);
    /* Buckets: le=0.5 holds 0 and 0.5, le=1 adds 1, +Inf adds 1.5. */
    char want[256];
    snprintf(want, sizeof want,
             "lat_seconds_bucket{worker=\"shared\",le=\"0.5\"} %d\n"
             "lat_seconds_bucket{worker=\"shared\",le=\"1\"} %d\n"
             "lat_seconds_bucket{worker=\"shared\",le=\"+Inf\"} %d\n",
             THREADS * ITERS / 2, THREADS * ITERS / 4 * 3, THREADS * ITERS);
    const char *out = render(r);
    CHECK(out && strstr(out, want));
    kvg_metrics_series_release(c);
    kvg_metrics_series_release(g);
    kvg_metrics_series_release(h);
    kvg_metrics_series_release(fr);
    kvg_metrics_registry_free(r);
}

/* Workers join and leave while another thread renders: lookups, removals
 * and renders race; nothing may crash or leak, and at the end only the
 * workers still present are in the output. */
struct churn_ctx {
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fg;
    int id;
    atomic_int stop;
    int err;
};

static void *churn_thread(void *arg)
{
    struct churn_ctx *x = arg;
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "w%d-%d", x->id, i % 7);
        const char *const v[] = {name};
        struct kvg_metrics_series *c, *g;
        if (kvg_metrics_series(x->fc, v, 1, &c)) goto fail;
        if (kvg_metrics_series(x->fg, v, 1, &g)) goto fail;
        kvg_metrics_inc(c);
        kvg_metrics_set(g, i);
        if (i % 3 == 0) kvg_metrics_series_remove(c);
        if (i % 5 == 0 && kvg_metrics_remove_label(x->r, "worker", name) < 0) goto fail;
        kvg_metrics_inc(c); /* still valid after removal */
        kvg_metrics_series_release(c);
        kvg_metrics_series_release(g);
    }
    return NULL;
fail:
    x->err = 1;
    return NULL;
}

static void *render_thread(void *arg)
{
    struct churn_ctx *x = arg;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    while (!atomic_load(&x->stop)) {
        kvg_buf_reset(&b);
        if (kvg_metrics_render(x->r, &b)) x->err = 1;
    }
    kvg_buf_free(&b);
    return NULL;
}

TEST(concurrent_churn_and_render)
{
    struct churn_ctx x[3];
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fg;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    CHECK_INT(kvg_metrics_counter(r, "routed_total", "h", L_WORKER, 1, &fc), 0);
    CHECK_INT(kvg_metrics_gauge(r, "load", "h", L_WORKER, 1, &fg), 0);
    for (int i = 0; i < 3; i++) {
        x[i].r = r;
        x[i].fc = fc;
        x[i].fg = fg;
        x[i].id = i;
        x[i].err = 0;
        atomic_init(&x[i].stop, 0);
    }
    pthread_t t[3];
    CHECK_INT(pthread_create(&t[0], NULL, render_thread, &x[0]), 0);
    CHECK_INT(pthread_create(&t[1], NULL, churn_thread, &x[1]), 0);
    CHECK_INT(pthread_create(&t[2], NULL, churn_thread, &x[2]), 0);
    pthread_join(t[1], NULL);
    pthread_join(t[2], NULL);
    atomic_store(&x[0].stop, 1);
    pthread_join(t[0], NULL);
    CHECK_INT(x[0].err + x[1].err + x[2].err, 0);
    for (int id = 1; id <= 2; id++) {
        char name[32];
        snprintf(name, sizeof name, "w%d-0", id);
        CHECK(kvg_metrics_remove_label(r, "worker", name) >= 1);
    }
    const char *out = render(r);
    CHECK(out && !strstr(out, "\"w1-0\"") && !strstr(out, "\"w2-0\""));
    CHECK(strstr(out, "\"w1-3\"")); /* last touched at i = 2999 and kept */
    kvg_metrics_registry_free(r);
}

/* ---- removal and lifetimes --------------------------------------------- */

TEST(series_removal)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fc, *fg, *fother;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const char *const lw[] = {"worker", "model"};
    CHECK_INT(kvg_metrics_counter(r, "routed_total", "Requests routed.", lw, 2, &fc), 0);
    CHECK_INT(kvg_metrics_gauge(r, "worker_load", "Load.", L_WORKER, 1, &fg), 0);
    const char *const lm[] = {"model"};
    CHECK_INT(kvg_metrics_gauge(r, "model_up", "Up.", lm, 1, &fother), 0);
    const char *const a1[] = {"http://a:8000", "m1"}, *const a2[] = {"http://a:8000", "m2"};
    const char *const b1[] = {"http://b:8000", "m1"};
    const char *const a[] = {"http://a:8000"}, *const b[] = {"http://b:8000"};
    const char *const m[] = {"http://a:8000"}; /* a model label that looks like a worker */
    struct kvg_metrics_series *s_a1, *s_a2, *s_b1, *g_a, *g_b, *o;
    CHECK_INT(kvg_metrics_series(fc, a1, 2, &s_a1), 0);
    CHECK_INT(kvg_metrics_series(fc, a2, 2, &s_a2), 0);
    CHECK_INT(kvg_metrics_series(fc, b1, 2, &s_b1), 0);
    CHECK_INT(kvg_metrics_series(fg, a, 1, &g_a), 0);
    CHECK_INT(kvg_metrics_series(fg, b, 1, &g_b), 0);
    CHECK_INT(kvg_metrics_series(fother, m, 1, &o), 0);
    kvg_metrics_add(s_a1, 5);

    /* Worker a leaves: its series vanish from both families, nothing else. */
    CHECK_INT(kvg_metrics_remove_label(r, "worker", "http://a:8000"), 3);
    const char *out = render(r);
    CHECK(out);
    CHECK(!strstr(out, "worker=\"http://a:8000\""));
    CHECK(strstr(out, "routed_total{worker=\"http://b:8000\",model=\"m1\"} 0\n"));
    CHECK(strstr(out, "worker_load{worker=\"http://b:8000\"} 0\n"));
    CHECK(strstr(out, "model_up{model=\"http://a:8000\"} 0\n"));
    CHECK_INT(kvg_metrics_remove_label(r, "worker", "http://a:8000"), 0);

    /* Handles of removed series still work (detached, not rendered)... */
    kvg_metrics_inc(s_a1);
    CHECK_NEAR(kvg_metrics_value(s_a1), 6, 0);
    /* ...and asking again starts a fresh series at zero. */
    struct kvg_metrics_series *again;
    CHECK_INT(kvg_metrics_series(fc, a1, 2, &again), 0);
    CHECK(again != s_a1);
    CHECK_NEAR(kvg_metrics_value(again), 0, 0);
    out = render(r);
    CHECK(strstr(out, "routed_total{worker=\"http://a:8000\",model=\"m1\"} 0\n"));

    /* By handle and by values. */
    kvg_metrics_series_remove(again);
    kvg_metrics_series_remove(again); /* idempotent */
    CHECK_INT(kvg_metrics_family_remove(fg, b, 1), 0);
    CHECK_INT(kvg_metrics_family_remove(fg, b, 1), KVG_ENOTFOUND);
    out = render(r);
    CHECK(!strstr(out, "http://a:8000\",model"));
    CHECK(!strstr(out, "worker_load")); /* a family with no series is left out */

    kvg_metrics_series_release(again);
    kvg_metrics_series_release(s_a1);
    kvg_metrics_series_release(s_a2);
    kvg_metrics_series_release(s_b1);
    kvg_metrics_series_release(g_a);
    kvg_metrics_series_release(g_b);
    kvg_metrics_series_release(o);
    kvg_metrics_registry_free(r);
}

TEST(handles_outlive_registry)
{
    struct kvg_metrics_registry *r;
    struct kvg_metrics_family *fh;
    struct kvg_metrics_series *h, *h2;
    CHECK_INT(kvg_metrics_registry_new(0, &r), 0);
    const double b[] = {1, 2};
    CHECK_INT(kvg_metrics_histogram(r, "ttft_seconds", "h", L_WORKER, 1, b, 2, &fh), 0);
    const char *const w[] = {"w"};
    CHECK_INT(kvg_metrics_series(fh, w, 1, &h), 0);
    kvg_metrics_registry_free(r);
    /* The histogram still knows its bounds: the family lives on for it. */
    kvg_metrics_observe(h, 1.5);
    CHECK_INT(kvg_metrics_hist_count(h), 1);
    kvg_metrics_series_remove(h); /* already detached: no-op */
    CHECK_INT(kvg_metrics_series(fh, w, 1, &h2), KVG_ECLOSED);
    kvg_metrics_series_release(h); /* frees the series, then the family */
}
