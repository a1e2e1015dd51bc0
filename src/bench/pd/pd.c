/* kvgate bench --scenario pd's engine model: aggregated serving and
 * prefill/decode splits, offline, in virtual time.
 *
 * The engines are the simulator's model (sim/sim.h), the same code kvgate
 * sim runs. Aggregated: each request to the engine with the fewest requests
 * in flight. Split P:D: a request's prefill runs on the least busy prefill
 * engine (max_tokens 1, blocks held, as vLLM's NIXL prefill); when it is
 * done a decode is picked (the fewest requests, or a router policy such as
 * kvgate's pd_decode with the prefill's labels), the KV moves over the link
 * between the two (KV bytes from the profile's shape / the link's
 * bandwidth, sim/link.c, as kvgate sim's transfers), the prefill's blocks
 * are freed, and the decode computes the last prompt token and the output.
 * Under overload a decode may refuse a request its KV has no room for (the
 * prefill is then wasted), and kvgate's early rejection predictor
 * (kvg_pd_has_room) may reject it at the door instead. TTFT is arrival to
 * the first token the client gets (for a split: prefill + transfer + the
 * decode's first step); ITL the gaps between its tokens. Goodput: requests
 * per second that met both SLOs (TTFT <= 2 s and their mean ITL <= 50 ms). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "bench/pd/pd_int.h"
#include "router/worker.h"
#include "sim/sim.h"

struct preq {
    double arrival, t_first, t_last, itl_sum;
    uint32_t ntok;
    int prefill_eng, decode_eng; /* -1 none yet */
    double xfer_done;
    int in_xfer;
};

struct eng {
    struct kvg_sim *e;
    int role; /* 0 aggregated, 1 prefill, 2 decode */
    int busy;
    double until;
    struct kvg_sim_step st;
    uint32_t active;      /* requests assigned (a decode: from its pick, transfer included) */
    uint64_t blocks;      /* a decode: KV blocks reserved by its requests (prompt + output) */
    struct kvg_worker *w; /* a decode, for a router policy's pick */
};

struct run {
    struct eng eng[KVG_BENCH_PD_MAX_ENG];
    int n;
    struct preq *r;
    uint32_t *tokens; /* prompt ids of request i at i * prompt */
    const struct kvg_bench_pd_setup *s;
    struct kvg_pd_config pdc;
    double kv_bytes_tok;
    uint32_t block_size;
    uint64_t capacity_blocks, req_blocks, prompt_blocks;
    uint64_t committed; /* prompt blocks of the prefills in flight */
    uint32_t finished;
    struct kvg_bench_pd_stats *st;
};

static int least(struct run *R, int role)
{
    int best = -1;
    for (int i = 0; i < R->n; i++)
        if (R->eng[i].role == role && (best < 0 || R->eng[i].active < R->eng[best].active))
            best = i;
    return best;
}

static void kick(struct eng *g, double t)
{
    if (g->busy || kvg_sim_idle(g->e)) return;
    kvg_sim_step(g->e, t, &g->st);
    g->busy = 1;
    g->until = t + g->st.duration;
}

static void submit(struct run *R, int ei, uint64_t id, uint32_t max_tokens, uint32_t remote,
                   int hold, double t)
{
    struct kvg_sim_request q = {.id = id,
                                .prompt = R->tokens + (size_t)id * R->s->prompt,
                                .prompt_len = R->s->prompt,
                                .max_tokens = max_tokens,
                                .ignore_eos = 1,
                                .arrival = R->r[id].arrival,
                                .remote_tokens = remote,
                                .hold_blocks = hold};
    if (kvg_sim_submit(R->eng[ei].e, &q) == 0) R->eng[ei].active++;
    kick(&R->eng[ei], t);
}

/* The decode for a finished prefill on engine pe. */
static int pick_decode(struct run *R, int pe)
{
    const struct kvg_bench_pd_setup *s = R->s;
    if (!s->decode_pick) return least(R, 2);
    struct kvg_worker *ws[KVG_BENCH_PD_MAX_ENG];
    int idx[KVG_BENCH_PD_MAX_ENG], n = 0;
    for (int i = 0; i < R->n; i++) {
        if (R->eng[i].role != 2) continue;
        struct kvg_worker *w = R->eng[i].w;
        atomic_store(&w->in_flight, R->eng[i].active);
        atomic_store(&w->active_decode_blocks, R->eng[i].blocks);
        idx[n] = i;
        ws[n++] = w;
    }
    struct kvg_route_ctx c = {.now_ms = 1,
                              .load_max_age_ms = 1,
                              .block_size = R->block_size,
                              .ntokens = s->prompt,
                              .near_labels = s->near && s->labels ? s->labels[pe] : NULL};
    int k = s->decode_pick->ops->select(s->decode_pick, ws, (size_t)n, &c, NULL);
    return idx[k >= 0 && k < n ? k : 0];
}

