/* Priority admission: which workers a request of a given priority may go
 * to, whether the pool is saturated, and the gateway queue where requests
 * wait when no worker may take them.
 *
 * Priorities are integers, higher first (the Gateway API Inference
 * Extension's convention): "critical" = 1, "standard" = 0, "sheddable" = -1;
 * any p > 0 is of the critical class and any p < 0 sheddable. They come from
 * the header x-kvgate-priority or the API key's default.
 *
 * Traffic classes: a request is interactive (any priority above) or batch.
 * A batch request has the priority KVG_ADM_BATCH, below every other, so it
 * is a band of its own at the queue's bottom: it is granted only when no
 * interactive request waits, and it is admitted at once only when the queue
 * is empty (the gate's check: it never passes a waiter). Its per-worker rule
 * is the strictest (batch_max_waiting, 1, and batch_max_kv, 0.8: the
 * troughs), it is never shed, and it waits up to its own deadline (the
 * key's `deadline`, or x-kvgate-deadline), not the queue timeout.
 *
 * Rules (each threshold in struct kvg_adm_config), per worker:
 *   critical:  waiting < critical_max_waiting (50);
 *   standard:  waiting < standard_max_waiting (5) and kv < standard_max_kv (0.8);
 *   sheddable: waiting < sheddable_max_waiting (5) and kv < sheddable_max_kv (0.8).
 * Only known, fresh signals are judged: a worker whose metrics are missing
 * (at_ms == 0), older than stale_ms, or unknown (< 0 or NaN) in a field is
 * judged by the fields it does report (an engine without a KV figure by its
 * waiting count alone), and a worker with none of the rule's fields fresh is
 * "unknown", never "busy": a missing or failing metric never holds a request.
 * An unknown worker is judged by kvgate's own count instead: it is busy when
 * its in-flight requests are at least own_busy_min (8) and more than
 * own_busy_factor (2) times the mean in-flight of the other candidates. The
 * least loaded candidate is never over that line, so kvgate's own count can
 * steer requests away from an outlier but never queue one by itself:
 * admission queues only when a known engine signal says every worker is past
 * its threshold.
 * Pool saturation = mean over the workers with a known fresh signal of
 * max(waiting / sat_queue, kv / sat_kv) (each over the fields known); 0 when
 * no worker reports any.
 * Decision: some worker passes -> admit (the router picks among those that
 * pass); none passes -> a sheddable request is rejected at once (429), the
 * others wait in the queue (batch ones too: never shed); a sheddable request is also rejected when
 * pool saturation >= shed_pool_saturation (GIE's legacy admission check).
 *
 * The queue. Waiters are ordered by priority (strictly: a higher band is
 * always served first) and round-robin between tenants within a band, FIFO
 * within a tenant. It is bounded (queue_max): when full, a newcomer of higher
 * priority than the lowest band evicts the newest waiter of that band's
 * largest tenant; otherwise the newcomer is refused. A waiter gives up at its
 * deadline (503 with Retry-After).
 *
 * Threads. The queue is shared by every loop thread under one mutex. A waiter
 * belongs to the loop it was enqueued on, and its callback always runs on
 * that loop: each loop opens a struct kvg_adm_loop holding a uv_async_t.
 * kvg_adm_capacity_available (any thread) moves granted waiters to their
 * loop's ready list under the mutex and uv_async_send()s those loops; each
 * loop's async callback then runs the callbacks of its ready waiters. A
 * waiter's timeout is a uv_timer on its own loop, so a timeout never crosses
 * threads. Lock order: the queue calls the probe with its mutex held, so the
 * probe may take the pool's lock but nothing that calls into this queue. */
#ifndef KVG_GATEWAY_ADMISSION_H
#define KVG_GATEWAY_ADMISSION_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "router/worker.h"

#define KVG_ADM_CRITICAL 1
#define KVG_ADM_STANDARD 0
#define KVG_ADM_SHEDDABLE (-1)
#define KVG_ADM_PRIO_MIN (-1000)
#define KVG_ADM_PRIO_MAX 1000
/* The batch class's priority: below every priority a request may ask for. */
#define KVG_ADM_BATCH (KVG_ADM_PRIO_MIN - 1)
/* The longest deadline a batch request may have (24 h). */
#define KVG_ADM_DEADLINE_MAX_S 86400u

/* "critical", "standard", "sheddable" (any case) or an integer in
 * [KVG_ADM_PRIO_MIN, KVG_ADM_PRIO_MAX]. Returns 0 or -EINVAL. */
