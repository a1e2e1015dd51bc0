/* The Redis quota store: the same sliding-window counters as the in-process
 * store (quota_mem.c), kept in Redis by two Lua scripts so that several
 * kvgate replicas enforce one limit.
 *
 * Keys (a scope id is "key:alice", "tenant:team-a", ...):
 *   kvg:q:<scope>:<t|r><m|h|d|M>:<window index>   integer counter, one per
 *       clock-aligned window (M: calendar month); expires 2 windows + 1
 *       minute after its last write, i.e. once it can no longer be the
 *       "previous" window;
 *   kvg:q:<scope>:cc   sorted set of concurrency leases, scored by the time
 *       a lease expires on its own (a replica that died holding it);
 *   kvg:q:op:<lease id>   the operation's mark: 'r' reserved (for the lease
 *       ttl), 'd' done (for op_ttl_ms): what makes each script apply once.
 *
 * reserve: reads every counter involved, applies the admission rule of
 * quota.h to each (the same formula as kvg__quota_win_admits, in the same
 * order of double operations), and only if all admit, adds the cost to every
 * counter and a lease to every concurrency set. Atomic: Redis runs a script
 * alone. It answers the counters as they were before, so the C side computes
 * the headers with the very code the in-process store uses.
 * reconcile: takes the reservation back from each token counter it went
 * to, if that counter still exists, adds the actual cost to the counter of
 * the current window, and removes the leases; once per lease id. A
 * reconciliation that fails (timeout, no connection) waits in a per-loop
 * queue and is sent again, with the same id, until Redis confirms it or
 * half of op_ttl_ms passed (so a copy that did run is still marked done
 * when the next one arrives). */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "gateway/quota_int.h"

/* ARGV: now, lease id, lease ttl, n, peek ('1': read only), then per item:
 * kind, limit, window length, ms into the window, fixed (1: a month, the
 * previous window does not count), cost. KEYS: per item its current and
 * previous counters (a concurrency item: its set), then the operation's
 * mark. An id already marked (released, or a duplicate) is not applied
 * again: {-1}. A peek writes nothing: it counts live slots instead of
 * sweeping the expired ones, and neither reserves nor marks. */
static const char reserve_lua[] =
    "local now = tonumber(ARGV[1])\n"
    "local lease = ARGV[2]\n"
    "local ttl = tonumber(ARGV[3])\n"
    "local n = tonumber(ARGV[4])\n"
    "local peek = ARGV[5] == '1'\n"
    "local opkey = KEYS[#KEYS]\n"
    "if not peek and redis.call('EXISTS', opkey) == 1 then return {-1} end\n"
    "local out = {0}\n"
    "local ok = 1\n"
    "local k = 1\n"
    "for i = 0, n - 1 do\n"
    "  local a = 6 + i * 6\n"
    "  local kind, lim, w, e, fixed, cost = ARGV[a], tonumber(ARGV[a+1]), tonumber(ARGV[a+2]), "
    "tonumber(ARGV[a+3]), ARGV[a+4], tonumber(ARGV[a+5])\n"
    "  if kind == 'c' then\n"
    "    local used\n"
    "    if peek then used = redis.call('ZCOUNT', KEYS[k], '(' .. now, '+inf')\n"
    "    else\n"
    "      redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now)\n"
    "      used = redis.call('ZCARD', KEYS[k])\n"
    "    end\n"
    "    out[#out+1] = used\n"
    "    out[#out+1] = 0\n"
    "    if used >= lim then ok = 0 end\n"
    "    k = k + 1\n"
    "  else\n"
    "    local cur = tonumber(redis.call('GET', KEYS[k]) or '0')\n"
    "    local prev = tonumber(redis.call('GET', KEYS[k+1]) or '0')\n"
    "    out[#out+1] = cur\n"
    "    out[#out+1] = prev\n"
    "    if cur < 0 then cur = 0 end\n"
    "    if prev < 0 or fixed == '1' then prev = 0 end\n"
    "    local used = cur + math.floor(prev * (w - e) / w)\n"
    "    if not (used < lim and used + cost <= lim) then ok = 0 end\n"
    "    k = k + 2\n"
    "  end\n"
    "end\n"
    "if ok == 1 and not peek then\n"
    "  k = 1\n"
    "  for i = 0, n - 1 do\n"
    "    local a = 6 + i * 6\n"
    "    if ARGV[a] == 'c' then\n"
    "      redis.call('ZADD', KEYS[k], now + ttl, lease)\n"
    "      redis.call('PEXPIRE', KEYS[k], ttl)\n"
    "      k = k + 1\n"
    "    else\n"
    "      redis.call('INCRBY', KEYS[k], ARGV[a+5])\n"
    "      redis.call('PEXPIRE', KEYS[k], 2 * tonumber(ARGV[a+2]) + 60000)\n"
    "      k = k + 2\n"
    "    end\n"
    "  end\n"
    "  redis.call('SET', opkey, 'r', 'PX', ttl)\n"
    "end\n"
    "out[1] = ok\n"
    "return out\n";

