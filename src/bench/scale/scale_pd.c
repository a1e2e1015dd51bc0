/* The PD day (scale.h, kvg_bench_scale_pd_run): the diurnal traffic on two
 * pools, prefill and decode, each sized by its own planner instance. The
 * engines are the simulator's model driven as bench/pd.c drives it (a
 * prefill with max_tokens 1 and its blocks held, the transfer, the decode
 * with the prompt's KV remote); the traffic, start-up draws and the
 * gateway's windowed observations are the aggregated day's (scale_wl.c,
 * scale_day.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale_pd_int.h"
#include "bench/stats.h"

static int make_ready(struct pdrun *R, struct pool *P, int k, double t)
{
    uint64_t seed = R->o->seed * 1000003ull + (uint64_t)k * 2 + (P->role == KVG_AUTOSCALE_DECODE);
    struct kvg_sim_profile pr = R->o->profile;
    if (P->role == KVG_AUTOSCALE_DECODE && R->o->pd_decode_batched_tokens)
        pr.max_num_batched_tokens = R->o->pd_decode_batched_tokens;
    return kvg__scale_reps_ready(&P->r, k, &pr, seed, t);
}

static void kick(struct rep *p, double t)
{
    if (p->stepping || !p->e || kvg_sim_idle(p->e)) return;
    kvg__scale_rep_step(p, t);
}

/* q's prefill ended or was dropped: its tokens leave its replica's queue. */
static void unpend(struct pdrun *R, struct pq *q, int pi, int k)
{
    if (k >= 0 && q->pend > 0) {
        struct rep *p = &R->pool[pi].r.rep[k];
        p->pend_tok = p->pend_tok > q->pend ? p->pend_tok - q->pend : 0;
    }
    q->pend = 0;
}

/* Frees what request q holds on its prefill replica (blocks, in flight);
 * the gateway's pick there ended with its prefill, or ends in
 * kvg__scale_pd_fail. */
static void leave_prefill(struct pdrun *R, struct pq *q, uint64_t id, int abort)
{
    if (q->pre < 0) return;
    unpend(R, q, 0, q->pre);
    struct rep *p = &R->pool[0].r.rep[q->pre];
    if (p->e) {
        if (abort)
            kvg_sim_abort(p->e, id);
        else
            kvg_sim_release(p->e, id);
    }
    if (p->inflight) p->inflight--;
    q->pre = -1;
}

/* The seconds q's prefill leg took, as kvg_autoscale_obs_judge reads it:
 * from its arrival (a batch request's dispatch) to the end of its prefill
 * on a prefill replica; 0 when it prefilled on its decode replica (the
 * decode pool's leg), INFINITY while it has not ended. */
static double prefill_leg(const struct pq *q)
{
    if (q->local) return 0;
    if (!(q->t_pre > 0)) return INFINITY;
    return q->t_pre - (q->batch ? q->t_disp : q->r.arrival);
}

/* The legs a request that was not served missed on (signals.h). */
static unsigned fail_miss(const struct pdrun *R, const struct pq *q)
{
    const struct kvg_autoscale_opts *a = &R->o->aopts;
    return kvg_autoscale_obs_judge(1, -1, -1, prefill_leg(q), a->ttft_target_s, a->itl_target_s);
}

void kvg__scale_pd_fail(struct pdrun *R, uint64_t id)
{
    struct pq *q = &R->q[id];
    if (q->state == P_PREFILL) leave_prefill(R, q, id, 1);
    if (q->state == P_WAIT || q->state == P_XFER) leave_prefill(R, q, id, 0);
    /* Given up (timeout, a drain cut, the day's end): the client's end,
     * not the worker's fault (its circuit untouched). */
    for (int pi = 0; pi < 2; pi++)
        kvg__scale_route_release(&R->pool[pi].rt, &q->pick[pi], KVG_OUT_CLIENT_GONE, q->r.arrival);
    if ((q->state == P_XFER || q->state == P_DECODE) && q->dec >= 0) {
        struct rep *p = &R->pool[1].r.rep[q->dec];
        if (p->e && q->state == P_DECODE) kvg_sim_abort(p->e, id);
        if (p->inflight) p->inflight--;
        if (q->local) unpend(R, q, 1, q->dec);
    }
    kvg__scale_day_fail(&R->d, &q->r, q->first, fail_miss(R, q));
    q->state = P_FAILED;
    R->out->failed++;
}

