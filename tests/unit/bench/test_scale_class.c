/* Traffic classes in the offline days (bench/scale/scale_class.c): the
 * gateway's batch queue on a fake day (interactive first, FIFO into
 * troughs, the 429 past the deadline counted and not as a drop, the
 * backlog's signals), then on the aggregated day (scale_des.c). */
#include "support/test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/scale/scale_int.h"

/* A day of n requests: each waits in the gateway until dispatched or
 * rejected; troughs: how many batch requests replicas take now. */
struct fake {
    int state[8]; /* 0 waits in the gateway, 1 dispatched, 2 rejected */
    int interactive_waiting, troughs;
    uint64_t order[8];
    int n_disp;
};

static int f_waiting(void *day, uint64_t id)
{
    return ((struct fake *)day)->state[id] == 0;
}

static int f_interactive_waits(void *day)
{
    return ((struct fake *)day)->interactive_waiting;
}

static int f_trough(void *day, uint64_t id)
{
    (void)id;
    return ((struct fake *)day)->troughs > 0 ? 0 : -1;
}

static int f_dispatch(void *day, uint64_t id, int k, double t)
{
    struct fake *f = day;
    (void)k;
    (void)t;
    f->state[id] = 1;
    f->troughs--;
    f->order[f->n_disp++] = id;
    return 0;
}

static void f_reject(void *day, uint64_t id)
{
    ((struct fake *)day)->state[id] = 2;
}

static const struct scale_cls_ops g_fake = {f_waiting, f_interactive_waits, f_trough, f_dispatch,
                                            f_reject};

static void setup(struct scale_cls *c, struct kvg_bench_scale_opts *o, struct fake *f,
                  const char *planner)
{
    kvg_bench_scale_opts_default(o);
    o->batch_share = 0.3;
    o->batch_deadline_s = 100;
    snprintf(o->planner, sizeof o->planner, "%s", planner);
    memset(f, 0, sizeof *f);
    kvg__scale_cls_init(c, o, &g_fake, f, 400);
}

static void enqueue(struct scale_cls *c, uint64_t id, double at, uint32_t prompt, uint32_t out)
{
    struct scale_req r = {.arrival = at, .prompt_len = prompt, .max_tokens = out};
    CHECK_INT(kvg__scale_cls_enqueue(c, id, &r, at), 0);
}

TEST(batch_waits_while_an_interactive_request_waits_then_goes_fifo)
{
    struct kvg_bench_scale_opts o;
    struct scale_cls c;
    struct fake f;
    setup(&c, &o, &f, "kvgate");
    CHECK(c.on);
    CHECK_NEAR(c.seqs, 0.8 * 400, 1e-9);
    f.interactive_waiting = 1;
    f.troughs = 8;
    enqueue(&c, 0, 1, 1000, 100);
    enqueue(&c, 1, 2, 2000, 200);
    enqueue(&c, 2, 3, 3000, 300);
    CHECK_INT(f.n_disp, 0); /* every replica in a trough, but interactive waits */
    f.interactive_waiting = 0;
    f.troughs = 2;
    CHECK_INT(kvg__scale_cls_drain(&c, 4), 0);
    CHECK_INT(f.n_disp, 2);
    CHECK_INT((int)f.order[0], 0);
    CHECK_INT((int)f.order[1], 1);
    /* The one left is the backlog the planners see, its prompt no longer
     * counted as in flight. */
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.inflight_prompt_tokens = 6000 + 500;
    kvg__scale_cls_signals(&c, 4, &s);
    CHECK_NEAR(s.batch_queued, 1, 1e-9);
    CHECK_NEAR(s.batch_prompt_tokens, 3000, 1e-9);
    CHECK_NEAR(s.batch_out_tokens, 300, 1e-9);
    CHECK_NEAR(s.batch_slack_s, 3 + 100 - 4, 1e-9);
    CHECK_NEAR(s.inflight_prompt_tokens, 3500, 1e-9);
    kvg__scale_cls_free(&c);
}

