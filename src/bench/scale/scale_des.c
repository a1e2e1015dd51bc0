/* The autoscaling benchmark's event loop (scale.h): arrivals, engine steps,
 * replicas becoming ready, and planner ticks in virtual time, on one
 * aggregated pool (what it shares with the PD day: scale_day.c, and its
 * traffic classes: scale_class.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale_int.h"
#include "bench/stats.h"

static int make_ready(struct run *R, int k, uint64_t seed, double t)
{
    return kvg__scale_reps_ready(&R->pool, k, &R->o->profile, seed, t);
}

/* A request that will not be served: counted as missed. */
static void fail(struct run *R, struct rq *q)
{
    if (q->state == Q_ENGINE && q->rep >= 0) {
        struct rep *p = &R->pool.rep[q->rep];
        if (p->e) kvg_sim_abort(p->e, (uint64_t)(q - R->rq));
        if (p->inflight) p->inflight--;
    }
    /* Given up (timeout, a drain cut, the day's end): the client's end, not
     * the worker's fault (its circuit untouched). */
    kvg__scale_route_release(&R->rt, &q->pick, KVG_OUT_CLIENT_GONE, q->r.arrival);
    kvg__scale_day_fail(&R->d, &q->r, q->first, KVG_AUTOSCALE_MISS_FAILED);
    q->state = Q_FAILED;
    R->out->failed++;
}

/* Request id onto ready replica best, picked by pick (its pick from here). */
static int route_on(struct run *R, uint64_t id, int best, const struct kvg_pick *pick, double t)
{
    struct rq *q = &R->rq[id];
    struct rep *p = &R->pool.rep[best];
    q->pick = *pick;
    p->groups |= 1ull << q->r.group;
    R->group_routed[q->r.group]++;
    int rc = kvg__scale_day_submit(&R->d, p->e, id, &q->r, 0, 0, 0);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        fail(R, q);
        return 0;
    }
    q->state = Q_ENGINE;
    q->rep = best;
    p->inflight++;
    if (!p->stepping) kvg__scale_rep_step(p, t);
    return 0;
}

static double share_of(void *ud, int k, double t)
{
    const struct run *R = ud;
    return kvg__scale_share(R, &R->pool.rep[k], t);
}

int kvg__scale_sync(struct run *R, double t)
{
    return kvg__scale_route_sync(&R->rt, &R->pool, share_of, R, t);
}

/* Sends request id where the gateway's policy puts it among the replicas
 * ok admits (NULL: all routable). */
static int route_by(struct run *R, uint64_t id, double t, int (*ok)(void *ud, int k))
{
    struct kvg_pick pick;
    int k, rc = kvg__scale_sync(R, t);
    if (!rc) rc = kvg__scale_route_pick(&R->rt, &R->d.wl, &R->rq[id].r, t, ok, R, &pick, &k);
    return rc ? rc : route_on(R, id, k, &pick, t);
}

/* Sends request id to a ready replica (the caller knows one exists). */
static int route(struct run *R, uint64_t id, double t)
{
    return route_by(R, id, t, NULL);
}

static int has_ready(const struct run *R)
{
    for (size_t i = 0; i < R->pool.nact; i++)
        if (R->pool.rep[R->pool.act[i]].state == R_READY && !R->pool.rep[R->pool.act[i]].warming)
            return 1;
    return 0;
}

/* The gateway's queue to ready replicas: interactive first, then batch
 * into the troughs. */
static int gq_drain(struct run *R, double t)
{
    while (R->gq_head < R->gq_tail && has_ready(R)) {
        uint64_t id = R->gq[R->gq_head++];
        if (R->rq[id].state != Q_GATEWAY) continue;
        int rc = route(R, id, t);
        if (rc) return rc;
    }
    if (R->gq_head == R->gq_tail) R->gq_head = R->gq_tail = 0;
    return R->cls.on ? kvg__scale_cls_drain(&R->cls, t) : 0;
}

static size_t gq_len(const struct run *R)
{
    size_t n = 0;
    for (size_t i = R->gq_head; i < R->gq_tail; i++) n += R->rq[R->gq[i]].state == Q_GATEWAY;
    return n;
}

