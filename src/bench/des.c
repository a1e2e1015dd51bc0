/* The offline simulator's event loop: arrivals routed through the pool and
 * policy, engine steps in virtual time, tokens delivered at step ends, load
 * scrapes and timeouts on a fixed virtual period. See des.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/util.h"
#include "bench/des_int.h"
#include "kv/hash.h"
#include "metrics/load.h"

/* Virtual milliseconds start here, not at 0: a load sample stamped 0 means
 * "never scraped" to the router. */
#define VT0_MS 1000000ull

/* A request in flight: the workload's request, the routing decision with its
 * charges, and the context the policy saw (kept for kvg_pool_release). */
struct live {
    struct kvg_bench_req *r;
    struct kvg_pick pick;
    struct kvg_route_ctx ctx;
    uint64_t *hashes; /* owned */
    uint32_t router;  /* the router that picked (its pool holds the pick) */
    int eng;
    int got_first;
    double last_tok;
    uint32_t *out; /* output ids, when the workload wants them (owned) */
    size_t nout, capout;
};

/* One router replica: its own pool and policy, its own scrape phase. */
struct router {
    struct kvg_pool pool;
    int pool_ok;
    struct kvg_worker **w; /* neng: engine i's worker in this pool (borrowed; owned array) */
    double next_scrape;    /* router 0 scrapes with the run's tick (next_scrape in loop) */
};

struct run {
    const struct kvg_bench_des_opts *o;
    struct kvg_bench_wl *wl;
    struct router *rt;
    uint32_t nrt;
    struct des_fleet fleet;
    struct des_eng *eng;
    uint32_t neng;
    struct des_kv kv;
    struct kvg_bench_acc acc;
    struct kvg_rng rng;
    struct live **live; /* by request id */
    size_t cap_live, nlive;
    uint64_t sweep; /* timeouts: lowest id that may still be waiting */
    int want_out;
    double scrape_s;
    /* The "oracle" placement (see oracle_exclude): every engine but the
     * request's is excluded, so the pool's one candidate is that engine. */
    int oracle;
    struct kvg_worker **exclude; /* neng entries, owned */
};

void kvg_bench_des_opts_default(struct kvg_bench_des_opts *o)
{
    memset(o, 0, sizeof *o);
    kvg_bench_wl_opts_default(&o->wl);
    o->profile = *kvg_sim_profile_find("tiny");
    o->engines = 1;
    o->mean_output = 256;
    o->max_loras = 1;
    o->lora_load_s = KVG_SIM_LORA_LOAD_S;
    snprintf(o->policy, sizeof o->policy, "random");
    kvg_policy_opts_default(&o->popts);
    o->scrape_ms = 50;
    o->load_max_age_ms = 2000;
    o->kv_path = KVG_BENCH_KV_DIRECT;
    o->seed = 1;
    o->routers = 1;
    o->exchange_ms = 100;
}

static uint64_t vt_ms(double t)
{
    return VT0_MS + (uint64_t)llround(t * 1000.0);
}

/* Routing keys a client would send: the chat session or the trace's id;
 * an agent's own headers (its session and thread ids) as it sends them. */
static struct kvg_str header(const void *hctx, const char *name)
{
    const struct live *l = hctx;
    if (l->r->session[0] && !strcmp(name, "x-session-id"))
        return (struct kvg_str){l->r->session, strlen(l->r->session)};
    for (size_t i = 0; i < l->r->nhdr; i++)
        if (!strcasecmp(name, l->r->hdr[i].name))
            return (struct kvg_str){l->r->hdr[i].value, strlen(l->r->hdr[i].value)};
    return KVG_STR_NULL;
}

static int live_put(struct run *R, struct live *l)
{
    uint64_t id = l->r->id;
    if (id >= R->cap_live) {
        size_t c = R->cap_live ? R->cap_live : 1024;
        while (c <= id) c *= 2;
        struct live **v = realloc(R->live, c * sizeof *v);
        if (!v) return -ENOMEM;
        memset(v + R->cap_live, 0, (c - R->cap_live) * sizeof *v);
        R->live = v;
        R->cap_live = c;
    }
    R->live[id] = l;
    R->nlive++;
    return 0;
}

/* Ends a request (completed, failed or given up): releases the pick, hands
 * the request back to the workload, frees the record. */
