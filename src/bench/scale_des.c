/* The autoscaling benchmark's event loop (scale.h): arrivals, engine steps,
 * replicas becoming ready, and planner ticks in virtual time. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale_int.h"
#include "bench/stats.h"

void scale_lat_put(struct lat_ring *L, double t, double v)
{
    size_t cap = sizeof L->t / sizeof L->t[0];
    size_t i = (L->head + L->n) % cap;
    if (L->n == cap)
        L->head = (L->head + 1) % cap;
    else
        L->n++;
    L->t[i] = t;
    L->v[i] = v;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void scale_lat_window(const struct lat_ring *L, double *scratch, double since, double *mean,
                      double *p90)
{
    size_t cap = sizeof L->t / sizeof L->t[0], k = 0;
    double s = 0;
    for (size_t j = L->n; j-- > 0;) {
        size_t i = (L->head + j) % cap;
        if (L->t[i] < since) break;
        scratch[k++] = L->v[i];
        s += L->v[i];
    }
    if (!k) {
        *mean = *p90 = -1;
        return;
    }
    qsort(scratch, k, sizeof *scratch, cmp_d);
    *mean = s / (double)k;
    *p90 = scratch[(size_t)ceil(0.9 * (double)k) - 1];
}

static struct bucket *cur_bucket(struct run *R)
{
    return scale_obs_cur(&R->ob);
}

static int add_rep(struct run *R, double t)
{
    return scale_reps_add(&R->pool, R->o, &R->su, &R->rng, t);
}

static int make_ready(struct run *R, int k, uint64_t seed)
{
    return scale_reps_ready(&R->pool, k, &R->o->profile, seed);
}

static void gone(struct run *R, int k, double t)
{
    scale_reps_gone(&R->pool, k, t);
}

/* A request that will not be served: counted as missed. */
static void fail(struct run *R, struct rq *q)
{
    if (!q->first) R->inflight_prompt -= q->r.prompt_len;
    if (q->state == Q_ENGINE && q->rep >= 0) {
        struct rep *p = &R->pool.rep[q->rep];
        if (p->e) kvg_sim_abort(p->e, (uint64_t)(q - R->rq));
        if (p->inflight) p->inflight--;
    }
    q->state = Q_FAILED;
    R->out->failed++;
    cur_bucket(R)->missed++;
    cur_bucket(R)->finished++;
}

static int start_step(struct rep *p, double t)
{
    kvg_sim_step(p->e, t, &p->st);
    p->stepping = 1;
    p->busy_until = t + p->st.duration;
    return 0;
}

/* Sends request id to a ready replica (the caller knows one exists). */
static int route(struct run *R, uint64_t id, double t)
{
    struct rq *q = &R->rq[id];
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < R->pool.nact; i++) {
        struct rep *p = &R->pool.rep[R->pool.act[i]];
        if (p->state != R_READY || p->warming) continue;
        sum += p->inflight;
        n++;
    }
    double bound = 1.5 * (n ? sum / (double)n : 0) + 4;
    int best = -1, any = -1;
    double best_l = 0, any_l = 0;
    uint64_t bit = 1ull << q->r.group;
    for (size_t i = 0; i < R->pool.nact; i++) {
        int k = R->pool.act[i];
        struct rep *p = &R->pool.rep[k];
        if (p->state != R_READY || p->warming) continue;
        /* Slow start: a prewarmed replica looks busier while its share ramps. */
        double l = (double)p->inflight / scale_share(R, p, t);
        if (any < 0 || l < any_l) any = k, any_l = l;
        if ((p->groups & bit) && l <= bound && (best < 0 || l < best_l)) best = k, best_l = l;
    }
    if (best < 0) best = any;
    if (best < 0) return KVG_ENOWORKER;
    struct rep *p = &R->pool.rep[best];
    p->groups |= bit;
    R->group_routed[q->r.group]++;
    scale_wl_prompt(&R->wl, &q->r, R->prompt);
    struct kvg_sim_request sr = {.id = id,
                                 .prompt = R->prompt,
                                 .prompt_len = q->r.prompt_len,
                                 .max_tokens = q->r.max_tokens,
                                 .ignore_eos = 1,
                                 .arrival = q->r.arrival};
    int rc = kvg_sim_submit(p->e, &sr);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        fail(R, q);
        return 0;
    }
    q->state = Q_ENGINE;
    q->rep = best;
    p->inflight++;
    if (!p->stepping) start_step(p, t);
    return 0;
}

