/* Token and request quotas: limits per API key, per tenant and per (tenant,
 * model), enforced with a reservation at admission and a reconciliation at
 * the end of the request, so N concurrent requests cannot overshoot a limit
 * N times (the failure of charge-after-only limiters such as LiteLLM's and
 * Envoy AI Gateway's).
 *
 * Window algorithm: the sliding-window counter. Each (scope, limit, window
 * length W) keeps two clock-aligned fixed-window counters, the current one
 * and the previous one; the usage seen at time t is
 *     used = cur + floor(prev * (W - e) / W)      (e = t mod W)
 * i.e. the previous window's count weighted by how much of it still overlaps
 * the sliding window [t - W, t]. Why this and not the others:
 *   - fixed windows let a client spend 2x the limit across a boundary
 *     (end of one minute, start of the next); the weighted previous window
 *     removes that burst;
 *   - GCRA is exact but reservations and refunds (reconcile) move its
 *     theoretical arrival time backwards and forwards, and "remaining" and
 *     "reset" for a daily token budget become hard to explain in headers;
 *   - two integer counters per limit, keyed by the window index, are trivial
 *     to keep atomically in a Redis Lua script and expire with their windows,
 *     and both stores evaluate the very same formula in IEEE doubles in the
 *     same order of operations (kvg__quota_win_admits in quota.c, the
 *     script in Lua), so the in-process and Redis stores agree decision
 *     for decision.
 * Windows are aligned to the wall clock (epoch milliseconds), so replicas
 * whose clocks agree (NTP) share window boundaries.
 *
 * Admission rule for one limit L with usage `used` and a request of cost c:
 *     admit iff used < L and used + min(c, L) <= L
 * An estimate above the limit is capped at the limit (such a request waits
 * for an empty window rather than never running); L = 0 rejects everything
 * (a suspended key). A request is admitted only if every applicable limit
 * admits it (all or nothing), and then its cost is added to every token
 * limit, 1 to every request limit and a slot taken from every concurrency
 * limit. kvg_quota_reconcile later takes the reservation back from the
 * window it went to (while that window still counts) and charges the actual
 * cost to the window current at reconcile time, the one in which the tokens
 * were produced (a stream longer than a window is not lost in an expired
 * one), and frees the slots. An admitted request always completes; its
 * overshoot, if any, blocks the next.
 *
 * Exactly once (the Redis store): every reservation carries an operation id
 * (the lease id). The reserve script applies an id once and marks it; the
 * reconcile script applies an id once and marks it done, so a reservation
 * Redis runs late (it was stalled past kvgate's timeout, kvgate failed open
 * or closed and went on) finds its id done and does nothing, and a
 * reconciliation kvgate could not confirm is simply sent again. A lease
 * whose reservation had no answer is reconciled as "maybe reserved": the
 * script knows from the mark which it was.
 *
 * Threads: struct kvg_quota is shared by every loop thread (thread-safe).
 * Each loop thread opens its own struct kvg_quota_loop (the Redis store holds
 * one connection per loop); a kvg_quota_loop is used only on its own loop. */
#ifndef KVG_GATEWAY_QUOTA_H
#define KVG_GATEWAY_QUOTA_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/http.h"

#define KVG_QUOTA_NONE (-1) /* a limit that is not set */

/* Minute, hour and day are sliding windows (above); a month is a calendar
 * month in UTC, a fixed window that starts empty on the 1st at 00:00 UTC
 * (what a monthly budget means to whoever pays it: no carry-over). */
enum kvg_quota_win { KVG_QW_MINUTE, KVG_QW_HOUR, KVG_QW_DAY, KVG_QW_MONTH, KVG_QW_N };

struct kvg_quota_limits {
    int64_t tokens[KVG_QW_N];   /* per window: KVG_QUOTA_NONE or >= 0 (0 = suspended) */
    int64_t requests[KVG_QW_N]; /* same */
    int64_t max_concurrent;     /* KVG_QUOTA_NONE or >= 0 */
};

