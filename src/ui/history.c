/* The status page's ring of samples; see history.h. */
#include "ui/history.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int kvg_ui_history_init(struct kvg_ui_history *h)
{
    memset(h, 0, sizeof *h);
    if (!(h->ring = calloc(KVG_UI_SAMPLES, sizeof *h->ring))) return -ENOMEM;
    pthread_mutex_init(&h->mu, NULL);
    return 0;
}

void kvg_ui_history_free(struct kvg_ui_history *h)
{
    if (!h->ring) return;
    pthread_mutex_destroy(&h->mu);
    free(h->ring);
    h->ring = NULL;
}

void kvg_ui_history_push(struct kvg_ui_history *h, const struct kvg_ui_sample *s)
{
    pthread_mutex_lock(&h->mu);
    h->ring[h->head] = *s;
    h->head = (h->head + 1) % KVG_UI_SAMPLES;
    if (h->n < KVG_UI_SAMPLES) h->n++;
    pthread_mutex_unlock(&h->mu);
}

static int num(struct kvg_buf *b, double v)
{
    return v < 0 || v != v ? kvg_buf_append_str(b, "null") : kvg_buf_printf(b, "%.6g", v);
}

static int sample_json(struct kvg_buf *b, const struct kvg_ui_sample *s)
{
    const struct {
        const char *key;
        double v;
    } f[] = {{"req_rate", s->req_rate},
             {"err4_pct", s->err4_pct},
             {"err5_pct", s->err5_pct},
             {"tok_prompt", s->tok_prompt},
             {"tok_cached", s->tok_cached},
             {"tok_completion", s->tok_completion},
             {"ttft_p50", s->ttft_p50},
             {"ttft_p90", s->ttft_p90},
             {"itl_p50", s->itl_p50},
             {"itl_p90", s->itl_p90},
             {"hit_pct", s->hit_pct},
             {"match_pct", s->match_pct},
             {"queue", s->queue}};
    int rc = kvg_buf_printf(b, "{\"t\":%.3f", s->t);
    for (size_t i = 0; !rc && i < sizeof f / sizeof f[0]; i++) {
        rc = kvg_buf_printf(b, ",\"%s\":", f[i].key);
        if (!rc) rc = num(b, f[i].v);
    }
    if (!rc) rc = kvg_buf_append_str(b, ",\"workers\":{");
    for (unsigned i = 0; !rc && i < s->nw && i < KVG_UI_MAX_WORKERS; i++) {
        const struct kvg_ui_worker_sample *w = &s->w[i];
        const double v[] = {w->in_flight, w->waiting, w->kv_usage, w->sent_rate};
        if (i) rc = kvg_buf_append(b, ",", 1);
        if (!rc) rc = kvg_buf_append_json_str(b, w->url, strlen(w->url));
        for (size_t k = 0; !rc && k < sizeof v / sizeof v[0]; k++) {
            rc = kvg_buf_append(b, k ? "," : ":[", k ? 1 : 2);
            if (!rc) rc = num(b, v[k]);
        }
        if (!rc) rc = kvg_buf_append(b, "]", 1);
    }
    if (!rc) rc = kvg_buf_append_str(b, "},\"models\":{");
    for (unsigned i = 0; !rc && i < s->nm && i < KVG_UI_MAX_MODELS; i++) {
        const struct kvg_ui_model_sample *m = &s->m[i];
        if (i) rc = kvg_buf_append(b, ",", 1);
        if (!rc) rc = kvg_buf_append_json_str(b, m->name, strlen(m->name));
        if (!rc) rc = kvg_buf_append(b, ":[", 2);
        if (!rc) rc = num(b, m->sent_rate);
        if (!rc) rc = kvg_buf_append(b, ",", 1);
        if (!rc) rc = num(b, m->in_flight);
        if (!rc) rc = kvg_buf_append(b, "]", 1);
    }
    if (!rc) rc = kvg_buf_append(b, "}}", 2);
    return rc;
}

int kvg_ui_history_json(struct kvg_ui_history *h, size_t max_samples, struct kvg_buf *out)
{
    int rc = kvg_buf_append_str(out, "{\"samples\":[");
    pthread_mutex_lock(&h->mu);
    size_t n = h->n < max_samples ? h->n : max_samples;
    size_t start = (h->head + KVG_UI_SAMPLES - n) % KVG_UI_SAMPLES;
    for (size_t i = 0; !rc && i < n; i++) {
        if (i) rc = kvg_buf_append(out, ",", 1);
        if (!rc) rc = sample_json(out, &h->ring[(start + i) % KVG_UI_SAMPLES]);
    }
    pthread_mutex_unlock(&h->mu);
    if (!rc) rc = kvg_buf_append_str(out, "]}");
    return rc;
}
