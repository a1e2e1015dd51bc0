/* The PD day's state (scale_pd.c), shared with its traffic classes
 * (scale_pd_class.c); not a public face. */
#ifndef KVG_BENCH_SCALE_SCALE_PD_INT_H
#define KVG_BENCH_SCALE_SCALE_PD_INT_H

#include "bench/scale/scale_int.h"

enum { P_GATEWAY, P_PREFILL, P_WAIT, P_XFER, P_DECODE, P_DONE, P_FAILED };

struct pq {
    struct scale_req r;
    struct kvg_pick pick[2]; /* the gateway's prefill and decode picks while they run */
    int pre, dec;            /* replica indices in their pools, -1 none */
    uint8_t state, first;
    uint8_t local; /* prefilled on its decode replica (local_decode) */
    uint32_t ntok;
    double pend; /* tokens counted in its replica's pend_tok until its prefill ends */
    double t_first, t_last, xfer_done;
    double t_pre;      /* its prefill finished (0: not yet), for the timeline's miss split */
    uint8_t batch, ok; /* batch class (scale_class.c); finished within the SLO */
    uint8_t miss;      /* finished: what it missed, by target and leg (KVG_AUTOSCALE_MISS_*) */
    double t_disp;     /* batch: when the gateway let it go (its SLO counts from here) */
    double t_done;
};

struct pool {
    enum kvg_autoscale_role role;
    struct kvg_autoscale_planner *pl;
    struct scale_reps r;
    struct scale_route rt; /* the gateway's routing over r */
    uint32_t last_desired;
    int have_desired;
    struct kvg_bench_scale_pd_pool *out;
    double headroom; /* the planner's headroom (from o->pd_headroom_from_s when that is set) */
};

struct pdrun {
    const struct kvg_bench_scale_opts *o;
    struct kvg_bench_scale_pd_result *out;
    struct scale_day d;
    struct pq *q;
    size_t nq, capq;
    struct pool pool[2];
    uint64_t *gq,
        *dq; /* FIFOs of request ids: the gateway's, and prefilled ones awaiting a decode */
    size_t gq_head, gq_tail, gq_cap, dq_head, dq_tail, dq_cap;
    uint64_t *xf; /* requests whose KV is moving */
    size_t nxf, capxf;
    uint64_t sweep;
    double kv_bytes_tok, link_bw;
    struct kvg_bench_samples xfer;
    int oracle; /* planner "oracle": kvg__scale_pd_oracle_desired() sizes the pools */
    double oracle_lead;
    struct scale_cls cls; /* traffic classes (scale_class.c, scale_pd_class.c) */
};

/* scale_pd.c: request id onto the prefill replica the gateway's policy
 * picks among those ok admits (NULL: every routable one; its blocks held,
 * its tokens pending there), KVG_ENOWORKER when none; a request that will
 * not be served. */
int kvg__scale_pd_to_prefill_by(struct pdrun *R, uint64_t id, double t, int (*ok)(void *ud, int k));
void kvg__scale_pd_fail(struct pdrun *R, uint64_t id);

/* scale_pd_class.c: the PD day's side of the classes (scale_class.c).
 * Set up after the pools are (the decode profile known). */
void kvg__scale_pd_class_init(struct pdrun *R);
/* A new request: 1 when it is batch and went to the batch queue (then
 * drained as the rule allows), 0 when interactive, or a negative code. */
int kvg__scale_pd_class_arrive(struct pdrun *R, uint64_t id, double t);
/* The per-class figures into R->out. */
void kvg__scale_pd_class_summary(struct pdrun *R);

#endif
