/* The exporter: a bounded queue of finished spans filled by any thread and
 * emptied by one thread of its own, which POSTs them in batches to the
 * collector (OTLP/HTTP, protobuf) with the blocking client.
 *
 * The queue is a ring of span records under a mutex held only for a copy
 * (submit) or for index updates (the exporter reads a batch in place: the
 * slots it reads are not handed out again until it advances the head).
 * When it is full a span is dropped and counted; a batch the collector did
 * not take (unreachable, slow past the timeout, not 2xx) is dropped and
 * counted as well. Nothing retries: a request never waits on a collector,
 * and a late span is worth less than a bounded queue. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "net/https.h"
#include "trace/trace.h"

struct kvg_trace {
    struct kvg_trace_config cfg;
    struct kvg_https http;
    char path[600]; /* the endpoint's base path + /v1/traces */
    char instance[96];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct kvg_trace_span *ring; /* cfg.queue_spans slots */
    size_t head, count;
    int stop;
    int started;
    pthread_t thread;
    const struct kvg_trace_span **batch; /* the exporter's: cfg.batch_spans pointers */
    struct kvg_buf body;                 /* the exporter's: the encoded batch */
    int collector_ok;                    /* the exporter's: the last POST was taken */
    _Atomic int posting;                 /* a POST is on (kvg_trace_free aborts it) */
    uint32_t backoff_ms;     /* the exporter's: after a failed POST, 1 s doubling to 30 s */
    uint64_t quiet_until_ms; /* the exporter's: no POST before (batches dropped) */
    _Atomic uint64_t submitted, exported, dropped_full, dropped_export, batches, failed_batches;
    struct kvg_metrics_series *m_exported, *m_full, *m_export, *m_batches;
};

/* A counter of reg's, or none (a tracer built without a registry). */
static void count(struct kvg_metrics_series *m, uint64_t n)
{
    if (m) kvg_metrics_add(m, (double)n);
}

void kvg_trace_config_default(struct kvg_trace_config *c)
{
    memset(c, 0, sizeof *c);
    c->sample = 0.1; /* llm-d's default ratio */
    c->queue_spans = 2048;
    c->batch_spans = 512; /* the OpenTelemetry SDKs' batch span processor's */
    c->flush_ms = 1000;
    c->timeout_ms = 10000; /* OTEL_EXPORTER_OTLP_TIMEOUT's default */
    snprintf(c->service_name, sizeof c->service_name, "kvgate");
}

double kvg_trace_sample(const struct kvg_trace *t)
{
    return t->cfg.sample;
}

int kvg_trace_submit(struct kvg_trace *t, const struct kvg_trace_span *s)
{
    atomic_fetch_add_explicit(&t->submitted, 1, memory_order_relaxed);
    pthread_mutex_lock(&t->mu);
    if (t->count == t->cfg.queue_spans) {
        pthread_mutex_unlock(&t->mu);
        atomic_fetch_add_explicit(&t->dropped_full, 1, memory_order_relaxed);
        count(t->m_full, 1);
        return -ENOBUFS;
    }
    struct kvg_trace_span *slot = &t->ring[(t->head + t->count) % t->cfg.queue_spans];
    /* The record up to its strings' end: the rest of str[] is unused. */
    memcpy(slot, s, offsetof(struct kvg_trace_span, str) + s->str_len);
    int wake = ++t->count == t->cfg.batch_spans;
    pthread_mutex_unlock(&t->mu);
    if (wake) pthread_cond_signal(&t->cv);
    return 0;
}

/* One POST of n spans; 0 when the collector took them. After a failure
 * the collector is left alone for a backoff (1 s, doubling to 30 s: the
 * OTLP exporters' retry pacing): batches in that time are dropped without
 * being encoded or sent, so a dead collector costs a connect now and then,
 * not one per batch. */
