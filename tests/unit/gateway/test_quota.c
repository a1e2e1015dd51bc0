/* Token quotas on the in-process store: sliding windows, reservations and
 * reconciliation, all-or-nothing across scopes, concurrency slots, header
 * values and formats, costs, and N threads racing for one budget. Times are
 * explicit (req.now_ms) so every expected value is computed by hand. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "gateway/quota.h"
#include "support/test.h"

#define T0 1700000040000ull /* a minute boundary */

static void on_res(void *ud, const struct kvg_quota_result *r)
{
    *(struct kvg_quota_result *)ud = *r;
}

struct fx {
    struct kvg_quota *q;
    struct kvg_quota_loop *lq;
    uv_loop_t loop;
};

static void fx_open(struct fx *f)
{
    char err[128];
    uv_loop_init(&f->loop);
    CHECK_INT(kvg_quota_new(NULL, NULL, &f->q, err, sizeof err), 0);
    CHECK_STR(kvg_quota_store_name(f->q), "memory");
    CHECK_INT(kvg_quota_loop_open(f->q, &f->loop, &f->lq), 0);
}

static void fx_close(struct fx *f)
{
    kvg_quota_loop_close(f->lq);
    kvg_quota_free(f->q);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    uv_loop_close(&f->loop);
}

static void one_scope(struct kvg_quota_req *r, const char *id, int64_t est, uint64_t now)
{
    memset(r, 0, sizeof *r);
    r->nscopes = 1;
    snprintf(r->scope[0].id, sizeof r->scope[0].id, "%s", id);
    kvg_quota_limits_none(&r->scope[0].lim);
    r->est_cost = est;
    r->now_ms = now;
}

/* Reserves; the in-process store answers before reserve returns. */
static struct kvg_quota_result reserve(struct fx *f, const struct kvg_quota_req *r,
                                       struct kvg_quota_lease *l)
{
    struct kvg_quota_result res;
    memset(&res, 0xee, sizeof res);
    struct kvg_quota_op *op = (void *)1;
    CHECK_INT(kvg_quota_reserve(f->lq, r, l, on_res, &res, &op), 0);
    CHECK(op == NULL);
    CHECK(res.admitted == 0 || res.admitted == 1);
    return res;
}

TEST(window_reserve_reject_and_retry_after)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l1, l2;
    one_scope(&r, "key:a", 60, T0 + 1000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    struct kvg_quota_result res = reserve(&f, &r, &l1);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.present, 1);
    CHECK_INT(res.tokens.limit, 100);
    CHECK_INT(res.tokens.remaining, 40);
    CHECK_INT(res.tokens.reset_ms,
              2 * 60000 - 1000); /* fully drained once this window left the view */
    CHECK_INT(res.requests.present, 0);
    /* 60 + 50 > 100: rejected. It fits once the 60 decays below 51: in the
     * next window at s with floor(60 * (60000 - s) / 60000) <= 50, s = 9001. */
    one_scope(&r, "key:a", 50, T0 + 1000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.store_error, 0);
    CHECK_INT(res.limited_kind, KVG_QK_TOKENS);
    CHECK_INT(res.limited_scope, 0);
    CHECK_INT(res.limited_win, KVG_QW_MINUTE);
    CHECK_INT(res.retry_after_s, (59000 + 9001 + 999) / 1000);
    CHECK_INT(res.tokens.remaining, 40);
    /* Just before that point still no, at it yes. */
    r.now_ms = T0 + 60000 + 9000;
    CHECK_INT(reserve(&f, &r, &l2).admitted, 0);
    r.now_ms = T0 + 60000 + 9001;
    res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 0); /* 50 weighted + 50 new */
    fx_close(&f);
}

