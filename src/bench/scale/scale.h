/* The autoscaling benchmark (`kvgate bench --scenario diurnal`): a
 * compressed day of traffic on the offline engine model (sim/sim.h), with a
 * pool sized by an autoscale planner (autoscale/planner.h) the way kvgate
 * serve would size it, replica by replica:
 *
 *   - traffic: a day shape (DeepSeek's: the daytime peak ~1.23x the mean, a
 *     night trough), Poisson arrivals at that rate, bursts on top, prompts
 *     that start with one of a few shared system prompts (Zipf popularity)
 *     so the prefix cache matters;
 *   - a replica asked for lands on a warm or cold node (a seeded draw) and
 *     becomes ready after a start-up drawn from the start-up model
 *     (autoscale/startup.h, measured vLLM figures); it holds its GPUs from
 *     the request on, and starts with an empty cache;
 *   - routing: the gateway's own (scale_route.c): serve's pool and default
 *     policy (prefix_affinity, approximate: what it routed where) over the
 *     ready replicas, its in-flight charges, the engines' gauges from the
 *     scrapes; with no ready replica the request waits in the gateway queue;
 *   - scale-down cancels replicas still starting first (the latest), then
 *     drains the ready replica with the fewest requests in flight: no new
 *     requests, removed when idle (at most drain_s, then its rest is cut);
 *   - every tick the planner gets the pool's signals over its window;
 *   - planner "kvgate" prewarms (scale_warm.c): a replica that becomes ready
 *     first replays the hottest prefixes, prefill-only, and then takes a
 *     share of traffic that ramps up; "kvgate-noprewarm" and the baselines
 *     do not. Aggregated pools; the PD day is below (kvg_bench_scale_pd_run);
 *   - traffic classes (batch_share, both days, scale_class.c): batch
 *     requests wait in the gateway's batch queue and go into troughs.
 * A request meets the SLO when it finishes with TTFT and its mean
 * inter-token latency within the targets. Deterministic per seed: the same
 * options give the same results (but wall_s). */
#ifndef KVG_BENCH_SCALE_SCALE_H
#define KVG_BENCH_SCALE_SCALE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "autoscale/planner.h"
#include "sim/sim.h"

#define KVG_BENCH_SCALE_GROUPS 64
#define KVG_BENCH_SCALE_MAX_REPLICAS 64
#define KVG_BENCH_SCALE_MAX_PLANNERS 8

