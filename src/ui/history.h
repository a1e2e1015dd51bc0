/* The status page's memory of the last minutes: a ring of per-second samples
 * (request rate, TTFT quantiles, the gateway queue, and per worker its
 * requests in flight, engine queue and KV usage). The process that owns the
 * numbers pushes a sample each interval; any thread renders the ring as
 * JSON. Knows nothing of where the numbers come from. */
#ifndef KVG_UI_HISTORY_H
#define KVG_UI_HISTORY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define KVG_UI_SAMPLES 300    /* five minutes at one sample a second */
#define KVG_UI_MAX_WORKERS 16 /* charted; the page's table shows every worker */

struct kvg_ui_worker_sample {
    char url[512];
    double in_flight;
    double waiting;  /* the engine's queue; < 0 unknown */
    double kv_usage; /* 0..1; < 0 unknown */
};

struct kvg_ui_sample {
    double t;        /* wall-clock seconds */
    double req_rate; /* requests answered per second over the interval */
    double ttft_p50; /* seconds, over the interval; < 0 when none */
    double ttft_p90;
    double queue; /* requests waiting in the gateway queue */
    unsigned nw;
    struct kvg_ui_worker_sample w[KVG_UI_MAX_WORKERS];
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
/* Appends {"samples":[{"t","req_rate","ttft_p50","ttft_p90","queue",
 * "workers":{url:[in_flight,waiting,kv_usage]}}...]} (unknowns as null),
 * oldest first, the last max_samples of them. */
int kvg_ui_history_json(struct kvg_ui_history *h, size_t max_samples, struct kvg_buf *out);

#endif