TEST(sliding_window_weights_the_previous_window)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    one_scope(&r, "key:s", 80, T0 + 59000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    CHECK_INT(reserve(&f, &r, &l).admitted, 1);
    /* A fixed window would allow 100 more at T0 + 60000; the sliding view
     * still sees 80 * 45/60 = 60 at 15 s into the next window. */
    one_scope(&r, "key:s", 41, T0 + 75000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    struct kvg_quota_result res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.tokens.remaining, 40);
    /* Within this window: floor(80 * (45000 - t) / 60000) <= 59 from t = 1 ms. */
    CHECK_INT(res.retry_after_s, 1);
    r.est_cost = 40;
    res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 0);
    CHECK_INT(res.tokens.reset_ms, 2 * 60000 - 15000);
    /* Two windows later nothing is left of either. */
    one_scope(&r, "key:s", 100, T0 + 3 * 60000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    CHECK_INT(reserve(&f, &r, &l).admitted, 1);
    fx_close(&f);
}

TEST(reconcile_refunds_and_charges_the_real_cost)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l1, l2, l3;
    one_scope(&r, "key:r", 90, T0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    CHECK_INT(reserve(&f, &r, &l1).admitted, 1);
    CHECK_INT(reserve(&f, &r, &l2).admitted, 0); /* the estimate holds the budget */
    kvg_quota_reconcile(f.lq, &l1, 30);          /* the request used only 30 */
    kvg_quota_reconcile(f.lq, &l1, 0);           /* twice: ignored */
    r.est_cost = 70;
    struct kvg_quota_result res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 0);
    /* The request overshoots (150 instead of 70): it was admitted and its
     * cost counts, so the next one is refused. */
    kvg_quota_reconcile(f.lq, &l2, 150);
    r.est_cost = 0;
    res = reserve(&f, &r, &l3);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.tokens.remaining, 0);
    /* A reconcile landing after the window moved on adjusts the previous one. */
    one_scope(&r, "key:r2", 60, T0 + 59000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    CHECK_INT(reserve(&f, &r, &l1).admitted, 1);
    r.now_ms = T0 + 60000; /* rolls the window: prev = 60 */
    r.est_cost = 41;
    CHECK_INT(reserve(&f, &r, &l2).admitted, 0);
    kvg_quota_reconcile(f.lq, &l1, 0); /* refund into the previous window */
    r.est_cost = 100;
    CHECK_INT(reserve(&f, &r, &l2).admitted, 1);
    fx_close(&f);
}

TEST(zero_limit_suspends_and_big_estimates_are_capped)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    one_scope(&r, "key:z", 0, T0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 0;
    struct kvg_quota_result res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.retry_after_s, 60);
    /* An estimate above the limit waits for an empty window, then runs. */
    one_scope(&r, "key:big", 5000, T0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 0);
    r.est_cost = 1;
    CHECK_INT(reserve(&f, &r, &l).admitted, 0);
    fx_close(&f);
}

TEST(requests_and_concurrency_limits)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l[4];
    one_scope(&r, "key:rq", 1, T0 + 30000);
    r.scope[0].lim.requests[KVG_QW_MINUTE] = 3;
    r.scope[0].lim.max_concurrent = 2;
    struct kvg_quota_result res = reserve(&f, &r, &l[0]);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.requests.limit, 3);
    CHECK_INT(res.requests.remaining, 2);
    CHECK_INT(res.tokens.present, 0);
    CHECK_INT(reserve(&f, &r, &l[1]).admitted, 1);
    res = reserve(&f, &r, &l[2]); /* two in flight */
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.limited_kind, KVG_QK_CONCURRENT);
    CHECK_INT(res.retry_after_s, 1);
    CHECK_INT(res.requests.remaining, 1); /* the refused one took nothing */
    kvg_quota_reconcile(f.lq, &l[0], 10);
    res = reserve(&f, &r, &l[2]);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.requests.remaining, 0);
    kvg_quota_reconcile(f.lq, &l[1], 10);
    res = reserve(&f, &r, &l[3]); /* a slot is free, the minute's requests are not */
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.limited_kind, KVG_QK_REQUESTS);
    /* Next window (30 s away), then floor(3 * (60000 - s) / 60000) <= 2 from s = 1 ms. */
    CHECK_INT(res.retry_after_s, 31);
    fx_close(&f);
}

