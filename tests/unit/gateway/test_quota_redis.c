/* The Redis quota store against a real redis-server started here on a free
 * 127.0.0.1 port: agreement with the in-process store on a long random
 * sequence, two independent stores sharing one limit, NOSCRIPT fallback,
 * expiry, cancellation, and Redis killed or frozen mid-test (fail open and
 * fail closed, never a hang, reconnection). Every wait is bounded. */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/quota.h"
#include "net/redis.h"
#include "redis_proc.h"
#include "support/loop.h"
#include "support/test.h"

static struct redis_proc g_redis;
static char g_url[64];
static unsigned g_run; /* per-process prefix: leftovers of other runs never match */

static void stop_redis(void)
{
    redis_stop(&g_redis);
}

static void need_redis(void)
{
    if (g_redis.pid > 0) return;
    CHECK_INT(redis_start(&g_redis, g_redis.port), 0);
    snprintf(g_url, sizeof g_url, "redis://127.0.0.1:%d", g_redis.port);
    static int once;
    if (!once++) {
        atexit(stop_redis);
        g_run = (unsigned)getpid() ^ (unsigned)kvg_now_ns();
    }
}

struct waitres {
    int done;
    struct kvg_quota_result res;
};

static void on_res(void *ud, const struct kvg_quota_result *r)
{
    struct waitres *w = ud;
    w->res = *r;
    w->done++;
}

struct store {
    struct kvg_quota *q;
    struct kvg_quota_loop *lq;
};

static void store_open(struct store *s, uv_loop_t *loop, const char *url, int fail_open)
{
    struct kvg_quota_opts o;
    kvg_quota_opts_default(&o);
    o.fail_open = fail_open;
    o.timeout_ms = 100;
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 100;
    char err[256];
    CHECK_INT(kvg_quota_new(url, &o, &s->q, err, sizeof err), 0);
    CHECK_INT(kvg_quota_loop_open(s->q, loop, &s->lq), 0);
}

static void wait_connected(uv_loop_t *loop, struct store *s)
{
    for (int i = 0; i < 400 && !kvg_quota_loop_connected(s->lq); i++)
        kvg_test_run_until(loop, NULL, 10);
    CHECK(kvg_quota_loop_connected(s->lq));
}

static void store_close(struct store *s, uv_loop_t *loop)
{
    kvg_quota_loop_close(s->lq);
    kvg_quota_free(s->q);
    kvg_test_run_until(loop, NULL, 20);
}

static struct kvg_quota_result reserve(uv_loop_t *loop, struct store *s,
                                       const struct kvg_quota_req *r, struct kvg_quota_lease *l)
{
    struct waitres w = {0};
    CHECK_INT(kvg_quota_reserve(s->lq, r, l, on_res, &w, NULL), 0);
    kvg_test_run_until(loop, &w.done, 3000);
    CHECK_INT(w.done, 1); /* answered, and answered once */
    return w.res;
}

static struct kvg_quota_result peek(uv_loop_t *loop, struct store *s, const struct kvg_quota_req *r,
                                    struct kvg_quota_lease *l)
{
    struct waitres w = {0};
    CHECK_INT(kvg_quota_peek(s->lq, r, l, on_res, &w, NULL), 0);
    kvg_test_run_until(loop, &w.done, 3000);
    CHECK_INT(w.done, 1);
    CHECK_INT(l->active, 0);
    return w.res;
}

static void one_scope(struct kvg_quota_req *r, const char *name, int64_t est, uint64_t now)
{
    memset(r, 0, sizeof *r);
    r->nscopes = 1;
    snprintf(r->scope[0].id, sizeof r->scope[0].id, "key:%x-%s", g_run, name);
    kvg_quota_limits_none(&r->scope[0].lim);
    r->est_cost = est;
    r->now_ms = now;
}