/* The aggregated day's side of the traffic classes (scale_class.c). */
static int cls_waiting(void *day, uint64_t id)
{
    const struct run *R = day;
    return R->rq[id].state == Q_GATEWAY;
}

static int cls_interactive_waits(void *day)
{
    return gq_len(day) > 0;
}

/* The gateway's batch rule on one pool (gateway/admission.h): a routable
 * replica whose last scrape shows no prompt waiting (batch_max_waiting 1;
 * not scraped yet: unknown, never busy) and with fewer running sequences
 * than the profile's seqs (batch_max_kv's analogue: decode room within the
 * ITL target). As serve, it filters the candidates; the policy picks. */
static int in_trough(void *day, int k)
{
    const struct run *R = day;
    const struct rep *p = &R->pool.rep[k];
    if (p->state != R_READY || p->warming) return 0;
    if (p->scraped_ok && p->scraped.num_waiting >= 1) return 0;
    return (double)p->inflight < R->cls.seqs;
}

static int cls_trough(void *day, uint64_t id)
{
    const struct run *R = day;
    (void)id;
    for (size_t i = 0; i < R->pool.nact; i++)
        if (in_trough(day, R->pool.act[i])) return R->pool.act[i];
    return -1;
}

static int cls_dispatch(void *day, uint64_t id, int k, double t)
{
    struct run *R = day;
    (void)k; /* one in a trough exists: the policy picks among them */
    R->rq[id].t_disp = t;
    return route_by(R, id, t, in_trough);
}

static void cls_reject(void *day, uint64_t id)
{
    struct run *R = day;
    fail(R, &R->rq[id]);
}

static const struct scale_cls_ops g_cls_ops = {cls_waiting, cls_interactive_waits, cls_trough,
                                               cls_dispatch, cls_reject};

static int arrive(struct run *R)
{
    if (R->nrq == R->caprq) {
        size_t c = R->caprq ? R->caprq * 2 : 65536;
        struct rq *v = realloc(R->rq, c * sizeof *v);
        if (!v) return -ENOMEM;
        R->rq = v;
        R->caprq = c;
    }
    uint64_t id = R->nrq++;
    struct rq *q = &R->rq[id];
    memset(q, 0, sizeof *q);
    kvg__scale_day_arrive(&R->d, &q->r);
    q->rep = -1;
    q->state = Q_GATEWAY;
    if (kvg__scale_cls_draw(&R->cls)) {
        q->batch = 1;
        return kvg__scale_cls_enqueue(&R->cls, id, &q->r, q->r.arrival);
    }
    if (!has_ready(R)) return kvg__scale_ids_push(&R->gq, &R->gq_tail, &R->gq_cap, id);
    return route(R, id, q->r.arrival);
}

static void finish(struct run *R, struct rq *q, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    q->state = Q_DONE;
    q->t_done = t;
    double itl = kvg__scale_itl(q->ntok, q->t_first, q->t_last);
    /* Batch waits in the gateway by design: its TTFT counts from its dispatch. */
    double ttft = q->t_first - (q->batch ? q->t_disp : q->r.arrival);
    unsigned miss =
        kvg_autoscale_obs_judge(0, ttft, itl, -1, o->aopts.ttft_target_s, o->aopts.itl_target_s);
    int ok = !miss;
    kvg__scale_day_done(&R->d, &q->r, q->ntok, t, itl, kvg__scale_cls_judged(q->batch, miss));
    R->out->met += ok;
    q->ok = (uint8_t)ok;
    double h = q->r.arrival / o->day_s * 24;
    if (h >= o->ramp_from_h && h < o->ramp_to_h) R->out->ramp_met += ok;
}