TEST(all_or_nothing_across_scopes)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    /* Another key of the tenant spent 50 of its 100 per hour. */
    one_scope(&r, "tenant:t1", 50, T0);
    r.scope[0].lim.tokens[KVG_QW_HOUR] = 100;
    CHECK_INT(reserve(&f, &r, &l).admitted, 1);
    one_scope(&r, "key:k1", 60, T0);
    r.nscopes = 2;
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    snprintf(r.scope[1].id, sizeof r.scope[1].id, "tenant:t1");
    kvg_quota_limits_none(&r.scope[1].lim);
    r.scope[1].lim.tokens[KVG_QW_HOUR] = 100;
    struct kvg_quota_result res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.limited_scope, 1);
    CHECK_INT(res.limited_win, KVG_QW_HOUR);
    CHECK_INT(res.tokens.limit, 100); /* the failing limit's values */
    CHECK_INT(res.tokens.remaining, 50);
    char msg[200];
    kvg_quota_describe(&res, &r, msg, sizeof msg);
    CHECK(strstr(msg, "tenant:t1") && strstr(msg, "tokens per hour"));
    /* The key's own counter was not charged by the refused request. */
    one_scope(&r, "key:k1", 1000, T0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    CHECK_INT(reserve(&f, &r, &l).admitted, 1);
    fx_close(&f);
}

TEST(headers_report_the_binding_limit)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    one_scope(&r, "key:h", 60, T0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    r.scope[0].lim.tokens[KVG_QW_HOUR] = 1000;
    r.scope[0].lim.requests[KVG_QW_MINUTE] = 10;
    struct kvg_quota_result res = reserve(&f, &r, &l);
    CHECK_INT(res.tokens.limit, 100); /* 40 left beats 940 left */
    CHECK_INT(res.tokens.remaining, 40);
    struct kvg_quota_headers h;
    kvg_quota_headers(&res, &h);
    CHECK_INT(h.n, 6);
    CHECK_STR(h.buf[0], "10");   /* limit-requests */
    CHECK_STR(h.buf[1], "9");    /* remaining-requests */
    CHECK_STR(h.buf[2], "2m0s"); /* reset-requests */
    CHECK_STR(h.buf[3], "100");
    CHECK_STR(h.buf[4], "40");
    CHECK(!memcmp(h.h[4].name.p, "x-ratelimit-remaining-tokens", h.h[4].name.len));
    r.est_cost = 50;
    res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 0);
    kvg_quota_headers(&res, &h);
    CHECK_INT(h.n, 7);
    CHECK(!memcmp(h.h[0].name.p, "retry-after", 11));
    CHECK_INT(atoi(h.buf[0]), (int)res.retry_after_s);
    fx_close(&f);
}

TEST(reset_format_like_openai)
{
    char b[48];
    CHECK_STR(kvg_quota_fmt_reset(0, b, sizeof b), "0s");
    CHECK_STR(kvg_quota_fmt_reset(20, b, sizeof b), "20ms");
    CHECK_STR(kvg_quota_fmt_reset(1000, b, sizeof b), "1s");
    CHECK_STR(kvg_quota_fmt_reset(1500, b, sizeof b), "1.5s");
    CHECK_STR(kvg_quota_fmt_reset(8640, b, sizeof b), "8.64s");
    CHECK_STR(kvg_quota_fmt_reset(360000, b, sizeof b), "6m0s");
    CHECK_STR(kvg_quota_fmt_reset(3723000, b, sizeof b), "1h2m3s");
    CHECK_STR(kvg_quota_fmt_reset(86400000, b, sizeof b), "24h0m0s");
}

