/* HTTP/1.1 server connections: accept, parse with llhttp, enforce limits,
 * hand complete requests to the handler, write responses (fixed-length or
 * chunked), keep-alive, and notice clients that leave mid-answer.
 * See http.h for the contract with handlers. */
#include "http/http.h"

#include <errno.h>
#include <llhttp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"

#define WRITE_HIGH_WATER (1u << 20)
#define READ_BUF_SIZE (64 * 1024)

enum conn_state { ST_IDLE, ST_HEAD, ST_BODY, ST_HANDLING, ST_CLOSING };

struct hdr_off {
    size_t name_off, name_len, val_off, val_len;
};

struct kvg_http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct kvg_http_server *srv;
    llhttp_t parser;
    enum conn_state state;
    struct kvg_buf head; /* url + header names and values of the current request */
    struct hdr_off *hoff;
    size_t nh, caph;
    int hstate; /* 0 none, 1 in a name, 2 in a value */
    size_t url_len;
    struct kvg_buf inbuf;     /* bytes received but not parsed yet */
    struct kvg_http_req *req; /* request being read or answered */
    int err_status;           /* set by a parser callback that rejects the request */
    int processing;           /* inside conn_process: no recursion */
    size_t wq_bytes;          /* bytes handed to libuv, not yet written */
    struct kvg_buf out;       /* bytes not handed to libuv yet (coalesced per loop turn) */
    int dirty;                /* on the server's flush list */
    struct kvg_http_conn *dprev, *dnext;
    int want_drain;
    int dispatched;               /* c->req is the handler's until res_end or abort */
    uint64_t deadline_ms;         /* the current timeout (loop time) */
    struct kvg_http_req reqbuf;   /* the request being read or answered (reused) */
    struct kvg_http_header *hdrs; /* its header views (reused) */
    size_t hdrs_cap;
    uint64_t timer_due_ms; /* when the libuv timer is set to fire */
    SSL *ssl;              /* TLS connections only */
    BIO *rbio, *wbio;      /* owned by ssl */
    int handles;           /* open uv handles; freed at 0 */
    char peer[64];
    struct kvg_http_conn *prev, *next;
};

struct kvg_http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
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
    char rbuf[READ_BUF_SIZE];
};

struct write_chunk {
    uv_write_t w;
    struct kvg_http_conn *conn;
    size_t len;
    char *data; /* owned: the connection's output buffer, taken whole */
};

static void conn_close(struct kvg_http_conn *c);
static void conn_process(struct kvg_http_conn *c);
static void tls_read(struct kvg_http_conn *c, const char *p, size_t n);

/* The server is freed once it was asked to close and its last handle is. */
static void server_maybe_free(struct kvg_http_server *srv)
{
    if (srv->closing && !srv->listener_open && !srv->open_handles && srv->nconns == 0) {
        kvg_buf_free(&srv->scratch);
        free(srv);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct kvg_http_server *srv = h->data;
    srv->listener_open = 0;
    server_maybe_free(srv);
}

static void on_aux_closed(uv_handle_t *h)
{
    struct kvg_http_server *srv = h->data;
    srv->open_handles--;
    server_maybe_free(srv);
}

void kvg_http_limits_default(struct kvg_http_limits *l)
{
    l->max_header_bytes = 64 * 1024;
    l->max_body_bytes = 512u * 1024 * 1024; /* the routers' --max-payload-size default */
    l->header_timeout_ms = 30 * 1000;
    l->body_timeout_ms = 60 * 1000;
    l->idle_timeout_ms = 75 * 1000;
    l->max_conns = 0;
    l->max_headers = 128;
}

/* ---------------------------------------------------------------- writing */

static void on_write(uv_write_t *w, int status)
{
    struct write_chunk *ch = (struct write_chunk *)w;
    struct kvg_http_conn *c = ch->conn;
    c->wq_bytes -= ch->len;
    free(ch->data);
    free(ch);
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->want_drain && c->wq_bytes + c->out.len < WRITE_HIGH_WATER / 2 && c->req &&
        c->req->on_drain) {
        c->want_drain = 0;
        c->req->on_drain(c->req, c->req->ud);
    }
}

