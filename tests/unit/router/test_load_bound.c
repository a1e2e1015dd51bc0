/* prefix_affinity's load bound (src/router/policy_prefix_affinity.c): a
 * worker holding the prompt keeps it while its load is at most bound x the
 * candidates' mean + 1; past it the least loaded candidate takes the
 * request. The load is the replica's own in-flight count or the engine's
 * sample plus this replica's picks since, whichever says more
 * (kvg_policy_engine_load), so replicas that share the sample apply the
 * bound alike. Exact boundaries, ties, the bound at low load and a
 * replica's own picks on a sample (bench/results/fleet.md, "a load bound"). */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "kv/hash.h"
#include "router/pool.h"

#define BS 16
#define NT 64 /* tokens per prompt: 4 full blocks */
#define NW 4

static struct kvg_rng rng;
static uint32_t toks[NT];
static uint64_t hashes[NT / BS];

static struct kvg_route_ctx prompt_ctx(void)
{
    for (size_t i = 0; i < NT; i++) toks[i] = 5000 + (uint32_t)i;
    CHECK_INT(kvg_kv_hash_tokens(toks, NT, BS, hashes, NT / BS), NT / BS);
    return (struct kvg_route_ctx){.tokens = toks,
                                  .ntokens = NT,
                                  .block_hashes = hashes,
                                  .nblocks = NT / BS,
                                  .block_size = BS,
                                  .rng = &rng,
                                  .now_ms = 1000,
                                  .load_max_age_ms = 5000};
}

/* Four workers under prefix_affinity (approximate mode: what was placed
 * where), the prompt placed on the first `holders` of them. */
static void pool_with_holders(struct kvg_pool *pool, double bound, int holders,
                              struct kvg_route_ctx *c)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.block_size = BS;
    if (bound > 0) o.affinity_load_bound = bound;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    for (int i = 0; i < NW; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9401 + i);
        CHECK_INT(kvg_pool_add(pool, url), 0);
    }
    *c = prompt_ctx();
    for (int i = 0; i < holders; i++) CHECK_INT(kvg_pool_place(pool, pool->w[i]->url, c), 0);
}

/* The engines' samples (running requests; none waiting), taken before
 * this replica sent anything (its in-flight count then 0). */
static void sample(struct kvg_pool *pool, const int *running)
{
    for (int i = 0; i < NW; i++) {
        pthread_mutex_lock(&pool->w[i]->mu);
        pool->w[i]->load.waiting = 0;
        pool->w[i]->load.running = running[i];
        pool->w[i]->load.at_ms = 1000;
        pool->w[i]->load.inflight_at = 0;
        pthread_mutex_unlock(&pool->w[i]->mu);
    }
}

/* The index in pool->w of a dry-run pick (nothing placed or counted). */
static int dry(struct kvg_pool *pool, struct kvg_route_ctx *c)
{
    struct kvg_pick pk = {0};
    int known = 0;
    c->dry_run = 1;
    int rc = kvg_pool_pick(pool, c, NULL, 0, &pk, &known, NULL);
    c->dry_run = 0;
    CHECK_INT(rc, 0);
    int at = -1;
    for (int i = 0; pk.w && i < NW; i++)
        if (pk.w == pool->w[i]) at = i;
    if (pk.w) kvg_worker_unref(pk.w);
    return at;
}

/* The dry-run pick under the engines' samples `running` (at in-flight 0). */
static int under(struct kvg_pool *pool, struct kvg_route_ctx *c, const int *running)
{
    sample(pool, running);
    return dry(pool, c);
}

/* How often each worker is the dry-run pick in 64 tries under `running`
 * (ties are broken at random). */
static void tally(struct kvg_pool *pool, struct kvg_route_ctx *c, const int *running, int *seen)
{
    memset(seen, 0, NW * sizeof *seen);
    sample(pool, running);
    for (int k = 0; k < 64; k++) {
        int w = dry(pool, c);
        if (w >= 0) seen[w]++;
    }
}

