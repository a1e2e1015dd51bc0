/* Policy registry (names and the peers' aliases to constructors) and the
 * helpers several policies share: the stateless constructor, load reading
 * and routing keys. */
#include "router/policy.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

static const struct {
    const char *name;
    int (*make)(const struct kvg_policy_opts *o, struct kvg_policy **out);
} registry[] = {
    {"random", kvg_policy_random_new},
    {"round_robin", kvg_policy_round_robin_new},
    {"power_of_two", kvg_policy_power_of_two_new},
    {"least_load", kvg_policy_least_load_new},
    {"consistent_hash", kvg_policy_consistent_hash_new},
    {"consistent_hashing", kvg_policy_consistent_hash_new}, /* sglang's spelling */
    {"rendezvous_hash", kvg_policy_rendezvous_hash_new},
    {"prefix_hash", kvg_policy_prefix_hash_new},
    {"manual", kvg_policy_manual_new},
    {"kv_aware", kvg_policy_kv_aware_new},
    {"cache_aware", kvg_policy_cache_aware_new},
    {"prefix_affinity", kvg_policy_prefix_affinity_new},
    {"score", kvg_policy_score_new},
    {"precise", kvg_policy_precise_new},     /* llm-d: precise prefix 3, kv 2, queue 2 */
    {"estimated", kvg_policy_estimated_new}, /* llm-d: approximate prefix 1, kv 1, queue 1 */
    {"load", kvg_policy_load_new},           /* llm-d: queue 1, kv 1 */
    {"session_affinity", kvg_policy_session_affinity_new},
    {"predicted_latency", kvg_policy_predicted_latency_new},
};

void kvg_policy_opts_default(struct kvg_policy_opts *o)
{
    memset(o, 0, sizeof *o);
    o->vnodes = 160;
    o->prefix_token_count = 256;
    o->prefix_hash_load_factor = 1.25;
    o->max_idle_ms = 14400ull * 1000;
    o->block_size = 16;
    o->overlap_weight = 1.0;
    o->host_tier_cost = KVG_POLICY_HOST_TIER_COST;
    o->temperature = 0.0;
    o->track_prefill = 1;
    o->approx_ttl_ms = 120000;
    o->affinity_min_match = 0.5;
    o->affinity_load_bound = 2;
    o->session_load_bound = 1.25;
    snprintf(o->session_fallback, sizeof o->session_fallback, "prefix_affinity");
    o->predict_prefill_tps = 10000;
    o->predict_itl_bound = 2;
    o->cache_threshold = 0.3;
    o->balance_abs = 64;
    o->balance_rel = 1.5;
    o->eviction_interval_ms = 120000;
    o->max_tree_size = 1ull << 26;
    o->w_prefix_precise = 3;
    o->w_queue = 2;
    o->w_kv_util = 2;
    o->prefix_minmax = 1;
    o->load_threshold = 128;
    o->approx_capacity = 31250;
    o->lora_load_cost = 16;
    o->lora_max_workers = 2;
    o->w_lora = 1;
}

int kvg_policy_new(const char *name, const struct kvg_policy_opts *opts, struct kvg_policy **out)
{
    struct kvg_policy_opts d;
    if (!opts) {
        kvg_policy_opts_default(&d);
        opts = &d;
    }
    for (size_t i = 0; i < KVG_ARRAY_LEN(registry); i++)
        if (!strcmp(name, registry[i].name)) return registry[i].make(opts, out);
    return KVG_ENOTFOUND;
}

int kvg_policy_known(const char *name)
{
    for (size_t i = 0; i < KVG_ARRAY_LEN(registry); i++)
        if (!strcmp(name, registry[i].name)) return 1;
    return 0;
}

const char *kvg_policy_names(void)
{
    return "random, round_robin, power_of_two, least_load, consistent_hash (consistent_hashing), "
           "rendezvous_hash, prefix_hash, manual, kv_aware, cache_aware, prefix_affinity, score, "
           "session_affinity, predicted_latency, and score's presets precise, estimated, load";
}

int kvg_policy_new_stateless(const struct kvg_policy_ops *ops, struct kvg_policy **out)
{
    struct kvg_policy *p = malloc(sizeof *p);
    if (!p) return -ENOMEM;
    p->ops = ops;
    *out = p;
    return 0;
}

void kvg_policy_free_stateless(struct kvg_policy *p)
{
    free(p);
}

uint32_t kvg_policy_inflight(struct kvg_worker *w)
{
    return atomic_load_explicit(&w->in_flight, memory_order_relaxed);
}

/* The engine's running + waiting in sample l, plus what this router's own
 * in-flight count rose by since it; -1 when l holds no counts. */
