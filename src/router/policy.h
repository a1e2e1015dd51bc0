/* The routing-policy interface: one small vtable, one file per policy.
 *
 * A policy picks one of the candidate workers for a request. Candidates are
 * already filtered (healthy, circuit closed, serving the model); the policy
 * sees their load counters and whatever the request context carries (text
 * for approximate cache awareness, tokens and block hashes for precise KV
 * awareness, headers for hashing). It never blocks and never does I/O, so
 * the live server and the offline simulator call the very same code.
 *
 * select() returns the chosen candidate's index, or a negative code. When
 * `ex` is non-NULL the policy also explains itself (POST /debug/route). */
#ifndef KVG_ROUTER_POLICY_H
#define KVG_ROUTER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/opt.h"
#include "base/util.h"
#include "router/worker.h"

struct cJSON;
struct kvg_kv_index;

struct kvg_route_ctx {
    struct kvg_str model;
    struct kvg_str body;      /* raw request JSON */
    const struct cJSON *json; /* the same, parsed (borrowed), may be NULL */
    const char *text;         /* routing text (prompt / concatenated messages), may be NULL */
    size_t text_len;
    const uint32_t *tokens; /* prompt token ids, may be NULL */
    size_t ntokens;
    const uint64_t *block_hashes; /* chained hashes of the prompt's full blocks (kv/hash.h) */
    size_t nblocks;
    uint32_t block_size; /* tokens per block; 0 when not tokenized */
    uint32_t max_tokens; /* the request's output budget, 0 unknown */
    struct kvg_str lora; /* the LoRA adapter the request runs on ({NULL,0}: base model) */
    /* Header lookup (case-insensitive); returns a NULL view when absent. */
    struct kvg_str (*header)(const void *hctx, const char *name);
    const void *hctx;
    struct kvg_rng *rng;
    /* The API key's user (its tenant, else its name); empty without keys.
     * A session key of last resort for session_affinity. */
    struct kvg_str user;
    uint64_t now_ms;
    uint64_t load_max_age_ms; /* engine metrics older than this are unknown */
    int dry_run;              /* explain only (POST /debug/route): policies change no state */
    /* Routing on an event loop: the policies' shared locks are tried, not
     * waited for, as a lower-priority work thread may hold them
     * (kv/approx.h's _nowait calls). */
    int nowait;
    /* Optional per-request eligibility (priority admission): a worker it
     * refuses is no candidate. Called under the pool's read lock. */
    int (*filter)(void *ud, struct kvg_worker *w);
    void *filter_ud;
    /* Disaggregated serving (pd/): the roles a candidate may have (a mask
     * of 1 << enum kvg_worker_role; 0: any), the policy to run instead of
     * the pool's (NULL: the pool's; also told on_done at release), and
     * the labels of the worker the request's KV comes from (a decode pick
     * prefers a near one), NULL none. */
    unsigned roles;
    struct kvg_policy *policy;
    const char *near_labels;
};

/* Everything a policy may be configured with; each reads its own fields.
 * Defaults (kvg_policy_opts_default) are the peers' CLI defaults. */
