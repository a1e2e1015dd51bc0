/* The offline day's replica pool (bench/scale/scale_reps.c): fast-start
 * draws, parked replicas (standby) and what each costs in GPU-hours. */
#include "support/test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/scale/scale_int.h"

struct fixture {
    struct kvg_bench_scale_opts o;
    struct scale_day d;
    struct scale_reps P;
};

static void setup(struct fixture *f, double fast_share, uint32_t standby, double cost)
{
    memset(f, 0, sizeof *f);
    kvg_bench_scale_opts_default(&f->o);
    f->o.stress = 1;
    f->o.day_s = 3600;
    f->o.fast_share = fast_share;
    f->o.fast_ready_s = 30;
    f->o.standby = standby;
    f->o.standby_cost = cost;
    char err[128] = "";
    CHECK_INT(kvg__scale_day_init(&f->d, &f->o, err, sizeof err), 0);
    CHECK_INT(kvg__scale_reps_first(&f->P, &f->o, &f->d.su, &f->d.rng, 2, 1), 0);
    for (int k = 0; k < 2; k++)
        CHECK_INT(kvg__scale_reps_ready(&f->P, k, &f->o.profile, 1 + (uint64_t)k, 0), 0);
}

static void teardown(struct fixture *f)
{
    kvg__scale_reps_free(&f->P);
    kvg__scale_day_free(&f->d);
}

/* All nodes fast: every start is the restore class, within fast_ready_s,
 * and its p90 is that (the planners' prior), learned once seen. */
TEST(fast_nodes_restore_within_the_ready_secs)
{
    struct fixture f;
    setup(&f, 1.0, 0, 1.0);
    const char *md = f.o.startup_model;
    CHECK_NEAR(kvg_autoscale_startup_prior(&f.d.su, md, KVG_AUTOSCALE_RESTORE, 0.9), 30, 1e-6);
    CHECK_NEAR(kvg_autoscale_startup_lead_mix(&f.d.su, md, f.o.cold_share, 0, KVG_AUTOSCALE_WARM),
               30, 1e-6);
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 12, 100), 0);
    uint32_t ready, starting;
    kvg__scale_reps_count(&f.P, &ready, &starting);
    CHECK_INT(ready, 2);
    CHECK_INT(starting, 10);
    for (size_t i = 0; i < f.P.nrep; i++) {
        struct rep *p = &f.P.rep[i];
        if (p->state != R_STARTING) continue;
        CHECK_INT(p->node, KVG_AUTOSCALE_RESTORE);
        CHECK(p->ready_at > 100 && p->ready_at <= 130 + 1e-9);
        CHECK_INT(kvg__scale_reps_ready(&f.P, (int)i, &f.o.profile, 9 + i, p->ready_at), 0);
    }
    /* Ten starts seen: the lead is the learned p90, at most 30 s. */
    CHECK_INT(kvg_autoscale_startup_samples(&f.d.su, md, KVG_AUTOSCALE_RESTORE), 10);
    double lead =
        kvg_autoscale_startup_lead_mix(&f.d.su, md, f.o.cold_share, 0, KVG_AUTOSCALE_WARM);
    CHECK(lead > 0 && lead <= 30);
    teardown(&f);
}

/* Half the nodes fast: about half the starts restore within 30 s, the
 * rest are new processes (cold or warm: minutes). */
TEST(fast_share_splits_the_draws)
{
    struct fixture f;
    setup(&f, 0.5, 0, 1.0);
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 62, 0), 0);
    int fast = 0, slow = 0;
    for (size_t i = 2; i < f.P.nrep; i++) {
        const struct rep *p = &f.P.rep[i];
        if (p->node == KVG_AUTOSCALE_RESTORE) {
            fast++;
            CHECK(p->ready_at <= 30 + 1e-9);
        } else {
            slow++;
            CHECK(p->node == KVG_AUTOSCALE_COLD || p->node == KVG_AUTOSCALE_WARM);
            CHECK(p->ready_at > 30);
        }
    }
    CHECK_INT(fast + slow, 60);
    CHECK(fast >= 18 && fast <= 42); /* 30 expected; a binomial's +-4 sigma */
    teardown(&f);
}