static int post(struct kvg_trace *t, size_t n)
{
    if (t->quiet_until_ms && kvg_now_ms() < t->quiet_until_ms) {
        atomic_fetch_add_explicit(&t->dropped_export, n, memory_order_relaxed);
        count(t->m_export, n);
        return KVG_ECLOSED;
    }
    struct kvg_trace_resource res = {.service_name = t->cfg.service_name,
                                     .service_version =
                                         t->cfg.service_version[0] ? t->cfg.service_version : NULL,
                                     .instance_id = t->instance};
    kvg_buf_reset(&t->body);
    int rc = kvg_trace_encode(&res, t->batch, n, &t->body);
    int status = 0;
    if (!rc) {
        struct kvg_https_resp r;
        rc = kvg_https_request(&t->http, "POST", t->path, "application/x-protobuf", t->body.data,
                               t->body.len, t->cfg.timeout_ms, &r);
        char *answer = NULL;
        size_t len;
        if (!rc) rc = kvg_https_resp_body(&r, 1 << 16, &answer, &len);
        status = r.status;
        free(answer);
        kvg_https_resp_close(&t->http, &r);
        if (!rc && (status < 200 || status > 299)) rc = KVG_EUPSTREAM;
    }
    atomic_fetch_add_explicit(&t->batches, 1, memory_order_relaxed);
    count(t->m_batches, 1);
    if (!rc) {
        atomic_fetch_add_explicit(&t->exported, n, memory_order_relaxed);
        count(t->m_exported, n);
        if (!t->collector_ok) KVG_INFO("traces: the collector at %s takes spans", t->cfg.endpoint);
        t->collector_ok = 1;
        t->backoff_ms = 0;
        t->quiet_until_ms = 0;
        return 0;
    }
    atomic_fetch_add_explicit(&t->failed_batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->dropped_export, n, memory_order_relaxed);
    count(t->m_export, n);
    /* One line when the collector stops taking spans, not one per batch. */
    if (t->collector_ok || atomic_load(&t->batches) == 1) {
        char why[64];
        if (status && (status < 200 || status > 299))
            snprintf(why, sizeof why, "status %d", status);
        else
            snprintf(why, sizeof why, "%s", kvg_strerror(rc));
        KVG_WARN("traces: cannot export to %s:%d%s: %s; spans are dropped (counted in "
                 "kvgate_trace_spans_dropped_total) until it answers",
                 t->http.host, t->http.port, t->path, why);
    }
    t->collector_ok = 0;
    t->backoff_ms = t->backoff_ms ? KVG_MIN(t->backoff_ms * 2, 30000u) : 1000;
    t->quiet_until_ms = kvg_now_ms() + t->backoff_ms;
    return rc;
}

/* Takes up to a batch off the queue (in place) and posts it. Called with
 * t->mu held; returns with it held. */
static int flush_one(struct kvg_trace *t)
{
    size_t n = KVG_MIN(t->count, (size_t)t->cfg.batch_spans), h = t->head;
    for (size_t i = 0; i < n; i++) t->batch[i] = &t->ring[(h + i) % t->cfg.queue_spans];
    atomic_store(&t->posting, 1);
    pthread_mutex_unlock(&t->mu);
    int rc = n ? post(t, n) : 0;
    atomic_store(&t->posting, 0);
    pthread_mutex_lock(&t->mu);
    t->head = (h + n) % t->cfg.queue_spans;
    t->count -= n;
    return rc;
}