/* Early rejection at the door: will some decode have room when this
 * request's prefill is done (kvgate's predictor, pd's defaults)? */
static int door_room(struct run *R)
{
    struct kvg_pd_decode_view v[KVG_BENCH_PD_MAX_ENG];
    size_t n = 0;
    for (int i = 0; i < R->n; i++)
        if (R->eng[i].role == 2)
            v[n++] =
                (struct kvg_pd_decode_view){(double)R->eng[i].blocks, (double)R->capacity_blocks};
    double prefill_s = (double)R->s->prompt / R->pdc.prefill_tokens_per_s;
    return kvg_pd_has_room(v, n, (double)R->req_blocks, (double)R->committed, prefill_s,
                           R->pdc.decode_secs, R->pdc.reject_kv_frac);
}

static void request_done(struct run *R, double t)
{
    R->finished++;
    if (t > R->st->duration) R->st->duration = t;
}

static void prefill_done(struct run *R, int pe, uint64_t id, double t)
{
    struct preq *q = &R->r[id];
    R->committed -= R->prompt_blocks;
    int de = pick_decode(R, pe);
    struct eng *d = &R->eng[de];
    if (R->s->decode_admission && d->blocks + R->req_blocks > R->capacity_blocks) {
        /* Refused after its prefill ran: the prefill was wasted. */
        R->st->decode_refused++;
        R->st->wasted_prefill_tokens += R->s->prompt;
        kvg_sim_release(R->eng[pe].e, id);
        request_done(R, t);
        return;
    }
    d->active++;
    d->blocks += R->req_blocks;
    q->decode_eng = de;
    q->prefill_eng = pe;
    q->in_xfer = 1;
    int link = 2;
    double bw = R->s->link_bw;
    if (R->s->labels) {
        link = kvg_sim_link_of(R->s->labels[pe], R->s->labels[de]);
        bw = kvg_sim_link_bw(link);
    }
    double xs = R->kv_bytes_tok * R->s->prompt / bw;
    q->xfer_done = t + xs;
    R->st->by_link[link]++;
    kvg_bench_samples_add(&R->st->xfer, xs);
}

static void step_done(struct run *R, int ei, double t)
{
    struct eng *g = &R->eng[ei];
    g->busy = 0;
    for (size_t k = 0; k < g->st.n_updates; k++) {
        const struct kvg_sim_update *u = &g->st.updates[k];
        struct preq *q = &R->r[u->id];
        if (g->role == 1) {
            if (u->flags & KVG_SIM_UP_FINISHED) {
                g->active--;
                prefill_done(R, ei, u->id, t);
            }
            continue;
        }
        if (u->flags & KVG_SIM_UP_TOKEN) {
            if (u->flags & KVG_SIM_UP_FIRST) {
                q->t_first = t;
                kvg_bench_samples_add(&R->st->ttft, t - q->arrival);
            } else {
                kvg_bench_samples_add(&R->st->itl, t - q->t_last);
                q->itl_sum += t - q->t_last;
            }
            q->t_last = t;
            q->ntok++;
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            g->active--;
            if (g->role == 2) g->blocks -= R->req_blocks;
            R->st->served++;
            double mitl = q->ntok > 1 ? q->itl_sum / (q->ntok - 1) : 0;
            if (q->t_first - q->arrival <= 2.0 && mitl <= 0.050) R->st->good++;
            request_done(R, t);
        }
    }
    kick(g, t);
}

static void arrival(struct run *R, uint32_t id, double t)
{
    const struct kvg_bench_pd_setup *s = R->s;
    if (!s->np) {
        submit(R, least(R, 0), id, s->output, 0, 0, t);
        return;
    }
    if (s->early_rejection && !door_room(R)) {
        R->st->door_rejected++;
        request_done(R, t);
        return;
    }
    R->committed += R->prompt_blocks;
    submit(R, least(R, 1), id, 1, 0, 1, t);
}