static int live_end(struct run *R, struct live *l, double t, enum kvg_outcome outcome, int ok)
{
    if (l->pick.w) kvg_pool_release(&R->rt[l->router].pool, &l->pick, outcome, &l->ctx);
    if (R->live && l->r->id < R->cap_live && R->live[l->r->id] == l) {
        R->live[l->r->id] = NULL;
        R->nlive--;
    }
    int rc = kvg_bench_wl_done(R->wl, l->r, t, l->out, l->nout, ok);
    free(l->hashes);
    free(l->out);
    free(l);
    return rc;
}

static int start_step(struct run *R, struct des_eng *g, double t)
{
    kvg_sim_step(g->e, t, &g->st);
    g->stepping = 1;
    g->busy_until = t + g->st.duration;
    return 0;
}

/* The "oracle": a placement no router can make, for comparison. It knows
 * each shared_prefix request's group (a router sees only tokens) and sends
 * group g to engine g mod N: every group on one engine and, since groups
 * get equal traffic, the groups spread evenly, a perfect static balance
 * with perfect affinity. What it reaches bounds what keeping prefixes
 * together can buy on this workload. Fills R->exclude; returns its count. */
static size_t oracle_exclude(struct run *R, const struct router *rt, const struct kvg_bench_req *r)
{
    int64_t g = kvg_bench_wl_group(R->wl, r);
    uint32_t target = g < 0 ? 0 : (uint32_t)(g % R->neng);
    size_t n = 0;
    for (uint32_t i = 0; i < R->neng; i++)
        if (i != target) R->exclude[n++] = rt->w[i];
    return n;
}

/* ---- Arrival: route, submit. */
static int arrive(struct run *R)
{
    struct kvg_bench_req *r;
    int rc = kvg_bench_wl_pop(R->wl, &r);
    if (rc) return rc;
    double t = r->arrival;
    kvg_bench_acc_arrival(&R->acc, r);
    struct live *l = calloc(1, sizeof *l);
    if (!l) return -ENOMEM;
    l->r = r;
    l->eng = -1;
    uint32_t bs = R->o->profile.block_size;
    size_t nb = r->ntokens / bs;
    l->hashes = malloc((nb ? nb : 1) * sizeof *l->hashes);
    if (!l->hashes) {
        free(l);
        return -ENOMEM;
    }
    size_t llen = strlen(r->lora), slen = strlen(r->salt);
    int nh = kvg_kv_hash_request(r->tokens, r->ntokens, bs, llen ? r->lora : NULL, llen,
                                 slen ? r->salt : NULL, slen, l->hashes, nb);
    struct kvg_route_ctx *c = &l->ctx;
    c->json = r->json; /* an agent's body, as the proxy's route input holds it */
    c->text = r->text;
    c->text_len = r->text_len;
    c->tokens = r->tokens;
    c->ntokens = r->ntokens;
    c->block_hashes = l->hashes;
    c->nblocks = nh > 0 ? (size_t)nh : 0;
    c->block_size = bs;
    c->max_tokens = r->max_tokens;
    c->header = header;
    c->hctx = l;
    c->rng = &R->rng;
    c->now_ms = vt_ms(t);
    c->user = KVG_STR_NULL;
    c->lora = llen ? (struct kvg_str){r->lora, llen} : KVG_STR_NULL;
    c->load_max_age_ms = R->o->load_max_age_ms;
    if ((rc = live_put(R, l))) {
        free(l->hashes);
        free(l);
        return rc;
    }
    int known = 0;
    l->router = kvg__bench_fleet_router(&R->fleet);
    struct router *rt = &R->rt[l->router];
    uint64_t t0 = kvg_now_ns();
    size_t nexclude = R->oracle ? oracle_exclude(R, rt, r) : 0;
    rc = kvg_pool_pick(&rt->pool, c, R->exclude, nexclude, &l->pick, &known, NULL);
    R->acc.route_ns += (double)(kvg_now_ns() - t0);
    R->acc.routed++;
    if (rc) {
        kvg_bench_acc_error(&R->acc, r, 0);
        return live_end(R, l, t, KVG_OUT_FAIL, 0);
    }
    int slot = l->pick.w->slot;
    if (slot < 0 || (uint32_t)slot >= R->neng || rt->w[slot] != l->pick.w) {
        kvg_bench_acc_error(&R->acc, r, 0);
        return live_end(R, l, t, KVG_OUT_FAIL, 0);
    }
    l->eng = slot;
    kvg__bench_fleet_pick(&R->fleet, l->router, (uint32_t)slot, t);
    struct des_eng *g = &R->eng[slot];
    /* A request without a budget gets what the context leaves, as vLLM
     * gives it; an output seed makes the answer the request's own, not the
     * engine's (so every policy sees the same conversations). */
    uint32_t mml = R->o->profile.max_model_len;
    uint32_t budget = r->max_tokens ? r->max_tokens : r->ntokens < mml ? mml - r->ntokens : 0;
    struct kvg_sim_request q = {.id = r->id,
                                .prompt = r->tokens,
                                .prompt_len = r->ntokens,
                                .max_tokens = budget,
                                .ignore_eos = r->ignore_eos,
                                .has_seed = r->out_seed != 0,
                                .seed = r->out_seed,
                                .arrival = t,
                                .lora_name = llen ? r->lora : NULL,
                                .lora_id = r->lora_id,
                                .cache_salt = slen ? r->salt : NULL};
    rc = kvg_sim_submit(g->e, &q);
    if (rc == -ENOMEM) return rc;
    if (rc) {
        /* The engine refuses it (too long for its context, empty): a 400. */
        kvg_bench_acc_error(&R->acc, r, 0);
        return live_end(R, l, t, KVG_OUT_CLIENT_ERROR, 0);
    }
    if (!g->stepping) return start_step(R, g, t);
    return 0;
}

