/* Priority admission: priorities, the per-worker rules exactly at their
 * thresholds, saturation with stale and unknown metrics, the decision, and
 * the gateway queue: priority order, tenant round-robin, timeouts, bounds
 * and eviction, cancellation, the probe, and wake-ups across threads. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/admission.h"
#include "support/test.h"

#define NOW 1000000ull

static struct kvg_engine_load ld(double waiting, double kv, uint64_t at)
{
    return (struct kvg_engine_load){.waiting = waiting, .running = 1, .kv_usage = kv, .at_ms = at};
}

TEST(priority_parsing)
{
    int p = 99;
    CHECK_INT(kvg_adm_priority_parse("critical", 8, &p), 0);
    CHECK_INT(p, KVG_ADM_CRITICAL);
    CHECK_INT(kvg_adm_priority_parse(" Sheddable ", 11, &p), 0);
    CHECK_INT(p, KVG_ADM_SHEDDABLE);
    CHECK_INT(kvg_adm_priority_parse("STANDARD", 8, &p), 0);
    CHECK_INT(p, 0);
    CHECK_INT(kvg_adm_priority_parse("-7", 2, &p), 0);
    CHECK_INT(p, -7);
    CHECK_INT(kvg_adm_priority_parse("1000", 4, &p), 0);
    CHECK_INT(kvg_adm_priority_parse("1001", 4, &p), -EINVAL);
    CHECK_INT(kvg_adm_priority_parse("high", 4, &p), -EINVAL);
    CHECK_INT(kvg_adm_priority_parse("", 0, &p), -EINVAL);
    CHECK_INT(kvg_adm_priority_parse("1.5", 3, &p), -EINVAL);
    CHECK_INT(kvg_adm_class(5), KVG_ADM_CRITICAL);
    CHECK_INT(kvg_adm_class(-3), KVG_ADM_SHEDDABLE);
    CHECK_STR(kvg_adm_class_name(0), "standard");
}

TEST(rules_exactly_at_the_thresholds)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    struct kvg_engine_load l;
    /* critical: waiting < 50, KV does not matter */
    l = ld(49, 0.99, NOW);
    CHECK(kvg_adm_load_ok(&c, KVG_ADM_CRITICAL, &l, NOW));
    l = ld(50, 0, NOW);
    CHECK(!kvg_adm_load_ok(&c, KVG_ADM_CRITICAL, &l, NOW));
    /* sheddable: waiting < 5 and kv < 0.8 */
    l = ld(4, 0.79, NOW);
    CHECK(kvg_adm_load_ok(&c, KVG_ADM_SHEDDABLE, &l, NOW));
    l = ld(5, 0.1, NOW);
    CHECK(!kvg_adm_load_ok(&c, KVG_ADM_SHEDDABLE, &l, NOW));
    l = ld(0, 0.8, NOW);
    CHECK(!kvg_adm_load_ok(&c, KVG_ADM_SHEDDABLE, &l, NOW));
    /* standard defaults to the same line as sheddable, but queues instead */
    l = ld(4, 0.79, NOW);
    CHECK(kvg_adm_load_ok(&c, 0, &l, NOW));
    l = ld(5, 0, NOW);
    CHECK(!kvg_adm_load_ok(&c, 0, &l, NOW));
    /* each threshold is configurable */
    c.critical_max_waiting = 10;
    c.sheddable_max_kv = 0.5;
    l = ld(10, 0, NOW);
    CHECK(!kvg_adm_load_ok(&c, 3, &l, NOW));
    l = ld(1, 0.5, NOW);
    CHECK(!kvg_adm_load_ok(&c, -1, &l, NOW));
    CHECK(kvg_adm_load_ok(&c, 0, &l, NOW));
}

