/* The quota limiter's front: costs from token counts, the sliding-window
 * arithmetic shared by both stores, results and their x-ratelimit headers,
 * and the dispatch to the in-process or Redis store. The design (window
 * algorithm, reservation, fail open/closed) is described in quota.h. */
#include <errno.h>
#include <math.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "gateway/quota_int.h"

#define COST_MAX ((int64_t)1 << 50) /* far above any real budget; keeps sums exact in doubles */

void kvg_quota_limits_none(struct kvg_quota_limits *l)
{
    for (int w = 0; w < KVG_QW_N; w++) l->tokens[w] = l->requests[w] = KVG_QUOTA_NONE;
    l->max_concurrent = KVG_QUOTA_NONE;
}

int kvg_quota_limits_any(const struct kvg_quota_limits *l)
{
    for (int w = 0; w < KVG_QW_N; w++)
        if (l->tokens[w] >= 0 || l->requests[w] >= 0) return 1;
    return l->max_concurrent >= 0;
}

/* Epoch ms of the first instant of month `idx` (months since 1970-01). */
static uint64_t month_start_ms(int64_t idx)
{
    struct tm tm = {.tm_year = (int)(70 + idx / 12), .tm_mon = (int)(idx % 12), .tm_mday = 1};
    time_t t = timegm(&tm);
    return t > 0 ? (uint64_t)t * 1000 : 0;
}

