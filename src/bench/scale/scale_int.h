/* Shared between the autoscaling benchmark's files (scale_wl.c: the day's
 * traffic; scale_day.c: what both days keep alike; scale_des.c and
 * scale_pd.c: their event loops); not a public face. */
#ifndef KVG_BENCH_SCALE_SCALE_INT_H
#define KVG_BENCH_SCALE_SCALE_INT_H

#include "autoscale/signals.h"
#include "base/util.h"
#include "bench/scale/scale.h"
#include "bench/stats.h"
#include "router/policy_kv.h"
#include "router/pool.h"

/* The day's arrivals, generated lazily in time order. */
/* One burst of the realistic day (scale_wl.c): [at, at + len) the
 * conversation stream's rate times mult and its prompts times prompt, or a
 * heavy client's extra traffic at mult times the heavy stream's level. */
struct scale_burst {
    double at, len, mult, prompt;
    uint32_t client;
};

#define SCALE_WL_BURSTS 32
struct scale_wl {
    const struct kvg_bench_scale_opts *o;
    struct kvg_rng rng;
    double t, lambda_max;
    double burst_at[64]; /* the stress day's */
    double hourly[24];   /* the day's envelope at each hour, this seed's noise applied */
    struct scale_burst conv[SCALE_WL_BURSTS], heavy[SCALE_WL_BURSTS];
    uint32_t nconv, nheavy;
    double zipf_cdf[KVG_BENCH_SCALE_GROUPS];
    uint32_t *prefix; /* groups x prefix_len token ids (owned) */
    uint64_t issued;
};

struct scale_req {
    double arrival;
    uint32_t group, prompt_len, max_tokens;
    int client;    /* the heavy client that sent it, -1 the conversation stream */
    double cached; /* prompt tokens its prefill found cached, < 0 not prefilled yet */
    uint64_t suffix_seed;
};

int kvg__scale_wl_init(struct scale_wl *w, const struct kvg_bench_scale_opts *o);
void kvg__scale_wl_free(struct scale_wl *w);
/* The arrival rate at virtual time t (bursts included). */
double kvg__scale_wl_rate(const struct scale_wl *w, double t);
/* The highest arrival rate in [t0, t1] (the envelope sampled every second,
 * each burst at its start). */
double kvg__scale_wl_peak(const struct scale_wl *w, double t0, double t1);
/* The longest prompt the workload draws (prompt buffers' size). */
uint32_t kvg__scale_wl_prompt_cap(const struct kvg_bench_scale_opts *o);
/* The day's bursts, one line each, to f (--trace). */
void kvg__scale_wl_trace(const struct scale_wl *w, FILE *f);
/* The next request (arrival < day_s), 1 when the day is over. */
int kvg__scale_wl_next(struct scale_wl *w, struct scale_req *r);
/* Writes r's prompt into buf (prompt_len ids). */
void kvg__scale_wl_prompt(const struct scale_wl *w, const struct scale_req *r, uint32_t *buf);

/* The event loop's state (scale_des.c), shared with scale_warm.c. */
#define SCALE_REC_N 8                 /* requests a replica's hit rate is judged over */
#define SCALE_PREWARM_ID (1ull << 62) /* prewarm request ids: this bit set */
enum { R_STARTING, R_READY, R_DRAINING, R_PARKED, R_GONE };
enum { Q_GATEWAY, Q_ENGINE, Q_DONE, Q_FAILED };

struct rq {
    struct scale_req r;
    struct kvg_pick pick; /* the gateway's routing decision while it runs */
    int rep;
    uint8_t state, first, ok;
    uint8_t batch; /* batch class (scale_class.c) */
    uint32_t ntok;
    double t_first, t_last;
    double t_disp, t_done; /* batch: when the gateway let it go (its SLO counts from here) */
};