struct kvg_policy_opts {
    /* consistent_hash / rendezvous_hash / manual */
    uint32_t vnodes; /* virtual nodes per worker on the ring (160, vllm-router) */
    /* prefix_hash */
    uint32_t prefix_token_count;    /* --prefix-token-count 256 */
    double prefix_hash_load_factor; /* --prefix-hash-load-factor 1.25 */
    /* manual */
    uint64_t max_idle_ms;    /* --max-idle-secs 14400 */
    int assignment_min_load; /* --assignment-mode min_load (else random) */
    /* Precise KV knowledge: the pool's index fed by engine KV events (not
     * owned; NULL when no engine publishes events: the KV policies then
     * fall back to what the router itself routed, approximate mode). */
    struct kvg_kv_index *kv;
    uint32_t block_size; /* --block-size 16 */
    /* What a prefix block held in host memory (vLLM's CPU offloading,
     * SGLang's HiCache) costs as a fraction of computing it
     * (--router-host-tier-cost; KVG_POLICY_HOST_TIER_COST): kv_aware and
     * score credit it 1 - this, a GPU block 1, a miss 0. */
    double host_tier_cost;
    /* kv_aware (Dynamo's KV router) */
    double overlap_weight;  /* --router-kv-overlap-score-weight 1.0 */
    double temperature;     /* --router-temperature 0.0 */
    int track_prefill;      /* count prefill tokens already assigned (1) */
    uint32_t approx_ttl_ms; /* --router-ttl-secs 120 (approximate mode) */
    /* prefix_affinity (kvgate's) */
    double affinity_min_match;  /* --affinity-min-match 0.5: share of the prompt a holder needs */
    double affinity_load_bound; /* --affinity-load-bound 2: in flight over bound x mean + 1 */
    /* session_affinity (kvgate's) */
    char session_header[64];   /* --session-header: read before x-session-id ("" none) */
    double session_load_bound; /* --session-load-bound 1.25: home past c x (sum + 1) / n */
    char session_fallback[32]; /* --session-fallback prefix_affinity: the KV-aware choice */
    /* predicted_latency (kvgate's) */
    double predict_prefill_tps; /* --predict-prefill-tps 10000: prior until learned */
    double predict_itl_bound;   /* --predict-itl-bound 2: decode blocks over bound x mean */
    /* cache_aware (sglang / vllm-router) */
    double cache_threshold;        /* --cache-threshold 0.3 */
    uint32_t balance_abs;          /* --balance-abs-threshold 64 */
    double balance_rel;            /* --balance-rel-threshold 1.5 */
    uint64_t eviction_interval_ms; /* --eviction-interval 120 s; 0 disables */
    uint64_t max_tree_size;        /* --max-tree-size 2^26 characters per worker */
    int miss_to_smallest_tree;     /* the older miss rule (smallest tenant), not min load */
    /* score (llm-d's weighted scorers); the presets set these */
    double w_prefix_precise, w_prefix_approx, w_queue, w_kv_util, w_load;
    int prefix_minmax;        /* precise prefix score min-max normalised (2025 llm-d) */
    uint32_t load_threshold;  /* load-aware scorer threshold (128) */
    uint64_t approx_capacity; /* approximate prefix index: blocks per worker (31250) */
    /* LoRA-aware routing (kv_aware and score): a request for an adapter on a
     * worker that does not have it loaded pays a cold load, in prefill-block
     * equivalents (--router-lora-load-cost 16), doubled when the worker's
     * adapter slots are full (one must be evicted); once the adapter is
     * loaded on lora_max_workers candidates (--router-lora-max-workers 2),
     * each further worker also pays the request's whole prompt in blocks,
     * so a hot adapter spreads only when its holders are that much busier. */
    double lora_load_cost;
    uint32_t lora_max_workers;
    double w_lora; /* score: LoRA scorer weight (1) */
};

/* The default host-tier cost: the time to bring a token's KV back over
 * PCIe over the time to compute it, for the profile kvgate's benchmark
 * reproduces (Qwen3-32B in bf16 on 2 x H100, tensor parallel):
 *   KV bytes per token  2 (K, V) x 64 layers x 8 KV heads x 128 x 2 B = 256 KiB,
 *                       half of it per GPU;
 *   PCIe                Gen5 x16 per GPU, ~25 GB/s achieved by offloading
 *                       copies (half the 64 GB/s peak, both ways shared);
 *   prefill             ~6,000 tokens/s for a long prompt on the pair.
 * (131072 B / 25e9 B/s) x 6000 tokens/s = 0.031: a CPU hit saves ~97% of
 * a prefill. Slower links or smaller models (cheaper prefill) raise it. */
#define KVG_POLICY_HOST_TIER_COST (131072.0 / 25e9 * 6000.0)