static void dirty_unlink(struct kvg_http_conn *c)
{
    if (!c->dirty) return;
    if (c->dprev)
        c->dprev->dnext = c->dnext;
    else
        c->srv->dirty = c->dnext;
    if (c->dnext) c->dnext->dprev = c->dprev;
    c->dprev = c->dnext = NULL;
    c->dirty = 0;
}

/* Sends b's bytes on the socket and empties b (its memory moves to the
 * write request when libuv must queue). Tries the write at once: when the
 * socket takes it all (the common case) no write request is queued, which in
 * libuv also spares an epoll_ctl. */
static int sock_send(struct kvg_http_conn *c, struct kvg_buf *b)
{
    if (!b->len) return 0;
    size_t off = 0;
    if (c->wq_bytes == 0) {
        uv_buf_t now = uv_buf_init(b->data, (unsigned)b->len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &now, 1);
        if (n < 0 && n != UV_EAGAIN) return n;
        if (n > 0) off = (size_t)n;
        if (off == b->len) {
            kvg_buf_reset(b);
            return 0;
        }
    }
    struct write_chunk *ch = malloc(sizeof *ch);
    if (!ch) return -ENOMEM;
    ch->conn = c;
    ch->len = b->len - off;
    ch->data = b->data;
    kvg_buf_init(b, 0);
    uv_buf_t buf = uv_buf_init(ch->data + off, (unsigned)ch->len);
    int rc = uv_write(&ch->w, (uv_stream_t *)&c->tcp, &buf, 1, on_write);
    if (rc < 0) {
        free(ch->data);
        free(ch);
        return rc;
    }
    c->wq_bytes += ch->len;
    return 0;
}

/* TLS: moves what OpenSSL wrote into the outgoing memory BIO (records,
 * handshake messages, alerts) onto the socket. */
static int tls_pump(struct kvg_http_conn *c)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = 0;
    while (!rc && BIO_pending(c->wbio) > 0) {
        size_t n = (size_t)BIO_pending(c->wbio);
        if ((rc = kvg_buf_reserve(&b, n))) break;
        int r = BIO_read(c->wbio, b.data + b.len, (int)n);
        if (r <= 0) break;
        b.len += (size_t)r;
    }
    if (!rc) rc = sock_send(c, &b);
    kvg_buf_free(&b);
    return rc;
}

/* Hands the connection's pending output to the socket as one write
 * (encrypted first on a TLS connection). */
static int conn_flush(struct kvg_http_conn *c)
{
    dirty_unlink(c);
    if (!c->out.len || c->state == ST_CLOSING) return 0;
    if (!c->ssl) return sock_send(c, &c->out);
    int r = SSL_write(c->ssl, c->out.data, (int)c->out.len); /* memory BIO: all or error */
    kvg_buf_reset(&c->out);
    if (r <= 0) return KVG_EUPSTREAM;
    return tls_pump(c);
}

/* Output is coalesced: every write made during one loop turn goes out in a
 * single syscall, flushed before the loop polls again (prepare) and after
 * the I/O callbacks ran (check). A response head and its body, or the
 * chunks of one engine read, thus share one packet. */
static void flush_dirty(struct kvg_http_server *srv)
{
    while (srv->dirty) {
        struct kvg_http_conn *c = srv->dirty;
        if (conn_flush(c) < 0) conn_close(c);
    }
}

static void on_prepare(uv_prepare_t *h)
{
    flush_dirty(h->data);
}

static void on_check(uv_check_t *h)
{
    flush_dirty(h->data);
}

/* Queues len bytes (copied) made of up to three pieces. */
static int conn_write3(struct kvg_http_conn *c, const void *a, size_t alen, const void *b,
                       size_t blen, const void *d, size_t dlen)
{
    if (c->state == ST_CLOSING) return KVG_ECLOSED;
    int rc = kvg_buf_reserve(&c->out, alen + blen + dlen);
    if (rc) return rc;
    if (alen) kvg_buf_append(&c->out, a, alen);
    if (blen) kvg_buf_append(&c->out, b, blen);
    if (dlen) kvg_buf_append(&c->out, d, dlen);
    if (c->out.len >= 64 * 1024) return conn_flush(c);
    if (!c->dirty) {
        c->dirty = 1;
        c->dprev = NULL;
        c->dnext = c->srv->dirty;
        if (c->dnext) c->dnext->dprev = c;
        c->srv->dirty = c;
    }
    return 0;
}

