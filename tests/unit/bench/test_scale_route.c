/* The offline days' routing (bench/scale/scale_route.c): serve's pool and
 * policy over a day's replicas, their membership as the replicas come and
 * go, picks paired with releases, the prewarm's placement, the batch
 * rule's filter and the scrapes' gauges. */
#include "support/test.h"

#include <string.h>

#include "bench/scale/scale_int.h"
#include "router/policy.h"

struct fixture {
    struct kvg_bench_scale_opts o;
    struct scale_day d;
    struct scale_reps P;
    struct scale_route rt;
};

static void setup(struct fixture *f, uint32_t n)
{
    memset(f, 0, sizeof *f);
    kvg_bench_scale_opts_default(&f->o);
    f->o.stress = 1;
    f->o.day_s = 3600;
    char err[128] = "";
    CHECK_INT(kvg__scale_day_init(&f->d, &f->o, err, sizeof err), 0);
    CHECK_INT(kvg__scale_reps_first(&f->P, &f->o, &f->d.su, &f->d.rng, n, 1), 0);
    for (uint32_t k = 0; k < n; k++)
        CHECK_INT(kvg__scale_reps_ready(&f->P, (int)k, &f->o.profile, 1 + k, 0), 0);
    CHECK_INT(kvg__scale_route_new(&f->rt, &f->o, KVG_AUTOSCALE_AGGREGATED), 0);
}

static void teardown(struct fixture *f)
{
    kvg__scale_route_free(&f->rt);
    kvg__scale_reps_free(&f->P);
    kvg__scale_day_free(&f->d);
}

/* A request of prefix group g whose shared prefix is most of its prompt
 * (prefix_affinity's hit needs half of it matched). */
static struct scale_req req(const struct fixture *f, uint32_t g, uint64_t seed)
{
    return (struct scale_req){
        .group = g, .prompt_len = f->o.prefix_len + 200, .max_tokens = 10, .suffix_seed = seed};
}

static int pick(struct fixture *f, const struct scale_req *r, double t, int (*ok)(void *ud, int k),
                struct kvg_pick *out)
{
    int k = -1;
    CHECK_INT(kvg__scale_route_sync(&f->rt, &f->P, NULL, NULL, t), 0);
    int rc = kvg__scale_route_pick(&f->rt, &f->d.wl, r, t, ok, NULL, out, &k);
    return rc ? rc : k;
}

static int draining(const struct fixture *f, int k)
{
    return atomic_load(&f->rt.w[k]->draining);
}

/* Ready replicas are workers taking requests; a warming or draining one is
 * a worker marked draining (no new request); one that left is no worker. */
TEST(a_replica_is_a_worker_while_it_has_an_engine)
{
    struct fixture f;
    setup(&f, 3);
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 1), 0);
    CHECK_INT(kvg_pool_size(&f.rt.pool), 3);
    for (int k = 0; k < 3; k++) {
        CHECK(f.rt.w[k] != NULL);
        CHECK_INT(draining(&f, k), 0);
        CHECK_INT(kvg__scale_route_replica(&f.rt, f.rt.w[k]), k);
    }
    f.P.rep[1].warming = 1;
    f.P.rep[2].state = R_DRAINING;
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 2), 0);
    CHECK_INT(draining(&f, 0), 0);
    CHECK_INT(draining(&f, 1), 1);
    CHECK_INT(draining(&f, 2), 1);
    /* Only replica 0 takes new requests. */
    struct scale_req r = req(&f, 5, 1);
    struct kvg_pick p;
    CHECK_INT(pick(&f, &r, 3, NULL, &p), 0);
    kvg__scale_route_release(&f.rt, &p, KVG_OUT_OK, 3);
    CHECK(p.w == NULL);
    kvg__scale_reps_gone(&f.P, 2, 4);
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 4), 0);
    CHECK_INT(kvg_pool_size(&f.rt.pool), 2);
    CHECK(f.rt.w[2] == NULL);
    f.P.rep[1].warming = 0;
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 5), 0);
    CHECK_INT(draining(&f, 1), 0);
    teardown(&f);
}

/* A group's requests stay on the replica that took its first (the
 * approximate index remembers what was routed where) until it is past the
 * load bound; every pick charges one in flight and its release takes it
 * back. */