TEST(stale_missing_and_unknown_metrics_are_never_busy)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    struct kvg_engine_load l = ld(0, 0, NOW - c.stale_ms); /* exactly at the limit: fresh */
    CHECK_INT(kvg_adm_load_judge(&c, 1, &l, NOW), KVG_ADM_FITS);
    l = ld(60, 0, NOW - c.stale_ms - 1); /* stale: a full queue no longer counts */
    CHECK_INT(kvg_adm_load_judge(&c, 1, &l, NOW), KVG_ADM_UNKNOWN);
    CHECK(kvg_adm_load_ok(&c, 1, &l, NOW));
    CHECK_NEAR(kvg_adm_load_saturation(&c, &l, NOW), -1, 1e-12);
    l = ld(0, 0, 0); /* never scraped */
    CHECK_INT(kvg_adm_load_judge(&c, -1, &l, NOW), KVG_ADM_UNKNOWN);
    l = ld(-1, 0, NOW); /* waiting unknown: critical reads nothing else */
    CHECK_INT(kvg_adm_load_judge(&c, 1, &l, NOW), KVG_ADM_UNKNOWN);
    CHECK_INT(kvg_adm_load_judge(&c, 0, &l, NOW), KVG_ADM_FITS);
    CHECK_NEAR(kvg_adm_load_saturation(&c, &l, NOW), 0, 1e-12);
    l = ld(0, NAN, NOW); /* no KV figure (current llama.cpp): judged by waiting alone */
    CHECK_INT(kvg_adm_load_judge(&c, 1, &l, NOW), KVG_ADM_FITS);
    CHECK_INT(kvg_adm_load_judge(&c, 0, &l, NOW), KVG_ADM_FITS);
    CHECK_INT(kvg_adm_load_judge(&c, -1, &l, NOW), KVG_ADM_FITS);
    l.waiting = 5;
    CHECK_INT(kvg_adm_load_judge(&c, -1, &l, NOW), KVG_ADM_BUSY);
    l = ld(NAN, 0.9, NOW); /* KV only: it can say busy on its own */
    CHECK_INT(kvg_adm_load_judge(&c, 0, &l, NOW), KVG_ADM_BUSY);
    CHECK_NEAR(kvg_adm_load_saturation(&c, &l, NOW), 0.9 / 0.8, 1e-12);
    c.stale_ms = 0; /* staleness off: only "never" counts */
    l = ld(0, 0, 1);
    CHECK_INT(kvg_adm_load_judge(&c, -1, &l, NOW), KVG_ADM_FITS);
}

TEST(own_counts_stand_in_for_unknown_signals)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    CHECK(kvg_adm_own_busy(&c, 8, 3));     /* 8 > 2 x 3 */
    CHECK(!kvg_adm_own_busy(&c, 8, 4));    /* not over 2 x the others' mean */
    CHECK(!kvg_adm_own_busy(&c, 7, 0));    /* under own_busy_min */
    CHECK(!kvg_adm_own_busy(&c, 100, -1)); /* alone in its pool */
    CHECK_NEAR(kvg_adm_others_mean(12, 3, 10), 1, 1e-12);
    CHECK_NEAR(kvg_adm_others_mean(12, 1, 12), -1, 1e-12);
    struct kvg_engine_load unk = ld(-1, -1, 0), busy = ld(50, 0, NOW);
    CHECK(!kvg_adm_ok(&c, 0, &unk, NOW, 20, 1));
    CHECK(kvg_adm_ok(&c, 0, &unk, NOW, 2, 1));
    /* a known signal wins over kvgate's count, either way */
    CHECK(!kvg_adm_ok(&c, 0, &busy, NOW, 0, 10));
    struct kvg_engine_load idle = ld(0, 0, NOW);
    CHECK(kvg_adm_ok(&c, 0, &idle, NOW, 20, 1));
    c.own_busy_factor = 0;
    CHECK(kvg_adm_ok(&c, 0, &unk, NOW, 20, 1));
}

