/* The PD day's side of the traffic classes (scale_class.c has the
 * mechanism, shared with the aggregated day): its request states, and its
 * trough, the gateway's batch rule (gateway/admission.h) on two pools: a
 * prefill replica whose engine has no prompt pending (waiting < 1) and a
 * decode replica with room (fewer running sequences than 0.8 of what the
 * measured decode profile holds within the ITL target: the batch_max_kv
 * analogue). */
#include <string.h>

#include "bench/scale/scale_pd_int.h"

static int pd_waiting(void *day, uint64_t id)
{
    const struct pdrun *R = day;
    return R->q[id].state == P_GATEWAY;
}

static int pd_interactive_waits(void *day)
{
    const struct pdrun *R = day;
    for (size_t i = R->gq_head; i < R->gq_tail; i++)
        if (R->q[R->gq[i]].state == P_GATEWAY) return 1;
    return 0;
}

static int decode_room(const struct pdrun *R)
{
    const struct scale_reps *P = &R->pool[1].r;
    for (size_t i = 0; i < P->nact; i++) {
        const struct rep *p = &P->rep[P->act[i]];
        if (p->state == R_READY && (double)p->inflight < R->cls.seqs) return 1;
    }
    return 0;
}

/* A prefill replica in a trough: its engine has no prompt pending. */
static int in_trough(void *day, int k)
{
    const struct pdrun *R = day;
    const struct rep *p = &R->pool[0].r.rep[k];
    return p->state == R_READY && p->pend_tok < 1;
}

/* A prefill replica in a trough while a decode replica has room, or -1. */
static int pd_trough(void *day, uint64_t id)
{
    const struct pdrun *R = day;
    const struct scale_reps *P = &R->pool[0].r;
    (void)id;
    if (!decode_room(R)) return -1;
    for (size_t i = 0; i < P->nact; i++)
        if (in_trough(day, P->act[i])) return P->act[i];
    return -1;
}

/* As serve, the rule filters the candidates and the policy picks. */
static int pd_dispatch(void *day, uint64_t id, int k, double t)
{
    struct pdrun *R = day;
    (void)k;
    R->q[id].t_disp = t;
    return kvg__scale_pd_to_prefill_by(R, id, t, in_trough);
}

static void pd_reject(void *day, uint64_t id)
{
    kvg__scale_pd_fail(day, id);
}

static const struct scale_cls_ops g_pd_ops = {pd_waiting, pd_interactive_waits, pd_trough,
                                              pd_dispatch, pd_reject};

void kvg__scale_pd_class_init(struct pdrun *R)
{
    /* Output tokens/s within the ITL target times the seconds a token may
     * take: the sequences a decode replica holds there. */
    kvg__scale_cls_init(&R->cls, R->o, &g_pd_ops, R,
                        R->o->pd_decode_tps * R->o->aopts.itl_target_s);
    R->out->cls.on = R->cls.on;
}

int kvg__scale_pd_class_arrive(struct pdrun *R, uint64_t id, double t)
{
    if (!kvg__scale_cls_draw(&R->cls)) return 0;
    R->q[id].batch = 1;
    int rc = kvg__scale_cls_enqueue(&R->cls, id, &R->q[id].r, t);
    return rc ? rc : 1;
}

void kvg__scale_pd_class_summary(struct pdrun *R)
{
    for (size_t id = 0; id < R->nq; id++) {
        const struct pq *q = &R->q[id];
        kvg__scale_cls_count(&R->cls, &R->out->cls, q->batch, q->state == P_DONE, q->ok,
                             q->r.arrival, q->t_done);
    }
    kvg__scale_cls_summary(&R->cls, &R->out->cls);
}
