/* hiredis's async context on a libuv loop, with a bound on what its reader
 * may hold (net/redis.h, kvg__redis_attach).
 *
 * hiredis 0.14 buffers a bulk string whole before its object functions see
 * it, so "$2000000000\r\n" followed by bytes made the reader grow its
 * buffer for as long as the server sent them; only the completed string
 * met the reply bound. Here every read is followed by a look at the
 * reader's unconsumed bytes: past the bound (the longest bulk string
 * accepted, plus room for a reply's headers), the reply is refused as it is
 * read and the connection dropped, failing its pending commands with
 * KVG_ETOOBIG. A poll handle watches the socket; hiredis asks for read and
 * write interest through the five event hooks. */
#include <stdlib.h>

#include "net/redis.h"

/* The bytes a reply may hold besides its longest string: headers and the
 * other small strings of the replies kvgate reads. */
#define HEAD_SLACK (64u * 1024)

struct kvg_redis_uv {
    uv_poll_t poll;
    redisAsyncContext *ac; /* NULL once hiredis let go (cleanup) */
    int events;
    struct kvg_redis_bounds *bounds; /* the connection's (redis.c), outlives ac */
};

static void over_bound(struct kvg_redis_uv *u)
{
    redisReader *r = u->ac->c.reader;
    uint64_t held = r->len - r->pos;
    if (held <= u->bounds->max_bulk + HEAD_SLACK) return;
    u->bounds->refused = 1;
    redisAsyncFree(u->ac); /* pending commands fail (reply NULL), cleanup below */
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct kvg_redis_uv *u = h->data;
    if (status < 0 || !u->ac) return;
    if (events & UV_READABLE) {
        redisAsyncHandleRead(u->ac);
        if (u->ac) over_bound(u);
    }
    if (u->ac && (events & UV_WRITABLE)) redisAsyncHandleWrite(u->ac);
}

static void set_events(struct kvg_redis_uv *u, int events)
{
    u->events = events;
    if (events)
        uv_poll_start(&u->poll, events, on_poll);
    else
        uv_poll_stop(&u->poll);
}

static void add_read(void *p)
{
    struct kvg_redis_uv *u = p;
    set_events(u, u->events | UV_READABLE);
}

static void del_read(void *p)
{
    struct kvg_redis_uv *u = p;
    set_events(u, u->events & ~UV_READABLE);
}

static void add_write(void *p)
{
    struct kvg_redis_uv *u = p;
    set_events(u, u->events | UV_WRITABLE);
}

static void del_write(void *p)
{
    struct kvg_redis_uv *u = p;
    set_events(u, u->events & ~UV_WRITABLE);
}

static void closed(uv_handle_t *h)
{
    free(h->data);
}

/* hiredis is done with the context: the handle goes, then the memory. */
static void cleanup(void *p)
{
    struct kvg_redis_uv *u = p;
    u->ac = NULL;
    uv_close((uv_handle_t *)&u->poll, closed);
}

int kvg__redis_attach(redisAsyncContext *ac, uv_loop_t *loop, struct kvg_redis_bounds *bounds)
{
    if (ac->ev.data) return REDIS_ERR;
    struct kvg_redis_uv *u = calloc(1, sizeof *u);
    if (!u) return REDIS_ERR;
    if (uv_poll_init_socket(loop, &u->poll, ac->c.fd)) {
        free(u);
        return REDIS_ERR;
    }
    u->poll.data = u;
    u->ac = ac;
    u->bounds = bounds;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    ac->ev.data = u;
    return REDIS_OK;
}