static void fail(struct pdrun *R, uint64_t id)
{
    kvg__scale_pd_fail(R, id);
}

static int routable(const struct rep *p)
{
    return p->state == R_READY;
}

/* A replica of P takes new requests (the gateway's queue waits for one). */
static int any_routable(const struct pool *P)
{
    for (size_t i = 0; i < P->r.nact; i++)
        if (routable(&P->r.rep[P->r.act[i]])) return 1;
    return 0;
}

/* The gateway's pick on pool P for q at t among the replicas ok admits:
 * *k, or KVG_ENOWORKER. */
static int pick_on(struct pdrun *R, struct pool *P, struct pq *q, double t,
                   int (*ok)(void *ud, int k), struct kvg_pick *pick, int *k)
{
    int rc = kvg__scale_route_sync(&P->rt, &P->r, NULL, NULL, t);
    return rc ? rc : kvg__scale_route_pick(&P->rt, &R->d.wl, &q->r, t, ok, R, pick, k);
}

/* The prompt tokens q would compute on p, as a router that remembers what
 * it routed where believes (its group's prefix cached once routed there). */
static double uncached(const struct pdrun *R, const struct pq *q, const struct rep *p)
{
    uint32_t pre = R->o->prefix_len < q->r.prompt_len ? R->o->prefix_len : q->r.prompt_len;
    return (double)q->r.prompt_len - ((p->groups >> q->r.group) & 1 ? pre : 0);
}

/* Experiment (--pd-local-prefill-wait, "PD seed 2" in autoscale.md): the
 * load half of Dynamo's conditional disaggregation. The decode replica q
 * prefills on itself instead of prefill replica k (-1: none ready) when
 * k's predicted wait (its queued prefill tokens and q's over the profiled
 * rate) is past the bound and the decode's is shorter: the routable decode
 * with the shortest queued local prefill and KV room for the prompt. -1:
 * split as usual. */
static int local_decode(struct pdrun *R, const struct pq *q, int k)
{
    double bound = R->o->pd_local_wait_s, tps = R->o->pd_prefill_tps;
    if (!(bound > 0) || !(tps > 0)) return -1;
    const struct rep *pp = k >= 0 ? &R->pool[0].r.rep[k] : NULL;
    double wp = pp ? (pp->pend_tok + uncached(R, q, pp)) / tps : INFINITY;
    if (!(wp > bound)) return -1;
    struct pool *P = &R->pool[1];
    int best = -1;
    double wbest = INFINITY;
    for (size_t i = 0; i < P->r.nact; i++) {
        int d = P->r.act[i];
        const struct rep *p = &P->r.rep[d];
        if (!routable(p) || !p->e) continue;
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(p->e, &m);
        double need = (double)q->r.prompt_len / (m.block_size ? m.block_size : 16);
        if (m.kv_usage + need / (m.num_blocks ? m.num_blocks : 1) > 0.9) continue;
        double w = (p->pend_tok + uncached(R, q, p)) / tps;
        if (w < wbest) best = d, wbest = w;
    }
    return best >= 0 && wbest < wp ? best : -1;
}

/* Request id prefilled and decoded on decode replica d. */
static int to_local(struct pdrun *R, uint64_t id, int d, double t)
{
    struct pq *q = &R->q[id];
    struct rep *p = &R->pool[1].r.rep[d];
    q->pend = uncached(R, q, p);
    p->groups |= 1ull << q->r.group;
    int rc = kvg__scale_day_submit(&R->d, p->e, id, &q->r, 0, 0, 0);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        q->pend = 0;
        fail(R, id);
        return 0;
    }
    q->state = P_DECODE;
    q->local = 1;
    q->dec = d;
    p->inflight++;
    p->pend_tok += q->pend;
    R->out->local_prefills++;
    kick(p, t);
    return 0;
}

/* Request id onto a prefill replica, or its decode's when the prefill side
 * is backed up, or the gateway queue when none is ready. */
static int to_prefill(struct pdrun *R, uint64_t id, double t)
{
    int rc = kvg__scale_pd_to_prefill_by(R, id, t, NULL);
    return rc == KVG_ENOWORKER ? kvg__scale_ids_push(&R->gq, &R->gq_tail, &R->gq_cap, id) : rc;
}

