/* The status page's memory of the last minutes: a ring of per-second samples
 * (request and token rates, error shares, TTFT and ITL quantiles, cache hit
 * rates, the gateway queue, and per worker its requests in flight, engine
 * queue, KV usage and requests sent). The process that owns the numbers
 * pushes a sample each interval; any thread renders the ring as JSON. Knows
 * nothing of where the numbers come from. */
#ifndef KVG_UI_HISTORY_H
#define KVG_UI_HISTORY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define KVG_UI_SAMPLES 300    /* five minutes at one sample a second */
#define KVG_UI_MAX_WORKERS 16 /* charted; the page's table shows every worker */
#define KVG_UI_MAX_MODELS 8   /* charted per model; the first listed by the workers */

struct kvg_ui_worker_sample {
    char url[512];
    double in_flight;
    double waiting;   /* the engine's queue; < 0 unknown */
    double kv_usage;  /* 0..1; < 0 unknown */
    double sent_rate; /* requests sent to it per second over the interval */
};

/* One model's share of a sample: what went to the workers listing it (all
 * of them, not only the KVG_UI_MAX_WORKERS charted). */
struct kvg_ui_model_sample {
    char name[128];
    double sent_rate; /* requests sent per second to the workers listing it */
    double in_flight; /* requests in flight on them */
};

/* Every rate and quantile is over the interval since the previous sample;
 * < 0 (JSON null) when the interval had nothing to measure. */
struct kvg_ui_sample {
    double t;        /* wall-clock seconds */
    double req_rate; /* requests answered per second */
    double err4_pct; /* answers with a 4xx status, % of those answered */
    double err5_pct; /* answers with a 5xx status, % of those answered */
    double tok_prompt, tok_cached, tok_completion; /* tokens/s from the engines' usage */
    double ttft_p50, ttft_p90;                     /* seconds, streams' first token */
    double itl_p50, itl_p90;                       /* seconds, streams' mean token gap */
    double hit_pct;   /* cached prompt tokens, % of prompt tokens (the engines' usage) */
    double match_pct; /* prompt blocks the chosen worker held, % (the router's view) */
    double queue;     /* requests waiting in the gateway queue */
    unsigned nw, nm;
    struct kvg_ui_worker_sample w[KVG_UI_MAX_WORKERS];
    struct kvg_ui_model_sample m[KVG_UI_MAX_MODELS];
};

struct kvg_ui_history {
    pthread_mutex_t mu;
    struct kvg_ui_sample *ring; /* owned, KVG_UI_SAMPLES */
    size_t head, n;
};

int kvg_ui_history_init(struct kvg_ui_history *h);
void kvg_ui_history_free(struct kvg_ui_history *h);
/* Copies s in; the oldest sample goes when the ring is full. */
void kvg_ui_history_push(struct kvg_ui_history *h, const struct kvg_ui_sample *s);
/* Appends {"samples":[{"t", "req_rate", "err4_pct", "err5_pct",
 * "tok_prompt", "tok_cached", "tok_completion", "ttft_p50", "ttft_p90",
 * "itl_p50", "itl_p90", "hit_pct", "match_pct", "queue",
 * "workers":{url:[in_flight,waiting,kv_usage,sent_rate]},
 * "models":{name:[sent_rate,in_flight]}}...]} (unknowns as null), oldest
 * first, the last max_samples of them. */
int kvg_ui_history_json(struct kvg_ui_history *h, size_t max_samples, struct kvg_buf *out);

#endif