struct rep {
    int state;
    enum kvg_autoscale_node node; /* of its current start (asleep1 when woken) */
    /* asked: it took its GPU (GPU-hours from here); since: its current start
     * was asked for (a wake's own time); parked_at, parked_s: its current
     * park and the seconds parked before it (charged at standby_cost);
     * woke: its current start is a wake (cancelled, it parks again). */
    double asked, since, ready_at, drain_at, gone, parked_at, parked_s;
    int woke;
    struct kvg_sim *e;
    int stepping;
    double busy_until;
    struct kvg_sim_step st;
    uint32_t inflight;
    /* The engine's gauges as the gateway's last scrape read them (serve
     * scrapes every --load-monitor-interval-ms; a replica not scraped yet has none). */
    struct kvg_sim_metrics scraped;
    int scraped_ok;
    uint64_t groups; /* prefixes routed here: what a router would believe is cached */
    double pend_tok; /* PD day: prompt tokens routed here whose prefill has not finished */
    /* Prewarm (scale_warm.c): prefill-only replays still running (not
     * routable while > 0), when it took its first routed request, and its
     * hit rate's recovery. */
    uint32_t warming;
    uint64_t warm_groups; /* the prefixes its prewarm replays */
    double warm_at;
    double rec_cached[SCALE_REC_N], rec_prompt[SCALE_REC_N];
    uint32_t rec_n;
    double recovered_s; /* seconds from ready to recovered, < 0 not yet */
};

/* A pool's replicas (scale_reps.c): rep holds every one asked for (owned,
 * indices stay valid), act the indices of those not gone. */
struct scale_reps {
    struct rep *rep;
    size_t nrep, caprep;
    int act[KVG_BENCH_SCALE_MAX_REPLICAS + 1]; /* parked ones included */
    size_t nact;
    uint32_t added, removed, cancelled; /* by actuation (the day's first pool not counted) */
    uint32_t woken;                     /* parked replicas woken */
    /* Set by kvg__scale_reps_first: the start-up model starts teach
     * (borrowed) and its model name, and the options' standby. */
    struct kvg_autoscale_startup *su;
    const char *model;
    uint32_t standby;
    double standby_cost;
};

/* Replica k's engine (the profile, seed) created: it is ready at t, and a
 * start asked for during the day teaches P's start-up model its time under
 * its class (as the local actuator teaches it live). 0 or a code. */
int kvg__scale_reps_ready(struct scale_reps *P, int k, const struct kvg_sim_profile *prof,
                          uint64_t seed, double t);
/* Replica k removed at t (its engine freed). */
void kvg__scale_reps_gone(struct scale_reps *P, int k, double t);
/* A drained replica k leaves the pool at t: parked (its engine asleep,
 * freed here: a woken one starts with a cold cache, as vLLM's) while fewer
 * than P->standby are, else gone. */
void kvg__scale_reps_retire(struct scale_reps *P, int k, double t);
void kvg__scale_reps_count(const struct scale_reps *P, uint32_t *ready, uint32_t *starting);
/* Parked replicas now. */
uint32_t kvg__scale_reps_parked(const struct scale_reps *P);
/* Moves the pool toward desired: wakes parked replicas, then asks for new
 * ones; or cancels starting ones (the latest first; a woken one parks
 * again), then drains the ready one with the fewest requests in flight
 * (retired at once when idle). 0 or -ENOMEM. */
int kvg__scale_reps_actuate(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                            struct kvg_autoscale_startup *su, struct kvg_rng *rng, uint32_t desired,
                            double t);
/* Replica-seconds charged over the day: from each request to its removal,
 * the seconds parked at P->standby_cost; *parked_s (may be NULL) gets the
 * seconds parked. */
double kvg__scale_reps_seconds(const struct scale_reps *P, double day_s, double *parked_s);
void kvg__scale_reps_free(struct scale_reps *P);
/* The pool's replica and engine signals at t into s (zeroed first; s->now
 * set; young: ready less than young_s ago); eta gets starting replicas'
 * ready times (KVG_BENCH_SCALE_MAX_REPLICAS of room). */
void kvg__scale_reps_signals(const struct scale_reps *P, double t, double young_s,
                             struct kvg_autoscale_signals *s, double *eta);
/* A scrape: every ready or draining replica's gauges into its scraped. */
void kvg__scale_reps_scrape(struct scale_reps *P);
/* The next scrape after a tick at t: scrapes run half an interval out of
 * phase with the ticks, so a tick reads gauges scrape_s / 2 old, the mean
 * age a live tick sees (serve's scrape and autoscale timers are apart). */
double kvg__scale_scrape_next(const struct kvg_bench_scale_opts *o, double t);
/* The planner a benchmark name stands for: "queue-P" is queue with preset
 * P (set in a), "kvgate-noprewarm" kvgate's planner. 0, KVG_ENOTFOUND, or
 * another code with err set. */
int kvg__scale_planner_new(const char *planner, struct kvg_autoscale_opts *a,
                           struct kvg_autoscale_planner **out, char *err, size_t errlen);

