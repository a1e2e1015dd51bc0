/* The PD day (scale.h, kvg_bench_scale_pd_run): the diurnal traffic on two
 * pools, prefill and decode, each sized by its own planner instance. The
 * engines are the simulator's model driven as bench/pd.c drives it (a
 * prefill with max_tokens 1 and its blocks held, the transfer, the decode
 * with the prompt's KV remote); the traffic, start-up draws and the
 * gateway's windowed observations are the aggregated day's (scale_wl.c,
 * scale_des.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale_int.h"
#include "bench/stats.h"

enum { P_GATEWAY, P_PREFILL, P_WAIT, P_XFER, P_DECODE, P_DONE, P_FAILED };

struct pq {
    struct scale_req r;
    int pre, dec; /* replica indices in their pools, -1 none */
    uint8_t state, first;
    uint32_t ntok;
    double t_first, t_last, xfer_done;
    double t_pre; /* its prefill finished (0: not yet), for the timeline's miss split */
};

struct pool {
    enum kvg_autoscale_role role;
    struct kvg_autoscale_planner *pl;
    struct scale_reps r;
    uint32_t last_desired;
    int have_desired;
    struct kvg_bench_scale_pd_pool *out;
    double headroom; /* the planner's headroom (from o->pd_headroom_from_s when that is set) */
};

struct pdrun {
    const struct kvg_bench_scale_opts *o;
    struct kvg_bench_scale_pd_result *out;
    struct scale_wl wl;
    struct scale_req next;
    int have_next;
    struct pq *q;
    size_t nq, capq;
    struct pool pool[2];
    uint64_t *gq,
        *dq; /* FIFOs of request ids: the gateway's, and prefilled ones awaiting a decode */
    size_t gq_head, gq_tail, gq_cap, dq_head, dq_tail, dq_cap;
    uint64_t *xf; /* requests whose KV is moving */
    size_t nxf, capxf;
    uint64_t sweep;
    uint32_t *prompt;
    struct kvg_autoscale_startup su;
    struct kvg_rng rng;
    struct scale_obs ob;
    double inflight_prompt, kv_bytes_tok, link_bw;
    struct kvg_bench_samples all_ttft, all_itl, xfer;
    double hit_cached, hit_prompt;
    size_t tl_next;
    double tl_arrivals;
    int oracle; /* planner "oracle": scale_pd_oracle_desired() sizes the pools */
    double oracle_lead;
};

static struct bucket *cur(struct pdrun *R)
{
    return scale_obs_cur(&R->ob);
}

static int push(uint64_t **v, size_t *tail, size_t *cap, uint64_t id)
{
    if (*tail == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        uint64_t *n = realloc(*v, c * sizeof *n);
        if (!n) return -ENOMEM;
        *v = n;
        *cap = c;
    }
    (*v)[(*tail)++] = id;
    return 0;
}

static int make_ready(struct pdrun *R, struct pool *P, int k)
{
    uint64_t seed = R->o->seed * 1000003ull + (uint64_t)k * 2 + (P->role == KVG_AUTOSCALE_DECODE);
    return scale_reps_ready(&P->r, k, &R->o->profile, seed);
}

static void kick(struct rep *p, double t)
{
    if (p->stepping || !p->e || kvg_sim_idle(p->e)) return;
    kvg_sim_step(p->e, t, &p->st);
    p->stepping = 1;
    p->busy_until = t + p->st.duration;
}