static void same_result(const struct kvg_quota_result *a, const struct kvg_quota_result *b)
{
    CHECK_INT(a->admitted, b->admitted);
    CHECK_INT(a->store_error, b->store_error);
    CHECK_INT(a->retry_after_s, b->retry_after_s);
    CHECK_INT(a->limited_kind, b->limited_kind);
    CHECK_INT(a->limited_win, b->limited_win);
    CHECK_INT(a->tokens.present, b->tokens.present);
    CHECK_INT(a->tokens.limit, b->tokens.limit);
    CHECK_INT(a->tokens.remaining, b->tokens.remaining);
    CHECK_INT(a->tokens.reset_ms, b->tokens.reset_ms);
    CHECK_INT(a->requests.remaining, b->requests.remaining);
    CHECK_INT(a->requests.reset_ms, b->requests.reset_ms);
}

/* 400 random reservations and reconciliations at explicit times spanning
 * many windows, on both stores: every decision and header value agrees.
 * edge: one token limit only, costs in hundreds and short time steps, so
 * that usage lands exactly on the limit often (the rule's boundary). */
static void agree_run(int edge)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store mem, red;
    store_open(&mem, &loop, "memory", 1);
    store_open(&red, &loop, g_url, 0);
    wait_connected(&loop, &red);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7 + (uint64_t)edge);
    static struct kvg_quota_lease lm[400], lr[400];
    int live[400], nlive = 0, admitted = 0, refused = 0, exact = 0;
    int64_t unit = edge ? 100 : 50;
    /* 15 minutes before 2024-02-01 00:00 UTC: the run (~30 minutes) crosses
     * into the next day and month. */
    uint64_t now = 1706745600000ull - 15 * 60000ull + 12345;
    for (int i = 0; i < 400; i++) {
        /* edge: bursts in one window, then a gap that empties both windows,
         * so usage is a sum of round costs and meets the limit exactly. */
        if (edge)
            now += kvg_rng_below(&rng, 8) ? kvg_rng_below(&rng, 2000) : 130000;
        else
            now += kvg_rng_below(&rng, 9000);
        if (nlive && kvg_rng_below(&rng, 3) == 0) {
            int k = (int)kvg_rng_below(&rng, (uint64_t)nlive);
            int64_t actual = unit * (int64_t)kvg_rng_below(&rng, edge ? 5 : 10);
            /* At the sequence's time: the usage lands in the current windows. */
            kvg_quota_reconcile_at(mem.lq, &lm[live[k]], actual, now);
            kvg_quota_reconcile_at(red.lq, &lr[live[k]], actual, now);
            live[k] = live[--nlive];
            kvg_test_run_until(&loop, NULL, 2); /* the reconcile is fire and forget */
            continue;
        }
        struct kvg_quota_req r;
        one_scope(&r, edge ? "agree-edge" : "agree", unit * (int64_t)kvg_rng_below(&rng, 7), now);
        r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
        if (!edge) {
            r.nscopes = 2;
            r.scope[0].lim.tokens[KVG_QW_HOUR] = 6000;
            r.scope[0].lim.requests[KVG_QW_MINUTE] = 12;
            snprintf(r.scope[1].id, sizeof r.scope[1].id, "tenant:%x-agree", g_run);
            kvg_quota_limits_none(&r.scope[1].lim);
            r.scope[1].lim.max_concurrent = 4;
            r.scope[1].lim.tokens[KVG_QW_DAY] = 50000;
            r.scope[1].lim.tokens[KVG_QW_MONTH] = 200000;
            r.scope[1].lim.requests[KVG_QW_MONTH] = 150;
        }
        /* Peeks first: both stores read the same counters, and what they
         * read is what the reservation then sees (the peek wrote nothing). */
        static struct kvg_quota_lease pm, pr;
        struct kvg_quota_result pa = peek(&loop, &mem, &r, &pm);
        struct kvg_quota_result pb = peek(&loop, &red, &r, &pr);
        same_result(&pa, &pb);
        struct kvg_quota_result a = reserve(&loop, &mem, &r, &lm[i]);
        struct kvg_quota_result b = reserve(&loop, &red, &r, &lr[i]);
        same_result(&a, &b);
        CHECK_INT(pa.admitted, a.admitted);
        CHECK_INT(pm.nitems, lm[i].nitems);
        for (size_t k = 0; k < pm.nitems; k++) {
            CHECK_INT(pm.item[k].cur, lm[i].item[k].cur);
            CHECK_INT(pr.item[k].cur, lr[i].item[k].cur);
            CHECK_INT(pm.item[k].prev, lm[i].item[k].prev);
            CHECK_INT(pr.item[k].prev, lr[i].item[k].prev);
        }
        if (a.admitted) {
            live[nlive++] = i;
            admitted++;
            exact += a.tokens.remaining == 0 && r.est_cost > 0;
        } else {
            refused++;
        }
    }
    CHECK(admitted > 20 && refused > 20); /* the sequence exercised both ways */
    if (edge) CHECK(exact >= 3);          /* and the boundary itself */
    store_close(&mem, &loop);
    store_close(&red, &loop);
    uv_loop_close(&loop);
}

