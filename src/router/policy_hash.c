/* consistent_hash and rendezvous_hash: sticky routing on a key taken from
 * the request (kvg_policy_routing_key: session, user, tenant or request-id
 * headers, then body fields). Without a key the request body itself is the
 * key, as vllm-router does, so identical requests land together.
 *   consistent_hash: a ring of virtual nodes over the candidates (ring.h);
 *     when a worker becomes ineligible its keys move to the next worker
 *     clockwise, and come back when it returns.
 *   rendezvous_hash: every candidate scores XXH3("{key}:{url}"), the
 *     highest wins; removing a worker moves only its own keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "router/policy.h"
#include "router/ring.h"

struct hashp {
    struct kvg_policy base;
    struct kvg_ring ring;
};

static uint64_t key_hash(const struct kvg_route_ctx *ctx)
{
    char key[1024];
    size_t n = kvg_policy_routing_key(ctx, key, sizeof key);
    if (n) return kvg_ring_hash(key, n);
    return kvg_ring_hash(ctx->body.p ? ctx->body.p : "", ctx->body.len);
}

static int select_ring(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                       const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    int i = kvg_ring_lookup(&((struct hashp *)p)->ring, cand, n, key_hash(ctx));
    return i < 0 ? (int)kvg_rng_below(ctx->rng, n) : i;
}

static int select_hrw(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                      const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    if (n == 0) return KVG_ENOWORKER;
    char key[1024];
    size_t kl = kvg_policy_routing_key(ctx, key, sizeof key);
    if (!kl) {
        uint64_t h = kvg_ring_hash(ctx->body.p ? ctx->body.p : "", ctx->body.len);
        kl = (size_t)snprintf(key, sizeof key, "request_hash:%016llx", (unsigned long long)h);
    }
    int best = 0;
    uint64_t bs = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[1600];
        int len = snprintf(buf, sizeof buf, "%.*s:%s", (int)kl, key, cand[i]->url);
        uint64_t s = kvg_ring_hash(buf, (size_t)KVG_MIN(len, (int)sizeof buf - 1));
        if (ex && ex->scores) ex->scores[i].score = (double)(s >> 11);
        if (i == 0 || s > bs) {
            best = (int)i;
            bs = s;
        }
    }
    return best;
}

static void destroy(struct kvg_policy *p)
{
    struct hashp *h = (struct hashp *)p;
    kvg_ring_destroy(&h->ring);
    free(h);
}

static const struct kvg_policy_ops ring_ops = {
    .name = "consistent_hash", .select = select_ring, .destroy = destroy};
static const struct kvg_policy_ops hrw_ops = {
    .name = "rendezvous_hash", .select = select_hrw, .destroy = destroy};

static int make(const struct kvg_policy_opts *o, const struct kvg_policy_ops *ops,
                struct kvg_policy **out)
{
    struct hashp *h = calloc(1, sizeof *h);
    if (!h) return -ENOMEM;
    h->base.ops = ops;
    kvg_ring_init(&h->ring, o->vnodes);
    *out = &h->base;
    return 0;
}

int kvg_policy_consistent_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, &ring_ops, out);
}

int kvg_policy_rendezvous_hash_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    return make(o, &hrw_ops, out);
}
