/* power_of_two: two distinct candidates drawn at random, the less loaded one
 * wins (ties: the first drawn). Load is the engine's own queue + batch when
 * both samples are fresh, else the router's in-flight count for both, as in
 * sglang's router (which falls back when either cached load is missing). */
#include "base/err.h"
#include "router/policy.h"

static int select_p2c(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                      const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    if (n == 1) return 0;
    size_t a = (size_t)kvg_rng_below(ctx->rng, n);
    size_t b = (a + 1 + (size_t)kvg_rng_below(ctx->rng, n - 1)) % n;
    double la = kvg_policy_engine_load(cand[a], ctx), lb = kvg_policy_engine_load(cand[b], ctx);
    if (la < 0 || lb < 0) {
        la = kvg_policy_inflight(cand[a]);
        lb = kvg_policy_inflight(cand[b]);
    }
    if (ex && ex->scores) {
        ex->scores[a].score = la;
        ex->scores[b].score = lb;
    }
    return (int)(la <= lb ? a : b);
}

static const struct kvg_policy_ops ops = {
    .name = "power_of_two", .select = select_p2c, .destroy = kvg_policy_free_stateless};

int kvg_policy_power_of_two_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return kvg_policy_new_stateless(&ops, out);
}