/* Replica p's next engine step from t (p->e has work). */
void kvg__scale_rep_step(struct rep *p, double t);
/* The earliest step end (*te, replica *ke) and start-up done by day_s
 * (*tr, *kr) among P's replicas, where earlier than the ones given. */
void kvg__scale_reps_next(const struct scale_reps *P, double day_s, double *te, int *ke, double *tr,
                          int *kr);
/* The pool a day starts with: n replicas (at least min and 1), asked for
 * and ready at 0 but their engines not made (the caller's
 * kvg__scale_reps_ready, with its seed), not counted as added; P's
 * start-up model (su), model and standby from o. 0 or -ENOMEM. */
int kvg__scale_reps_first(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                          struct kvg_autoscale_startup *su, struct kvg_rng *rng, uint32_t n,
                          uint32_t min);

/* The gateway's routing on one pool of a day (scale_route.c): serve's
 * kvg_pool and policy over the pool's replicas. A replica is a worker from
 * ready until it leaves; it takes new requests only while ready and not
 * warming (else marked draining, as serve's actuator marks one). Every
 * pick is paired with one release, as serve pairs them. */
struct scale_route {
    struct kvg_pool pool;
    int ok;                /* pool initialised */
    struct kvg_worker **w; /* by replica index: its worker (the pool's), NULL none */
    size_t capw;
    int k_of_slot[KVG_POLICY_MAX_SLOTS]; /* a worker's slot -> its replica, -1 none */
    struct kvg_rng rng;
    uint32_t block_size;
    uint32_t *tokens; /* the prompt being routed, and its block hashes (owned) */
    size_t captok;
    uint64_t *hashes;
    size_t caph;
};
/* rt with the policy serve runs on a pool of role: the default policy
 * (prefix_affinity), or pd_decode on a PD day's decode pool. */
int kvg__scale_route_new(struct scale_route *rt, const struct kvg_bench_scale_opts *o,
                         enum kvg_autoscale_role role);
void kvg__scale_route_free(struct scale_route *rt);
/* Brings rt's workers in line with P's replicas at t; share(ud, k, t) is
 * replica k's slow-start share (NULL: all full). 0 or a code. */
int kvg__scale_route_sync(struct scale_route *rt, const struct scale_reps *P,
                          double (*share)(void *ud, int k, double t), void *ud, double t);
/* The replica worker w stands for, -1 none. */
int kvg__scale_route_replica(const struct scale_route *rt, const struct kvg_worker *w);
/* Picks a replica for r at t (sync first): *k and the pick (charged,
 * released by kvg__scale_route_release); ok(ud, k), when set, is the
 * request's admission filter (the batch rule). 0, KVG_ENOWORKER when no
 * worker is routable, or another code. */
int kvg__scale_route_pick(struct scale_route *rt, const struct scale_wl *wl,
                          const struct scale_req *r, double t, int (*ok)(void *ud, int k), void *ud,
                          struct kvg_pick *out, int *k);
/* Replica k now caches r's prompt without a pick (a prewarm's replay
 * answered): the policy records it as serve's kvg_pool_place. */
int kvg__scale_route_place(struct scale_route *rt, const struct scale_wl *wl,
                           const struct scale_req *r, int k, double t);
/* The pick's first token at t; its end (idempotent on a released pick). */
void kvg__scale_route_first(struct scale_route *rt, struct kvg_pick *pick, double t);
void kvg__scale_route_release(struct scale_route *rt, struct kvg_pick *pick,
                              enum kvg_outcome outcome, double t);
/* A scrape at t: each worker's engine gauges as its /metrics says them. */
void kvg__scale_route_scrape(struct scale_route *rt, const struct scale_reps *P, double t);

/* What both days keep alike (scale_day.c): the traffic and its next
 * arrival, the start-up draws, the gateway's observations, prompt tokens
 * sent without a first token yet, the day's TTFT and ITL samples, the
 * prompt cache's hits, the timeline's next point and the arrivals since
 * the last, and a buffer for the prompt being submitted. */
struct scale_day {
    const struct kvg_bench_scale_opts *o;
    struct scale_wl wl;
    struct scale_req next;
    int have_next;
    struct kvg_autoscale_startup su;
    struct kvg_rng rng;
    struct kvg_autoscale_obs *ob; /* the gateway's observations (owned) */
    double inflight_prompt;
    struct kvg_bench_samples all_ttft, all_itl;
    double hit_cached, hit_prompt;
    size_t tl_next;
    double tl_arrivals;
    uint32_t *prompt;
};

