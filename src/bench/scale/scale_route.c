/* The gateway's routing on one pool of an autoscaling day (scale_int.h,
 * struct scale_route): the pool and policy `kvgate serve` runs, so a day's
 * SLO and GPU-hours are those of the gateway's placement, not of a rule of
 * the benchmark's own (bench/results/autoscale-agreement.md "(7)" and
 * autoscale-faststart.md "(9)": sla's PD budgets moved 18-20% with the
 * prefill rule alone).
 *
 * A replica is a worker from the moment it is ready until it leaves (its
 * engine parked or gone); while it warms (prewarm) or drains it is marked
 * draining, as serve marks a replica its actuator drains: no new request,
 * its own finish. A request's context holds its prompt's block hashes as
 * serve's byte tokenizer makes them (the whole prompt, hashed as the engine
 * hashes it), so the approximate index learns a group's prefix as live. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/des.h"
#include "bench/scale/scale_int.h"
#include "kv/hash.h"
#include "pd/pd.h"

/* Virtual milliseconds start here: a load sample stamped 0 means "never
 * scraped" to the router (as src/bench/des.c). */
#define VT0_MS 1000000ull
/* Engine gauges older than this are unknown (serve's --metrics-staleness
 * default, as the routing simulator's). */
#define LOAD_MAX_AGE_MS 2000

static uint64_t vt_ms(double t)
{
    return VT0_MS + (uint64_t)(t * 1000.0);
}

/* Replica k's address: nothing connects to it; the pool needs a URL and the
 * policy's rendezvous hashes it, as live the workers' addresses. */
static void url_of(int k, char *buf, size_t cap)
{
    snprintf(buf, cap, "http://127.0.%d.%d:8000", (k >> 8) & 255, k & 255);
}

/* rt over a pool run by policy (owned, destroyed on failure too), prompts
 * hashed in block_size blocks; seed: the ties' draws. */
static int route_init(struct scale_route *rt, struct kvg_policy *policy, uint32_t block_size,
                      uint64_t seed)
{
    memset(rt, 0, sizeof *rt);
    for (size_t i = 0; i < KVG_POLICY_MAX_SLOTS; i++) rt->k_of_slot[i] = -1;
    int rc = kvg_pool_init(&rt->pool, policy, NULL);
    if (rc) {
        policy->ops->destroy(policy);
        return rc;
    }
    rt->ok = 1;
    rt->block_size = block_size ? block_size : 16;
    kvg_rng_seed(&rt->rng, seed * 0x9e3779b97f4a7c15ull + 0x5ca1e);
    return 0;
}

int kvg__scale_route_new(struct scale_route *rt, const struct kvg_bench_scale_opts *o,
                         enum kvg_autoscale_role role)
{
    struct kvg_policy_opts po;
    kvg_policy_opts_default(&po);
    po.block_size = o->profile.block_size ? o->profile.block_size : 16;
    struct kvg_policy *p;
    int rc;
    if (role == KVG_AUTOSCALE_DECODE) {
        /* serve's decode pick in vLLM PD (pd/pd.c): pd_decode at its bound. */
        struct kvg_pd_config c;
        kvg_pd_config_default(&c);
        rc = kvg_pd_decode_policy_new(c.locality_load_bound, &p);
    } else {
        rc = kvg_policy_new(KVG_POLICY_DEFAULT, &po, &p);
    }
    if (rc) return rc;
    return route_init(rt, p, po.block_size, o->seed * 2 + (role == KVG_AUTOSCALE_DECODE));
}

void kvg__scale_route_free(struct scale_route *rt)
{
    if (rt->ok) kvg_pool_destroy(&rt->pool);
    free(rt->w);
    free(rt->hashes);
    free(rt->tokens);
    rt->ok = 0;
}

static int has_engine(const struct rep *p)
{
    return p->e && (p->state == R_READY || p->state == R_DRAINING);
}

/* Replica k's worker (rt->w[k]), added when it is missing. */
static int join(struct scale_route *rt, int k)
{
    if (k >= 65536) return KVG_ECONFIG; /* url_of's room */
    if ((size_t)k >= rt->capw) {
        size_t c = rt->capw ? rt->capw : 64;
        while (c <= (size_t)k) c *= 2;
        struct kvg_worker **v = realloc(rt->w, c * sizeof *v);
        if (!v) return -ENOMEM;
        memset(v + rt->capw, 0, (c - rt->capw) * sizeof *v);
        rt->w = v;
        rt->capw = c;
    }
    if (rt->w[k]) return 0;
    char url[64];
    url_of(k, url, sizeof url);
    int rc = kvg_pool_add(&rt->pool, url);
    if (rc) return rc;
    struct kvg_pool *pl = &rt->pool;
    for (size_t i = 0; i < pl->n; i++)
        if (!strcmp(pl->w[i]->url, url)) rt->w[k] = pl->w[i];
    if (!rt->w[k] || rt->w[k]->slot < 0 || rt->w[k]->slot >= KVG_POLICY_MAX_SLOTS)
        return KVG_ECONFIG;
    rt->k_of_slot[rt->w[k]->slot] = k;
    return 0;
}

static void leave(struct scale_route *rt, int k)
{
    char url[64];
    url_of(k, url, sizeof url);
    rt->k_of_slot[rt->w[k]->slot] = -1;
    rt->w[k] = NULL; /* the pool's reference goes with it; picks hold their own */
    kvg_pool_remove(&rt->pool, url);
}