TEST(saturation_mean_of_max_over_known)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    struct kvg_engine_load w[4] = {ld(0, 0, NOW), ld(5, 0, NOW), ld(1, 0.4, NOW),
                                   ld(0, 0, NOW - 999999)};
    CHECK_NEAR(kvg_adm_load_saturation(&c, &w[0], NOW), 0, 1e-12);
    CHECK_NEAR(kvg_adm_load_saturation(&c, &w[1], NOW), 1, 1e-12);
    CHECK_NEAR(kvg_adm_load_saturation(&c, &w[2], NOW), 0.5, 1e-12);
    CHECK_NEAR(kvg_adm_pool_saturation(&c, w, 4, NOW), (0 + 1 + 0.5) / 3.0, 1e-12);
    CHECK_NEAR(kvg_adm_pool_saturation(&c, &w[3], 1, NOW), 0, 1e-12); /* nothing known */
    CHECK_NEAR(kvg_adm_pool_saturation(&c, w, 0, NOW), 1, 1e-12);
}

TEST(decisions)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    size_t nok;
    struct kvg_engine_load a[3] = {ld(4, 0.79, NOW), ld(10, 0, NOW), ld(0, 0, 0)};
    /* Two workers may take it (the third reports nothing, so it is not
     * busy), but the known saturation (0.9875 + 2) / 2 is over 1:
     * sheddable work is shed all the same (GIE's check). */
    CHECK_INT(kvg_adm_decide(&c, -1, a, NULL, 3, NOW, &nok), KVG_ADM_REJECT);
    CHECK_INT(nok, 2);
    CHECK_INT(kvg_adm_decide(&c, 0, a, NULL, 3, NOW, &nok), KVG_ADM_ADMIT);
    a[1] = ld(0, 0, NOW); /* (0.9875 + 0) / 2 < 1 */
    CHECK_INT(kvg_adm_decide(&c, -1, a, NULL, 3, NOW, &nok), KVG_ADM_ADMIT);
    CHECK_INT(nok, 3);
    struct kvg_engine_load full[2] = {ld(10, 0.9, NOW), ld(7, 0.5, NOW)};
    CHECK_INT(kvg_adm_decide(&c, -1, full, NULL, 2, NOW, NULL), KVG_ADM_REJECT);
    CHECK_INT(kvg_adm_decide(&c, 0, full, NULL, 2, NOW, NULL), KVG_ADM_QUEUE);
    CHECK_INT(kvg_adm_decide(&c, 1, full, NULL, 2, NOW, NULL), KVG_ADM_ADMIT); /* waiting < 50 */
    full[0].waiting = full[1].waiting = 50;
    CHECK_INT(kvg_adm_decide(&c, 1, full, NULL, 2, NOW, NULL), KVG_ADM_QUEUE);
    a[1] = ld(10, 0, NOW);
    CHECK_INT(kvg_adm_decide(&c, -1, a, NULL, 3, NOW, NULL), KVG_ADM_REJECT);
    c.shed_pool_saturation = 0; /* only the per-worker rule */
    CHECK_INT(kvg_adm_decide(&c, -1, a, NULL, 3, NOW, NULL), KVG_ADM_ADMIT);
    /* Engines that report nothing (or stopped reporting) never queue a
     * request, however kvgate's own counts differ. */
    struct kvg_engine_load none[2] = {ld(-1, -1, 0), ld(80, 1, NOW - 999999)};
    uint32_t inf[2] = {100, 0};
    for (int prio = -1; prio <= 1; prio++) {
        CHECK_INT(kvg_adm_decide(&c, prio, none, inf, 2, NOW, &nok), KVG_ADM_ADMIT);
        CHECK_INT(nok, 1); /* the outlier is busy by kvgate's own count */
    }
    /* A known saturated worker beside an unknown one: the unknown one takes it. */
    struct kvg_engine_load mixed[2] = {ld(80, 1, NOW), ld(-1, -1, NOW)};
    CHECK_INT(kvg_adm_decide(&c, 0, mixed, NULL, 2, NOW, &nok), KVG_ADM_ADMIT);
    CHECK_INT(nok, 1);
}

