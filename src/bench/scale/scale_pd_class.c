/* The PD day's traffic classes (scale.h: batch_share): a share of requests
 * is batch, drawn from a generator of its own (the day's other draws stay
 * the same with or without classes). A batch request waits in the
 * gateway's batch queue, FIFO, and goes only as the gateway's batch rule
 * lets it (gateway/admission.h): no interactive request waiting in the
 * gateway, a prefill replica whose engine has no prompt pending (waiting
 * < 1) and a decode replica with room (fewer running sequences than 0.8 of
 * what the measured decode profile holds within the ITL target: the
 * batch_max_kv analogue). Past its deadline in the queue it is dropped
 * (the gateway's 429). The planners see the backlog through the batch
 * signals (autoscale/planner.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "bench/scale/scale_pd_int.h"

void kvg__scale_pd_class_init(struct pdrun *R)
{
    const struct kvg_bench_scale_opts *o = R->o;
    /* sla is Dynamo's planner: no classes, every request interactive. */
    R->classes = o->batch_share > 0 && strcmp(o->planner, "sla") != 0;
    R->out->classes = R->classes;
    kvg_rng_seed(&R->cls_rng, o->seed * 0x9e3779b97f4a7c15ull + 0xba7c4);
    R->dec_seqs = 0.8 * o->pd_decode_tps * o->aopts.itl_target_s;
    if (R->dec_seqs < 1) R->dec_seqs = 1;
}

static double deadline_of(const struct pdrun *R, const struct pq *q)
{
    return q->r.arrival + R->o->batch_deadline_s;
}

int kvg__scale_pd_class_arrive(struct pdrun *R, uint64_t id, double t)
{
    if (!R->classes) return 0;
    struct pq *q = &R->q[id];
    if (!(kvg_rng_double(&R->cls_rng) < R->o->batch_share)) return 0;
    q->batch = 1;
    int rc = kvg__scale_ids_push(&R->bq, &R->bq_tail, &R->bq_cap, id);
    if (rc) return rc;
    R->bq_prompt += q->r.prompt_len;
    R->bq_out += q->r.max_tokens;
    rc = kvg__scale_pd_batch_drain(R, t);
    return rc ? rc : 1;
}

/* A prefill replica in a trough for q (one that served its prefix first),
 * or -1. */
static int trough_prefill(const struct pdrun *R, const struct pq *q)
{
    const struct scale_reps *P = &R->pool[0].r;
    uint64_t bit = 1ull << q->r.group;
    int any = -1;
    for (size_t i = 0; i < P->nact; i++) {
        int k = P->act[i];
        const struct rep *p = &P->rep[k];
        if (p->state != R_READY || p->pend_tok >= 1) continue;
        if (p->groups & bit) return k;
        if (any < 0) any = k;
    }
    return any;
}

static int decode_room(const struct pdrun *R)
{
    const struct scale_reps *P = &R->pool[1].r;
    for (size_t i = 0; i < P->nact; i++) {
        const struct rep *p = &P->rep[P->act[i]];
        if (p->state == R_READY && (double)p->inflight < R->dec_seqs) return 1;
    }
    return 0;
}

static int interactive_waits(const struct pdrun *R)
{
    for (size_t i = R->gq_head; i < R->gq_tail; i++)
        if (R->q[R->gq[i]].state == P_GATEWAY) return 1;
    return 0;
}

static void unqueue(struct pdrun *R, const struct pq *q)
{
    R->bq_prompt -= q->r.prompt_len;
    R->bq_out -= q->r.max_tokens;
    R->bq_head++;
    if (R->bq_head == R->bq_tail) {
        R->bq_head = R->bq_tail = 0;
        R->bq_prompt = R->bq_out = 0; /* no float dust left behind */
    }
}

int kvg__scale_pd_batch_drain(struct pdrun *R, double t)
{
    if (R->bq_head == R->bq_tail || interactive_waits(R)) return 0;
    while (R->bq_head < R->bq_tail) {
        uint64_t id = R->bq[R->bq_head];
        struct pq *q = &R->q[id];
        if (q->state != P_GATEWAY) {
            R->bq_head++; /* failed meanwhile (its tokens already left) */
            continue;
        }
        int k = trough_prefill(R, q);
        if (k < 0 || !decode_room(R)) break;
        unqueue(R, q);
        q->t_disp = t;
        int rc = kvg__scale_pd_to_prefill_on(R, id, k, t);
        if (rc) return rc;
    }
    if (R->bq_head == R->bq_tail) R->bq_head = R->bq_tail = 0;
    return 0;
}

void kvg__scale_pd_batch_expire(struct pdrun *R, double t)
{
    /* FIFO with one deadline for all: the head is the first to expire. */
    while (R->bq_head < R->bq_tail) {
        uint64_t id = R->bq[R->bq_head];
        struct pq *q = &R->q[id];
        if (q->state == P_GATEWAY && deadline_of(R, q) > t) break;
        if (q->state == P_GATEWAY) {
            unqueue(R, q);
            kvg__scale_pd_fail(R, id);
        } else {
            R->bq_head++;
        }
    }
    if (R->bq_head == R->bq_tail) R->bq_head = R->bq_tail = 0;
}

void kvg__scale_pd_batch_signals(const struct pdrun *R, double t, struct kvg_autoscale_signals *s)
{
    size_t n = 0;
    double first = -1;
    for (size_t i = R->bq_head; i < R->bq_tail; i++) {
        const struct pq *q = &R->q[R->bq[i]];
        if (q->state != P_GATEWAY) continue;
        if (!n) first = deadline_of(R, q);
        n++;
    }
    s->batch_queued = (double)n;
    s->batch_prompt_tokens = n ? R->bq_prompt : 0;
    s->batch_out_tokens = n ? R->bq_out : 0;
    s->batch_slack_s = n ? fmax(first - t, 1e-3) : 0;
    /* Live, queued requests are in no worker's in-flight prompt count: the
     * batch queue's are not either. */
    if (s->inflight_prompt_tokens > 0 && n)
        s->inflight_prompt_tokens = fmax(0, s->inflight_prompt_tokens - R->bq_prompt);
}

void kvg__scale_pd_class_summary(struct pdrun *R)
{
    struct kvg_bench_scale_pd_result *out = R->out;
    for (size_t id = 0; id < R->nq; id++) {
        const struct pq *q = &R->q[id];
        int done = q->state == P_DONE;
        if (!q->batch) {
            out->interactive++;
            out->interactive_met += done && q->ok;
            continue;
        }
        out->batch++;
        out->batch_met += done && q->ok;
        out->batch_in_deadline += done && q->t_done <= deadline_of(R, q);
        out->batch_dropped += !done;
    }
    out->slo_attainment_interactive =
        out->interactive ? (double)out->interactive_met / (double)out->interactive : 0;
    out->slo_attainment_batch = out->batch ? (double)out->batch_met / (double)out->batch : 1;
    out->batch_deadline_met = out->batch ? (double)out->batch_in_deadline / (double)out->batch : 1;
}
