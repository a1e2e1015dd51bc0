/* The planners' interface: one small vtable, one file per planner, in the
 * shape of the router's policies (router/policy.h).
 *
 * A planner sizes one pool (prefill, decode or aggregated, of one model). The
 * caller fills a struct kvg_autoscale_signals every tick (kvgate serve from
 * its scrapes and the proxy's observations, the offline benchmark from its
 * engine models) and calls plan(); the planner answers the replicas the pool
 * should have and why. It never does I/O and never reads a clock: `now` is an
 * input, so the live loop and the offline simulator run the very same code.
 * A planner acts at most once per its interval; between, plan() repeats its
 * last answer (decision.acted = 0).
 *
 * Planners: `static` (a fixed count: peak provisioning), `queue` (the
 * HPA/KEDA baseline), `sla` (Dynamo's SLA planner), `kvgate` (kvgate's own:
 * forecast at the start-up horizon). Each file's opening says what it does. */
#ifndef KVG_AUTOSCALE_PLANNER_H
#define KVG_AUTOSCALE_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/predict.h"
#include "autoscale/startup.h"

enum kvg_autoscale_role { KVG_AUTOSCALE_AGGREGATED, KVG_AUTOSCALE_PREFILL, KVG_AUTOSCALE_DECODE };

/* One pool at `now`. Rates and latencies cover the caller's last window;
 * a latency < 0 is unknown (no request finished in the window). */
struct kvg_autoscale_signals {
    double now; /* seconds, the caller's clock */
    /* Replicas. `starting` were asked for and are not ready yet; young ones
     * are ready but inside their warm-up (empty prefix cache). */
    uint32_t ready, starting, draining, young;
    const double *starting_eta; /* expected ready time of each starting replica, may be NULL */
    /* Engine signals, summed over ready replicas (vLLM's num_requests_waiting,
     * num_requests_running, kv_cache_usage_perc). */
    double waiting, running, kv_usage_sum;
    /* kvgate's own observations. */
    double queued;                 /* requests held in the gateway queue */
    double inflight_prompt_tokens; /* prompt tokens of requests without a first token yet */
    double arrival_rate;           /* requests/s arriving (the gateway's, queued ones included) */
    double input_tps, output_tps;  /* prompt tokens/s arriving, output tokens/s emitted */
    double isl, osl;               /* mean prompt / output tokens per request */
    double cache_hit;              /* share of prompt tokens found in the engines' prefix caches */
    double ttft_mean, ttft_p90, itl_mean, itl_p90; /* seconds */
    double slo_miss; /* share of the window's finished requests over a target, < 0 unknown */
    double slo_miss_ttft, slo_miss_itl; /* ... over the TTFT, resp. the ITL target (a failed
                                           request counts in both), < 0 unknown */
    /* ... missed on the prefill leg, resp. the decode leg, of a PD request
     * (autoscale/signals.h, KVG_AUTOSCALE_MISS_PREFILL): < 0 unknown (no
     * PD request with a timed prefill leg finished in the window). */
    double slo_miss_prefill, slo_miss_decode;
    /* The batch class waiting in the gateway queue (not in queued nor in
     * inflight_prompt_tokens): its requests, their prompt and expected
     * output tokens (0: unknown, batch_queued x the measured isl / osl stand in), and the
     * least time left to any of their deadlines (seconds, <= 0 unknown).
     * Read only when batch_queued > 0. kvgate sizes to serve it by then. */
    double batch_queued, batch_prompt_tokens, batch_out_tokens, batch_slack_s;
    int partial; /* the window covered less than its span yet (the first ticks) */
    int unseen;  /* no request finished yet since the builder started, and one
                    arrived or the first window is not over: no lengths, no load
                    measured (kvg_autoscale_plan holds) */
};

/* What one replica sustains, measured in advance (Dynamo profiles its
 * engines; the benchmark measures its engine model). */
struct kvg_autoscale_profile {
    double prefill_tps;   /* uncached prompt tokens/s a replica takes within the TTFT target
                             (profiled on prompts that miss the cache, as Dynamo's profiler) */
    double decode_tps;    /* output tokens/s a replica emits within the ITL target */
    double ttft_idle_s;   /* TTFT on an idle replica at the profiled ISL */
    double itl_idle_s;    /* ITL with one sequence */
    double itl_per_seq_s; /* ITL's growth per running sequence (0: decode_tps is fixed) */
};