int kvg__scale_route_sync(struct scale_route *rt, const struct scale_reps *P,
                          double (*share)(void *ud, int k, double t), void *ud, double t)
{
    /* Who left: a worker whose replica has no engine any more. */
    for (size_t k = 0; k < rt->capw; k++)
        if (rt->w[k] && ((size_t)k >= P->nrep || !has_engine(&P->rep[k]))) leave(rt, (int)k);
    for (size_t i = 0; i < P->nact; i++) {
        int k = P->act[i];
        const struct rep *p = &P->rep[k];
        if (!has_engine(p)) continue;
        int rc = join(rt, k);
        if (rc) return rc;
        struct kvg_worker *w = rt->w[k];
        int routable = p->state == R_READY && !p->warming;
        atomic_store_explicit(&w->draining, !routable, memory_order_relaxed);
        double s = routable && share ? share(ud, k, t) : 1;
        uint32_t pm = s >= 1 ? 1000 : s <= 0 ? 0 : (uint32_t)(s * 1000);
        atomic_store_explicit(&w->share_permille, pm, memory_order_relaxed);
    }
    return 0;
}

int kvg__scale_route_replica(const struct scale_route *rt, const struct kvg_worker *w)
{
    if (!w || w->slot < 0 || w->slot >= KVG_POLICY_MAX_SLOTS) return -1;
    return rt->k_of_slot[w->slot];
}

/* ctx for request r at t: its prompt rendered and hashed into rt's buffers. */
static int make_ctx(struct scale_route *rt, const struct scale_wl *wl, const struct scale_req *r,
                    double t, struct kvg_route_ctx *c)
{
    if (r->prompt_len > rt->captok) {
        uint32_t *v = realloc(rt->tokens, r->prompt_len * sizeof *v);
        if (!v) return -ENOMEM;
        rt->tokens = v;
        rt->captok = r->prompt_len;
    }
    size_t nb = r->prompt_len / rt->block_size;
    if (nb > rt->caph) {
        uint64_t *v = realloc(rt->hashes, nb * sizeof *v);
        if (!v) return -ENOMEM;
        rt->hashes = v;
        rt->caph = nb;
    }
    kvg__scale_wl_prompt(wl, r, rt->tokens);
    int nh = kvg_kv_hash_request(rt->tokens, r->prompt_len, rt->block_size, NULL, 0, NULL, 0,
                                 rt->hashes, nb);
    memset(c, 0, sizeof *c);
    c->tokens = rt->tokens;
    c->ntokens = r->prompt_len;
    c->block_hashes = rt->hashes;
    c->nblocks = nh > 0 ? (size_t)nh : 0;
    c->block_size = rt->block_size;
    c->max_tokens = r->max_tokens;
    c->rng = &rt->rng;
    c->now_ms = vt_ms(t);
    c->load_max_age_ms = LOAD_MAX_AGE_MS;
    return 0;
}

struct filt {
    const struct scale_route *rt;
    int (*ok)(void *ud, int k);
    void *ud;
};

static int filter(void *ud, struct kvg_worker *w)
{
    const struct filt *f = ud;
    int k = kvg__scale_route_replica(f->rt, w);
    return k >= 0 && f->ok(f->ud, k);
}

int kvg__scale_route_pick(struct scale_route *rt, const struct scale_wl *wl,
                          const struct scale_req *r, double t, int (*ok)(void *ud, int k), void *ud,
                          struct kvg_pick *out, int *k)
{
    struct kvg_route_ctx c;
    int rc = make_ctx(rt, wl, r, t, &c);
    if (rc) return rc;
    struct filt f = {rt, ok, ud};
    if (ok) c.filter = filter, c.filter_ud = &f;
    memset(out, 0, sizeof *out);
    if ((rc = kvg_pool_pick(&rt->pool, &c, NULL, 0, out, NULL, NULL))) return rc;
    *k = kvg__scale_route_replica(rt, out->w);
    if (*k < 0) {
        kvg__scale_route_release(rt, out, KVG_OUT_LOCAL, t);
        return KVG_ECONFIG;
    }
    return 0;
}

int kvg__scale_route_place(struct scale_route *rt, const struct scale_wl *wl,
                           const struct scale_req *r, int k, double t)
{
    if ((size_t)k >= rt->capw || !rt->w[k]) return KVG_ENOTFOUND;
    struct kvg_route_ctx c;
    int rc = make_ctx(rt, wl, r, t, &c);
    return rc ? rc : kvg_pool_place(&rt->pool, rt->w[k]->url, &c);
}

void kvg__scale_route_first(struct scale_route *rt, struct kvg_pick *pick, double t)
{
    if (pick->w) kvg_pool_first_token_at(&rt->pool, pick, vt_ms(t));
}

void kvg__scale_route_release(struct scale_route *rt, struct kvg_pick *pick,
                              enum kvg_outcome outcome, double t)
{
    if (!pick->w) return;
    struct kvg_route_ctx c = {.now_ms = vt_ms(t), .load_max_age_ms = LOAD_MAX_AGE_MS};
    kvg_pool_release(&rt->pool, pick, outcome, &c);
}

void kvg__scale_route_scrape(struct scale_route *rt, const struct scale_reps *P, double t)
{
    for (size_t k = 0; k < rt->capw && k < P->nrep; k++) {
        struct kvg_worker *w = rt->w[k];
        const struct rep *p = &P->rep[k];
        if (!w || !p->e) continue;
        pthread_mutex_lock(&w->mu);
        kvg_bench_des_load_sample(w, p->e, t, vt_ms(t));
        pthread_mutex_unlock(&w->mu);
    }
}