TEST(costs_per_counting_mode)
{
    struct kvg_quota_counting c;
    kvg_quota_counting_default(&c);
    CHECK_INT(kvg_quota_cost_estimate(&c, 100, 50), 150);
    CHECK_INT(kvg_quota_cost_actual(&c, 100, 40, 20), 120);
    c.mode = KVG_QM_INPUT;
    CHECK_INT(kvg_quota_cost_estimate(&c, 100, 50), 100);
    CHECK_INT(kvg_quota_cost_actual(&c, 100, 40, 20), 100);
    c.mode = KVG_QM_OUTPUT;
    CHECK_INT(kvg_quota_cost_estimate(&c, 100, 50), 50);
    CHECK_INT(kvg_quota_cost_actual(&c, 100, 40, 20), 20);
    c.mode = KVG_QM_WEIGHTED;
    c.w_input = 1;
    c.w_cached_input = 0.1;
    c.w_output = 4;
    CHECK_INT(kvg_quota_cost_estimate(&c, 100, 50), 300); /* all input uncached */
    CHECK_INT(kvg_quota_cost_actual(&c, 100, 30, 20), 70 + 3 + 80);
    CHECK_INT(kvg_quota_cost_actual(&c, 100, 35, 0), 65 + 4); /* 3.5 rounds up */
    CHECK_INT(kvg_quota_cost_actual(&c, 10, 50, 0), 1);       /* cached capped at prompt */
    CHECK_INT(kvg_quota_cost_actual(&c, -5, 0, -1), 0);
}

TEST(no_limits_no_store)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    one_scope(&r, "key:free", 10, T0);
    r.nscopes = 1;
    struct kvg_quota_result res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.present + res.requests.present, 0);
    kvg_quota_reconcile(f.lq, &l, 5);
    r.est_cost = -1;
    CHECK_INT(kvg_quota_reserve(f.lq, &r, &l, on_res, &res, NULL), -EINVAL);
    struct kvg_quota *q;
    char err[128];
    CHECK_INT(kvg_quota_new("memcached://x", NULL, &q, err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "memcached://x") != NULL);
    fx_close(&f);
}

/* ---- threads racing for one budget ---- */

struct racer {
    struct kvg_quota *q;
    int admitted, slot_max;
    _Atomic int *in_flight;
};

static void *race(void *p)
{
    struct racer *a = p;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_quota_loop *lq;
    if (kvg_quota_loop_open(a->q, &loop, &lq)) abort();
    struct kvg_quota_req r;
    memset(&r, 0, sizeof r);
    r.nscopes = 2;
    snprintf(r.scope[0].id, sizeof r.scope[0].id, "key:race");
    kvg_quota_limits_none(&r.scope[0].lim);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 10000;
    snprintf(r.scope[1].id, sizeof r.scope[1].id, "tenant:race");
    kvg_quota_limits_none(&r.scope[1].lim);
    r.scope[1].lim.max_concurrent = 3;
    r.est_cost = 10;
    r.now_ms = T0 + 5;
    for (int i = 0; i < 4000; i++) {
        struct kvg_quota_lease l;
        struct kvg_quota_result res;
        kvg_quota_reserve(lq, &r, &l, on_res, &res, NULL);
        if (!res.admitted) continue;
        a->admitted++;
        int n = atomic_fetch_add(a->in_flight, 1) + 1;
        if (n > a->slot_max) a->slot_max = n;
        atomic_fetch_sub(a->in_flight, 1);
        kvg_quota_reconcile(lq, &l, 10); /* actual == estimate: the budget stays spent */
    }
    kvg_quota_loop_close(lq);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    return NULL;
}