TEST(the_bound_keeps_a_request_off_a_holder_over_it)
{
    kvg_rng_seed(&rng, 31);
    struct kvg_pool pool;
    struct kvg_route_ctx c;
    pool_with_holders(&pool, 0, 1, &c); /* the default bound, 2 */
    /* 8 against 2, 2, 2: mean 3.5, bound 2 x 3.5 + 1 = 8: at it, kept. */
    CHECK_INT(under(&pool, &c, (int[]){8, 2, 2, 2}), 0);
    /* 9: mean 3.75, bound 8.5: past it, a spill to one of the others. */
    int s = under(&pool, &c, (int[]){9, 2, 2, 2});
    CHECK(s >= 1 && s < NW);
    /* The spill goes to the least loaded, not to any within the bound. */
    CHECK_INT(under(&pool, &c, (int[]){10, 3, 1, 3}), 2); /* mean 4.25, bound 9.5 */
    /* A tighter bound (1.5): 8 against 2, 2, 2 is past 1.5 x 3.5 + 1. */
    kvg_pool_destroy(&pool);
    pool_with_holders(&pool, 1.5, 1, &c);
    CHECK(under(&pool, &c, (int[]){6, 2, 2, 2}) != 0);   /* mean 3, bound 5.5 */
    CHECK_INT(under(&pool, &c, (int[]){5, 2, 2, 2}), 0); /* mean 2.75, bound 5.125 */
    kvg_pool_destroy(&pool);
}

TEST(the_bound_ties_holders_and_spills)
{
    kvg_rng_seed(&rng, 32);
    struct kvg_pool pool;
    struct kvg_route_ctx c;
    pool_with_holders(&pool, 0, 2, &c);
    /* Two holders equally loaded and within: either, never another. */
    int seen[NW];
    tally(&pool, &c, (int[]){4, 4, 0, 0}, seen);
    CHECK(seen[0] > 0 && seen[1] > 0);
    CHECK_INT(seen[2] + seen[3], 0);
    /* The less loaded holder first, even when the other is within. */
    CHECK_INT(under(&pool, &c, (int[]){4, 3, 0, 0}), 1);
    /* Two holders of four under the default bound spill only when both
     * are past twice the mean + 1: 3, 3, 0, 0 (mean 1.5, bound 4) is not. */
    int w = under(&pool, &c, (int[]){3, 3, 0, 0});
    CHECK(w == 0 || w == 1);
    /* At 1.5: 4, 4, 0, 0 is at 1.5 x 2 + 1 (kept); 5, 5, 0, 0 is past
     * 1.5 x 2.5 + 1 = 4.75 on both holders: a spill to either idle worker
     * (ties at random), never a holder. */
    kvg_pool_destroy(&pool);
    pool_with_holders(&pool, 1.5, 2, &c);
    w = under(&pool, &c, (int[]){4, 4, 0, 0});
    CHECK(w == 0 || w == 1);
    tally(&pool, &c, (int[]){5, 5, 0, 0}, seen);
    CHECK_INT(seen[0] + seen[1], 0);
    CHECK(seen[2] > 0 && seen[3] > 0);
    kvg_pool_destroy(&pool);
}

TEST(the_bound_at_low_load_is_its_one_request)
{
    kvg_rng_seed(&rng, 33);
    struct kvg_pool pool;
    struct kvg_route_ctx c;
    pool_with_holders(&pool, 0, 1, &c);
    /* An idle pool: the bound is 1 request, and a holder with 2 against
     * nothing elsewhere (mean 0.5, bound 2) keeps the prompt: 4x the mean.
     * At llm-d's workload's quiet start (2.6 requests per engine) the +1
     * lets a holder take 2.4x the mean (bench/results/fleet.md). */
    CHECK_INT(under(&pool, &c, (int[]){2, 0, 0, 0}), 0);
    /* 3 against nothing (mean 0.75, bound 2.5) is past it. */
    CHECK(under(&pool, &c, (int[]){3, 0, 0, 0}) != 0);
    /* The tightest bound (1, the mean + 1) at low load still lets a holder
     * sit one request over the mean: 1 against nothing (bound 1.25). */
    kvg_pool_destroy(&pool);
    pool_with_holders(&pool, 1, 1, &c);
    CHECK_INT(under(&pool, &c, (int[]){1, 0, 0, 0}), 0);
    CHECK(under(&pool, &c, (int[]){2, 0, 0, 0}) != 0); /* bound 1.5 */
    kvg_pool_destroy(&pool);
}