struct kvg_autoscale_opts {
    enum kvg_autoscale_role role;
    char model[64];
    uint32_t min_replicas, max_replicas; /* 1, 16 */
    uint32_t static_replicas;            /* static: the count (0: max_replicas) */
    double ttft_target_s, itl_target_s;  /* 2.0, 0.1 */
    double interval_s;                   /* 0: the planner's own default */
    struct kvg_autoscale_profile prof;
    /* queue: KEDA's pollingInterval 30 s driving HPA. Preset "llm-d" (the
     * token-velocity recipe: prefill on in-flight prompt tokens / peak
     * prefill throughput vs 1.5 s, decode on summed KV usage vs 0.8,
     * aggregated the larger) or "waiting" (requests waiting per replica). */
    char queue_preset[16];
    double queue_prefill_backlog_s; /* 0: llm-d's rule, TTFT target - uncached ISL / V_P
                                       (1.5 s is that rule's value for short contexts) */
    double queue_peak_prefill_tps;  /* V_P; 0: prof.prefill_tps */
    double queue_kv_target;         /* 0.8 */
    double queue_waiting_target;    /* 5 */
    double queue_tolerance;         /* HPA's 0.1 */
    double queue_down_window_s;     /* HPA's scale-down stabilization, 300 */
    double queue_cooldown_s;        /* KEDA's cooldownPeriod to zero, 300 */
    /* sla: Dynamo's adjustment_interval 180 s and its load predictor. */
    enum kvg_autoscale_pred_kind sla_predictor; /* constant */
    uint32_t sla_period;                        /* seasonal_trend: intervals per season */
    /* kvgate */
    const struct kvg_autoscale_startup *startup; /* borrowed; NULL: the measured defaults */
    /* Where new replicas land: cold_share and fetch_share of the nodes, the
     * rest as `node` (warm by default; asleep1, asleep2 or restore for a pool
     * whose every new replica is woken or restored: the pool's `node:`). */
    enum kvg_autoscale_node node;
    double cold_share, fetch_share; /* (see above) */
    double headroom;                /* 0.1: capacity kept above the forecast */
    double down_util;               /* remove one only if the rest stay under this; 0: the
                                     * role's, 0.8 (a decode pool 0.9) */
    double down_hold_s;             /* 300: ... for this long, and within the horizon */
    double cold_cache_penalty;      /* 0.15: capacity a young replica lacks (empty cache) */
    double young_s; /* 60: a replica is young this long after it was seen to become ready (ctl.c) */
    double slo_goal;    /* 0.99: the share of requests to keep within targets */
    double zero_idle_s; /* 600: no demand this long -> zero (min_replicas 0) */
    double window_s; /* 300: the level's window; trend over 3x, "recent" 1/5 (planner_kvgate.c) */
    double burst_headroom; /* 0: none (the default); -1: learned for a prefill pool, none
                              for the others; > 0 that margin (planner_kvgate.c,
                              burst_margin()) */
    double burst_prior;    /* 1.49: the learned margin's ratio until it has an hour of load */
};

/* Defaults as commented above (aggregated, model "default"). */
void kvg_autoscale_opts_default(struct kvg_autoscale_opts *o);

#define KVG_AUTOSCALE_REASON 256

struct kvg_autoscale_decision {
    uint32_t desired;
    uint32_t current; /* ready + starting when it was decided */
    int acted;        /* 1 when this call made a new recommendation */
    double at;        /* when the recommendation was made */
    double need;      /* replicas' worth of demand behind it (unrounded), < 0 n/a */
    double forecast;  /* the load it was sized for, in replicas' worth, < 0 n/a */
    double horizon_s; /* how far ahead the forecast looked */
    char reason[KVG_AUTOSCALE_REASON];
};

struct kvg_autoscale_planner;

struct kvg_autoscale_planner_ops {
    const char *name;
    /* Plans at s->now (non-decreasing between calls). 0 or a negative code. */
    int (*plan)(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                struct kvg_autoscale_decision *d);
    void (*destroy)(struct kvg_autoscale_planner *p);
};

struct kvg_autoscale_planner {
    const struct kvg_autoscale_planner_ops *ops;
    struct kvg_autoscale_opts o; /* a copy (startup stays borrowed) */
    struct kvg_autoscale_decision last;
    int has_last;
};

/* Creates a planner by name. *out is the caller's: kvg_autoscale_planner_free.
 * KVG_ENOTFOUND for an unknown name, KVG_ECONFIG for inconsistent options. */
int kvg_autoscale_planner_new(const char *name, const struct kvg_autoscale_opts *o,
                              struct kvg_autoscale_planner **out);
void kvg_autoscale_planner_free(struct kvg_autoscale_planner *p);
/* Calls p's plan() and remembers the answer in p->last. */
int kvg_autoscale_plan(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                       struct kvg_autoscale_decision *d);
const char *kvg_autoscale_planner_names(void);
const char *kvg_autoscale_role_name(enum kvg_autoscale_role r);
int kvg_autoscale_role_parse(const char *s);

/* Shared by the planners. */
/* Output tokens/s one replica emits when its ITL may reach itl_s (the
 * profile's linear ITL model, else its fixed decode_tps). */
double kvg_autoscale_decode_tps_at(const struct kvg_autoscale_profile *pr, double itl_s);
/* The pool's load in replicas' worth for token rates in_tps / out_tps at
 * the ITL allowed: prefill share + decode share for aggregated replicas
 * (one replica's time is split between both), the role's own otherwise. */
double kvg_autoscale_load(const struct kvg_autoscale_opts *o, double in_tps, double out_tps,
                          double itl_s);
/* v clamped to [min_replicas, max_replicas]. */
uint32_t kvg_autoscale_clamp(const struct kvg_autoscale_opts *o, double v);
/* 1 when p's interval (its default when the options set none) is due, on
 * the grid of its first action (a tick up to 1% of the interval early
 * counts): *next_at moves one interval on and d->acted is set. 0 when not:
 * d repeats the last answer. */
int kvg_autoscale_due(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                      double dflt_interval, double *next_at, struct kvg_autoscale_decision *d);
/* The same on an interval of the caller's (iv > 0), whatever the options
 * set. */
int kvg_autoscale_due_every(struct kvg_autoscale_planner *p, const struct kvg_autoscale_signals *s,
                            double iv, double *next_at, struct kvg_autoscale_decision *d);
/* A destroy() for planners that are one allocation. */
void kvg_autoscale_planner_free_plain(struct kvg_autoscale_planner *p);
/* ceil() that forgives floating dust (3.0000001 is 3). */
uint32_t kvg_autoscale_ceil(double v);

int kvg_autoscale_static_new(struct kvg_autoscale_planner **out);
int kvg_autoscale_queue_new(struct kvg_autoscale_planner **out);
int kvg_autoscale_sla_new(struct kvg_autoscale_planner **out);
int kvg_autoscale_kvgate_new(struct kvg_autoscale_planner **out);

#endif