/* ARGV: ntok, lease id, mode ('1': reserved; '0': maybe, the reservation
 * had no answer), done ttl, then per token item: reserved cost, actual cost,
 * ttl of the current counter. KEYS: per token item the reservation's
 * window counter and the current window's, then the concurrency sets, then
 * the operation's mark. Applied once: the mark 'd' makes a repeat a no-op,
 * and the mark 'r' (or its absence) says whether the reservation landed. */
static const char reconcile_lua[] =
    "local nt = tonumber(ARGV[1])\n"
    "local opkey = KEYS[#KEYS]\n"
    "local mark = redis.call('GET', opkey)\n"
    "if mark == 'd' then return 0 end\n"
    "local reserved = mark == 'r' or (not mark and ARGV[3] == '1')\n"
    "for i = 1, nt do\n"
    "  local a = 2 + 3 * i\n"
    "  local back, actual = tonumber(ARGV[a]), tonumber(ARGV[a+1])\n"
    "  if reserved and back ~= 0 and redis.call('EXISTS', KEYS[2*i-1]) == 1 then\n"
    "    redis.call('DECRBY', KEYS[2*i-1], back)\n"
    "  end\n"
    "  if actual ~= 0 then\n"
    "    redis.call('INCRBY', KEYS[2*i], actual)\n"
    "    redis.call('PEXPIRE', KEYS[2*i], ARGV[a+2])\n"
    "  end\n"
    "end\n"
    "for i = 2 * nt + 1, #KEYS - 1 do redis.call('ZREM', KEYS[i], ARGV[2]) end\n"
    "redis.call('SET', opkey, 'd', 'PX', ARGV[4])\n"
    "return 1\n";

static struct kvg_redis_script reserve_script, reconcile_script;
static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;

static void init_scripts(void)
{
    kvg_redis_script_init(&reserve_script, reserve_lua);
    kvg_redis_script_init(&reconcile_script, reconcile_lua);
}

/* Argument storage for one script call: up to 2 keys and 4 args per item,
 * the bytes in one pool (a key is at most "kvg:q:" + scope id + ~25). */
#define MAXA (8 + KVG_QUOTA_MAX_ITEMS * 6)
struct args {
    const char *v[2 * MAXA];
    size_t len[2 * MAXA];
    int n;
    size_t used;
    char pool[KVG_QUOTA_MAX_ITEMS * 2 * (KVG_QUOTA_SCOPE_ID_MAX + 32) + 4096];
};

static void arg_add(struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg_add(struct args *a, const char *fmt, ...)
{
    char *p = a->pool + a->used;
    size_t room = sizeof a->pool - a->used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p, room, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= room) n = room ? (int)room - 1 : 0; /* cannot happen within the bounds */
    a->v[a->n] = p;
    a->len[a->n] = (size_t)n;
    a->n++;
    a->used += (size_t)n + (room ? 1 : 0);
}

