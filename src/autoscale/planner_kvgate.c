/* `kvgate`: kvgate's own planner. Every interval (15 s):
 *   - load in replicas' worth from the token rates, prefill priced at the
 *     observed cache hit rate (only uncached prompt tokens cost prefill);
 *   - a forecast of that load at the horizon a replica takes to become
 *     useful: the start-up model's p90 lead time for the node states new
 *     replicas land on (the longest of those with a share), with Holt's
 *     linear trend over the load series;
 *   - the reactive floor: prompt tokens waiting (engines and the gateway
 *     queue) that the pool must clear within the TTFT target;
 *   - replicas already starting count: the deficit is against ready +
 *     starting, and while some start, a growing backlog alone adds nothing
 *     (it is what they are coming for) unless it outgrows them by half;
 *   - a young replica (empty prefix cache) and every one still to come is
 *     priced at 1 - cold_cache_penalty of a replica;
 *   - scale-down with hysteresis: one replica per interval, only when the
 *     highest need over the last down_hold_s and the forecast still fit in
 *     one fewer at down_util; the actuator drains the one it removes;
 *   - zero: with min_replicas 0, no demand for zero_idle_s goes to zero, and
 *     requests held in the gateway queue (the only demand signal at zero)
 *     bring one back at once. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autoscale/planner.h"

#define KV_HOLD 256

struct kvp {
    struct kvg_autoscale_planner base;
    struct kvg_autoscale_pred pred;
    int init;
    double next_at;
    double hold_t[KV_HOLD], hold_v[KV_HOLD];
    size_t nhold, head;
    double idle_since;
    struct kvg_autoscale_startup dflt; /* when the options bring none */
};

static void hold_put(struct kvp *q, double t, double v)
{
    size_t i = (q->head + q->nhold) % KV_HOLD;
    if (q->nhold == KV_HOLD)
        q->head = (q->head + 1) % KV_HOLD;
    else
        q->nhold++;
    q->hold_t[i] = t;
    q->hold_v[i] = v;
}

static double hold_max(const struct kvp *q, double since)
{
    double mx = 0;
    for (size_t k = 0; k < q->nhold; k++) {
        size_t i = (q->head + k) % KV_HOLD;
        if (q->hold_t[i] >= since && q->hold_v[i] > mx) mx = q->hold_v[i];
    }
    return mx;
}

/* The lead time for where new replicas land: the longest p90 among the
 * node states that get a share (a mixture's p90 is at most that). */
static double lead_time(const struct kvp *q)
{
    const struct kvg_autoscale_opts *o = &q->base.o;
    const struct kvg_autoscale_startup *m = o->startup ? o->startup : &q->dflt;
    double share[KVG_AUTOSCALE_NODE_STATES] = {1 - o->cold_share - o->fetch_share, o->cold_share,
                                               o->fetch_share};
    double lead = 0;
    for (int st = 0; st < KVG_AUTOSCALE_NODE_STATES; st++) {
        if (share[st] < 0.05) continue;
        double l = kvg_autoscale_startup_lead(m, o->model, (enum kvg_autoscale_node)st);
        if (l > lead) lead = l;
    }
    return lead;
}