TEST(stores_agree_on_a_random_sequence)
{
    agree_run(0);
}

TEST(stores_agree_exactly_at_the_limit)
{
    agree_run(1);
}

TEST(two_instances_share_one_limit)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store a, b;
    store_open(&a, &loop, g_url, 0);
    store_open(&b, &loop, g_url, 0);
    wait_connected(&loop, &a);
    wait_connected(&loop, &b);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    int got = 0;
    for (int i = 0; i < 30; i++) {
        one_scope(&r, "shared", 10, 0);
        r.scope[0].lim.requests[KVG_QW_MINUTE] = 11;
        r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
        struct kvg_quota_result res = reserve(&loop, i % 2 ? &a : &b, &r, &l);
        CHECK_INT(res.store_error, 0);
        if (res.admitted) {
            got++;
            kvg_quota_reconcile(i % 2 ? a.lq : b.lq, &l, 10);
        }
    }
    CHECK_INT(got, 10); /* 100 tokens / 10 each, across both replicas */
    /* Concurrency slots are shared too. */
    struct kvg_quota_lease s1, s2, s3;
    one_scope(&r, "conc", 0, 0);
    r.scope[0].lim.max_concurrent = 2;
    CHECK_INT(reserve(&loop, &a, &r, &s1).admitted, 1);
    CHECK_INT(reserve(&loop, &b, &r, &s2).admitted, 1);
    struct kvg_quota_result res = reserve(&loop, &b, &r, &s3);
    CHECK_INT(res.admitted, 0);
    CHECK_INT(res.limited_kind, KVG_QK_CONCURRENT);
    kvg_quota_reconcile(a.lq, &s1, 0);
    kvg_test_run_until(&loop, NULL, 50);
    CHECK_INT(reserve(&loop, &b, &r, &s3).admitted, 1);
    store_close(&a, &loop);
    store_close(&b, &loop);
    uv_loop_close(&loop);
}

TEST(noscript_falls_back_to_eval_and_keys_expire)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store s;
    store_open(&s, &loop, g_url, 0);
    wait_connected(&loop, &s);
    CHECK_INT(redis_int(g_redis.port, "SCRIPT FLUSH", NULL), 1);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    uint64_t now = 1800000000000ull; /* a minute boundary */
    one_scope(&r, "flush", 30, now);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    struct kvg_quota_result res = reserve(&loop, &s, &r, &l);
    CHECK_INT(res.store_error, 0);
    CHECK_INT(res.admitted, 1);
    CHECK_INT(res.tokens.remaining, 70);
    char key[400];
    snprintf(key, sizeof key, "kvg:q:%s:tm:%llu", r.scope[0].id, (unsigned long long)(now / 60000));
    CHECK_INT(redis_int(g_redis.port, "GET %s", key), 30);
    long long ttl = redis_int(g_redis.port, "PTTL %s", key);
    CHECK(ttl > 60000 && ttl <= 180000); /* two windows and a minute */
    kvg_quota_reconcile(s.lq, &l, 12);
    kvg_test_run_until(&loop, NULL, 50);
    CHECK_INT(redis_int(g_redis.port, "GET %s", key), 12);
    store_close(&s, &loop);
    uv_loop_close(&loop);
}

