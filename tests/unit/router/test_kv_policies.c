/* The KV-aware policies on hand-built workers and a hand-fed KV index:
 * Dynamo's cost, llm-d's scorers, sglang's cache_aware thresholds. */
#include "support/test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "router/policy.h"

#define NW 3
#define BS 16

static struct kvg_worker *W[NW];
static struct kvg_rng rng;

static void setup(void)
{
    kvg_rng_seed(&rng, 7);
    for (int i = 0; i < NW; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9100 + i);
        CHECK_INT(kvg_worker_new(url, &W[i]), 0);
        W[i]->slot = i;
    }
}

static void teardown(void)
{
    for (int i = 0; i < NW; i++) kvg_worker_unref(W[i]);
}

/* A prompt of n tokens starting at `base`, with its block hashes. */
static void prompt(uint32_t *toks, size_t n, uint32_t base, uint64_t *hashes, size_t *nh)
{
    for (size_t i = 0; i < n; i++) toks[i] = base + (uint32_t)i;
    *nh = (size_t)kvg_kv_hash_tokens(toks, n, BS, hashes, n / BS);
}

static struct kvg_route_ctx ctx_for(const uint32_t *toks, size_t n, const uint64_t *h, size_t nh)
{
    struct kvg_route_ctx c = {.tokens = toks,
                              .ntokens = n,
                              .block_hashes = h,
                              .nblocks = nh,
                              .block_size = BS,
                              .rng = &rng,
                              .now_ms = 1000,
                              .load_max_age_ms = 5000};
    return c;
}

/* Stores the blocks of toks[0..n) into the index for slot via a hand-made
 * BlockStored (the same path engine events take). */
static void index_store_on(struct kvg_kv_index *idx, uint32_t slot, const uint32_t *toks, size_t n,
                           const char *medium);

static void index_store(struct kvg_kv_index *idx, uint32_t slot, const uint32_t *toks, size_t n)
{
    index_store_on(idx, slot, toks, n, NULL);
}

/* The same on a memory tier (`medium`, NULL: none given, the GPU). */
static void index_store_on(struct kvg_kv_index *idx, uint32_t slot, const uint32_t *toks, size_t n,
                           const char *medium)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    /* encode one BlockStored with opaque engine hashes 1..k, then decode */
    size_t k = n / BS;
    char buf[65536];
    size_t len = 0;
    /* msgpack by hand: [ts, [["BlockStored", [h...], nil, [t...], BS]], 0] */
    buf[len++] = (char)0x93;
    buf[len++] = (char)0xcb;
    for (int i = 0; i < 8; i++) buf[len++] = 0;
    buf[len++] = (char)0x91;
    buf[len++] = (char)(medium ? 0x97 : 0x95);
    buf[len++] = (char)0xab;
    memcpy(buf + len, "BlockStored", 11);
    len += 11;
    buf[len++] = (char)0xdc;
    buf[len++] = (char)(k >> 8);
    buf[len++] = (char)k;
    for (size_t i = 0; i < k; i++) {
        buf[len++] = (char)0xcf;
        uint64_t h = 1000 * (slot + 1) + i + 1;
        for (int s = 7; s >= 0; s--) buf[len++] = (char)(h >> (s * 8));
    }
    buf[len++] = (char)0xc0;
    buf[len++] = (char)0xdd;
    uint32_t nt = (uint32_t)(k * BS);
    for (int s = 3; s >= 0; s--) buf[len++] = (char)(nt >> (s * 8));
    for (size_t i = 0; i < nt; i++) {
        buf[len++] = (char)0xce;
        for (int s = 3; s >= 0; s--) buf[len++] = (char)(toks[i] >> (s * 8));
    }
    buf[len++] = BS;
    if (medium) {
        buf[len++] = (char)0xc0; /* lora_id nil */
        buf[len++] = (char)(0xa0 | strlen(medium));
        memcpy(buf + len, medium, strlen(medium));
        len += strlen(medium);
    }
    buf[len++] = 0;
    CHECK_INT(kvg_kv_decode_batch(&b, buf, len), 1); /* one event */
    CHECK_INT(kvg_kv_index_apply(idx, slot, &b, NULL), 0);
    kvg_kv_batch_free(&b);
}