/* ---- A step ends at t: its tokens reach the clients, its KV events the
 * index, and the engine goes on if it has work. */
static int step_end(struct run *R, uint32_t k, double t)
{
    struct des_eng *g = &R->eng[k];
    int rc;
    for (size_t i = 0; i < g->st.n_updates; i++) {
        const struct kvg_sim_update *u = &g->st.updates[i];
        struct live *l = u->id < R->cap_live ? R->live[u->id] : NULL;
        if (!l) continue; /* given up meanwhile */
        if (u->flags & KVG_SIM_UP_TOKEN) {
            if (!l->got_first) {
                l->got_first = 1;
                kvg_bench_acc_first(&R->acc, l->r, t - l->r->arrival, u->cached_tokens);
                kvg_pool_first_token_at(&R->rt[l->router].pool, &l->pick, vt_ms(t));
                kvg_bench_acc_tokens(&R->acc, l->r, t, 1, -1);
            } else {
                kvg_bench_acc_tokens(&R->acc, l->r, t, 1, t - l->last_tok);
            }
            l->last_tok = t;
            if (R->want_out) {
                if (l->nout == l->capout) {
                    size_t c = l->capout ? l->capout * 2 : 64;
                    uint32_t *o = realloc(l->out, c * sizeof *o);
                    if (!o) return -ENOMEM;
                    l->out = o;
                    l->capout = c;
                }
                l->out[l->nout++] = u->token;
            }
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            kvg_bench_acc_finish(&R->acc, l->r, t);
            if ((rc = live_end(R, l, t, KVG_OUT_OK, 1))) return rc;
        }
    }
    g->st.n_updates = 0;
    if (R->kv.path != KVG_BENCH_KV_NONE && (rc = kvg__bench_des_kv_publish(&R->kv, g->e, k, t)))
        return rc;
    if (kvg_sim_idle(g->e)) {
        g->stepping = 0;
        return 0;
    }
    return start_step(R, g, t);
}

void kvg_bench_des_load_sample(struct kvg_worker *w, const struct kvg_sim *e, double t,
                               uint64_t at_ms)
{
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    /* What vLLM's /metrics says at t: the gauges of the last step that ended. */
    uint32_t running, waiting;
    kvg_sim_reported_counts(e, t, &running, &waiting);
    w->load.waiting = waiting;
    w->load.running = running;
    w->load.kv_usage = m.kv_usage;
    w->load.at_ms = at_ms;
    w->load.inflight_at = atomic_load_explicit(&w->in_flight, memory_order_relaxed);
    w->load.peer_at = atomic_load_explicit(&w->peer_picks, memory_order_relaxed);
    w->load.block_size = m.block_size;
    w->load.kv_blocks = m.num_blocks;
    w->load.flavor = KVG_METRICS_FLAVOR_VLLM;
}

/* ---- A router's scrape: engine load into its workers. */
static void scrape_router(struct run *R, struct router *rt, double t)
{
    for (uint32_t k = 0; k < R->neng; k++) {
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(R->eng[k].e, &m);
        struct kvg_worker *w = rt->w[k];
        pthread_mutex_lock(&w->mu);
        /* (the bench's own samples below read the queues as they are) */
        kvg_bench_des_load_sample(w, R->eng[k].e, t, vt_ms(t));
        if (m.max_loras) {
            /* vllm:lora_requests_info: running then waiting adapters. */
            char run[256], wait[256];
            kvg_sim_lora_requests(R->eng[k].e, run, sizeof run, wait, sizeof wait);
            snprintf(w->lora_active, sizeof w->lora_active, "%s%s%s", run,
                     run[0] && wait[0] ? "," : "", wait);
            w->lora_max = (int)m.max_loras;
            w->lora_at_ms = w->load.at_ms;
        }
        pthread_mutex_unlock(&w->mu);
    }
}