static void never(void *ud, const struct kvg_quota_result *r)
{
    (*(int *)ud)++;
}

TEST(cancelled_reservation_is_given_back)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store s;
    store_open(&s, &loop, g_url, 0);
    wait_connected(&loop, &s);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    uint64_t now = 1800000000000ull;
    one_scope(&r, "cancel", 40, now);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 100;
    r.scope[0].lim.max_concurrent = 5;
    int calls = 0;
    struct kvg_quota_op *op = NULL;
    CHECK_INT(kvg_quota_reserve(s.lq, &r, &l, never, &calls, &op), 0);
    CHECK(op != NULL);
    kvg_quota_cancel(op);
    kvg_test_run_until(&loop, NULL, 150);
    CHECK_INT(calls, 0);
    char key[400];
    snprintf(key, sizeof key, "kvg:q:%s:tm:%llu", r.scope[0].id, (unsigned long long)(now / 60000));
    CHECK_INT(redis_int(g_redis.port, "GET %s", key), 0);
    snprintf(key, sizeof key, "kvg:q:%s:cc", r.scope[0].id);
    CHECK_INT(redis_int(g_redis.port, "ZCARD %s", key), 0);
    store_close(&s, &loop);
    uv_loop_close(&loop);
}

/* SIGKILL the server: both policies answer at once, then both stores come
 * back on their own when a new server listens on the port. */
TEST(redis_killed_fail_open_and_closed_then_reconnect)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store open_s, closed_s;
    store_open(&open_s, &loop, g_url, 1);
    store_open(&closed_s, &loop, g_url, 0);
    wait_connected(&loop, &open_s);
    wait_connected(&loop, &closed_s);
    redis_stop(&g_redis);
    struct kvg_quota_req r;
    struct kvg_quota_lease l1, l2;
    one_scope(&r, "killed", 10, 0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    struct kvg_quota_result a = reserve(&loop, &open_s, &r, &l1);
    struct kvg_quota_result b = reserve(&loop, &closed_s, &r, &l2);
    CHECK_INT(a.store_error, 1);
    CHECK_INT(a.admitted, 1);
    CHECK_INT(b.store_error, 1);
    CHECK_INT(b.admitted, 0);
    CHECK_INT(b.retry_after_s, 1);
    kvg_quota_reconcile(open_s.lq, &l1, 10); /* lost, counted, harmless */
    struct kvg_quota_stats st;
    kvg_quota_stats(open_s.q, &st);
    CHECK(st.fail_open >= 1 && st.store_errors >= 1 && st.fail_closed == 0);
    kvg_quota_stats(closed_s.q, &st);
    CHECK(st.fail_closed >= 1 && st.fail_open == 0);
    CHECK_INT(redis_start(&g_redis, g_redis.port), 0);
    wait_connected(&loop, &open_s);
    wait_connected(&loop, &closed_s);
    b = reserve(&loop, &closed_s, &r, &l2);
    CHECK_INT(b.store_error, 0);
    CHECK_INT(b.admitted, 1);
    kvg_quota_stats(closed_s.q, &st);
    CHECK(st.reconnects >= 1);
    store_close(&open_s, &loop);
    store_close(&closed_s, &loop);
    uv_loop_close(&loop);
}

/* SIGSTOP the server: the connection is open but nothing answers. The
 * reservation times out (100 ms here), the store reconnects after SIGCONT. */