static struct kvg_kv_index *new_index(void)
{
    struct kvg_kv_index_opts o = {.block_size = BS, .max_workers = 8};
    struct kvg_kv_index *idx;
    CHECK_INT(kvg_kv_index_new(&o, &idx), 0);
    for (int i = 0; i < NW; i++) CHECK_INT(kvg_kv_index_add_worker(idx, (uint32_t)i), 0);
    return idx;
}

/* Worker 1 holds all 100 blocks of a 1,600-token prompt; f->o points the
 * policies at that index. f->idx is the caller's to free. */
struct held {
    struct kvg_kv_index *idx;
    uint32_t toks[1600];
    uint64_t h[100];
    size_t nh;
    struct kvg_policy_opts o;
};

static void held_prompt(struct held *f)
{
    f->idx = new_index();
    prompt(f->toks, 1600, 5, f->h, &f->nh);
    index_store(f->idx, 1, f->toks, 1600);
    kvg_policy_opts_default(&f->o);
    f->o.kv = f->idx;
}

TEST(kv_aware_prefers_the_cached_worker_unless_it_is_busy)
{
    setup();
    static struct held f;
    held_prompt(&f);
    struct kvg_policy_opts o = f.o;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    struct kvg_route_ctx c = ctx_for(f.toks, 1600, f.h, f.nh);
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 1);
    CHECK_NEAR(sc[1].matched_blocks, 100, 0);
    CHECK_NEAR(sc[0].prefill_blocks, 100, 1e-9);
    /* cost = w * prefill + decode: worker 1 busy with 250 decode blocks loses
     * to an idle worker (100 prefill + 100 new blocks = 200 < 250). */
    atomic_store(&W[1]->active_decode_blocks, 250);
    CHECK(p->ops->select(p, W, NW, &c, &ex) != 1);
    /* A higher overlap weight makes the cache win again (w=2: 400 vs 250). */
    p->ops->destroy(p);
    o.overlap_weight = 2;
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 1);
    p->ops->destroy(p);
    kvg_kv_index_free(f.idx);
    teardown();
}

TEST(kv_aware_approximate_mode_remembers_its_routing)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o); /* no index: approximate */
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    uint32_t toks[640];
    uint64_t h[40];
    size_t nh;
    prompt(toks, 640, 9, h, &nh);
    struct kvg_route_ctx c = ctx_for(toks, 640, h, nh);
    int first = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 0; i < 5; i++) CHECK_INT(p->ops->select(p, W, NW, &c, NULL), first);
    /* Past the TTL the record is gone: no more preference (cost ties). */
    c.now_ms += 121000;
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    p->ops->select(p, W, NW, &c, &ex);
    CHECK_NEAR(sc[first].matched_blocks, 0, 0);
    p->ops->destroy(p);
    teardown();
}

TEST(score_presets_follow_llmd)
{
    setup();
    struct kvg_kv_index *idx = new_index();
    uint32_t toks[320];
    uint64_t h[20];
    size_t nh;
    prompt(toks, 320, 77, h, &nh);
    index_store(idx, 2, toks, 320);
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.kv = idx;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("precise", &o, &p), 0);
    for (int i = 0; i < NW; i++)
        W[i]->load =
            (struct kvg_engine_load){.waiting = 0, .running = 1, .kv_usage = 0.2, .at_ms = 990};
    struct kvg_route_ctx c = ctx_for(toks, 320, h, nh);
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 2);
    /* prefix 3*1 + queue 2*1 (all equal) + kv 2*0.8 */
    CHECK_NEAR(sc[2].score, 3 + 2 + 1.6, 1e-9);
    CHECK_NEAR(sc[0].score, 0 + 2 + 1.6, 1e-9);
    /* Queue scorer: (maxQ - q) / (maxQ - minQ); worker 2 deep in queue loses
     * the queue points but keeps the prefix: 3 + 0 + 1.6 vs 0 + 2 + 1.6. */
    W[2]->load.waiting = 30;
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 2);
    /* Stale metrics count as the worst queue and no KV headroom. */
    W[2]->load.waiting = 0;
    W[2]->load.at_ms = 1;
    c.now_ms = 6000;
    W[0]->load.at_ms = W[1]->load.at_ms = 5990;
    p->ops->select(p, W, NW, &c, &ex);
    CHECK_NEAR(sc[2].score, 3 + 0 + 0, 1e-9);
    p->ops->destroy(p);
    /* load: queue + kv only, no prefix. */
    CHECK_INT(kvg_policy_new("load", &o, &p), 0);
    W[2]->load.at_ms = 5990;
    W[0]->load.kv_usage = 0.9;
    W[1]->load.waiting = 3;
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 2);
    p->ops->destroy(p);
    kvg_kv_index_free(idx);
    teardown();
}