void kvg_policy_opts_default(struct kvg_policy_opts *o);
/* The options above that commands take, as one option table (policy_opts.c):
 * their flag and YAML names, checks and help. Include it (KVG_OPT_INCLUDE at
 * the offset of a struct kvg_policy_opts) rather than naming them again. */
extern const struct kvg_opt kvg_policy_opt_table[];

/* Per-candidate explanation; fields a policy does not use stay < 0. */
struct kvg_route_score {
    double matched_blocks, prefill_blocks, decode_blocks, waiting, kv_usage, score;
    double lora_cost; /* prefill-block equivalents of loading the request's adapter */
};

struct kvg_route_explain {
    struct kvg_route_score *scores; /* one per candidate, set by the caller */
    struct kvg_worker **cands;      /* optional: the pool stores the candidates here, each
                                       with a reference the caller drops */
    size_t n;
    char note[128]; /* short reason, e.g. "cache hit" */
};

/* kvgate serve's --policy default; the routing suite
 * (kvgate bench --suite routing) reports how far it is from each workload's
 * best. */
#define KVG_POLICY_DEFAULT "prefix_affinity"

struct kvg_policy;

struct kvg_policy_ops {
    const char *name;
    int wants_tokens; /* reads ctx->tokens / block_hashes: the caller tokenizes */
    int wants_text;   /* reads ctx->text: the caller extracts the routing text */
    int (*select)(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                  const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex);
    /* The request sent to w ended (optional: policies that track their own state). */
    void (*on_done)(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx);
    /* The request sent to w produced its first token ttft_ms after it was
     * routed, with work_tokens of prefill ahead of it and its own (the
     * charges at routing time): what latency-predicting policies learn
     * from (optional). */
    void (*on_first_token)(struct kvg_policy *p, struct kvg_worker *w, uint64_t work_tokens,
                           uint64_t ttft_ms);
    /* w left the pool: forget it (optional). */
    void (*on_remove)(struct kvg_policy *p, struct kvg_worker *w);
    void (*destroy)(struct kvg_policy *p);
    /* 1 when it matches on the engines' KV events (the precise index), not on
     * its own routing history (optional: absent means 0). */
    int (*reads_events)(const struct kvg_policy *p);
    /* ctx's prompt is now cached on w although no pick of this router sent
     * it there (a prewarm replayed it straight to the engine, or another
     * replica routed it: router/exchange.h): remember it exactly as a pick
     * of w would (the same approximate index, the same placement count).
     * What engine KV events already tell (the precise index) is not
     * recorded again. ctx then carries the prompt's block hashes, token
     * count and block size (no text, body or headers for a peer's record).
     * Optional: policies without routing history. */
    void (*place)(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx);
    /* 1 when place remembers ctx's routing text, not its blocks (cache_aware's
     * character tree): a peer's record then carries the text
     * (router/exchange.h). Optional: absent means 0. */
    int (*places_text)(const struct kvg_policy *p);
    /* The text a pick's record carries instead of the routing text, for a
     * place hook that reads something else from it (manual: the routing
     * key, pinned to the record's worker): written into out (at most cap,
     * KVG_POLICY_RECORD_TEXT_MAX), its length returned, 0 for none.
     * Optional; such a policy says places_text too. */
    size_t (*record_text)(const struct kvg_policy *p, const struct kvg_route_ctx *ctx, char *out,
                          size_t cap);
};
#define KVG_POLICY_RECORD_TEXT_MAX 1024

struct kvg_policy {
    const struct kvg_policy_ops *ops;
};

/* Creates a policy by name ("random", "round_robin", ...; aliases as the
 * peers spell them). *out is the caller's: p->ops->destroy(p).
 * KVG_ENOTFOUND for an unknown name. */
int kvg_policy_new(const char *name, const struct kvg_policy_opts *opts, struct kvg_policy **out);
/* 1 when kvg_policy_new knows name (an alias included), else 0. */
int kvg_policy_known(const char *name);
/* Comma-separated list of known names, for --help and errors. */
const char *kvg_policy_names(void);

