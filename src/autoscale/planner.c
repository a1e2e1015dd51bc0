/* The planner registry, shared helpers and the `static` planner (a fixed
 * count: what peak provisioning costs). */
#include "autoscale/planner.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

void kvg_autoscale_opts_default(struct kvg_autoscale_opts *o)
{
    memset(o, 0, sizeof *o);
    o->role = KVG_AUTOSCALE_AGGREGATED;
    snprintf(o->model, sizeof o->model, "default");
    o->min_replicas = 1;
    o->max_replicas = 16;
    o->ttft_target_s = 2.0;
    o->itl_target_s = 0.1;
    o->prof = (struct kvg_autoscale_profile){
        .prefill_tps = 10000, .decode_tps = 2000, .ttft_idle_s = 0.2, .itl_idle_s = 0.02};
    snprintf(o->queue_preset, sizeof o->queue_preset, "llm-d");
    o->queue_kv_target = 0.8;
    o->queue_waiting_target = 5;
    o->queue_tolerance = 0.1;
    o->queue_down_window_s = 300;
    o->queue_cooldown_s = 300;
    o->sla_predictor = KVG_AUTOSCALE_PRED_CONSTANT;
    o->headroom = 0.1;
    o->down_util = 0; /* the role's (planner_kvgate.c) */
    o->down_hold_s = 300;
    o->cold_cache_penalty = 0.15;
    o->young_s = 60;
    o->slo_goal = 0.99;
    o->zero_idle_s = 600;
    o->window_s = 300;
    o->burst_headroom = 0;
    o->burst_prior = 1.49;
    o->cold_share = 0.5;
}

uint32_t kvg_autoscale_ceil(double v)
{
    if (!(v > 0)) return 0;
    double c = ceil(v - 1e-9);
    return c > 1e6 ? 1000000u : (uint32_t)c;
}

uint32_t kvg_autoscale_clamp(const struct kvg_autoscale_opts *o, double v)
{
    uint32_t n = kvg_autoscale_ceil(v);
    if (n < o->min_replicas) n = o->min_replicas;
    if (n > o->max_replicas) n = o->max_replicas;
    return n;
}

double kvg_autoscale_decode_tps_at(const struct kvg_autoscale_profile *pr, double itl_s)
{
    if (!(pr->itl_per_seq_s > 0)) return pr->decode_tps;
    double c = (itl_s - pr->itl_idle_s) / pr->itl_per_seq_s; /* sequences at that ITL */
    if (c < 1) c = 1;
    return c / (itl_s > pr->itl_idle_s ? itl_s : pr->itl_idle_s);
}

double kvg_autoscale_load(const struct kvg_autoscale_opts *o, double in_tps, double out_tps,
                          double itl_s)
{
    double p = o->prof.prefill_tps > 0 ? in_tps / o->prof.prefill_tps : 0;
    double dt = kvg_autoscale_decode_tps_at(&o->prof, itl_s);
    double d = dt > 0 ? out_tps / dt : 0;
    switch (o->role) {
    case KVG_AUTOSCALE_PREFILL:
        return p;
    case KVG_AUTOSCALE_DECODE:
        return d;
    default:
        return p + d;
    }
}

static const struct kvg_autoscale_planner_ops static_ops;

/* Before the pool's first request has finished, with nothing in the
 * gateway's queue, no planner decides: its signals measured no load (a
 * gateway up before its traffic; live, a prompt's length is known at its
 * finish), and a window of zeros taken as a measurement would enter the
 * planners' histories (kvgate's trend, queue's windows) as demand that
 * then rose. What runs is held within min..max replicas, not a decision
 * (not acted, so the planner's interval starts at the first finish). A
 * queued request is planned on (scale from zero). `static` reads no
 * signal and is left alone. Returns 1 when held so. */
static int before_first_request(struct kvg_autoscale_planner *p,
                                const struct kvg_autoscale_signals *s,
                                struct kvg_autoscale_decision *d)
{
    if (!s->unseen || p->ops == &static_ops || s->queued > 0 || s->batch_queued > 0) return 0;
    d->desired = d->current;
    if (d->desired < p->o.min_replicas) d->desired = p->o.min_replicas;
    if (d->desired > p->o.max_replicas) d->desired = p->o.max_replicas;
    d->need = d->forecast = -1;
    snprintf(d->reason, sizeof d->reason, "held: no request finished yet");
    return 1;
}

int kvg_autoscale_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                       struct kvg_autoscale_decision *d)
{
    struct kvg_autoscale_decision tmp;
    if (!d) d = &tmp;
    memset(d, 0, sizeof *d);
    d->current = s->ready + s->starting;
    if (before_first_request(p, s, d)) return 0;
    /* What the window did not measure (< 0: no request finished in it) is
     * 0 to every planner, live and offline alike: none is assumed. */
    struct kvg_autoscale_signals k = *s;
    double *unk[] = {&k.input_tps, &k.output_tps, &k.isl, &k.osl, &k.cache_hit};
    for (size_t i = 0; i < sizeof unk / sizeof *unk; i++)
        if (!(*unk[i] >= 0)) *unk[i] = 0;
    int rc = p->ops->plan(p, &k, d);
    if (rc) return rc;
    /* ... but a 0 that stands for "not measured yet", or a window not yet
     * as long as its span (only the short requests have finished in it), is
     * no evidence of less load while requests arrive: no replica is removed
     * on it (a day's or a gateway's first ticks). */
    if (d->desired < d->current && s->arrival_rate > 0 &&
        (s->isl < 0 || s->osl < 0 || s->partial)) {
        d->desired = d->current;
        size_t n = strlen(d->reason);
        snprintf(d->reason + n, sizeof d->reason - n, "; held: %s",
                 s->partial ? "the window is not full yet" : "lengths not measured yet");
    }
    if (d->acted) {
        d->at = s->now;
        p->last = *d;
        p->has_last = 1;
    }
    return 0;
}