TEST(frozen_redis_times_out_instead_of_hanging)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store s;
    store_open(&s, &loop, g_url, 0);
    wait_connected(&loop, &s);
    kill(g_redis.pid, SIGSTOP);
    struct kvg_quota_req r;
    struct kvg_quota_lease l;
    one_scope(&r, "frozen", 10, 0);
    r.scope[0].lim.tokens[KVG_QW_MINUTE] = 1000;
    struct kvg_quota_result res = reserve(&loop, &s, &r, &l);
    CHECK_INT(res.store_error, 1);
    CHECK_INT(res.admitted, 0);
    struct kvg_quota_stats st;
    kvg_quota_stats(s.q, &st);
    CHECK(st.timeouts >= 1);
    kill(g_redis.pid, SIGCONT);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        wait_connected(&loop, &s);
        res = reserve(&loop, &s, &r, &l);
        ok = !res.store_error;
        if (!ok) kvg_test_run_until(&loop, NULL, 20);
    }
    CHECK(ok);
    CHECK_INT(res.admitted, 1);
    store_close(&s, &loop);
    uv_loop_close(&loop);
}

TEST(bad_urls_are_refused)
{
    struct kvg_quota *q;
    char err[256];
    CHECK_INT(kvg_quota_new("redis://", NULL, &q, err, sizeof err), KVG_ECONFIG);
    CHECK_INT(kvg_quota_new("redis://127.0.0.1:99999", NULL, &q, err, sizeof err), KVG_ECONFIG);
    CHECK_INT(kvg_quota_new("redis://127.0.0.1:6379/x", NULL, &q, err, sizeof err), KVG_ECONFIG);
    struct kvg_redis_opts o;
    memset(&o, 0, sizeof o);
    CHECK_INT(kvg_redis_url_parse("redis://app:p@ss@127.0.0.1:7000/3", &o, err, sizeof err), 0);
    CHECK_STR(o.user, "app");
    CHECK_STR(o.password, "p@ss");
    CHECK_STR(o.ip, "127.0.0.1");
    CHECK_INT(o.port, 7000);
    CHECK_INT(o.db, 3);
    CHECK_INT(kvg_redis_url_parse("redis://[::1]", &o, err, sizeof err), 0);
    CHECK_STR(o.ip, "::1");
    CHECK_INT(o.port, 6379);
    CHECK_INT(o.db, 0);
    CHECK_INT(kvg_quota_new("redis://:pw@localhost:6390/2", NULL, &q, err, sizeof err), 0);
    CHECK_STR(kvg_quota_store_name(q), "redis");
    kvg_quota_free(q);
}

/* Sum of the token counters of a scope's windows (all kinds, any index). */
static long long scope_tokens(const char *scope)
{
    redisContext *c = redis_sync(g_redis.port);
    if (!c) return -999;
    redisReply *keys = redisCommand(c, "KEYS kvg:q:%s:t*", scope);
    long long sum = 0;
    for (size_t i = 0; keys && i < keys->elements; i++) {
        redisReply *v = redisCommand(c, "GET %s", keys->element[i]->str);
        if (v && v->type == REDIS_REPLY_STRING) sum += atoll(v->str);
        if (v) freeReplyObject(v);
    }
    if (keys) freeReplyObject(keys);
    redisFree(c);
    return sum;
}

/* SIGSTOP Redis while requests reserve and finish: kvgate times out and
 * fails open (or closed), Redis runs the reservations late after SIGCONT,
 * and the usage actually served is still charged exactly once: the late
 * reservations find their ids released, the reconciliations are sent again
 * until confirmed, and a reconciliation that ran twice counts once. */