static int step_end(struct run *R, int k, double t)
{
    struct rep *p = &R->pool.rep[k];
    int warmed = 0;
    for (size_t i = 0; i < p->st.n_updates; i++) {
        const struct kvg_sim_update *u = &p->st.updates[i];
        if (u->id & SCALE_PREWARM_ID) {
            if (u->flags & KVG_SIM_UP_FINISHED) {
                int rc = kvg__scale_prewarm_done(R, k, t);
                if (rc) return rc;
                if (!p->warming) warmed = 1;
            }
            continue;
        }
        struct rq *q = &R->rq[u->id];
        if (q->state != Q_ENGINE) continue;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            if (!q->first) {
                q->first = 1;
                q->t_first = t;
                kvg__scale_route_first(&R->rt, &q->pick, t);
                struct scale_req seen = q->r; /* what the gateway observes: from dispatch */
                if (q->batch) seen.arrival = q->t_disp;
                double ttft = kvg__scale_day_first(&R->d, &seen, t);
                kvg__scale_day_cached(&R->d, &q->r, u->cached_tokens);
                kvg__scale_recovery_note(R, p, t, u->cached_tokens, q->r.prompt_len, ttft);
                double h = q->r.arrival / R->o->day_s * 24;
                if (h >= R->o->ramp_from_h && h < R->o->ramp_to_h)
                    kvg_bench_samples_add(&R->ramp_ttft, ttft);
            }
            q->t_last = t;
            q->ntok++;
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            finish(R, q, t);
            kvg__scale_route_release(&R->rt, &q->pick, KVG_OUT_OK, t);
            if (p->inflight) p->inflight--;
        }
    }
    p->st.n_updates = 0;
    /* Warm: what waited in the gateway for a routable replica goes now;
     * batch into whatever trough this step left. */
    int rc = warmed ? gq_drain(R, t) : R->cls.on ? kvg__scale_cls_drain(&R->cls, t) : 0;
    if (rc) return rc;
    if (kvg_sim_idle(p->e)) {
        p->stepping = 0;
        if (p->state == R_DRAINING && p->inflight == 0) kvg__scale_reps_retire(&R->pool, k, t);
        return 0;
    }
    kvg__scale_rep_step(p, t);
    return 0;
}

/* Requests past the timeout without a first token, and drains past theirs. */
static void expire(struct run *R, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    for (; R->sweep < R->nrq; R->sweep++) {
        struct rq *q = &R->rq[R->sweep];
        if (q->state == Q_DONE || q->state == Q_FAILED || q->first) continue;
        if (q->batch) continue; /* its deadline's: kvg__scale_cls_expire */
        if (q->r.arrival + o->timeout_s > t) break;
        fail(R, q);
    }
    for (size_t i = 0; i < R->pool.nact;) {
        int k = R->pool.act[i];
        struct rep *p = &R->pool.rep[k];
        if (p->state == R_DRAINING && t >= p->drain_at + o->drain_s) {
            /* Bounded drain: what is still running is cut. */
            for (uint64_t id = 0; p->inflight && id < R->nrq; id++) {
                struct rq *q = &R->rq[id];
                if (q->state == Q_ENGINE && q->rep == k) fail(R, q);
            }
            kvg__scale_reps_retire(&R->pool, k, t);
            continue;
        }
        i++;
    }
}

static void signals(struct run *R, double t, double window, struct kvg_autoscale_signals *s,
                    double *eta)
{
    kvg__scale_reps_signals(&R->pool, t, R->o->young_s, s, eta);
    s->queued = (double)gq_len(R);
    s->inflight_prompt_tokens = R->d.inflight_prompt;
    kvg__scale_cls_signals(&R->cls, t, s);
    kvg__scale_day_signals(&R->d, window, s);
}

static void timeline(struct run *R, double t, uint32_t desired)
{
    struct kvg_bench_scale_result *r = R->out;
    size_t i = 0;
    while (kvg__scale_day_point(&R->d, t, r->n, r->t_h, r->rate, &i)) {
        uint32_t ready, starting;
        kvg__scale_reps_count(&R->pool, &ready, &starting);
        r->desired[i] = desired;
        r->ready[i] = ready;
        r->starting[i] = starting;
    }
}

