/* The policy options as one option table (base/opt.h) over struct
 * kvg_policy_opts: kvgate serve includes it in its flags and YAML file, the
 * bench in its own flags, and the bench's spawned gateways get the bench's
 * values back through the same table (kvg_opt_emit), so a policy option is
 * named, checked and documented in this one place. */
#include <math.h>
#include <stddef.h>

#include "router/policy.h"

#define O(field) offsetof(struct kvg_policy_opts, field)
#define S(field) sizeof(((struct kvg_policy_opts *)0)->field)
/* The policies' weights and factors: any number from 0 up. */
#define NONNEG .min = 0, .max = INFINITY

static const char *const assignment_modes[] = {"random", "min_load", NULL};
static const char *const miss_rules[] = {"min_load", "smallest_tree", NULL};

const struct kvg_opt kvg_policy_opt_table[] = {
    {"prefix-token-count", NULL, KVG_OPT_U32, O(prefix_token_count),
     .help = "prefix_hash: tokens hashed", .section = "policy options"},
    {"prefix-hash-load-factor", NULL, KVG_OPT_DOUBLE, O(prefix_hash_load_factor),
     .help = "prefix_hash: load share before spilling", NONNEG},
    {"max-idle-secs", "sticky-key-idle-secs", KVG_OPT_SECS_MS64, O(max_idle_ms),
     .help = "manual: forget keys idle this long"},
    {"assignment-mode", NULL, KVG_OPT_ENUM, O(assignment_min_load), .choices = assignment_modes,
     .help = "manual: how a new key picks its worker"},
    {"router-kv-overlap-score-weight", "kv-overlap-score-weight", KVG_OPT_DOUBLE, O(overlap_weight),
     .help = "kv_aware: weight of prefill blocks in the cost", NONNEG},
    {"router-host-tier-cost", NULL, KVG_OPT_DOUBLE, O(host_tier_cost),
     .help = "kv_aware/score: a host-memory (CPU) prefix block's cost as a fraction of computing "
             "it, from PCIe bandwidth vs prefill speed",
     .min = 0, .max = 1},
    {"router-temperature", NULL, KVG_OPT_DOUBLE, O(temperature),
     .help = "kv_aware: softmax sampling temperature, 0 = argmin", NONNEG},
    {"router-ttl-secs", NULL, KVG_OPT_SECS_MS, O(approx_ttl_ms),
     .help = "kv_aware without KV events: how long routed blocks count as cached"},
    {"affinity-min-match", NULL, KVG_OPT_DOUBLE, O(affinity_min_match),
     .help = "prefix_affinity: share of the prompt a worker must hold to keep it", NONNEG},
    {"affinity-load-bound", NULL, KVG_OPT_DOUBLE, O(affinity_load_bound),
     .help = "prefix_affinity: a holder with more in flight than this x the mean + 1 is skipped",
     NONNEG},
    {"session-header", NULL, KVG_OPT_STR, O(session_header), S(session_header), .meta = "HEADER",
     .help = "session_affinity: header naming the session, read before x-session-id (none)"},
    {"session-load-bound", NULL, KVG_OPT_DOUBLE, O(session_load_bound),
     .help = "session_affinity: a home past ceil(this x (in flight + 1) / workers) is left",
     NONNEG},
    {"session-fallback", NULL, KVG_OPT_STR, O(session_fallback), S(session_fallback),
     .meta = "POLICY",
     .help = "session_affinity: the policy for requests without a session or past the bound"},
    {"predict-prefill-tps", NULL, KVG_OPT_DOUBLE, O(predict_prefill_tps),
     .help = "predicted_latency: prefill tokens/s assumed until an engine's answers teach it",
     NONNEG},
    {"predict-itl-bound", NULL, KVG_OPT_DOUBLE, O(predict_itl_bound),
     .help = "predicted_latency: decode blocks in flight over this x the mean are not eligible",
     NONNEG},
    {"cache-threshold", "cache-match-threshold", KVG_OPT_DOUBLE, O(cache_threshold),
     .help = "cache_aware: match ratio above which the matched worker is used", NONNEG},
    {"balance-abs-threshold", NULL, KVG_OPT_U32, O(balance_abs),
     .help = "cache_aware: imbalance when max - min load exceeds this"},
    {"balance-rel-threshold", NULL, KVG_OPT_DOUBLE, O(balance_rel),
     .help = "cache_aware: ... and max > min times this", NONNEG},
    {"eviction-interval", "eviction-interval-secs", KVG_OPT_SECS_MS64, O(eviction_interval_ms),
     .help = "cache_aware: tree eviction period"},
    {"max-tree-size", NULL, KVG_OPT_U64, O(max_tree_size),
     .help = "cache_aware: characters kept per worker"},
    {"cache-aware-miss", NULL, KVG_OPT_ENUM, O(miss_to_smallest_tree), .choices = miss_rules,
     .help = "cache_aware: where a miss goes"},
    {"scorer-precise-prefix-weight", NULL, KVG_OPT_DOUBLE, O(w_prefix_precise),
     .help = "score: precise prefix scorer weight", NONNEG},
    {"scorer-approx-prefix-weight", NULL, KVG_OPT_DOUBLE, O(w_prefix_approx),
     .help = "score: approximate prefix scorer weight", NONNEG},
    {"scorer-queue-weight", NULL, KVG_OPT_DOUBLE, O(w_queue), .help = "score: queue scorer weight",
     NONNEG},
    {"scorer-kv-weight", NULL, KVG_OPT_DOUBLE, O(w_kv_util),
     .help = "score: KV utilisation scorer weight", NONNEG},
    {"router-lora-load-cost", NULL, KVG_OPT_DOUBLE, O(lora_load_cost),
     .help = "kv_aware/score: a cold LoRA adapter load, in prefill blocks (0 and "
             "--router-lora-max-workers 0 turn the LoRA term off)",
     NONNEG},
    {"router-lora-max-workers", NULL, KVG_OPT_U32, O(lora_max_workers),
     .help = "kv_aware/score: workers a hot adapter spreads over before each more costs a "
             "prefill, 0 = unbounded"},
    {"scorer-lora-weight", NULL, KVG_OPT_DOUBLE, O(w_lora), .help = "score: LoRA scorer weight",
     NONNEG},
    {"scorer-load-weight", NULL, KVG_OPT_DOUBLE, O(w_load),
     .help = "score: load-aware scorer weight", NONNEG},
    KVG_OPT_END,
};