void kvg_autoscale_planner_free(struct kvg_autoscale_planner *p)
{
    if (p) p->ops->destroy(p);
}

/* ---- static */
static int static_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                       struct kvg_autoscale_decision *d)
{
    uint32_t n = p->o.static_replicas ? p->o.static_replicas : p->o.max_replicas;
    d->desired = n;
    d->need = d->forecast = -1;
    d->acted = !p->has_last;
    snprintf(d->reason, sizeof d->reason, "static: %u replicas, whatever the load", n);
    return 0;
}

void kvg_autoscale_planner_free_plain(struct kvg_autoscale_planner *p)
{
    free(p);
}

int kvg_autoscale_due(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                      double dflt_interval, double *next_at, struct kvg_autoscale_decision *d)
{
    return kvg_autoscale_due_every(p, s, p->o.interval_s > 0 ? p->o.interval_s : dflt_interval,
                                   next_at, d);
}

int kvg_autoscale_due_every(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                            double iv, double *next_at, struct kvg_autoscale_decision *d)
{
    /* Plans keep the grid of their first one, as the benchmark's exact
     * ticks do: a live tick that comes a few ms before the due time, or a
     * due time carried from a late tick, must not put the plan off by a
     * whole tick (15 s plans on 5 s ticks came 20 s apart now and then,
     * and the live plans drifted off the offline ones' phase). A tick
     * within 1% of the interval before the due time is on time (less than
     * any tick: the benchmark's exact ticks plan as before). */
    if (p->has_last && s->now < *next_at - iv / 100) {
        *d = p->last;
        d->acted = 0;
        return 0;
    }
    double next = p->has_last ? *next_at + iv : s->now + iv;
    /* After a stall of more than an interval, a new grid from now. */
    *next_at = next > s->now + iv / 100 ? next : s->now + iv;
    d->acted = 1;
    return 1;
}

static const struct kvg_autoscale_planner_ops static_ops = {"static", static_plan,
                                                            kvg_autoscale_planner_free_plain};

int kvg_autoscale_static_new(struct kvg_autoscale_planner **out)
{
    struct kvg_autoscale_planner *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->ops = &static_ops;
    *out = p;
    return 0;
}

static const struct {
    const char *name;
    int (*make)(struct kvg_autoscale_planner **out);
} g_planners[] = {
    {"static", kvg_autoscale_static_new},
    {"queue", kvg_autoscale_queue_new},
    {"sla", kvg_autoscale_sla_new},
    {"kvgate", kvg_autoscale_kvgate_new},
};

int kvg_autoscale_planner_new(const char *name, const struct kvg_autoscale_opts *o,
                              struct kvg_autoscale_planner **out)
{
    if (o->max_replicas < o->min_replicas || o->max_replicas == 0 || !(o->ttft_target_s > 0) ||
        !(o->itl_target_s > 0))
        return KVG_ECONFIG;
    if (!strcmp(name, "queue") && strcmp(o->queue_preset, "llm-d") &&
        strcmp(o->queue_preset, "waiting"))
        return KVG_ECONFIG;
    for (size_t i = 0; i < sizeof g_planners / sizeof g_planners[0]; i++) {
        if (strcmp(name, g_planners[i].name)) continue;
        struct kvg_autoscale_planner *p;
        int rc = g_planners[i].make(&p);
        if (rc) return rc;
        /* The constructor may have kept state behind p; the options are the caller's. */
        p->o = *o;
        *out = p;
        return 0;
    }
    return KVG_ENOTFOUND;
}

const char *kvg_autoscale_planner_names(void)
{
    return "static, queue, sla, kvgate";
}

const char *kvg_autoscale_role_name(enum kvg_autoscale_role r)
{
    switch (r) {
    case KVG_AUTOSCALE_AGGREGATED:
        return "aggregated";
    case KVG_AUTOSCALE_PREFILL:
        return "prefill";
    case KVG_AUTOSCALE_DECODE:
        return "decode";
    }
    return "?";
}

int kvg_autoscale_role_parse(const char *s)
{
    if (!strcmp(s, "aggregated") || !strcmp(s, "agg") || !strcmp(s, "regular"))
        return KVG_AUTOSCALE_AGGREGATED;
    if (!strcmp(s, "prefill")) return KVG_AUTOSCALE_PREFILL;
    if (!strcmp(s, "decode")) return KVG_AUTOSCALE_DECODE;
    return -1;
}