/* Appends b's arguments after a's (keys first, then the rest, as EVAL wants). */
static void args_join(struct args *a, const struct args *b)
{
    for (int i = 0; i < b->n; i++) {
        a->v[a->n + i] = b->v[i];
        a->len[a->n + i] = b->len[i];
    }
}

/* ~40 KB per loop thread, reused by every call: off the loop's stack, and no
 * allocation per request. Calls never nest (a script's arguments are copied
 * by kvg_redis_eval before it returns). */
static _Thread_local struct args t_keys, t_argv;

static void counter_key(struct args *a, const struct kvg_quota_lease *l,
                        const struct kvg_quota_item *it, int64_t widx)
{
    arg_add(a, "kvg:q:%s:%c%c:%lld", l->scope_id[it->scope], "trc"[it->kind], "mhdM"[it->win],
            (long long)widx);
}

static void on_state(void *ud, int connected, const char *why)
{
    struct kvg_quota_loop *lq = ud;
    if (connected) {
        /* A loop's first connection is not a reconnect. */
        if (lq->ever_connected) atomic_fetch_add(&lq->q->st_reconnects, 1);
        lq->ever_connected = 1;
        KVG_DEBUG("quota: redis %s:%d connected", lq->q->ropts.ip, lq->q->ropts.port);
    } else {
        KVG_DEBUG("quota: redis %s:%d lost: %s", lq->q->ropts.ip, lq->q->ropts.port, why);
    }
}

const char *kvg__qredis_last_error(struct kvg_quota_loop *lq)
{
    return lq->rc ? kvg_redis_last_error(lq->rc) : "";
}

static void on_reserve(void *ud, redisReply *r, int err)
{
    struct kvg_quota_op *op = ud;
    struct kvg_quota_lease *l = &op->copy;
    if (err) {
        kvg__quota_op_done(op, 0, err);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 2 * l->nitems) {
        if (r->type == REDIS_REPLY_ERROR) KVG_DEBUG("quota: redis script error: %s", r->str);
        kvg__quota_op_done(op, 0, KVG_EUPSTREAM);
        return;
    }
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            kvg__quota_op_done(op, 0, KVG_EUPSTREAM);
            return;
        }
    for (size_t i = 0; i < l->nitems; i++) {
        l->item[i].cur = r->element[1 + 2 * i]->integer;
        l->item[i].prev = r->element[2 + 2 * i]->integer;
    }
    kvg__quota_op_done(op, r->element[0]->integer == 1, 0);
}

int kvg__qredis_reserve(struct kvg_quota_loop *lq, struct kvg_quota_op *op)
{
    const struct kvg_quota_lease *l = &op->copy;
    struct args *keys = &t_keys, *argv = &t_argv;
    keys->n = argv->n = 0;
    keys->used = argv->used = 0;
    arg_add(argv, "%llu", (unsigned long long)l->now_ms);
    arg_add(argv, "%s", l->id);
    arg_add(argv, "%u", lq->q->o.lease_ttl_ms);
    arg_add(argv, "%zu", l->nitems);
    arg_add(argv, "%d", l->peek ? 1 : 0);
    for (size_t i = 0; i < l->nitems; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        if (it->kind == KVG_QK_CONCURRENT) {
            arg_add(keys, "kvg:q:%s:cc", l->scope_id[it->scope]);
            arg_add(argv, "c");
            arg_add(argv, "%lld", (long long)it->limit);
            arg_add(argv, "1");
            arg_add(argv, "0");
            arg_add(argv, "0");
            arg_add(argv, "1");
        } else {
            struct kvg_quota_span sp;
            kvg_quota_win_span((enum kvg_quota_win)it->win, l->now_ms, &sp);
            counter_key(keys, l, it, it->widx);
            counter_key(keys, l, it, it->widx - 1);
            arg_add(argv, "%c", it->kind == KVG_QK_TOKENS ? 't' : 'r');
            arg_add(argv, "%lld", (long long)it->limit);
            arg_add(argv, "%llu", (unsigned long long)sp.len_ms);
            arg_add(argv, "%llu", (unsigned long long)(l->now_ms - sp.start_ms));
            arg_add(argv, "%d", sp.fixed);
            arg_add(argv, "%lld", (long long)it->cost);
        }
    }
    arg_add(keys, "kvg:q:op:%s", l->id);
    args_join(keys, argv);
    return kvg_redis_eval(lq->rc, &reserve_script, keys->n, keys->n + argv->n, keys->v, keys->len,
                          on_reserve, op);
}

