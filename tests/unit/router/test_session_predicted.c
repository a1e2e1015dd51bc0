/* session_affinity (sticky sessions on a bounded-load ring, the KV-aware
 * fallback) and predicted_latency (learned prefill rates, queue ahead,
 * cache, the ITL bound) on hand-built workers, in approximate mode. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "kv/hash.h"
#include "router/policy.h"

#define NW 3
#define BS 16

static struct kvg_worker *W[NW];
static struct kvg_rng rng;

static void setup(void)
{
    kvg_rng_seed(&rng, 11);
    for (int i = 0; i < NW; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9200 + i);
        CHECK_INT(kvg_worker_new(url, &W[i]), 0);
        W[i]->slot = i;
    }
}

static void teardown(void)
{
    for (int i = 0; i < NW; i++) kvg_worker_unref(W[i]);
}

struct hdrs {
    const char *name[2], *value[2];
};

static struct kvg_str header(const void *hctx, const char *name)
{
    const struct hdrs *h = hctx;
    for (int i = 0; i < 2; i++)
        if (h->name[i] && !strcmp(h->name[i], name))
            return (struct kvg_str){h->value[i], strlen(h->value[i])};
    return KVG_STR_NULL;
}

struct req {
    uint32_t toks[640];
    uint64_t h[40];
    struct hdrs hd;
    struct kvg_route_ctx c;
};

/* A 640-token prompt from `base`, with headers hd. */
static void req_init(struct req *r, uint32_t base)
{
    memset(r, 0, sizeof *r);
    for (uint32_t i = 0; i < 640; i++) r->toks[i] = base + i;
    int nh = kvg_kv_hash_tokens(r->toks, 640, BS, r->h, 40);
    r->c = (struct kvg_route_ctx){.tokens = r->toks,
                                  .ntokens = 640,
                                  .block_hashes = r->h,
                                  .nblocks = (size_t)nh,
                                  .block_size = BS,
                                  .header = header,
                                  .hctx = &r->hd,
                                  .rng = &rng,
                                  .now_ms = 1000,
                                  .load_max_age_ms = 5000};
}

static int pick(struct kvg_policy *p, struct req *r)
{
    return p->ops->select(p, W, NW, &r->c, NULL);
}

TEST(session_affinity_keeps_a_session_home_within_the_bound)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("session_affinity", &o, &p), 0);
    struct req r;
    req_init(&r, 100);
    r.hd.name[0] = "x-session-id";
    r.hd.value[0] = "agent-42";
    int home = pick(p, &r);
    CHECK(home >= 0 && home < NW);
    /* Another prompt (a new turn), same session: the same worker. */
    for (uint32_t k = 1; k < 6; k++) {
        req_init(&r, 100 + 7919 * k);
        r.hd.name[0] = "x-session-id";
        r.hd.value[0] = "agent-42";
        CHECK_INT(pick(p, &r), home);
    }
    /* Sessions spread over the ring. */
    int used[NW] = {0};
    for (int k = 0; k < 30; k++) {
        char id[32];
        snprintf(id, sizeof id, "s%d", k);
        req_init(&r, 100);
        r.hd.name[0] = "x-session-id";
        r.hd.value[0] = id;
        used[pick(p, &r)] = 1;
    }
    CHECK_INT(used[0] + used[1] + used[2], 3);
    /* Past ceil(1.25 x (in flight + 1) / n) the home is left for the
     * KV-aware choice. */
    atomic_store(&W[home]->in_flight, 6); /* bound: ceil(1.25 x 7 / 3) = 3 */
    req_init(&r, 100);
    r.hd.name[0] = "x-session-id";
    r.hd.value[0] = "agent-42";
    int spilled = pick(p, &r);
    CHECK(spilled >= 0 && spilled != home);
    atomic_store(&W[home]->in_flight, 0);
    CHECK_INT(pick(p, &r), home); /* back home once it is within the bound */
    p->ops->destroy(p);
    teardown();
}

