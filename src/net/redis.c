/* An asynchronous Redis connection that never makes its caller wait longer
 * than its timeout: see redis.h for the guarantees and why they are built
 * this way on hiredis 0.14. */
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/async.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "net/redis.h"

#define MAX_ARGS 512

/* One command in flight. For scripts it keeps its arguments, so a NOSCRIPT
 * answer can be retried as EVAL. */
struct pending {
    struct pending *next, *prev;
    struct kvg_redis_conn *c;
    kvg_redis_cb cb;
    void *ud;
    uint64_t deadline_ms;
    const struct kvg_redis_script *script;
    int retried;
    int nargs;    /* script: keys + args (after sha/src and nkeys) */
    char **args;  /* script: owned, one block */
    size_t *lens; /* script: owned, same block */
    char nkeys[16];
};

struct kvg_redis_conn {
    uv_loop_t *loop;
    struct kvg_redis_opts o;
    redisAsyncContext *ac; /* NULL between connections */
    int connected;
    int closing;
    int drop_err;          /* the error pending commands fail with while we drop */
    uv_timer_t op_timer;   /* the oldest command's deadline */
    uv_timer_t conn_timer; /* connect timeout, then reconnect backoff */
    int handles;           /* open uv handles; freed when 0 after close */
    uint32_t backoff_ms;
    struct pending *head, *tail; /* send order = reply order */
    kvg_redis_state_cb scb;
    void *sud;
    char last_error[128];           /* why the last connection attempt failed; "" once connected */
    struct kvg_redis_bounds bounds; /* the current connection's reader points at it */
};

static void start_connect(struct kvg_redis_conn *c);

/* ------------------------------------------------------------ reply bounds
 * hiredis 0.14's reader has no limits of its own (newer ones have
 * maxelements): "*2147483647" makes it calloc 16 GB of element pointers
 * and later free them on the loop. Its object functions see each array's
 * declared size first, so the bound is enforced there; NULL from one makes
 * the reader fail ("Out of memory") and the async context drop the
 * connection, failing its pending commands. */

static struct kvg_redis_bounds *bounds_of(const redisReadTask *t)
{
    return t->privdata;
}

static void *bounded_array(const redisReadTask *t, int elements)
{
    struct kvg_redis_bounds *g = bounds_of(t);
    if (!t->parent) g->elements = 0; /* a new reply */
    /* Counted over the nested arrays: each allocates its pointers when its
     * header is read, ten bytes of input for megabytes of memory. */
    g->elements += elements > 0 ? (uint64_t)elements : 0;
    if (elements < 0 || g->elements > g->max_elements) {
        g->refused = 1;
        return NULL;
    }
    return g->base.createArray(t, elements);
}

static void *bounded_string(const redisReadTask *t, char *str, size_t len)
{
    struct kvg_redis_bounds *g = bounds_of(t);
    if (len > g->max_bulk) {
        g->refused = 1;
        return NULL;
    }
    return g->base.createString(t, str, len);
}

void kvg_redis_reader_bound(redisReader *r, struct kvg_redis_bounds *g, uint64_t max_elements,
                            uint64_t max_bulk)
{
    g->max_elements = max_elements;
    g->max_bulk = max_bulk;
    g->elements = 0;
    g->refused = 0;
    g->base = *r->fn;
    g->fn = g->base;
    g->fn.createArray = bounded_array;
    g->fn.createString = bounded_string;
    r->fn = &g->fn;
    r->privdata = g;
}

int kvg_redis_url_parse(const char *url, struct kvg_redis_opts *o, char *err, size_t errlen)
{
    char host[256] = "";
    const char *p = url + 8; /* after redis:// */
    if (strncmp(url, "redis://", 8)) goto bad;
    o->port = 6379;
    o->db = 0;
    o->password[0] = 0;
    /* userinfo: "[user]:password@" (user for Redis 6 ACLs); the last '@'
     * ends it, so a password may contain '@'. */
    const char *at = strrchr(p, '@');
    o->user[0] = 0;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t un = colon ? (size_t)(colon - p) : 0, n = (size_t)(at - pw);
        if (n >= sizeof o->password || un >= sizeof o->user) goto bad;
        memcpy(o->user, p, un);
        o->user[un] = 0;
        memcpy(o->password, pw, n);
        o->password[n] = 0;
        p = at + 1;
    }
    size_t hn;
    if (*p == '[') { /* [ipv6]:port */
        const char *e = strchr(p, ']');
        if (!e) goto bad;
        hn = (size_t)(e - p - 1);
        if (hn == 0 || hn >= sizeof host) goto bad;
        memcpy(host, p + 1, hn);
        p = e + 1;
    } else {
        hn = strcspn(p, ":/");
        if (hn == 0 || hn >= sizeof host) goto bad;
        memcpy(host, p, hn);
        p += hn;
    }
    host[hn] = 0;
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v <= 0 || v > 65535) goto bad;
        o->port = (int)v;
        p = end;
    }
    if (*p == '/') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (p[1] && (end == p + 1 || *end || v < 0 || v > 1000)) goto bad;
        o->db = p[1] ? (int)v : 0;
        p = p[1] ? end : p + 1;
    }
    if (*p) goto bad;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int g = getaddrinfo(host, NULL, &hints, &ai);
    if (g || !ai) {
        snprintf(err, errlen, "quota store %s: cannot resolve '%s': %s", url, host,
                 gai_strerror(g));
        return KVG_ECONFIG;
    }
    const void *addr = ai->ai_family == AF_INET6
                           ? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
                           : (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
    inet_ntop(ai->ai_family, addr, o->ip, sizeof o->ip);
    freeaddrinfo(ai);
    return 0;
bad:
    snprintf(err, errlen, "quota store '%s': expected redis://[:password@]host[:port][/db]", url);
    return KVG_ECONFIG;
}

