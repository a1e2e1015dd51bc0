/* kvg_pool_place: a prompt cached on a worker that no pick sent it to (a
 * prewarm's replay) is remembered as a pick of that worker would be, so the
 * policies that keep their own routing history send its traffic there; with
 * the precise index (engine KV events) no block is recorded twice (the
 * events tell), though prefix_affinity still counts the placement; and
 * replicas of prefix_affinity place new prefixes alike. */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "router/pool.h"

#define BS 16
#define NT 64 /* tokens per prompt: 4 full blocks */
#define URL_A "http://127.0.0.1:9201"
#define URL_B "http://127.0.0.1:9202"

struct prompt {
    uint32_t toks[NT];
    uint64_t h[NT / BS];
    char text[NT + 1];
    struct kvg_route_ctx ctx;
};

static struct kvg_rng rng;

/* A prompt of NT tokens (and as many characters) from `base`, not dry run. */
static void make_prompt(struct prompt *p, uint32_t base)
{
    for (size_t i = 0; i < NT; i++) {
        p->toks[i] = base + (uint32_t)i;
        p->text[i] = (char)('a' + (base + i) % 26);
    }
    p->text[NT] = 0;
    int nh = kvg_kv_hash_tokens(p->toks, NT, BS, p->h, NT / BS);
    CHECK_INT(nh, NT / BS);
    p->ctx = (struct kvg_route_ctx){.text = p->text,
                                    .text_len = NT,
                                    .tokens = p->toks,
                                    .ntokens = NT,
                                    .block_hashes = p->h,
                                    .nblocks = (size_t)nh,
                                    .block_size = BS,
                                    .rng = &rng,
                                    .now_ms = 1000,
                                    .load_max_age_ms = 5000};
}

static void pool_of(struct kvg_pool *pool, const char *policy, struct kvg_kv_index *kv)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.block_size = BS;
    o.kv = kv;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new(policy, &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(pool, URL_A), 0);
    CHECK_INT(kvg_pool_add(pool, URL_B), 0);
}

/* The worker a dry-run pick of p chooses (its url), and the matched blocks
 * the policy saw on each worker (-1 when it does not report them). */
static const char *dry_pick(struct kvg_pool *pool, struct prompt *p, double *mb_a, double *mb_b)
{
    static const char *const urls[] = {URL_A, URL_B};
    struct kvg_route_score scores[2];
    struct kvg_worker *cands[2];
    struct kvg_route_explain ex = {.scores = scores, .cands = cands};
    struct kvg_pick pk = {0};
    int known = 0;
    p->ctx.dry_run = 1;
    int rc = kvg_pool_pick(pool, &p->ctx, NULL, 0, &pk, &known, &ex);
    p->ctx.dry_run = 0;
    CHECK_INT(rc, 0);
    if (rc) return "";
    const char *chosen = !strcmp(pk.w->url, URL_A) ? urls[0] : urls[1];
    kvg_worker_unref(pk.w);
    *mb_a = *mb_b = -2;
    for (size_t i = 0; i < ex.n; i++) {
        if (!strcmp(cands[i]->url, URL_A)) *mb_a = scores[i].matched_blocks;
        if (!strcmp(cands[i]->url, URL_B)) *mb_b = scores[i].matched_blocks;
        kvg_worker_unref(cands[i]);
    }
    return chosen;
}

/* A real pick of p: its worker's url (the pick released at once). */
static const char *real_pick(struct kvg_pool *pool, struct prompt *p)
{
    struct kvg_pick pk = {0};
    int known = 0;
    CHECK_INT(kvg_pool_pick(pool, &p->ctx, NULL, 0, &pk, &known, NULL), 0);
    if (!pk.w) return "";
    const char *u = !strcmp(pk.w->url, URL_A) ? URL_A : URL_B;
    kvg_pool_release(pool, &pk, KVG_OUT_OK, &p->ctx);
    return u;
}