/* Frees what request q holds on its prefill replica (blocks, in flight). */
static void leave_prefill(struct pdrun *R, struct pq *q, uint64_t id, int abort)
{
    if (q->pre < 0) return;
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

static void fail(struct pdrun *R, uint64_t id)
{
    struct pq *q = &R->q[id];
    if (!q->first) R->inflight_prompt -= q->r.prompt_len;
    if (q->state == P_PREFILL) leave_prefill(R, q, id, 1);
    if (q->state == P_WAIT || q->state == P_XFER) leave_prefill(R, q, id, 0);
    if ((q->state == P_XFER || q->state == P_DECODE) && q->dec >= 0) {
        struct rep *p = &R->pool[1].r.rep[q->dec];
        if (p->e && q->state == P_DECODE) kvg_sim_abort(p->e, id);
        if (p->inflight) p->inflight--;
    }
    q->state = P_FAILED;
    R->out->failed++;
    cur(R)->missed++;
    cur(R)->finished++;
}

static int routable(const struct rep *p)
{
    return p->state == R_READY;
}

/* The prefill replica for q: one that served its prefix unless loaded past
 * 1.5x the mean + 4, else the least loaded (the aggregated day's rule). */
static int pick_prefill(struct pdrun *R, const struct pq *q)
{
    struct pool *P = &R->pool[0];
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < P->r.nact; i++)
        if (routable(&P->r.rep[P->r.act[i]])) sum += P->r.rep[P->r.act[i]].inflight, n++;
    double bound = 1.5 * (n ? sum / (double)n : 0) + 4;
    uint64_t bit = 1ull << q->r.group;
    int best = -1, any = -1;
    for (size_t i = 0; i < P->r.nact; i++) {
        int k = P->r.act[i];
        const struct rep *p = &P->r.rep[k];
        if (!routable(p)) continue;
        if (any < 0 || p->inflight < P->r.rep[any].inflight) any = k;
        if ((p->groups & bit) && p->inflight <= bound &&
            (best < 0 || p->inflight < P->r.rep[best].inflight))
            best = k;
    }
    return best >= 0 ? best : any;
}

static int pick_decode(struct pdrun *R)
{
    struct pool *P = &R->pool[1];
    int best = -1;
    for (size_t i = 0; i < P->r.nact; i++) {
        int k = P->r.act[i];
        if (routable(&P->r.rep[k]) && (best < 0 || P->r.rep[k].inflight < P->r.rep[best].inflight))
            best = k;
    }
    return best;
}

/* Request id onto a prefill replica, or the gateway queue when none is ready. */
static int to_prefill(struct pdrun *R, uint64_t id, double t)
{
    struct pq *q = &R->q[id];
    int k = pick_prefill(R, q);
    if (k < 0) return push(&R->gq, &R->gq_tail, &R->gq_cap, id);
    struct rep *p = &R->pool[0].r.rep[k];
    p->groups |= 1ull << q->r.group;
    scale_wl_prompt(&R->wl, &q->r, R->prompt);
    struct kvg_sim_request sr = {.id = id,
                                 .prompt = R->prompt,
                                 .prompt_len = q->r.prompt_len,
                                 .max_tokens = 1,
                                 .ignore_eos = 1,
                                 .arrival = q->r.arrival,
                                 .hold_blocks = 1};
    int rc = kvg_sim_submit(p->e, &sr);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        fail(R, id);
        return 0;
    }
    q->state = P_PREFILL;
    q->pre = k;
    p->inflight++;
    kick(p, t);
    return 0;
}