/* All of d set up for a day of o (the first arrival drawn); 0, or a code
 * (err set for the workload's). kvg__scale_day_free either way. */
int kvg__scale_day_init(struct scale_day *d, const struct kvg_bench_scale_opts *o, char *err,
                        size_t errlen);
void kvg__scale_day_free(struct scale_day *d);
/* The window the gateway's signals to planner pl cover: o->window_s, else
 * its interval (sla's default 180 s, others 30 s), at least 30 s. */
double kvg__scale_day_window(const struct scale_day *d, const struct kvg_autoscale_planner *pl);
/* The next arrival into *r, counted (tick, in-flight prompt tokens,
 * timeline), and the one after drawn. */
void kvg__scale_day_arrive(struct scale_day *d, struct scale_req *r);
/* Request r (its prompt rendered into d's buffer) submitted to engine e as
 * id: max_tokens (0: r's own), the last remote_tokens of its prompt's KV
 * from a prefill (PD decode), hold: keep its blocks after it finishes (PD
 * prefill). kvg_sim_submit's result. */
int kvg__scale_day_submit(struct scale_day *d, struct kvg_sim *e, uint64_t id,
                          const struct scale_req *r, uint32_t max_tokens, uint32_t remote_tokens,
                          int hold);
/* r's prefill found cached of its prompt tokens in the prefix cache. */
void kvg__scale_day_cached(struct scale_day *d, struct scale_req *r, double cached);
/* r's first token at t: its TTFT counted and returned. */
double kvg__scale_day_first(struct scale_day *d, const struct scale_req *r, double t);
/* Request r finished at t after ntok tokens with mean inter-token latency
 * itl; miss: the targets it missed (KVG_AUTOSCALE_MISS_*, 0 within the
 * SLO), or -1 not judged by it (its tokens counted, not its finish:
 * kvg__scale_cls_judged). */
void kvg__scale_day_done(struct scale_day *d, const struct scale_req *r, uint32_t ntok, double t,
                         double itl, int miss);
/* The gateway's observed signals over the last window seconds of ticks
 * into s (s->now set; autoscale/signals.h). */
void kvg__scale_day_signals(struct scale_day *d, double window, struct kvg_autoscale_signals *s);
/* Request r will not be served (first: it had its first token). */
void kvg__scale_day_fail(struct scale_day *d, const struct scale_req *r, int first, unsigned miss);
/* The mean inter-token latency of ntok tokens from t_first to t_last. */
double kvg__scale_itl(uint32_t ntok, double t_first, double t_last);
/* The next of n timeline points that ended by t: 1 with *i, t_h[*i] and
 * rate[*i] set (the arrivals count restarts), or 0 when none has. */
int kvg__scale_day_point(struct scale_day *d, double t, size_t n, double *t_h, double *rate,
                         size_t *i);
/* The day's TTFT p50 / p90 / p99, ITL p90 and prompt cache hit rate. */
void kvg__scale_day_pcts(struct scale_day *d, double *ttft_p50, double *ttft_p90, double *ttft_p99,
                         double *itl_p90, double *cache_hit);
/* *v[0..nv) each a zeroed array of n doubles: 0 or -ENOMEM (the rest
 * still allocated, the caller frees them all). */
int kvg__scale_timeline_alloc(size_t n, double **v[], size_t nv);
/* id onto the end of a growing array of *tail of *cap; 0 or -ENOMEM. */
int kvg__scale_ids_push(uint64_t **v, size_t *tail, size_t *cap, uint64_t id);

/* Traffic classes, both days (scale_class.c): a share of requests is
 * batch, drawn from a generator of its own (the day's other draws stay the
 * same with or without classes). A batch request waits in the gateway's
 * batch queue, FIFO, and goes only as the gateway's batch rule lets it
 * (gateway/admission.h): no interactive request waiting in the gateway and
 * a replica in a trough, which the day's ops judge (its engine with no
 * prompt waiting and fewer running sequences than seqs, the batch_max_kv
 * analogue). Past its deadline in the queue it is answered 429, counted.
 * The planners see the backlog through the batch signals
 * (autoscale/planner.h). Each day plugs its own queue states and replicas
 * in through the ops, on its own state (day). */
struct scale_cls_ops {
    int (*waiting)(void *day, uint64_t id); /* id still waits in the gateway */
    int (*interactive_waits)(void *day);    /* an interactive request waits there */
    int (*trough)(void *day, uint64_t id);  /* a replica in a trough for id, or -1 */
    int (*dispatch)(void *day, uint64_t id, int k, double t); /* id to replica k: 0 or a code */
    void (*reject)(void *day, uint64_t id);                   /* the 429 past its deadline */
};