TEST(prefix_affinity_prefers_the_worker_a_prefix_was_placed_on)
{
    kvg_rng_seed(&rng, 11);
    struct kvg_pool pool;
    pool_of(&pool, "prefix_affinity", NULL);
    struct prompt y, x, u, v;
    make_prompt(&y, 1000);
    make_prompt(&x, 5000);
    make_prompt(&u, 9000);
    make_prompt(&v, 13000);
    /* y lands on h (a miss), u and v are placed there too: h has three
     * placements, past the mean + 1, so x, new, would go to o. */
    const char *h = real_pick(&pool, &y);
    const char *o = !strcmp(h, URL_A) ? URL_B : URL_A;
    CHECK_INT(kvg_pool_place(&pool, h, &u.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, h, &v.ctx), 0);
    double ma, mb;
    CHECK_STR(dry_pick(&pool, &x, &ma, &mb), o);
    CHECK(ma == 0 && mb == 0);
    /* x replayed straight to h: placed there, it is h's (a hit), every time. */
    CHECK_INT(kvg_pool_place(&pool, h, &x.ctx), 0);
    CHECK_STR(dry_pick(&pool, &x, &ma, &mb), h);
    CHECK_NEAR(!strcmp(h, URL_A) ? ma : mb, NT / BS, 1e-9);
    CHECK_NEAR(!strcmp(h, URL_A) ? mb : ma, 0, 1e-9);
    for (int i = 0; i < 5; i++) CHECK_STR(real_pick(&pool, &x), h);
    CHECK_INT(kvg_pool_place(&pool, "http://127.0.0.1:9299", &x.ctx), KVG_ENOTFOUND);
    kvg_pool_destroy(&pool);
}

TEST(prefix_affinity_placement_counts_as_a_pick_does)
{
    kvg_rng_seed(&rng, 12);
    struct kvg_pool pool;
    pool_of(&pool, "prefix_affinity", NULL);
    struct prompt x, y, z, w, u, v;
    make_prompt(&x, 100);
    make_prompt(&y, 2000);
    make_prompt(&z, 4000);
    make_prompt(&w, 8000);
    make_prompt(&u, 12000);
    make_prompt(&v, 16000);
    /* x on A three times: one placement (then A holds it, as a hit's pick
     * places nothing); y, z, u and v on B: four, past the mean + 1. A new
     * prefix goes to A. */
    for (int i = 0; i < 3; i++) CHECK_INT(kvg_pool_place(&pool, URL_A, &x.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, URL_B, &y.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, URL_B, &z.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, URL_B, &u.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, URL_B, &v.ctx), 0);
    double ma, mb;
    CHECK_STR(dry_pick(&pool, &w, &ma, &mb), URL_A);
    CHECK_STR(dry_pick(&pool, &y, &ma, &mb), URL_B);
    kvg_pool_destroy(&pool);
}

TEST(every_policy_with_routing_history_learns_a_placement)
{
    static const char *const names[] = {"prefix_affinity", "kv_aware", "estimated",
                                        "predicted_latency", "session_affinity"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        kvg_rng_seed(&rng, 13);
        struct kvg_pool pool;
        pool_of(&pool, names[k], NULL);
        struct prompt x;
        make_prompt(&x, 300);
        double ma, mb;
        dry_pick(&pool, &x, &ma, &mb);
        CHECK(ma <= 0 && mb <= 0);
        CHECK_INT(kvg_pool_place(&pool, URL_B, &x.ctx), 0);
        const char *c = dry_pick(&pool, &x, &ma, &mb);
        printf("# %s: after placing on B, picks %s (matched A %.0f, B %.0f)\n", names[k], c, ma,
               mb);
        CHECK_STR(c, URL_B);
        CHECK_NEAR(mb, NT / BS, 1e-9);
        kvg_pool_destroy(&pool);
    }
}

TEST(cache_aware_learns_a_placement_by_its_text)
{
    kvg_rng_seed(&rng, 14);
    struct kvg_pool pool;
    pool_of(&pool, "cache_aware", NULL);
    struct prompt x;
    make_prompt(&x, 7);
    CHECK_INT(kvg_pool_place(&pool, URL_B, &x.ctx), 0);
    double ma, mb;
    for (int i = 0; i < 5; i++) CHECK_STR(dry_pick(&pool, &x, &ma, &mb), URL_B);
    kvg_pool_destroy(&pool);
}

TEST(with_engine_events_a_placement_records_nothing)
{
    static const char *const names[] = {"prefix_affinity", "kv_aware", "predicted_latency"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        kvg_rng_seed(&rng, 15);
        struct kvg_kv_index_opts io = {.block_size = BS, .max_workers = 8};
        struct kvg_kv_index *idx;
        CHECK_INT(kvg_kv_index_new(&io, &idx), 0);
        for (uint32_t s = 0; s < 2; s++) CHECK_INT(kvg_kv_index_add_worker(idx, s), 0);
        struct kvg_pool pool;
        pool_of(&pool, names[k], idx);
        struct prompt x;
        make_prompt(&x, 900);
        CHECK_INT(kvg_pool_place(&pool, URL_B, &x.ctx), 0);
        double ma, mb;
        dry_pick(&pool, &x, &ma, &mb);
        CHECK(ma == 0 && mb == 0); /* only B's own events would say it holds x */
        kvg_pool_destroy(&pool);
        kvg_kv_index_free(idx);
    }
}