static void unlink_pending(struct kvg_redis_conn *c, struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        c->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        c->tail = p->prev;
    p->next = p->prev = NULL;
}

static void push_pending(struct kvg_redis_conn *c, struct pending *p)
{
    p->prev = c->tail;
    p->next = NULL;
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
}

static void on_op_timer(uv_timer_t *t);

static void arm_op_timer(struct kvg_redis_conn *c)
{
    if (!c->head || uv_is_active((uv_handle_t *)&c->op_timer)) return;
    uint64_t now = uv_now(c->loop);
    uint64_t d = c->head->deadline_ms > now ? c->head->deadline_ms - now : 0;
    uv_timer_start(&c->op_timer, on_op_timer, d, 0);
}

static void set_state(struct kvg_redis_conn *c, int connected, const char *why)
{
    if (c->connected == connected) return;
    c->connected = connected;
    if (c->scb && !c->closing) c->scb(c->sud, connected, why);
}

static void on_conn_timer(uv_timer_t *t);

static void schedule_reconnect(struct kvg_redis_conn *c)
{
    if (c->closing) return;
    uint32_t d = c->backoff_ms ? c->backoff_ms : c->o.backoff_min_ms;
    c->backoff_ms = KVG_MIN(d * 2, c->o.backoff_max_ms);
    uv_timer_start(&c->conn_timer, on_conn_timer, d, 0);
}

/* Drops the connection now: hiredis fails every pending command (their
 * callbacks see err) before redisAsyncFree returns. */
static void drop(struct kvg_redis_conn *c, int err, const char *why)
{
    redisAsyncContext *ac = c->ac;
    if (!ac) return;
    c->ac = NULL;
    ac->data = NULL; /* its connect/disconnect callbacks must not touch c now */
    set_state(c, 0, why);
    c->drop_err = err;
    redisAsyncFree(ac);
    c->drop_err = 0;
    schedule_reconnect(c);
}

static void on_op_timer(uv_timer_t *t)
{
    struct kvg_redis_conn *c = t->data;
    if (!c->head) return;
    if (c->head->deadline_ms <= uv_now(c->loop)) {
        /* Replies come in order: the oldest command is late, so everything
         * behind it is stuck too. Drop and reconnect. */
        drop(c, KVG_ETIMEOUT, "timeout");
        return;
    }
    arm_op_timer(c);
}

/* Has the pending non-blocking connect failed? hiredis's libuv adapter
 * drops poll errors, so a refused connection would otherwise only ever show
 * as the connect timeout: ask the socket itself. Records the reason. */
static int connect_failed(struct kvg_redis_conn *c)
{
    int so = 0;
    socklen_t len = sizeof so;
    if (!c->ac || c->connected || c->ac->c.fd < 0 ||
        getsockopt(c->ac->c.fd, SOL_SOCKET, SO_ERROR, &so, &len) || !so)
        return 0;
    snprintf(c->last_error, sizeof c->last_error, "cannot connect: %s", strerror(so));
    return 1;
}