static int conn_write(struct kvg_http_conn *c, const void *p, size_t n)
{
    return conn_write3(c, p, n, NULL, 0, NULL, 0);
}

/* --------------------------------------------------------------- requests */

/* A connection answers one request at a time, so its request lives in the
 * connection and is reused, header array and body buffer included: no
 * allocation per request once a connection has warmed up. "Freeing" a
 * request ends its life for the handler; only an unusually large body
 * buffer is given back at once. */
static void req_free(struct kvg_http_req *r)
{
    if (!r) return;
    if (r->body.cap > 1u << 20) kvg_buf_free(&r->body);
    r->ud = NULL;
    r->on_abort = r->on_drain = NULL;
}

static void timer_set(struct kvg_http_conn *c, uint32_t ms);

static void conn_reset_for_next(struct kvg_http_conn *c)
{
    kvg_buf_reset(&c->head);
    c->nh = 0;
    c->hstate = 0;
    c->url_len = 0;
    c->err_status = 0;
    c->state = ST_IDLE;
    timer_set(c, c->srv->limits.idle_timeout_ms);
}

struct kvg_str kvg_http_req_header(const struct kvg_http_req *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (kvg_str_eq_nocase(req->headers[i].name, name)) return req->headers[i].value;
    return KVG_STR_NULL;
}

static int must_close(const struct kvg_http_req *r)
{
    return r->close_after || !r->keep_alive || r->conn->srv->stopping;
}

int kvg_http_res_start(struct kvg_http_req *req, int status, const struct kvg_http_header *headers,
                       size_t nheaders, int64_t content_length)
{
    if (req->head_sent) return -EALREADY;
    /* The head is built in the loop's scratch buffer (no allocation per
     * response once it has grown), then queued like any write. */
    struct kvg_buf *sb = &req->conn->srv->scratch;
    struct kvg_buf b = *sb;
    kvg_buf_reset(&b);
    int rc = kvg_buf_append_str(&b, req->http_minor ? "HTTP/1.1 " : "HTTP/1.0 ");
    if (!rc) rc = kvg_buf_append_u64(&b, (uint64_t)(status > 0 ? status : 500));
    if (!rc) rc = kvg_buf_append(&b, " ", 1);
    if (!rc) rc = kvg_buf_append_str(&b, kvg_http_reason(status));
    if (!rc) rc = kvg_buf_append(&b, "\r\n", 2);
    for (size_t i = 0; !rc && i < nheaders; i++)
        rc = kvg_buf_append_header(&b, headers[i].name, headers[i].value);
    if (!rc && content_length >= 0) {
        rc = kvg_buf_append_str(&b, "content-length: ");
        if (!rc) rc = kvg_buf_append_u64(&b, (uint64_t)content_length);
        if (!rc) rc = kvg_buf_append(&b, "\r\n", 2);
    } else if (!rc) {
        if (req->http_minor) {
            req->chunked = 1;
            rc = kvg_buf_append_str(&b, "transfer-encoding: chunked\r\n");
        } else {
            req->close_after = 1; /* 1.0: the end of the body is the end of the connection */
        }
    }
    if (!rc && must_close(req)) {
        req->close_after = 1;
        rc = kvg_buf_append_str(&b, "connection: close\r\n");
    } else if (!rc && !req->http_minor) {
        rc = kvg_buf_append_str(&b, "connection: keep-alive\r\n");
    }
    if (!rc) rc = kvg_buf_append(&b, "\r\n", 2);
    if (!rc) rc = conn_write(req->conn, b.data, b.len);
    *sb = b; /* keep the (possibly grown) scratch for the next response */
    if (rc) return rc;
    req->status = status;
    req->head_sent = 1;
    req->first_byte_ns = kvg_now_ns();
    return 0;
}

