/* `queue`: the HPA/KEDA baseline. KEDA polls a metric every interval (its
 * pollingInterval, 30 s) and HPA turns it into replicas with an AverageValue
 * target: desired = ceil(total / target), left alone within a 10% tolerance
 * of the current count; scale-up is limited to max(2x, +4) per step (HPA's
 * default policies), scale-down waits out a 300 s stabilization window (the
 * highest recommendation in it wins). With minReplicas 0, KEDA deactivates
 * after cooldownPeriod (300 s) without demand and activates on any.
 *
 * Metrics by preset:
 *   llm-d   — llm-d's token-velocity recipe: prefill on in-flight prompt tokens
 *             over peak prefill throughput V_P (seconds of backlog) vs the
 *             recipe's rule, TTFT target - uncached ISL / V_P (1.5 s for short
 *             contexts);
 *             decode on KV usage summed over the pool vs 0.8; an aggregated
 *             pool takes the larger of the two;
 *   waiting — requests waiting (engines plus the gateway queue) per replica
 *             vs 5 (GKE's queue-size guidance).
 * It sees no starting replicas, no forecast and no start-up time: a queue
 * that keeps growing while replicas boot keeps adding replicas. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/planner.h"

#define QUEUE_RECS 128

struct queue {
    struct kvg_autoscale_planner base;
    double next_at;
    double rec_t[QUEUE_RECS];
    uint32_t rec_n[QUEUE_RECS];
    size_t nrec, head;
    double idle_since; /* < 0: demand seen */
};

static void remember(struct queue *q, double t, uint32_t n)
{
    size_t i = (q->head + q->nrec) % QUEUE_RECS;
    if (q->nrec == QUEUE_RECS)
        q->head = (q->head + 1) % QUEUE_RECS;
    else
        q->nrec++;
    q->rec_t[i] = t;
    q->rec_n[i] = n;
}

/* The highest recommendation of the last window seconds (HPA's scale-down
 * stabilization). */
static uint32_t stabilized(struct queue *q, double now, double window)
{
    uint32_t mx = 0;
    for (size_t k = 0; k < q->nrec; k++) {
        size_t i = (q->head + k) % QUEUE_RECS;
        if (q->rec_t[i] >= now - window && q->rec_n[i] > mx) mx = q->rec_n[i];
    }
    return mx;
}

static int queue_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                      struct kvg_autoscale_decision *d)
{
    struct queue *q = (struct queue *)p;
    const struct kvg_autoscale_opts *o = &p->o;
    if (!kvg_autoscale_due(p, s, 30, &q->next_at, d)) return 0;
    d->forecast = -1;
    d->horizon_s = 0;
    uint32_t cur = s->ready + s->starting;
    /* The pool's count before the autoscaler starts is the window's history. */
    if (!p->has_last) remember(q, s->now, cur);
    double total, target;
    const char *what;
    if (!strcmp(o->queue_preset, "waiting")) {
        total = s->waiting + s->queued;
        target = o->queue_waiting_target > 0 ? o->queue_waiting_target : 5;
        what = "waiting requests";
    } else {
        double vp = o->queue_peak_prefill_tps > 0 ? o->queue_peak_prefill_tps : o->prof.prefill_tps;
        double backlog = vp > 0 ? s->inflight_prompt_tokens / vp : 0;
        double bt = o->queue_prefill_backlog_s;
        if (!(bt > 0)) {
            double hit = s->cache_hit > 0 && s->cache_hit < 1 ? s->cache_hit : 0;
            bt = vp > 0 ? o->ttft_target_s - s->isl * (1 - hit) / vp : o->ttft_target_s;
            if (bt < 0.1) bt = 0.1;
        }
        double kt = o->queue_kv_target > 0 ? o->queue_kv_target : 0.8;
        double np = backlog / bt, nd = s->kv_usage_sum / kt;
        if (o->role == KVG_AUTOSCALE_PREFILL || (o->role == KVG_AUTOSCALE_AGGREGATED && np >= nd)) {
            total = backlog;
            target = bt;
            what = "prefill backlog (s)";
        } else {
            total = s->kv_usage_sum;
            target = kt;
            what = "KV usage (sum)";
        }
    }
    double ratio = total / target; /* replicas at the target */
    d->need = ratio;
    int demand = total > 0 || s->queued > 0 || s->arrival_rate > 0;
    if (demand)
        q->idle_since = -1;
    else if (q->idle_since < 0)
        q->idle_since = s->now;
    uint32_t want;
    if (cur == 0) {
        /* KEDA's activation: any demand brings the pool to one, HPA then sizes it. */
        want = demand ? (uint32_t)fmax(1, kvg_autoscale_ceil(ratio)) : 0;
    } else if (fabs(ratio / cur - 1.0) <= o->queue_tolerance) {
        want = cur;
    } else {
        want = kvg_autoscale_ceil(ratio);
        uint32_t up_cap = cur * 2 > cur + 4 ? cur * 2 : cur + 4;
        if (want > up_cap) want = up_cap;
    }
    remember(q, s->now, want);
    uint32_t stab = stabilized(q, s->now, o->queue_down_window_s);
    if (want < cur && stab > want) want = stab < cur ? stab : cur;
    if (o->min_replicas == 0 && !demand && q->idle_since >= 0 &&
        s->now - q->idle_since >= o->queue_cooldown_s)
        want = 0;
    else if (want < 1 && (cur > 0 || demand))
        want = 1; /* KEDA keeps one until the cooldown has passed */
    d->desired = want < o->min_replicas ? o->min_replicas : want;
    if (d->desired > o->max_replicas) d->desired = o->max_replicas;
    snprintf(d->reason, sizeof d->reason, "%s %.2f vs target %.2f per replica: %u -> %u", what,
             total, target, cur, d->desired);
    return 0;
}

static const struct kvg_autoscale_planner_ops queue_ops = {"queue", queue_plan,
                                                           kvg_autoscale_planner_free_plain};

int kvg_autoscale_queue_new(struct kvg_autoscale_planner **out)
{
    struct queue *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    q->base.ops = &queue_ops;
    q->idle_since = -1;
    *out = &q->base;
    return 0;
}
