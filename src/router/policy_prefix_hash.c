/* prefix_hash (sglang's): the first --prefix-token-count tokens (or, for a
 * request not tokenized, four times as many characters of its routing text)
 * are hashed onto the consistent-hash ring, so requests sharing a prefix share
 * a worker; a load guard keeps one hot prefix from swamping it:
 *   ok(w) = load(w) <= ((total_load + 1) / n) * load_factor
 * The ring's worker is used when ok, else the least loaded ok worker, else the
 * ring's worker anyway. A request with neither tokens nor text goes to the
 * least loaded worker. The load is sglang's in-flight count, or the engine's
 * own count when fresh and more (kvg_policy_shared_load): replicas behind a
 * balancer each count about 1/N of the requests in flight, against which
 * the guard's + 1 weighs N times as much; on their own counts 8 replicas
 * lost 4-6 points of cache hits (bench/results/fleet.md). */
#include <errno.h>
#include <stdlib.h>

#include "base/err.h"
#include "router/policy.h"
#include "router/ring.h"

struct prefixp {
    struct kvg_policy base;
    struct kvg_ring ring;
    uint32_t ntok;
    double factor;
};

static int select_prefix(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct prefixp *pp = (struct prefixp *)p;
    if (n == 0) return KVG_ENOWORKER;
    uint64_t h;
    if (ctx->tokens && ctx->ntokens) {
        size_t k = KVG_MIN(ctx->ntokens, (size_t)pp->ntok);
        h = kvg_ring_hash(ctx->tokens, k * sizeof *ctx->tokens);
    } else if (ctx->text && ctx->text_len) {
        h = kvg_ring_hash(ctx->text, KVG_MIN(ctx->text_len, (size_t)pp->ntok * 4));
    } else {
        if (ex) snprintf(ex->note, sizeof ex->note, "no tokens: least loaded");
        return kvg_policy_min_load(cand, n, ctx);
    }
    int r = kvg_ring_lookup(&pp->ring, cand, n, h);
    if (r < 0) return kvg_policy_min_load(cand, n, ctx);
    double load[n], total = 0;
    for (size_t i = 0; i < n; i++) total += load[i] = kvg_policy_shared_load(cand[i], ctx);
    double cap = (total + 1) / (double)n * pp->factor;
    if (load[r] <= cap) return r;
    int best = -1;
    for (size_t i = 0; i < n; i++)
        if (load[i] <= cap && (best < 0 || load[i] < load[best])) best = (int)i;
    if (ex) snprintf(ex->note, sizeof ex->note, "prefix worker over its load share");
    return best >= 0 ? best : r;
}

static void destroy(struct kvg_policy *p)
{
    struct prefixp *pp = (struct prefixp *)p;
    kvg_ring_destroy(&pp->ring);
    free(pp);
}

static const struct kvg_policy_ops ops = {.name = "prefix_hash",
                                          .wants_tokens = 1,
                                          .wants_text = 1,
                                          .select = select_prefix,
                                          .destroy = destroy};

int kvg_policy_prefix_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct prefixp *pp = calloc(1, sizeof *pp);
    if (!pp) return -ENOMEM;
    pp->base.ops = &ops;
    kvg_ring_init(&pp->ring, o->vnodes);
    pp->ntok = o->prefix_token_count ? o->prefix_token_count : 256;
    pp->factor = o->prefix_hash_load_factor > 0 ? o->prefix_hash_load_factor : 1.25;
    *out = &pp->base;
    return 0;
}