/* ---- Every scrape period: router 0's scrape, samples, and requests given
 * up. */
static int scrape(struct run *R, double t)
{
    scrape_router(R, &R->rt[0], t);
    for (uint32_t k = 0; k < R->neng; k++) {
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(R->eng[k].e, &m);
        kvg_bench_acc_sample(&R->acc, t, m.num_waiting, m.kv_usage);
        kvg__bench_fleet_sample(&R->fleet, t, k, m.num_waiting + m.num_running);
    }
    if (!(R->o->timeout_s > 0)) return 0;
    /* Requests are numbered in arrival order, so the overdue ones are a
     * prefix of those still waiting for their first token. */
    uint64_t issued = kvg_bench_wl_issued(R->wl);
    for (; R->sweep < issued; R->sweep++) {
        struct live *l = R->sweep < R->cap_live ? R->live[R->sweep] : NULL;
        if (!l || l->got_first) continue;
        if (l->r->arrival + R->o->timeout_s > t) break;
        if (l->eng >= 0) kvg_sim_abort(R->eng[l->eng].e, l->r->id);
        kvg_bench_acc_error(&R->acc, l->r, 1);
        int rc = live_end(R, l, t, KVG_OUT_CLIENT_GONE, 0);
        if (rc) return rc;
    }
    return 0;
}