int kvg_http_res_write(struct kvg_http_req *req, const void *data, size_t len)
{
    if (!req->head_sent || req->ended) return -EINVAL;
    if (len == 0 || req->method == HTTP_HEAD) return 0;
    int rc;
    if (req->chunked) {
        char pre[24];
        int n = snprintf(pre, sizeof pre, "%zx\r\n", len);
        rc = conn_write3(req->conn, pre, (size_t)n, data, len, "\r\n", 2);
    } else {
        rc = conn_write(req->conn, data, len);
    }
    if (rc) return rc;
    req->bytes_out += len;
    if (req->conn->wq_bytes + req->conn->out.len >= WRITE_HIGH_WATER) {
        req->conn->want_drain = 1;
        return 1;
    }
    return 0;
}

static void on_shutdown(uv_shutdown_t *s, int status)
{
    struct kvg_http_conn *c = s->data;
    free(s);
    conn_close(c);
}

/* Closes after the queued writes have gone out. */
static void conn_close_gracefully(struct kvg_http_conn *c)
{
    if (c->state == ST_CLOSING) return;
    conn_flush(c);
    uv_shutdown_t *s = malloc(sizeof *s);
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (!s || uv_shutdown(s, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        free(s);
        conn_close(c);
        return;
    }
    s->data = c;
    c->state = ST_CLOSING;
    uv_timer_stop(&c->timer);
}

int kvg_http_res_end(struct kvg_http_req *req)
{
    if (!req->head_sent || req->ended) return -EINVAL;
    struct kvg_http_conn *c = req->conn;
    int rc = 0;
    if (req->chunked && req->method != HTTP_HEAD) rc = conn_write(c, "0\r\n\r\n", 5);
    req->ended = 1;
    int close_now = req->close_after || rc;
    c->srv->nactive--;
    c->req = NULL;
    c->dispatched = 0;
    c->want_drain = 0;
    req_free(req);
    if (close_now) {
        conn_close_gracefully(c);
        return rc;
    }
    conn_reset_for_next(c);
    if (!c->processing) conn_process(c);
    return 0;
}

int kvg_http_res_send(struct kvg_http_req *req, int status, const char *content_type,
                      const struct kvg_http_header *extra, size_t nextra, const void *body,
                      size_t len)
{
    struct kvg_http_header hs[24];
    size_t n = 0;
    if (content_type)
        hs[n++] =
            (struct kvg_http_header){KVG_STR("content-type"), {content_type, strlen(content_type)}};
    for (size_t i = 0; i < nextra && n < KVG_ARRAY_LEN(hs); i++) hs[n++] = extra[i];
    int rc = kvg_http_res_start(req, status, hs, n, (int64_t)len);
    if (!rc && len) rc = kvg_http_res_write(req, body, len);
    if (rc < 0) {
        kvg_http_res_close_after(req);
    }
    return kvg_http_res_end(req) ?: (rc < 0 ? rc : 0);
}

int kvg_http_res_error(struct kvg_http_req *req, int status, const char *type, const char *code,
                       const char *message, const struct kvg_http_header *extra, size_t nextra)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = kvg_http_error_json(&b, status, type, code, message);
    if (rc) {
        kvg_buf_free(&b);
        kvg_http_res_close_after(req);
        return kvg_http_res_send(req, 500, "text/plain", NULL, 0, "out of memory", 13);
    }
    rc = kvg_http_res_send(req, status, "application/json", extra, nextra, b.data, b.len);
    kvg_buf_free(&b);
    return rc;
}

void kvg_http_res_abort(struct kvg_http_req *req)
{
    struct kvg_http_conn *c = req->conn;
    req->on_abort = NULL;
    conn_close(c);
}

void kvg_http_res_close_after(struct kvg_http_req *req)
{
    req->close_after = 1;
}

/* A response the server makes itself, for a request the handler never saw
 * (malformed, over a limit): written raw, then the connection closes. */