struct kvg_bench_scale_opts {
    uint64_t seed;
    double day_s;     /* virtual seconds for 24 h (8640: a day at 10x) */
    double mean_rate; /* requests/s at the day's mean */
    /* The day's bursts. stress (--stress, the days before issue 38): the
     * day curve as is and `bursts` of burst_s at burst_mult at seeded times
     * between 08:00 and 22:00 (two overlapping: burst_mult squared).
     * Otherwise the realistic day (scale_wl.c, bench/results/autoscale-
     * realistic.md for the published figure behind each parameter): the
     * curve at a level within +-day_noise, a conversation burst every
     * 3,600 s and a heavy_share of the traffic from heavy_clients clients,
     * one of them bursting every 3,600 s (bursts in real seconds, the
     * curve compressed). */
    int stress;
    uint32_t bursts;
    double burst_s, burst_mult;
    double day_noise;                /* 0.15 */
    double heavy_share;              /* 0.1 */
    uint32_t heavy_clients;          /* 3 */
    uint32_t groups;                 /* shared system prompts */
    double zipf_s;                   /* their popularity */
    uint32_t prefix_len;             /* tokens of each system prompt */
    uint32_t suffix_min, suffix_max; /* the request's own tokens, uniform */
    double osl;                      /* mean output tokens (geometric), ignore_eos */
    uint32_t osl_max;
    struct kvg_sim_profile profile;
    uint32_t gpus_per_replica;
    /* Start-ups: node mix and the start-up model's model name. */
    char startup_model[64];
    double cold_share, fetch_share;
    double startup_fixed_s; /* > 0: every start-up takes exactly this */
    /* > 0: the start-up model's defaults x this (kvg_autoscale_startup_scale),
     * the local actuator's cold_start_scale: the planners' lead time read from
     * the same compressed clock as a live miniature's (bench/autoscale/agree.py). */
    double startup_scale;
    /* Fast start (issue 38): a fast_share of the nodes brings a replica back
     * from a checkpoint (the restore class, no GPU held while parked) within
     * fast_ready_s: the restore class's published shape scaled to that p90,
     * never past it. The rest draw from cold_share / fetch_share / warm as
     * before. The planners' start-up model knows the share (startup.h,
     * fast_share) and, as live, learns each class's lead from the starts it
     * sees. */
    double fast_share;   /* 0 */
    double fast_ready_s; /* 30 */
    /* Parked replicas (a pool's `standby: N`, docs/autoscale.md): each pool
     * keeps up to standby replicas it drained asleep instead of removing
     * them; more wanted wakes one first (the asleep1 class's time, then a
     * cold cache). A parked replica costs standby_cost of a running one in
     * GPU-hours (1: it holds its GPU). */
    uint32_t standby;    /* 0 */
    double standby_cost; /* 1.0 */
    /* The planner and its options (targets, profile, limits). */
    char planner[32];
    struct kvg_autoscale_opts aopts;
    double tick_s;    /* signals to the planner, 5 s */
    double scrape_s;  /* the engines' gauges read this often, 0.5 s (serve's
                         --load-monitor-interval-ms 500) */
    double window_s;  /* rates and latencies over the last window, 0: the planner's interval */
    double young_s;   /* a replica is young (empty cache) this long after ready, 60 s */
    double drain_s;   /* 120 s */
    double timeout_s; /* a request without a first token is given up after this, 120 s */
    /* kvgate's prewarm (planner "kvgate"; "kvgate-noprewarm" runs without):
     * a replica that becomes ready first replays the prewarm_prefixes
     * hottest prefixes of the routing history, prefill-only, then its share
     * ramps up over young_s (slow start). */
    int prewarm;                   /* 1 */
    uint32_t prewarm_prefixes;     /* 8 */
    double ramp_from_h, ramp_to_h; /* the morning ramp, 05:00-11:00 */
    uint32_t timeline_points;      /* 288 */
    int flat;                      /* calibration: the rate is mean_rate all day, no bursts */
    double knee_rps; /* requests/s one replica serves within the SLO (0: measure it) */
    /* The PD day's per-role profile (0: measure it, kvg_bench_scale_pd_calibrate). */
    double pd_prefill_tps, pd_decode_tps;
    /* Bench-only experiment knobs of the PD day (bench/results/autoscale.md,
     * "PD seed 2"): the planner option `headroom` of the prefill [0] and
     * decode [1] pool (< 0: aopts.headroom; only kvgate and oracle read it;
     * static's count stays the default's), and the oracle's look-ahead
     * (0: the start-up model's p90 lead for where replicas land, + a tick). */
    double pd_headroom[2];
    double pd_headroom_from_s; /* > 0: pd_headroom applies only from this virtual second on
                                  (before: aopts.headroom); an instant, never-forgetting
                                  learner's bound when set to the first burst's start */
    double oracle_lead_s;
    /* The PD day's router, an experiment: a request prefills on a decode
     * replica when the prefill pool's predicted wait is past this many
     * seconds and that decode's is shorter (0: never); and the decode
     * replicas' per-step token budget (0: the profile's). */
    double pd_local_wait_s;
    uint32_t pd_decode_batched_tokens;
    int trace; /* every decision and its reason to stderr */
    /* Traffic classes (both days): this share of requests is batch, with a
     * deadline of batch_deadline_s from arrival (scale_class.c). Planner
     * "sla" runs without classes (every request interactive), as Dynamo's. */
    double batch_share;      /* 0 */
    double batch_deadline_s; /* 1800 */
};

/* Per class, both days (scale_class.c). Interactive: TTFT from arrival
 * and ITL within targets. Batch: its deadline met (finished within
 * batch_deadline_s of arrival), and its SLO counted from its dispatch (the
 * gateway's queue is where it is meant to wait). Rejected: batch requests
 * answered 429 past their deadline in the gateway's queue. Dropped: batch
 * requests never finished and never answered (cut by a drain, or left at
 * the day's end). */