int kvg__scale_pd_to_prefill_by(struct pdrun *R, uint64_t id, double t, int (*ok)(void *ud, int k))
{
    struct pq *q = &R->q[id];
    struct kvg_pick pick;
    int k = -1, rc = pick_on(R, &R->pool[0], q, t, ok, &pick, &k);
    if (rc && rc != KVG_ENOWORKER) return rc;
    int d = local_decode(R, q, rc ? -1 : k);
    if (d >= 0) {
        /* The experiment's local prefill: the prefill pick is not used. */
        if (!rc) kvg__scale_route_release(&R->pool[0].rt, &pick, KVG_OUT_LOCAL, t);
        return to_local(R, id, d, t);
    }
    if (rc) return rc;
    struct rep *p = &R->pool[0].r.rep[k];
    double pend = uncached(R, q, p);
    p->groups |= 1ull << q->r.group;
    q->pick[0] = pick;
    rc = kvg__scale_day_submit(&R->d, p->e, id, &q->r, 1, 0, 1);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        fail(R, id);
        return 0;
    }
    q->state = P_PREFILL;
    q->pre = k;
    q->pend = pend;
    p->pend_tok += pend;
    p->inflight++;
    kick(p, t);
    return 0;
}

/* A prefilled request to a decode replica: its KV starts moving. */
static int to_decode(struct pdrun *R, uint64_t id, double t)
{
    struct pq *q = &R->q[id];
    int k = -1, rc = pick_on(R, &R->pool[1], q, t, NULL, &q->pick[1], &k);
    if (rc == KVG_ENOWORKER) {
        q->state = P_WAIT;
        return kvg__scale_ids_push(&R->dq, &R->dq_tail, &R->dq_cap, id);
    }
    if (rc) return rc;
    q->dec = k;
    R->pool[1].r.rep[k].inflight++;
    double xs = R->kv_bytes_tok * q->r.prompt_len / R->link_bw;
    q->xfer_done = t + xs;
    q->state = P_XFER;
    kvg_bench_samples_add(&R->xfer, xs);
    return kvg__scale_ids_push(&R->xf, &R->nxf, &R->capxf, id);
}

/* The KV of xf[i] has arrived: the prefill's blocks go, the decode starts. */
static int xfer_done(struct pdrun *R, size_t i, double t)
{
    uint64_t id = R->xf[i];
    R->xf[i] = R->xf[--R->nxf];
    struct pq *q = &R->q[id];
    if (q->state != P_XFER) return 0;
    leave_prefill(R, q, id, 0);
    struct rep *p = &R->pool[1].r.rep[q->dec];
    if (!p->e) {
        fail(R, id);
        return 0;
    }
    int rc = kvg__scale_day_submit(&R->d, p->e, id, &q->r, 0, q->r.prompt_len, 0);
    if (rc == -ENOMEM) return rc;
    q->state = P_DECODE;
    if (rc) {
        fail(R, id);
        return 0;
    }
    kick(p, t);
    return 0;
}

/* Queued work to replicas that became ready. */
static int drain_queues(struct pdrun *R, double t)
{
    int rc;
    /* Each waiting request once: one the pick sends back (no candidate
     * after all) waits at the tail for the next ready replica. */
    for (size_t n = R->gq_tail - R->gq_head; n && any_routable(&R->pool[0]); n--) {
        uint64_t id = R->gq[R->gq_head++];
        if (R->q[id].state == P_GATEWAY && (rc = to_prefill(R, id, t))) return rc;
    }
    if (R->gq_head == R->gq_tail) R->gq_head = R->gq_tail = 0;
    for (size_t n = R->dq_tail - R->dq_head; n && any_routable(&R->pool[1]); n--) {
        uint64_t id = R->dq[R->dq_head++];
        if (R->q[id].state == P_WAIT && (rc = to_decode(R, id, t))) return rc;
    }
    if (R->dq_head == R->dq_tail) R->dq_head = R->dq_tail = 0;
    return kvg__scale_cls_drain(&R->cls, t);
}