static double engine_load_of(struct kvg_worker *w, const struct kvg_engine_load *l)
{
    if (l->waiting < 0 || l->running < 0) return -1;
    double rose = (double)kvg_policy_inflight(w) - (double)l->inflight_at;
    return l->waiting + l->running + (rose > 0 ? rose : 0);
}

double kvg_policy_engine_load(struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct kvg_engine_load l = kvg_worker_load(w, ctx->now_ms, ctx->load_max_age_ms);
    return engine_load_of(w, &l);
}

double kvg_policy_shared_load(struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    /* One read of the sample: its counts and its peer_at must be the same
     * sample's, and this runs per candidate on the request path. */
    struct kvg_engine_load l = kvg_worker_load(w, ctx->now_ms, ctx->load_max_age_ms);
    double own = kvg_policy_inflight(w);
    if (atomic_load_explicit(&w->peer_view, memory_order_relaxed)) {
        /* The fleet's own count: this router's and its peers' as last heard.
         * The engine's sample only where it says more (requests from
         * elsewhere): it lags the picks of its last step or two. */
        double fleet = own + atomic_load_explicit(&w->peer_in_flight, memory_order_relaxed);
        double eng = l.waiting >= 0 && l.running >= 0 ? l.waiting + l.running : -1;
        return eng > fleet ? eng : fleet;
    }
    double eng = engine_load_of(w, &l);
    if (eng >= 0)
        eng += (uint32_t)(atomic_load_explicit(&w->peer_picks, memory_order_relaxed) - l.peer_at);
    return eng > own ? eng : own;
}

double kvg_policy_load_now(struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    double own = kvg_policy_inflight(w);
    struct kvg_engine_load l = kvg_worker_load(w, ctx->now_ms, ctx->load_max_age_ms);
    if (l.waiting < 0 || l.running < 0) return own;
    double others = l.waiting + l.running - (double)l.inflight_at;
    return others > 0 ? own + others : own;
}

int kvg_policy_min_load(struct kvg_worker *const *cand, size_t n, const struct kvg_route_ctx *ctx)
{
    int best = -1;
    uint32_t bl = 0;
    uint64_t bp = 0;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = kvg_policy_inflight(cand[i]);
        uint64_t p = atomic_load_explicit(&cand[i]->processed, memory_order_relaxed);
        if (best < 0 || l < bl || (l == bl && p < bp)) {
            best = (int)i;
            bl = l;
            bp = p;
            ties = 1;
        } else if (l == bl && p == bp && kvg_rng_below(ctx->rng, ++ties) == 0) {
            best = (int)i; /* reservoir choice among exact ties */
        }
    }
    return best;
}

static size_t put(char *out, size_t cap, const char *a, const char *b, size_t blen)
{
    int n = snprintf(out, cap, "%s%.*s", a, (int)blen, b);
    return n < 0 ? 0 : KVG_MIN((size_t)n, cap - 1);
}

size_t kvg_policy_routing_key(const struct kvg_route_ctx *ctx, char *out, size_t cap)
{
    /* The coding agents' own session keys come right after the generic
     * ones: Claude Code's header, Codex's session-id (its thread id). */
    static const char *headers[] = {
        "x-kvgate-routing-key", "x-smg-routing-key", "x-session-id", "x-claude-code-session-id",
        "session-id",           "x-user-id",         "x-tenant-id",  "x-correlation-id",
        "x-request-id",         "x-trace-id"};
    out[0] = 0;
    for (size_t i = 0; ctx->header && i < KVG_ARRAY_LEN(headers); i++) {
        struct kvg_str v = ctx->header(ctx->hctx, headers[i]);
        if (v.p && v.len) {
            char pre[64];
            snprintf(pre, sizeof pre, "header:%s:", headers[i]);
            return put(out, cap, pre, v.p, v.len);
        }
    }
    const cJSON *j = ctx->json;
    if (!j) return 0;
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "session_params");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, "session_id");
    if (cJSON_IsString(v)) return put(out, cap, "session:", v->valuestring, strlen(v->valuestring));
    v = cJSON_GetObjectItemCaseSensitive(j, "user");
    if (cJSON_IsString(v)) return put(out, cap, "user:", v->valuestring, strlen(v->valuestring));
    v = cJSON_GetObjectItemCaseSensitive(j, "session_id");
    if (cJSON_IsString(v)) return put(out, cap, "session:", v->valuestring, strlen(v->valuestring));
    v = cJSON_GetObjectItemCaseSensitive(j, "user_id");
    if (cJSON_IsString(v)) return put(out, cap, "user:", v->valuestring, strlen(v->valuestring));
    /* Responses' prompt_cache_key (Codex: its thread id). */
    v = cJSON_GetObjectItemCaseSensitive(j, "prompt_cache_key");
    if (cJSON_IsString(v)) return put(out, cap, "session:", v->valuestring, strlen(v->valuestring));
    return 0;
}