static void *exporter(void *arg)
{
    struct kvg_trace *t = arg;
    pthread_setname_np(pthread_self(), "kvg-trace"); /* for top -H, ps -L, /proc */
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        if (t->count < t->cfg.batch_spans) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)t->cfg.flush_ms * 1000000ull;
            ts.tv_sec += (time_t)(ns / 1000000000ull);
            ts.tv_nsec = (long)(ns % 1000000000ull);
            pthread_cond_timedwait(&t->cv, &t->mu, &ts);
            if (t->stop) break;
        }
        flush_one(t);
    }
    /* Stopping: what is queued goes once more while the collector answers. */
    while (t->count && t->collector_ok)
        if (flush_one(t)) break;
    if (t->count) { /* never sent: dropped like a failed batch */
        atomic_fetch_add_explicit(&t->dropped_export, t->count, memory_order_relaxed);
        count(t->m_export, t->count);
        t->count = 0;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* The endpoint's path after host:port, without a trailing '/', + /v1/traces. */
static int traces_path(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    p += strcspn(p, "/?#");
    size_t n = strcspn(p, "?#");
    while (n && p[n - 1] == '/') n--;
    int k = snprintf(out, cap, "%.*s/v1/traces", (int)n, p);
    return k > 0 && (size_t)k < cap ? 0 : KVG_ETOOBIG;
}

static int counter(struct kvg_metrics_registry *reg, const char *name, const char *help,
                   const char *label, const char *value, struct kvg_metrics_series **out)
{
    struct kvg_metrics_family *f;
    const char *names[1] = {label};
    int rc = kvg_metrics_counter(reg, name, help, label ? names : NULL, label ? 1 : 0, &f);
    if (!rc) rc = kvg_metrics_series(f, label ? &value : NULL, label ? 1 : 0, out);
    return rc;
}

int kvg_trace_new(const struct kvg_trace_config *c, struct kvg_metrics_registry *reg,
                  struct kvg_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!(c->sample >= 0 && c->sample <= 1))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--trace-sample: a ratio from 0 to 1");
    if (c->timeout_ms < 1) /* 0 would be no timeout at all on the sockets */
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--otlp-timeout-secs: more than 0");
    if (c->flush_ms < 1)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--trace-flush-ms: 1 or more");
    if (c->queue_spans < 1 || c->batch_spans < 1 || c->batch_spans > c->queue_spans)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "traces: the batch must fit the queue");
    struct kvg_trace *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    t->cfg = *c;
    int rc = kvg_https_init(&t->http, c->endpoint, NULL, NULL, err, errlen);
    if (rc) {
        free(t);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--otlp-endpoint '%s': http(s)://host:port",
                           c->endpoint);
    }
    t->http.connect_timeout_ms = c->timeout_ms;
    if (traces_path(c->endpoint, t->path, sizeof t->path)) {
        kvg_trace_free(t);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--otlp-endpoint: too long");
    }
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(t->instance, sizeof t->instance, "%s:%d", host, (int)getpid());
    t->ring = calloc(c->queue_spans, sizeof *t->ring);
    t->batch = calloc(c->batch_spans, sizeof *t->batch);
    kvg_buf_init(&t->body, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!t->ring || !t->batch) {
        kvg_trace_free(t);
        return -ENOMEM;
    }
    if (reg &&
        ((rc = counter(reg, "kvgate_trace_spans_exported_total",
                       "Spans the OTLP collector accepted", NULL, NULL, &t->m_exported)) ||
         (rc = counter(reg, "kvgate_trace_export_batches_total",
                       "OTLP export requests sent to the collector", NULL, NULL, &t->m_batches)) ||
         (rc = counter(reg, "kvgate_trace_spans_dropped_total",
                       "Spans dropped: the queue was full, or the collector did not take their "
                       "batch",
                       "reason", "queue_full", &t->m_full)) ||
         (rc = counter(reg, "kvgate_trace_spans_dropped_total",
                       "Spans dropped: the queue was full, or the collector did not take their "
                       "batch",
                       "reason", "export_failed", &t->m_export)))) {
        kvg_trace_free(t);
        return kvg_err_set(err, errlen, rc, "trace metrics: %s", kvg_strerror(rc));
    }
    if ((rc = pthread_create(&t->thread, NULL, exporter, t))) {
        kvg_trace_free(t);
        return kvg_err_set(err, errlen, -rc, "trace exporter thread: %s", kvg_strerror(-rc));
    }
    t->started = 1;
    *out = t;
    return 0;
}

void kvg_trace_free(struct kvg_trace *t)
{
    if (!t) return;
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_mutex_unlock(&t->mu);
        pthread_cond_signal(&t->cv);
        /* A POST on now may be to a collector that never answers: cut it
         * (and the final flush with it) rather than wait its timeout. */
        if (atomic_load(&t->posting)) kvg_https_abort(&t->http);
        pthread_join(t->thread, NULL);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    kvg_https_free(&t->http);
    kvg_buf_free(&t->body);
    kvg_metrics_series_release(t->m_exported);
    kvg_metrics_series_release(t->m_batches);
    kvg_metrics_series_release(t->m_full);
    kvg_metrics_series_release(t->m_export);
    free(t->ring);
    free(t->batch);
    free(t);
}

void kvg_trace_stats(const struct kvg_trace *t, struct kvg_trace_stats *o)
{
    o->submitted = atomic_load(&t->submitted);
    o->exported = atomic_load(&t->exported);
    o->dropped_full = atomic_load(&t->dropped_full);
    o->dropped_export = atomic_load(&t->dropped_export);
    o->batches = atomic_load(&t->batches);
    o->failed_batches = atomic_load(&t->failed_batches);
}