static int arrive(struct pdrun *R)
{
    if (R->nq == R->capq) {
        size_t c = R->capq ? R->capq * 2 : 65536;
        struct pq *v = realloc(R->q, c * sizeof *v);
        if (!v) return -ENOMEM;
        R->q = v;
        R->capq = c;
    }
    uint64_t id = R->nq++;
    struct pq *q = &R->q[id];
    memset(q, 0, sizeof *q);
    kvg__scale_day_arrive(&R->d, &q->r);
    q->pre = q->dec = -1;
    q->state = P_GATEWAY;
    int rc = kvg__scale_pd_class_arrive(R, id, q->r.arrival);
    return rc ? (rc > 0 ? 0 : rc) : to_prefill(R, id, q->r.arrival);
}

static void finish(struct pdrun *R, struct pq *q, double t)
{
    const struct kvg_autoscale_opts *a = &R->o->aopts;
    q->state = P_DONE;
    q->t_done = t;
    double itl = kvg__scale_itl(q->ntok, q->t_first, q->t_last);
    /* Batch waits in the gateway by design: its TTFT counts from its dispatch. */
    double ttft = q->t_first - (q->batch ? q->t_disp : q->r.arrival);
    unsigned miss =
        kvg_autoscale_obs_judge(0, ttft, itl, prefill_leg(q), a->ttft_target_s, a->itl_target_s);
    int tok = !(miss & KVG_AUTOSCALE_MISS_TTFT), iok = !(miss & KVG_AUTOSCALE_MISS_ITL);
    q->ok = (uint8_t) !(miss & KVG_AUTOSCALE_MISS_FAILED);
    q->miss = (uint8_t)miss;
    kvg__scale_day_done(&R->d, &q->r, q->ntok, t, itl, kvg__scale_cls_judged(q->batch, miss));
    R->out->ttft_met += tok;
    R->out->itl_met += iok;
    R->out->met += tok && iok;
}

static int step_end(struct pdrun *R, struct pool *P, int k, double t)
{
    struct rep *p = &P->r.rep[k];
    p->stepping = 0;
    int rc;
    for (size_t i = 0; i < p->st.n_updates; i++) {
        const struct kvg_sim_update *u = &p->st.updates[i];
        struct pq *q = &R->q[u->id];
        if (P->role == KVG_AUTOSCALE_PREFILL) {
            if (q->state != P_PREFILL || !(u->flags & KVG_SIM_UP_FINISHED)) continue;
            kvg__scale_day_cached(&R->d, &q->r, u->cached_tokens);
            q->t_pre = t;
            /* serve's prefill leg ends at its answer: the pick is done. */
            kvg__scale_route_first(&P->rt, &q->pick[0], t);
            kvg__scale_route_release(&P->rt, &q->pick[0], KVG_OUT_OK, t);
            unpend(R, q, 0, q->pre);
            if ((rc = to_decode(R, u->id, t))) return rc;
            continue;
        }
        if (q->state != P_DECODE) continue;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            if (!q->first) {
                if (q->local) { /* its prefill ran here */
                    kvg__scale_day_cached(&R->d, &q->r, u->cached_tokens);
                    q->t_pre = t;
                    unpend(R, q, 1, q->dec);
                }
                q->first = 1;
                q->t_first = t;
                kvg__scale_route_first(&P->rt, &q->pick[1], t);
                struct scale_req seen = q->r; /* what the gateway observes: from dispatch */
                if (q->batch) seen.arrival = q->t_disp;
                kvg__scale_day_first(&R->d, &seen, t);
            }
            q->t_last = t;
            q->ntok++;
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            finish(R, q, t);
            kvg__scale_route_release(&P->rt, &q->pick[1], KVG_OUT_OK, t);
            if (p->inflight) p->inflight--;
        }
    }
    p->st.n_updates = 0;
    kick(p, t);
    if (p->state == R_DRAINING && p->inflight == 0 && !p->stepping)
        kvg__scale_reps_retire(&P->r, k, t);
    return R->cls.on ? kvg__scale_cls_drain(&R->cls, t) : 0;
}

