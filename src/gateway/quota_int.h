/* Inside the quota limiter: the window arithmetic both stores share, and the
 * seams between the front (quota.c) and the stores (quota_mem.c,
 * quota_redis.c). Not for use outside src/gateway/quota*.c. */
#ifndef KVG_GATEWAY_QUOTA_INT_H
#define KVG_GATEWAY_QUOTA_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "gateway/quota.h"
#include "net/redis.h"

enum { QS_MEM, QS_REDIS };

struct qmem;   /* quota_mem.c */
struct qretry; /* quota_redis.c */

struct kvg_quota {
    int store;
    struct kvg_quota_opts o;
    struct qmem *mem;
    struct kvg_redis_opts ropts;
    uint64_t lease_salt;
    _Atomic uint64_t lease_seq;
    _Atomic uint64_t st_admitted, st_limited, st_store_errors, st_fail_open, st_fail_closed,
        st_timeouts, st_reconnects, st_retries, st_dropped, st_pending;
    _Atomic uint64_t last_log_ms;
};

struct kvg_quota_loop {
    struct kvg_quota *q;
    uv_loop_t *loop;
    struct kvg_redis_conn *rc; /* Redis store: this loop's connection */
    struct kvg_quota_op *ops;  /* Redis store: reservations in flight (list) */
    struct qretry *retry;      /* Redis store: reconciliations to send again (FIFO) */
    struct qretry **retry_tail;
    size_t nretry;
    uv_timer_t *retry_timer; /* owned; closed by kvg__qredis_loop_close */
    int ever_connected;
};

struct kvg_quota_op {
    struct kvg_quota_loop *lq;
    struct kvg_quota_lease *lease; /* the caller's; NULL once cancelled */
    struct kvg_quota_lease copy;   /* kept for giving back a cancelled reservation */
    kvg_quota_cb cb;
    void *ud;
    struct kvg_quota_op *next, **pprev;
};

/* The usage one limit sees e ms into a window of w ms: cur + floor(prev *
 * (w - e) / w), negatives as 0; a fixed window (a month) ignores prev. */
int64_t kvg__quota_win_used(int64_t cur, int64_t prev, uint64_t e, uint64_t w, int fixed);
/* The admission rule of quota.h for one token or request item. */
int kvg__quota_win_admits(int64_t cur, int64_t prev, uint64_t e, uint64_t w, int fixed, int64_t lim,
                          int64_t cost);

/* Per-item outcome computed from the counters before the reservation. */
struct kvg_quota_eval {
    int ok;
    int64_t remaining; /* after the reservation when admitted, else now */
    uint64_t reset_ms; /* until the counters are back to zero */
    uint64_t retry_ms; /* when !ok: until this item alone would admit the request */
};
void kvg__quota_item_eval(const struct kvg_quota_item *it, uint64_t now_ms, int admitted,
                          struct kvg_quota_eval *out);

/* Fills lease->item[] from the request (limits, costs, window indexes) and
 * the scope ids; counters zero. Returns the item count. */
size_t kvg__quota_build_items(const struct kvg_quota_req *r, uint64_t now_ms,
                              struct kvg_quota_lease *lease);
/* The result from a lease whose counters the store filled in. */
void kvg__quota_make_result(const struct kvg_quota_lease *lease, int admitted,
                            struct kvg_quota_result *res);
/* Store failure: fail open or closed, counted and logged (rate-limited).
 * lq (NULL for the memory store): its connection's last error names the
 * cause when there is one (a refused connection rather than the timeout
 * the command then saw). */
void kvg__quota_store_failed(struct kvg_quota *q, struct kvg_quota_loop *lq,
                             struct kvg_quota_lease *lease, int err, struct kvg_quota_result *res);
void kvg__quota_count(struct kvg_quota *q, const struct kvg_quota_result *res);

/* In-process store (quota_mem.c). */
int kvg__qmem_new(struct qmem **out);
void kvg__qmem_free(struct qmem *m);
/* Atomic check-and-reserve: fills each item's cur/prev; returns 1 admitted,
 * 0 limited, -ENOMEM. */
int kvg__qmem_reserve(struct qmem *m, struct kvg_quota_lease *lease);
/* The same counters and verdict, changing nothing (lease->peek). */
int kvg__qmem_peek(struct qmem *m, struct kvg_quota_lease *lease);
/* Takes the reservation back from its windows, charges actual to the
 * windows current at now_ms, frees the slots. */
void kvg__qmem_reconcile(struct qmem *m, const struct kvg_quota_lease *lease, int64_t actual,
                         uint64_t now_ms);
size_t kvg__qmem_entries(struct qmem *m);

/* Redis store (quota_redis.c). */
int kvg__qredis_loop_open(struct kvg_quota_loop *lq);
void kvg__qredis_loop_close(struct kvg_quota_loop *lq);
/* Sends the reserve script, or with op->copy.peek its read-only form. */
int kvg__qredis_reserve(struct kvg_quota_loop *lq, struct kvg_quota_op *op);
/* The loop's connection's last connect error, "" if none. */
const char *kvg__qredis_last_error(struct kvg_quota_loop *lq);
/* The same in Redis, applied once per lease id, resent until confirmed. */
void kvg__qredis_reconcile(struct kvg_quota_loop *lq, const struct kvg_quota_lease *lease,
                           int64_t actual, uint64_t now_ms);
/* Called by quota_redis.c when a reservation finished (admitted or not, or
 * err < 0 for a store failure). Frees op. */
void kvg__quota_op_done(struct kvg_quota_op *op, int admitted, int err);

#endif