/* A prefilled request to a decode replica: its KV starts moving. */
static int to_decode(struct pdrun *R, uint64_t id, double t)
{
    struct pq *q = &R->q[id];
    int k = pick_decode(R);
    if (k < 0) {
        q->state = P_WAIT;
        return push(&R->dq, &R->dq_tail, &R->dq_cap, id);
    }
    q->dec = k;
    R->pool[1].r.rep[k].inflight++;
    double xs = R->kv_bytes_tok * q->r.prompt_len / R->link_bw;
    q->xfer_done = t + xs;
    q->state = P_XFER;
    kvg_bench_samples_add(&R->xfer, xs);
    if (R->nxf == R->capxf) {
        size_t c = R->capxf ? R->capxf * 2 : 256;
        uint64_t *v = realloc(R->xf, c * sizeof *v);
        if (!v) return -ENOMEM;
        R->xf = v;
        R->capxf = c;
    }
    R->xf[R->nxf++] = id;
    return 0;
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
    scale_wl_prompt(&R->wl, &q->r, R->prompt);
    struct kvg_sim_request sr = {.id = id,
                                 .prompt = R->prompt,
                                 .prompt_len = q->r.prompt_len,
                                 .max_tokens = q->r.max_tokens,
                                 .ignore_eos = 1,
                                 .arrival = q->r.arrival,
                                 .remote_tokens = q->r.prompt_len};
    int rc = kvg_sim_submit(p->e, &sr);
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
    while (R->gq_head < R->gq_tail && pick_prefill(R, &R->q[R->gq[R->gq_head]]) >= 0) {
        uint64_t id = R->gq[R->gq_head++];
        if (R->q[id].state == P_GATEWAY && (rc = to_prefill(R, id, t))) return rc;
    }
    if (R->gq_head == R->gq_tail) R->gq_head = R->gq_tail = 0;
    while (R->dq_head < R->dq_tail && pick_decode(R) >= 0) {
        uint64_t id = R->dq[R->dq_head++];
        if (R->q[id].state == P_WAIT && (rc = to_decode(R, id, t))) return rc;
    }
    if (R->dq_head == R->dq_tail) R->dq_head = R->dq_tail = 0;
    return 0;
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
    q->r = R->next;
    q->pre = q->dec = -1;
    q->state = P_GATEWAY;
    struct bucket *b = cur(R);
    b->arrivals++;
    b->prompt_tokens += q->r.prompt_len;
    b->max_tokens += q->r.max_tokens;
    R->tl_arrivals++;
    R->inflight_prompt += q->r.prompt_len;
    R->have_next = scale_wl_next(&R->wl, &R->next) == 0;
    return to_prefill(R, id, q->r.arrival);
}

static void finish(struct pdrun *R, struct pq *q, double t)
{
    const struct kvg_autoscale_opts *a = &R->o->aopts;
    q->state = P_DONE;
    double itl = q->ntok > 1 ? (q->t_last - q->t_first) / (q->ntok - 1) : 0;
    double ttft = q->t_first - q->r.arrival;
    struct bucket *b = cur(R);
    b->finished++;
    b->itl_sum += itl;
    scale_lat_put(R->ob.itl, t, itl);
    kvg_bench_samples_add(&R->all_itl, itl);
    int tok = ttft <= a->ttft_target_s, iok = itl <= a->itl_target_s;
    R->out->ttft_met += tok;
    R->out->itl_met += iok;
    R->out->met += tok && iok;
    b->missed += !(tok && iok);
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
            R->hit_cached += u->cached_tokens;
            R->hit_prompt += q->r.prompt_len;
            cur(R)->cached += u->cached_tokens;
            cur(R)->first_prompt += q->r.prompt_len;
            q->t_pre = t;
            if ((rc = to_decode(R, u->id, t))) return rc;
            continue;
        }
        if (q->state != P_DECODE) continue;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            cur(R)->out_tokens++;
            if (!q->first) {
                q->first = 1;
                q->t_first = t;
                R->inflight_prompt -= q->r.prompt_len;
                double ttft = t - q->r.arrival;
                cur(R)->firsts++;
                cur(R)->ttft_sum += ttft;
                scale_lat_put(R->ob.ttft, t, ttft);
                kvg_bench_samples_add(&R->all_ttft, ttft);
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
    kick(p, t);
    if (p->state == R_DRAINING && p->inflight == 0 && !p->stepping) scale_reps_gone(&P->r, k, t);
    return 0;
}