static int setup_run(const struct kvg_bench_pd_setup *s, struct run *R)
{
    const struct kvg_sim_profile *p = kvg_sim_profile_find(s->profile);
    if (!p || s->np + s->nd > KVG_BENCH_PD_MAX_ENG || !s->nd) return -1;
    R->n = s->np + s->nd;
    R->kv_bytes_tok = (double)kvg_sim_kv_bytes_per_token(p);
    R->block_size = p->block_size;
    R->capacity_blocks = p->kv_capacity_tokens / p->block_size;
    R->prompt_blocks = (s->prompt + p->block_size - 1) / p->block_size;
    R->req_blocks = (s->prompt + s->output + p->block_size - 1) / p->block_size;
    kvg_pd_config_default(&R->pdc);
    R->r = calloc(s->requests, sizeof *R->r);
    R->tokens = malloc((size_t)s->requests * s->prompt * sizeof *R->tokens);
    if (!R->r || !R->tokens) return -1;
    struct kvg_rng rng;
    kvg_rng_seed(&rng, s->seed);
    for (size_t i = 0; i < (size_t)s->requests * s->prompt; i++)
        R->tokens[i] = 100 + (uint32_t)kvg_rng_below(&rng, 30000); /* unshared prompts */
    double t = 0;
    for (uint32_t i = 0; i < s->requests; i++) {
        t += -log(1.0 - kvg_rng_double(&rng)) / s->rate;
        R->r[i].arrival = t;
        R->r[i].prefill_eng = R->r[i].decode_eng = -1;
    }
    for (int i = 0; i < R->n; i++) {
        struct kvg_sim_config c;
        kvg_sim_config_init(&c, p);
        c.seed = s->seed + (uint64_t)i;
        c.emit_events = 0;
        if (kvg_sim_create(&c, &R->eng[i].e)) return -1;
        R->eng[i].role = s->np == 0 ? 0 : i < s->np ? 1 : 2;
        if (R->eng[i].role == 2 && s->decode_pick) {
            char url[64];
            snprintf(url, sizeof url, "http://10.0.0.%d:8000", i + 1); /* never dialled */
            if (kvg_worker_new(url, &R->eng[i].w)) return -1;
            if (s->labels)
                snprintf(R->eng[i].w->labels, sizeof R->eng[i].w->labels, "%s", s->labels[i]);
        }
    }
    return 0;
}

int kvg__bench_pd_run(const struct kvg_bench_pd_setup *s, struct kvg_bench_pd_stats *st)
{
    struct run *R = calloc(1, sizeof *R);
    if (!R) return -1;
    memset(st, 0, sizeof *st);
    kvg_bench_samples_init(&st->ttft);
    kvg_bench_samples_init(&st->itl);
    kvg_bench_samples_init(&st->xfer);
    R->s = s;
    R->st = st;
    int rc = setup_run(s, R);
    uint32_t issued = 0;
    for (uint64_t guard = 0; !rc && R->finished < s->requests && guard < 100000000; guard++) {
        /* The next event: an arrival, a step's end, a transfer's end. */
        double tn = issued < s->requests ? R->r[issued].arrival : INFINITY;
        int kind = 0, who = -1;
        for (int i = 0; i < R->n; i++)
            if (R->eng[i].busy && R->eng[i].until < tn) {
                tn = R->eng[i].until;
                kind = 1;
                who = i;
            }
        for (uint32_t i = 0; i < issued; i++)
            if (R->r[i].in_xfer && R->r[i].xfer_done < tn) {
                tn = R->r[i].xfer_done;
                kind = 2;
                who = (int)i;
            }
        if (isinf(tn)) break;
        if (kind == 0) {
            uint32_t id = issued++;
            arrival(R, id, tn);
        } else if (kind == 1) {
            step_done(R, who, tn);
        } else {
            struct preq *q = &R->r[who];
            q->in_xfer = 0;
            kvg_sim_release(R->eng[q->prefill_eng].e, (uint64_t)who);
            R->eng[q->decode_eng].active--; /* submit counts it again */
            submit(R, q->decode_eng, (uint64_t)who, s->output, s->prompt, 0, tn);
        }
    }
    if (R->s->requests) st->duration -= R->r ? R->r[0].arrival : 0;
    for (int i = 0; i < R->n; i++) {
        if (R->eng[i].e) kvg_sim_free(R->eng[i].e);
        if (R->eng[i].w) kvg_worker_unref(R->eng[i].w);
    }
    free(R->tokens);
    free(R->r);
    free(R);
    return rc;
}

void kvg__bench_pd_stats_free(struct kvg_bench_pd_stats *st)
{
    kvg_bench_samples_free(&st->ttft);
    kvg_bench_samples_free(&st->itl);
    kvg_bench_samples_free(&st->xfer);
}