TEST(session_affinity_key_sources_and_fallback)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    snprintf(o.session_header, sizeof o.session_header, "x-conversation");
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("session_affinity", &o, &p), 0);
    struct req r;
    /* The configured header wins over x-session-id: two requests with the
     * same configured value and different x-session-ids stay together. */
    int first = -1;
    for (int k = 0; k < 8; k++) {
        char sid[32];
        snprintf(sid, sizeof sid, "other-%d", k);
        req_init(&r, 100 + 13u * (uint32_t)k);
        r.hd.name[0] = "x-conversation";
        r.hd.value[0] = "conv-1";
        r.hd.name[1] = "x-session-id";
        r.hd.value[1] = sid;
        int w = pick(p, &r);
        if (first < 0) first = w;
        CHECK_INT(w, first);
    }
    /* The API key's user, then the body's `user`: sticky too. */
    first = -1;
    for (int k = 0; k < 5; k++) {
        req_init(&r, 5000 + 13u * (uint32_t)k);
        r.c.user = KVG_STR("tenant-a");
        int w = pick(p, &r);
        if (first < 0) first = w;
        CHECK_INT(w, first);
    }
    cJSON *body = cJSON_Parse("{\"user\": \"alice\"}");
    first = -1;
    for (int k = 0; k < 5; k++) {
        req_init(&r, 9000 + 13u * (uint32_t)k);
        r.c.json = body;
        int w = pick(p, &r);
        if (first < 0) first = w;
        CHECK_INT(w, first);
    }
    cJSON_Delete(body);
    /* No key: the KV-aware fallback (prefix_affinity) places the prompt and
     * keeps it where it is cached. */
    req_init(&r, 30000);
    int w = pick(p, &r);
    CHECK(w >= 0 && w < NW);
    req_init(&r, 30000);
    CHECK_INT(pick(p, &r), w);
    p->ops->destroy(p);
    /* Configuration errors. */
    o.session_load_bound = 0.5;
    CHECK_INT(kvg_policy_new("session_affinity", &o, &p), KVG_ECONFIG);
    o.session_load_bound = 1.25;
    snprintf(o.session_fallback, sizeof o.session_fallback, "session_affinity");
    CHECK_INT(kvg_policy_new("session_affinity", &o, &p), KVG_ECONFIG);
    snprintf(o.session_fallback, sizeof o.session_fallback, "nope");
    CHECK_INT(kvg_policy_new("session_affinity", &o, &p), KVG_ENOTFOUND);
    teardown();
}

static void explain(struct kvg_policy *p, struct req *r, double *pred, int *best)
{
    struct kvg_route_score sc[NW];
    for (int i = 0; i < NW; i++) sc[i] = (struct kvg_route_score){-1, -1, -1, -1, -1, -1, -1};
    struct kvg_route_explain ex = {.scores = sc, .n = NW};
    *best = p->ops->select(p, W, NW, &r->c, &ex);
    for (int i = 0; i < NW; i++) pred[i] = sc[i].score;
}

TEST(predicted_latency_learns_the_pools_rate_and_counts_the_queue_ahead)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.predict_prefill_tps = 10000;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), 0);
    struct req r;
    req_init(&r, 100);
    double pred[NW];
    int best;
    explain(p, &r, pred, &best);
    /* The prior: 0.02 s + 640 tokens at 10,000/s, for every worker. */
    CHECK_NEAR(pred[0], 0.02 + 0.064, 1e-9);
    CHECK_NEAR(pred[2], pred[0], 1e-12);
    /* Workers 0 and 1 answer 1,000 tokens of work in 120 ms after a t0 of
     * 20 ms: 0.1 ms per token, learned for the pool, worker 2 included
     * (it never answered). */
    for (int k = 0; k < 40; k++) {
        p->ops->on_first_token(p, W[k % 2], 1000, 120);
        p->ops->on_first_token(p, W[k % 2], 10, 20); /* small work: t0 */
    }
    req_init(&r, 50000); /* a new prompt: cached nowhere */
    explain(p, &r, pred, &best);
    for (int i = 0; i < NW; i++) CHECK_NEAR(pred[i], 0.02 + 640 * 1e-4, 0.005);
    /* Prefill queued ahead on worker 1: 100,000 tokens make it the slowest
     * to a first token. */
    atomic_store(&W[1]->active_prefill_tokens, 100000);
    req_init(&r, 70000);
    explain(p, &r, pred, &best);
    CHECK(best != 1);
    CHECK(pred[1] > pred[0] + 5 && pred[1] > pred[2] + 5);
    atomic_store(&W[1]->active_prefill_tokens, 0);
    p->ops->destroy(p);
    teardown();
}

/* A worker whose answers came slow (what was ahead of them that this
 * router did not charge: the other replicas' prompts, the decode steps)
 * keeps the prompts it holds, and new prefixes go by the requests in
 * flight, not by which worker's last answers were quick: a rate per
 * worker made both follow that noise (bench/results/fleet.md,
 * 2026-12-07 (3)). */