static void on_conn_timer(uv_timer_t *t)
{
    struct kvg_redis_conn *c = t->data;
    if (c->ac && !c->connected) {
        if (!connect_failed(c)) snprintf(c->last_error, sizeof c->last_error, "connect timed out");
        drop(c, KVG_ETIMEOUT, c->last_error);
        return;
    }
    if (!c->ac) start_connect(c);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct kvg_redis_conn *c = ac->data;
    if (!c || c->ac != ac) return;
    if (status != REDIS_OK) {
        /* hiredis's own words ("Connection refused"): a refused store is
         * not a slow one, and the log must say which. */
        snprintf(c->last_error, sizeof c->last_error, "cannot connect: %s",
                 ac->errstr[0] ? ac->errstr : "unknown error");
        c->ac = NULL; /* hiredis frees it after we return */
        schedule_reconnect(c);
        return;
    }
    uv_timer_stop(&c->conn_timer);
    c->backoff_ms = 0;
    c->last_error[0] = 0;
    set_state(c, 1, "connected");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct kvg_redis_conn *c = ac->data;
    if (!c || c->ac != ac) return;
    c->ac = NULL;
    char why[128];
    if (c->bounds.refused)
        snprintf(why, sizeof why,
                 "a reply over the bounds (%llu array elements, %llu-byte strings) was refused",
                 (unsigned long long)c->bounds.max_elements,
                 (unsigned long long)c->bounds.max_bulk);
    else
        snprintf(why, sizeof why, "%s", ac->errstr[0] ? ac->errstr : "disconnected");
    set_state(c, 0, why);
    schedule_reconnect(c);
}

static void on_setup_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply *reply = r;
    if (reply && reply->type == REDIS_REPLY_ERROR)
        KVG_WARN("redis: %s failed: %s", (const char *)privdata, reply->str);
}

static void start_connect(struct kvg_redis_conn *c)
{
    redisAsyncContext *ac = redisAsyncConnect(c->o.ip, c->o.port);
    if (!ac) {
        schedule_reconnect(c);
        return;
    }
    if (ac->err || kvg__redis_attach(ac, c->loop, &c->bounds) != REDIS_OK) {
        redisAsyncFree(ac);
        schedule_reconnect(c);
        return;
    }
    ac->data = c;
    c->ac = ac;
    kvg_redis_reader_bound(ac->c.reader, &c->bounds, c->o.max_reply_elements, c->o.max_reply_bulk);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    /* Pipelined before any command of ours, so they apply to all of them. */
    if (c->o.password[0]) redisAsyncCommand(ac, on_setup_reply, "AUTH", "AUTH %s", c->o.password);
    if (c->o.db) redisAsyncCommand(ac, on_setup_reply, "SELECT", "SELECT %d", c->o.db);
    uv_timer_start(&c->conn_timer, on_conn_timer, c->o.connect_timeout_ms, 0);
}

int kvg_redis_open(uv_loop_t *loop, const struct kvg_redis_opts *o, kvg_redis_state_cb scb,
                   void *sud, struct kvg_redis_conn **out)
{
    struct kvg_redis_conn *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->loop = loop;
    c->o = *o;
    if (!c->o.timeout_ms) c->o.timeout_ms = 50;
    if (!c->o.connect_timeout_ms) c->o.connect_timeout_ms = 1000;
    if (!c->o.backoff_min_ms) c->o.backoff_min_ms = 100;
    if (c->o.backoff_max_ms < c->o.backoff_min_ms) c->o.backoff_max_ms = c->o.backoff_min_ms;
    if (!c->o.max_reply_elements) c->o.max_reply_elements = KVG_REDIS_MAX_REPLY_ELEMENTS;
    if (!c->o.max_reply_bulk) c->o.max_reply_bulk = KVG_REDIS_MAX_REPLY_BULK;
    c->scb = scb;
    c->sud = sud;
    uv_timer_init(loop, &c->op_timer);
    uv_timer_init(loop, &c->conn_timer);
    c->op_timer.data = c->conn_timer.data = c;
    c->handles = 2;
    start_connect(c);
    *out = c;
    return 0;
}

static void handle_closed(uv_handle_t *h)
{
    struct kvg_redis_conn *c = h->data;
    if (--c->handles == 0) free(c);
}

void kvg_redis_close(struct kvg_redis_conn *c)
{
    if (!c) return;
    c->closing = 1;
    redisAsyncContext *ac = c->ac;
    if (ac) {
        c->ac = NULL;
        ac->data = NULL;
        c->drop_err = KVG_ECLOSED;
        redisAsyncFree(ac);
    }
    uv_close((uv_handle_t *)&c->op_timer, handle_closed);
    uv_close((uv_handle_t *)&c->conn_timer, handle_closed);
}

const char *kvg_redis_last_error(const struct kvg_redis_conn *c)
{
    return c->connected ? "" : c->last_error;
}

int kvg_redis_connected(const struct kvg_redis_conn *c)
{
    return c->ac != NULL && c->connected;
}

static int send_pending(struct kvg_redis_conn *c, struct pending *p, int argc, const char **argv,
                        const size_t *lens);

