/* Traffic classes on both days (scale_int.h, struct scale_cls): the
 * gateway's batch queue in virtual time. The mechanism is one; the
 * aggregated day (scale_des.c) and the PD day (scale_pd_class.c) each give
 * it their request states and their trough rule through the ops. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/scale/scale_int.h"

void kvg__scale_cls_init(struct scale_cls *c, const struct kvg_bench_scale_opts *o,
                         const struct scale_cls_ops *ops, void *day, double held)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    c->ops = ops;
    c->day = day;
    /* sla is Dynamo's planner: no classes, every request interactive. */
    c->on = o->batch_share > 0 && strcmp(o->planner, "sla") != 0;
    kvg_rng_seed(&c->rng, o->seed * 0x9e3779b97f4a7c15ull + 0xba7c4);
    c->seqs = 0.8 * held;
    if (!(c->seqs >= 1)) c->seqs = 1;
}

void kvg__scale_cls_free(struct scale_cls *c)
{
    free(c->q);
    c->q = NULL;
    c->head = c->tail = c->cap = 0;
}

static int push(struct scale_cls *c, const struct scale_cls_ent *e)
{
    if (c->tail == c->cap) {
        size_t n = c->cap ? c->cap * 2 : 1024;
        struct scale_cls_ent *v = realloc(c->q, n * sizeof *v);
        if (!v) return -ENOMEM;
        c->q = v;
        c->cap = n;
    }
    c->q[c->tail++] = *e;
    c->prompt += e->prompt;
    c->out += e->out;
    return 0;
}

/* The head leaves the queue (dispatched, answered or failed meanwhile). */
static void pop(struct scale_cls *c)
{
    const struct scale_cls_ent *e = &c->q[c->head++];
    c->prompt -= e->prompt;
    c->out -= e->out;
    if (c->head == c->tail) {
        c->head = c->tail = 0;
        c->prompt = c->out = 0; /* no float dust left behind */
    }
}

int kvg__scale_cls_draw(struct scale_cls *c)
{
    return c->on && kvg_rng_double(&c->rng) < c->o->batch_share;
}

int kvg__scale_cls_enqueue(struct scale_cls *c, uint64_t id, const struct scale_req *r, double t)
{
    struct scale_cls_ent e = {.id = id,
                              .deadline = r->arrival + c->o->batch_deadline_s,
                              .prompt = r->prompt_len,
                              .out = r->max_tokens};
    int rc = push(c, &e);
    return rc ? rc : kvg__scale_cls_drain(c, t);
}

int kvg__scale_cls_drain(struct scale_cls *c, double t)
{
    if (c->head == c->tail || c->ops->interactive_waits(c->day)) return 0;
    while (c->head < c->tail) {
        uint64_t id = c->q[c->head].id;
        if (!c->ops->waiting(c->day, id)) {
            pop(c); /* failed meanwhile */
            continue;
        }
        int k = c->ops->trough(c->day, id);
        if (k < 0) break; /* FIFO: the head waits for the next trough */
        pop(c);
        int rc = c->ops->dispatch(c->day, id, k, t);
        if (rc) return rc;
    }
    return 0;
}

void kvg__scale_cls_expire(struct scale_cls *c, double t)
{
    /* FIFO with one deadline for all: the head is the first to expire. */
    while (c->head < c->tail) {
        const struct scale_cls_ent *e = &c->q[c->head];
        uint64_t id = e->id;
        int waits = c->ops->waiting(c->day, id);
        if (waits && e->deadline > t) break;
        pop(c);
        if (waits) {
            c->ops->reject(c->day, id);
            c->rejected++;
        }
    }
}

void kvg__scale_cls_signals(const struct scale_cls *c, double t, struct kvg_autoscale_signals *s)
{
    size_t n = 0;
    double first = -1;
    for (size_t i = c->head; i < c->tail; i++) {
        if (!c->ops->waiting(c->day, c->q[i].id)) continue;
        if (!n) first = c->q[i].deadline;
        n++;
    }
    s->batch_queued = (double)n;
    s->batch_prompt_tokens = n ? c->prompt : 0;
    s->batch_out_tokens = n ? c->out : 0;
    s->batch_slack_s = n ? fmax(first - t, 1e-3) : 0;
    /* Live, queued requests are in no worker's in-flight prompt count: the
     * batch queue's are not either. */
    if (s->inflight_prompt_tokens > 0 && n)
        s->inflight_prompt_tokens = fmax(0, s->inflight_prompt_tokens - c->prompt);
}

int kvg__scale_cls_judged(int batch, unsigned miss)
{
    return batch ? -1 : (int)miss;
}

void kvg__scale_cls_count(const struct scale_cls *c, struct kvg_bench_scale_classes *out, int batch,
                          int done, int ok, double arrival, double t_done)
{
    if (!batch) {
        out->interactive++;
        out->interactive_met += done && ok;
        return;
    }
    out->batch++;
    out->batch_met += done && ok;
    out->batch_in_deadline += done && t_done <= arrival + c->o->batch_deadline_s;
    out->batch_dropped += !done; /* less the 429s, in the summary */
}

void kvg__scale_cls_summary(const struct scale_cls *c, struct kvg_bench_scale_classes *out)
{
    out->on = c->on;
    out->batch_rejected = c->rejected;
    out->batch_dropped = out->batch_dropped > c->rejected ? out->batch_dropped - c->rejected : 0;
    out->slo_attainment_interactive =
        out->interactive ? (double)out->interactive_met / (double)out->interactive : 0;
    out->slo_attainment_batch = out->batch ? (double)out->batch_met / (double)out->batch : 1;
    out->batch_deadline_met = out->batch ? (double)out->batch_in_deadline / (double)out->batch : 1;
}