TEST(the_bound_counts_a_replicas_own_picks_since_the_sample)
{
    kvg_rng_seed(&rng, 34);
    struct kvg_pool pool;
    struct kvg_route_ctx c;
    pool_with_holders(&pool, 0, 1, &c);
    /* The sample (other replicas' requests): 2 on every engine. This
     * replica's own picks of the holder count on it at once: with r of
     * them its load is 2 + r against a mean of (8 + r) / 4, within while
     * 2 + r <= 2 x (8 + r) / 4 + 1, i.e. r <= 6: 7 picks stay, the 8th
     * spills. Without the picks on the sample (the larger of the sample,
     * 2, and its own count, r) the 8th would stay too (8 <= 2 x 14 / 4 + 1). */
    sample(&pool, (int[]){2, 2, 2, 2});
    struct kvg_pick pk[7];
    int kept = 0;
    for (int k = 0; k < 7; k++) {
        int known = 0;
        pk[k] = (struct kvg_pick){0};
        CHECK_INT(kvg_pool_pick(&pool, &c, NULL, 0, &pk[k], &known, NULL), 0);
        kept += pk[k].w == pool.w[0];
    }
    CHECK_INT(kept, 7);
    CHECK(dry(&pool, &c) != 0);
    /* A new sample that already holds this replica's 7 (running 8 at
     * in-flight 7): the holder's load is 8, not 15 (mean 3.5, bound 8: at
     * it, kept), and not 2 + 7 either. */
    sample(&pool, (int[]){8, 2, 2, 2});
    pthread_mutex_lock(&pool.w[0]->mu);
    pool.w[0]->load.inflight_at = kvg_policy_inflight(pool.w[0]);
    pthread_mutex_unlock(&pool.w[0]->mu);
    CHECK_INT(kvg_policy_inflight(pool.w[0]), 7);
    CHECK_INT(dry(&pool, &c), 0);
    for (int k = 0; k < 7; k++)
        if (pk[k].w) kvg_pool_release(&pool, &pk[k], KVG_OUT_OK, &c);
    kvg_pool_destroy(&pool);
}

/* A LoRA request's spill goes to the least loaded worker within the bound
 * that has its adapter loaded, not to the least loaded of all (a cold
 * adapter load, bench/results/fleet.md "a load bound"); with no such
 * worker within the bound, to the least loaded as before. */
TEST(a_lora_spill_keeps_to_the_adapter_within_the_bound)
{
    kvg_rng_seed(&rng, 35);
    struct kvg_pool pool;
    struct kvg_route_ctx c;
    pool_with_holders(&pool, 1.5, 1, &c);
    c.lora = KVG_STR("sql");
    for (int i = 0; i < NW; i++) {
        pool.w[i]->lora_at_ms = 990;
        pool.w[i]->lora_max = 4;
        pool.w[i]->lora_active[0] = 0;
    }
    snprintf(pool.w[0]->lora_active, sizeof pool.w[0]->lora_active, "sql");
    snprintf(pool.w[2]->lora_active, sizeof pool.w[2]->lora_active, "chat,sql");
    /* 8, 1, 3, 2: mean 3.5, bound 6.25: the holder is past it; worker 1 is
     * the least loaded, worker 2 the least loaded with the adapter. */
    CHECK_INT(under(&pool, &c, (int[]){8, 1, 3, 2}), 2);
    /* Worker 2 past the bound too (8, 1, 8, 2: mean 4.75, bound 8.125 holds
     * it; 9, 1, 9, 2: mean 5.25, bound 8.875 does not): the least loaded. */
    CHECK_INT(under(&pool, &c, (int[]){9, 1, 9, 2}), 1);
    /* A base-model request spills to the least loaded as before. */
    c.lora = (struct kvg_str){0};
    kvg_pool_destroy(&pool);
    pool_with_holders(&pool, 1.5, 1, &c);
    CHECK_INT(under(&pool, &c, (int[]){8, 1, 3, 2}), 1);
    kvg_pool_destroy(&pool);
}