/* Sets every limit to KVG_QUOTA_NONE. */
void kvg_quota_limits_none(struct kvg_quota_limits *l);
/* 1 if any limit is set. */
int kvg_quota_limits_any(const struct kvg_quota_limits *l);
/* The window of kind w that holds time now_ms (epoch ms): its index (now /
 * length; months since January 1970), start and length (a month's varies),
 * and whether it is fixed (the previous window does not count). */
struct kvg_quota_span {
    int64_t idx;
    uint64_t start_ms, len_ms;
    int fixed;
};
void kvg_quota_win_span(enum kvg_quota_win w, uint64_t now_ms, struct kvg_quota_span *out);

/* How a request's tokens become the cost charged against token limits. */
enum kvg_quota_mode { KVG_QM_TOTAL, KVG_QM_INPUT, KVG_QM_OUTPUT, KVG_QM_WEIGHTED };
struct kvg_quota_counting {
    enum kvg_quota_mode mode;
    double w_input;        /* weighted: uncached prompt tokens */
    double w_cached_input; /* weighted: prompt tokens served from the prefix cache */
    double w_output;       /* weighted: completion tokens */
};
void kvg_quota_counting_default(struct kvg_quota_counting *c); /* total, weights 1 */
/* Cost reserved at admission: prompt + max_tokens as the mode counts them.
 * Cached tokens are unknown then, so weighted mode charges all input at the
 * uncached weight (the reservation errs high; reconcile refunds). */
int64_t kvg_quota_cost_estimate(const struct kvg_quota_counting *c, int64_t prompt_tokens,
                                int64_t max_tokens);
/* Cost of real usage (cached_tokens is part of prompt_tokens, as OpenAI
 * reports it). Weighted costs round up. */
int64_t kvg_quota_cost_actual(const struct kvg_quota_counting *c, int64_t prompt_tokens,
                              int64_t cached_tokens, int64_t completion_tokens);
const char *kvg_quota_mode_name(enum kvg_quota_mode m);

/* A scope is one bucket owner: "key:alice", "tenant:team-a",
 * "model:team-a:llama-3-70b". The id names the counters in the store. */
#define KVG_QUOTA_MAX_SCOPES 4
#define KVG_QUOTA_SCOPE_ID_MAX 256
struct kvg_quota_scope {
    char id[KVG_QUOTA_SCOPE_ID_MAX];
    struct kvg_quota_limits lim;
};

struct kvg_quota_req {
    struct kvg_quota_scope scope[KVG_QUOTA_MAX_SCOPES];
    size_t nscopes;
    int64_t est_cost; /* kvg_quota_cost_estimate(), >= 0 */
    uint64_t now_ms;  /* wall clock, epoch ms; 0 = now (tests pass explicit times) */
};

/* What a reservation took, kept by the caller until kvg_quota_reconcile.
 * Plain data: copy or embed it freely; it does not point into the request
 * or the key set, so a SIGHUP reload in between is harmless. */
enum kvg_quota_kind { KVG_QK_TOKENS, KVG_QK_REQUESTS, KVG_QK_CONCURRENT };
#define KVG_QUOTA_MAX_ITEMS (KVG_QUOTA_MAX_SCOPES * (2 * KVG_QW_N + 1))
struct kvg_quota_item {
    uint8_t scope, kind, win;
    int64_t limit;
    int64_t cost;      /* reserved: min(est, limit) for tokens, 1 for requests/slots */
    int64_t widx;      /* window index (kvg_quota_win_span) the reservation went to */
    int64_t cur, prev; /* counters before the reservation (concurrency: cur = slots in use) */
};
struct kvg_quota_lease {
    char scope_id[KVG_QUOTA_MAX_SCOPES][KVG_QUOTA_SCOPE_ID_MAX];
    size_t nscopes;
    struct kvg_quota_item item[KVG_QUOTA_MAX_ITEMS];
    size_t nitems;
    uint64_t now_ms;
    int reserved;      /* 1: the store holds the reservation; 0: nothing to give back */
    int uncertain;     /* the reservation was sent but not answered: it may land */
    int active;        /* 1 until reconciled */
    int explicit_time; /* reserved at the request's now_ms (tests): reconciled then too */
    int peek;          /* kvg_quota_peek: read only, never reserved, never reconciled */
    char id[40];       /* lease id (the Redis store's concurrency slot member) */
};

