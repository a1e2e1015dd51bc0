/* Router policies on hand-built workers: the semantics each promises. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "router/circuit.h"
#include "router/exchange.h"
#include "router/policy.h"
#include "router/pool.h"

#define NW 4

static struct kvg_worker *W[8];
static struct kvg_rng rng;

static void make_workers(int n)
{
    kvg_rng_seed(&rng, 42);
    for (int i = 0; i < n; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9000 + i);
        CHECK_INT(kvg_worker_new(url, &W[i]), 0);
    }
}

static void free_workers(int n)
{
    for (int i = 0; i < n; i++) kvg_worker_unref(W[i]);
}

static struct kvg_policy *policy(const char *name)
{
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new(name, NULL, &p), 0);
    return p;
}

struct hdrs {
    const char *name, *value;
};

static struct kvg_str hdr(const void *h, const char *name)
{
    const struct hdrs *hs = h;
    for (; hs && hs->name; hs++)
        if (!strcasecmp(hs->name, name)) return (struct kvg_str){hs->value, strlen(hs->value)};
    return KVG_STR_NULL;
}

static struct kvg_route_ctx ctx_with(const struct hdrs *h)
{
    struct kvg_route_ctx c = {
        .header = hdr, .hctx = h, .rng = &rng, .now_ms = 1000, .load_max_age_ms = 5000};
    return c;
}

TEST(unknown_policy_is_an_error)
{
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("nope", NULL, &p), KVG_ENOTFOUND);
}

TEST(random_covers_all)
{
    make_workers(NW);
    struct kvg_policy *p = policy("random");
    int seen[NW] = {0};
    struct kvg_route_ctx c = ctx_with(NULL);
    for (int i = 0; i < 400; i++) seen[p->ops->select(p, W, NW, &c, NULL)]++;
    for (int i = 0; i < NW; i++) CHECK(seen[i] > 50);
    CHECK_INT(p->ops->select(p, W, 0, &c, NULL), KVG_ENOWORKER);
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(round_robin_cycles)
{
    make_workers(NW);
    struct kvg_policy *p = policy("round_robin");
    struct kvg_route_ctx c = ctx_with(NULL);
    int first = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 1; i < 8; i++) CHECK_INT(p->ops->select(p, W, NW, &c, NULL), (first + i) % NW);
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(power_of_two_prefers_lower_load)
{
    make_workers(2);
    struct kvg_policy *p = policy("power_of_two");
    struct kvg_route_ctx c = ctx_with(NULL);
    atomic_store(&W[0]->in_flight, 10);
    /* No fresh engine metrics: in-flight decides, both are always drawn. */
    for (int i = 0; i < 20; i++) CHECK_INT(p->ops->select(p, W, 2, &c, NULL), 1);
    /* Fresh engine metrics say the opposite: they win. */
    for (int i = 0; i < 2; i++) {
        W[i]->load = (struct kvg_engine_load){
            .waiting = i ? 50 : 0, .running = 1, .kv_usage = 0.5, .at_ms = 900};
    }
    for (int i = 0; i < 20; i++) CHECK_INT(p->ops->select(p, W, 2, &c, NULL), 0);
    /* Stale metrics (older than the limit) are unknown, never idle. */
    c.now_ms = 900 + 6000;
    for (int i = 0; i < 20; i++) CHECK_INT(p->ops->select(p, W, 2, &c, NULL), 1);
    p->ops->destroy(p);
    free_workers(2);
}