static int tick(struct run *R, double t)
{
    expire(R, t);
    kvg__scale_cls_expire(&R->cls, t);
    /* The tick's bucket closes before the planner reads the window, as in
     * serve (autoscale_setup.c): it reads the tick just ended. */
    kvg_autoscale_obs_next(R->d.ob);
    double window = kvg__scale_day_window(&R->d, R->pl);
    double eta[KVG_BENCH_SCALE_MAX_REPLICAS];
    struct kvg_autoscale_signals s;
    signals(R, t, window, &s, eta);
    struct kvg_autoscale_decision d;
    int rc = kvg_autoscale_plan(R->pl, &s, &d);
    if (rc) return rc;
    if (d.acted && R->have_desired && d.desired != R->last_desired) R->out->scale_events++;
    if (d.acted) snprintf(R->out->last_reason, sizeof R->out->last_reason, "%s", d.reason);
    /* With the window's measured signals, as GET /autoscale shows them live
     * (-1: not measured), so a live run's decisions can be set beside these
     * (bench/autoscale/agree_replay.py). */
    if (d.acted && R->o->trace)
        fprintf(stderr,
                "%s %.0f s: %s [rate %.3f isl %.0f osl %.1f hit %.3f ttft_p90 %.3f itl_p90 %.4f "
                "miss %.4f]\n",
                R->o->planner, t, d.reason, s.arrival_rate, s.isl, s.osl, s.cache_hit, s.ttft_p90,
                s.itl_p90, s.slo_miss);
    R->last_desired = d.desired;
    R->have_desired = 1;
    if ((rc = kvg__scale_reps_actuate(&R->pool, R->o, &R->d.su, &R->d.rng, d.desired, t)))
        return rc;
    timeline(R, t, d.desired);
    return 0;
}

static int setup(struct run *R, char *err, size_t errlen)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_result *out = R->out;
    int rc = kvg__scale_day_init(&R->d, o, err, errlen);
    if (rc) return rc;
    if ((rc = kvg__scale_route_new(&R->rt, o, KVG_AUTOSCALE_AGGREGATED))) return rc;
    struct kvg_autoscale_opts a = o->aopts;
    kvg__scale_derive_profile(o, o->knee_rps, &a.prof);
    /* The llm-d recipe calibrates V_P as the peak prefill throughput. */
    if (!(a.queue_peak_prefill_tps > 0)) {
        struct kvg_autoscale_profile raw;
        kvg__scale_derive_profile(o, 0, &raw);
        a.queue_peak_prefill_tps = raw.prefill_tps;
    }
    snprintf(a.model, sizeof a.model, "%s", o->startup_model);
    a.cold_share = o->cold_share;
    a.fetch_share = o->fetch_share;
    a.startup = &R->d.su;
    uint32_t peak = kvg_bench_scale_static_peak(o);
    out->static_peak = peak;
    out->load_per_rps = kvg__scale_load_per_rps(o);
    out->knee_rps = o->knee_rps;
    if (!a.static_replicas) a.static_replicas = peak;
    if (a.max_replicas > KVG_BENCH_SCALE_MAX_REPLICAS)
        a.max_replicas = KVG_BENCH_SCALE_MAX_REPLICAS;
    /* "kvgate-noprewarm": kvgate's planner, new replicas not prewarmed. */
    R->prewarmed = o->prewarm && !strcmp(o->planner, "kvgate");
    rc = kvg__scale_planner_new(o->planner, &a, &R->pl, err, errlen);
    if (rc == KVG_ENOTFOUND) out->status = KVG_ENOTFOUND;
    if (rc) return rc == KVG_ENOTFOUND ? 1 : rc;
    /* The sequences a replica runs at its measured knee if each took its
     * whole ITL budget (Little's law: the knee's requests/s times an idle
     * prefill plus the mean output at the ITL target). Not the profile's
     * decode_tps: scaled to the knee with the prefill's share, it would let
     * ~100 sequences join a replica, past the ITL target. */
    kvg__scale_cls_init(&R->cls, o, &g_cls_ops, R,
                        o->knee_rps * (a.prof.ttft_idle_s + o->osl * a.itl_target_s));
    out->n = o->timeline_points ? o->timeline_points : 288;
    double **tl[] = {&out->t_h,      &out->rate,    &out->desired, &out->ready,
                     &out->starting, &out->arrived, &out->missed};
    if (kvg__scale_timeline_alloc(out->n, tl, sizeof tl / sizeof tl[0])) return -ENOMEM;
    kvg_bench_samples_init(&R->ramp_ttft);
    kvg_bench_samples_init(&R->young_ttft);
    /* The day starts with the pool its first hour needs (static: its count),
     * ready, with empty caches. */
    uint32_t n0 = !strcmp(o->planner, "static")
                      ? a.static_replicas
                      : kvg__scale_first_replicas(o, &R->d.wl, a.headroom);
    if ((rc = kvg__scale_reps_first(&R->pool, o, &R->d.su, &R->d.rng, n0, a.min_replicas)))
        return rc;
    for (size_t k = 0; k < R->pool.nrep; k++) {
        if ((rc = make_ready(R, (int)k, o->seed * 1000003ull + k + 1, 0))) return rc;
        if ((rc = kvg__scale_prewarm_start(R, (int)k, 0))) return rc;
    }
    return 0;
}