static int has_ready(const struct run *R)
{
    for (size_t i = 0; i < R->pool.nact; i++)
        if (R->pool.rep[R->pool.act[i]].state == R_READY && !R->pool.rep[R->pool.act[i]].warming)
            return 1;
    return 0;
}

static int gq_push(struct run *R, uint64_t id)
{
    if (R->gq_tail == R->gq_cap) {
        size_t c = R->gq_cap ? R->gq_cap * 2 : 1024;
        uint64_t *v = realloc(R->gq, c * sizeof *v);
        if (!v) return -ENOMEM;
        R->gq = v;
        R->gq_cap = c;
    }
    R->gq[R->gq_tail++] = id;
    return 0;
}

static int gq_drain(struct run *R, double t)
{
    while (R->gq_head < R->gq_tail && has_ready(R)) {
        uint64_t id = R->gq[R->gq_head++];
        if (R->rq[id].state != Q_GATEWAY) continue;
        int rc = route(R, id, t);
        if (rc) return rc;
    }
    if (R->gq_head == R->gq_tail) R->gq_head = R->gq_tail = 0;
    return 0;
}

static size_t gq_len(const struct run *R)
{
    size_t n = 0;
    for (size_t i = R->gq_head; i < R->gq_tail; i++) n += R->rq[R->gq[i]].state == Q_GATEWAY;
    return n;
}

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
    q->r = R->next;
    q->rep = -1;
    q->state = Q_GATEWAY;
    double t = q->r.arrival;
    struct bucket *b = cur_bucket(R);
    b->arrivals++;
    b->prompt_tokens += q->r.prompt_len;
    b->max_tokens += q->r.max_tokens;
    R->tl_arrivals++;
    R->inflight_prompt += q->r.prompt_len;
    R->have_next = scale_wl_next(&R->wl, &R->next) == 0;
    if (!has_ready(R)) return gq_push(R, id);
    return route(R, id, t);
}

static void finish(struct run *R, struct rq *q, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    q->state = Q_DONE;
    double itl = q->ntok > 1 ? (q->t_last - q->t_first) / (q->ntok - 1) : 0;
    double ttft = q->t_first - q->r.arrival;
    struct bucket *b = cur_bucket(R);
    b->finished++;
    b->itl_sum += itl;
    scale_lat_put(R->ob.itl, t, itl);
    kvg_bench_samples_add(&R->all_itl, itl);
    int ok = ttft <= o->aopts.ttft_target_s && itl <= o->aopts.itl_target_s;
    R->out->met += ok;
    q->ok = (uint8_t)ok;
    b->missed += !ok;
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
                scale_prewarm_done(R, k, t);
                if (!p->warming) warmed = 1;
            }
            continue;
        }
        struct rq *q = &R->rq[u->id];
        if (q->state != Q_ENGINE) continue;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            struct bucket *b = cur_bucket(R);
            b->out_tokens++;
            if (!q->first) {
                q->first = 1;
                q->t_first = t;
                R->inflight_prompt -= q->r.prompt_len;
                double ttft = t - q->r.arrival;
                b->firsts++;
                b->ttft_sum += ttft;
                b->cached += u->cached_tokens;
                b->first_prompt += q->r.prompt_len;
                R->hit_cached += u->cached_tokens;
                R->hit_prompt += q->r.prompt_len;
                scale_lat_put(R->ob.ttft, t, ttft);
                scale_recovery_note(R, p, t, u->cached_tokens, q->r.prompt_len, ttft);
                kvg_bench_samples_add(&R->all_ttft, ttft);
                double h = q->r.arrival / R->o->day_s * 24;
                if (h >= R->o->ramp_from_h && h < R->o->ramp_to_h)
                    kvg_bench_samples_add(&R->ramp_ttft, ttft);
            }
            q->t_last = t;
            q->ntok++;
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            finish(R, q, t);
            if (p->inflight) p->inflight--;
        }
    }
    p->st.n_updates = 0;
    /* Warm: what waited in the gateway for a routable replica goes now. */
    if (warmed) {
        int rc = gq_drain(R, t);
        if (rc) return rc;
    }
    if (kvg_sim_idle(p->e)) {
        p->stepping = 0;
        if (p->state == R_DRAINING && p->inflight == 0) gone(R, k, t);
        return 0;
    }
    return start_step(p, t);
}