TEST(least_load_and_tie_break)
{
    make_workers(NW);
    struct kvg_policy *p = policy("least_load");
    struct kvg_route_ctx c = ctx_with(NULL);
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->in_flight, 5);
    atomic_store(&W[2]->in_flight, 1);
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), 2);
    atomic_store(&W[2]->in_flight, 5);
    atomic_store(&W[1]->processed, 0);
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->processed, 7);
    atomic_store(&W[3]->processed, 2);
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), 3); /* equal load: fewer processed */
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(consistent_hash_is_sticky_and_moves_little)
{
    make_workers(NW);
    struct kvg_policy *p = policy("consistent_hash");
    int before[200], moved = 0;
    for (int k = 0; k < 200; k++) {
        char v[32];
        snprintf(v, sizeof v, "session-%d", k);
        struct hdrs h[] = {{"x-session-id", v}, {NULL, NULL}};
        struct kvg_route_ctx c = ctx_with(h);
        before[k] = p->ops->select(p, W, NW, &c, NULL);
        CHECK_INT(p->ops->select(p, W, NW, &c, NULL), before[k]); /* sticky */
        /* Worker 3 gone: only its keys move. */
        int after = p->ops->select(p, W, NW - 1, &c, NULL);
        if (before[k] != 3)
            CHECK_INT(after, before[k]);
        else
            moved++;
    }
    CHECK(moved > 20 && moved < 90); /* about a quarter of the keys */
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(rendezvous_hash_is_sticky)
{
    make_workers(NW);
    struct kvg_policy *p = policy("rendezvous_hash");
    int counts[NW] = {0};
    for (int k = 0; k < 400; k++) {
        char v[32];
        snprintf(v, sizeof v, "user-%d", k);
        struct hdrs h[] = {{"x-user-id", v}, {NULL, NULL}};
        struct kvg_route_ctx c = ctx_with(h);
        int a = p->ops->select(p, W, NW, &c, NULL);
        CHECK_INT(p->ops->select(p, W, NW, &c, NULL), a);
        counts[a]++;
    }
    for (int i = 0; i < NW; i++) CHECK(counts[i] > 50);
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(routing_key_sources)
{
    char key[256];
    struct hdrs h[] = {{"x-request-id", "r1"}, {NULL, NULL}};
    struct kvg_route_ctx c = ctx_with(h);
    CHECK(kvg_policy_routing_key(&c, key, sizeof key) > 0);
    CHECK_STR(key, "header:x-request-id:r1");
    struct hdrs h2[] = {{"x-request-id", "r1"}, {"x-session-id", "s9"}, {NULL, NULL}};
    c = ctx_with(h2);
    kvg_policy_routing_key(&c, key, sizeof key);
    CHECK_STR(key, "header:x-session-id:s9"); /* session before request id */
    cJSON *j = cJSON_Parse("{\"user\":\"bob\",\"session_id\":\"z\"}");
    c = ctx_with(NULL);
    c.json = j;
    kvg_policy_routing_key(&c, key, sizeof key);
    CHECK_STR(key, "user:bob");
    cJSON_Delete(j);
    c.json = NULL;
    CHECK_INT(kvg_policy_routing_key(&c, key, sizeof key), 0);
    /* The coding agents' session keys: Claude Code's header (before the
     * request id), Codex's prompt_cache_key in a Responses body. */
    struct hdrs h3[] = {{"x-request-id", "r1"}, {"x-claude-code-session-id", "cc-7"}, {NULL, NULL}};
    c = ctx_with(h3);
    kvg_policy_routing_key(&c, key, sizeof key);
    CHECK_STR(key, "header:x-claude-code-session-id:cc-7");
    j = cJSON_Parse("{\"input\":\"x\",\"prompt_cache_key\":\"thread-1\"}");
    c = ctx_with(NULL);
    c.json = j;
    kvg_policy_routing_key(&c, key, sizeof key);
    CHECK_STR(key, "session:thread-1");
    cJSON_Delete(j);
}

TEST(prefix_hash_groups_prefixes_with_load_guard)
{
    make_workers(NW);
    struct kvg_policy *p = policy("prefix_hash");
    uint32_t toks[300];
    for (int i = 0; i < 300; i++) toks[i] = (uint32_t)i;
    struct kvg_route_ctx c = ctx_with(NULL);
    c.tokens = toks;
    c.ntokens = 300;
    int a = p->ops->select(p, W, NW, &c, NULL);
    toks[280] = 999999; /* differs only past the first 256 tokens: same worker */
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), a);
    /* The prefix worker far over its share: another one takes the request. */
    atomic_store(&W[a]->in_flight, 100);
    int b = p->ops->select(p, W, NW, &c, NULL);
    CHECK(b != a);
    p->ops->destroy(p);
    free_workers(NW);
}

TEST(manual_pins_and_reassigns)
{
    make_workers(NW);
    struct kvg_policy *p = policy("manual");
    struct hdrs h[] = {{"x-smg-routing-key", "tenant-7"}, {NULL, NULL}};
    struct kvg_route_ctx c = ctx_with(h);
    int a = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 0; i < 10; i++) CHECK_INT(p->ops->select(p, W, NW, &c, NULL), a);
    /* Its worker leaves the candidates: reassigned, then sticky again. */
    struct kvg_worker *rest[NW];
    int n = 0;
    for (int i = 0; i < NW; i++)
        if (i != a) rest[n++] = W[i];
    int b = p->ops->select(p, rest, (size_t)n, &c, NULL);
    CHECK_INT(p->ops->select(p, rest, (size_t)n, &c, NULL), b);
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), (b >= a ? b + 1 : b)); /* not moved back */
    p->ops->destroy(p);
    free_workers(NW);
}