/* Policy constructors, one per file. */
int kvg_policy_random_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_round_robin_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_power_of_two_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_least_load_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_consistent_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_rendezvous_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_prefix_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_manual_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_kv_aware_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_cache_aware_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_prefix_affinity_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_score_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_precise_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_estimated_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_load_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_session_affinity_new(const struct kvg_policy_opts *o, struct kvg_policy **out);
int kvg_policy_predicted_latency_new(const struct kvg_policy_opts *o, struct kvg_policy **out);

/* Shared helpers for policies. */
/* A policy without state of its own: *out is ops alone, freed by
 * kvg_policy_free_stateless (its ops->destroy). */
int kvg_policy_new_stateless(const struct kvg_policy_ops *ops, struct kvg_policy **out);
void kvg_policy_free_stateless(struct kvg_policy *p);
/* Router-side load of w: in-flight requests. */
uint32_t kvg_policy_inflight(struct kvg_worker *w);
/* Engine-side load when fresh, else -1: waiting + running at the sample,
 * plus what this router's in-flight count rose by since. A sample is up
 * to a scrape period old: without its own picks on it, replicas each sent
 * a burst's requests all to the worker that looked idlest. Its ends since
 * are left to the next sample: subtracting them cost one router 6% p90 on
 * multi-LoRA (bench/results/fleet.md). */
double kvg_policy_engine_load(struct kvg_worker *w, const struct kvg_route_ctx *ctx);
/* The load replicas see alike: this router's in-flight count, or the
 * engine's (kvg_policy_engine_load) when fresh and more. Behind a balancer
 * each of N replicas counts about 1/N of a worker's requests; the engine
 * counts them all (bench/results/fleet.md). The engine's count adds the
 * other replicas' picks heard through the exchange since the sample
 * (router/exchange.h; worker.h, peer_picks): without them, replicas spilled
 * alike onto the worker the sample showed idlest until the next sample. A
 * pick made before the sample but heard after it counts twice until the
 * next one: skipping those (picks within an exchange period of the sample)
 * was worse (bench/results/fleet.md, 2026-12-07 (5)). While peers report
 * their in-flight counts (exchange version 3, worker.h peer_view) it is
 * this router's count plus theirs, or the engine's sample alone where that
 * says more: vLLM's gauges miss the picks of a step or two before the
 * sample, and on them 8 replicas of prefix_hash took 4.17x one replica's
 * p90 on chat (bench/results/fleet.md, 2026-12-07 (9)). */
double kvg_policy_shared_load(struct kvg_worker *w, const struct kvg_route_ctx *ctx);
/* This router's in-flight count now plus the requests the engine ran or
 * queued at its last fresh sample beyond this router's own then (other
 * replicas', other clients'): unlike kvg_policy_engine_load, the requests
 * that ended since the sample are gone at once, so one router alone counts
 * exactly its own. predicted_latency's ties read it: with the engine's
 * sample they changed one router's agentic p90 to 1.17x
 * (bench/results/fleet.md, 2026-12-07 (3)). */
double kvg_policy_load_now(struct kvg_worker *w, const struct kvg_route_ctx *ctx);
/* Index of the least-loaded candidate (in-flight, then processed, then
 * uniformly random among ties). */
int kvg_policy_min_load(struct kvg_worker *const *cand, size_t n, const struct kvg_route_ctx *ctx);
/* The sticky routing key of a request (vllm-router's and sglang's sources):
 * headers x-kvgate-routing-key, x-smg-routing-key, x-session-id, x-user-id,
 * x-tenant-id, x-correlation-id, x-request-id, x-trace-id; then body fields
 * session_params.session_id, user, session_id, user_id; else "" (no key).
 * Writes a NUL-terminated key into out; returns its length. */
size_t kvg_policy_routing_key(const struct kvg_route_ctx *ctx, char *out, size_t cap);

#endif