TEST(threads_racing_cannot_overshoot)
{
    struct kvg_quota *q;
    char err[64];
    CHECK_INT(kvg_quota_new("memory", NULL, &q, err, sizeof err), 0);
    _Atomic int in_flight = 0;
    struct racer a[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        a[i] = (struct racer){q, 0, 0, &in_flight};
        pthread_create(&t[i], NULL, race, &a[i]);
    }
    int total = 0, slot_max = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        total += a[i].admitted;
        slot_max = a[i].slot_max > slot_max ? a[i].slot_max : slot_max;
    }
    CHECK_INT(total, 1000); /* 10000 / 10: exactly the budget, never more */
    CHECK(slot_max <= 3);
    struct kvg_quota_stats st;
    kvg_quota_stats(q, &st);
    CHECK_INT(st.admitted, 1000);
    CHECK_INT(st.admitted + st.limited, 6 * 4000);
    kvg_quota_free(q);
}

/* Epoch ms of a UTC date (test helper; the code under test has its own). */
static uint64_t utc_ms(int y, int mon, int d, int h, int mi, int s, int ms)
{
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mon - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = s};
    return (uint64_t)timegm(&tm) * 1000 + (uint64_t)ms;
}

TEST(month_windows_are_calendar_months_in_utc)
{
    struct kvg_quota_span sp;
    kvg_quota_win_span(KVG_QW_MONTH, utc_ms(2024, 2, 15, 12, 0, 0, 0), &sp);
    CHECK_INT(sp.fixed, 1);
    CHECK_INT(sp.idx, (2024 - 1970) * 12 + 1);
    CHECK_INT(sp.start_ms, utc_ms(2024, 2, 1, 0, 0, 0, 0));
    CHECK_INT(sp.len_ms, 29ull * 86400000); /* a leap year's February */
    kvg_quota_win_span(KVG_QW_MONTH, utc_ms(2023, 12, 31, 23, 59, 59, 999), &sp);
    int64_t dec = sp.idx;
    CHECK_INT(sp.len_ms, 31ull * 86400000);
    kvg_quota_win_span(KVG_QW_MONTH, utc_ms(2024, 1, 1, 0, 0, 0, 0), &sp);
    CHECK_INT(sp.idx, dec + 1);
    kvg_quota_win_span(KVG_QW_DAY, utc_ms(2024, 1, 1, 0, 0, 0, 0), &sp);
    CHECK_INT(sp.fixed, 0);
    CHECK_INT(sp.len_ms, 86400000);

    /* A monthly budget does not carry over: the 1st starts empty. */
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l1, l2, l3;
    uint64_t jan31 = utc_ms(2024, 1, 31, 23, 59, 0, 0), feb1 = utc_ms(2024, 2, 1, 0, 0, 0, 1);
    one_scope(&r, "key:month", 900, jan31);
    r.scope[0].lim.tokens[KVG_QW_MONTH] = 1000;
    r.scope[0].lim.requests[KVG_QW_MONTH] = 5;
    struct kvg_quota_result res = reserve(&f, &r, &l1);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 100);
    CHECK_INT(res.tokens.reset_ms, 60000); /* the month ends in a minute */
    r.est_cost = 200;
    res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.limited_win, KVG_QW_MONTH);
    CHECK_INT(res.retry_after_s, 60);
    r.now_ms = feb1;
    r.est_cost = 900;
    res = reserve(&f, &r, &l3);
    CHECK_INT(res.admitted, 1); /* a sliding window would still count January's 900 */
    CHECK_INT(res.tokens.remaining, 100);
    CHECK_INT(res.requests.remaining, 4);
    CHECK_INT(res.tokens.reset_ms, 29ull * 86400000 - 1);
    fx_close(&f);
}

/* A 237 s stream against 1000 tokens a minute: its 2,048 tokens land in the
 * window current when it ends, not in the reservation's long-gone one. */
