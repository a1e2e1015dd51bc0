/* round_robin: a shared atomic counter over the candidates. Unhealthy workers
 * are never candidates, so they are skipped. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/err.h"
#include "router/policy.h"

struct rr {
    struct kvg_policy base;
    _Atomic uint64_t next;
};

static int select_rr(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                     const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    struct rr *r = (struct rr *)p;
    return (int)(atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed) % n);
}

static void destroy(struct kvg_policy *p)
{
    free(p);
}

static const struct kvg_policy_ops ops = {
    .name = "round_robin", .select = select_rr, .destroy = destroy};

int kvg_policy_round_robin_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct rr *r = calloc(1, sizeof *r);
    if (!r) return -ENOMEM;
    r->base.ops = &ops;
    *out = &r->base;
    return 0;
}