static int setup(struct run *R, struct kvg_bench_summary *out, char *err, size_t errlen)
{
    const struct kvg_bench_des_opts *o = R->o;
    int rc = kvg_bench_wl_new(&o->wl, &R->wl, err, errlen);
    if (rc) return rc;
    R->want_out = kvg_bench_wl_wants_output(R->wl);
    if ((rc = kvg_bench_acc_init(&R->acc, R->wl))) return rc;
    if ((rc = kvg__bench_des_kv_init(&R->kv, o->kv_path, o->profile.block_size, o->engines))) {
        snprintf(err, errlen, "KV index: %s", kvg_strerror(rc));
        return rc;
    }
    struct kvg_policy_opts po = o->popts;
    po.kv = R->kv.idx;
    po.block_size = o->profile.block_size;
    const char *pname = o->policy;
    if (!strcmp(o->policy, "oracle")) {
        if (o->wl.kind != KVG_BENCH_WL_SHARED_PREFIX) {
            out->status = KVG_ENOTFOUND;
            snprintf(out->note, sizeof out->note,
                     "the oracle places shared_prefix groups; this workload has none");
            return 1;
        }
        R->oracle = 1;
        pname = "round_robin"; /* the oracle leaves one candidate; the pool charges it */
    }
    R->neng = o->engines;
    R->nrt = o->routers ? o->routers : 1;
    if (!(R->rt = calloc(R->nrt, sizeof *R->rt))) return -ENOMEM;
    if ((rc = kvg__bench_fleet_init(&R->fleet, o, R->neng, R->acc.warm_end, R->acc.end))) return rc;
    /* The phases of the routers' scrapes: router 0's is the run's tick. */
    struct kvg_rng phase;
    kvg_rng_seed(&phase, o->seed * 0x2545f4914f6cdd1dull + 0x5c4a);
    for (uint32_t j = 0; j < R->nrt; j++) {
        struct router *rt = &R->rt[j];
        struct kvg_policy *p;
        rc = kvg_policy_new(pname, &po, &p);
        if (rc == KVG_ENOTFOUND) {
            out->status = KVG_ENOTFOUND;
            snprintf(out->note, sizeof out->note, "policy '%s' is not in this build (known: %s)",
                     o->policy, kvg_policy_names());
            return 1;
        }
        if (rc) {
            snprintf(err, errlen, "policy %s: %s", o->policy, kvg_strerror(rc));
            return rc;
        }
        if ((rc = kvg_pool_init(&rt->pool, p, NULL))) {
            p->ops->destroy(p);
            return rc;
        }
        rt->pool_ok = 1;
        if ((rc = kvg__bench_fleet_attach(&R->fleet, j, &rt->pool))) return rc;
        if (!(rt->w = calloc(R->neng, sizeof *rt->w))) return -ENOMEM;
        for (uint32_t i = 0; i < R->neng; i++) {
            /* Fake addresses: nothing connects to them; the pool needs URLs. */
            char url[64];
            snprintf(url, sizeof url, "http://127.0.0.1:%u", 10000 + i);
            if ((rc = kvg_pool_add(&rt->pool, url))) {
                snprintf(err, errlen, "pool: %s", kvg_strerror(rc));
                return rc;
            }
        }
        /* Engine i is the worker in slot i (slots are handed out in order). */
        for (size_t i = 0; i < rt->pool.n; i++) {
            struct kvg_worker *w = rt->pool.w[i];
            if (w->slot < 0 || (uint32_t)w->slot >= R->neng) return KVG_ECONFIG;
            rt->w[w->slot] = w;
        }
        rt->next_scrape =
            j ? kvg_rng_double(&phase) * (o->scrape_ms ? o->scrape_ms : 50) / 1000.0 : 0;
    }
    R->eng = calloc(R->neng, sizeof *R->eng);
    if (!R->eng) return -ENOMEM;
    for (uint32_t i = 0; i < R->neng; i++) {
        struct kvg_sim_config c;
        kvg_sim_config_init(&c, &o->profile);
        if (i % 2 && o->hetero == KVG_BENCH_HET_FAST) {
            struct kvg_sim_profile *f = &c.profile;
            f->t_fixed /= 2;
            f->t_seq /= 2;
            f->t_prefill_token /= 2;
            f->t_prefill_attn /= 2;
            f->t_decode_ctx /= 2;
        } else if (i % 2 && o->hetero == KVG_BENCH_HET_HALF_KV) {
            c.profile.kv_capacity_tokens /= 2;
            if (c.profile.max_model_len > c.profile.kv_capacity_tokens)
                c.profile.max_model_len = (uint32_t)c.profile.kv_capacity_tokens;
        }
        c.seed = o->seed * 1000003ull + i;
        c.mean_output_tokens = o->mean_output;
        /* Answers that tokenize back to themselves (an agent's next turn
         * carries the answer as text). */
        size_t nv = 0;
        const uint32_t *v = kvg_bench_wl_output_vocab(R->wl, &nv);
        if (v) {
            c.output_vocab = v;
            c.n_output_vocab = nv;
        }
        c.emit_events = o->kv_path != KVG_BENCH_KV_NONE;
        c.max_loras = o->max_loras;
        c.lora_load_s = o->lora_load_s;
        if ((rc = kvg_sim_create(&c, &R->eng[i].e))) {
            snprintf(err, errlen, "engine %u: %s", i, kvg_strerror(rc));
            return rc;
        }
    }
    if (R->oracle && !(R->exclude = calloc(R->neng, sizeof *R->exclude))) return -ENOMEM;
    kvg_rng_seed(&R->rng, (o->seed ^ 0x5eedull) + o->route_salt * 0x9e3779b97f4a7c15ull);
    R->scrape_s = (o->scrape_ms ? o->scrape_ms : 50) / 1000.0;
    return 0;
}

static void teardown(struct run *R)
{
    for (size_t i = 0; i < R->cap_live; i++) {
        struct live *l = R->live[i];
        if (!l) continue;
        if (l->pick.w)
            kvg_pool_release(&R->rt[l->router].pool, &l->pick, KVG_OUT_CLIENT_GONE, &l->ctx);
        kvg_bench_wl_done(R->wl, l->r, 0, NULL, 0, 0);
        free(l->hashes);
        free(l->out);
        free(l);
    }
    free(R->live);
    for (uint32_t j = 0; R->rt && j < R->nrt; j++) {
        if (R->rt[j].pool_ok) kvg_pool_destroy(&R->rt[j].pool);
        free(R->rt[j].w);
    }
    free(R->rt);
    kvg__bench_fleet_free(&R->fleet);
    for (uint32_t i = 0; R->eng && i < R->neng; i++)
        if (R->eng[i].e) kvg_sim_free(R->eng[i].e);
    free(R->eng);
    free(R->exclude);
    kvg__bench_des_kv_free(&R->kv);
    kvg_bench_acc_free(&R->acc);
    kvg_bench_wl_free(R->wl);
}

static void progress(struct run *R, double t, int state)
{
    struct kvg_bench_progress *p = R->o->progress;
    if (!p) return;
    atomic_store(&p->issued, kvg_bench_wl_issued(R->wl));
    atomic_store(&p->finished, kvg_bench_wl_issued(R->wl) - R->nlive);
    atomic_store(&p->vt_ms, (uint64_t)(t * 1000));
    atomic_store(&p->state, state);
}