/* Values for one family of x-ratelimit-* headers. */
struct kvg_quota_hval {
    int present;
    int64_t limit, remaining;
    uint64_t reset_ms;
};

struct kvg_quota_result {
    int admitted;
    int store_error;        /* the store failed; `admitted` says fail open (1) or closed (0) */
    int limited_kind;       /* enum kvg_quota_kind of the limit that said no; -1 if none */
    int limited_scope;      /* index into the request's scopes; -1 if none */
    int limited_win;        /* enum kvg_quota_win; -1 for concurrency */
    uint32_t retry_after_s; /* when rejected: seconds until a retry can succeed (>= 1) */
    struct kvg_quota_hval tokens, requests; /* the binding limit of each kind */
};

/* Options shared by both stores. */
struct kvg_quota_opts {
    uint32_t timeout_ms;                         /* Redis: per operation (50) */
    uint32_t connect_timeout_ms;                 /* Redis (1000) */
    uint32_t reconnect_min_ms, reconnect_max_ms; /* Redis: backoff (100, 5000) */
    int fail_open;            /* store unreachable: admit (1, default) or reject (0) */
    uint32_t lease_ttl_ms;    /* Redis: a concurrency slot of a replica that died
                                 frees itself after this (3600000) */
    uint32_t log_interval_ms; /* at most one store-error log line per interval (10000) */
    uint32_t op_ttl_ms;       /* Redis: how long an operation id is remembered once done,
                                 i.e. how late a stalled reservation may still land and be
                                 ignored, and how long a reconciliation is retried (600000) */
};
void kvg_quota_opts_default(struct kvg_quota_opts *o);

struct kvg_quota_stats {
    uint64_t admitted, limited, store_errors, fail_open, fail_closed, timeouts, reconnects;
    uint64_t retries; /* reconciliations sent again after a store error */
    uint64_t dropped; /* reconciliations given up (op_ttl_ms passed, or the queue full) */
    uint64_t pending; /* reconciliations not yet confirmed by the store (now) */
};

struct kvg_quota;
struct kvg_quota_loop;
struct kvg_quota_op;

/* Creates the limiter. store: NULL, "" or "memory" for the in-process store,
 * or "redis://[:password@]host[:port][/db]". A host name is resolved here,
 * once (call before the loops start). *out is the caller's:
 * kvg_quota_free() after every kvg_quota_loop is closed. Writes a reason to
 * err on KVG_ECONFIG. */
int kvg_quota_new(const char *store, const struct kvg_quota_opts *o, struct kvg_quota **out,
                  char *err, size_t errlen);
void kvg_quota_free(struct kvg_quota *q);
const char *kvg_quota_store_name(const struct kvg_quota *q); /* "memory" / "redis" */
void kvg_quota_stats(const struct kvg_quota *q, struct kvg_quota_stats *out);

/* Per loop thread; call on that thread. The Redis store connects in the
 * background from here on. *out belongs to the loop: kvg_quota_loop_close()
 * on the same thread, then let the loop run so its handles finish closing. */
int kvg_quota_loop_open(struct kvg_quota *q, uv_loop_t *loop, struct kvg_quota_loop **out);
/* Pending operations complete with a store error (their callbacks run,
 * fail open/closed as configured) before this returns. */
void kvg_quota_loop_close(struct kvg_quota_loop *lq);

/* 1 when the loop's store is usable now (always for the in-process store;
 * the Redis store: connected), for readiness checks and tests. */
int kvg_quota_loop_connected(const struct kvg_quota_loop *lq);

typedef void (*kvg_quota_cb)(void *ud, const struct kvg_quota_result *res);