/* Requests without a first token past the timeout; drains past theirs. */
static void expire(struct pdrun *R, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    for (; R->sweep < R->nq; R->sweep++) {
        struct pq *q = &R->q[R->sweep];
        if (q->state == P_DONE || q->state == P_FAILED || q->first) continue;
        if (q->batch) continue; /* its deadline's: kvg__scale_cls_expire */
        if (q->r.arrival + o->timeout_s > t) break;
        fail(R, R->sweep);
    }
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        for (size_t i = 0; i < P->r.nact;) {
            int k = P->r.act[i];
            struct rep *p = &P->r.rep[k];
            if (p->state == R_DRAINING && (t >= p->drain_at + o->drain_s || !p->inflight)) {
                /* Bounded drain: what still holds this replica is cut. */
                for (uint64_t id = 0; p->inflight && id < R->nq; id++) {
                    const struct pq *q = &R->q[id];
                    if (q->state == P_DONE || q->state == P_FAILED) continue;
                    if ((pi == 0 && q->pre == k) || (pi == 1 && q->dec == k && q->state >= P_XFER))
                        fail(R, id);
                }
                kvg__scale_reps_retire(&P->r, k, t);
                continue;
            }
            i++;
        }
    }
}

static void pool_signals(struct pdrun *R, struct pool *P, double t, double window,
                         struct kvg_autoscale_signals *s, double *eta)
{
    /* A decode replica has no prefix cache to warm: never young. */
    kvg__scale_reps_signals(&P->r, t, P->role == KVG_AUTOSCALE_PREFILL ? R->o->young_s : 0, s, eta);
    /* The queue in front of this pool: the gateway's, or prefilled requests
     * awaiting a decode replica. */
    size_t nq = 0;
    if (P->role == KVG_AUTOSCALE_PREFILL) {
        for (size_t i = R->gq_head; i < R->gq_tail; i++) nq += R->q[R->gq[i]].state == P_GATEWAY;
        s->inflight_prompt_tokens = R->d.inflight_prompt;
    } else {
        for (size_t i = R->dq_head; i < R->dq_tail; i++) nq += R->q[R->dq[i]].state == P_WAIT;
    }
    s->queued = (double)nq;
    kvg__scale_cls_signals(&R->cls, t, s);
    kvg__scale_day_signals(&R->d, window, s);
}

static void timeline(struct pdrun *R, double t)
{
    struct kvg_bench_scale_pd_result *r = R->out;
    size_t i = 0;
    while (kvg__scale_day_point(&R->d, t, r->n, r->t_h, r->rate, &i)) {
        for (int pi = 0; pi < 2; pi++) {
            const struct pool *P = &R->pool[pi];
            uint32_t n = 0, st = 0;
            kvg__scale_reps_count(&P->r, &n, &st);
            r->ready[pi][i] = n;
            r->starting[pi][i] = st;
            r->desired[pi][i] = P->last_desired;
        }
    }
}

static int tick(struct pdrun *R, double t)
{
    expire(R, t);
    kvg__scale_cls_expire(&R->cls, t);
    kvg_autoscale_obs_next(R->d.ob); /* before the window is read, as serve */
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        double window = kvg__scale_day_window(&R->d, P->pl);
        double eta[KVG_BENCH_SCALE_MAX_REPLICAS];
        struct kvg_autoscale_signals s;
        pool_signals(R, P, t, window, &s, eta);
        /* --headroom-from: the experiment's headroom from then on (the
         * bench owns the planner and its copy of the options). */
        if (R->o->pd_headroom_from_s > 0 && t >= R->o->pd_headroom_from_s)
            P->pl->o.headroom = P->headroom;
        struct kvg_autoscale_decision d;
        int rc = kvg_autoscale_plan(P->pl, &s, &d);
        if (rc) return rc;
        if (R->oracle) {
            d.desired =
                kvg__scale_pd_oracle_desired(&R->d.wl, &P->pl->o, R->oracle_lead, s.cache_hit, t);
            d.acted = 1;
            snprintf(d.reason, sizeof d.reason, "oracle: the true rate's peak over +%.0f s -> %u",
                     R->oracle_lead, d.desired);
        }
        if (d.acted && P->have_desired && d.desired != P->last_desired) P->out->scale_events++;
        if (d.acted && R->o->trace)
            fprintf(stderr, "%s/%s %.0f s: %s\n", R->o->planner, kvg_autoscale_role_name(P->role),
                    t, d.reason);
        P->last_desired = d.desired;
        P->have_desired = 1;
        if ((rc = kvg__scale_reps_actuate(&P->r, R->o, &R->d.su, &R->d.rng, d.desired, t)))
            return rc;
    }
    timeline(R, t);
    return 0;
}

/* Each pool's planner options: the aggregated runs' own, the role's, and
 * the measured per-role profile (queue's V_P stays the batch-1 peak, as in
 * the aggregated runs: llm-d's calibration script measures a peak). */