struct kvg_bench_scale_classes {
    int on; /* this run had classes (batch_share > 0 and not sla) */
    uint64_t interactive, interactive_met, batch, batch_met, batch_in_deadline;
    uint64_t batch_rejected, batch_dropped;
    double slo_attainment_interactive, slo_attainment_batch, batch_deadline_met;
};

struct kvg_bench_scale_result {
    char planner[32];
    int status; /* 0 ran; KVG_ENOTFOUND unknown planner */
    uint64_t requests, met, failed, ramp_requests, ramp_met;
    double slo_attainment, ramp_slo_attainment;
    double gpu_hours, replica_hours, mean_replicas, static_peak;
    double load_per_rps; /* replicas' worth of 1 req/s: 1 / knee_rps */
    double knee_rps;
    uint32_t scale_events, added, removed, cancelled, max_replicas;
    uint32_t woken;      /* parked replicas woken (standby) */
    double parked_hours; /* replica-hours parked (in gpu_hours at standby_cost) */
    double ttft_p50_s, ttft_p90_s, ttft_p99_s, itl_p90_s, ramp_ttft_p90_s;
    double cache_hit;
    /* Replicas added by scale-out: seconds from ready until their hit rate
     * over SCALE_REC_N requests reaches 90% of the pool's; TTFT p90 of the
     * requests they served in their first young_s. */
    uint32_t recovered, scaled_out;
    double recovery_mean_s, recovery_p90_s, young_ttft_p90_s;
    int prewarmed; /* this run prewarmed new replicas */
    struct kvg_bench_scale_classes cls;
    double wall_s;
    /* Timeline: n points over the day (owned): arrival rate, desired,
     * ready and starting replicas. */
    size_t n;
    double *t_h, *rate, *desired, *ready, *starting;
    double *arrived, *missed; /* requests arriving in each point's span, and those of them
                                 that missed the SLO */
    char last_reason[KVG_AUTOSCALE_REASON];
};

/* The scenario's defaults (see bench/results/autoscale.md for why). */
void kvg_bench_scale_opts_default(struct kvg_bench_scale_opts *o);
/* The day's shape at hour h (0..24), mean 1 over the day. */
double kvg_bench_scale_shape(double h);
/* Replicas the pool needs at the day's highest rate (bursts included) by
 * the planners' profile, headroom included: what static provisioning buys. */
uint32_t kvg_bench_scale_static_peak(const struct kvg_bench_scale_opts *o);

/* Measures knee_rps: the highest flat rate (bisection, 0.25 req/s) at
 * which one replica meets the SLO for 99% of requests over 600 s, what
 * Dynamo's profiler does for its throughput at the targets. 0 or a
 * negative code. */
int kvg_bench_scale_calibrate(const struct kvg_bench_scale_opts *o, double *knee_rps);
/* Runs one planner over the day. 0 (out->status says whether the planner
 * exists) or a negative code with err set. out is the caller's:
 * kvg_bench_scale_result_free. */
int kvg_bench_scale_run(const struct kvg_bench_scale_opts *o, struct kvg_bench_scale_result *out,
                        char *err, size_t errlen);
void kvg_bench_scale_result_free(struct kvg_bench_scale_result *r);

/* The day's requests as JSONL into f (scale_export.c): a first line with
 * the day, the SLO, the clocks, the start-ups and the planners' profile as
 * an autoscale pool's keys (o->knee_rps must be set); then one line per
 * request from the day's generator: {"t" (arrival, s), "prompt_tokens",
 * "output_tokens", "prefix" (the shared system prompt's index),
 * "prefix_tokens" (of the prompt, shared), "client" (the heavy client, -1
 * none), "class"}. 0, or a negative code (KVG_EUNSUPP: with batch_share,
 * the replay sends interactive requests only). f is the caller's. */
