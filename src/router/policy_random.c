/* random: uniform over the candidates. */
#include "base/err.h"
#include "router/policy.h"

static int select_random(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    return (int)kvg_rng_below(ctx->rng, n);
}

static const struct kvg_policy_ops ops = {
    .name = "random", .select = select_random, .destroy = kvg_policy_free_stateless};

int kvg_policy_random_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return kvg_policy_new_stateless(&ops, out);
}