void kvg__scale_pd_pool_opts(const struct kvg_bench_scale_opts *o, enum kvg_autoscale_role role,
                             struct kvg_autoscale_startup *su, struct kvg_autoscale_opts *a)
{
    *a = o->aopts;
    a->role = role;
    kvg__scale_derive_profile(o, 0, &a->prof);
    if (!(a->queue_peak_prefill_tps > 0)) a->queue_peak_prefill_tps = a->prof.prefill_tps;
    a->prof.prefill_tps = o->pd_prefill_tps;
    a->prof.decode_tps = o->pd_decode_tps;
    a->prof.itl_per_seq_s = 0; /* decode_tps is the measured one */
    snprintf(a->model, sizeof a->model, "%s", o->startup_model);
    a->cold_share = o->cold_share;
    a->fetch_share = o->fetch_share;
    a->startup = su;
    if (a->max_replicas > KVG_BENCH_SCALE_MAX_REPLICAS)
        a->max_replicas = KVG_BENCH_SCALE_MAX_REPLICAS;
}

/* Replicas a pool needs at rate req/s by its profile, headroom included. */
static double pool_need(const struct kvg_bench_scale_opts *o, const struct kvg_autoscale_opts *a,
                        double rate)
{
    double isl = kvg__scale_isl_mean(o);
    return kvg_autoscale_load(a, rate * isl, rate * o->osl, a->itl_target_s) * (1 + a->headroom);
}

uint32_t kvg__scale_pd_first(const struct kvg_bench_scale_opts *o,
                             const struct kvg_autoscale_opts *a, const struct scale_wl *w)
{
    return kvg_autoscale_ceil(pool_need(o, a, kvg__scale_wl_rate(w, 0)));
}

static int setup(struct pdrun *R, char *err, size_t errlen)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_pd_result *out = R->out;
    int rc = kvg__scale_day_init(&R->d, o, err, errlen);
    if (rc) return rc;
    R->oracle = !strcmp(o->planner, "oracle");
    R->oracle_lead = kvg__scale_pd_oracle_lead(o, &R->d.su);
    if (o->trace) kvg__scale_wl_trace(&R->d.wl, stderr);
    R->kv_bytes_tok = (double)kvg_sim_kv_bytes_per_token(&o->profile);
    R->link_bw = kvg_sim_link_bw(1); /* prefill and decode in one rack */
    double peak = kvg__scale_peak_rate(o);
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        P->role = pi ? KVG_AUTOSCALE_DECODE : KVG_AUTOSCALE_PREFILL;
        P->out = &out->pool[pi];
        if ((rc = kvg__scale_route_new(&P->rt, o, P->role))) return rc;
        struct kvg_autoscale_opts a;
        kvg__scale_pd_pool_opts(o, P->role, &R->d.su, &a);
        P->out->static_peak = kvg_autoscale_ceil(pool_need(o, &a, peak));
        if (!a.static_replicas) a.static_replicas = P->out->static_peak;
        P->headroom = a.headroom;
        if (o->pd_headroom[pi] >= 0) P->headroom = o->pd_headroom[pi];
        if (!(o->pd_headroom_from_s > 0)) a.headroom = P->headroom;
        /* The oracle is the bench's, not a planner: a static instance holds
         * its options and interval; tick() asks the oracle instead. */
        rc = kvg__scale_planner_new(R->oracle ? "static" : o->planner, &a, &P->pl, err, errlen);
        if (rc == KVG_ENOTFOUND) out->status = KVG_ENOTFOUND;
        if (rc) return rc == KVG_ENOTFOUND ? 1 : rc;
    }
    out->n = o->timeline_points ? o->timeline_points : 288;
    double **tl[] = {&out->t_h,        &out->rate,           &out->arrived,
                     &out->missed,     &out->missed_prefill, &out->ready[0],
                     &out->desired[0], &out->starting[0],    &out->ready[1],
                     &out->desired[1], &out->starting[1]};
    if (kvg__scale_timeline_alloc(out->n, tl, sizeof tl / sizeof tl[0])) return -ENOMEM;
    kvg_bench_samples_init(&R->xfer);
    /* The day starts with what its first hour needs (static: its count),
     * ready, with empty caches. */
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        const struct kvg_autoscale_opts *a = &P->pl->o;
        uint32_t n0 = !strcmp(o->planner, "static") ? a->static_replicas
                                                    : kvg__scale_pd_first(o, a, &R->d.wl);
        if (R->oracle) n0 = kvg__scale_pd_oracle_desired(&R->d.wl, a, R->oracle_lead, 0, 0);
        if ((rc = kvg__scale_reps_first(&P->r, o, &R->d.su, &R->d.rng, n0, a->min_replicas)))
            return rc;
        for (size_t k = 0; k < P->r.nrep; k++)
            if ((rc = make_ready(R, P, (int)k, 0))) return rc;
    }
    kvg__scale_pd_class_init(R);
    return 0;
}