/* Two replicas (their own tables and draws) give a key the same worker,
 * at first sight and again when that worker leaves: a session is not
 * split over the replicas' choices (bench/results/fleet.md, manual). */
TEST(manual_replicas_agree_on_a_key)
{
    make_workers(NW);
    struct kvg_policy *p1 = policy("manual"), *p2 = policy("manual");
    struct kvg_rng rng2;
    kvg_rng_seed(&rng2, 7);
    int seen[NW] = {0};
    for (int k = 0; k < 200; k++) {
        char v[32];
        snprintf(v, sizeof v, "session-%d", k);
        struct hdrs h[] = {{"x-session-id", v}, {NULL, NULL}};
        struct kvg_route_ctx c1 = ctx_with(h), c2 = ctx_with(h);
        c2.rng = &rng2;
        int a = p1->ops->select(p1, W, NW, &c1, NULL);
        CHECK_INT(p2->ops->select(p2, W, NW, &c2, NULL), a);
        seen[a]++;
        struct kvg_worker *rest[NW];
        int n = 0;
        for (int i = 0; i < NW; i++)
            if (i != a) rest[n++] = W[i];
        int b = p1->ops->select(p1, rest, (size_t)n, &c1, NULL);
        CHECK_INT(p2->ops->select(p2, rest, (size_t)n, &c2, NULL), b);
    }
    for (int i = 0; i < NW; i++) CHECK(seen[i] > 20); /* spread as a draw would */
    p1->ops->destroy(p1);
    p2->ops->destroy(p2);
    free_workers(NW);
}

/* The key table is bounded (policy_manual.c, MAX_KEYS = 2^18): past it a
 * new key is routed but not pinned, so in min_load mode it follows the load
 * instead of sticking, while a key pinned before stays where it was. */
TEST(manual_key_table_is_bounded)
{
    make_workers(NW);
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.assignment_min_load = 1;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("manual", &o, &p), 0);
    char v[32];
    struct hdrs h[] = {{"x-session-id", v}, {NULL, NULL}};
    snprintf(v, sizeof v, "early");
    struct kvg_route_ctx c = ctx_with(h);
    int early = p->ops->select(p, W, NW, &c, NULL);
    for (int k = 0; k < (1 << 18); k++) {
        snprintf(v, sizeof v, "k%d", k);
        c = ctx_with(h);
        CHECK(p->ops->select(p, W, NW, &c, NULL) >= 0);
    }
    snprintf(v, sizeof v, "late");
    c = ctx_with(h);
    int late = p->ops->select(p, W, NW, &c, NULL);
    atomic_store(&W[late]->in_flight, 1000);
    atomic_store(&W[early]->in_flight, 1000);
    CHECK(p->ops->select(p, W, NW, &c, NULL) != late); /* not pinned: the load moved it */
    snprintf(v, sizeof v, "early");
    c = ctx_with(h);
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), early); /* pinned before: sticky */
    p->ops->destroy(p);
    free_workers(NW);
}

/* sglang's promise kept with the ring: a worker joining moves no key that
 * already has one (the table holds it; only new keys see the new ring). */
TEST(manual_new_worker_moves_no_key)
{
    make_workers(NW + 1);
    struct kvg_policy *p = policy("manual");
    int before[100], on_new = 0;
    for (int k = 0; k < 100; k++) {
        char v[32];
        snprintf(v, sizeof v, "user-%d", k);
        struct hdrs h[] = {{"x-user-id", v}, {NULL, NULL}};
        struct kvg_route_ctx c = ctx_with(h);
        before[k] = p->ops->select(p, W, NW, &c, NULL);
    }
    for (int k = 0; k < 100; k++) {
        char v[32];
        snprintf(v, sizeof v, "user-%d", k);
        struct hdrs h[] = {{"x-user-id", v}, {NULL, NULL}};
        struct kvg_route_ctx c = ctx_with(h);
        CHECK_INT(p->ops->select(p, W, NW + 1, &c, NULL), before[k]);
        snprintf(v, sizeof v, "new-%d", k);
        on_new += p->ops->select(p, W, NW + 1, &c, NULL) == NW;
    }
    CHECK(on_new > 5); /* new keys do reach the new worker */
    p->ops->destroy(p);
    free_workers(NW + 1);
}

