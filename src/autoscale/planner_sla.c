/* `sla`: Dynamo's SLA planner (the classic throughput path). Every
 * adjustment interval (180 s):
 *   1. observe the interval's request rate, ISL, OSL, TTFT and ITL (an
 *      interval without traffic is skipped, the count kept);
 *   2. correction factors: p_corr = observed TTFT / the profile's idle TTFT,
 *      d_corr = observed ITL / the profile's ITL at the observed concurrency;
 *   3. predict the next interval's rate, ISL and OSL (constant, moving
 *      average or seasonal-trend);
 *   4. prefill: predicted input tok/s x min(1, p_corr) over the profiled
 *      prefill throughput; decode: predicted output tok/s over the profiled
 *      decode throughput at ITL target / d_corr;
 *   5. clamp to [min, max] and set it, whatever is still starting (Dynamo
 *      scales non-blocking).
 * An aggregated pool (Dynamo's classic planner is disaggregated only) adds
 * the two shares, since one replica's time is split between them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autoscale/planner.h"

struct sla {
    struct kvg_autoscale_planner base;
    struct kvg_autoscale_pred rate, isl, osl;
    int init;
    double next_at;
};

static int sla_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                    struct kvg_autoscale_decision *d)
{
    struct sla *q = (struct sla *)p;
    const struct kvg_autoscale_opts *o = &p->o;
    if (!q->init) {
        kvg_autoscale_pred_init(&q->rate, o->sla_predictor, o->sla_period);
        kvg_autoscale_pred_init(&q->isl, o->sla_predictor, o->sla_period);
        kvg_autoscale_pred_init(&q->osl, o->sla_predictor, o->sla_period);
        q->init = 1;
    }
    uint32_t cur = s->ready + s->starting;
    double interval = o->interval_s > 0 ? o->interval_s : 180;
    if (!kvg_autoscale_due(p, s, interval, &q->next_at, d)) return 0;
    d->horizon_s = interval;
    if (!(s->arrival_rate > 0) || !(s->isl > 0)) {
        /* No traffic: Dynamo skips the interval. */
        d->desired = p->has_last ? p->last.desired : kvg_autoscale_clamp(o, cur);
        d->need = d->forecast = -1;
        snprintf(d->reason, sizeof d->reason, "no traffic this interval: keep %u", d->desired);
        return 0;
    }
    kvg_autoscale_pred_observe(&q->rate, s->arrival_rate);
    kvg_autoscale_pred_observe(&q->isl, s->isl);
    kvg_autoscale_pred_observe(&q->osl, s->osl > 0 ? s->osl : 1);
    double rate = kvg_autoscale_pred_forecast(&q->rate, 1);
    double isl = kvg_autoscale_pred_forecast(&q->isl, 1);
    double osl = kvg_autoscale_pred_forecast(&q->osl, 1);
    double p_corr = 1, d_corr = 1;
    if (s->ttft_mean > 0 && o->prof.ttft_idle_s > 0) p_corr = s->ttft_mean / o->prof.ttft_idle_s;
    if (s->itl_mean > 0 && s->ready > 0) {
        double conc = s->running / s->ready;
        double expect = o->prof.itl_idle_s + o->prof.itl_per_seq_s * conc;
        if (expect > 0) d_corr = s->itl_mean / expect;
    }
    double itl = d_corr > 0 ? o->itl_target_s / d_corr : o->itl_target_s;
    double in_tps = rate * isl * fmin(1.0, p_corr), out_tps = rate * osl;
    double need = kvg_autoscale_load(o, in_tps, out_tps, itl);
    d->need = d->forecast = need;
    d->desired = kvg_autoscale_clamp(o, need);
    if (d->desired < 1 && o->min_replicas < 1) d->desired = 1; /* Dynamo: min_endpoint >= 1 */
    snprintf(d->reason, sizeof d->reason,
             "%s: next %.2f req/s x ISL %.0f / OSL %.0f, p_corr %.2f, d_corr %.2f -> %.2f "
             "replicas' worth: %u -> %u",
             kvg_autoscale_pred_name(o->sla_predictor), rate, isl, osl, p_corr, d_corr, need, cur,
             d->desired);
    return 0;
}

static const struct kvg_autoscale_planner_ops sla_ops = {"sla", sla_plan,
                                                         kvg_autoscale_planner_free_plain};

int kvg_autoscale_sla_new(struct kvg_autoscale_planner **out)
{
    struct sla *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    q->base.ops = &sla_ops;
    *out = &q->base;
    return 0;
}