struct scale_cls_ent {
    uint64_t id;
    double deadline;
    uint32_t prompt, out;
};

struct scale_cls {
    int on; /* batch_share > 0 and the planner is not sla */
    const struct kvg_bench_scale_opts *o;
    const struct scale_cls_ops *ops;
    void *day;
    struct kvg_rng rng;
    struct scale_cls_ent *q; /* the batch queue (owned) */
    size_t head, tail, cap;
    double prompt, out; /* tokens of the requests it holds */
    double seqs;        /* running sequences a replica may have for a batch to join */
    uint64_t rejected;  /* 429s past the deadline */
};

/* c set up for a day of o on the day's state and ops; held: the running
 * sequences the planners' profile says a replica holds within the ITL
 * target (seqs: 0.8 of it, at least 1). */
void kvg__scale_cls_init(struct scale_cls *c, const struct kvg_bench_scale_opts *o,
                         const struct scale_cls_ops *ops, void *day, double held);
void kvg__scale_cls_free(struct scale_cls *c);
/* A new request's class: 1 batch, 0 interactive (always without classes). */
int kvg__scale_cls_draw(struct scale_cls *c);
/* Batch request r as id at t into the batch queue, then drained as the
 * rule allows. 0 or a negative code. */
int kvg__scale_cls_enqueue(struct scale_cls *c, uint64_t id, const struct scale_req *r, double t);
/* Batch requests to replicas in a trough, FIFO, none while an interactive
 * request waits in the gateway. 0 or a code. */
int kvg__scale_cls_drain(struct scale_cls *c, double t);
/* Batch requests past their deadline in the queue get the 429 (ops'
 * reject), counted. */
void kvg__scale_cls_expire(struct scale_cls *c, double t);
/* The batch backlog's signals (planner.h) into s; its prompt tokens leave
 * s->inflight_prompt_tokens (live, no worker counts a queued request). */
void kvg__scale_cls_signals(const struct scale_cls *c, double t, struct kvg_autoscale_signals *s);
/* How the gateway's observations judge a finished request: interactive
 * by its SLO (the targets it missed, 0 none), batch not at all (-1). The planners' SLO-miss
 * share and ITL are the interactive SLO's; batch is sized by its backlog
 * and deadline. On the aggregated stress day (classes and fast start, 10
 * seeds), judged by its latency from dispatch, batch in the troughs raised
 * kvgate's correction to 1.4x (108-113 GPU-h on seed 1); judged by its
 * deadline (counted as met) it diluted the share: 99.20-99.43%
 * interactive, against 99.39-99.55% left out. */
int kvg__scale_cls_judged(int batch, unsigned miss);
/* One request into the per-class figures (done: finished; ok: within its
 * SLO; arrival and t_done its times). */
void kvg__scale_cls_count(const struct scale_cls *c, struct kvg_bench_scale_classes *out, int batch,
                          int done, int ok, double arrival, double t_done);
/* The shares, rejected and dropped into out, after every request counted. */
void kvg__scale_cls_summary(const struct scale_cls *c, struct kvg_bench_scale_classes *out);

struct run {
    const struct kvg_bench_scale_opts *o;
    struct kvg_bench_scale_result *out;
    struct scale_day d;
    struct rq *rq;
    size_t nrq, caprq;
    struct scale_reps pool;
    struct scale_route rt; /* the gateway's routing over pool */
    uint64_t *gq;          /* gateway queue: request ids, FIFO */
    size_t gq_head, gq_tail, gq_cap;
    uint64_t sweep;
    struct kvg_autoscale_planner *pl;
    uint32_t last_desired;
    int have_desired;
    struct kvg_bench_samples ramp_ttft;
    double group_routed[KVG_BENCH_SCALE_GROUPS]; /* requests routed per prefix: the hottest */
    uint64_t prewarm_next;                       /* ids of prewarm requests */
    int prewarmed;                               /* this run prewarms (planner "kvgate") */
    struct kvg_bench_samples young_ttft;         /* TTFT on replicas in their first young_s */
    struct scale_cls cls;                        /* traffic classes (scale_class.c) */
};

/* Prewarm and slow start (scale_warm.c). On ready: replays the hottest
 * prefixes (prefill-only, max_tokens 1) when o->prewarm; 0 or a negative
 * code. */