/* prefix_hash's guard weighs the engine's own count when it says more than
 * this router's in-flight requests: another replica's requests load the
 * prefix's worker although this one sent it none. */
TEST(prefix_hash_guard_reads_the_engine_load)
{
    make_workers(NW);
    struct kvg_policy *p = policy("prefix_hash");
    uint32_t toks[64];
    for (int i = 0; i < 64; i++) toks[i] = 100 + (uint32_t)i;
    struct kvg_route_ctx c = ctx_with(NULL);
    c.tokens = toks;
    c.ntokens = 64;
    int a = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 0; i < NW; i++)
        W[i]->load = (struct kvg_engine_load){
            .waiting = 0, .running = i == a ? 40 : 2, .kv_usage = 0.5, .at_ms = 900};
    int b = p->ops->select(p, W, NW, &c, NULL);
    CHECK(b != a);
    /* Near the others' load it keeps the prefix's worker. */
    W[a]->load.running = 3;
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), a);
    /* A stale sample is unknown: its own in-flight counts (none) decide. */
    W[a]->load.running = 40;
    c.now_ms = 900 + 6000;
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), a);
    p->ops->destroy(p);
    free_workers(NW);
}

/* Another replica's picks heard through the exchange load the worker until
 * the engine's next sample holds them: prefix_hash's guard leaves a prefix's
 * worker that the sample shows at the others' load but the peers have just
 * sent two more requests (replicas spilled alike onto the worker the sample
 * showed idlest). The next sample forgets them. */
TEST(prefix_hash_guard_counts_the_peers_picks_since_the_sample)
{
    struct kvg_pool pool;
    CHECK_INT(kvg_pool_init(&pool, policy("prefix_hash"), NULL), 0);
    for (int i = 0; i < NW; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9100 + i);
        CHECK_INT(kvg_pool_add(&pool, url), 0);
    }
    struct kvg_worker *w[NW];
    CHECK_INT((int)kvg_pool_snapshot(&pool, w, NW), NW);
    for (int i = 0; i < NW; i++)
        w[i]->load = (struct kvg_engine_load){.waiting = 0, .running = 2, .at_ms = 900};
    uint32_t toks[64];
    for (int i = 0; i < 64; i++) toks[i] = 300 + (uint32_t)i;
    struct kvg_route_ctx c = ctx_with(NULL);
    c.tokens = toks;
    c.ntokens = 64;
    struct kvg_policy *p = pool.policy;
    int a = p->ops->select(p, w, NW, &c, NULL);
    CHECK(a >= 0);
    uint64_t h = 7;
    struct kvg_exchange_rec r = {.worker = {w[a]->url, strlen(w[a]->url)},
                                 .block_size = 16,
                                 .ntokens = 16,
                                 .hashes = &h,
                                 .nblocks = 1};
    /* One pick: 3 against the guard's (9 + 1) / 4 x 1.25; two: 4 > 3.44. */
    CHECK_INT(kvg_exchange_apply(&pool, NULL, &r, 950, 0), 0);
    CHECK_INT(p->ops->select(p, w, NW, &c, NULL), a);
    CHECK_INT(kvg_exchange_apply(&pool, NULL, &r, 950, 0), 0);
    CHECK(p->ops->select(p, w, NW, &c, NULL) != a);
    /* The next sample holds them. */
    pthread_mutex_lock(&w[a]->mu);
    w[a]->load.at_ms = 990;
    w[a]->load.peer_at = atomic_load(&w[a]->peer_picks);
    pthread_mutex_unlock(&w[a]->mu);
    CHECK_INT(p->ops->select(p, w, NW, &c, NULL), a);
    /* A record of a worker this replica does not know counts nowhere. */
    r.worker = KVG_STR("http://127.0.0.1:9999");
    CHECK_INT(kvg_exchange_apply(&pool, NULL, &r, 990, 0), KVG_ENOTFOUND);
    for (int i = 0; i < NW; i++) kvg_worker_unref(w[i]);
    kvg_pool_destroy(&pool);
}

