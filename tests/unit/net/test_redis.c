/* The Redis connection's reply bounds (src/net/redis.c) against a fake
 * server on 127.0.0.1 that answers every command with one canned reply: a
 * reply declaring 2^31-1 elements is refused as its header is read
 * (KVG_ETOOBIG, not a 16 GB allocation and a timeout), nested arrays count
 * together, over-long bulk strings are refused, and replies within the
 * bounds still arrive whole. Every wait is bounded. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/err.h"
#include "net/redis.h"
#include "support/loop.h"
#include "support/test.h"

/* ------------------------------------------------------------ fake server */

struct fake {
    uv_tcp_t listener;
    uv_tcp_t peer;
    int has_peer;
    int port;
    const char *reply; /* sent whole for each read */
    char rbuf[4096];
};

static void fake_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    struct fake *f = h->data;
    b->base = f->rbuf;
    b->len = sizeof f->rbuf;
}

static void fake_written(uv_write_t *w, int status)
{
    free(w);
}

static void fake_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct fake *f = s->data;
    if (n <= 0) return;
    uv_write_t *w = malloc(sizeof *w);
    if (!w) return;
    uv_buf_t out = uv_buf_init((char *)f->reply, (unsigned)strlen(f->reply));
    if (uv_write(w, s, &out, 1, fake_written)) free(w);
}

static void fake_conn(uv_stream_t *l, int status)
{
    struct fake *f = l->data;
    if (status < 0 || f->has_peer) return;
    uv_tcp_init(l->loop, &f->peer);
    f->peer.data = f;
    f->has_peer = 1;
    if (uv_accept(l, (uv_stream_t *)&f->peer) == 0)
        uv_read_start((uv_stream_t *)&f->peer, fake_alloc, fake_read);
}

static int fake_start(uv_loop_t *loop, struct fake *f, const char *reply)
{
    memset(f, 0, sizeof *f);
    f->reply = reply;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_init(loop, &f->listener);
    f->listener.data = f;
    int rc = uv_tcp_bind(&f->listener, (struct sockaddr *)&a, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&f->listener, 8, fake_conn);
    struct sockaddr_in got;
    int len = sizeof got;
    if (!rc) rc = uv_tcp_getsockname(&f->listener, (struct sockaddr *)&got, &len);
    if (!rc) f->port = ntohs(got.sin_port);
    return rc;
}

static void fake_stop(struct fake *f)
{
    uv_close((uv_handle_t *)&f->listener, NULL);
    if (f->has_peer) uv_close((uv_handle_t *)&f->peer, NULL);
}

/* ---------------------------------------------------------------- helpers */

struct outcome {
    int connected;
    int done;
    int err;
    int type;
    size_t elements;
    long long integer;
};

static void on_state(void *ud, int connected, const char *why)
{
    if (connected) ((struct outcome *)ud)->connected = 1;
}

static void on_reply(void *ud, redisReply *r, int err)
{
    struct outcome *o = ud;
    o->done = 1;
    o->err = err;
    if (r) {
        o->type = r->type;
        o->elements = r->elements;
        o->integer = r->integer;
    }
}

/* Sends PING to a fake server answering `reply`, with the given bounds (0:
 * the defaults), and reports what the callback saw. The command timeout is
 * long (10 s) and the wait shorter (5 s): a reply refused as it is read ends
 * with KVG_ETOOBIG well within it, one that is not would still be pending. */
static struct outcome ask(const char *reply, uint32_t max_elements, uint64_t max_bulk)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct fake f;
    struct outcome o = {.err = 1};
    CHECK_INT(fake_start(&loop, &f, reply), 0);
    struct kvg_redis_opts opts = {.port = f.port,
                                  .timeout_ms = 10000,
                                  .max_reply_elements = max_elements,
                                  .max_reply_bulk = max_bulk};
    snprintf(opts.ip, sizeof opts.ip, "127.0.0.1");
    struct kvg_redis_conn *c = NULL;
    CHECK_INT(kvg_redis_open(&loop, &opts, on_state, &o, &c), 0);
    kvg_test_run_until(&loop, &o.connected, 5000);
    CHECK(o.connected);
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    CHECK_INT(kvg_redis_command(c, 1, argv, lens, on_reply, &o), 0);
    kvg_test_run_until(&loop, &o.done, 5000);
    kvg_redis_close(c); /* a command still pending is failed here */
    fake_stop(&f);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return o;
}