TEST(with_engine_events_prefix_affinity_still_counts_the_placement)
{
    kvg_rng_seed(&rng, 16);
    struct kvg_kv_index_opts io = {.block_size = BS, .max_workers = 8};
    struct kvg_kv_index *idx;
    CHECK_INT(kvg_kv_index_new(&io, &idx), 0);
    for (uint32_t s = 0; s < 2; s++) CHECK_INT(kvg_kv_index_add_worker(idx, s), 0);
    struct kvg_pool pool;
    pool_of(&pool, "prefix_affinity", idx);
    struct prompt y, x, z, w, u, v;
    make_prompt(&y, 100);
    make_prompt(&x, 2000);
    make_prompt(&z, 4000);
    make_prompt(&w, 8000);
    make_prompt(&u, 12000);
    make_prompt(&v, 16000);
    /* y picked onto h (one placement); x, z, u and v placed on o (four, as
     * four misses routed there would count, past the mean + 1): a new
     * prefix now goes to h. The count is the router's own: no engine event
     * carries it. */
    const char *h = real_pick(&pool, &y);
    const char *o = !strcmp(h, URL_A) ? URL_B : URL_A;
    CHECK_INT(kvg_pool_place(&pool, o, &x.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, o, &z.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, o, &u.ctx), 0);
    CHECK_INT(kvg_pool_place(&pool, o, &v.ctx), 0);
    double ma, mb;
    CHECK_STR(dry_pick(&pool, &w, &ma, &mb), h);
    kvg_pool_destroy(&pool);
    kvg_kv_index_free(idx);
}

/* prefix_affinity run by several kvgate replicas, each routing alone (its
 * own in-flight counts and, without engine events, its own routing history):
 * a new prefix goes to the same worker whichever replica sees it first, the
 * prefixes still spread evenly, and a holder the engine says is busy is left
 * even when this replica sent it nothing (bench/results/fleet.md). */
#define NW 4
#define NREP 3
#define NPFX 40

/* Four workers (replicas' tests below), prefix_affinity in approximate mode. */
static void pool_of4(struct kvg_pool *pool)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.block_size = BS;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    for (int i = 0; i < NW; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9301 + i);
        CHECK_INT(kvg_pool_add(pool, url), 0);
    }
}

/* The slot of the worker a real pick chooses (released at once). */
static int pick_slot(struct kvg_pool *pool, struct prompt *p)
{
    struct kvg_pick pk = {0};
    int known = 0;
    CHECK_INT(kvg_pool_pick(pool, &p->ctx, NULL, 0, &pk, &known, NULL), 0);
    if (!pk.w) return -1;
    int s = pk.w->slot;
    kvg_pool_release(pool, &pk, KVG_OUT_OK, &p->ctx);
    return s;
}

TEST(replicas_place_a_new_prefix_alike_and_evenly)
{
    kvg_rng_seed(&rng, 21);
    static struct prompt pr[NPFX];
    for (int k = 0; k < NPFX; k++) make_prompt(&pr[k], 1000u * (uint32_t)(k + 1));
    static struct kvg_pool pools[NREP];
    int where[NREP][NPFX];
    for (int r = 0; r < NREP; r++) {
        pool_of4(&pools[r]);
        /* Each replica meets the prefixes in an order of its own. */
        int count[NW] = {0};
        for (int i = 0; i < NPFX; i++) {
            int k = (i * 7 + r * 13) % NPFX;
            where[r][k] = pick_slot(&pools[r], &pr[k]);
            CHECK(where[r][k] >= 0 && where[r][k] < NW);
            if (where[r][k] >= 0 && where[r][k] < NW) count[where[r][k]]++;
        }
        /* Placed within one of the mean: none past 11 of 40 over 4. */
        for (int w = 0; w < NW; w++) CHECK(count[w] >= NPFX / NW - 3 && count[w] <= NPFX / NW + 1);
        /* Its own history holds them: every prefix now stays put. */
        for (int k = 0; k < NPFX; k++) CHECK_INT(pick_slot(&pools[r], &pr[k]), where[r][k]);
    }
    int agree = 0;
    for (int k = 0; k < NPFX; k++)
        agree += where[0][k] == where[1][k] && where[1][k] == where[2][k];
    printf("# %d of %d prefixes on the same worker in all %d replicas\n", agree, NPFX, NREP);
    /* By chance (the fewest placed, ties at random) 1 in 16 would be. */
    CHECK(agree >= NPFX / 2);
    for (int r = 0; r < NREP; r++) kvg_pool_destroy(&pools[r]);
}