TEST(estimated_learns_from_its_own_routing)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("estimated", &o, &p), 0);
    for (int i = 0; i < NW; i++)
        W[i]->load =
            (struct kvg_engine_load){.waiting = 0, .running = 0, .kv_usage = 0, .at_ms = 1000};
    uint32_t toks[320];
    uint64_t h[20];
    size_t nh;
    prompt(toks, 320, 3, h, &nh);
    struct kvg_route_ctx c = ctx_for(toks, 320, h, nh);
    int first = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 0; i < 4; i++) CHECK_INT(p->ops->select(p, W, NW, &c, NULL), first);
    p->ops->destroy(p);
    teardown();
}

TEST(cache_aware_thresholds_and_imbalance)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.cache_threshold = 0.5;
    o.balance_abs = 4;
    o.balance_rel = 1.5;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("cache_aware", &o, &p), 0);
    struct kvg_route_ctx c = {.rng = &rng, .now_ms = 1000, .model = KVG_STR("m")};
    const char *t1 = "abcdefghij"; /* 10 characters */
    c.text = t1;
    c.text_len = 10;
    int w = p->ops->select(p, W, NW, &c, NULL);
    /* A request sharing 6 of 10 characters (0.6 > 0.5): same worker. */
    c.text = "abcdefXXXX";
    atomic_store(&W[w]->in_flight, 1); /* not imbalanced (abs 4) */
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), w);
    /* Exactly at the threshold (5 of 10 = 0.5) is a miss: least loaded. */
    c.text = "abcdeZZZZZ";
    CHECK(p->ops->select(p, W, NW, &c, NULL) != w);
    /* Unicode: characters, not bytes. "ééééé" + 5 new characters: 5/10. */
    c.text = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    c.text_len = 12;
    int u = p->ops->select(p, W, NW, &c, NULL);
    c.text = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9xyz"; /* 4 of 7 chars = 0.57 (bytes: 8/11) */
    c.text_len = 11;
    CHECK_INT(p->ops->select(p, W, NW, &c, NULL), u);
    /* Imbalance: (max - min) > 4 and max > min * 1.5 -> least loaded. */
    c.text = t1;
    c.text_len = 10;
    atomic_store(&W[w]->in_flight, 10);
    for (int i = 0; i < NW; i++)
        if (i != w) atomic_store(&W[i]->in_flight, 1);
    CHECK(p->ops->select(p, W, NW, &c, NULL) != w);
    p->ops->destroy(p);
    teardown();
}