/* ------------------------------------------------------------------ cases */

TEST(within_bounds_arrives_whole)
{
    struct outcome o = ask("*2\r\n$1\r\na\r\n*1\r\n:7\r\n", 0, 0);
    CHECK_INT(o.done, 1);
    CHECK_INT(o.err, 0);
    CHECK_INT(o.type, REDIS_REPLY_ARRAY);
    CHECK_INT(o.elements, 2);
}

TEST(huge_array_refused_as_read)
{
    struct outcome o = ask("*2147483647\r\n", 0, 0);
    CHECK_INT(o.done, 1);
    CHECK_INT(o.err, KVG_ETOOBIG);
}

/* Bounds set in the options: nested arrays count together (2 + 2 declared
 * elements is over 3 though each array is under it), a bulk string over
 * the byte bound is refused, and what is exactly at a bound passes. */
TEST(bounds_from_opts)
{
    static const struct {
        const char *reply;
        uint32_t max_elements;
        uint64_t max_bulk;
        int err;
    } cases[] = {
        {"*3\r\n:1\r\n:2\r\n:3\r\n", 3, 0, 0},
        {"*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n", 3, 0, KVG_ETOOBIG},
        {"$4\r\nhell\r\n", 0, 4, 0},
        {"$5\r\nhello\r\n", 0, 4, KVG_ETOOBIG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct outcome o = ask(cases[i].reply, cases[i].max_elements, cases[i].max_bulk);
        CHECK_INT(o.done, 1);
        CHECK_INT(o.err, cases[i].err);
    }
}

/* A bulk string declared far past the bound and streamed, never finished
 * (here 256 KB of a declared 2 GB, the server then silent): refused as it
 * is read, once the reader holds more than the bound (1000 bytes plus the
 * headers' room), not held until the command's timeout. */
TEST(long_bulk_refused_while_it_streams)
{
    size_t n = 256 * 1024;
    char *reply = malloc(n + 32);
    CHECK(reply != NULL);
    int h = snprintf(reply, 32, "$2000000000\r\n");
    memset(reply + h, 'x', n);
    reply[h + n] = 0;
    struct outcome o = ask(reply, 0, 1000);
    CHECK_INT(o.done, 1);
    CHECK_INT(o.err, KVG_ETOOBIG);
    free(reply);
}

static int feed(redisReader *r, const char *s)
{
    return redisReaderFeed(r, s, strlen(s));
}

TEST(bare_reader_bounded)
{
    redisReader *r = redisReaderCreate();
    CHECK(r != NULL);
    struct kvg_redis_bounds g;
    kvg_redis_reader_bound(r, &g, 4, 16);
    void *reply = NULL;
    CHECK_INT(feed(r, ":42\r\n*2\r\n:1\r\n:2\r\n"), REDIS_OK);
    CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
    CHECK(reply != NULL);
    CHECK_INT(((redisReply *)reply)->integer, 42);
    freeReplyObject(reply);
    CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
    CHECK(reply != NULL);
    CHECK_INT(((redisReply *)reply)->elements, 2);
    freeReplyObject(reply);
    /* The count starts again with each reply: 2 then 4 is within 4. */
    CHECK_INT(feed(r, "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"), REDIS_OK);
    CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
    CHECK(reply != NULL);
    freeReplyObject(reply);
    CHECK_INT(g.refused, 0);
    CHECK_INT(feed(r, "*2147483647\r\n"), REDIS_OK);
    CHECK_INT(redisReaderGetReply(r, &reply), REDIS_ERR);
    CHECK_INT(g.refused, 1);
    redisReaderFree(r);
}