int kvg__scale_prewarm_start(struct run *R, int k, double t);
/* A prewarm request finished on replica k; the last one's prefixes are
 * placed there in the router's belief. 0 or a code. */
int kvg__scale_prewarm_done(struct run *R, int k, double t);
/* The router's workers in line with the pool at t (scale_des.c). */
int kvg__scale_sync(struct run *R, double t);
/* Replica p's share of traffic at t: 1, or ramping up from 0.25 over
 * young_s after its prewarm (slow start). */
double kvg__scale_share(const struct run *R, const struct rep *p, double t);
/* A first token on replica p: its hit-rate recovery and young-TTFT. */
void kvg__scale_recovery_note(struct run *R, struct rep *p, double t, double cached, double prompt,
                              double ttft);
/* Recovery figures into R->out. */
void kvg__scale_recovery_summary(struct run *R);

/* The PD day's pools (scale_pd.c), also for its arrivals' export
 * (scale_export.c): the planner options of the pool of role (prefill or
 * decode) before the day's headroom experiments (pd_headroom), and the
 * replicas it starts with ready by them (before min_replicas). */
void kvg__scale_pd_pool_opts(const struct kvg_bench_scale_opts *o, enum kvg_autoscale_role role,
                             struct kvg_autoscale_startup *su, struct kvg_autoscale_opts *a);
uint32_t kvg__scale_pd_first(const struct kvg_bench_scale_opts *o,
                             const struct kvg_autoscale_opts *a, const struct scale_wl *w);

/* The PD day's oracle (scale_pd_oracle.c; scale.h says what it is). Its
 * look-ahead: o->oracle_lead_s, else the fixed start-up or the start-up
 * model's longest p90 lead among the node states replicas land on, plus a
 * tick. */
double kvg__scale_pd_oracle_lead(const struct kvg_bench_scale_opts *o,
                                 const struct kvg_autoscale_startup *su);
/* Replicas pool a (role, profile, headroom, limits) needs at t: the highest
 * rate of w over [t, t + lead] by the profile at cache hit rate hit. */
uint32_t kvg__scale_pd_oracle_desired(const struct scale_wl *w, const struct kvg_autoscale_opts *a,
                                      double lead, double hit, double t);

/* The start-up options every day's JSON carries per planner (scale_report.c):
 * stress, fast_share, fast_ready_secs (null without a fast share), standby,
 * standby_cost, and the run's parked replica-hours and wakes; and the
 * planner's slo_goal. */
struct cJSON;
void kvg__scale_json_start(struct cJSON *j, const struct kvg_bench_scale_opts *o,
                           double parked_hours, uint32_t woken);

/* The per-class fields every day's JSON carries per planner
 * (scale_report.c): classes, batch_share, slo_attainment_interactive,
 * slo_attainment_batch and batch_deadline_met (null without batch
 * requests), batch_rejected, batch_dropped, batch_requests,
 * batch_deadline_s. The markdown's class table: its head, then a row per
 * planner. */
void kvg__scale_json_classes(struct cJSON *j, const struct kvg_bench_scale_classes *c,
                             const struct kvg_bench_scale_opts *o);
void kvg__scale_md_classes(FILE *f, const struct kvg_bench_scale_opts *o);
void kvg__scale_md_class_row(FILE *f, const char *planner, const struct kvg_bench_scale_classes *c,
                             double gpu_hours);

/* The planners' profile for knee requests/s a replica (scale_opts.c). */
void kvg__scale_derive_profile(const struct kvg_bench_scale_opts *o, double knee,
                               struct kvg_autoscale_profile *pr);
/* The scenario's mean prompt tokens a request: the shared prefix and the
 * mean of the uniform suffix. */
double kvg__scale_isl_mean(const struct kvg_bench_scale_opts *o);
/* The day's highest rate, bursts included (the day curve sampled per
 * minute). */
double kvg__scale_peak_rate(const struct kvg_bench_scale_opts *o);
/* The replicas a day (not static's) starts with, ready: what the first
 * arrival rate of w needs by the profile, with headroom; at least the
 * planners' min_replicas and 1 (kvg__scale_reps_first). */
uint32_t kvg__scale_first_replicas(const struct kvg_bench_scale_opts *o, const struct scale_wl *w,
                                   double headroom);
/* Replicas' worth of one request per second (1 / knee_rps). */
double kvg__scale_load_per_rps(const struct kvg_bench_scale_opts *o);

#endif