TEST(prefix_affinity_keeps_places_and_spills)
{
    setup();
    static struct held f;
    held_prompt(&f);
    struct kvg_policy_opts o = f.o;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), 0);
    struct kvg_route_ctx c = ctx_for(f.toks, 1600, f.h, f.nh);
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    /* A hit stays with its holder while the holder is within 2 x mean + 1:
     * 3 in flight against a mean of 1 is exactly at the bound. */
    atomic_store(&W[1]->in_flight, 3);
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 1);
    CHECK_NEAR(sc[1].matched_blocks, 100, 0);
    CHECK(strstr(ex.note, "hit"));
    /* Past it (6 > 2 x 7/3 + 1), the least loaded takes it: a spill. */
    atomic_store(&W[1]->in_flight, 6);
    atomic_store(&W[2]->in_flight, 1);
    int sp = p->ops->select(p, W, NW, &c, &ex);
    CHECK_INT(sp, 0);
    CHECK(strstr(ex.note, "spill"));
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->in_flight, 0);
    /* A spill placed a copy on worker sp (placements 1, 0, 0 or 0, 0, 1). A new prefix
     * goes to a worker within one placement of the mean (the one its first
     * block ranks first, the same on every replica: test_replicas.c), so
     * the counts never run apart. Under half the prompt held is a miss too. */
    int count[NW] = {0};
    for (uint32_t k = 0; k < 5; k++) {
        uint32_t t2[160];
        uint64_t h2[10];
        size_t n2;
        prompt(t2, 160, 100000 + 1000 * k, h2, &n2);
        struct kvg_route_ctx c2 = ctx_for(t2, 160, h2, n2);
        int w = p->ops->select(p, W, NW, &c2, &ex);
        CHECK(strstr(ex.note, "miss"));
        double mean = 0;
        for (int i = 0; i < NW; i++) mean += sc[i].score / NW;
        CHECK(w >= 0 && sc[w].score <= mean + 1 + 1e-9);
        count[w]++;
    }
    CHECK_INT(count[0] + count[1] + count[2], 5);
    /* Explaining (dry run) places nothing: the counts stay as they are. */
    uint32_t t3[160];
    uint64_t h3[10];
    size_t n3;
    prompt(t3, 160, 900000, h3, &n3);
    struct kvg_route_ctx c3 = ctx_for(t3, 160, h3, n3);
    c3.dry_run = 1;
    double before[NW];
    p->ops->select(p, W, NW, &c3, &ex);
    for (int i = 0; i < NW; i++) before[i] = sc[i].score;
    CHECK_NEAR(before[0] + before[1] + before[2], 6, 1e-9);
    CHECK_NEAR(before[sp], 1 + count[sp], 1e-9);
    for (int i = 0; i < 3; i++) p->ops->select(p, W, NW, &c3, &ex);
    for (int i = 0; i < NW; i++) CHECK_NEAR(sc[i].score, before[i], 1e-9);
    /* Placements fade (half-life 10 minutes) and a removed worker's are
     * forgotten. */
    c3.now_ms += 600 * 1000;
    p->ops->select(p, W, NW, &c3, &ex);
    for (int i = 0; i < NW; i++) CHECK_NEAR(sc[i].score, before[i] / 2, 1e-9);
    p->ops->on_remove(p, W[2]);
    p->ops->select(p, W, NW, &c3, &ex);
    CHECK_NEAR(sc[2].score, 0, 1e-9);
    p->ops->destroy(p);
    /* Options out of range are refused. */
    o.affinity_load_bound = 0.5;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), KVG_ECONFIG);
    o.affinity_load_bound = 2;
    o.affinity_min_match = 1.5;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), KVG_ECONFIG);
    kvg_kv_index_free(f.idx);
    teardown();
}

TEST(prefix_affinity_approximate_mode_remembers_its_routing)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o); /* no index: what the router sent where */
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), 0);
    uint32_t toks[640];
    uint64_t h[40];
    size_t nh;
    prompt(toks, 640, 9, h, &nh);
    struct kvg_route_ctx c = ctx_for(toks, 640, h, nh);
    int first = p->ops->select(p, W, NW, &c, NULL);
    for (int i = 0; i < 5; i++) CHECK_INT(p->ops->select(p, W, NW, &c, NULL), first);
    p->ops->destroy(p);
    teardown();
}

/* LoRA-aware routing, one cost term in both policies: a worker with the
 * request's adapter loaded (its vllm:lora_requests_info, or kvgate just
 * routed that adapter there) pays nothing; a cold load costs
 * lora_load_cost prefill blocks, twice when the worker's slots are full;
 * past lora_max_workers holders each further worker also pays the prompt. */