int kvg_bench_scale_arrivals(const struct kvg_bench_scale_opts *o, FILE *f);
/* The same for the PD day (--scenario diurnal-pd): its header has no
 * "pool" but "pools", a prefill and a decode pool, each with its "role",
 * the replicas it starts with ready ("first_replicas") and its keys with
 * the measured per-role profile (o->pd_prefill_tps and o->pd_decode_tps
 * must be set: kvg_bench_scale_pd_calibrate). KVG_EUNSUPP also for the
 * bench-only experiments (pd_headroom_from_s, pd_local_wait_s,
 * pd_decode_batched_tokens): no gateway pool has them. */
int kvg_bench_scale_pd_arrivals(const struct kvg_bench_scale_opts *o, FILE *f);

/* Reports (scale_report.c). The caller's FILE, never closed; 0 or -EIO. */
int kvg_bench_scale_json(const struct kvg_bench_scale_result *r, size_t n,
                         const struct kvg_bench_scale_opts *o, FILE *f);
/* The markdown report: setup, the table, the goal's checks (goal_check),
 * and the plot (svg: a file name to link, may be NULL). */
int kvg_bench_scale_md(const struct kvg_bench_scale_result *r, size_t n,
                       const struct kvg_bench_scale_opts *o, const char *command, const char *svg,
                       FILE *f);
/* Issue 16's goal over the planners that ran: kvgate >= 99% SLO attainment,
 * <= 0.9x sla's GPU-hours and well below (<= 0.85x) static's, and meeting
 * the SLO through the morning ramp where queue does not. One markdown
 * bullet per check into f (may be NULL); the number failed, or -1 when
 * kvgate, sla, static and queue did not all run. */
int kvg_bench_scale_goal(const struct kvg_bench_scale_result *r, size_t n, FILE *f);
/* The timeline as CSV, one row per (planner, point): hour, arrivals/s,
 * desired, ready, starting, arrived, missed. */
int kvg_bench_scale_timeline_csv(const struct kvg_bench_scale_result *r, size_t n, FILE *f);
/* Replicas (ready solid, desired dashed) and the load over the day, one
 * panel per planner. */
int kvg_bench_scale_svg(const struct kvg_bench_scale_result *r, size_t n, FILE *f);

/* The PD day (`--scenario diurnal-pd`, scale_pd.c): the same traffic and
 * start-up model, but separate prefill and decode pools, each sized by its
 * own instance of the planner (role prefill / decode, the aggregated runs'
 * planner options). A request's prefill runs on a prefill replica
 * (max_tokens 1, its KV blocks held, prefix cache as the aggregated pool's,
 * routed by the gateway's policy as on the aggregated day); then it waits
 * for a ready decode replica (serve's pd_decode pick: KV blocks and
 * requests in flight),
 * its KV moves over a same-rack link (bench/pd/pd.c's transfer: KV bytes / the
 * link's bandwidth), the prefill's blocks are freed, and the decode computes
 * the output in its batch (ITL grows with running sequences, KV capacity
 * bound). TTFT: arrival to the decode's first token. The planners' profile
 * is measured per role (kvg_bench_scale_pd_calibrate), one figure for every
 * planner. No prewarm: "kvgate" here is kvgate's planner only. */
/* Planner "oracle" (PD day only, bench-only, scale_pd_oracle.c): not a
 * planner any live system could run. It reads the day's rate function,
 * bursts included, and sizes each pool every tick for the highest rate over
 * the next oracle_lead_s (time for what it asks to be ready) by the per-role
 * profile at the window's observed cache hit rate, plus the pool's
 * headroom: what knowing the future buys, a reference for what SLO a
 * GPU-hour budget allows. */
struct kvg_bench_scale_pd_pool {
    uint32_t static_peak, scale_events, added, removed, cancelled, max_replicas;
    uint32_t woken; /* parked replicas woken (standby) */
    double gpu_hours, mean_replicas;
    double parked_hours; /* replica-hours parked (in gpu_hours at standby_cost) */
};