TEST(stalled_redis_charges_served_usage_exactly_once)
{
    need_redis();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct store open_s, closed_s;
    store_open(&open_s, &loop, g_url, 1);
    store_open(&closed_s, &loop, g_url, 0);
    wait_connected(&loop, &open_s);
    wait_connected(&loop, &closed_s);
    struct kvg_quota_req r;
    struct kvg_quota_lease l[4], ok;
    one_scope(&r, "stall", 40, 0);
    r.scope[0].lim.tokens[KVG_QW_DAY] = 100000;
    r.scope[0].lim.max_concurrent = 10;
    /* Before the stall: reserved 40, used 25. */
    CHECK_INT(reserve(&loop, &open_s, &r, &ok).admitted, 1);
    kill(g_redis.pid, SIGSTOP);
    struct kvg_quota_result a = reserve(&loop, &open_s, &r, &l[0]);
    struct kvg_quota_result b = reserve(&loop, &closed_s, &r, &l[1]);
    CHECK_INT(a.store_error, 1);
    CHECK_INT(a.admitted, 1); /* failed open: served */
    CHECK_INT(b.store_error, 1);
    CHECK_INT(b.admitted, 0); /* failed closed: refused */
    CHECK(l[1].active);       /* but still to be released */
    int calls = 0;
    struct kvg_quota_op *op = NULL;
    CHECK_INT(kvg_quota_reserve(open_s.lq, &r, &l[2], never, &calls, &op), 0);
    kvg_quota_cancel(op); /* the client left while Redis did not answer */
    kvg_quota_reconcile(open_s.lq, &ok, 25);
    kvg_quota_reconcile(open_s.lq, &l[0], 30); /* the fail-open request used 30 */
    kvg_quota_reconcile(closed_s.lq, &l[1], 0);
    kvg_test_run_until(&loop, NULL, 300);
    struct kvg_quota_stats st;
    kvg_quota_stats(open_s.q, &st);
    CHECK(st.pending >= 1); /* waiting for Redis to come back */
    kill(g_redis.pid, SIGCONT);
    for (int i = 0; i < 200; i++) {
        struct kvg_quota_stats s2;
        kvg_quota_stats(open_s.q, &st);
        kvg_quota_stats(closed_s.q, &s2);
        if (st.pending == 0 && s2.pending == 0 && i > 20) break;
        kvg_test_run_until(&loop, NULL, 25);
    }
    CHECK_INT(st.pending, 0);
    CHECK_INT(st.dropped, 0);
    CHECK(st.retries >= 1);
    CHECK_INT(calls, 0);
    char scope[300];
    snprintf(scope, sizeof scope, "%s", r.scope[0].id);
    CHECK_INT(scope_tokens(scope), 55); /* 25 + 30, whatever ran late */
    char key[400];
    snprintf(key, sizeof key, "kvg:q:%s:cc", scope);
    CHECK_INT(redis_int(g_redis.port, "ZCARD %s", key), 0); /* every slot given back */
    /* A reconciliation that reaches Redis twice counts once. */
    CHECK_INT(reserve(&loop, &open_s, &r, &ok).admitted, 1);
    struct kvg_quota_lease twice = ok;
    kvg_quota_reconcile(open_s.lq, &ok, 7);
    kvg_quota_reconcile(open_s.lq, &twice, 7);
    kvg_test_run_until(&loop, NULL, 100);
    CHECK_INT(scope_tokens(scope), 62);
    store_close(&open_s, &loop);
    store_close(&closed_s, &loop);
    uv_loop_close(&loop);
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

TEST(refused_connection_is_named_not_timed_out)
{
    /* A port nothing listens on: the connection's error is the socket's
     * own "Connection refused" (which the store's failure log then shows),
     * not the connect timeout. */
    int port = redis_free_port();
    CHECK(port > 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_redis_opts o;
    memset(&o, 0, sizeof o);
    snprintf(o.ip, sizeof o.ip, "127.0.0.1");
    o.port = port;
    o.connect_timeout_ms = 300;
    o.backoff_min_ms = o.backoff_max_ms = 5000; /* one attempt in this test's time */
    struct kvg_redis_conn *c = NULL;
    CHECK_INT(kvg_redis_open(&loop, &o, NULL, NULL, &c), 0);
    CHECK_STR(kvg_redis_last_error(c), "");
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    for (int i = 0; i < 40 && !kvg_redis_last_error(c)[0]; i++) {
        uv_timer_start(&t, stop_loop, 50, 0);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    CHECK(strstr(kvg_redis_last_error(c), "refused") != NULL);
    CHECK(strstr(kvg_redis_last_error(c), "timed out") == NULL);
    kvg_redis_close(c);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&loop), 0);
}