static void conn_reject(struct kvg_http_conn *c, int status, const char *message)
{
    struct kvg_buf body, b;
    kvg_buf_init(&body, 0);
    kvg_buf_init(&b, 0);
    if (!kvg_http_error_json(&body, status, kvg_http_error_type(status), NULL, message) &&
        !kvg_buf_printf(&b,
                        "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                        "content-length: %zu\r\nconnection: close\r\n\r\n",
                        status, kvg_http_reason(status), body.len) &&
        !kvg_buf_append(&b, body.data, body.len))
        conn_write(c, b.data, b.len);
    kvg_buf_free(&body);
    kvg_buf_free(&b);
    if (c->req) {
        req_free(c->req);
        c->req = NULL;
    }
    conn_close_gracefully(c);
}

/* ---------------------------------------------------------------- parsing */

static struct kvg_http_conn *conn_of(llhttp_t *p)
{
    return (struct kvg_http_conn *)p->data;
}

static int on_message_begin(llhttp_t *p)
{
    struct kvg_http_conn *c = conn_of(p);
    struct kvg_http_req *r = &c->reqbuf;
    struct kvg_buf body = r->body;
    memset(r, 0, sizeof *r);
    r->body = body;
    kvg_buf_reset(&r->body);
    r->conn = c;
    memcpy(r->peer, c->peer, sizeof c->peer);
    c->req = r;
    c->state = ST_HEAD;
    timer_set(c, c->srv->limits.header_timeout_ms);
    return 0;
}

static int head_append(struct kvg_http_conn *c, const char *at, size_t n)
{
    if (kvg_buf_append(&c->head, at, n)) {
        c->err_status = 431;
        return HPE_USER;
    }
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    c->url_len += n;
    return head_append(c, at, n);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    if (c->hstate != 1) {
        if (c->nh == c->srv->limits.max_headers) {
            c->err_status = 431;
            return HPE_USER;
        }
        if (c->nh == c->caph) {
            size_t cap = c->caph ? c->caph * 2 : 16;
            struct hdr_off *h = realloc(c->hoff, cap * sizeof *h);
            if (!h) return HPE_USER;
            c->hoff = h;
            c->caph = cap;
        }
        c->hoff[c->nh++] = (struct hdr_off){c->head.len, 0, 0, 0};
        c->hstate = 1;
    }
    c->hoff[c->nh - 1].name_len += n;
    return head_append(c, at, n);
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    if (c->hstate != 2) {
        c->hoff[c->nh - 1].val_off = c->head.len;
        c->hstate = 2;
    }
    c->hoff[c->nh - 1].val_len += n;
    return head_append(c, at, n);
}

static int on_headers_complete(llhttp_t *p)
{
    struct kvg_http_conn *c = conn_of(p);
    struct kvg_http_req *r = c->req;
    r->method = llhttp_get_method(p);
    r->method_name = llhttp_method_name((llhttp_method_t)r->method);
    r->http_minor = llhttp_get_http_major(p) == 1 ? llhttp_get_http_minor(p) : 1;
    r->keep_alive = llhttp_should_keep_alive(p);
    if (c->nh > c->hdrs_cap) {
        size_t cap = c->nh < 16 ? 16 : c->nh;
        struct kvg_http_header *h = realloc(c->hdrs, cap * sizeof *h);
        if (!h) return HPE_USER;
        c->hdrs = h;
        c->hdrs_cap = cap;
    }
    r->headers = c->hdrs;
    r->nheaders = c->nh;
    const char *base = c->head.data;
    for (size_t i = 0; i < c->nh; i++) {
        r->headers[i].name = (struct kvg_str){base + c->hoff[i].name_off, c->hoff[i].name_len};
        r->headers[i].value = (struct kvg_str){base + c->hoff[i].val_off, c->hoff[i].val_len};
    }
    r->url = (struct kvg_str){base, c->url_len};
    const char *q = memchr(base, '?', c->url_len);
    r->path = (struct kvg_str){base, q ? (size_t)(q - base) : c->url_len};
    r->query = q ? (struct kvg_str){q + 1, c->url_len - r->path.len - 1} : KVG_STR_NULL;
    r->start_ns = kvg_now_ns();
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > c->srv->limits.max_body_bytes) {
        c->err_status = 413;
        return HPE_USER;
    }
    struct kvg_str expect = kvg_http_req_header(r, "expect");
    if (expect.p && r->http_minor >= 1) {
        if (!kvg_str_eq_nocase(expect, "100-continue")) {
            c->err_status = 417;
            return HPE_USER;
        }
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        conn_write(c, cont, sizeof cont - 1);
    }
    c->state = ST_BODY;
    timer_set(c, c->srv->limits.body_timeout_ms);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    if (kvg_buf_append(&c->req->body, at, n)) {
        c->err_status = 413;
        return HPE_USER;
    }
    timer_set(c, c->srv->limits.body_timeout_ms);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct kvg_http_conn *c = conn_of(p);
    c->state = ST_HANDLING;
    uv_timer_stop(&c->timer);
    return HPE_PAUSED; /* one request at a time: parse the next after this one's answer */
}