struct kvg_bench_scale_pd_result {
    char planner[32];
    int status; /* 0 ran; KVG_ENOTFOUND unknown planner */
    uint64_t requests, met, ttft_met, itl_met, failed;
    uint64_t local_prefills; /* requests prefilled on a decode replica (pd_local_wait_s) */
    /* requests that missed on the prefill leg, the decode leg (one can miss
     * on both: autoscale/signals.h, KVG_AUTOSCALE_MISS_PREFILL) */
    uint64_t missed_leg[2];
    double slo_attainment, ttft_attainment, itl_attainment;
    double gpu_hours; /* prefill + decode */
    double ttft_p50_s, ttft_p90_s, ttft_p99_s, itl_p90_s, xfer_p90_s, cache_hit;
    struct kvg_bench_scale_pd_pool pool[2]; /* [0] prefill, [1] decode */
    struct kvg_bench_scale_classes cls;
    double prefill_tps, decode_tps; /* the per-role profile the planners had */
    /* Timeline: n points (owned): arrivals/s, ready, starting and desired
     * per pool at each point's end; requests arriving in each point's span,
     * those of them that missed the SLO, and those that missed with their
     * prefill (queue included) finished past the TTFT target or never. */
    size_t n;
    double *t_h, *rate, *ready[2], *desired[2], *starting[2];
    double *arrived, *missed, *missed_prefill;
    double wall_s;
};

/* The PD day's per-role profile, measured as Dynamo's profiler measures
 * its engines: one prefill replica's highest input tokens/s (Poisson, flat
 * rate, bisection, 600 s a step) whose TTFT p90 (arrival to the prefill's
 * token) is within the TTFT target, and one decode replica's highest output
 * tokens/s (the prompt's KV remote) whose per-request ITL p90 is within the
 * ITL target; the scenario's mean ISL and OSL, prompts that miss the cache,
 * deterministic per seed. The batch-1 figures are the engine model's own
 * (what the profile was before). */
struct kvg_bench_scale_pd_profile {
    double prefill_tps, decode_tps;               /* measured */
    double prefill_ttft_p90_s, decode_itl_p90_s;  /* at the measured rates */
    double batch1_prefill_tps, batch1_decode_tps; /* the engine model at batch size 1 */
};
/* 0, KVG_ECONFIG when even the lowest rate misses a target, or -ENOMEM. */
int kvg_bench_scale_pd_calibrate(const struct kvg_bench_scale_opts *o,
                                 struct kvg_bench_scale_pd_profile *out);

/* Runs one planner over the PD day; as kvg_bench_scale_run (knee_rps is
 * not used; pd_prefill_tps / pd_decode_tps 0: calibrated first).
 * out: kvg_bench_scale_pd_result_free. */
int kvg_bench_scale_pd_run(const struct kvg_bench_scale_opts *o,
                           struct kvg_bench_scale_pd_result *out, char *err, size_t errlen);
void kvg_bench_scale_pd_result_free(struct kvg_bench_scale_pd_result *r);
/* Reports (scale_pd_report.c): one JSON object per planner; the markdown
 * table and the goal's checks (kvg_bench_scale_pd_goal: as
 * kvg_bench_scale_goal's first three, over prefill + decode GPU-hours: the
 * number failed, -1 when kvgate, sla and static did not all run). */
int kvg_bench_scale_pd_json(const struct kvg_bench_scale_pd_result *r, size_t n,
                            const struct kvg_bench_scale_opts *o, FILE *f);
/* The markdown report links the plot when svg (a file name) is not NULL. */
int kvg_bench_scale_pd_md(const struct kvg_bench_scale_pd_result *r, size_t n,
                          const struct kvg_bench_scale_opts *o, const char *command,
                          const char *svg, FILE *f);
int kvg_bench_scale_pd_goal(const struct kvg_bench_scale_pd_result *r, size_t n, FILE *f);
/* The PD timeline as CSV, one row per (planner, point): hour, arrivals/s,
 * arrived, missed, missed_prefill, then desired, ready, starting of the
 * prefill pool and of the decode pool. */
int kvg_bench_scale_pd_timeline_csv(const struct kvg_bench_scale_pd_result *r, size_t n, FILE *f);
/* The PD day's plot (scale_svg.c): per planner a prefill and a decode
 * panel, each pool's demand in replicas' worth by the per-role profile and
 * o's mean ISL / OSL, ready, ready + starting and desired replicas. */
int kvg_bench_scale_pd_svg(const struct kvg_bench_scale_pd_result *r, size_t n,
                           const struct kvg_bench_scale_opts *o, FILE *f);

#endif