TEST(lora_loaded_worker_preferred_cold_load_costs_spread_bounded)
{
    setup();
    struct kvg_kv_index *idx = new_index();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.kv = idx;
    uint32_t toks[320];
    uint64_t h[20];
    size_t nh;
    prompt(toks, 320, 3, h, &nh);
    struct kvg_route_ctx c = ctx_for(toks, 320, h, nh);
    c.lora = KVG_STR("sql");
    for (int i = 0; i < NW; i++) {
        W[i]->lora_at_ms = 990;
        W[i]->lora_max = 4;
    }
    snprintf(W[0]->lora_active, sizeof W[0]->lora_active, "a,b,c,d"); /* slots full */
    snprintf(W[1]->lora_active, sizeof W[1]->lora_active, "%s", "");
    snprintf(W[2]->lora_active, sizeof W[2]->lora_active, "chat,sql");
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 2);
    CHECK_NEAR(sc[2].lora_cost, 0, 0);
    CHECK_NEAR(sc[1].lora_cost, 16, 1e-9);
    CHECK_NEAR(sc[0].lora_cost, 32, 1e-9);
    /* Busy enough, the holder loses to a cold load (20 + 20 + 16 < 60). */
    atomic_store(&W[2]->active_decode_blocks, 60);
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 1);
    /* Once two workers hold it (bound 2), a third pays the prompt too: both
     * holders at 30 decode blocks cost 70; the cold worker (slots free)
     * 20 + 20 + 16 = 56 unbounded, 76 past the bound. */
    W[0]->lora_active[0] = 0;
    snprintf(W[1]->lora_active, sizeof W[1]->lora_active, "sql");
    atomic_store(&W[1]->active_decode_blocks, 30);
    atomic_store(&W[2]->active_decode_blocks, 30);
    CHECK(p->ops->select(p, W, NW, &c, &ex) != 0);
    CHECK_NEAR(sc[0].lora_cost, 16 + 20, 1e-9);
    p->ops->destroy(p);
    o.lora_max_workers = 0; /* unbounded: the cold worker wins */
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 0);
    o.lora_max_workers = 2;
    /* A base-model request pays no LoRA cost anywhere. */
    c.lora = (struct kvg_str){0};
    for (int i = 0; i < NW; i++) sc[i].lora_cost = -1;
    p->ops->select(p, W, NW, &c, &ex);
    for (int i = 0; i < NW; i++) CHECK_NEAR(sc[i].lora_cost, -1, 0);
    p->ops->destroy(p);
    for (int i = 0; i < NW; i++) atomic_store(&W[i]->active_decode_blocks, 0);

    /* score: the LoRA scorer b / (b + cost) prefers the holder. */
    c.lora = KVG_STR("sql");
    snprintf(W[1]->lora_active, sizeof W[1]->lora_active, "%s", "");
    CHECK_INT(kvg_policy_new("precise", &o, &p), 0);
    for (int i = 0; i < NW; i++)
        W[i]->load =
            (struct kvg_engine_load){.waiting = 0, .running = 1, .kv_usage = 0.2, .at_ms = 990};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 2);
    CHECK_NEAR(sc[1].score + 16.0 / 36.0, sc[2].score, 1e-9);
    p->ops->destroy(p);

    /* No metrics at all: what kvgate routed itself counts as loaded. */
    for (int i = 0; i < NW; i++) W[i]->lora_at_ms = 0;
    kvg_worker_lora_sent(W[0], "sql", 3, 995);
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 0);
    CHECK_NEAR(sc[0].lora_cost, 0, 0);
    p->ops->destroy(p);
    kvg_kv_index_free(idx);
    teardown();
}

/* Tiers in the cost: a GPU hit skips prefill, a host-memory (CPU) hit costs
 * host_tier_cost of it, a miss all of it; GPU > host > miss in both the
 * kv_aware cost and the precise score. */