/* Requests past the timeout without a first token, and drains past theirs. */
static void expire(struct run *R, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    for (; R->sweep < R->nrq; R->sweep++) {
        struct rq *q = &R->rq[R->sweep];
        if (q->state == Q_DONE || q->state == Q_FAILED || q->first) continue;
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
            gone(R, k, t);
            continue;
        }
        i++;
    }
}

int scale_obs_init(struct scale_obs *ob)
{
    ob->nb = 512;
    ob->bcur = 0;
    ob->b = calloc(ob->nb, sizeof *ob->b);
    ob->ttft = calloc(1, sizeof *ob->ttft);
    ob->itl = calloc(1, sizeof *ob->itl);
    ob->scratch = malloc((1 << 16) * sizeof *ob->scratch);
    return ob->b && ob->ttft && ob->itl && ob->scratch ? 0 : -ENOMEM;
}

void scale_obs_free(struct scale_obs *ob)
{
    free(ob->b);
    free(ob->ttft);
    free(ob->itl);
    free(ob->scratch);
    memset(ob, 0, sizeof *ob);
}

struct bucket *scale_obs_cur(struct scale_obs *ob)
{
    return &ob->b[ob->bcur % ob->nb];
}

void scale_obs_next(struct scale_obs *ob)
{
    ob->bcur++;
    memset(scale_obs_cur(ob), 0, sizeof(struct bucket));
}

void scale_window_signals(struct scale_obs *ob, double tick_s, double window,
                          struct kvg_autoscale_signals *s)
{
    size_t nb = (size_t)ceil(window / tick_s);
    if (nb > ob->nb - 1) nb = ob->nb - 1;
    if (nb > ob->bcur) nb = ob->bcur;
    struct bucket sum = {0};
    for (size_t j = 1; j <= nb; j++) {
        const struct bucket *b = &ob->b[(ob->bcur - j) % ob->nb];
        sum.arrivals += b->arrivals;
        sum.prompt_tokens += b->prompt_tokens;
        sum.max_tokens += b->max_tokens;
        sum.out_tokens += b->out_tokens;
        sum.cached += b->cached;
        sum.first_prompt += b->first_prompt;
        sum.finished += b->finished;
        sum.missed += b->missed;
    }
    double w = nb ? (double)nb * tick_s : 1;
    s->arrival_rate = sum.arrivals / w;
    s->input_tps = sum.prompt_tokens / w;
    s->output_tps = sum.out_tokens / w;
    s->isl = sum.arrivals ? sum.prompt_tokens / sum.arrivals : 0;
    s->osl = sum.arrivals ? sum.max_tokens / sum.arrivals : 0;
    s->cache_hit = sum.first_prompt > 0 ? sum.cached / sum.first_prompt : 0;
    s->slo_miss = sum.finished > 0 ? sum.missed / sum.finished : -1;
    scale_lat_window(ob->ttft, ob->scratch, s->now - w, &s->ttft_mean, &s->ttft_p90);
    scale_lat_window(ob->itl, ob->scratch, s->now - w, &s->itl_mean, &s->itl_p90);
}

static void signals(struct run *R, double t, double window, struct kvg_autoscale_signals *s,
                    double *eta)
{
    scale_reps_signals(&R->pool, t, R->o->young_s, s, eta);
    s->queued = (double)gq_len(R);
    s->inflight_prompt_tokens = R->inflight_prompt;
    scale_window_signals(&R->ob, R->o->tick_s, window, s);
}

static void timeline(struct run *R, double t, uint32_t desired)
{
    struct kvg_bench_scale_result *r = R->out;
    double step = R->o->day_s / (double)r->n;
    while (R->tl_next < r->n && t >= (double)(R->tl_next + 1) * step) {
        size_t i = R->tl_next++;
        uint32_t ready = 0, starting = 0;
        for (size_t j = 0; j < R->pool.nact; j++) {
            ready += R->pool.rep[R->pool.act[j]].state == R_READY;
            starting += R->pool.rep[R->pool.act[j]].state == R_STARTING;
        }
        r->t_h[i] = (double)(i + 1) * step / R->o->day_s * 24;
        r->rate[i] = R->tl_arrivals / step;
        r->desired[i] = desired;
        r->ready[i] = ready;
        r->starting[i] = starting;
        R->tl_arrivals = 0;
    }
}

