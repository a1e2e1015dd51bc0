/* The HTTP server's connection and server objects, shared by its files:
 * server.c (accepting, parsing, lifetime), output.c (the coalesced write
 * path, TLS records out) and response.c (the kvg_http_res_* answers).
 * Internal names carry kvg__http_ (two underscores): not a public face. */
#ifndef KVG_NET_SERVER_INT_H
#define KVG_NET_SERVER_INT_H

#include <llhttp.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <uv.h>

#include "net/headers.h"
#include "net/http.h"

#define WRITE_HIGH_WATER (1u << 20)
#define READ_BUF_SIZE (64 * 1024)

enum conn_state { ST_IDLE, ST_HEAD, ST_BODY, ST_HANDLING, ST_CLOSING };

struct kvg_http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct kvg_http_server *srv;
    llhttp_t parser;
    enum conn_state state;
    struct kvg_buf head;        /* url + header names and values of the current request */
    struct kvg__http_hdrs hacc; /* where in head each header is */
    size_t url_len;
    struct kvg_buf inbuf;             /* bytes received but not parsed yet */
    struct kvg_http_req *req;         /* request being read or answered */
    int err_status;                   /* set by a parser callback that rejects the request */
    struct kvg_http_refusal *refusal; /* owned: the head check's answer, when it refused */
    int processing;                   /* inside kvg__http_process: no recursion */
    int read_paused;                  /* reading stopped: inbuf full while answering */
    size_t wq_bytes;                  /* bytes handed to libuv, not yet written */
    struct kvg_buf out;               /* bytes not handed to libuv yet (coalesced per loop turn) */
    int dirty;                        /* on the server's flush list */
    struct kvg_http_conn *dprev, *dnext;
    int want_drain;
    int linger;                   /* refused mid-request: after the answer, read and drop what the
                                     client still sends, so that closing with unread bytes (a reset)
                                     does not destroy the answer before the client reads it */
    size_t lingered;              /* bytes dropped so */
    int dispatched;               /* c->req is the handler's until res_end or abort */
    uint64_t deadline_ms;         /* the current timeout (loop time) */
    struct kvg_http_req reqbuf;   /* the request being read or answered (reused) */
    struct kvg_http_header *hdrs; /* its header views (reused) */
    size_t hdrs_cap;
    uint64_t timer_due_ms; /* when the libuv timer is set to fire */
    uint64_t body_due_ms;  /* the body's deadline (loop time), 0 outside a body */
    uint64_t body_held;    /* this request's share of the process's buffered bytes */
    SSL *ssl;              /* TLS connections only */
    BIO *rbio, *wbio;      /* owned by ssl */
    int handles;           /* open uv handles; freed at 0 */
    char peer[64];
    struct kvg_http_conn *prev, *next;
};

struct kvg_http_server {
    uv_loop_t *loop;
    uv_poll_t listener; /* readable: connections to accept (accept.c) */
    int listen_fd;      /* the listening socket, closed with the listener */
    int listening;
    int port;
    struct kvg_http_limits limits;
    kvg_http_handler handler;
    void *ud;
    struct kvg_http_conn *conns;
    unsigned nconns, nactive;
    int stopping, closing;
    int listener_open;
    int open_handles; /* prepare + check */
    uv_prepare_t prepare;
    uv_check_t check;
    struct kvg_http_conn *dirty; /* connections with output to flush */
    struct kvg_buf scratch;      /* response heads are built here */
    SSL_CTX *tls;                /* not owned; NULL for plain HTTP */
    llhttp_settings_t settings;
    kvg_http_head_check head_check; /* NULL: every head is read on */
    kvg_http_refused_cb refused;    /* NULL: none told */
    /* Accept back-off (accept.c): out of descriptors, the listener stops
     * polling for a moment; the kernel queues new connections meanwhile. */
    int paused;                           /* polling stopped for a back-off */
    uv_timer_t pause_timer;               /* ends the back-off */
    uint64_t fd_errors;                   /* accepts that failed for want of descriptors */
    uint64_t fd_errors_logged, fd_log_ms; /* the count at the last log line, its time */
    char rbuf[READ_BUF_SIZE];
};

struct write_chunk {
    uv_write_t w;
    struct kvg_http_conn *conn;
    size_t len;
    char *data; /* owned: the connection's output buffer, taken whole */
};

/* server.c: a connection accepted on fd (owned: closed on failure). */
void kvg__http_conn_accepted(struct kvg_http_server *srv, int fd);
void kvg__http_on_listener_closed(uv_handle_t *h);
void kvg__http_on_aux_closed(uv_handle_t *h);
/* accept.c */
#define KVG_HTTP_ACCEPT_PAUSE_MS 200
/* Starts polling srv->listen_fd (listening already) for connections. */
int kvg__http_accept_start(struct kvg_http_server *srv);
/* The server stops accepting or closes: no more polling or back-off; with
 * close_timer the timer handle is closed (counted in open_handles). */
void kvg__http_accept_stop(struct kvg_http_server *srv, int close_timer);

/* output.c */
int kvg__http_write3(struct kvg_http_conn *c, const void *a, size_t alen, const void *b,
                     size_t blen, const void *d, size_t dlen);
int kvg__http_write(struct kvg_http_conn *c, const void *p, size_t n);
int kvg__http_flush(struct kvg_http_conn *c);
void kvg__http_dirty_unlink(struct kvg_http_conn *c);
int kvg__http_tls_pump(struct kvg_http_conn *c);
void kvg__http_on_prepare(uv_prepare_t *h);
void kvg__http_on_check(uv_check_t *h);

/* response.c */
void kvg__http_close_gracefully(struct kvg_http_conn *c);
void kvg__http_reject(struct kvg_http_conn *c, int status, const char *message);
/* The same with the type, code and headers of a refusal. */
void kvg__http_refuse(struct kvg_http_conn *c, const struct kvg_http_refusal *r);

/* server.c */
void kvg__http_close(struct kvg_http_conn *c);
/* Reads again after a refusal's answer, dropping what arrives (response.c's
 * lingering close). 0 or a libuv code. */
int kvg__http_linger_start(struct kvg_http_conn *c);
#define KVG_HTTP_LINGER_BYTES (16u << 20)
void kvg__http_process(struct kvg_http_conn *c);
void kvg__http_reset_for_next(struct kvg_http_conn *c);
void kvg__http_req_free(struct kvg_http_req *r);
void kvg__http_timer_set(struct kvg_http_conn *c, uint32_t ms);

#endif
