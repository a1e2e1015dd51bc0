/* The autoscalers' Redis lease; see lease.h. */
#include "autoscale/lease.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "net/redis.h"

static const char renew_src[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                                "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
static const char release_src[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

struct kvg_autoscale_lease {
    uv_loop_t *loop;
    struct kvg_redis_conn *conn;
    uv_timer_t timer;
    struct kvg_redis_script renew, release;
    char key[128], id[128], ttl[16];
    uint32_t ttl_ms;
    _Atomic uint64_t valid_until_ms; /* 0: not held */
    _Atomic uint64_t acquired;
    int busy;         /* a step's command is in flight */
    uint64_t sent_ms; /* when it was sent */
    int closing;
    void (*done)(void *);
    void *done_ud;
    char holder[128];
    char error[160];
};

static void lost(struct kvg_autoscale_lease *l, const char *why)
{
    if (atomic_exchange(&l->valid_until_ms, 0))
        KVG_WARN("autoscale: lease %s lost (%s): acting stops", l->key, why);
}

static void held_until(struct kvg_autoscale_lease *l)
{
    /* From the send time, with a tenth of the ttl kept for clock drift:
     * Redis started the ttl no earlier than that. */
    uint64_t until = l->sent_ms + l->ttl_ms - l->ttl_ms / 10;
    if (!atomic_exchange(&l->valid_until_ms, until)) {
        atomic_fetch_add(&l->acquired, 1);
        KVG_INFO("autoscale: lease %s acquired by %s: this autoscaler acts", l->key, l->id);
    }
    snprintf(l->holder, sizeof l->holder, "%s", l->id);
}

static void redis_failed(struct kvg_autoscale_lease *l, redisReply *r, int err)
{
    snprintf(l->error, sizeof l->error, "%s",
             r && r->type == REDIS_REPLY_ERROR ? r->str : kvg_strerror(err));
    l->holder[0] = 0;
    lost(l, l->error);
}

static int send_renew(struct kvg_autoscale_lease *l);

static void on_renew(void *ud, redisReply *r, int err)
{
    struct kvg_autoscale_lease *l = ud;
    l->busy = 0;
    if (l->closing) return; /* released or closing: this answer is stale */
    if (err || !r || r->type != REDIS_REPLY_INTEGER) return redis_failed(l, r, err);
    l->error[0] = 0;
    if (r->integer == 1)
        held_until(l);
    else
        lost(l, "the key is no longer ours");
}

static void on_get(void *ud, redisReply *r, int err)
{
    struct kvg_autoscale_lease *l = ud;
    l->busy = 0;
    if (l->closing) return; /* released or closing: this answer is stale */
    if (err || !r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        return redis_failed(l, r, err);
    l->error[0] = 0;
    snprintf(l->holder, sizeof l->holder, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    /* Ours already (an acquire whose reply was lost): take it back. */
    if (!strcmp(l->holder, l->id) && !l->closing) send_renew(l);
}

static void on_acquire(void *ud, redisReply *r, int err)
{
    struct kvg_autoscale_lease *l = ud;
    l->busy = 0;
    if (l->closing) return; /* released or closing: this answer is stale */
    if (err || !r) return redis_failed(l, r, err);
    if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK")) {
        l->error[0] = 0;
        held_until(l);
        return;
    }
    if (r->type != REDIS_REPLY_NIL) return redis_failed(l, r, err);
    /* Someone holds it: learn who, for GET /autoscale. */
    const char *argv[] = {"GET", l->key};
    size_t lens[] = {3, strlen(l->key)};
    if (!kvg_redis_command(l->conn, 2, argv, lens, on_get, l)) l->busy = 1;
}

static int send_renew(struct kvg_autoscale_lease *l)
{
    const char *args[] = {l->key, l->id, l->ttl};
    size_t lens[] = {strlen(l->key), strlen(l->id), strlen(l->ttl)};
    l->sent_ms = kvg_now_ms();
    int rc = kvg_redis_eval(l->conn, &l->renew, 1, 3, args, lens, on_renew, l);
    if (!rc) l->busy = 1;
    return rc;
}

static void step(uv_timer_t *t)
{
    struct kvg_autoscale_lease *l = t->data;
    if (l->busy || l->closing) return;
    int rc;
    if (atomic_load(&l->valid_until_ms)) {
        rc = send_renew(l);
    } else {
        const char *argv[] = {"SET", l->key, l->id, "NX", "PX", l->ttl};
        size_t lens[6];
        for (int i = 0; i < 6; i++) lens[i] = strlen(argv[i]);
        l->sent_ms = kvg_now_ms();
        rc = kvg_redis_command(l->conn, 6, argv, lens, on_acquire, l);
        if (!rc) l->busy = 1;
    }
    if (rc) { /* not connected: nothing was sent */
        snprintf(l->error, sizeof l->error, "redis: %s",
                 kvg_redis_last_error(l->conn)[0] ? kvg_redis_last_error(l->conn)
                                                  : kvg_strerror(rc));
        l->holder[0] = 0;
        lost(l, l->error);
    }
}

int kvg_autoscale_lease_start(uv_loop_t *loop, const struct kvg_autoscale_lease_cfg *lc,
                              const char *id, uint32_t every_ms, struct kvg_autoscale_lease **out,
                              char *err, size_t errlen)
{
    struct kvg_redis_opts o = {0};
    o.timeout_ms = KVG_MAX(100u, KVG_MIN(1000u, every_ms / 2));
    o.connect_timeout_ms = o.timeout_ms;
    o.backoff_min_ms = 100;
    o.backoff_max_ms = KVG_MAX(200u, every_ms);
    if (kvg_redis_url_parse(lc->redis, &o, err, errlen)) return KVG_ECONFIG;
    struct kvg_autoscale_lease *l = calloc(1, sizeof *l);
    if (!l) return -ENOMEM;
    l->loop = loop;
    snprintf(l->key, sizeof l->key, "%s", lc->key);
    snprintf(l->id, sizeof l->id, "%s", id);
    snprintf(l->ttl, sizeof l->ttl, "%u", lc->ttl_ms);
    l->ttl_ms = lc->ttl_ms;
    kvg_redis_script_init(&l->renew, renew_src);
    kvg_redis_script_init(&l->release, release_src);
    int rc = kvg_redis_open(loop, &o, NULL, NULL, &l->conn);
    if (rc) {
        free(l);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "lease redis %s: %s", lc->redis,
                           kvg_strerror(rc));
    }
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    uv_timer_start(&l->timer, step, 50, every_ms); /* the first once connected */
    *out = l;
    return 0;
}

int kvg_autoscale_lease_held(const struct kvg_autoscale_lease *l, uint64_t now_ms)
{
    uint64_t until = atomic_load(&l->valid_until_ms);
    return until && now_ms < until;
}

uint64_t kvg_autoscale_lease_acquired(const struct kvg_autoscale_lease *l)
{
    return atomic_load(&l->acquired);
}

const char *kvg_autoscale_lease_holder(const struct kvg_autoscale_lease *l)
{
    return l->holder;
}

const char *kvg_autoscale_lease_error(const struct kvg_autoscale_lease *l)
{
    return l->error;
}

static void timer_closed(uv_handle_t *h)
{
    struct kvg_autoscale_lease *l = h->data;
    void (*done)(void *) = l->done;
    void *ud = l->done_ud;
    free(l);
    if (done) done(ud);
}

static void finish(struct kvg_autoscale_lease *l)
{
    kvg_redis_close(l->conn); /* fails anything still pending, on this loop */
    uv_close((uv_handle_t *)&l->timer, timer_closed);
}

static void finish_soon(uv_timer_t *t)
{
    finish(t->data);
}

static void on_release(void *ud, redisReply *r, int err)
{
    struct kvg_autoscale_lease *l = ud;
    if (!err && r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        KVG_INFO("autoscale: lease %s released", l->key);
    /* Not from inside the connection's own callback: on the next turn. */
    uv_timer_start(&l->timer, finish_soon, 0, 0);
}

void kvg_autoscale_lease_close(struct kvg_autoscale_lease *l, void (*done)(void *), void *ud)
{
    l->closing = 1;
    l->done = done;
    l->done_ud = ud;
    uv_timer_stop(&l->timer);
    int was_held = atomic_exchange(&l->valid_until_ms, 0) != 0;
    const char *args[] = {l->key, l->id};
    size_t lens[] = {strlen(l->key), strlen(l->id)};
    /* The release goes behind any step in flight (replies come in order),
     * and is answered or failed within the connection's timeout. */
    if (was_held && !kvg_redis_eval(l->conn, &l->release, 1, 2, args, lens, on_release, l)) return;
    finish(l);
}
