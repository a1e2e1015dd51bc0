/* Renders a registry as Prometheus text exposition format 0.0.4:
 *
 *   # HELP name help-with-\\-and-\n-escaped
 *   # TYPE name counter|gauge|histogram
 *   name{label="value-with-\\-\"-\n-escaped",...} value
 *   name_bucket{...,le="0.1"} cumulative-count   (histograms; then le="+Inf")
 *   name_sum{...} sum
 *   name_count{...} count
 *
 * Values are read with relaxed loads while updates continue; what a scrape
 * sees is some recent state of each atomic, not one instant of the whole
 * registry, which is what every Prometheus client library gives too. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "metrics/internal.h"

static uint64_t load_u64(_Atomic uint64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

static double load_double(_Atomic uint64_t *a)
{
    uint64_t u = load_u64(a);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Appends s escaped for a label value (quote = 1) or a HELP text (quote =
 * 0, where a double quote needs no escape). Runs of plain bytes are copied
 * in one append. */
static int append_escaped(struct kvg_buf *out, const char *s, int quote)
{
    const char *run = s;
    for (const char *p = s;; p++) {
        const char *esc = NULL;
        if (*p == '\\')
            esc = "\\\\";
        else if (*p == '\n')
            esc = "\\n";
        else if (*p == '"' && quote)
            esc = "\\\"";
        else if (*p)
            continue;
        int rc = kvg_buf_append(out, run, (size_t)(p - run));
        if (rc) return rc;
        if (!esc) return 0; /* the terminating NUL */
        if ((rc = kvg_buf_append(out, esc, 2))) return rc;
        run = p + 1;
    }
}

/* Appends {a="x",b="y"} (plus le="..." for a bucket), or nothing when there
 * are no labels at all. */
static int append_labels(struct kvg_buf *out, const struct kvg_metrics_family *f,
                         const struct kvg_metrics_series *s, const char *le)
{
    if (f->nlabels == 0 && !le) return 0;
    int rc = kvg_buf_append(out, "{", 1);
    for (size_t i = 0; !rc && i < f->nlabels; i++) {
        if (i) rc = kvg_buf_append(out, ",", 1);
        if (!rc) rc = kvg_buf_append_str(out, f->label_names[i]);
        if (!rc) rc = kvg_buf_append(out, "=\"", 2);
        if (!rc) rc = append_escaped(out, s->values[i], 1);
        if (!rc) rc = kvg_buf_append(out, "\"", 1);
    }
    if (!rc && le) rc = kvg_buf_printf(out, "%sle=\"%s\"", f->nlabels ? "," : "", le);
    if (!rc) rc = kvg_buf_append(out, "}", 1);
    return rc;
}

static int append_sample(struct kvg_buf *out, const struct kvg_metrics_family *f,
                         const struct kvg_metrics_series *s, const char *suffix, const char *le,
                         const char *value)
{
    int rc = kvg_buf_append_str(out, f->name);
    if (!rc && suffix) rc = kvg_buf_append_str(out, suffix);
    if (!rc) rc = append_labels(out, f, s, le);
    if (!rc) rc = kvg_buf_printf(out, " %s\n", value);
    return rc;
}

static int render_series(struct kvg_buf *out, const struct kvg_metrics_family *f,
                         struct kvg_metrics_series *s)
{
    char v[32];
    if (f->kind == KVG_METRICS_COUNTER) {
        uint64_t whole = load_u64(&s->a);
        double frac = load_double(&s->b);
        /* Integer-only counters print exactly, even past 2^53. */
        if (frac == 0)
            snprintf(v, sizeof v, "%" PRIu64, whole);
        else
            kvg__metrics_fmt_double(v, (double)whole + frac);
        return append_sample(out, f, s, NULL, NULL, v);
    }
    if (f->kind == KVG_METRICS_GAUGE) {
        kvg__metrics_fmt_double(v, load_double(&s->a));
        return append_sample(out, f, s, NULL, NULL, v);
    }

    /* Histogram: one pass over the bucket counts yields both the cumulative
     * _bucket values and _count, so +Inf and _count agree by construction. */
    uint64_t cum = 0;
    char le[32];
    int rc = 0;
    for (size_t i = 0; !rc && i <= f->nbounds; i++) {
        cum += load_u64(&s->buckets[i]);
        if (i < f->nbounds)
            kvg__metrics_fmt_double(le, f->bounds[i]);
        else
            memcpy(le, "+Inf", 5);
        snprintf(v, sizeof v, "%" PRIu64, cum);
        rc = append_sample(out, f, s, "_bucket", le, v);
    }
    if (rc) return rc;
    kvg__metrics_fmt_double(v, load_double(&s->a));
    if ((rc = append_sample(out, f, s, "_sum", NULL, v))) return rc;
    snprintf(v, sizeof v, "%" PRIu64, cum);
    return append_sample(out, f, s, "_count", NULL, v);
}

static const char *kind_name(enum kvg_metrics_kind k)
{
    switch (k) {
    case KVG_METRICS_COUNTER:
        return "counter";
    case KVG_METRICS_GAUGE:
        return "gauge";
    default:
        return "histogram";
    }
}

static int render_family(struct kvg_buf *out, struct kvg_metrics_family *f)
{
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    if (f->nseries == 0) goto done;
    rc = kvg_buf_printf(out, "# HELP %s ", f->name);
    if (!rc) rc = append_escaped(out, f->help, 0);
    if (!rc) rc = kvg_buf_printf(out, "\n# TYPE %s %s\n", f->name, kind_name(f->kind));
    for (struct kvg_metrics_series *s = f->first; !rc && s; s = s->next)
        rc = render_series(out, f, s);
done:
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int kvg_metrics_render(struct kvg_metrics_registry *r, struct kvg_buf *out)
{
    size_t mark = out->len;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    for (struct kvg_metrics_family *f = r->head; !rc && f; f = f->next) rc = render_family(out, f);
    pthread_mutex_unlock(&r->lock);
    if (rc) out->len = mark;
    return rc;
}