/* Check-and-reserve, atomically across every limit of every scope. The
 * result goes to cb exactly once, on lq's loop: either before
 * kvg_quota_reserve returns (the in-process store always; the Redis store
 * when it has no connection and fails open/closed at once), then *op is
 * NULL; or later, within timeout_ms of the Redis store, then *op can cancel
 * it. `lease` is the caller's
 * storage and must stay valid until cb ran (or the op was cancelled); when
 * res->admitted, pass it to kvg_quota_reconcile exactly once. A request with
 * no limits at all is admitted at once without touching the store.
 * Returns 0, or -EINVAL for a malformed request (cb not called). */
int kvg_quota_reserve(struct kvg_quota_loop *lq, const struct kvg_quota_req *r,
                      struct kvg_quota_lease *lease, kvg_quota_cb cb, void *ud,
                      struct kvg_quota_op **op);
/* Read only: the counters every limit of r's scopes sees now, into
 * lease->item[], writing nothing to the store (no reservation, no counter
 * moved to a new window, no operation mark, no expired slot swept): what
 * the status page shows. Called and answered as kvg_quota_reserve, except
 * that res->admitted only says whether a request of r->est_cost would be
 * admitted now, the lease is never active (nothing to reconcile), and the
 * limiter's admitted/limited counters do not move. */
int kvg_quota_peek(struct kvg_quota_loop *lq, const struct kvg_quota_req *r,
                   struct kvg_quota_lease *lease, kvg_quota_cb cb, void *ud,
                   struct kvg_quota_op **op);

/* One limit's state in a peeked (or reserved) lease. */
struct kvg_quota_usage {
    const char *scope; /* points into the lease */
    int kind;          /* enum kvg_quota_kind */
    int win;           /* enum kvg_quota_win; -1 for concurrency */
    int64_t limit, used, remaining;
    uint64_t reset_ms; /* until the counters are back to zero (0: already) */
};
/* The usage of each of the lease's limits at its time, at most cap; returns
 * the count. */
size_t kvg_quota_lease_usage(const struct kvg_quota_lease *l, struct kvg_quota_usage *out,
                             size_t cap);
/* "minute", "hour", "day", "month". */
const char *kvg_quota_win_name(enum kvg_quota_win w);

/* The client went away while the reservation was pending: cb will not run,
 * and a reservation that still lands is given back. Loop thread only. */
void kvg_quota_cancel(struct kvg_quota_op *op);
/* End of request: gives back the reservation and charges actual_cost (0 for
 * a request that never reached an engine) to the current windows. Fire and
 * forget; the lease is copied, marked inactive, and may be reused at once. A
 * lease reconciled twice is ignored. The Redis store sends it again (same
 * operation id) until the store confirms it, for up to op_ttl_ms. Loop
 * thread of lq. */
void kvg_quota_reconcile(struct kvg_quota_loop *lq, struct kvg_quota_lease *lease,
                         int64_t actual_cost);
/* The same at an explicit time (epoch ms; 0: now, or for a lease reserved
 * at an explicit time, that time). */
void kvg_quota_reconcile_at(struct kvg_quota_loop *lq, struct kvg_quota_lease *lease,
                            int64_t actual_cost, uint64_t now_ms);

/* The response headers of a result: Retry-After when rejected, and
 * x-ratelimit-{limit,remaining,reset}-{tokens,requests} for the kinds that
 * have limits. Storage lives in *h; valid while *h is. */
struct kvg_quota_headers {
    struct kvg_http_header h[7];
    size_t n;
    char buf[7][48];
};
void kvg_quota_headers(const struct kvg_quota_result *res, struct kvg_quota_headers *h);
/* OpenAI-style duration ("6m0s", "1s", "1.5s", "20ms", "1h2m3s"); returns out. */
char *kvg_quota_fmt_reset(uint64_t ms, char *out, size_t len);
/* A one-line reason for a 429 body ("tokens per minute limit of key:alice
 * reached"). */
void kvg_quota_describe(const struct kvg_quota_result *res, const struct kvg_quota_req *r,
                        char *out, size_t len);

#endif