/* Requests without a first token past the timeout; drains past theirs. */
static void expire(struct pdrun *R, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    for (; R->sweep < R->nq; R->sweep++) {
        struct pq *q = &R->q[R->sweep];
        if (q->state == P_DONE || q->state == P_FAILED || q->first) continue;
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
                scale_reps_gone(&P->r, k, t);
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
    scale_reps_signals(&P->r, t, P->role == KVG_AUTOSCALE_PREFILL ? R->o->young_s : 0, s, eta);
    /* The queue in front of this pool: the gateway's, or prefilled requests
     * awaiting a decode replica. */
    size_t nq = 0;
    if (P->role == KVG_AUTOSCALE_PREFILL) {
        for (size_t i = R->gq_head; i < R->gq_tail; i++) nq += R->q[R->gq[i]].state == P_GATEWAY;
        s->inflight_prompt_tokens = R->inflight_prompt;
    } else {
        for (size_t i = R->dq_head; i < R->dq_tail; i++) nq += R->q[R->dq[i]].state == P_WAIT;
    }
    s->queued = (double)nq;
    scale_window_signals(&R->ob, R->o->tick_s, window, s);
}

static void timeline(struct pdrun *R, double t)
{
    struct kvg_bench_scale_pd_result *r = R->out;
    double step = R->o->day_s / (double)r->n;
    while (R->tl_next < r->n && t >= (double)(R->tl_next + 1) * step) {
        size_t i = R->tl_next++;
        r->t_h[i] = (double)(i + 1) * step / R->o->day_s * 24;
        r->rate[i] = R->tl_arrivals / step;
        for (int pi = 0; pi < 2; pi++) {
            const struct pool *P = &R->pool[pi];
            uint32_t n = 0, st = 0;
            scale_reps_count(&P->r, &n, &st);
            r->ready[pi][i] = n;
            r->starting[pi][i] = st;
            r->desired[pi][i] = P->last_desired;
        }
        R->tl_arrivals = 0;
    }
}

static int tick(struct pdrun *R, double t)
{
    expire(R, t);
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        double window = R->o->window_s;
        if (!(window > 0)) {
            double iv = P->pl->o.interval_s;
            if (!(iv > 0)) iv = !strcmp(R->o->planner, "sla") ? 180 : 30;
            window = iv > 30 ? iv : 30;
        }
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
            d.desired = scale_pd_oracle_desired(&R->wl, &P->pl->o, R->oracle_lead, s.cache_hit, t);
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
        if ((rc = scale_reps_actuate(&P->r, R->o, &R->su, &R->rng, d.desired, t))) return rc;
    }
    timeline(R, t);
    scale_obs_next(&R->ob);
    return 0;
}

/* Each pool's planner options: the aggregated runs' own, the role's, and
 * the measured per-role profile (queue's V_P stays the batch-1 peak, as in
 * the aggregated runs: llm-d's calibrate.sh measures a peak). */
static void pool_opts(const struct kvg_bench_scale_opts *o, enum kvg_autoscale_role role,
                      struct kvg_autoscale_startup *su, struct kvg_autoscale_opts *a)
{
    *a = o->aopts;
    a->role = role;
    scale_derive_profile(o, 0, &a->prof);
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
    double isl = o->prefix_len + (o->suffix_min + o->suffix_max) / 2.0;
    return kvg_autoscale_load(a, rate * isl, rate * o->osl, a->itl_target_s) * (1 + a->headroom);
}