TEST(pool_pick_release_counts_and_filters)
{
    struct kvg_policy *p = policy("round_robin");
    struct kvg_pool pool;
    CHECK_INT(kvg_pool_init(&pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9001"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9002/"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9002"), -EEXIST);
    struct kvg_route_ctx c = ctx_with(NULL);
    struct kvg_pick p1, p2, p3;
    int known;
    CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &p1, &known, NULL), 0);
    struct kvg_worker *w1 = p1.w;
    CHECK_INT(kvg_pool_pick(&pool, &c, &w1, 1, &p2, &known, NULL), 0);
    CHECK(w1 != p2.w); /* the excluded worker is not picked */
    CHECK_INT(atomic_load(&w1->in_flight), 1);
    /* Removal while in flight: the worker lives until released. */
    CHECK_INT(kvg_pool_remove(&pool, p2.w->url), 0);
    CHECK_INT(kvg_pool_remove(&pool, "http://nope:1"), KVG_ENOTFOUND);
    kvg_pool_release(&pool, &p2, KVG_OUT_OK, &c);
    CHECK(p2.w == NULL);
    kvg_pool_release(&pool, &p1, KVG_OUT_OK, &c);
    CHECK_INT(atomic_load(&w1->in_flight), 0);
    /* Unhealthy: no candidate, but the model is known (503, not 404). */
    atomic_store(&w1->healthy, 0);
    CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &p3, &known, NULL), KVG_ENOWORKER);
    CHECK_INT(known, 1);
    atomic_store(&w1->healthy, 1);
    /* Model filtering. */
    cJSON *ml = cJSON_Parse("[{\"id\":\"m1\"}]");
    kvg_worker_set_models(w1, ml);
    cJSON_Delete(ml);
    c.model = KVG_STR("m2");
    CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &p3, &known, NULL), KVG_ENOWORKER);
    CHECK_INT(known, 0);
    c.model = KVG_STR("m1");
    /* A tokenized request: its charges apply until first token / release. */
    uint32_t toks[40] = {0};
    c.tokens = toks;
    c.ntokens = 40;
    c.block_size = 16;
    CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &p3, &known, NULL), 0);
    CHECK_INT(atomic_load(&w1->active_prefill_tokens), 40);
    CHECK_INT(atomic_load(&w1->active_decode_blocks), 3);
    kvg_pool_first_token(&pool, &p3);
    kvg_pool_first_token(&pool, &p3); /* idempotent */
    CHECK_INT(atomic_load(&w1->active_prefill_tokens), 0);
    CHECK_INT(atomic_load(&w1->active_decode_blocks), 3);
    kvg_pool_release(&pool, &p3, KVG_OUT_OK, &c);
    CHECK_INT(atomic_load(&w1->active_decode_blocks), 0);
    char *urls[] = {"http://127.0.0.1:9003", "http://127.0.0.1:9001"};
    CHECK_INT(kvg_pool_set(&pool, urls, 2), 0);
    CHECK_INT((int)pool.n, 2);
    /* A list naming a worker twice is refused whole; the pool stays. */
    char *dup[] = {"http://127.0.0.1:9005", "http://127.0.0.1:9005/", "http://127.0.0.1:9006@1"};
    CHECK_INT(kvg_pool_find_duplicate(dup, 3), 1);
    CHECK_INT(kvg_pool_find_duplicate(dup + 1, 2), -1);
    CHECK_INT(kvg_pool_set(&pool, dup, 3), -EEXIST);
    CHECK_INT((int)pool.n, 2);
    kvg_pool_destroy(&pool);
}

TEST(circuit_breaker_states)
{
    struct kvg_cb_config cb;
    kvg_cb_config_default(&cb);
    cb.failure_threshold = 3;
    cb.success_threshold = 2;
    cb.timeout_ms = 100;
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9000", &w), 0);
    kvg_cb_record(&cb, w, 0, 0);
    kvg_cb_record(&cb, w, 0, 0);
    kvg_cb_record(&cb, w, 1, 0); /* a success resets the count */
    kvg_cb_record(&cb, w, 0, 0);
    kvg_cb_record(&cb, w, 0, 0);
    CHECK(kvg_cb_allows(&cb, w, 1));
    kvg_cb_record(&cb, w, 0, 10); /* third in a row: open */
    CHECK(!kvg_cb_allows(&cb, w, 50));
    CHECK(kvg_cb_allows(&cb, w, 111)); /* timeout passed: half-open */
    CHECK_INT(atomic_load(&w->cb_state), KVG_CB_HALF_OPEN);
    kvg_cb_record(&cb, w, 0, 120); /* a failure half-open reopens */
    CHECK(!kvg_cb_allows(&cb, w, 150));
    CHECK(kvg_cb_allows(&cb, w, 221));
    kvg_cb_record(&cb, w, 1, 222);
    kvg_cb_record(&cb, w, 1, 223);
    CHECK_INT(atomic_load(&w->cb_state), KVG_CB_CLOSED);
    kvg_worker_unref(w);
}