static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    struct pending *p = privdata;
    struct kvg_redis_conn *c = p->c;
    redisReply *reply = r;
    unlink_pending(c, p);
    if (reply && reply->type == REDIS_REPLY_ERROR && p->script && !p->retried &&
        !strncmp(reply->str, "NOSCRIPT", 8)) {
        /* The server lost the script (restart, SCRIPT FLUSH): send its text
         * once; the next EVALSHA finds it cached again. */
        const char *argv[MAX_ARGS + 3];
        size_t lens[MAX_ARGS + 3];
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = p->script->src;
        lens[1] = strlen(p->script->src);
        argv[2] = p->nkeys;
        lens[2] = strlen(p->nkeys);
        for (int i = 0; i < p->nargs; i++) {
            argv[3 + i] = p->args[i];
            lens[3 + i] = p->lens[i];
        }
        p->retried = 1;
        if (send_pending(c, p, 3 + p->nargs, argv, lens) == 0) return;
        reply = NULL;
    }
    int err = reply ? 0 : c->drop_err ? c->drop_err : c->bounds.refused ? KVG_ETOOBIG : KVG_ECLOSED;
    p->cb(p->ud, reply, err);
    free(p->args);
    free(p);
}

static int send_pending(struct kvg_redis_conn *c, struct pending *p, int argc, const char **argv,
                        const size_t *lens)
{
    if (!c->ac || c->closing) return KVG_ECLOSED;
    if (connect_failed(c)) {
        drop(c, KVG_ECLOSED, c->last_error);
        return KVG_ECLOSED;
    }
    if (redisAsyncCommandArgv(c->ac, on_reply, p, argc, argv, lens) != REDIS_OK) return KVG_ECLOSED;
    push_pending(c, p);
    arm_op_timer(c);
    return 0;
}

int kvg_redis_command(struct kvg_redis_conn *c, int argc, const char **argv, const size_t *lens,
                      kvg_redis_cb cb, void *ud)
{
    /* Fail fast with no connection: queueing behind a dead server would only
     * turn every request's quota check into a wait for the timeout. */
    if (!c->ac || c->closing) return KVG_ECLOSED;
    if (connect_failed(c)) {
        drop(c, KVG_ECLOSED, c->last_error);
        return KVG_ECLOSED;
    }
    struct pending *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->c = c;
    p->cb = cb;
    p->ud = ud;
    p->deadline_ms = uv_now(c->loop) + c->o.timeout_ms;
    int rc = send_pending(c, p, argc, argv, lens);
    if (rc) free(p);
    return rc;
}

void kvg_redis_script_init(struct kvg_redis_script *s, const char *src)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    s->src = src;
    EVP_Digest(src, strlen(src), md, &n, EVP_sha1(), NULL);
    for (unsigned i = 0; i < n && i < 20; i++) snprintf(s->sha + 2 * i, 3, "%02x", md[i]);
    s->sha[40] = 0;
}

int kvg_redis_eval(struct kvg_redis_conn *c, const struct kvg_redis_script *s, int nkeys, int nargs,
                   const char **args, const size_t *lens, kvg_redis_cb cb, void *ud)
{
    if (nargs < 0 || nargs > MAX_ARGS || nkeys > nargs) return -EINVAL;
    if (!c->ac || c->closing) return KVG_ECLOSED;
    if (connect_failed(c)) {
        drop(c, KVG_ECLOSED, c->last_error);
        return KVG_ECLOSED;
    }
    size_t total = 0;
    for (int i = 0; i < nargs; i++) total += lens[i];
    struct pending *p = calloc(1, sizeof *p);
    /* One block: pointers, lengths, then the bytes. */
    char *blk = malloc((size_t)nargs * (sizeof(char *) + sizeof(size_t)) + total + 1);
    if (!p || !blk) {
        free(p);
        free(blk);
        return -ENOMEM;
    }
    p->args = (char **)blk;
    p->lens = (size_t *)(blk + (size_t)nargs * sizeof(char *));
    char *bytes = blk + (size_t)nargs * (sizeof(char *) + sizeof(size_t));
    for (int i = 0; i < nargs; i++) {
        memcpy(bytes, args[i], lens[i]);
        p->args[i] = bytes;
        p->lens[i] = lens[i];
        bytes += lens[i];
    }
    p->c = c;
    p->cb = cb;
    p->ud = ud;
    p->script = s;
    p->nargs = nargs;
    snprintf(p->nkeys, sizeof p->nkeys, "%d", nkeys);
    p->deadline_ms = uv_now(c->loop) + c->o.timeout_ms;
    const char *argv[MAX_ARGS + 3];
    size_t alen[MAX_ARGS + 3];
    argv[0] = "EVALSHA";
    alen[0] = 7;
    argv[1] = s->sha;
    alen[1] = 40;
    argv[2] = p->nkeys;
    alen[2] = strlen(p->nkeys);
    for (int i = 0; i < nargs; i++) {
        argv[3 + i] = p->args[i];
        alen[3 + i] = p->lens[i];
    }
    int rc = send_pending(c, p, 3 + nargs, argv, alen);
    if (rc) {
        free(p->args);
        free(p);
    }
    return rc;
}