int kvg_adm_priority_parse(const char *s, size_t n, int *out);
/* KVG_ADM_CRITICAL / STANDARD / SHEDDABLE / BATCH: the class of a priority. */
int kvg_adm_class(int prio);
/* A class's index in per-class arrays: sheddable 0, standard 1, critical 2,
 * batch 3. */
#define KVG_ADM_CLASS_INDEX(prio)                                                                  \
    (kvg_adm_class(prio) == KVG_ADM_BATCH ? 3 : kvg_adm_class(prio) + 1)
const char *kvg_adm_class_name(int prio);
/* "interactive" (0) or "batch" (1), any case, into *batch. 0 or -EINVAL. */
int kvg_adm_traffic_parse(const char *s, size_t n, int *batch);
/* A deadline: a number of seconds, or with a unit s, m or h ("90", "30m",
 * "1.5h"), in (0, KVG_ADM_DEADLINE_MAX_S], into *ms. 0 or -EINVAL. */
int kvg_adm_deadline_parse(const char *s, size_t n, uint32_t *ms);

struct kvg_adm_config {
    double critical_max_waiting;
    double standard_max_waiting, standard_max_kv;
    double sheddable_max_waiting, sheddable_max_kv;
    double batch_max_waiting, batch_max_kv;
    double sat_queue, sat_kv;
    double shed_pool_saturation; /* <= 0: off */
    double own_busy_factor;      /* kvgate's own count: <= 0 off (see above) */
    uint32_t own_busy_min;
    uint32_t stale_ms; /* 0: only missing metrics count as stale */
    uint32_t queue_timeout_ms;
    uint32_t queue_max;
    uint32_t retry_after_s;     /* for the 503 of a queue timeout */
    uint32_t batch_deadline_ms; /* a batch request's when neither key nor header says (30 min) */
};
/* The seed defaults above; stale_ms 1500 (three of the default 500 ms
 * scrapes), queue timeout 30 s, 1024 waiters, Retry-After 1. */
void kvg_adm_config_default(struct kvg_adm_config *c);

enum kvg_adm_judgement { KVG_ADM_FITS, KVG_ADM_BUSY, KVG_ADM_UNKNOWN };
/* What the engine's own signals say of a worker for prio: FITS (every
 * known fresh field the rule reads is under its threshold), BUSY (one is
 * at or over it), UNKNOWN (none is known and fresh). now_ms: the clock of
 * load->at_ms (monotonic ms). */
enum kvg_adm_judgement kvg_adm_load_judge(const struct kvg_adm_config *c, int prio,
                                          const struct kvg_engine_load *l, uint64_t now_ms);
/* The engine signals do not say busy (FITS or UNKNOWN). */
int kvg_adm_load_ok(const struct kvg_adm_config *c, int prio, const struct kvg_engine_load *l,
                    uint64_t now_ms);
/* kvgate's own count says busy: in_flight against others_mean, the mean
 * in-flight of the other candidates (< 0: there are none, never busy). */
int kvg_adm_own_busy(const struct kvg_adm_config *c, uint32_t in_flight, double others_mean);
/* (sum - mine) / (n - 1): the others' mean in a pool of n whose in-flight
 * counts sum to sum; -1 when n < 2. */
double kvg_adm_others_mean(uint64_t sum, size_t n, uint32_t mine);
/* The whole per-worker rule: the engine's judgement, or kvgate's own count
 * when the engine's is UNKNOWN. */
int kvg_adm_ok(const struct kvg_adm_config *c, int prio, const struct kvg_engine_load *l,
               uint64_t now_ms, uint32_t in_flight, double others_mean);
/* The same for a live worker (takes w->mu to read its load): the filter the
 * router calls per candidate. */
int kvg_adm_worker_ok(const struct kvg_adm_config *c, int prio, struct kvg_worker *w,
                      uint64_t now_ms, double others_mean);
/* max(waiting / sat_queue, kv / sat_kv) over the fields known; -1 when
 * stale, missing or unknown. */
double kvg_adm_load_saturation(const struct kvg_adm_config *c, const struct kvg_engine_load *l,
                               uint64_t now_ms);
/* Mean of the known ones above (0 when none is known); 1.0 for an empty pool. */
double kvg_adm_pool_saturation(const struct kvg_adm_config *c, const struct kvg_engine_load *loads,
                               size_t n, uint64_t now_ms);