TEST(host_tier_hit_is_a_partial_prefill)
{
    setup();
    struct kvg_kv_index *idx = new_index();
    uint32_t toks[320];
    uint64_t h[20];
    size_t nh;
    prompt(toks, 320, 11, h, &nh);
    index_store_on(idx, 0, toks, 320, "GPU");
    index_store_on(idx, 1, toks, 320, "CPU");
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.kv = idx;
    o.host_tier_cost = 0.25;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
    struct kvg_route_ctx c = ctx_for(toks, 320, h, nh);
    struct kvg_route_score sc[NW];
    struct kvg_route_explain ex = {.scores = sc};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 0);
    CHECK_NEAR(sc[0].prefill_blocks, 0, 1e-9);
    CHECK_NEAR(sc[1].prefill_blocks, 20 * 0.25, 1e-9); /* the transfer */
    CHECK_NEAR(sc[2].prefill_blocks, 20, 1e-9);
    CHECK_NEAR(sc[1].matched_blocks, 20, 0);
    CHECK_NEAR(sc[1].decode_blocks, 0, 1e-9); /* its blocks are held */
    /* Without the GPU holder, the CPU holder beats the miss. */
    CHECK_INT(p->ops->select(p, W + 1, 2, &c, &ex), 0);
    p->ops->destroy(p);
    /* The default, from PCIe bandwidth and prefill speed: small, not 0. */
    CHECK(KVG_POLICY_HOST_TIER_COST > 0.01 && KVG_POLICY_HOST_TIER_COST < 0.1);

    o.prefix_minmax = 0;
    CHECK_INT(kvg_policy_new("precise", &o, &p), 0);
    for (int i = 0; i < NW; i++)
        W[i]->load =
            (struct kvg_engine_load){.waiting = 0, .running = 1, .kv_usage = 0.2, .at_ms = 990};
    CHECK_INT(p->ops->select(p, W, NW, &c, &ex), 0);
    CHECK_NEAR(sc[0].score - sc[1].score, 3 * 0.25, 1e-9);
    CHECK_NEAR(sc[1].score - sc[2].score, 3 * 0.75, 1e-9);
    p->ops->destroy(p);
    kvg_kv_index_free(idx);
    teardown();
}

/* Issue 13 section 4: four long shared prefixes, interleaved, on two
 * engines that each keep two of them (an LRU of prompts). Every new prefix
 * ties on cost; broken at random, three or four land on one engine and evict
 * each other. Broken by placements, they split two and two and every repeat
 * finds its prefix cached, whatever the seed. */
TEST(kv_aware_ties_spread_interleaved_prefixes)
{
    setup();
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o); /* no index: approximate */
    enum { G = 4, ROUNDS = 13, PLEN = 1024 };
    static uint32_t toks[G][PLEN];
    static uint64_t h[G][PLEN / BS];
    size_t nh[G];
    for (int g = 0; g < G; g++) prompt(toks[g], PLEN, 100000u * (g + 1), h[g], &nh[g]);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        kvg_rng_seed(&rng, seed);
        struct kvg_policy *p;
        CHECK_INT(kvg_policy_new("kv_aware", &o, &p), 0);
        int lru[2][2] = {{-1, -1}, {-1, -1}}; /* each engine's two newest prefixes */
        int hits = 0, first[G];
        for (int r = 0; r < ROUNDS; r++) {
            for (int g = 0; g < G; g++) {
                struct kvg_route_ctx c = ctx_for(toks[g], PLEN, h[g], nh[g]);
                c.now_ms = 1000 + (uint64_t)(r * G + g) * 100;
                int w = p->ops->select(p, W, 2, &c, NULL);
                CHECK(w == 0 || w == 1);
                if (r == 0) first[g] = w;
                CHECK_INT(w, first[g]); /* a repeat goes where its prefix went */
                if (r > 0) hits += lru[w][0] == g || lru[w][1] == g;
                if (lru[w][0] != g) {
                    lru[w][1] = lru[w][0];
                    lru[w][0] = g;
                }
            }
        }
        CHECK_INT(hits, G * (ROUNDS - 1)); /* 48 of 48 */
        p->ops->destroy(p);
    }
    teardown();
}