TEST(past_its_deadline_a_batch_request_is_a_429_not_a_drop)
{
    struct kvg_bench_scale_opts o;
    struct scale_cls c;
    struct fake f;
    setup(&c, &o, &f, "kvgate");
    enqueue(&c, 0, 0, 1000, 100); /* no trough all along */
    enqueue(&c, 1, 50, 1000, 100);
    kvg__scale_cls_expire(&c, 99.9);
    CHECK_INT(f.state[0], 0);
    kvg__scale_cls_expire(&c, 100);
    CHECK_INT(f.state[0], 2); /* answered 429 */
    CHECK_INT(f.state[1], 0); /* its deadline is at 150 */
    CHECK_INT((int)c.rejected, 1);
    /* The day ends with request 1 still queued: never answered, a drop. */
    struct kvg_bench_scale_classes out;
    memset(&out, 0, sizeof out);
    kvg__scale_cls_count(&c, &out, 1, 0, 0, 0, 0);
    kvg__scale_cls_count(&c, &out, 1, 0, 0, 50, 0);
    kvg__scale_cls_count(&c, &out, 0, 1, 1, 10, 11);
    kvg__scale_cls_summary(&c, &out);
    CHECK_INT((int)out.batch, 2);
    CHECK_INT((int)out.batch_rejected, 1);
    CHECK_INT((int)out.batch_dropped, 1);
    CHECK_NEAR(out.batch_deadline_met, 0, 1e-9);
    CHECK_NEAR(out.slo_attainment_interactive, 1, 1e-9);
    kvg__scale_cls_free(&c);
}

TEST(sla_runs_without_classes)
{
    struct kvg_bench_scale_opts o;
    struct scale_cls c;
    struct fake f;
    setup(&c, &o, &f, "sla");
    CHECK(!c.on);
    for (int i = 0; i < 100; i++) CHECK_INT(kvg__scale_cls_draw(&c), 0);
    kvg__scale_cls_free(&c);
}

/* The aggregated day: a short stress day on a pool held at two replicas,
 * past what they serve in its bursts (rate 5) or most of the day (8). */
static struct kvg_bench_scale_opts agg_day(double rate, double share, double deadline)
{
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    o.stress = 1;
    o.day_s = 900;
    o.mean_rate = rate;
    o.bursts = 2;
    o.burst_s = 60;
    o.startup_fixed_s = 60;
    o.timeline_points = 48;
    o.knee_rps = 2.0;
    o.batch_share = share;
    o.batch_deadline_s = deadline;
    o.aopts.static_replicas = 2;
    snprintf(o.planner, sizeof o.planner, "static");
    return o;
}

static void agg_run(const struct kvg_bench_scale_opts *o, struct kvg_bench_scale_result *r)
{
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_run(o, r, err, sizeof err), 0);
    CHECK_INT(r->status, 0);
}

TEST(aggregated_day_interactive_first_and_the_429s)
{
    struct kvg_bench_scale_opts o0 = agg_day(5, 0, 1800), o1 = agg_day(5, 0.3, 1800),
                                o2 = agg_day(8, 0.3, 30);
    struct kvg_bench_scale_result r0, r1, r2;
    agg_run(&o0, &r0);
    agg_run(&o1, &r1);
    agg_run(&o2, &r2);
    /* The same arrivals: the classes' draws are their own. */
    CHECK_INT((int)r1.requests, (int)r0.requests);
    CHECK(r1.cls.on && !r0.cls.on);
    CHECK_INT((int)(r1.cls.interactive + r1.cls.batch), (int)r1.requests);
    CHECK(r1.cls.batch > r1.requests / 5 && r1.cls.batch < r1.requests * 2 / 5);
    /* Past its capacity in the bursts the pool misses; batch waiting
     * through them leaves interactive traffic the room: 99.40% against
     * 96.59% with every request interactive (sent to a replica at once,
     * without the trough rule, batch leaves 96.96%: what this checks). */
    CHECK(r0.slo_attainment < 0.99);
    CHECK(r1.cls.slo_attainment_interactive > r0.slo_attainment + 0.02);
    CHECK_NEAR(r0.cls.slo_attainment_interactive, r0.slo_attainment, 1e-12);
    /* Overloaded with a 30 s deadline: some batch is answered 429, counted
     * as such; what is neither finished nor answered is the dropped rest. */
    CHECK(r2.cls.batch_rejected > 0);
    CHECK(r2.cls.batch_in_deadline + r2.cls.batch_rejected + r2.cls.batch_dropped <= r2.cls.batch);
    CHECK(r2.failed >= r2.cls.batch_rejected);
    kvg_bench_scale_result_free(&r0);
    kvg_bench_scale_result_free(&r1);
    kvg_bench_scale_result_free(&r2);
}

TEST(calibration_measures_the_replica_without_classes)
{
    /* The planners' profile is the replica's knee on the workload: the same
     * with 30% batch as without (the gateway's batch rule is not the
     * replica's capacity; with classes on the knee was 1.6x higher). */
    struct kvg_bench_scale_opts o0 = agg_day(5, 0, 1800), o1 = agg_day(5, 0.3, 1800);
    double k0 = 0, k1 = 0;
    CHECK_INT(kvg_bench_scale_calibrate(&o0, &k0), 0);
    CHECK_INT(kvg_bench_scale_calibrate(&o1, &k1), 0);
    CHECK(k0 > 0.25);
    CHECK_NEAR(k1, k0, 0);
}
