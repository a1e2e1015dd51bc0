/* cache_aware: sglang's and vllm-router's approximate cache-aware policy,
 * with the classic semantics:
 *  - loads are the router's in-flight counts over the candidates; when
 *    (max - min) > balance_abs AND max > min * balance_rel the pool is
 *    imbalanced: the least loaded worker takes the request (and its text is
 *    still inserted for that worker);
 *  - else the request text is matched in the model's character radix tree;
 *    match_rate = matched characters / text characters; a rate strictly above
 *    cache_threshold goes to the matched worker (exactly at it is a miss);
 *    a miss goes to the least loaded worker (sglang and vllm-router today;
 *    --cache-aware-miss smallest_tree restores the older smallest-tree rule);
 *  - the chosen worker's text is inserted; a periodic eviction keeps each
 *    worker's share of the tree under max_tree_size characters.
 * A request without text (or a matched worker that is no candidate) falls
 * back to the least loaded worker. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "kv/radix.h"
#include "router/policy.h"

struct cachep {
    struct kvg_policy base;
    struct kvg_kv_radix_forest *forest;
    double threshold, rel;
    uint32_t abs;
    uint64_t evict_every_ms, max_chars;
    _Atomic uint64_t last_evict_ms;
    int miss_smallest;
};

static int find_slot(struct kvg_worker *const *cand, size_t n, int slot)
{
    for (size_t i = 0; i < n; i++)
        if (cand[i]->slot == slot) return (int)i;
    return -1;
}

static void maybe_evict(struct cachep *c, uint64_t now)
{
    uint64_t last = atomic_load(&c->last_evict_ms);
    if (!c->evict_every_ms || now - last < c->evict_every_ms) return;
    if (!atomic_compare_exchange_strong(&c->last_evict_ms, &last, now)) return; /* another thread */
    kvg_kv_radix_forest_evict(c->forest, c->max_chars);
}

/* The request's model's tree (created on first use), NULL without memory. */
static struct kvg_kv_radix *tree_of(struct cachep *c, const struct kvg_route_ctx *ctx)
{
    char model[160];
    snprintf(model, sizeof model, "%.*s", (int)ctx->model.len, ctx->model.p ? ctx->model.p : "");
    return kvg_kv_radix_forest_get(c->forest, model, 1);
}

static int select_cache(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                        const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct cachep *c = (struct cachep *)p;
    if (n == 0) return KVG_ENOWORKER;
    maybe_evict(c, ctx->now_ms);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = kvg_policy_inflight(cand[i]);
        if (l < lo) lo = l;
        if (l > hi) hi = l;
    }
    struct kvg_kv_radix *tree = tree_of(c, ctx);
    const char *text = ctx->text ? ctx->text : "";
    size_t tlen = ctx->text ? ctx->text_len : 0;
    int chosen = -1;
    const char *why;
    if (hi - lo > c->abs && (double)hi > (double)lo * c->rel) {
        chosen = kvg_policy_min_load(cand, n, ctx);
        why = "imbalanced: least loaded";
    } else if (tree && tlen) {
        struct kvg_kv_radix_match m;
        /* On a loop, a tree held elsewhere reads as a miss (kv/radix.h). */
        if (ctx->nowait)
            kvg_kv_radix_prefix_match_nowait(tree, text, tlen, &m);
        else
            kvg_kv_radix_prefix_match(tree, text, tlen, &m);
        double rate = m.text_chars ? (double)m.matched_chars / (double)m.text_chars : 0;
        for (size_t i = 0; ex && ex->scores && i < n; i++) ex->scores[i].score = 0;
        if (rate > c->threshold && m.tenant >= 0) chosen = find_slot(cand, n, m.tenant);
        if (chosen >= 0) {
            why = "cache hit";
            if (ex && ex->scores) ex->scores[chosen].score = rate;
        } else if (c->miss_smallest) {
            chosen = find_slot(cand, n,
                               ctx->nowait ? kvg_kv_radix_smallest_tenant_nowait(tree)
                                           : kvg_kv_radix_smallest_tenant(tree));
            why = "cache miss: smallest tree";
        } else {
            why = "cache miss: least loaded";
        }
        if (chosen < 0) chosen = kvg_policy_min_load(cand, n, ctx);
    } else {
        chosen = kvg_policy_min_load(cand, n, ctx);
        why = "no text: least loaded";
    }
    if (tree && tlen && cand[chosen]->slot >= 0 && !ctx->dry_run) {
        if (ctx->nowait)
            kvg_kv_radix_insert_nowait(tree, text, tlen, cand[chosen]->slot); /* or deferred */
        else
            kvg_kv_radix_insert(tree, text, tlen, cand[chosen]->slot);
    }
    if (ex) snprintf(ex->note, sizeof ex->note, "%s", why);
    return chosen;
}

/* As a pick of w: its tree holds the routing text. A peer's record is
 * applied on an event loop (nowait): a tree held elsewhere defers it. */
static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct cachep *c = (struct cachep *)p;
    struct kvg_kv_radix *tree = tree_of(c, ctx);
    if (!tree || !ctx->text || !ctx->text_len || w->slot < 0) return;
    if (ctx->nowait)
        kvg_kv_radix_insert_nowait(tree, ctx->text, ctx->text_len, w->slot);
    else
        kvg_kv_radix_insert(tree, ctx->text, ctx->text_len, w->slot);
}

static int places_text(const struct kvg_policy *p)
{
    (void)p;
    return 1;
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    if (w->slot >= 0) kvg_kv_radix_forest_remove_tenant(((struct cachep *)p)->forest, w->slot);
}

static void destroy(struct kvg_policy *p)
{
    struct cachep *c = (struct cachep *)p;
    kvg_kv_radix_forest_free(c->forest);
    free(c);
}

static const struct kvg_policy_ops ops = {.name = "cache_aware",
                                          .wants_text = 1,
                                          .select = select_cache,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .place = place_on,
                                          .places_text = places_text};

int kvg_policy_cache_aware_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    struct cachep *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    int rc = kvg_kv_radix_forest_new(&c->forest);
    if (rc) {
        free(c);
        return rc;
    }
    c->base.ops = &ops;
    c->threshold = o->cache_threshold;
    c->abs = o->balance_abs;
    c->rel = o->balance_rel;
    c->evict_every_ms = o->eviction_interval_ms;
    c->max_chars = o->max_tree_size;
    c->miss_smallest = o->miss_to_smallest_tree;
    *out = &c->base;
    return 0;
}