static int setup(struct pdrun *R, char *err, size_t errlen)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_pd_result *out = R->out;
    int rc = scale_wl_init(&R->wl, o);
    if (rc) return kvg_err_set(err, errlen, rc, "workload: %s", kvg_strerror(rc));
    R->have_next = scale_wl_next(&R->wl, &R->next) == 0;
    kvg_autoscale_startup_init(&R->su);
    kvg_rng_seed(&R->rng, o->seed * 31 + 7);
    R->oracle = !strcmp(o->planner, "oracle");
    R->oracle_lead = scale_pd_oracle_lead(o, &R->su);
    for (uint32_t b = 0; o->trace && b < o->bursts && b < 64; b++)
        fprintf(stderr, "%s: burst %u at %.0f s (%.0f s, x%.2f)\n", o->planner, b,
                R->wl.burst_at[b], o->burst_s, o->burst_mult);
    R->kv_bytes_tok = (double)kvg_sim_kv_bytes_per_token(&o->profile);
    R->link_bw = kvg_sim_link_bw(1); /* prefill and decode in one rack */
    double mx = 0;
    for (int i = 0; i < 24 * 60; i++) mx = fmax(mx, kvg_bench_scale_shape(i / 60.0));
    double peak = o->mean_rate * mx * (o->bursts ? o->burst_mult : 1);
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        P->role = pi ? KVG_AUTOSCALE_DECODE : KVG_AUTOSCALE_PREFILL;
        P->out = &out->pool[pi];
        struct kvg_autoscale_opts a;
        pool_opts(o, P->role, &R->su, &a);
        P->out->static_peak = kvg_autoscale_ceil(pool_need(o, &a, peak));
        if (!a.static_replicas) a.static_replicas = P->out->static_peak;
        P->headroom = a.headroom;
        if (o->pd_headroom[pi] >= 0) P->headroom = o->pd_headroom[pi];
        if (!(o->pd_headroom_from_s > 0)) a.headroom = P->headroom;
        /* The oracle is the bench's, not a planner: a static instance holds
         * its options and interval; tick() asks the oracle instead. */
        rc = scale_planner_new(R->oracle ? "static" : o->planner, &a, &P->pl, err, errlen);
        if (rc == KVG_ENOTFOUND) out->status = KVG_ENOTFOUND;
        if (rc) return rc == KVG_ENOTFOUND ? 1 : rc;
    }
    if (scale_obs_init(&R->ob)) return -ENOMEM;
    R->prompt = malloc(((size_t)o->prefix_len + o->suffix_max + 1) * sizeof *R->prompt);
    out->n = o->timeline_points ? o->timeline_points : 288;
    out->t_h = calloc(out->n, sizeof(double));
    out->rate = calloc(out->n, sizeof(double));
    int ok = R->prompt && out->t_h && out->rate;
    out->arrived = calloc(out->n, sizeof(double));
    out->missed = calloc(out->n, sizeof(double));
    out->missed_prefill = calloc(out->n, sizeof(double));
    ok = ok && out->arrived && out->missed && out->missed_prefill;
    for (int pi = 0; pi < 2; pi++) {
        out->ready[pi] = calloc(out->n, sizeof(double));
        out->desired[pi] = calloc(out->n, sizeof(double));
        out->starting[pi] = calloc(out->n, sizeof(double));
        ok = ok && out->ready[pi] && out->desired[pi] && out->starting[pi];
    }
    if (!ok) return -ENOMEM;
    kvg_bench_samples_init(&R->all_ttft);
    kvg_bench_samples_init(&R->all_itl);
    kvg_bench_samples_init(&R->xfer);
    /* The day starts with what its first hour needs (static: its count),
     * ready, with empty caches. */
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        const struct kvg_autoscale_opts *a = &P->pl->o;
        uint32_t n0 = !strcmp(o->planner, "static")
                          ? a->static_replicas
                          : kvg_autoscale_ceil(pool_need(o, a, scale_wl_rate(&R->wl, 0)));
        if (R->oracle) n0 = scale_pd_oracle_desired(&R->wl, a, R->oracle_lead, 0, 0);
        if (n0 < a->min_replicas) n0 = a->min_replicas;
        if (n0 < 1) n0 = 1;
        for (uint32_t i = 0; i < n0; i++) {
            if ((rc = scale_reps_add(&P->r, o, &R->su, &R->rng, 0))) return rc;
            P->r.rep[P->r.nrep - 1].ready_at = 0;
            if ((rc = make_ready(R, P, (int)P->r.nrep - 1))) return rc;
        }
        P->r.added = 0;
    }
    return 0;
}