TEST(circuit_breaker_outlier_rule)
{
    CHECK(!kvg_cb_outlier(KVG_CB_MIN_ANSWERS - 1, KVG_CB_MIN_ANSWERS - 1, 20, 0)); /* too few */
    CHECK(!kvg_cb_outlier(20, 20, KVG_CB_MIN_ANSWERS - 1, 0));
    CHECK(!kvg_cb_outlier(20, 20, 20, 20)); /* everyone fails alike: the requests */
    CHECK(kvg_cb_outlier(20, 20, 20, 0));
    CHECK(kvg_cb_outlier(20, 16, 20, 6));  /* 80% against 30% */
    CHECK(!kvg_cb_outlier(20, 12, 20, 6)); /* 60% against 30% */
    CHECK(kvg_cb_outlier(20, 10, 20, 0));  /* exactly half */
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9000", &w), 0);
    for (int i = 0; i < 1000; i++) kvg_cb_note_answer(w, i % 4 == 0);
    uint32_t n, e;
    kvg_cb_answers(w, &n, &e);
    CHECK(n >= KVG_CB_WINDOW / 2 && n < KVG_CB_WINDOW); /* a window, not a total */
    CHECK(e >= n / 8 && e <= n / 2);
    kvg_worker_unref(w);
}

/* Picks on w by hand, as a request would, and ends them with `out`. */
static void answers(struct kvg_pool *pool, struct kvg_worker *w, enum kvg_outcome out, int times)
{
    for (int i = 0; i < times; i++) {
        struct kvg_pick pk = {.w = w};
        kvg_worker_ref(w);
        atomic_fetch_add(&w->in_flight, 1);
        kvg_pool_release(pool, &pk, out, NULL);
    }
}

TEST(circuit_breaker_judges_the_worker)
{
    struct kvg_policy *p = policy("round_robin");
    struct kvg_pool pool;
    struct kvg_cb_config cb;
    kvg_cb_config_default(&cb);
    cb.failure_threshold = 3;
    CHECK_INT(kvg_pool_init(&pool, p, &cb), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9001"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9002"), 0);
    struct kvg_worker *a = pool.w[0], *b = pool.w[1];
    CHECK_INT(kvg_pool_answer_outcome(500), KVG_OUT_ANSWER_ERROR);
    CHECK_INT(kvg_pool_answer_outcome(400), KVG_OUT_ANSWER_ERROR);
    CHECK_INT(kvg_pool_answer_outcome(503), KVG_OUT_FAIL);
    CHECK_INT(kvg_pool_answer_outcome(429), KVG_OUT_CLIENT_ERROR);
    CHECK_INT(kvg_pool_answer_outcome(200), KVG_OUT_OK);
    /* Bad requests to every worker: every share alike, no circuit opens. */
    for (int i = 0; i < 50; i++) {
        answers(&pool, a, KVG_OUT_ANSWER_ERROR, 1);
        answers(&pool, b, KVG_OUT_ANSWER_ERROR, 1);
    }
    CHECK_INT(atomic_load(&a->cb_state), KVG_CB_CLOSED);
    CHECK_INT(atomic_load(&b->cb_state), KVG_CB_CLOSED);
    /* b serves, a fails what b serves: a is the outlier and is ejected. */
    answers(&pool, b, KVG_OUT_OK, 60);
    answers(&pool, a, KVG_OUT_ANSWER_ERROR, 3);
    CHECK_INT(atomic_load(&a->cb_state), KVG_CB_OPEN);
    CHECK_INT(atomic_load(&b->cb_state), KVG_CB_CLOSED);
    /* The worker's own failures count as before. */
    answers(&pool, b, KVG_OUT_FAIL, 3);
    CHECK_INT(atomic_load(&b->cb_state), KVG_CB_OPEN);
    kvg_pool_destroy(&pool);
}