static void dispatch(struct kvg_http_conn *c)
{
    struct kvg_http_req *r = c->req;
    c->srv->nactive++;
    c->dispatched = 1;
    c->srv->handler(r, c->srv->ud);
}

/* Parses buffered input while the connection is ready for a request. */
static void conn_process(struct kvg_http_conn *c)
{
    c->processing = 1;
    while ((c->state == ST_IDLE || c->state == ST_HEAD || c->state == ST_BODY) && c->inbuf.len) {
        llhttp_errno_t e = llhttp_execute(&c->parser, c->inbuf.data, c->inbuf.len);
        if (e == HPE_OK) {
            kvg_buf_reset(&c->inbuf);
            break;
        }
        if (e == HPE_PAUSED) {
            size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - c->inbuf.data);
            kvg_buf_consume(&c->inbuf, used);
            llhttp_resume(&c->parser);
            dispatch(c); /* may answer at once and set state back to ST_IDLE */
            continue;
        }
        int status = c->err_status ? c->err_status : 400;
        const char *msg = status == 431   ? "request header fields too large"
                          : status == 413 ? "request body too large"
                          : status == 417 ? "unsupported Expect header"
                                          : llhttp_get_error_reason(&c->parser);
        if (e == HPE_PAUSED_UPGRADE) msg = "protocol upgrades are not supported";
        if (c->state == ST_IDLE && !c->req && status == 400 && e != HPE_PAUSED_UPGRADE)
            msg = llhttp_get_error_reason(&c->parser);
        kvg_buf_reset(&c->inbuf);
        conn_reject(c, status, msg ? msg : "malformed HTTP request");
        break;
    }
    c->processing = 0;
}

/* --------------------------------------------------------------- lifetime */

static void on_handle_closed(uv_handle_t *h)
{
    struct kvg_http_conn *c = h->data;
    if (--c->handles > 0) return;
    struct kvg_http_server *srv = c->srv;
    kvg_buf_free(&c->head);
    kvg_buf_free(&c->inbuf);
    kvg_buf_free(&c->out);
    kvg_buf_free(&c->reqbuf.body);
    free(c->hdrs);
    if (c->ssl) SSL_free(c->ssl); /* frees both BIOs */
    free(c->hoff);
    free(c);
    srv->nconns--;
    server_maybe_free(srv);
}