TEST(decide_over_live_workers_matches_the_loads)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    struct kvg_worker w[3];
    struct kvg_worker *ws[3] = {&w[0], &w[1], &w[2]};
    struct kvg_engine_load l[3] = {ld(4, 0.79, NOW), ld(10, 0, NOW), ld(0, 0, 0)};
    uint32_t inf[3] = {5, 5, 50}; /* the silent one is busy by kvgate's count */
    memset(w, 0, sizeof w);
    for (int i = 0; i < 3; i++) {
        pthread_mutex_init(&w[i].mu, NULL);
        w[i].load = l[i];
        atomic_store(&w[i].in_flight, inf[i]);
    }
    for (int prio = -2; prio <= 2; prio++) {
        size_t a, b;
        CHECK_INT(kvg_adm_decide_workers(&c, prio, ws, 3, NOW, &a),
                  kvg_adm_decide(&c, prio, l, inf, 3, NOW, &b));
        CHECK_INT(a, b);
        for (int i = 0; i < 3; i++)
            CHECK(kvg_adm_worker_ok(&c, prio, &w[i], NOW, kvg_adm_others_mean(60, 3, inf[i])) ==
                  kvg_adm_ok(&c, prio, &l[i], NOW, inf[i], kvg_adm_others_mean(60, 3, inf[i])));
    }
    CHECK_INT(kvg_adm_decide_workers(&c, 0, ws, 0, NOW, NULL), KVG_ADM_QUEUE);
    for (int i = 0; i < 3; i++) pthread_mutex_destroy(&w[i].mu);
}

/* ---- the queue ---- */

struct rec {
    char order[64][16];
    int status[64];
    int n;
    struct kvg_adm_queue *q;
    struct kvg_adm_waiter *cancel_me; /* cancelled from the first callback */
};

struct wctx {
    struct rec *rec;
    char name[16];
};

static void on_wait(void *ud, int status)
{
    struct wctx *w = ud;
    struct rec *r = w->rec;
    snprintf(r->order[r->n], sizeof r->order[0], "%s", w->name);
    r->status[r->n++] = status;
    if (r->cancel_me) {
        kvg_adm_cancel(r->cancel_me);
        r->cancel_me = NULL;
    }
}

static void tick(uv_timer_t *t) {}

static void spin(uv_loop_t *loop, const int *until_n, int n, uint64_t ms)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    uint64_t end = kvg_now_ms() + ms;
    while ((!until_n || *until_n < n) && kvg_now_ms() < end) uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static struct kvg_adm_waiter *enq(struct kvg_adm_loop *lq, struct wctx *w, struct rec *r,
                                  const char *name, int prio, const char *tenant)
{
    struct kvg_adm_waiter *h = NULL;
    w->rec = r;
    snprintf(w->name, sizeof w->name, "%s", name);
    CHECK_INT(kvg_adm_enqueue(lq, prio, tenant, -1, 0, 0, on_wait, w, &h), 0);
    return h;
}

TEST(queue_priority_order_and_tenant_round_robin)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(NULL, NULL, NULL, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {.q = q};
    struct wctx w[10];
    enq(lq, &w[0], &r, "a1", 0, "A");
    enq(lq, &w[1], &r, "a2", 0, "A");
    enq(lq, &w[2], &r, "a3", 0, "A");
    enq(lq, &w[3], &r, "b1", 0, "B");
    enq(lq, &w[4], &r, "s1", -1, "A");
    enq(lq, &w[5], &r, "c1", 2, "C");
    enq(lq, &w[6], &r, "b2", 0, "B");
    enq(lq, &w[7], &r, "k1", 1, "A");
    enq(lq, &w[8], &r, "c2", 0, "C");
    spin(&loop, NULL, 0, 20);
    CHECK_INT(r.n, 0); /* nobody moves without capacity */
    CHECK_INT(kvg_adm_capacity_available(q, 3), 3);
    spin(&loop, &r.n, 3, 2000);
    CHECK_INT(kvg_adm_capacity_available(q, 100), 6);
    spin(&loop, &r.n, 9, 2000);
    CHECK_INT(r.n, 9);
    static const char *want[] = {"c1", "k1", "a1", "b1", "c2", "a2", "b2", "a3", "s1"};
    for (int i = 0; i < 9; i++) {
        CHECK_STR(r.order[i], want[i]);
        CHECK_INT(r.status[i], 0);
    }
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 0);
    CHECK_INT(st.granted, 9);
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

