/* The pure decisions of disaggregated serving: decode alone or prefill
 * first (llm-d's prefix-based decider), how near two workers are (their
 * locality labels), and kvgate's decode pick as a router policy.
 *
 * Why the decode pick chases no prefix: a decode's KV arrives from the
 * prefill (so Dynamo turns overlap scoring off for decode), so what
 * matters there is room: KV blocks in use plus what this request adds, and
 * requests in flight (DeepSeek balances both across decode GPUs). A decode
 * in the prefill's rack or zone pulls the KV over a faster link, so it is
 * preferred, but only within a load bound: locality must never pile every
 * request onto the one decode next to a busy prefill. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd.h"

const char *kvg_pd_decision_name(int d)
{
    return d == KVG_PD_DECODE_ONLY ? "decode_only" : "prefill_decode";
}

enum kvg_pd_decision kvg_pd_decide(uint64_t prompt_tokens, uint64_t decode_cached_tokens,
                                   uint32_t threshold_tokens)
{
    uint64_t left = prompt_tokens > decode_cached_tokens ? prompt_tokens - decode_cached_tokens : 0;
    return left < threshold_tokens ? KVG_PD_DECODE_ONLY : KVG_PD_PREFILL_DECODE;
}

/* The value of key in "k=v,k2=v2" ({NULL,0} when absent). */
static struct kvg_str label(const char *labels, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = labels; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > kl && !strncmp(p, key, kl) && p[kl] == '=')
            return (struct kvg_str){p + kl + 1, n - kl - 1};
        p = e ? e + 1 : NULL;
    }
    return (struct kvg_str){NULL, 0};
}

int kvg_pd_locality(const char *a, const char *b)
{
    static const char *keys[] = {"node", "rack", "zone"};
    for (int i = 0; i < 3; i++) {
        struct kvg_str va = label(a, keys[i]), vb = label(b, keys[i]);
        if (va.len && va.len == vb.len && !memcmp(va.p, vb.p, va.len)) return i;
    }
    return 3;
}

struct decode_policy {
    struct kvg_policy base;
    double bound;
};

/* A full KV cache weighs as much as this many requests in flight. */
#define KV_FULL_AS_REQUESTS 16.0
/* Without a known capacity, this many blocks weigh one request. */
#define BLOCKS_PER_REQUEST 64.0

static double cost_of(struct kvg_worker *w, const struct kvg_route_ctx *ctx,
                      struct kvg_route_score *sc)
{
    struct kvg_engine_load l = kvg_worker_load(w, ctx->now_ms, ctx->load_max_age_ms);
    double used = (double)atomic_load_explicit(&w->active_decode_blocks, memory_order_relaxed);
    if (l.kv_usage >= 0 && l.kv_blocks && l.kv_usage * (double)l.kv_blocks > used)
        used = l.kv_usage * (double)l.kv_blocks;
    double add =
        ctx->block_size ? (double)(ctx->ntokens + ctx->block_size - 1) / ctx->block_size : 0;
    double kv = l.kv_blocks ? KV_FULL_AS_REQUESTS * (used + add) / (double)l.kv_blocks
                            : (used + add) / BLOCKS_PER_REQUEST;
    double reqs = (double)atomic_load_explicit(&w->in_flight, memory_order_relaxed);
    if (l.waiting > 0) reqs += l.waiting;
    double c = kv + reqs;
    if (sc) {
        sc->decode_blocks = used + add;
        sc->kv_usage = l.kv_usage;
        sc->waiting = l.waiting;
        sc->score = c;
    }
    return c;
}

static int decode_select(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct decode_policy *dp = (struct decode_policy *)p;
    double cost[KVG_POOL_MAX_WORKERS];
    int near[KVG_POOL_MAX_WORKERS];
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        cost[i] = cost_of(cand[i], ctx, ex && ex->scores ? &ex->scores[i] : NULL);
        near[i] = ctx->near_labels ? kvg_pd_locality(ctx->near_labels, cand[i]->labels) : 3;
        if (cost[i] < cost[best]) best = i;
    }
    double limit = dp->bound * cost[best] + 1.0;
    for (int level = 0; level < 3; level++) {
        size_t pick = n;
        for (size_t i = 0; i < n; i++)
            if (near[i] <= level && (pick == n || cost[i] < cost[pick])) pick = i;
        if (pick < n && cost[pick] <= limit) {
            if (ex) {
                static const char *names[] = {"same node", "same rack", "same zone"};
                snprintf(ex->note, sizeof ex->note, "decode: least loaded %s as the prefill",
                         names[level]);
            }
            return (int)pick;
        }
    }
    if (ex) snprintf(ex->note, sizeof ex->note, "decode: least loaded (KV blocks, requests)");
    return (int)best;
}

static void decode_destroy(struct kvg_policy *p)
{
    free(p);
}

static const struct kvg_policy_ops decode_ops = {
    .name = "pd_decode",
    .select = decode_select,
    .destroy = decode_destroy,
};

int kvg_pd_decode_policy_new(double load_bound, struct kvg_policy **out)
{
    struct decode_policy *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->base.ops = &decode_ops;
    p->bound = load_bound >= 1 ? load_bound : 1;
    *out = &p->base;
    return 0;
}

int kvg_pd_has_room(const struct kvg_pd_decode_view *v, size_t n, double req_blocks,
                    double committed_blocks, double prefill_s, double decode_s, double max_frac)
{
    if (!n) return 1; /* no decode to judge: the pick will say */
    double ending = decode_s > 0 ? prefill_s / decode_s : 1;
    if (ending > 1) ending = 1;
    double share = committed_blocks / (double)n;
    for (size_t i = 0; i < n; i++) {
        if (v[i].capacity_blocks <= 0) return 1;
        double at = v[i].used_blocks * (1 - ending) + share + req_blocks;
        if (at <= max_frac * v[i].capacity_blocks) return 1;
    }
    return 0;
}