static int kvgate_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                       struct kvg_autoscale_decision *d)
{
    struct kvp *q = (struct kvp *)p;
    const struct kvg_autoscale_opts *o = &p->o;
    if (!q->init) {
        /* Smoother than the default: 15 s samples are noisy, the trend is
         * extrapolated over minutes. */
        kvg_autoscale_pred_init(&q->pred, KVG_AUTOSCALE_PRED_SEASONAL_TREND, 0);
        q->pred.alpha = 0.3;
        q->pred.beta = 0.05;
        q->init = 1;
    }
    double interval = o->interval_s > 0 ? o->interval_s : 15;
    if (!kvg_autoscale_due(p, s, interval, &q->next_at, d)) return 0;
    uint32_t cur = s->ready + s->starting;
    double hit = s->cache_hit > 0 && s->cache_hit < 1 ? s->cache_hit : 0;
    double load = kvg_autoscale_load(o, s->input_tps * (1 - hit), s->output_tps, o->itl_target_s);
    kvg_autoscale_pred_observe(&q->pred, load);
    double lead = lead_time(q);
    double fc = kvg_autoscale_pred_forecast(&q->pred, (lead + interval) / interval);
    d->horizon_s = lead + interval;
    d->forecast = fc;
    /* Reactive floor: the waiting prompt tokens cleared within the TTFT target. */
    double backlog = 0;
    if (o->prof.prefill_tps > 0 && o->role != KVG_AUTOSCALE_DECODE)
        backlog = s->inflight_prompt_tokens * (1 - hit) / (o->prof.prefill_tps * o->ttft_target_s);
    double decode_share = kvg_autoscale_load(o, 0, s->output_tps, o->itl_target_s);
    double react = backlog + (o->role == KVG_AUTOSCALE_PREFILL ? 0 : decode_share);
    const char *why = "forecast";
    if (s->starting > 0 && react > cur && react < 1.5 * cur) react = cur;
    double need = fmax(load, fc);
    if (react > need) {
        need = react;
        why = "backlog";
    }
    d->need = need;
    double target = need * (1 + o->headroom);
    hold_put(q, s->now, target);
    /* Young and coming replicas are worth 1 - penalty until their caches fill. */
    double pen =
        o->cold_cache_penalty > 0 && o->cold_cache_penalty < 0.9 ? o->cold_cache_penalty : 0;
    uint32_t old = s->ready > s->young ? s->ready - s->young : 0;
    uint32_t up = target > old ? old + kvg_autoscale_ceil((target - old) / (1 - pen))
                               : kvg_autoscale_ceil(target);
    int demand = s->arrival_rate > 0 || s->queued > 0 || s->waiting + s->running > 0;
    if (demand)
        q->idle_since = -1;
    else if (q->idle_since < 0)
        q->idle_since = s->now;
    uint32_t want = cur;
    if (up > cur) {
        want = up;
    } else if (cur > 0) {
        /* Down: the highest target of the hold window, and the forecast, must
         * fit in one fewer replica at down_util. */
        double peak = fmax(hold_max(q, s->now - o->down_hold_s), fc * (1 + o->headroom));
        double du = o->down_util > 0 && o->down_util <= 1 ? o->down_util : 0.8;
        if (peak <= (double)(cur - 1) * du + 1e-9 && up < cur) {
            want = cur - 1;
            why = "scale-down (hysteresis held)";
        }
    }
    if (o->min_replicas == 0 && !demand && q->idle_since >= 0 &&
        s->now - q->idle_since >= o->zero_idle_s) {
        want = 0;
        why = "idle: to zero";
    }
    if (want == 0 && (s->queued > 0 || s->arrival_rate > 0)) {
        want = up > 1 ? up : 1;
        why = "from zero: requests held in the gateway queue";
    }
    if (want < o->min_replicas) want = o->min_replicas;
    if (want > o->max_replicas) want = o->max_replicas;
    d->desired = want;
    snprintf(d->reason, sizeof d->reason,
             "%s: load %.2f (hit %.0f%%), forecast %.2f at +%.0f s, backlog %.2f, need %.2f "
             "(+%.0f%% headroom); ready %u (young %u), starting %u: %u -> %u",
             why, load, hit * 100, fc, d->horizon_s, backlog, need, o->headroom * 100, s->ready,
             s->young, s->starting, cur, want);
    return 0;
}

static const struct kvg_autoscale_planner_ops kvgate_ops = {"kvgate", kvgate_plan,
                                                            kvg_autoscale_planner_free_plain};

int kvg_autoscale_kvgate_new(struct kvg_autoscale_planner **out)
{
    struct kvp *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    q->base.ops = &kvgate_ops;
    q->idle_since = -1;
    kvg_autoscale_startup_init(&q->dflt);
    *out = &q->base;
    return 0;
}
