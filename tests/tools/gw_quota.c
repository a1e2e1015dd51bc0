/* gw_quota: one "replica" of the quota limiter for integration tests. It
 * makes N reservations of cost EST against one scope limited to LIMIT tokens
 * per minute (and optionally max concurrency), each reconciled with its
 * estimate, on its own libuv loop and store connection, and prints
 *     admitted A limited L errors E
 * Several processes against one Redis must together admit exactly
 * LIMIT / EST. With the store unreachable it shows fail open / closed.
 *
 *   gw_quota STORE SCOPE N EST LIMIT [open|closed] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/util.h"
#include "gateway/quota.h"

struct st {
    int pending, admitted, limited, errors;
};

static void on_res(void *ud, const struct kvg_quota_result *r)
{
    struct st *s = ud;
    s->pending = 0;
    if (r->store_error) s->errors++;
    if (r->admitted)
        s->admitted++;
    else if (!r->store_error)
        s->limited++;
}

static void tick(uv_timer_t *t) {}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: gw_quota STORE SCOPE N EST LIMIT [open|closed]\n");
        return 2;
    }
    int n = atoi(argv[3]);
    struct kvg_quota_opts o;
    kvg_quota_opts_default(&o);
    o.fail_open = !(argc > 6 && !strcmp(argv[6], "closed"));
    o.timeout_ms = 200;
    struct kvg_quota *q;
    char err[256];
    if (kvg_quota_new(argv[1], &o, &q, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_quota_loop *lq;
    kvg_quota_loop_open(q, &loop, &lq);
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    /* Up to 1 s for the first connection; a dead store stays unconnected. */
    for (uint64_t end = kvg_now_ms() + 1000; !kvg_quota_loop_connected(lq) && kvg_now_ms() < end;)
        uv_run(&loop, UV_RUN_ONCE);
    struct st s = {0};
    for (int i = 0; i < n; i++) {
        struct kvg_quota_req r;
        memset(&r, 0, sizeof r);
        r.nscopes = 1;
        snprintf(r.scope[0].id, sizeof r.scope[0].id, "%s", argv[2]);
        kvg_quota_limits_none(&r.scope[0].lim);
        r.scope[0].lim.tokens[KVG_QW_MINUTE] = atoll(argv[5]);
        r.est_cost = atoll(argv[4]);
        struct kvg_quota_lease l;
        s.pending = 1;
        kvg_quota_reserve(lq, &r, &l, on_res, &s, NULL);
        for (uint64_t end = kvg_now_ms() + 5000; s.pending && kvg_now_ms() < end;)
            uv_run(&loop, UV_RUN_ONCE);
        if (s.pending) {
            fprintf(stderr, "gw_quota: no answer within 5 s\n");
            return 1;
        }
        kvg_quota_reconcile(lq, &l, r.est_cost);
    }
    uv_run(&loop, UV_RUN_NOWAIT);
    printf("admitted %d limited %d errors %d\n", s.admitted, s.limited, s.errors);
    uv_close((uv_handle_t *)&t, NULL);
    kvg_quota_loop_close(lq);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    kvg_quota_free(q);
    return 0;
}
