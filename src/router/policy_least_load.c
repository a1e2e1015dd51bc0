/* least_load: the candidate with the fewest requests in flight (the router's
 * own count, always current), ties broken by fewer requests ever sent, then
 * at random, so equal workers share evenly (smg#1714's tie-break). */
#include "base/err.h"
#include "router/policy.h"

static int select_ll(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                     const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    if (ex && ex->scores)
        for (size_t i = 0; i < n; i++) ex->scores[i].score = kvg_policy_inflight(cand[i]);
    return kvg_policy_min_load(cand, n, ctx);
}

static const struct kvg_policy_ops ops = {
    .name = "least_load", .select = select_ll, .destroy = kvg_policy_free_stateless};

int kvg_policy_least_load_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return kvg_policy_new_stateless(&ops, out);
}