/* Groups only count (serve's models that an autoscale pool reads): a
 * waiter is in its group's count while it waits, whichever way it leaves
 * (granted, cancelled, evicted). */
TEST(queue_counts_waiters_per_group)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    c.queue_max = 4;
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(&c, NULL, NULL, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {.q = q};
    struct wctx w[6];
    struct kvg_adm_waiter *h[6];
    for (int i = 0; i < 6; i++) w[i].rec = &r;
    snprintf(w[0].name, sizeof w[0].name, "g0");
    CHECK_INT(kvg_adm_enqueue(lq, 0, "A", 0, 0, 0, on_wait, &w[0], &h[0]), 0);
    snprintf(w[1].name, sizeof w[1].name, "g3b");
    CHECK_INT(kvg_adm_enqueue(lq, KVG_ADM_BATCH, "A", 3, 0, 0, on_wait, &w[1], &h[1]), 0);
    snprintf(w[2].name, sizeof w[2].name, "g3");
    CHECK_INT(kvg_adm_enqueue(lq, 0, "B", 3, 0, 0, on_wait, &w[2], &h[2]), 0);
    snprintf(w[3].name, sizeof w[3].name, "none");
    CHECK_INT(kvg_adm_enqueue(lq, 0, "B", KVG_ADM_GROUPS, 0, 0, on_wait, &w[3], &h[3]), 0);
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 4);
    CHECK_INT(st.waiting_group[0], 1);
    CHECK_INT(st.waiting_group[3], 2);
    CHECK_INT(st.batch_group[3], 1);
    CHECK_INT(st.waiting_group[1] + st.waiting_group[KVG_ADM_GROUPS - 1],
              0); /* out of range: none */
    /* The queue is full: a critical newcomer in group 1 evicts the batch waiter. */
    snprintf(w[4].name, sizeof w[4].name, "g1");
    CHECK_INT(kvg_adm_enqueue(lq, 1, "C", 1, 0, 0, on_wait, &w[4], &h[4]), 0);
    spin(&loop, &r.n, 1, 2000);
    CHECK_STR(r.order[0], "g3b");
    CHECK_INT(r.status[0], -ENOSPC);
    kvg_adm_cancel(h[2]);
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 3);
    CHECK_INT(st.waiting_group[3], 0);
    CHECK_INT(st.batch_group[3], 0);
    CHECK_INT(st.waiting_group[1], 1);
    CHECK_INT(kvg_adm_capacity_available(q, 100), 3);
    spin(&loop, &r.n, 4, 2000);
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting_group[0] + st.waiting_group[1], 0);
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

TEST(queue_timeout_bound_and_eviction)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    c.queue_max = 3;
    c.queue_timeout_ms = 60;
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(&c, NULL, NULL, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {.q = q};
    struct wctx w[6];
    enq(lq, &w[0], &r, "a1", 0, "A");
    enq(lq, &w[1], &r, "a2", 0, "A");
    enq(lq, &w[2], &r, "b1", 0, "B");
    struct kvg_adm_waiter *h;
    CHECK_INT(kvg_adm_enqueue(lq, 0, "C", -1, 0, 0, on_wait, &w[3], &h), -ENOSPC);
    CHECK_INT(kvg_adm_enqueue(lq, -1, "C", -1, 0, 0, on_wait, &w[3], &h), -ENOSPC);
    /* A critical newcomer evicts the newest of the largest tenant (a2). */
    enq(lq, &w[4], &r, "k1", 1, "C");
    spin(&loop, &r.n, 1, 2000);
    CHECK_STR(r.order[0], "a2");
    CHECK_INT(r.status[0], -ENOSPC);
    /* Then everyone left times out after 60 ms. */
    spin(&loop, &r.n, 4, 3000);
    CHECK_INT(r.n, 4);
    for (int i = 1; i < 4; i++) CHECK_INT(r.status[i], KVG_ETIMEOUT);
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.timeouts, 3);
    CHECK_INT(st.evicted, 1);
    CHECK_INT(st.refused_full, 2);
    CHECK_INT(st.waiting, 0);
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

