/* One load view of an inference server, whatever engine it runs: what the
 * router, admission and the autoscaler read after each scrape of a worker's
 * /metrics. Built from vLLM's, SGLang's or llama.cpp's own metric names.
 *
 * Unknown is never zero. A field the engine did not report (an older build,
 * a metric behind a flag, a NaN or an out-of-range value) has its
 * KVG_METRICS_HAS_* bit clear, and the double fields are NaN: any arithmetic
 * on them stays NaN and every comparison is false, so a missing signal can
 * never read as "idle". A body that fails to parse yields an all-unknown view.
 * Staleness (when the scrape happened) is the caller's to track.
 *
 * Several label sets. An endpoint can run several engines (vLLM's
 * data-parallel "engine" label, SGLang's dp ranks, several model_name
 * values), each reporting its own series. Series whose labels differ only in
 * a replica label (tp_rank, pp_rank, moe_ep_rank, attn_tp_rank: ranks that
 * mirror one scheduler's state) are first collapsed by max, so enabling
 * metrics on every TP rank does not multiply the queue. The remaining groups
 * are then combined:
 *   waiting, running, prefix queries/hits, num_gpu_blocks, kv capacity: sum
 *     (the endpoint's total queue, batch and cache);
 *   kv_usage: max (the fullest engine decides whether a request will find
 *     room; an average would hide one engine at 100%);
 *   cache_hit_rate: mean (it is already a ratio per engine);
 *   block_size: must agree across engines, else unknown.
 * When an engine renamed a metric (vllm:gpu_cache_usage_perc ->
 * vllm:kv_cache_usage_perc, vllm:gpu_prefix_cache_* -> vllm:prefix_cache_*),
 * the newest name present wins; names are never mixed within one field. */
#ifndef KVG_METRICS_LOAD_H
#define KVG_METRICS_LOAD_H

#include <stddef.h>
#include <stdint.h>

enum kvg_metrics_flavor {
    KVG_METRICS_FLAVOR_UNKNOWN = 0,
    KVG_METRICS_FLAVOR_VLLM,
    KVG_METRICS_FLAVOR_SGLANG,
    KVG_METRICS_FLAVOR_LLAMACPP,
};

enum {
    KVG_METRICS_HAS_WAITING = 1u << 0,
    KVG_METRICS_HAS_RUNNING = 1u << 1,
    KVG_METRICS_HAS_KV_USAGE = 1u << 2,
    KVG_METRICS_HAS_BLOCK_SIZE = 1u << 3,
    KVG_METRICS_HAS_NUM_GPU_BLOCKS = 1u << 4,
    KVG_METRICS_HAS_KV_CAPACITY = 1u << 5,
    KVG_METRICS_HAS_PREFIX_QUERIES = 1u << 6,
    KVG_METRICS_HAS_PREFIX_HITS = 1u << 7,
    KVG_METRICS_HAS_CACHE_HIT_RATE = 1u << 8,
    KVG_METRICS_HAS_LORA = 1u << 9,
};

struct kvg_metrics_load {
    enum kvg_metrics_flavor flavor; /* from the metric name prefix */
    unsigned known;                 /* KVG_METRICS_HAS_* bits */
    double waiting;                 /* requests queued, not yet scheduled */
    double running;                 /* requests in the running batch */
    double kv_usage;                /* fraction of KV cache in use, 0..1 */
    uint64_t block_size;            /* tokens per KV block (SGLang: page size); 0 if unknown */
    uint64_t num_gpu_blocks;        /* KV blocks (SGLang: pages); 0 if unknown */
    uint64_t kv_capacity_tokens;    /* KV cache size in tokens; 0 if unknown */
    double prefix_queries;          /* prefix-cache lookups, tokens, monotonic */
    double prefix_hits;             /* prefix-cache hits, tokens, monotonic */
    double cache_hit_rate;          /* SGLang's own hit-rate gauge, 0..1 */
    unsigned engines;               /* label-set groups seen for waiting/running */
    /* LoRA (vLLM's vllm:lora_requests_info, a gauge whose value is the time
     * of its last update; the newest sample is the engine's state): the
     * adapters of running requests then of waiting ones, comma-separated
     * ("" none; cut at a whole name when longer than the buffer), and
     * max_lora, the adapter slots (0 unknown). */
    char lora_active[512];
    unsigned lora_max;
};

/* Sets every field unknown. */
void kvg_metrics_load_init(struct kvg_metrics_load *l);

/* Parses an engine's /metrics body (see parse.h for the grammar) into *out.
 * Returns 0, or KVG_EPARSE / KVG_ETOOBIG for a malformed body: an engine
 * that answers garbage is treated like one that did not answer, and *out is
 * left all-unknown. A well-formed body with none of the known metrics is 0
 * with flavor UNKNOWN and known == 0. Allocates nothing; uses about 24 KB of
 * the calling thread's stack. Thread-safe (no shared state). */
int kvg_metrics_load_parse(const char *text, size_t len, struct kvg_metrics_load *out);

const char *kvg_metrics_flavor_name(enum kvg_metrics_flavor f);

#endif
