/* random: uniform over the candidates. */
#include <errno.h>
#include <stdlib.h>

#include "base/err.h"
#include "router/policy.h"

static int select_random(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                         const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    return (int)kvg_rng_below(ctx->rng, n);
}

static void destroy(struct kvg_policy *p)
{
    free(p);
}

static const struct kvg_policy_ops ops = {
    .name = "random", .select = select_random, .destroy = destroy};

int kvg_policy_random_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct kvg_policy *p = malloc(sizeof *p);
    if (!p) return -ENOMEM;
    p->ops = &ops;
    *out = p;
    return 0;
}