TEST(reconcile_charges_the_window_where_tokens_were_produced)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l1, l2;
    one_scope(&r, "key:long", 2100, T0 + 1000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    CHECK_INT(reserve(&f, &r, &l1).admitted, 1);
    kvg_quota_reconcile_at(f.lq, &l1, 2048, T0 + 238000);
    one_scope(&r, "key:long", 1, T0 + 238000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    struct kvg_quota_result res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.tokens.remaining, 0);
    /* Reconciled one window later: the reservation leaves the previous
     * window and the usage counts in the current one. */
    one_scope(&r, "key:next", 600, T0 + 59000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    CHECK_INT(reserve(&f, &r, &l1).admitted, 1);
    kvg_quota_reconcile_at(f.lq, &l1, 300, T0 + 61000);
    one_scope(&r, "key:next", 0, T0 + 61000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    res = reserve(&f, &r, &l2);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 700); /* 300 now, nothing left in the previous window */
    fx_close(&f);
}

/* A peek sees exactly what a reservation would, across a window boundary
 * too, and changes nothing: the next reservation gets the same answer as
 * if no peek had happened. */
TEST(peek_reads_without_writing)
{
    struct fx f;
    fx_open(&f);
    struct kvg_quota_req r;
    struct kvg_quota_lease l, lp;
    one_scope(&r, "key:p", 70, T0 + 30000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    r.scope[0].lim.requests[KVG_QW_MINUTE] = 2;
    r.scope[0].lim.max_concurrent = 1;
    CHECK_INT(reserve(&f, &r, &l).admitted, 1);

    struct kvg_quota_result res;
    struct kvg_quota_op *op = (void *)1;
    for (int i = 0; i < 5; i++) {
        CHECK_INT(kvg_quota_peek(f.lq, &r, &lp, on_res, &res, &op), 0);
        CHECK(op == NULL);
        CHECK_INT(res.admitted, 0); /* the one slot is taken */
        CHECK_INT(lp.active, 0);
        CHECK_INT(lp.reserved, 0);
    }
    struct kvg_quota_usage u[8];
    size_t n = kvg_quota_lease_usage(&lp, u, 8);
    CHECK_INT(n, 3);
    CHECK_STR(u[0].scope, "key:p");
    CHECK_INT(u[0].kind, KVG_QK_TOKENS);
    CHECK_INT(u[0].used, 70);
    CHECK_INT(u[0].remaining, 30);
    CHECK_INT(u[1].kind, KVG_QK_REQUESTS);
    CHECK_INT(u[1].used, 1);
    CHECK_INT(u[2].kind, KVG_QK_CONCURRENT);
    CHECK_INT(u[2].win, -1);
    CHECK_INT(u[2].used, 1);
    CHECK_INT(u[2].remaining, 0);
    /* Reconciling a peeked lease is a no-op. */
    kvg_quota_reconcile(f.lq, &lp, 1000);

    kvg_quota_reconcile(f.lq, &l, 60);
    /* 15 s into the next window: 60 * 45/60 = 45 seen, as a reservation
     * would see it, and the entry has not been moved to that window. */
    r.now_ms = T0 + 75000;
    r.est_cost = 0;
    CHECK_INT(kvg_quota_peek(f.lq, &r, &lp, on_res, &res, NULL), 0);
    CHECK_INT(res.admitted, 1);
    n = kvg_quota_lease_usage(&lp, u, 8);
    CHECK_INT(u[0].used, 45);
    CHECK_INT(u[1].used, 0); /* floor(1 * 45/60) */
    CHECK_INT(u[2].used, 0);
    /* Peeks do not count as admitted requests. */
    struct kvg_quota_stats st;
    kvg_quota_stats(f.q, &st);
    CHECK_INT(st.admitted, 1);
    CHECK_INT(st.limited, 0);
    /* Back in the first window a reservation still sees its state intact. */
    one_scope(&r, "key:p", 40, T0 + 40000);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    r.scope[0].lim.requests[KVG_QW_MINUTE] = 2;
    r.scope[0].lim.max_concurrent = 1;
    res = reserve(&f, &r, &l);
    CHECK_INT(res.admitted, 1); /* 60 + 40 <= 100, second request, slot free */
    CHECK_INT(res.tokens.remaining, 0);
    fx_close(&f);
}