enum kvg_adm_verdict { KVG_ADM_ADMIT, KVG_ADM_QUEUE, KVG_ADM_REJECT };
/* The decision for one request over the pool's loads and kvgate's
 * in-flight counts (NULL: all 0); *nok (optional) gets the number of
 * workers that pass. */
enum kvg_adm_verdict kvg_adm_decide(const struct kvg_adm_config *c, int prio,
                                    const struct kvg_engine_load *loads, const uint32_t *in_flight,
                                    size_t n, uint64_t now_ms, size_t *nok);

/* The same over live workers (each read under its w->mu), e.g. the healthy
 * workers serving the request's model from kvg_pool_snapshot. */
enum kvg_adm_verdict kvg_adm_decide_workers(const struct kvg_adm_config *c, int prio,
                                            struct kvg_worker *const *ws, size_t n, uint64_t now_ms,
                                            size_t *nok);

struct kvg_adm_queue;
struct kvg_adm_loop;
struct kvg_adm_waiter;

/* Would a request of priority prio be admitted now? Called with the queue's
 * mutex held, from whichever thread calls kvg_adm_capacity_available. NULL:
 * always yes. */
typedef int (*kvg_adm_probe)(void *ud, int prio);

/* *out is the caller's: kvg_adm_queue_free() after every loop closed. */
int kvg_adm_queue_new(const struct kvg_adm_config *c, kvg_adm_probe probe, void *probe_ud,
                      struct kvg_adm_queue **out);
void kvg_adm_queue_free(struct kvg_adm_queue *q);

/* On the loop's thread. Closing fails the loop's waiters (KVG_ECLOSED, their
 * callbacks run inside the call); the loop must run afterwards so the
 * handles finish closing. */
int kvg_adm_loop_open(struct kvg_adm_queue *q, uv_loop_t *loop, struct kvg_adm_loop **out);
void kvg_adm_loop_close(struct kvg_adm_loop *lq);

/* status: 0 = capacity for you, dispatch now; KVG_ETIMEOUT = queue timeout
 * (503 + Retry-After); -ENOSPC = evicted by a higher priority (503);
 * KVG_ECLOSED = shutting down. Runs exactly once, on the waiter's loop,
 * never inside kvg_adm_enqueue, unless the waiter was cancelled. */
typedef void (*kvg_adm_wait_cb)(void *ud, int status);

/* Groups a waiter may be counted in (kvg_adm_stats), the host's: serve's
 * models that an autoscale pool reads. */
#define KVG_ADM_GROUPS 16

/* Enqueues on lq's loop (call on that thread). deadline_ms: monotonic
 * (kvg_now_ms clock); 0 = now + queue_timeout_ms. front: put it first in
 * its tenant's line (a waiter that was granted but found no room after all
 * and goes back, keeping its place and deadline). tenant may be NULL.
 * group: 0..KVG_ADM_GROUPS-1, or -1 none; it only counts, never orders.
 * Returns 0 (*out can cancel), or -ENOSPC when the queue is full. The
 * waiter is owned by the queue; the handle is valid until cb ran or
 * kvg_adm_cancel. */
int kvg_adm_enqueue(struct kvg_adm_loop *lq, int prio, const char *tenant, int group,
                    uint64_t deadline_ms, int front, kvg_adm_wait_cb cb, void *ud,
                    struct kvg_adm_waiter **out);
/* The client went away: cb will not run. A grant it had not used yet goes
 * to the next waiter. On the waiter's loop. */
void kvg_adm_cancel(struct kvg_adm_waiter *w);
/* Capacity freed (a request ended, metrics refreshed): grants up to max
 * waiters in order, while the probe says their priority fits. Any thread.
 * Returns the number granted. */
unsigned kvg_adm_capacity_available(struct kvg_adm_queue *q, unsigned max);

struct kvg_adm_stats {
    uint64_t queued, granted, timeouts, evicted, refused_full, cancelled;
    uint64_t batch_expired; /* of the timeouts, batch requests past their deadline */
    size_t waiting;
    /* of waiting, by class: sheddable, standard, critical, batch
     * (KVG_ADM_CLASS_INDEX) */
    size_t waiting_class[4];
    /* of waiting, by group (kvg_adm_enqueue), and of those the batch ones */
    size_t waiting_group[KVG_ADM_GROUPS], batch_group[KVG_ADM_GROUPS];
};
void kvg_adm_stats(struct kvg_adm_queue *q, struct kvg_adm_stats *out);
/* Waiters in the queue now. */
size_t kvg_adm_waiting(struct kvg_adm_queue *q);

#endif