static int probe_critical_only(void *ud, int prio)
{
    (*(int *)ud)++;
    return prio > 0;
}

TEST(probe_cancel_and_passing_on_a_grant)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int probes = 0;
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(NULL, probe_critical_only, &probes, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {.q = q};
    struct wctx w[6];
    struct kvg_adm_waiter *s1 = enq(lq, &w[0], &r, "s1", 0, "A");
    enq(lq, &w[1], &r, "s2", 0, "B");
    enq(lq, &w[2], &r, "k1", 1, "A");
    struct kvg_adm_waiter *k2 = enq(lq, &w[3], &r, "k2", 1, "B");
    enq(lq, &w[4], &r, "k3", 1, "C");
    CHECK_INT(kvg_adm_capacity_available(q, 10), 3); /* standard does not fit */
    CHECK(probes >= 4);
    /* k2 is granted but leaves before its callback: its grant goes on, but
     * the probe still refuses standard. And k1's callback cancels k3. */
    kvg_adm_cancel(k2);
    spin(&loop, &r.n, 2, 2000);
    spin(&loop, NULL, 0, 20);
    CHECK_INT(r.n, 2);
    CHECK_STR(r.order[0], "k1");
    CHECK_STR(r.order[1], "k3");
    kvg_adm_cancel(s1);                              /* queued: simply gone */
    CHECK_INT(kvg_adm_capacity_available(q, 10), 0); /* s2: standard still does not fit */
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 1);
    CHECK_INT(st.cancelled, 2);
    kvg_adm_loop_close(lq); /* s2 fails with ECLOSED */
    CHECK_INT(r.n, 3);
    CHECK_STR(r.order[2], "s2");
    CHECK_INT(r.status[2], KVG_ECLOSED);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

TEST(a_callback_may_cancel_a_later_grant)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(NULL, NULL, NULL, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {.q = q};
    struct wctx w[3];
    enq(lq, &w[0], &r, "a", 0, "A");
    r.cancel_me = enq(lq, &w[1], &r, "b", 0, "A");
    enq(lq, &w[2], &r, "c", 0, "A");
    CHECK_INT(kvg_adm_capacity_available(q, 2), 2); /* a and b granted together */
    spin(&loop, &r.n, 2, 500);
    /* a's callback cancelled b: b never runs, its grant passed on to c. */
    CHECK_INT(r.n, 2);
    CHECK_STR(r.order[0], "a");
    CHECK_STR(r.order[1], "c");
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

/* A waiter on another thread's loop is woken there, by a grant made here. */
struct other {
    struct kvg_adm_queue *q;
    _Atomic int ready, done;
    pthread_t granted_on;
    int status;
};

static void other_cb(void *ud, int status)
{
    struct other *o = ud;
    o->granted_on = pthread_self();
    o->status = status;
    atomic_store(&o->done, 1);
}

static void *other_thread(void *p)
{
    struct other *o = p;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_loop *lq;
    struct kvg_adm_waiter *h;
    if (kvg_adm_loop_open(o->q, &loop, &lq) ||
        kvg_adm_enqueue(lq, 0, "T", -1, 0, 0, other_cb, o, &h))
        abort();
    atomic_store(&o->ready, 1);
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    uint64_t end = kvg_now_ms() + 5000;
    while (!atomic_load(&o->done) && kvg_now_ms() < end) uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    kvg_adm_loop_close(lq);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return NULL;
}

TEST(wake_up_crosses_threads)
{
    struct other o = {0};
    CHECK_INT(kvg_adm_queue_new(NULL, NULL, NULL, &o.q), 0);
    pthread_t th;
    pthread_create(&th, NULL, other_thread, &o);
    for (int i = 0; i < 500 && !atomic_load(&o.ready); i++) usleep(2000);
    CHECK(atomic_load(&o.ready));
    CHECK_INT(kvg_adm_capacity_available(o.q, 1), 1);
    pthread_join(th, NULL);
    CHECK(atomic_load(&o.done));
    CHECK_INT(o.status, 0);
    CHECK(pthread_equal(o.granted_on, th));
    kvg_adm_queue_free(o.q);
}