static int loop(struct run *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    double next_tick = o->tick_s, next_scrape = kvg__scale_scrape_next(o, 0);
    for (;;) {
        double ta = R->d.have_next ? R->d.next.arrival : INFINITY;
        double tt = next_tick <= o->day_s ? next_tick : INFINITY;
        double te = INFINITY, tr = INFINITY;
        int ke = -1, kr = -1;
        kvg__scale_reps_next(&R->pool, o->day_s, &te, &ke, &tr, &kr);
        int rc;
        if (next_scrape <= o->day_s && next_scrape <= tt && next_scrape <= ta &&
            next_scrape <= te && next_scrape <= tr) {
            kvg__scale_reps_scrape(&R->pool); /* only the gauges' copies change */
            kvg__scale_route_scrape(&R->rt, &R->pool, next_scrape);
            next_scrape += o->scrape_s;
            continue;
        }
        if (ke >= 0 && te <= tr && te <= tt && te <= ta) {
            rc = step_end(R, ke, te);
        } else if (kr >= 0 && tr <= tt && tr <= ta) {
            rc = make_ready(R, kr, o->seed * 1000003ull + (uint64_t)kr + 1, tr);
            if (!rc) rc = kvg__scale_prewarm_start(R, kr, tr);
            if (!rc && R->pool.rep[kr].warming) kvg__scale_rep_step(&R->pool.rep[kr], tr);
            if (!rc) rc = gq_drain(R, tr);
        } else if (tt < INFINITY && tt <= ta) {
            rc = tick(R, tt);
            next_tick += o->tick_s;
        } else if (ta < INFINITY) {
            rc = arrive(R);
        } else {
            break;
        }
        if (rc) return rc;
    }
    /* The day is over: what still waits in the gateway is not served
     * (batch in its queue too: counted dropped, never answered). */
    for (size_t i = 0; i < R->nrq; i++)
        if (R->rq[i].state == Q_GATEWAY) fail(R, &R->rq[i]);
    return 0;
}