static int loop(struct run *R)
{
    double next_scrape = 0, now = 0, next_exchange = R->fleet.exchange_s;
    uint64_t iter = 0;
    for (;; iter++) {
        double ta = kvg_bench_wl_next(R->wl);
        int k = -1;
        for (uint32_t i = 0; i < R->neng; i++)
            if (R->eng[i].stepping && (k < 0 || R->eng[i].busy_until < R->eng[k].busy_until))
                k = (int)i;
        double te = k >= 0 ? R->eng[k].busy_until : INFINITY;
        if (ta == INFINITY && k < 0 && R->nlive == 0) return 0;
        if (k < 0 && R->nlive == 0 && ta > next_scrape + R->scrape_s) {
            /* idle: skip ahead, every router keeping its phase */
            double skip = floor(ta / R->scrape_s) * R->scrape_s - next_scrape;
            next_scrape += skip;
            for (uint32_t j = 1; j < R->nrt; j++) R->rt[j].next_scrape += skip;
        }
        /* The other routers' next scrape. */
        uint32_t j = 0;
        for (uint32_t i = 1; i < R->nrt; i++)
            if (!j || R->rt[i].next_scrape < R->rt[j].next_scrape) j = i;
        double tr = j ? R->rt[j].next_scrape : INFINITY;
        double tx = R->fleet.x ? next_exchange : INFINITY;
        int rc = 0;
        /* Ties: a step's tokens first, then the scrapes, the routers'
         * exchange, then the arrival. */
        if (te <= next_scrape && te <= tr && te <= tx && te <= ta) {
            now = te;
            rc = step_end(R, (uint32_t)k, te);
        } else if (tx < next_scrape && tx < tr && tx <= ta) {
            now = tx;
            rc = kvg__bench_fleet_exchange(&R->fleet, vt_ms(tx));
            next_exchange += R->fleet.exchange_s;
        } else if (next_scrape <= tr && next_scrape <= ta) {
            now = next_scrape;
            rc = scrape(R, next_scrape);
            next_scrape += R->scrape_s;
        } else if (tr <= ta) {
            now = tr;
            scrape_router(R, &R->rt[j], tr);
            R->rt[j].next_scrape += R->scrape_s;
        } else {
            now = ta;
            rc = arrive(R);
        }
        if (rc) return rc;
        if ((iter & 1023) == 0) progress(R, now, 1);
    }
}

int kvg_bench_des_run(const struct kvg_bench_des_opts *o, struct kvg_bench_summary *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->policy, sizeof out->policy, "%s", o->policy);
    if (!o->engines || o->engines > 1024) {
        snprintf(err, errlen, "engines must be 1..1024");
        return KVG_ECONFIG;
    }
    if (o->routers > KVG_BENCH_MAX_ROUTERS) {
        snprintf(err, errlen, "routers must be 1..%d", KVG_BENCH_MAX_ROUTERS);
        return KVG_ECONFIG;
    }
    struct run R;
    memset(&R, 0, sizeof R);
    R.o = o;
    uint64_t w0 = kvg_now_ns();
    int rc = setup(&R, out, err, errlen);
    if (rc == 1) { /* unknown policy: reported, not a failure */
        teardown(&R);
        return 0;
    }
    if (!rc) {
        progress(&R, 0, 1);
        rc = loop(&R);
        if (rc && !err[0]) snprintf(err, errlen, "simulation: %s", kvg_strerror(rc));
    }
    if (!rc) {
        kvg_bench_acc_summarize(&R.acc, R.wl, out);
        kvg__bench_fleet_summarize(&R.fleet, out);
        for (uint32_t i = 0; i < R.neng; i++) {
            struct kvg_sim_metrics m;
            kvg_sim_get_metrics(R.eng[i].e, &m);
            out->preemptions += m.num_preemptions;
            out->lora_loads += m.lora_loads;
        }
        out->kv_events = R.kv.events;
        out->kv_batches = R.kv.batches;
        if (R.kv.idx) {
            struct kvg_kv_index_stats st;
            kvg_kv_index_stats(R.kv.idx, &st);
            out->index_entries = st.entries;
        }
        out->wall_s = (double)(kvg_now_ns() - w0) / 1e9;
    }
    if (o->progress) atomic_store(&o->progress->state, 2);
    teardown(&R);
    return rc;
}