static int loop(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    double next_tick = o->tick_s, next_scrape = kvg__scale_scrape_next(o, 0);
    for (;;) {
        double ta = R->d.have_next ? R->d.next.arrival : INFINITY;
        double tt = next_tick <= o->day_s ? next_tick : INFINITY;
        double te = INFINITY, tr = INFINITY, tx = INFINITY;
        int pe = -1, ke = -1, pr = -1, kr = -1;
        size_t kx = 0;
        for (int pi = 0; pi < 2; pi++) {
            double te0 = te, tr0 = tr;
            kvg__scale_reps_next(&R->pool[pi].r, o->day_s, &te, &ke, &tr, &kr);
            if (te < te0) pe = pi;
            if (tr < tr0) pr = pi;
        }
        for (size_t i = 0; i < R->nxf; i++)
            if (R->q[R->xf[i]].xfer_done < tx) tx = R->q[R->xf[i]].xfer_done, kx = i;
        int rc;
        if (next_scrape <= o->day_s && next_scrape <= tt && next_scrape <= ta &&
            next_scrape <= te && next_scrape <= tr &&
            next_scrape <= tx) { /* only the gauges' copies change */
            for (int pi = 0; pi < 2; pi++) {
                kvg__scale_reps_scrape(&R->pool[pi].r);
                kvg__scale_route_scrape(&R->pool[pi].rt, &R->pool[pi].r, next_scrape);
            }
            next_scrape += o->scrape_s;
            continue;
        }
        if (tx < INFINITY && tx <= te && tx <= tr && tx <= tt && tx <= ta) {
            rc = xfer_done(R, kx, tx);
        } else if (ke >= 0 && te <= tr && te <= tt && te <= ta) {
            rc = step_end(R, &R->pool[pe], ke, te);
        } else if (kr >= 0 && tr <= tt && tr <= ta) {
            rc = make_ready(R, &R->pool[pr], kr, tr);
            if (!rc) rc = drain_queues(R, tr);
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
    /* The day is over: what still waits for a replica is not served. */
    for (uint64_t id = 0; id < R->nq; id++)
        if (R->q[id].state == P_GATEWAY || R->q[id].state == P_WAIT) fail(R, id);
    return 0;
}

/* Each request into the timeline point of its arrival: arrived, missed,
 * and missed on the prefill leg (its prefill, queue included, finished
 * past the TTFT target or never: the planner's attribution, signals.h):
 * the rest waited for or on a decode. */
static void timeline_misses(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_pd_result *out = R->out;
    double step = o->day_s / (double)out->n;
    for (size_t id = 0; id < R->nq; id++) {
        const struct pq *q = &R->q[id];
        size_t i = (size_t)(q->r.arrival / step);
        if (i >= out->n) i = out->n - 1;
        out->arrived[i]++;
        int ok = q->state == P_DONE && q->ok; /* finish()'s judgement */
        if (ok) continue;
        out->missed[i]++;
        unsigned miss = q->state == P_DONE ? q->miss : fail_miss(R, q);
        if (miss & KVG_AUTOSCALE_MISS_PREFILL) out->missed_prefill[i]++;
        out->missed_leg[0] += (miss & KVG_AUTOSCALE_MISS_PREFILL) != 0;
        out->missed_leg[1] += (miss & KVG_AUTOSCALE_MISS_DECODE) != 0;
    }
}

static void summarize(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_pd_result *out = R->out;
    out->requests = R->nq;
    for (size_t i = 0; i < R->nq; i++)
        if (R->q[i].state == P_FAILED && !R->q[i].first)
            kvg_bench_samples_add(&R->d.all_ttft, o->timeout_s); /* at least the timeout */
    timeline_misses(R);
    double gpus = o->gpus_per_replica ? o->gpus_per_replica : 1;
    for (int pi = 0; pi < 2; pi++) {
        const struct pool *P = &R->pool[pi];
        double parked = 0, rh = kvg__scale_reps_seconds(&P->r, o->day_s, &parked);
        P->out->parked_hours = parked / 3600;
        P->out->woken = P->r.woken;
        P->out->added = P->r.added;
        P->out->removed = P->r.removed;
        P->out->cancelled = P->r.cancelled;
        P->out->gpu_hours = rh / 3600 * gpus;
        P->out->mean_replicas = rh / o->day_s;
        for (size_t i = 0; i < out->n; i++)
            if (out->ready[pi][i] > P->out->max_replicas)
                P->out->max_replicas = (uint32_t)out->ready[pi][i];
        out->gpu_hours += P->out->gpu_hours;
    }
    double n = out->requests ? (double)out->requests : 1;
    out->slo_attainment = (double)out->met / n;
    out->ttft_attainment = (double)out->ttft_met / n;
    out->itl_attainment = (double)out->itl_met / n;
    kvg__scale_day_pcts(&R->d, &out->ttft_p50_s, &out->ttft_p90_s, &out->ttft_p99_s,
                        &out->itl_p90_s, &out->cache_hit);
    out->xfer_p90_s = kvg_bench_samples_pct(&R->xfer, 90);
    kvg__scale_pd_class_summary(R);
}

static void teardown(struct pdrun *R)
{
    for (size_t id = 0; id < R->nq; id++) /* the day ended with these running */
        for (int pi = 0; pi < 2; pi++)
            kvg__scale_route_release(&R->pool[pi].rt, &R->q[id].pick[pi], KVG_OUT_CLIENT_GONE,
                                     R->o->day_s);
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        kvg__scale_route_free(&P->rt);
        kvg__scale_reps_free(&P->r);
        kvg_autoscale_planner_free(P->pl);
    }
    free(R->q);
    free(R->gq);
    free(R->dq);
    free(R->xf);
    kvg__scale_cls_free(&R->cls);
    kvg__scale_day_free(&R->d);
    kvg_bench_samples_free(&R->xfer);
}

int kvg_bench_scale_pd_run(const struct kvg_bench_scale_opts *o,
                           struct kvg_bench_scale_pd_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->planner, sizeof out->planner, "%s", o->planner);
    if (!(o->tick_s > 0) || !(o->day_s > 0) || !(o->scrape_s > 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "tick, scrape and day must be > 0");
    struct kvg_bench_scale_opts c = *o;
    if (!(c.pd_prefill_tps > 0) || !(c.pd_decode_tps > 0)) {
        struct kvg_bench_scale_pd_profile pr;
        int rc = kvg_bench_scale_pd_calibrate(o, &pr);
        if (rc) return kvg_err_set(err, errlen, rc, "calibration: %s", kvg_strerror(rc));
        c.pd_prefill_tps = pr.prefill_tps;
        c.pd_decode_tps = pr.decode_tps;
    }
    out->prefill_tps = c.pd_prefill_tps;
    out->decode_tps = c.pd_decode_tps;
    struct pdrun *R = calloc(1, sizeof *R);
    if (!R) return -ENOMEM;
    R->o = &c;
    R->out = out;
    uint64_t w0 = kvg_now_ns();
    int rc = setup(R, err, errlen);
    if (rc == 1)
        rc = 0;
    else if (!rc && !(rc = loop(R)))
        summarize(R);
    else if (rc && !err[0])
        snprintf(err, errlen, "simulation: %s", kvg_strerror(rc));
    out->wall_s = (double)(kvg_now_ns() - w0) / 1e9;
    teardown(R);
    free(R);
    return rc;
}

void kvg_bench_scale_pd_result_free(struct kvg_bench_scale_pd_result *r)
{
    free(r->t_h);
    free(r->rate);
    free(r->arrived);
    free(r->missed);
    free(r->missed_prefill);
    r->t_h = r->rate = r->arrived = r->missed = r->missed_prefill = NULL;
    for (int pi = 0; pi < 2; pi++) {
        free(r->ready[pi]);
        free(r->desired[pi]);
        free(r->starting[pi]);
        r->ready[pi] = r->desired[pi] = r->starting[pi] = NULL;
    }
}