static void conn_close(struct kvg_http_conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp)) return;
    struct kvg_http_server *srv = c->srv;
    struct kvg_http_req *r = c->req;
    int was_dispatched = c->dispatched;
    c->state = ST_CLOSING;
    c->req = NULL;
    c->dispatched = 0;
    if (r && was_dispatched) {
        /* The handler still holds r: tell it, then r dies. */
        srv->nactive--;
        if (r->on_abort) r->on_abort(r, r->ud);
    }
    req_free(r);
    dirty_unlink(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_timer(uv_timer_t *t)
{
    struct kvg_http_conn *c = t->data;
    uint64_t now = uv_now(c->srv->loop);
    if (c->deadline_ms > now) { /* moved meanwhile: wait for the rest */
        c->timer_due_ms = c->deadline_ms;
        uv_timer_start(&c->timer, on_timer, c->deadline_ms - now, 0);
        return;
    }
    if (c->state == ST_HEAD || c->state == ST_BODY) {
        conn_reject(c, 408, "timed out reading the request");
        return;
    }
    if (c->state == ST_IDLE) conn_close(c);
}

/* Timers move on every read; rather than re-arming the libuv timer each
 * time, the deadline is stored and the timer re-armed only when it fires
 * early or must fire sooner. */
static void timer_set(struct kvg_http_conn *c, uint32_t ms)
{
    if (!ms) {
        c->deadline_ms = 0;
        uv_timer_stop(&c->timer);
        return;
    }
    uint64_t now = uv_now(c->srv->loop);
    uint64_t due = now + ms;
    int later = uv_is_active((uv_handle_t *)&c->timer) && c->timer_due_ms <= due;
    c->deadline_ms = due;
    if (later) return; /* fires first, then re-arms for the rest */
    c->timer_due_ms = due;
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct kvg_http_conn *c = h->data;
    buf->base = c->srv->rbuf;
    buf->len = sizeof c->srv->rbuf;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct kvg_http_conn *c = s->data;
    if (nread < 0) {
        conn_close(c); /* EOF or error: a request being answered is aborted */
        return;
    }
    if (nread == 0 || c->state == ST_CLOSING) return;
    if (c->ssl) {
        tls_read(c, buf->base, (size_t)nread);
        return;
    }
    /* Bytes that arrive while a request is answered wait in inbuf (bounded by
     * the head limit: a client may pipeline, not flood). */
    if (kvg_buf_append(&c->inbuf, buf->base, (size_t)nread)) {
        if (c->state == ST_HANDLING) {
            uv_read_stop(s); /* resumes when the answer ends; we lose abort detection */
            return;
        }
        conn_reject(c, 431, "request header fields too large");
        return;
    }
    if (!c->processing) conn_process(c);
}

/* TLS: ciphertext in, plaintext appended to inbuf and parsed. Handshake
 * answers go out at once. */
static void tls_read(struct kvg_http_conn *c, const char *p, size_t n)
{
    if (BIO_write(c->rbio, p, (int)n) != (int)n) {
        conn_close(c);
        return;
    }
    char plain[16384];
    for (;;) {
        int r = SSL_read(c->ssl, plain, sizeof plain);
        if (r > 0) {
            if (kvg_buf_append(&c->inbuf, plain, (size_t)r)) {
                if (c->state == ST_HANDLING) break; /* paused: resumes after the answer */
                conn_reject(c, 431, "request header fields too large");
                return;
            }
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ) break;
        /* Closed, or a handshake/record error: nothing more to say. */
        ERR_clear_error();
        tls_pump(c);
        conn_close(c);
        return;
    }
    if (tls_pump(c) < 0) {
        conn_close(c);
        return;
    }
    if (!c->processing) conn_process(c);
}

static void on_connection(uv_stream_t *ls, int status)
{
    struct kvg_http_server *srv = ls->data;
    if (status < 0) return;
    struct kvg_http_conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->srv = srv;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->handles = 2;
    srv->nconns++;
    c->next = srv->conns;
    if (c->next) c->next->prev = c;
    srv->conns = c;
    kvg_buf_init(&c->head, srv->limits.max_header_bytes);
    kvg_buf_init(&c->inbuf, srv->limits.max_header_bytes + READ_BUF_SIZE);
    kvg_buf_init(&c->out, 0);
    kvg_buf_init(&c->reqbuf.body, srv->limits.max_body_bytes);
    llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
    c->parser.data = c;
    if (uv_accept(ls, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    if (srv->stopping || (srv->limits.max_conns && srv->nconns > srv->limits.max_conns)) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        char ip[48] = "?";
        int port = 0;
        if (ss.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
        snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
    }
    if (srv->tls) {
        c->ssl = SSL_new(srv->tls);
        c->rbio = BIO_new(BIO_s_mem());
        c->wbio = BIO_new(BIO_s_mem());
        if (!c->ssl || !c->rbio || !c->wbio) {
            if (c->ssl)
                SSL_free(c->ssl);
            else
                BIO_free(c->rbio), BIO_free(c->wbio);
            c->ssl = NULL;
            conn_close(c);
            return;
        }
        SSL_set_bio(c->ssl, c->rbio, c->wbio);
        SSL_set_accept_state(c->ssl);
    }
    c->state = ST_IDLE;
    timer_set(c, srv->limits.header_timeout_ms);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* Creates the listening socket ourselves so that SO_REUSEPORT can be set
 * before bind (libuv 1.44 has no flag for it). */
static int make_listen_socket(const char *host, int port, int reuseport, int *fd_out)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t slen;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) == 0) {
        slen = sizeof(struct sockaddr_in);
    } else if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) == 0) {
        slen = sizeof(struct sockaddr_in6);
    } else {
        return -EINVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (bind(fd, (struct sockaddr *)&ss, slen) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *fd_out = fd;
    return 0;
}

int kvg_http_server_start(uv_loop_t *loop, const char *host, int port, int reuseport,
                          const struct kvg_http_limits *limits, kvg_http_handler handler, void *ud,
                          struct kvg_http_server **out)
{
    struct kvg_http_server *srv = calloc(1, sizeof *srv);
    if (!srv) return -ENOMEM;
    srv->loop = loop;
    if (limits)
        srv->limits = *limits;
    else
        kvg_http_limits_default(&srv->limits);
    srv->handler = handler;
    srv->ud = ud;
    kvg_buf_init(&srv->scratch, 0);
    llhttp_settings_init(&srv->settings);
    srv->settings.on_message_begin = on_message_begin;
    srv->settings.on_url = on_url;
    srv->settings.on_header_field = on_header_field;
    srv->settings.on_header_value = on_header_value;
    srv->settings.on_headers_complete = on_headers_complete;
    srv->settings.on_body = on_body;
    srv->settings.on_message_complete = on_message_complete;
    int fd = -1;
    int rc = make_listen_socket(host, port, reuseport, &fd);
    if (rc) goto fail;
    uv_tcp_init(loop, &srv->listener);
    srv->listener.data = srv;
    srv->listener_open = 1;
    uv_prepare_init(loop, &srv->prepare);
    uv_check_init(loop, &srv->check);
    srv->prepare.data = srv->check.data = srv;
    uv_prepare_start(&srv->prepare, on_prepare);
    uv_check_start(&srv->check, on_check);
    srv->open_handles = 2;
    if ((rc = uv_tcp_open(&srv->listener, fd)) < 0)
        close(fd); /* not the handle's yet */
    else
        rc = uv_listen((uv_stream_t *)&srv->listener, 1024, on_connection);
    if (rc < 0) {
        srv->closing = 1; /* freed when the handle has closed */
        uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
        uv_close((uv_handle_t *)&srv->prepare, on_aux_closed);
        uv_close((uv_handle_t *)&srv->check, on_aux_closed);
        *out = NULL;
        return rc;
    }
    srv->listening = 1;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &len);
    srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    *out = srv;
    return 0;
fail:
    free(srv);
    return rc;
}

int kvg_http_server_port(const struct kvg_http_server *srv)
{
    return srv->port;
}

void kvg_http_server_stop_accepting(struct kvg_http_server *srv)
{
    if (srv->stopping) return;
    srv->stopping = 1;
    if (srv->listening) {
        srv->listening = 0;
        uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
    }
    /* Idle keep-alive connections go now; busy ones close after their answer. */
    for (struct kvg_http_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == ST_IDLE && !c->inbuf.len) conn_close(c);
    }
}

unsigned kvg_http_server_conns(const struct kvg_http_server *srv)
{
    return srv->nconns;
}

unsigned kvg_http_server_active(const struct kvg_http_server *srv)
{
    return srv->nactive;
}

void kvg_http_server_close(struct kvg_http_server *srv)
{
    kvg_http_server_stop_accepting(srv);
    srv->closing = 1;
    for (struct kvg_http_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        conn_close(c);
    }
    uv_close((uv_handle_t *)&srv->prepare, on_aux_closed);
    uv_close((uv_handle_t *)&srv->check, on_aux_closed);
    server_maybe_free(srv);
}

void kvg_http_server_set_tls(struct kvg_http_server *srv, SSL_CTX *ctx)
{
    srv->tls = ctx;
}