/* A reconciliation until Redis confirms it. */
struct qretry {
    struct qretry *next;
    struct kvg_quota_loop *lq;
    struct kvg_quota_lease lease;
    int64_t actual;
    uint64_t now_ms;     /* wall clock of the reconciliation: its windows */
    uint64_t give_up_ms; /* loop time after which it is dropped */
    int queued;          /* on lq->retry (not in flight) */
};

#define RETRY_MAX 4096 /* queued at most per loop (a lease is ~3 KB) */
#define RETRY_EVERY_MS 200
#define RETRY_BATCH 64 /* sent per timer tick */

static int send_reconcile(struct qretry *rt);

static void retry_drop(struct qretry *rt)
{
    atomic_fetch_add(&rt->lq->q->st_dropped, 1);
    atomic_fetch_sub(&rt->lq->q->st_pending, 1);
    free(rt);
}

static void retry_closed(uv_handle_t *h)
{
    free(h);
}

static void on_retry_timer(uv_timer_t *t)
{
    struct kvg_quota_loop *lq = t->data;
    if (!lq->rc || !kvg_redis_connected(lq->rc)) return; /* not yet: next tick */
    uint64_t now = uv_now(lq->loop);
    for (int i = 0; i < RETRY_BATCH && lq->retry; i++) {
        struct qretry *rt = lq->retry;
        lq->retry = rt->next;
        if (!lq->retry) lq->retry_tail = &lq->retry;
        lq->nretry--;
        rt->queued = 0;
        rt->next = NULL;
        if (now > rt->give_up_ms) {
            retry_drop(rt);
            continue;
        }
        atomic_fetch_add(&lq->q->st_retries, 1);
        if (send_reconcile(rt)) break; /* requeued: the connection went */
    }
    if (!lq->retry) uv_timer_stop(t);
}

/* Queues rt to be sent again (or drops it: loop closing, queue full, too old). */
static void retry_later(struct qretry *rt)
{
    struct kvg_quota_loop *lq = rt->lq;
    if (!lq->retry_timer || lq->nretry >= RETRY_MAX || uv_now(lq->loop) > rt->give_up_ms) {
        retry_drop(rt);
        return;
    }
    rt->queued = 1;
    rt->next = NULL;
    *lq->retry_tail = rt;
    lq->retry_tail = &rt->next;
    lq->nretry++;
    if (!uv_is_active((uv_handle_t *)lq->retry_timer))
        uv_timer_start(lq->retry_timer, on_retry_timer, RETRY_EVERY_MS, RETRY_EVERY_MS);
}

static void on_reconcile(void *ud, redisReply *r, int err)
{
    struct qretry *rt = ud;
    struct kvg_quota *q = rt->lq->q;
    if (err || r->type == REDIS_REPLY_ERROR) {
        atomic_fetch_add(&q->st_store_errors, 1);
        if (err == KVG_ETIMEOUT) atomic_fetch_add(&q->st_timeouts, 1);
        if (!err) KVG_DEBUG("quota: redis reconcile error: %s", r->str);
        /* Same id again later: applied at most once whatever happened. */
        retry_later(rt);
        return;
    }
    atomic_fetch_sub(&q->st_pending, 1);
    free(rt);
}