/* standby 1: a drained replica parks (charged at standby_cost while
 * parked), a second one goes; more wanted wakes the parked one first, in
 * the asleep1 class's time, and the start-up model learns that wake. */
TEST(standby_parks_charges_and_wakes)
{
    struct fixture f;
    setup(&f, 0, 1, 0.25);
    /* Down to zero at 600 s: both ready ones drain; idle, they leave at once. */
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 0, 600), 0);
    CHECK_INT(kvg__scale_reps_parked(&f.P), 1);
    CHECK_INT(f.P.nact, 1);
    int k = f.P.act[0];
    CHECK_INT(f.P.rep[k].state, R_PARKED);
    CHECK(f.P.rep[k].e == NULL);
    /* Signals: a parked replica is neither ready, starting nor draining. */
    struct kvg_autoscale_signals s;
    double eta[KVG_BENCH_SCALE_MAX_REPLICAS];
    kvg__scale_reps_signals(&f.P, 700, 60, &s, eta);
    CHECK_INT(s.ready + s.starting + s.draining, 0);
    /* Up to one at 1800 s: the parked one wakes, no new replica. */
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 1, 1800), 0);
    CHECK_INT(f.P.woken, 1);
    CHECK_INT(f.P.added, 0);
    struct rep *p = &f.P.rep[k];
    CHECK_INT(p->state, R_STARTING);
    CHECK_INT(p->node, KVG_AUTOSCALE_ASLEEP1);
    double wake = p->ready_at - 1800;
    /* The 32B's asleep1 class: 2.9 s (2.3-3.5); a log-normal draw. */
    CHECK(wake > 0.5 && wake < 10);
    CHECK_INT(kvg__scale_reps_ready(&f.P, k, &f.o.profile, 7, p->ready_at), 0);
    CHECK_INT(kvg_autoscale_startup_samples(&f.d.su, f.o.startup_model, KVG_AUTOSCALE_ASLEEP1), 1);
    /* GPU-seconds over the hour: the gone one 600 s, the parked one 600 s
     * running + 1200 s parked at 0.25 + from its wake to 3600 running. */
    double parked = -1, held = kvg__scale_reps_seconds(&f.P, 3600, &parked);
    CHECK_NEAR(parked, 1200, 1e-6);
    CHECK_NEAR(held, 600 + 600 + 1200 * 0.25 + 1800, 1e-6);
    /* At standby_cost 1 a parked replica costs what a running one does. */
    f.P.standby_cost = 1;
    CHECK_NEAR(kvg__scale_reps_seconds(&f.P, 3600, NULL), 600 + 3600, 1e-6);
    teardown(&f);
}

/* A woken replica cancelled before it is ready parks again (it kept its
 * GPU); a new one cancelled is gone. */
TEST(cancelled_wake_parks_again)
{
    struct fixture f;
    setup(&f, 0, 1, 1.0);
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 1, 100), 0);
    CHECK_INT(kvg__scale_reps_parked(&f.P), 1);
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 3, 200), 0);
    CHECK_INT(f.P.woken, 1);
    CHECK_INT(f.P.added, 1);
    CHECK_INT(kvg__scale_reps_actuate(&f.P, &f.o, &f.d.su, &f.d.rng, 1, 201), 0);
    CHECK_INT(kvg__scale_reps_parked(&f.P), 1);
    uint32_t ready, starting;
    kvg__scale_reps_count(&f.P, &ready, &starting);
    CHECK_INT(ready, 1);
    CHECK_INT(starting, 0);
    CHECK_INT(f.P.cancelled, 2);
    teardown(&f);
}