static int loop(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    double next_tick = o->tick_s;
    for (;;) {
        double ta = R->have_next ? R->next.arrival : INFINITY;
        double tt = next_tick <= o->day_s ? next_tick : INFINITY;
        double te = INFINITY, tr = INFINITY, tx = INFINITY;
        int pe = -1, ke = -1, pr = -1, kr = -1;
        size_t kx = 0;
        for (int pi = 0; pi < 2; pi++) {
            const struct pool *P = &R->pool[pi];
            for (size_t i = 0; i < P->r.nact; i++) {
                int k = P->r.act[i];
                const struct rep *p = &P->r.rep[k];
                if (p->stepping && p->busy_until < te) te = p->busy_until, pe = pi, ke = k;
                if (p->state == R_STARTING && p->ready_at < tr && p->ready_at <= o->day_s)
                    tr = p->ready_at, pr = pi, kr = k;
            }
        }
        for (size_t i = 0; i < R->nxf; i++)
            if (R->q[R->xf[i]].xfer_done < tx) tx = R->q[R->xf[i]].xfer_done, kx = i;
        int rc;
        if (tx < INFINITY && tx <= te && tx <= tr && tx <= tt && tx <= ta) {
            rc = xfer_done(R, kx, tx);
        } else if (ke >= 0 && te <= tr && te <= tt && te <= ta) {
            rc = step_end(R, &R->pool[pe], ke, te);
        } else if (kr >= 0 && tr <= tt && tr <= ta) {
            rc = make_ready(R, &R->pool[pr], kr);
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
 * and missed on the prefill side (its prefill, queue included, finished
 * past the TTFT target or never): the rest waited for or on a decode. */
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
        int ok =
            q->state == P_DONE && q->t_first - q->r.arrival <= o->aopts.ttft_target_s &&
            (q->ntok > 1 ? (q->t_last - q->t_first) / (q->ntok - 1) : 0) <= o->aopts.itl_target_s;
        if (ok) continue;
        out->missed[i]++;
        if (!(q->t_pre > 0) || q->t_pre - q->r.arrival > o->aopts.ttft_target_s)
            out->missed_prefill[i]++;
    }
}

static void summarize(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct kvg_bench_scale_pd_result *out = R->out;
    out->requests = R->nq;
    for (size_t i = 0; i < R->nq; i++)
        if (R->q[i].state == P_FAILED && !R->q[i].first)
            kvg_bench_samples_add(&R->all_ttft, o->timeout_s); /* at least the timeout */
    timeline_misses(R);
    double gpus = o->gpus_per_replica ? o->gpus_per_replica : 1;
    for (int pi = 0; pi < 2; pi++) {
        const struct pool *P = &R->pool[pi];
        double rh = scale_reps_seconds(&P->r, o->day_s);
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
    out->ttft_p50_s = kvg_bench_samples_pct(&R->all_ttft, 50);
    out->ttft_p90_s = kvg_bench_samples_pct(&R->all_ttft, 90);
    out->ttft_p99_s = kvg_bench_samples_pct(&R->all_ttft, 99);
    out->itl_p90_s = kvg_bench_samples_pct(&R->all_itl, 90);
    out->xfer_p90_s = kvg_bench_samples_pct(&R->xfer, 90);
    out->cache_hit = R->hit_prompt > 0 ? R->hit_cached / R->hit_prompt : 0;
}

static void teardown(struct pdrun *R)
{
    for (int pi = 0; pi < 2; pi++) {
        struct pool *P = &R->pool[pi];
        scale_reps_free(&P->r);
        kvg_autoscale_planner_free(P->pl);
    }
    free(R->q);
    free(R->gq);
    free(R->dq);
    free(R->xf);
    free(R->prompt);
    scale_obs_free(&R->ob);
    kvg_bench_samples_free(&R->all_ttft);
    kvg_bench_samples_free(&R->all_itl);
    kvg_bench_samples_free(&R->xfer);
    scale_wl_free(&R->wl);
}

int kvg_bench_scale_pd_run(const struct kvg_bench_scale_opts *o,
                           struct kvg_bench_scale_pd_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->planner, sizeof out->planner, "%s", o->planner);
    if (!(o->tick_s > 0) || !(o->day_s > 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "tick and day must be > 0");
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