/* Sends rt; on a send failure it is queued again. Returns 0 when sent. */
static int send_reconcile(struct qretry *rt)
{
    struct kvg_quota_loop *lq = rt->lq;
    const struct kvg_quota_lease *l = &rt->lease;
    struct args *keys = &t_keys, *argv = &t_argv;
    keys->n = argv->n = 0;
    keys->used = argv->used = 0;
    int ntok = 0;
    for (size_t i = 0; i < l->nitems; i++) ntok += l->item[i].kind == KVG_QK_TOKENS;
    arg_add(argv, "%d", ntok);
    arg_add(argv, "%s", l->id);
    arg_add(argv, "%d", l->reserved ? 1 : 0);
    arg_add(argv, "%u", lq->q->o.op_ttl_ms);
    for (size_t i = 0; i < l->nitems; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        if (it->kind != KVG_QK_TOKENS) continue;
        struct kvg_quota_span sp;
        kvg_quota_win_span((enum kvg_quota_win)it->win, rt->now_ms, &sp);
        counter_key(keys, l, it, it->widx);
        counter_key(keys, l, it, sp.idx);
        arg_add(argv, "%lld", (long long)it->cost);
        arg_add(argv, "%lld", (long long)rt->actual);
        arg_add(argv, "%llu", (unsigned long long)(2 * sp.len_ms + 60000));
    }
    for (size_t i = 0; i < l->nitems; i++)
        if (l->item[i].kind == KVG_QK_CONCURRENT)
            arg_add(keys, "kvg:q:%s:cc", l->scope_id[l->item[i].scope]);
    arg_add(keys, "kvg:q:op:%s", l->id);
    args_join(keys, argv);
    int rc = kvg_redis_eval(lq->rc, &reconcile_script, keys->n, keys->n + argv->n, keys->v,
                            keys->len, on_reconcile, rt);
    if (rc) {
        atomic_fetch_add(&lq->q->st_store_errors, 1);
        retry_later(rt);
    }
    return rc;
}

void kvg__qredis_reconcile(struct kvg_quota_loop *lq, const struct kvg_quota_lease *l,
                           int64_t actual, uint64_t now_ms)
{
    int any = 0;
    for (size_t i = 0; i < l->nitems; i++)
        any |= l->item[i].kind == KVG_QK_TOKENS || l->item[i].kind == KVG_QK_CONCURRENT;
    /* Nothing to give back or charge: a request limit only, surely reserved
     * (it counts once admitted), or surely not. */
    if (!any && !l->uncertain) return;
    struct qretry *rt = malloc(sizeof *rt);
    if (!rt) {
        atomic_fetch_add(&lq->q->st_dropped, 1);
        return;
    }
    memset(rt, 0, offsetof(struct qretry, lease));
    rt->lq = lq;
    rt->lease = *l;
    rt->actual = actual;
    rt->now_ms = now_ms;
    rt->give_up_ms = uv_now(lq->loop) + lq->q->o.op_ttl_ms / 2;
    rt->queued = 0;
    atomic_fetch_add(&lq->q->st_pending, 1);
    send_reconcile(rt);
}

int kvg__qredis_loop_open(struct kvg_quota_loop *lq)
{
    pthread_once(&scripts_once, init_scripts);
    lq->retry = NULL;
    lq->retry_tail = &lq->retry;
    lq->nretry = 0;
    if (!(lq->retry_timer = malloc(sizeof *lq->retry_timer))) return -ENOMEM;
    uv_timer_init(lq->loop, lq->retry_timer);
    lq->retry_timer->data = lq;
    int rc = kvg_redis_open(lq->loop, &lq->q->ropts, on_state, lq, &lq->rc);
    if (rc) {
        uv_close((uv_handle_t *)lq->retry_timer, retry_closed);
        lq->retry_timer = NULL;
    }
    return rc;
}

void kvg__qredis_loop_close(struct kvg_quota_loop *lq)
{
    /* Reconciliations still waiting are lost with the process (counted);
     * with the timer gone, those failing below are dropped, not queued. */
    uv_close((uv_handle_t *)lq->retry_timer, retry_closed);
    lq->retry_timer = NULL;
    while (lq->retry) {
        struct qretry *rt = lq->retry;
        lq->retry = rt->next;
        retry_drop(rt);
    }
    lq->retry_tail = &lq->retry;
    lq->nretry = 0;
    /* Pending reservations fail (store error) inside this call. */
    kvg_redis_close(lq->rc);
    lq->rc = NULL;
}
