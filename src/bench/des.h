/* Offline mode: a discrete-event simulation in virtual time of N engine
 * models (sim/sim.h) behind the router's own pool and policy code.
 *
 * Events, in time order: an arrival from the workload (route it with
 * kvg_pool_pick exactly as kvgate serve does, submit it to the chosen
 * engine, start that engine's step if it was idle); the end of an engine's
 * step (deliver its tokens: TTFT is arrival to the end of the step that
 * produced the first token; kvg_pool_first_token / kvg_pool_release as the
 * proxy calls them; then publish the step's KV events into the precise index
 * and start the next step); a load scrape every scrape_ms (each worker's
 * struct kvg_engine_load is refreshed from the engine's metrics, as kvgate's
 * /metrics scraper does, so load-aware policies see the same lag they would
 * live; so are its LoRA adapters, running and waiting, and max_lora, as
 * vllm:lora_requests_info says them; queue and KV usage are sampled then
 * too; requests past --timeout without a first token are given up).
 *
 * A request may name a LoRA adapter and a cache_salt (workload.h): it is
 * hashed with them for routing (kvg_kv_hash_request, as kvgate serve hashes
 * a request whose model is an adapter), routed with ctx.lora set, and the
 * engine seeds its blocks with them, so it shares cache only with requests
 * of the same adapter and salt; adapter slots are the engine's (sim.h).
 *
 * The KV events of a step become visible when the step ends, as an engine
 * publishes them after the forward pass; they reach the index by one of two
 * paths that give the same index: `wire` encodes them as vLLM's msgpack
 * EventBatch (sim/kv_events.h) and decodes them with the live subscriber's
 * decoder (kv/events.h), `direct` fills the decoder's batch struct from the
 * engine's event log without the msgpack round trip (faster; the default).
 *
 * With several routers (routers > 1) each arrival goes to one of them by
 * the balancer; the summary also gets the load spread over the engines
 * (max_load_ratio_10s) and how often routers herd (herd_ratio), and the
 * routers may exchange their routing history (exchange_ms): des_fleet.c.
 *
 * A run is deterministic for its options: same options, same summary
 * (except the wall-clock fields). Runs share nothing, so several may run at
 * once on different threads. */
#ifndef KVG_BENCH_DES_H
#define KVG_BENCH_DES_H

#include <stdatomic.h>
#include <stdint.h>

#include "bench/stats.h"
#include "bench/workload.h"
#include "router/policy.h"
#include "sim/sim.h"

enum kvg_bench_kv_path { KVG_BENCH_KV_NONE, KVG_BENCH_KV_DIRECT, KVG_BENCH_KV_WIRE };

/* Heterogeneous engines: every odd-numbered engine (half of them, spread
 * over the slots) runs twice as fast (every step cost halved) or has half
 * the KV capacity of the profile. */
enum kvg_bench_hetero { KVG_BENCH_HET_NONE, KVG_BENCH_HET_FAST, KVG_BENCH_HET_HALF_KV };

/* How clients are spread over several routers (an L4 balancer in front of
 * kvgate replicas, per request as haproxy's round robin in HTTP mode). */
enum kvg_bench_balancer { KVG_BENCH_BAL_ROUND_ROBIN, KVG_BENCH_BAL_RANDOM };
#define KVG_BENCH_MAX_ROUTERS 64

/* Progress of a run, readable from another thread. */
struct kvg_bench_progress {
    _Atomic uint64_t issued, finished; /* requests */
    _Atomic uint64_t vt_ms;            /* virtual time reached */
    _Atomic int state;                 /* 0 waiting, 1 running, 2 done */
};

struct kvg_bench_des_opts {
    struct kvg_bench_wl_opts wl;
    struct kvg_sim_profile profile; /* a copy, overrides applied */
    uint32_t engines;
    enum kvg_bench_hetero hetero;
    double mean_output; /* engines' EOS length (geometric mean) for requests without ignore_eos */
    uint32_t max_loras; /* engines' adapter slots (vLLM --max-loras; sim/sim.h) */
    double lora_load_s; /* seconds a step pays per cold adapter loaded */
    char policy[64];
    struct kvg_policy_opts popts; /* kv and block_size are set by the run */
    uint32_t scrape_ms;           /* load refresh period, virtual ms */
    uint32_t load_max_age_ms;     /* older load samples are unknown to policies */
    enum kvg_bench_kv_path kv_path;
    double timeout_s;    /* give up a request without a first token after this; 0 never */
    uint64_t seed;       /* routing randomness and engine seeds */
    uint64_t route_salt; /* changes only the router's random choices (0: none) */
    /* Replicas of the router (1..KVG_BENCH_MAX_ROUTERS), as kvgate serve
     * replicas behind a balancer: each has its own pool (in-flight counts
     * and charges), its own policy (routing history, the approximate index)
     * and its own scrape of the engines (every scrape_ms, router 0 at phase
     * 0, the others at a random phase). All hear every engine's KV events at
     * once, so they share one precise index (it is only read by policies). */
    uint32_t routers;
    enum kvg_bench_balancer balancer;
    /* With several routers: every exchange_ms (virtual) each one sends the
     * picks it made since its last batch to the others, which apply them
     * when the batch is made (router/exchange.h, as kvgate serve --peers
     * does live); 0: the routers share nothing. */
    uint32_t exchange_ms;
    struct kvg_bench_progress *progress; /* optional */
};

/* Engine e's gauges at virtual time t as its /metrics says them (vLLM's
 * step-end counts, kvg_sim_reported_counts) into router worker w's load
 * sample, stamped at_ms (the router's clock); w->mu held by the caller.
 * Shared with the autoscaling days (bench/scale/scale_route.c). */
struct kvg_worker;
void kvg_bench_des_load_sample(struct kvg_worker *w, const struct kvg_sim *e, double t,
                               uint64_t at_ms);

/* Fills defaults: 1 engine of the "tiny" profile, random policy, scrape
 * every 50 ms (llm-d's EPP refresh), staleness 2 s, direct KV path, one
 * adapter slot (vLLM's default --max-loras 1) loaded in KVG_SIM_LORA_LOAD_S. */
void kvg_bench_des_opts_default(struct kvg_bench_des_opts *o);

/* Runs one policy. out->status is 0 when it ran; KVG_ENOTFOUND when this
 * build does not know the policy (out->note says so; not an error of the
 * run, the return value is 0 then too). A negative return is a failure of
 * the run (err says why). */
int kvg_bench_des_run(const struct kvg_bench_des_opts *o, struct kvg_bench_summary *out, char *err,
                      size_t errlen);

#endif