void kvg_quota_win_span(enum kvg_quota_win w, uint64_t now_ms, struct kvg_quota_span *out)
{
    static const uint64_t ms[KVG_QW_MONTH] = {60000, 3600000, 86400000};
    if (w == KVG_QW_MONTH) {
        time_t t = (time_t)(now_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        out->idx = (int64_t)(tm.tm_year - 70) * 12 + tm.tm_mon;
        out->start_ms = month_start_ms(out->idx);
        out->len_ms = month_start_ms(out->idx + 1) - out->start_ms;
        out->fixed = 1;
        return;
    }
    out->len_ms = ms[w];
    out->idx = (int64_t)(now_ms / ms[w]);
    out->start_ms = (uint64_t)out->idx * ms[w];
    out->fixed = 0;
}

static const char *win_name[KVG_QW_N] = {"minute", "hour", "day", "month"};

void kvg_quota_counting_default(struct kvg_quota_counting *c)
{
    c->mode = KVG_QM_TOTAL;
    c->w_input = c->w_cached_input = c->w_output = 1.0;
}

const char *kvg_quota_mode_name(enum kvg_quota_mode m)
{
    static const char *n[] = {"total", "input", "output", "weighted"};
    return (unsigned)m < 4 ? n[m] : "?";
}

static int64_t clamp_tokens(int64_t v)
{
    return v < 0 ? 0 : v > COST_MAX ? COST_MAX : v;
}

static int64_t weighted(double v)
{
    if (!(v > 0)) return 0;
    if (v >= (double)COST_MAX) return COST_MAX;
    return (int64_t)ceil(v - 1e-9); /* 0.1 * 30 is 3.0000000000000004: not 4 */
}

int64_t kvg_quota_cost_estimate(const struct kvg_quota_counting *c, int64_t prompt_tokens,
                                int64_t max_tokens)
{
    int64_t p = clamp_tokens(prompt_tokens), m = clamp_tokens(max_tokens);
    switch (c->mode) {
    case KVG_QM_INPUT:
        return p;
    case KVG_QM_OUTPUT:
        return m;
    case KVG_QM_WEIGHTED: {
        /* The cached share is unknown before the engine answers: charge the
         * dearer input weight so the reservation errs high, never low. */
        double wi = KVG_MAX(c->w_input, c->w_cached_input);
        return weighted((double)p * wi + (double)m * c->w_output);
    }
    default:
        return clamp_tokens(p + m);
    }
}

int64_t kvg_quota_cost_actual(const struct kvg_quota_counting *c, int64_t prompt_tokens,
                              int64_t cached_tokens, int64_t completion_tokens)
{
    int64_t p = clamp_tokens(prompt_tokens), o = clamp_tokens(completion_tokens);
    int64_t ca = KVG_MIN(clamp_tokens(cached_tokens), p);
    switch (c->mode) {
    case KVG_QM_INPUT:
        return p;
    case KVG_QM_OUTPUT:
        return o;
    case KVG_QM_WEIGHTED:
        return weighted((double)(p - ca) * c->w_input + (double)ca * c->w_cached_input +
                        (double)o * c->w_output);
    default:
        return clamp_tokens(p + o);
    }
}

/* ---- window arithmetic (mirrored operation for operation in the Redis
 * store's Lua script: keep the two in step) ---- */

int64_t kvg__quota_win_used(int64_t cur, int64_t prev, uint64_t e, uint64_t w, int fixed)
{
    if (cur < 0) cur = 0;
    if (prev < 0 || fixed) prev = 0;
    return cur + (int64_t)floor((double)prev * (double)(w - e) / (double)w);
}

int kvg__quota_win_admits(int64_t cur, int64_t prev, uint64_t e, uint64_t w, int fixed, int64_t lim,
                          int64_t cost)
{
    int64_t used = kvg__quota_win_used(cur, prev, e, w, fixed);
    return used < lim && used + cost <= lim;
}

static uint64_t retry_ms(int64_t cur, int64_t prev, uint64_t e, uint64_t w, int64_t lim,
                         int64_t cost)
{
    if (lim <= 0) return w - e; /* suspended: look again next window (a reload may lift it) */
    int64_t room = KVG_MIN(lim - cost, lim - 1); /* the most usage that still admits */
    int64_t curp = KVG_MAX(cur, 0), prevp = KVG_MAX(prev, 0);
    if (curp <= room) {
        /* Within this window, the previous window's weight decays:
         * floor(prevp * (w - e - t) / w) <= room - curp. */
        if (prevp == 0) return 0;
        double d = (double)(w - e) - (double)(room - curp + 1) * (double)w / (double)prevp;
        double t = floor(d) + 1;
        if (t < 0) t = 0;
        if (t > (double)(w - e)) t = (double)(w - e);
        return (uint64_t)t;
    }
    /* Next window: this window's count becomes the decaying one. */
    double d = (double)w - (double)(room + 1) * (double)w / (double)curp;
    double s = floor(d) + 1;
    if (s < 0) s = 0;
    if (s > (double)w) s = (double)w;
    return (w - e) + (uint64_t)s;
}

void kvg__quota_item_eval(const struct kvg_quota_item *it, uint64_t now_ms, int admitted,
                          struct kvg_quota_eval *out)
{
    memset(out, 0, sizeof *out);
    if (it->kind == KVG_QK_CONCURRENT) {
        out->ok = it->cur < it->limit;
        out->remaining = KVG_MAX(0, it->limit - it->cur - (admitted ? 1 : 0));
        out->retry_ms = out->ok ? 0 : 1000; /* a slot frees when some request ends */
        return;
    }
    struct kvg_quota_span sp;
    kvg_quota_win_span((enum kvg_quota_win)it->win, now_ms, &sp);
    uint64_t w = sp.len_ms, e = now_ms - sp.start_ms;
    int64_t used = kvg__quota_win_used(it->cur, it->prev, e, w, sp.fixed);
    out->ok = used < it->limit && used + it->cost <= it->limit;
    int64_t after = used + (admitted ? it->cost : 0);
    out->remaining = KVG_MAX(0, it->limit - after);
    int64_t curp = KVG_MAX(it->cur, 0) + (admitted ? it->cost : 0);
    if (sp.fixed) {
        /* A calendar month: everything is forgotten when the next begins. */
        out->reset_ms = curp > 0 ? w - e : 0;
        if (!out->ok) out->retry_ms = w - e;
        return;
    }
    out->reset_ms = curp > 0 ? 2 * w - e : it->prev > 0 ? w - e : 0;
    if (!out->ok) out->retry_ms = retry_ms(it->cur, it->prev, e, w, it->limit, it->cost);
}

static void add_item(struct kvg_quota_lease *l, size_t scope, int kind, int win, int64_t limit,
                     int64_t cost, uint64_t now_ms)
{
    struct kvg_quota_item *it = &l->item[l->nitems++];
    memset(it, 0, sizeof *it);
    it->scope = (uint8_t)scope;
    it->kind = (uint8_t)kind;
    it->win = (uint8_t)win;
    it->limit = limit;
    it->cost = cost;
    if (kind != KVG_QK_CONCURRENT) {
        struct kvg_quota_span sp;
        kvg_quota_win_span((enum kvg_quota_win)win, now_ms, &sp);
        it->widx = sp.idx;
    }
}

size_t kvg__quota_build_items(const struct kvg_quota_req *r, uint64_t now_ms,
                              struct kvg_quota_lease *l)
{
    l->nscopes = r->nscopes;
    l->nitems = 0;
    l->now_ms = now_ms;
    int64_t est = clamp_tokens(r->est_cost);
    for (size_t s = 0; s < r->nscopes; s++) {
        const struct kvg_quota_limits *lim = &r->scope[s].lim;
        snprintf(l->scope_id[s], sizeof l->scope_id[s], "%s", r->scope[s].id);
        for (int w = 0; w < KVG_QW_N; w++) {
            if (lim->tokens[w] >= 0)
                add_item(l, s, KVG_QK_TOKENS, w, lim->tokens[w], KVG_MIN(est, lim->tokens[w]),
                         now_ms);
            if (lim->requests[w] >= 0)
                add_item(l, s, KVG_QK_REQUESTS, w, lim->requests[w], 1, now_ms);
        }
        if (lim->max_concurrent >= 0)
            add_item(l, s, KVG_QK_CONCURRENT, -1, lim->max_concurrent, 1, now_ms);
    }
    return l->nitems;
}

/* The header values of one kind: the failing item that keeps the client out
 * longest, or else the item with the least left (the one that binds). */
static void pick_hval(const struct kvg_quota_lease *l, int kind, int admitted,
                      const struct kvg_quota_eval *ev, struct kvg_quota_hval *hv)
{
    int best = -1, best_fail = 0;
    for (size_t i = 0; i < l->nitems; i++) {
        if (l->item[i].kind != kind) continue;
        int fail = !admitted && !ev[i].ok;
        if (best < 0 || (fail && !best_fail) ||
            (fail == best_fail && (fail ? ev[i].retry_ms > ev[best].retry_ms
                                        : ev[i].remaining < ev[best].remaining ||
                                              (ev[i].remaining == ev[best].remaining &&
                                               ev[i].reset_ms > ev[best].reset_ms)))) {
            best = (int)i;
            best_fail = fail;
        }
    }
    if (best < 0) return;
    hv->present = 1;
    hv->limit = l->item[best].limit;
    hv->remaining = ev[best].remaining;
    hv->reset_ms = ev[best].reset_ms;
}

void kvg__quota_make_result(const struct kvg_quota_lease *l, int admitted,
                            struct kvg_quota_result *res)
{
    struct kvg_quota_eval ev[KVG_QUOTA_MAX_ITEMS];
    memset(res, 0, sizeof *res);
    res->admitted = admitted;
    res->limited_kind = res->limited_scope = res->limited_win = -1;
    uint64_t worst = 0;
    for (size_t i = 0; i < l->nitems; i++) {
        kvg__quota_item_eval(&l->item[i], l->now_ms, admitted, &ev[i]);
        if (!admitted && !ev[i].ok && (res->limited_kind < 0 || ev[i].retry_ms > worst)) {
            worst = ev[i].retry_ms;
            res->limited_kind = l->item[i].kind;
            res->limited_scope = l->item[i].scope;
            res->limited_win = l->item[i].kind == KVG_QK_CONCURRENT ? -1 : l->item[i].win;
        }
    }
    if (!admitted) res->retry_after_s = (uint32_t)KVG_MAX(1, (worst + 999) / 1000);
    pick_hval(l, KVG_QK_TOKENS, admitted, ev, &res->tokens);
    pick_hval(l, KVG_QK_REQUESTS, admitted, ev, &res->requests);
}

void kvg__quota_count(struct kvg_quota *q, const struct kvg_quota_result *res)
{
    if (res->admitted)
        atomic_fetch_add_explicit(&q->st_admitted, 1, memory_order_relaxed);
    else if (!res->store_error)
        atomic_fetch_add_explicit(&q->st_limited, 1, memory_order_relaxed);
}

void kvg__quota_store_failed(struct kvg_quota *q, struct kvg_quota_loop *lq,
                             struct kvg_quota_lease *l, int err, struct kvg_quota_result *res)
{
    atomic_fetch_add_explicit(&q->st_store_errors, 1, memory_order_relaxed);
    if (err == KVG_ETIMEOUT) atomic_fetch_add_explicit(&q->st_timeouts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(q->o.fail_open ? &q->st_fail_open : &q->st_fail_closed, 1,
                              memory_order_relaxed);
    /* One line per interval across all threads, however many requests fail. */
    uint64_t now = kvg_now_ms(), last = atomic_load_explicit(&q->last_log_ms, memory_order_relaxed);
    const char *why = lq && q->store == QS_REDIS ? kvg__qredis_last_error(lq) : "";
    if (!why[0]) why = kvg_strerror(err);
    if ((last == 0 || now - last >= q->o.log_interval_ms) &&
        atomic_compare_exchange_strong(&q->last_log_ms, &last, now ? now : 1))
        KVG_WARN("quota: %s store %s%s%.0d unavailable (%s): failing %s (further errors for %us "
                 "only counted)",
                 kvg_quota_store_name(q), q->ropts.ip, q->store == QS_REDIS ? ":" : "",
                 q->ropts.port, why, q->o.fail_open ? "open" : "closed",
                 q->o.log_interval_ms / 1000);
    memset(res, 0, sizeof *res);
    res->store_error = 1;
    res->admitted = q->o.fail_open;
    res->limited_kind = res->limited_scope = res->limited_win = -1;
    if (!res->admitted) res->retry_after_s = 1;
    /* Failing open keeps the lease active with nothing reserved: the actual
     * cost is still charged at the end if the store is back by then. */
    l->reserved = 0;
    l->active = res->admitted;
}

void kvg_quota_opts_default(struct kvg_quota_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = 50;
    o->connect_timeout_ms = 1000;
    o->reconnect_min_ms = 100;
    o->reconnect_max_ms = 5000;
    o->fail_open = 1;
    o->lease_ttl_ms = 3600 * 1000;
    o->log_interval_ms = 10000;
    o->op_ttl_ms = 600 * 1000;
}

int kvg_quota_new(const char *store, const struct kvg_quota_opts *o, struct kvg_quota **out,
                  char *err, size_t errlen)
{
    struct kvg_quota *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    if (o)
        q->o = *o;
    else
        kvg_quota_opts_default(&q->o);
    if (!RAND_bytes((unsigned char *)&q->lease_salt, sizeof q->lease_salt))
        q->lease_salt = kvg_now_ns() ^ (uint64_t)(uintptr_t)q;
    int rc;
    if (!store || !*store || !strcmp(store, "memory")) {
        q->store = QS_MEM;
        rc = kvg__qmem_new(&q->mem);
    } else if (!strncmp(store, "redis://", 8)) {
        q->store = QS_REDIS;
        q->ropts.timeout_ms = q->o.timeout_ms;
        q->ropts.connect_timeout_ms = q->o.connect_timeout_ms;
        q->ropts.backoff_min_ms = q->o.reconnect_min_ms;
        q->ropts.backoff_max_ms = q->o.reconnect_max_ms;
        rc = kvg_redis_url_parse(store, &q->ropts, err, errlen);
    } else {
        snprintf(err, errlen, "quota store '%s': expected 'memory' or redis://host:port", store);
        rc = KVG_ECONFIG;
    }
    if (rc) {
        kvg_quota_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

void kvg_quota_free(struct kvg_quota *q)
{
    if (!q) return;
    if (q->mem) kvg__qmem_free(q->mem);
    free(q);
}

const char *kvg_quota_store_name(const struct kvg_quota *q)
{
    return q->store == QS_MEM ? "memory" : "redis";
}

void kvg_quota_stats(const struct kvg_quota *q, struct kvg_quota_stats *s)
{
    s->admitted = atomic_load(&q->st_admitted);
    s->limited = atomic_load(&q->st_limited);
    s->store_errors = atomic_load(&q->st_store_errors);
    s->fail_open = atomic_load(&q->st_fail_open);
    s->fail_closed = atomic_load(&q->st_fail_closed);
    s->timeouts = atomic_load(&q->st_timeouts);
    s->reconnects = atomic_load(&q->st_reconnects);
    s->retries = atomic_load(&q->st_retries);
    s->dropped = atomic_load(&q->st_dropped);
    s->pending = atomic_load(&q->st_pending);
}

int kvg_quota_loop_open(struct kvg_quota *q, uv_loop_t *loop, struct kvg_quota_loop **out)
{
    struct kvg_quota_loop *lq = calloc(1, sizeof *lq);
    if (!lq) return -ENOMEM;
    lq->q = q;
    lq->loop = loop;
    if (q->store == QS_REDIS) {
        int rc = kvg__qredis_loop_open(lq);
        if (rc) {
            free(lq);
            return rc;
        }
    }
    *out = lq;
    return 0;
}

void kvg_quota_loop_close(struct kvg_quota_loop *lq)
{
    if (!lq) return;
    if (lq->q->store == QS_REDIS) kvg__qredis_loop_close(lq);
    free(lq);
}

int kvg_quota_loop_connected(const struct kvg_quota_loop *lq)
{
    return lq->q->store == QS_MEM || (lq->rc && kvg_redis_connected(lq->rc));
}

/* A peek the store could not answer: nothing was reserved or counted. */
static void peek_failed(struct kvg_quota_result *res)
{
    memset(res, 0, sizeof *res);
    res->store_error = 1;
    res->limited_kind = res->limited_scope = res->limited_win = -1;
}

/* Reserve or peek (lease->peek after the first lines): one path, so a peek
 * sees exactly the counters and verdict a reservation would. */
static int start(struct kvg_quota_loop *lq, const struct kvg_quota_req *r,
                 struct kvg_quota_lease *lease, kvg_quota_cb cb, void *ud, struct kvg_quota_op **op,
                 int peek)
{
    struct kvg_quota *q = lq->q;
    if (op) *op = NULL;
    if (!r || !lease || !cb || r->nscopes > KVG_QUOTA_MAX_SCOPES || r->est_cost < 0) return -EINVAL;
    memset(lease, 0, sizeof *lease);
    lease->explicit_time = r->now_ms != 0;
    uint64_t now = r->now_ms ? r->now_ms : kvg_wall_ms();
    uint64_t seq = atomic_fetch_add_explicit(&q->lease_seq, 1, memory_order_relaxed);
    snprintf(lease->id, sizeof lease->id, "%016llx%llx", (unsigned long long)q->lease_salt,
             (unsigned long long)seq);
    struct kvg_quota_result res;
    size_t nitems = kvg__quota_build_items(r, now, lease);
    lease->peek = peek;
    if (nitems == 0) {
        kvg__quota_make_result(lease, 1, &res);
        if (!peek) kvg__quota_count(q, &res);
        cb(ud, &res);
        return 0;
    }
    if (q->store == QS_MEM) {
        int admitted = peek ? kvg__qmem_peek(q->mem, lease) : kvg__qmem_reserve(q->mem, lease);
        if (admitted < 0) {
            kvg__quota_store_failed(q, NULL, lease, admitted, &res);
        } else if (peek) {
            kvg__quota_make_result(lease, admitted, &res);
        } else {
            lease->reserved = lease->active = admitted;
            kvg__quota_make_result(lease, admitted, &res);
            kvg__quota_count(q, &res);
        }
        cb(ud, &res);
        return 0;
    }
    struct kvg_quota_op *o = calloc(1, sizeof *o);
    if (!o) return -ENOMEM;
    o->lq = lq;
    o->lease = lease;
    o->copy = *lease;
    o->cb = cb;
    o->ud = ud;
    int rc = kvg__qredis_reserve(lq, o);
    if (rc) {
        free(o);
        if (peek)
            peek_failed(&res);
        else
            kvg__quota_store_failed(q, lq, lease, rc, &res);
        cb(ud, &res);
        return 0;
    }
    o->next = lq->ops;
    if (lq->ops) lq->ops->pprev = &o->next;
    o->pprev = &lq->ops;
    lq->ops = o;
    if (op) *op = o;
    return 0;
}

int kvg_quota_reserve(struct kvg_quota_loop *lq, const struct kvg_quota_req *r,
                      struct kvg_quota_lease *lease, kvg_quota_cb cb, void *ud,
                      struct kvg_quota_op **op)
{
    return start(lq, r, lease, cb, ud, op, 0);
}

int kvg_quota_peek(struct kvg_quota_loop *lq, const struct kvg_quota_req *r,
                   struct kvg_quota_lease *lease, kvg_quota_cb cb, void *ud,
                   struct kvg_quota_op **op)
{
    return start(lq, r, lease, cb, ud, op, 1);
}

size_t kvg_quota_lease_usage(const struct kvg_quota_lease *l, struct kvg_quota_usage *out,
                             size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < l->nitems && n < cap; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        struct kvg_quota_eval ev;
        kvg__quota_item_eval(it, l->now_ms, 0, &ev);
        struct kvg_quota_usage *u = &out[n++];
        u->scope = l->scope_id[it->scope];
        u->kind = it->kind;
        u->limit = it->limit;
        u->remaining = ev.remaining;
        u->reset_ms = ev.reset_ms;
        if (it->kind == KVG_QK_CONCURRENT) {
            u->win = -1;
            u->used = KVG_MAX(it->cur, 0);
            continue;
        }
        struct kvg_quota_span sp;
        kvg_quota_win_span((enum kvg_quota_win)it->win, l->now_ms, &sp);
        u->win = it->win;
        u->used =
            kvg__quota_win_used(it->cur, it->prev, l->now_ms - sp.start_ms, sp.len_ms, sp.fixed);
    }
    return n;
}

const char *kvg_quota_win_name(enum kvg_quota_win w)
{
    static const char *const names[KVG_QW_N] = {"minute", "hour", "day", "month"};
    return (unsigned)w < KVG_QW_N ? names[w] : "?";
}

void kvg__quota_op_done(struct kvg_quota_op *o, int admitted, int err)
{
    struct kvg_quota_loop *lq = o->lq;
    *o->pprev = o->next;
    if (o->next) o->next->pprev = o->pprev;
    struct kvg_quota_result res;
    if (o->copy.peek) {
        /* Read only: nothing to give back whatever happened. */
        if (o->lease) {
            if (err)
                peek_failed(&res);
            else
                kvg__quota_make_result(&o->copy, admitted, &res);
            *o->lease = o->copy;
        }
        kvg_quota_cb cb = o->lease ? o->cb : NULL;
        void *ud = o->ud;
        free(o);
        if (cb) cb(ud, &res);
        return;
    }
    if (!o->lease) {
        /* Cancelled: the client is gone, give back what landed, and release
         * what may still land (no answer: Redis may run it late). */
        if (!err && admitted) {
            o->copy.reserved = o->copy.active = 1;
            kvg_quota_reconcile(lq, &o->copy, 0);
        } else if (err) {
            o->copy.reserved = 0;
            o->copy.uncertain = o->copy.active = 1;
            kvg_quota_reconcile(lq, &o->copy, 0);
        }
        free(o);
        return;
    }
    if (err) {
        kvg__quota_store_failed(lq->q, lq, &o->copy, err, &res);
        /* The script was sent and may yet run: the lease stays active even
         * when failing closed, so the request's end releases it. */
        o->copy.uncertain = o->copy.active = 1;
    } else {
        o->copy.reserved = o->copy.active = admitted;
        kvg__quota_make_result(&o->copy, admitted, &res);
        kvg__quota_count(lq->q, &res);
    }
    *o->lease = o->copy;
    kvg_quota_cb cb = o->cb;
    void *ud = o->ud;
    free(o);
    cb(ud, &res);
}

void kvg_quota_cancel(struct kvg_quota_op *op)
{
    if (op) op->lease = NULL;
}

void kvg_quota_reconcile_at(struct kvg_quota_loop *lq, struct kvg_quota_lease *lease,
                            int64_t actual_cost, uint64_t now_ms)
{
    if (!lease || !lease->active) return;
    lease->active = 0;
    actual_cost = clamp_tokens(actual_cost);
    if (!now_ms) now_ms = lease->explicit_time ? lease->now_ms : kvg_wall_ms();
    if (lq->q->store == QS_MEM)
        kvg__qmem_reconcile(lq->q->mem, lease, actual_cost, now_ms);
    else
        kvg__qredis_reconcile(lq, lease, actual_cost, now_ms);
}

void kvg_quota_reconcile(struct kvg_quota_loop *lq, struct kvg_quota_lease *lease,
                         int64_t actual_cost)
{
    kvg_quota_reconcile_at(lq, lease, actual_cost, 0);
}

char *kvg_quota_fmt_reset(uint64_t ms, char *out, size_t len)
{
    if (ms < 1000) {
        snprintf(out, len, ms ? "%llums" : "0s", (unsigned long long)ms);
        return out;
    }
    unsigned long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
    size_t n = 0;
    if (h) n += (size_t)snprintf(out + n, len - n, "%lluh", h);
    if ((h || m) && n < len) n += (size_t)snprintf(out + n, len - n, "%llum", m);
    if (n >= len) return out;
    if (f) {
        char frac[8];
        snprintf(frac, sizeof frac, "%03llu", f);
        for (int i = 2; i > 0 && frac[i] == '0'; i--) frac[i] = 0;
        snprintf(out + n, len - n, "%llu.%ss", s, frac);
    } else {
        snprintf(out + n, len - n, "%llus", s);
    }
    return out;
}

void kvg_quota_headers(const struct kvg_quota_result *res, struct kvg_quota_headers *h)
{
    h->n = 0;
#define ADD(name, ...)                                                                             \
    do {                                                                                           \
        snprintf(h->buf[h->n], sizeof h->buf[h->n], __VA_ARGS__);                                  \
        h->h[h->n] =                                                                               \
            (struct kvg_http_header){KVG_STR(name), {h->buf[h->n], strlen(h->buf[h->n])}};         \
        h->n++;                                                                                    \
    } while (0)
    if (!res->admitted) ADD("retry-after", "%u", res->retry_after_s);
    const struct kvg_quota_hval *hv[2] = {&res->requests, &res->tokens};
    static const char *names[2][3] = {
        {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
         "x-ratelimit-reset-requests"},
        {"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"}};
    for (int k = 0; k < 2; k++) {
        if (!hv[k]->present) continue;
        char tmp[40];
        for (int j = 0; j < 3; j++) {
            if (j == 0)
                snprintf(h->buf[h->n], sizeof h->buf[h->n], "%lld", (long long)hv[k]->limit);
            else if (j == 1)
                snprintf(h->buf[h->n], sizeof h->buf[h->n], "%lld", (long long)hv[k]->remaining);
            else
                snprintf(h->buf[h->n], sizeof h->buf[h->n], "%s",
                         kvg_quota_fmt_reset(hv[k]->reset_ms, tmp, sizeof tmp));
            h->h[h->n] = (struct kvg_http_header){{names[k][j], strlen(names[k][j])},
                                                  {h->buf[h->n], strlen(h->buf[h->n])}};
            h->n++;
        }
    }
#undef ADD
}

void kvg_quota_describe(const struct kvg_quota_result *res, const struct kvg_quota_req *r,
                        char *out, size_t len)
{
    if (res->admitted) {
        snprintf(out, len, "within quota");
        return;
    }
    if (res->store_error) {
        snprintf(out, len, "the quota store is unavailable; try again shortly");
        return;
    }
    const char *scope = r && res->limited_scope >= 0 && (size_t)res->limited_scope < r->nscopes
                            ? r->scope[res->limited_scope].id
                            : "?";
    if (res->limited_kind == KVG_QK_CONCURRENT)
        snprintf(out, len, "Rate limit reached for %s: too many concurrent requests", scope);
    else
        snprintf(out, len, "Rate limit reached for %s: %s per %s; retry after %us", scope,
                 res->limited_kind == KVG_QK_TOKENS ? "tokens" : "requests",
                 res->limited_win >= 0 ? win_name[res->limited_win] : "?", res->retry_after_s);
}