TEST(a_holder_the_engine_says_is_busy_is_left)
{
    kvg_rng_seed(&rng, 22);
    struct kvg_pool pool;
    pool_of4(&pool);
    struct prompt x;
    make_prompt(&x, 777);
    int h = pick_slot(&pool, &x);
    CHECK(h >= 0);
    CHECK_INT(pick_slot(&pool, &x), h);
    /* Other replicas sent h 12 requests: nothing in flight here, but the
     * engine's fresh metrics say so, past 2 x the mean (3) + 1. */
    struct kvg_worker *w = pool.w[0]->slot == h ? pool.w[0] : NULL;
    for (size_t i = 0; i < pool.n; i++)
        if (pool.w[i]->slot == h) w = pool.w[i];
    CHECK(w != NULL);
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->load.waiting = 8;
    w->load.running = 4;
    w->load.at_ms = 1000;
    pthread_mutex_unlock(&w->mu);
    int s = pick_slot(&pool, &x);
    CHECK(s >= 0 && s != h);
    /* Stale metrics (older than load_max_age_ms) are not believed: h is a
     * holder again (as is the worker the spill placed a copy on). */
    x.ctx.now_ms = 1000 + 6000;
    w->load.waiting = 80;
    int again = pick_slot(&pool, &x);
    CHECK(again == h || again == s);
    kvg_pool_destroy(&pool);
}

TEST(a_replica_adds_its_own_picks_to_a_stale_engine_sample)
{
    kvg_rng_seed(&rng, 23);
    struct kvg_pool pool;
    pool_of4(&pool);
    struct prompt x, v[6];
    make_prompt(&x, 4242);
    for (int i = 0; i < NW; i++) CHECK_INT(kvg_pool_place(&pool, pool.w[i]->url, &x.ctx), 0);
    /* The last sample (other replicas' requests): w[0] runs 2, the rest 4. */
    for (int i = 0; i < NW; i++) {
        pthread_mutex_lock(&pool.w[i]->mu);
        pool.w[i]->load.waiting = 0;
        pool.w[i]->load.running = i ? 4 : 2;
        pool.w[i]->load.at_ms = 1000;
        pool.w[i]->load.inflight_at = 0;
        pthread_mutex_unlock(&pool.w[i]->mu);
    }
    /* A burst before the next sample: 6 prompts on x's first 3 blocks, each
     * a hit on every worker. Counted on the sample, w[0] takes 2 and then
     * every worker one each in turn (2 + 3 = 4 + 1); on the sample alone it
     * looked the idlest until this replica's own 4 in flight passed it. */
    struct kvg_pick pk[6];
    int count[NW] = {0};
    for (int k = 0; k < 6; k++) {
        v[k] = x;
        for (size_t i = 3 * BS; i < NT; i++) v[k].toks[i] = 200000 + (uint32_t)(k * NT + i);
        CHECK_INT(kvg_kv_hash_tokens(v[k].toks, NT, BS, v[k].h, NT / BS), NT / BS);
        v[k].ctx.tokens = v[k].toks;
        v[k].ctx.block_hashes = v[k].h;
        int known = 0;
        pk[k] = (struct kvg_pick){0};
        CHECK_INT(kvg_pool_pick(&pool, &v[k].ctx, NULL, 0, &pk[k], &known, NULL), 0);
        for (int i = 0; i < NW; i++) count[i] += pk[k].w == pool.w[i];
    }
    CHECK_INT(count[0], 3);
    for (int i = 1; i < NW; i++) CHECK_INT(count[i], 1);
    for (int k = 0; k < 6; k++)
        if (pk[k].w) kvg_pool_release(&pool, &pk[k], KVG_OUT_OK, &v[k].ctx);
    kvg_pool_destroy(&pool);
}
