/* One asynchronous Redis connection on one libuv loop (hiredis 0.14 and its
 * libuv adapter), made for callers that must never wait on Redis: the quota
 * store calls it from the request path.
 *
 * Guarantees:
 *   - every command's callback runs exactly once, on the loop, with a reply
 *     or with an error, within timeout_ms of the call (hiredis 0.14 has no
 *     timeouts of its own: replies arrive in order, so one timer watches the
 *     oldest command; when it is late the connection is dropped, which fails
 *     every pending command at once, and a new one is made);
 *   - while there is no connection, commands fail at once (KVG_ECLOSED)
 *     instead of queueing behind a dead server;
 *   - it reconnects in the background with exponential backoff;
 *   - scripts go as EVALSHA, and as EVAL when the server answers NOSCRIPT
 *     (after a restart or SCRIPT FLUSH).
 * A host name is resolved once, by kvg_redis_url_parse (before the loops
 * run); connections use the address.
 *
 * Not thread-safe: a connection belongs to the loop it was made on. */
#ifndef KVG_NET_REDIS_H
#define KVG_NET_REDIS_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct kvg_redis_opts {
    char ip[64]; /* numeric address */
    int port;
    int db;
    char user[64];
    char password[128];
    uint32_t timeout_ms, connect_timeout_ms;
    uint32_t backoff_min_ms, backoff_max_ms;
    /* Reply bounds (0: the defaults below). A reply declaring more array
     * elements than max_reply_elements, counted over all its nested arrays,
     * is refused as its headers are read, before hiredis allocates the
     * element pointers; a bulk string longer than max_reply_bulk is refused
     * too (hiredis 0.14 buffers a bulk string whole before handing it over,
     * so its bytes are bounded by the command timeout, not by this). A
     * refusal fails the pending commands with KVG_ETOOBIG and reconnects. */
    uint32_t max_reply_elements;
    uint64_t max_reply_bulk;
};

#define KVG_REDIS_MAX_REPLY_ELEMENTS (1u << 20)
#define KVG_REDIS_MAX_REPLY_BULK (64ull << 20)

/* The reader-side bounds, also usable on a bare hiredis reader (the fuzz
 * target): kvg_redis_reader_bound swaps r's reply functions for ones that
 * refuse what is over the bounds (the reader then fails with an error) and
 * point back at g, which must outlive r. */
struct kvg_redis_bounds {
    uint64_t max_elements, max_bulk;
    uint64_t elements; /* declared so far in the reply being read */
    int refused;       /* set when a reply was refused */
    redisReplyObjectFunctions fn, base;
};
void kvg_redis_reader_bound(redisReader *r, struct kvg_redis_bounds *g, uint64_t max_elements,
                            uint64_t max_bulk);
/* Internal (redis_uv.c): ac on loop, each read followed by a look at what
 * its reader holds: past g's bulk bound the reply is refused as it is read
 * (g->refused set, the context freed). REDIS_OK or REDIS_ERR. */
int kvg__redis_attach(redisAsyncContext *ac, uv_loop_t *loop, struct kvg_redis_bounds *g);

/* Parses redis://[[user]:password@]host[:port][/db] (port 6379, db 0) and resolves
 * host (blocking getaddrinfo: call at start-up). Keeps o's timeouts. Writes
 * a reason to err; returns 0 or KVG_ECONFIG. */
int kvg_redis_url_parse(const char *url, struct kvg_redis_opts *o, char *err, size_t errlen);

struct kvg_redis_conn;

/* reply is NULL when err < 0 (KVG_ETIMEOUT, KVG_ECLOSED, KVG_ETOOBIG); a Redis error
 * reply is a reply of type REDIS_REPLY_ERROR with err 0. The reply is valid
 * during the callback only. */
typedef void (*kvg_redis_cb)(void *ud, redisReply *reply, int err);
/* State changes, for counters and logs: connected 1 / 0. */
typedef void (*kvg_redis_state_cb)(void *ud, int connected, const char *why);

/* Starts connecting. *out belongs to the loop's thread; free it with
 * kvg_redis_close (the loop must run afterwards to finish closing). */
int kvg_redis_open(uv_loop_t *loop, const struct kvg_redis_opts *o, kvg_redis_state_cb scb,
                   void *sud, struct kvg_redis_conn **out);
/* Fails pending commands (their callbacks run before this returns), closes. */
void kvg_redis_close(struct kvg_redis_conn *c);
int kvg_redis_connected(const struct kvg_redis_conn *c);
/* While not connected: why the last attempt failed ("cannot connect:
 * Connection refused", "connect timed out"), or "" if none failed yet. */
const char *kvg_redis_last_error(const struct kvg_redis_conn *c);

/* Sends one command (argv copied). Returns 0 (cb will run) or a negative
 * code (cb will not run): KVG_ECLOSED when not connected. */
int kvg_redis_command(struct kvg_redis_conn *c, int argc, const char **argv, const size_t *lens,
                      kvg_redis_cb cb, void *ud);

/* A Lua script known by its SHA-1 (computed here). */
struct kvg_redis_script {
    const char *src;
    char sha[41];
};
void kvg_redis_script_init(struct kvg_redis_script *s, const char *src);
/* EVALSHA sha nkeys args..., falling back to EVAL src on NOSCRIPT. args are
 * the keys then the other arguments. Same contract as kvg_redis_command. */
int kvg_redis_eval(struct kvg_redis_conn *c, const struct kvg_redis_script *s, int nkeys, int nargs,
                   const char **args, const size_t *lens, kvg_redis_cb cb, void *ud);

#endif
