/* The Redis quota store: the same sliding-window counters as the in-process
 * store (quota_mem.c), kept in Redis by two Lua scripts so that several
 * kvgate replicas enforce one limit.
 *
 * Keys (a scope id is "key:alice", "tenant:team-a", ...):
 *   kvg:q:<scope>:<t|r><m|h|d>:<window index>   integer counter, one per
 *       clock-aligned window; expires 2 windows + 1 minute after its last
 *       write, i.e. once it can no longer be the "previous" window;
 *   kvg:q:<scope>:cc   sorted set of concurrency leases, scored by the time
 *       a lease expires on its own (a replica that died holding it).
 *
 * reserve: reads every counter involved, applies the admission rule of
 * quota.h to each (the same formula as kvg_quota_win_admits, in the same
 * order of double operations), and only if all admit, adds the cost to every
 * counter and a lease to every concurrency set. Atomic: Redis runs a script
 * alone. It answers the counters as they were before, so the C side computes
 * the headers with the very code the in-process store uses.
 * reconcile: adds (actual - reserved) to each token counter the reservation
 * went to, if that counter still exists, and removes the leases. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "gateway/quota_int.h"

static const char reserve_lua[] =
    "local now = tonumber(ARGV[1])\n"
    "local lease = ARGV[2]\n"
    "local ttl = tonumber(ARGV[3])\n"
    "local n = tonumber(ARGV[4])\n"
    "local out = {0}\n"
    "local ok = 1\n"
    "local k = 1\n"
    "for i = 0, n - 1 do\n"
    "  local a = 5 + i * 4\n"
    "  local kind, lim, w, cost = ARGV[a], tonumber(ARGV[a+1]), tonumber(ARGV[a+2]), "
    "tonumber(ARGV[a+3])\n"
    "  if kind == 'c' then\n"
    "    redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now)\n"
    "    local used = redis.call('ZCARD', KEYS[k])\n"
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
    "    if prev < 0 then prev = 0 end\n"
    "    local e = now % w\n"
    "    local used = cur + math.floor(prev * (w - e) / w)\n"
    "    if not (used < lim and used + cost <= lim) then ok = 0 end\n"
    "    k = k + 2\n"
    "  end\n"
    "end\n"
    "if ok == 1 then\n"
    "  k = 1\n"
    "  for i = 0, n - 1 do\n"
    "    local a = 5 + i * 4\n"
    "    if ARGV[a] == 'c' then\n"
    "      redis.call('ZADD', KEYS[k], now + ttl, lease)\n"
    "      redis.call('PEXPIRE', KEYS[k], ttl)\n"
    "      k = k + 1\n"
    "    else\n"
    "      redis.call('INCRBY', KEYS[k], ARGV[a+3])\n"
    "      redis.call('PEXPIRE', KEYS[k], 2 * tonumber(ARGV[a+2]) + 60000)\n"
    "      k = k + 2\n"
    "    end\n"
    "  end\n"
    "end\n"
    "out[1] = ok\n"
    "return out\n";

/* ARGV: ntok, lease, reserved (1: adjust existing counters and free leases;
 * 0: a fail-open request, charge its cost as new usage), then per token key:
 * delta, ttl. KEYS: the token counters, then the concurrency sets. */
static const char reconcile_lua[] = "local nt = tonumber(ARGV[1])\n"
                                    "local reserved = ARGV[3] == '1'\n"
                                    "for i = 1, nt do\n"
                                    "  local d = ARGV[2 + 2 * i]\n"
                                    "  if reserved then\n"
                                    "    if redis.call('EXISTS', KEYS[i]) == 1 then\n"
                                    "      redis.call('INCRBY', KEYS[i], d)\n"
                                    "    end\n"
                                    "  elseif tonumber(d) ~= 0 then\n"
                                    "    redis.call('INCRBY', KEYS[i], d)\n"
                                    "    redis.call('PEXPIRE', KEYS[i], ARGV[3 + 2 * i])\n"
                                    "  end\n"
                                    "end\n"
                                    "if reserved then\n"
                                    "  for i = nt + 1, #KEYS do redis.call('ZREM', KEYS[i], "
                                    "ARGV[2]) end\n"
                                    "end\n"
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
#define MAXA (8 + KVG_QUOTA_MAX_ITEMS * 4)
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
    arg_add(a, "kvg:q:%s:%c%c:%lld", l->scope_id[it->scope], "trc"[it->kind], "mhd"[it->win],
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

int kvg_qredis_loop_open(struct kvg_quota_loop *lq)
{
    pthread_once(&scripts_once, init_scripts);
    return kvg_redis_open(lq->loop, &lq->q->ropts, on_state, lq, &lq->rc);
}

void kvg_qredis_loop_close(struct kvg_quota_loop *lq)
{
    /* Pending reservations fail (store error) inside this call. */
    kvg_redis_close(lq->rc);
    lq->rc = NULL;
}

static void on_reserve(void *ud, redisReply *r, int err)
{
    struct kvg_quota_op *op = ud;
    struct kvg_quota_lease *l = &op->copy;
    if (err) {
        kvg_quota_op_done(op, 0, err);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 2 * l->nitems) {
        if (r->type == REDIS_REPLY_ERROR) KVG_DEBUG("quota: redis script error: %s", r->str);
        kvg_quota_op_done(op, 0, KVG_EUPSTREAM);
        return;
    }
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            kvg_quota_op_done(op, 0, KVG_EUPSTREAM);
            return;
        }
    for (size_t i = 0; i < l->nitems; i++) {
        l->item[i].cur = r->element[1 + 2 * i]->integer;
        l->item[i].prev = r->element[2 + 2 * i]->integer;
    }
    kvg_quota_op_done(op, r->element[0]->integer == 1, 0);
}