static int tick(struct run *R, double t)
{
    expire(R, t);
    double window = R->o->window_s;
    if (!(window > 0)) {
        double iv = R->pl->o.interval_s;
        if (!(iv > 0)) iv = !strcmp(R->o->planner, "sla") ? 180 : 30;
        window = iv > 30 ? iv : 30;
    }
    double eta[KVG_BENCH_SCALE_MAX_REPLICAS];
    struct kvg_autoscale_signals s;
    signals(R, t, window, &s, eta);
    struct kvg_autoscale_decision d;
    int rc = kvg_autoscale_plan(R->pl, &s, &d);
    if (rc) return rc;
    if (d.acted && R->have_desired && d.desired != R->last_desired) R->out->scale_events++;
    if (d.acted) snprintf(R->out->last_reason, sizeof R->out->last_reason, "%s", d.reason);
    if (d.acted && R->o->trace) fprintf(stderr, "%s %.0f s: %s\n", R->o->planner, t, d.reason);
    R->last_desired = d.desired;
    R->have_desired = 1;
    if ((rc = scale_reps_actuate(&R->pool, R->o, &R->su, &R->rng, d.desired, t))) return rc;
    timeline(R, t, d.desired);
    scale_obs_next(&R->ob);
    return 0;
}

static int setup(struct run *R, char *err, size_t errlen)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_result *out = R->out;
    int rc = scale_wl_init(&R->wl, o);
    if (rc) return kvg_err_set(err, errlen, rc, "workload: %s", kvg_strerror(rc));
    R->have_next = scale_wl_next(&R->wl, &R->next) == 0;
    kvg_autoscale_startup_init(&R->su);
    kvg_rng_seed(&R->rng, o->seed * 31 + 7);
    struct kvg_autoscale_opts a = o->aopts;
    scale_derive_profile(o, o->knee_rps, &a.prof);
    /* The llm-d recipe calibrates V_P as the peak prefill throughput. */
    if (!(a.queue_peak_prefill_tps > 0)) {
        struct kvg_autoscale_profile raw;
        scale_derive_profile(o, 0, &raw);
        a.queue_peak_prefill_tps = raw.prefill_tps;
    }
    snprintf(a.model, sizeof a.model, "%s", o->startup_model);
    a.cold_share = o->cold_share;
    a.fetch_share = o->fetch_share;
    a.startup = &R->su;
    uint32_t peak = kvg_bench_scale_static_peak(o);
    out->static_peak = peak;
    out->load_per_rps = scale_load_per_rps(o);
    out->knee_rps = o->knee_rps;
    if (!a.static_replicas) a.static_replicas = peak;
    if (a.max_replicas > KVG_BENCH_SCALE_MAX_REPLICAS)
        a.max_replicas = KVG_BENCH_SCALE_MAX_REPLICAS;
    /* "kvgate-noprewarm": kvgate's planner, new replicas not prewarmed. */
    R->prewarmed = o->prewarm && !strcmp(o->planner, "kvgate");
    rc = scale_planner_new(o->planner, &a, &R->pl, err, errlen);
    if (rc == KVG_ENOTFOUND) out->status = KVG_ENOTFOUND;
    if (rc) return rc == KVG_ENOTFOUND ? 1 : rc;
    if (scale_obs_init(&R->ob)) return -ENOMEM;
    R->prompt = malloc(((size_t)o->prefix_len + o->suffix_max + 1) * sizeof *R->prompt);
    out->n = o->timeline_points ? o->timeline_points : 288;
    out->t_h = calloc(out->n, sizeof(double));
    out->rate = calloc(out->n, sizeof(double));
    out->desired = calloc(out->n, sizeof(double));
    out->ready = calloc(out->n, sizeof(double));
    out->starting = calloc(out->n, sizeof(double));
    out->arrived = calloc(out->n, sizeof(double));
    out->missed = calloc(out->n, sizeof(double));
    if (!out->arrived || !out->missed || !R->prompt || !out->t_h || !out->rate || !out->desired ||
        !out->ready || !out->starting)
        return -ENOMEM;
    kvg_bench_samples_init(&R->all_ttft);
    kvg_bench_samples_init(&R->ramp_ttft);
    kvg_bench_samples_init(&R->all_itl);
    kvg_bench_samples_init(&R->young_ttft);
    /* The day starts with the pool its first hour needs (static: its count),
     * ready, with empty caches. */
    uint32_t n0 = !strcmp(o->planner, "static")
                      ? a.static_replicas
                      : kvg_autoscale_ceil(scale_wl_rate(&R->wl, 0) * scale_load_per_rps(o) *
                                           (1 + a.headroom));
    if (n0 < a.min_replicas) n0 = a.min_replicas;
    if (n0 < 1) n0 = 1;
    for (uint32_t i = 0; i < n0; i++) {
        if ((rc = add_rep(R, 0))) return rc;
        struct rep *p = &R->pool.rep[R->pool.nrep - 1];
        p->ready_at = 0;
        if ((rc = make_ready(R, (int)R->pool.nrep - 1, o->seed * 1000003ull + R->pool.nrep)))
            return rc;
        if ((rc = scale_prewarm_start(R, (int)R->pool.nrep - 1, 0))) return rc;
    }
    R->pool.added = 0;
    return 0;
}