TEST(a_group_stays_on_its_replica_and_picks_pair_with_releases)
{
    struct fixture f;
    setup(&f, 4);
    struct kvg_pick p[4];
    struct scale_req r = req(&f, 3, 10);
    int k0 = pick(&f, &r, 1, NULL, &p[0]);
    CHECK(k0 >= 0 && k0 < 4);
    for (int i = 1; i < 3; i++) {
        r.suffix_seed = 10 + (uint64_t)i;
        CHECK_INT(pick(&f, &r, 1 + 0.1 * i, NULL, &p[i]), k0);
    }
    CHECK_INT(atomic_load(&f.rt.w[k0]->in_flight), 3);
    /* In flight 3 against a mean of 0.75: past the default bound (2 x mean
     * + 1), it spills. */
    r.suffix_seed = 13;
    int k3 = pick(&f, &r, 1.3, NULL, &p[3]);
    CHECK(k3 >= 0 && k3 != k0);
    for (int i = 0; i < 4; i++) kvg__scale_route_release(&f.rt, &p[i], KVG_OUT_OK, 2);
    for (int k = 0; k < 4; k++) CHECK_INT(atomic_load(&f.rt.w[k]->in_flight), 0);
    /* Released, the holder takes the group again. */
    r.suffix_seed = 14;
    CHECK_INT(pick(&f, &r, 3, NULL, &p[0]), k0);
    kvg__scale_route_release(&f.rt, &p[0], KVG_OUT_OK, 3);
    teardown(&f);
}

/* A prewarm's replay placed on a replica: the group's next request goes
 * there, wherever its first block would have placed it. */
TEST(a_placed_prefix_draws_its_group)
{
    struct fixture f;
    setup(&f, 4);
    struct scale_req r = req(&f, 7, 20);
    struct kvg_pick p;
    /* Where a new group 7 would go, found on a second fixture. */
    struct fixture g;
    setup(&g, 4);
    int fresh = pick(&g, &r, 1, NULL, &p);
    CHECK(fresh >= 0);
    kvg__scale_route_release(&g.rt, &p, KVG_OUT_OK, 1);
    teardown(&g);
    int other = (fresh + 1) % 4;
    struct scale_req warm = {.group = 7, .prompt_len = f.o.prefix_len};
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 1), 0);
    CHECK_INT(kvg__scale_route_place(&f.rt, &f.d.wl, &warm, other, 1), 0);
    CHECK_INT(pick(&f, &r, 1, NULL, &p), other);
    kvg__scale_route_release(&f.rt, &p, KVG_OUT_OK, 1);
    /* No such worker: said, nothing placed. */
    CHECK_INT(kvg__scale_route_place(&f.rt, &f.d.wl, &warm, 9, 1), KVG_ENOTFOUND);
    teardown(&f);
}

static int only_two(void *ud, int k)
{
    (void)ud;
    return k == 2;
}

static int none(void *ud, int k)
{
    (void)ud;
    (void)k;
    return 0;
}

/* The batch rule filters the candidates: the pick is among those it
 * admits, or none. */
TEST(the_filter_admits_only_its_replicas)
{
    struct fixture f;
    setup(&f, 3);
    struct kvg_pick p;
    for (uint32_t g = 0; g < 6; g++) {
        struct scale_req r = req(&f, g, 30 + g);
        CHECK_INT(pick(&f, &r, 1, only_two, &p), 2);
        kvg__scale_route_release(&f.rt, &p, KVG_OUT_OK, 1);
    }
    struct scale_req r = req(&f, 0, 40);
    CHECK_INT(pick(&f, &r, 1, none, &p), KVG_ENOWORKER);
    CHECK(p.w == NULL);
    teardown(&f);
}

/* A scrape gives each worker its engine's gauges, stamped with the
 * scrape's time; a worker never scraped has none (unknown to the policy). */
TEST(a_scrape_gives_each_worker_its_engine_gauges)
{
    struct fixture f;
    setup(&f, 2);
    CHECK_INT(kvg__scale_route_sync(&f.rt, &f.P, NULL, NULL, 1), 0);
    CHECK_INT(f.rt.w[0]->load.at_ms, 0);
    struct scale_req r = req(&f, 1, 50);
    CHECK_INT(kvg__scale_day_submit(&f.d, f.P.rep[0].e, 1, &r, 0, 0, 0), 0);
    kvg__scale_rep_step(&f.P.rep[0], 1);
    kvg__scale_route_scrape(&f.rt, &f.P, 1.5);
    struct kvg_engine_load l = kvg_worker_load(f.rt.w[0], f.rt.w[0]->load.at_ms, 0);
    CHECK(f.rt.w[0]->load.at_ms > 0);
    CHECK(l.kv_blocks > 0);
    CHECK_NEAR(l.running + l.waiting, 1, 0);
    CHECK_INT(f.rt.w[1]->load.at_ms, f.rt.w[0]->load.at_ms);
    CHECK_NEAR(f.rt.w[1]->load.running + f.rt.w[1]->load.waiting, 0, 0);
    teardown(&f);
}