int kvg_qredis_reserve(struct kvg_quota_loop *lq, struct kvg_quota_op *op)
{
    const struct kvg_quota_lease *l = &op->copy;
    struct args *keys = &t_keys, *argv = &t_argv;
    keys->n = argv->n = 0;
    keys->used = argv->used = 0;
    arg_add(argv, "%llu", (unsigned long long)l->now_ms);
    arg_add(argv, "%s", l->id);
    arg_add(argv, "%u", lq->q->o.lease_ttl_ms);
    arg_add(argv, "%zu", l->nitems);
    for (size_t i = 0; i < l->nitems; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        if (it->kind == KVG_QK_CONCURRENT) {
            arg_add(keys, "kvg:q:%s:cc", l->scope_id[it->scope]);
            arg_add(argv, "c");
            arg_add(argv, "%lld", (long long)it->limit);
            arg_add(argv, "0");
            arg_add(argv, "1");
        } else {
            counter_key(keys, l, it, it->widx);
            counter_key(keys, l, it, it->widx - 1);
            arg_add(argv, "%c", it->kind == KVG_QK_TOKENS ? 't' : 'r');
            arg_add(argv, "%lld", (long long)it->limit);
            arg_add(argv, "%llu", (unsigned long long)kvg_quota_win_ms(it->win));
            arg_add(argv, "%lld", (long long)it->cost);
        }
    }
    args_join(keys, argv);
    return kvg_redis_eval(lq->rc, &reserve_script, keys->n, keys->n + argv->n, keys->v, keys->len,
                          on_reserve, op);
}

static void on_reconcile(void *ud, redisReply *r, int err)
{
    struct kvg_quota *q = ud;
    if (err || r->type == REDIS_REPLY_ERROR) {
        atomic_fetch_add(&q->st_store_errors, 1);
        if (err == KVG_ETIMEOUT) atomic_fetch_add(&q->st_timeouts, 1);
    }
}

void kvg_qredis_reconcile(struct kvg_quota_loop *lq, const struct kvg_quota_lease *l,
                          int64_t actual)
{
    struct args *keys = &t_keys, *argv = &t_argv;
    keys->n = argv->n = 0;
    keys->used = argv->used = 0;
    int ntok = 0;
    for (size_t i = 0; i < l->nitems; i++) ntok += l->item[i].kind == KVG_QK_TOKENS;
    arg_add(argv, "%d", ntok);
    arg_add(argv, "%s", l->id);
    arg_add(argv, "%d", l->reserved ? 1 : 0);
    for (size_t i = 0; i < l->nitems; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        if (it->kind != KVG_QK_TOKENS) continue;
        counter_key(keys, l, it, it->widx);
        arg_add(argv, "%lld", (long long)(actual - (l->reserved ? it->cost : 0)));
        arg_add(argv, "%llu", (unsigned long long)(2 * kvg_quota_win_ms(it->win) + 60000));
    }
    if (l->reserved)
        for (size_t i = 0; i < l->nitems; i++)
            if (l->item[i].kind == KVG_QK_CONCURRENT)
                arg_add(keys, "kvg:q:%s:cc", l->scope_id[l->item[i].scope]);
    if (keys->n == 0) return;
    args_join(keys, argv);
    int rc = kvg_redis_eval(lq->rc, &reconcile_script, keys->n, keys->n + argv->n, keys->v,
                            keys->len, on_reconcile, lq->q);
    /* The usage of this request is lost to the shared counters; the
     * reservation, if any, expires with its window (leases with lease_ttl). */
    if (rc) on_reconcile(lq->q, NULL, rc);
}