static void summarize(struct run *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_result *out = R->out;
    out->requests = R->nrq;
    for (size_t i = 0; i < R->nrq; i++) {
        const struct rq *q = &R->rq[i];
        double h = q->r.arrival / o->day_s * 24;
        int ramp = h >= o->ramp_from_h && h < o->ramp_to_h;
        out->ramp_requests += ramp;
        size_t pt = (size_t)(q->r.arrival / o->day_s * (double)out->n);
        if (pt >= out->n) pt = out->n - 1;
        out->arrived[pt]++;
        out->missed[pt] += !q->ok;
        kvg__scale_cls_count(&R->cls, &out->cls, q->batch, q->state == Q_DONE, q->ok, q->r.arrival,
                             q->t_done);
        if (q->state == Q_FAILED && !q->first) {
            /* Given up without a token: its TTFT is at least the timeout. */
            kvg_bench_samples_add(&R->d.all_ttft, o->timeout_s);
            if (ramp) kvg_bench_samples_add(&R->ramp_ttft, o->timeout_s);
        }
    }
    double parked = 0, rh = kvg__scale_reps_seconds(&R->pool, o->day_s, &parked);
    uint32_t mx = 0;
    out->parked_hours = parked / 3600;
    out->woken = R->pool.woken;
    out->added = R->pool.added;
    out->removed = R->pool.removed;
    out->cancelled = R->pool.cancelled;
    for (size_t i = 0; i < out->n; i++)
        mx = out->ready[i] + out->starting[i] > mx ? (uint32_t)(out->ready[i] + out->starting[i])
                                                   : mx;
    out->max_replicas = mx;
    out->replica_hours = rh / 3600;
    out->gpu_hours = out->replica_hours * (o->gpus_per_replica ? o->gpus_per_replica : 1);
    out->mean_replicas = rh / o->day_s;
    out->slo_attainment = out->requests ? (double)out->met / (double)out->requests : 0;
    out->ramp_slo_attainment =
        out->ramp_requests ? (double)out->ramp_met / (double)out->ramp_requests : 0;
    kvg__scale_day_pcts(&R->d, &out->ttft_p50_s, &out->ttft_p90_s, &out->ttft_p99_s,
                        &out->itl_p90_s, &out->cache_hit);
    out->ramp_ttft_p90_s = kvg_bench_samples_pct(&R->ramp_ttft, 90);
    kvg__scale_recovery_summary(R);
    kvg__scale_cls_summary(&R->cls, &out->cls);
}

static void teardown(struct run *R)
{
    for (size_t i = 0; i < R->nrq; i++) /* the day ended with these running */
        kvg__scale_route_release(&R->rt, &R->rq[i].pick, KVG_OUT_CLIENT_GONE, R->o->day_s);
    kvg__scale_route_free(&R->rt);
    kvg__scale_reps_free(&R->pool);
    free(R->rq);
    free(R->gq);
    kvg__scale_cls_free(&R->cls);
    kvg__scale_day_free(&R->d);
    kvg_bench_samples_free(&R->ramp_ttft);
    kvg_bench_samples_free(&R->young_ttft);
    kvg_autoscale_planner_free(R->pl);
}

static int run_one(const struct kvg_bench_scale_opts *o, struct kvg_bench_scale_result *out,
                   char *err, size_t errlen);

int kvg_bench_scale_run(const struct kvg_bench_scale_opts *o, struct kvg_bench_scale_result *out,
                        char *err, size_t errlen)
{
    if (o->knee_rps > 0) return run_one(o, out, err, errlen);
    struct kvg_bench_scale_opts c = *o;
    int rc = kvg_bench_scale_calibrate(o, &c.knee_rps);
    if (rc) {
        memset(out, 0, sizeof *out);
        return kvg_err_set(err, errlen, rc, "calibration: %s", kvg_strerror(rc));
    }
    return run_one(&c, out, err, errlen);
}

static int run_one(const struct kvg_bench_scale_opts *o, struct kvg_bench_scale_result *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->planner, sizeof out->planner, "%s", o->planner);
    if (!(o->tick_s > 0) || !(o->day_s > 0) || !(o->scrape_s > 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "tick, scrape and day must be > 0");
    struct run *R = calloc(1, sizeof *R);
    if (!R) return -ENOMEM;
    R->o = o;
    R->out = out;
    uint64_t w0 = kvg_now_ns();
    int rc = setup(R, err, errlen);
    if (rc == 1) {
        teardown(R);
        free(R);
        return 0;
    }
    if (!rc) rc = loop(R);
    if (!rc)
        summarize(R);
    else if (!err[0])
        snprintf(err, errlen, "simulation: %s", kvg_strerror(rc));
    out->wall_s = (double)(kvg_now_ns() - w0) / 1e9;
    teardown(R);
    free(R);
    return rc;
}

void kvg_bench_scale_result_free(struct kvg_bench_scale_result *r)
{
    free(r->t_h);
    free(r->rate);
    free(r->desired);
    free(r->ready);
    free(r->starting);
    free(r->arrived);
    free(r->missed);
    r->t_h = r->rate = r->desired = r->ready = r->starting = r->arrived = r->missed = NULL;
}