TEST(predicted_latency_slow_answers_move_no_prefix)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), 0);
    /* Worker 0 holds a prompt's first 320 tokens (approximate mode: what
     * was placed there). */
    struct req r;
    req_init(&r, 100);
    struct req half;
    req_init(&half, 100);
    half.c.ntokens = 320;
    half.c.nblocks = 20;
    p->ops->place(p, W[0], &half.c);
    /* Its answers took 1 ms a token, the others' 0.03 ms. */
    for (int k = 0; k < 40; k++) {
        p->ops->on_first_token(p, W[0], 1000, 1020);
        p->ops->on_first_token(p, W[1 + k % 2], 1000, 50);
    }
    /* The prompt goes where half of it is cached. */
    double pred[NW];
    int best;
    explain(p, &r, pred, &best);
    CHECK_INT(best, 0);
    CHECK(pred[0] < pred[1] && pred[0] < pred[2]);
    /* A new prefix goes to the worker with the fewest in flight, worker 0. */
    atomic_store(&W[1]->in_flight, 2);
    atomic_store(&W[2]->in_flight, 2);
    for (uint32_t k = 0; k < 8; k++) {
        req_init(&r, 200000 + 1000 * k);
        r.c.dry_run = 1; /* nothing recorded: each is new */
        CHECK_INT(pick(p, &r), 0);
    }
    atomic_store(&W[1]->in_flight, 0);
    atomic_store(&W[2]->in_flight, 0);
    p->ops->destroy(p);
    teardown();
}

/* Equal predictions (a new prefix) go to the less loaded worker: this
 * router's requests in flight plus the others' at the engine's last
 * sample. A replica behind a balancer sees only its own share of the
 * requests, and 8 of them each balancing their own put sessions on the
 * engines the others had just filled (bench/results/fleet.md,
 * 2026-12-07 (3)); one router alone counts its own, ends included. */
TEST(predicted_latency_ties_count_the_other_replicas_requests)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), 0);
    /* This router has nothing in flight; the engines (fresh samples) run
     * 12 requests on workers 0 and 1 (the other replicas'), none on 2. */
    for (int i = 0; i < NW; i++) {
        W[i]->load = (struct kvg_engine_load){
            .waiting = 0, .running = i < 2 ? 12 : 0, .kv_usage = 0.1, .at_ms = 1000};
    }
    struct req r;
    for (uint32_t k = 0; k < 8; k++) {
        req_init(&r, 300000 + 1000 * k);
        r.c.dry_run = 1;
        CHECK_INT(pick(p, &r), 2);
    }
    /* This router's own 20 requests on worker 2 since the sample count at
     * once: worker 0 or 1 now. */
    atomic_store(&W[2]->in_flight, 20);
    req_init(&r, 400000);
    r.c.dry_run = 1;
    CHECK(pick(p, &r) != 2);
    atomic_store(&W[2]->in_flight, 0);
    /* One router alone: the samples hold only its own requests (5 on worker
     * 0, 3 on 1, 4 on 2); 3 of worker 0's have ended since, which it knows
     * at once: worker 0 (2 in flight) is the least loaded. */
    uint32_t at[NW] = {5, 3, 4}, now[NW] = {2, 3, 4};
    for (int i = 0; i < NW; i++) {
        W[i]->load = (struct kvg_engine_load){
            .waiting = 0, .running = at[i], .kv_usage = 0.1, .at_ms = 1000, .inflight_at = at[i]};
        atomic_store(&W[i]->in_flight, now[i]);
    }
    for (uint32_t k = 0; k < 8; k++) {
        req_init(&r, 500000 + 1000 * k);
        r.c.dry_run = 1;
        CHECK_INT(pick(p, &r), 0);
    }
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->in_flight, 0);
    for (int i = 0; i < NW; i++) W[i]->load = (struct kvg_engine_load){0};
    p->ops->destroy(p);
    teardown();
}

TEST(predicted_latency_cache_and_itl_bound)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), 0);
    struct req r;
    req_init(&r, 100);
    int first = pick(p, &r); /* approximate mode: remembered where it went */
    double pred[NW];
    int best;
    req_init(&r, 100);
    explain(p, &r, pred, &best);
    CHECK_INT(best, first); /* cached there: nothing to prefill */
    for (int i = 0; i < NW; i++)
        if (i != first) CHECK(pred[i] > pred[first]);
    /* The holder's decode blocks in flight past 2x the mean: not eligible,
     * however cheap its prefill. */
    atomic_store(&W[first]->active_decode_blocks, 10000);
    req_init(&r, 100);
    best = pick(p, &r);
    CHECK(best != first);
    /* Every candidate past the bound: the bound is dropped, not the request. */
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->active_decode_blocks, 10000);
    req_init(&r, 100);
    CHECK_INT(pick(p, &r), first);
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->active_decode_blocks, 0);
    p->ops->destroy(p);
    o.predict_itl_bound = 0.5;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), KVG_ECONFIG);
    o.predict_itl_bound = 2;
    o.predict_prefill_tps = 0;
    CHECK_INT(kvg_policy_new("predicted_latency", &o, &p), KVG_ECONFIG);
    teardown();
}