static int loop(struct run *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    double next_tick = o->tick_s;
    for (;;) {
        double ta = R->have_next ? R->next.arrival : INFINITY;
        double tt = next_tick <= o->day_s ? next_tick : INFINITY;
        double te = INFINITY, tr = INFINITY;
        int ke = -1, kr = -1;
        for (size_t i = 0; i < R->pool.nact; i++) {
            int k = R->pool.act[i];
            const struct rep *p = &R->pool.rep[k];
            if (p->stepping && p->busy_until < te) te = p->busy_until, ke = k;
            if (p->state == R_STARTING && p->ready_at < tr && p->ready_at <= o->day_s)
                tr = p->ready_at, kr = k;
        }
        int rc;
        if (ke >= 0 && te <= tr && te <= tt && te <= ta) {
            rc = step_end(R, ke, te);
        } else if (kr >= 0 && tr <= tt && tr <= ta) {
            rc = make_ready(R, kr, o->seed * 1000003ull + (uint64_t)kr + 1);
            if (!rc) rc = scale_prewarm_start(R, kr, tr);
            if (!rc && R->pool.rep[kr].warming) start_step(&R->pool.rep[kr], tr);
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
    /* The day is over: what still waits in the gateway is not served. */
    for (size_t i = R->gq_head; i < R->gq_tail; i++)
        if (R->rq[R->gq[i]].state == Q_GATEWAY) fail(R, &R->rq[R->gq[i]]);
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
        if (q->state == Q_FAILED && !q->first) {
            /* Given up without a token: its TTFT is at least the timeout. */
            kvg_bench_samples_add(&R->all_ttft, o->timeout_s);
            if (ramp) kvg_bench_samples_add(&R->ramp_ttft, o->timeout_s);
        }
    }
    double rh = scale_reps_seconds(&R->pool, o->day_s);
    uint32_t mx = 0;
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
    out->ttft_p50_s = kvg_bench_samples_pct(&R->all_ttft, 50);
    out->ttft_p90_s = kvg_bench_samples_pct(&R->all_ttft, 90);
    out->ttft_p99_s = kvg_bench_samples_pct(&R->all_ttft, 99);
    out->ramp_ttft_p90_s = kvg_bench_samples_pct(&R->ramp_ttft, 90);
    out->itl_p90_s = kvg_bench_samples_pct(&R->all_itl, 90);
    out->cache_hit = R->hit_prompt > 0 ? R->hit_cached / R->hit_prompt : 0;
    scale_recovery_summary(R);
}

static void teardown(struct run *R)
{
    scale_reps_free(&R->pool);
    free(R->rq);
    free(R->gq);
    free(R->prompt);
    scale_obs_free(&R->ob);
    kvg_bench_samples_free(&R->all_ttft);
    kvg_bench_samples_free(&R->ramp_ttft);
    kvg_bench_samples_free(&R->all_itl);
    kvg_bench_samples_free(&R->young_ttft);
    kvg_autoscale_planner_free(R->pl);
    scale_wl_free(&R->wl);
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
    if (!(o->tick_s > 0) || !(o->day_s > 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "tick and day must be > 0");
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
