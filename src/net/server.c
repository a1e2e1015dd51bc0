/* HTTP/1.1 server connections: accept, parse with llhttp, enforce limits,
 * hand complete requests to the handler, write responses (fixed-length or
 * chunked), keep-alive, and notice clients that leave mid-answer.
 * See http.h for the contract with handlers. */
#include "net/http.h"

#include <errno.h>
#include <stdatomic.h>
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
#include "net/server_int.h"

static void kvg__http_tls_read(struct kvg_http_conn *c, const char *p, size_t n);
static void resume_reading(struct kvg_http_conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* The server is freed once it was asked to close and its last handle is. */
static void server_maybe_free(struct kvg_http_server *srv)
{
    if (srv->closing && !srv->listener_open && !srv->open_handles && srv->nconns == 0) {
        kvg_buf_free(&srv->scratch);
        free(srv);
    }
}

void kvg__http_on_listener_closed(uv_handle_t *h)
{
    struct kvg_http_server *srv = h->data;
    close(srv->listen_fd); /* a poll handle leaves its descriptor open */
    srv->listen_fd = -1;
    srv->listener_open = 0;
    server_maybe_free(srv);
}

void kvg__http_on_aux_closed(uv_handle_t *h)
{
    struct kvg_http_server *srv = h->data;
    srv->open_handles--;
    server_maybe_free(srv);
}

void kvg_http_limits_default(struct kvg_http_limits *l)
{
    l->max_header_bytes = 64 * 1024;
    l->max_body_bytes = 64u * 1024 * 1024; /* see --max-payload-size in kvgate serve --help */
    l->header_timeout_ms = 30 * 1000;
    l->body_timeout_ms = 60 * 1000;
    l->body_deadline_ms = 300 * 1000;
    l->max_buffered_bytes = 1ull << 30;
    l->idle_timeout_ms = 75 * 1000;
    l->max_conns = 0;
    l->max_headers = 128;
}

/* ---------------------------------------------------------------- writing */

/* --------------------------------------------------------------- requests */

/* A connection answers one request at a time, so its request lives in the
 * connection and is reused, header array and body buffer included: no
 * allocation per request once a connection has warmed up. "Freeing" a
 * request ends its life for the handler; only an unusually large body
 * buffer is given back at once. */
/* Request body bytes held across every server and thread of the process:
 * one cap, so many connections each under --max-payload-size cannot add up
 * to more memory than the operator allowed. */
static _Atomic uint64_t g_buffered;

uint64_t kvg_http_buffered_bytes(void)
{
    return atomic_load_explicit(&g_buffered, memory_order_relaxed);
}

static void body_release(struct kvg_http_conn *c)
{
    if (c->body_held) atomic_fetch_sub_explicit(&g_buffered, c->body_held, memory_order_relaxed);
    c->body_held = 0;
}

/* Takes n more bytes of the process's budget for c's body; -1 when over. */
static int body_take(struct kvg_http_conn *c, uint64_t n)
{
    uint64_t cap = c->srv->limits.max_buffered_bytes;
    uint64_t was = atomic_fetch_add_explicit(&g_buffered, n, memory_order_relaxed);
    if (cap && was + n > cap) {
        atomic_fetch_sub_explicit(&g_buffered, n, memory_order_relaxed);
        return -1;
    }
    c->body_held += n;
    return 0;
}

void kvg__http_req_free(struct kvg_http_req *r)
{
    if (!r) return;
    if (r->conn) body_release(r->conn);
    if (r->body.cap > 1u << 20) kvg_buf_free(&r->body);
    r->ud = NULL;
    r->on_abort = r->on_drain = NULL;
}

void kvg__http_reset_for_next(struct kvg_http_conn *c)
{
    kvg_buf_reset(&c->head);
    kvg__http_hdrs_reset(&c->hacc);
    c->url_len = 0;
    c->err_status = 0;
    c->state = ST_IDLE;
    kvg__http_timer_set(c, c->srv->limits.idle_timeout_ms);
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
    body_release(c);
    memset(r, 0, sizeof *r);
    r->body = body;
    kvg_buf_reset(&r->body);
    r->conn = c;
    memcpy(r->peer, c->peer, sizeof c->peer);
    c->req = r;
    c->state = ST_HEAD;
    kvg__http_timer_set(c, c->srv->limits.header_timeout_ms);
    return 0;
}

/* The result of adding a piece of the head (URL, header name or value):
 * past the size or count limit is a 431; out of memory a 500. */
static int head_piece(struct kvg_http_conn *c, int rc)
{
    if (rc) c->err_status = rc == KVG_ETOOBIG ? 431 : 500;
    return rc ? HPE_USER : 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    c->url_len += n;
    return head_piece(c, kvg_buf_append(&c->head, at, n));
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    return head_piece(c, kvg__http_hdrs_name(&c->hacc, at, n));
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    return head_piece(c, kvg__http_hdrs_value(&c->hacc, at, n));
}

/* While a body is read: the idle timer between its bytes, and never past
 * the body's deadline (a client sending a byte now and then). */
static void body_timer(struct kvg_http_conn *c)
{
    uint32_t ms = c->srv->limits.body_timeout_ms;
    if (c->body_due_ms) {
        uint64_t now = uv_now(c->srv->loop);
        uint64_t left = c->body_due_ms > now ? c->body_due_ms - now : 1;
        if (!ms || left < ms) ms = (uint32_t)left;
    }
    kvg__http_timer_set(c, ms);
}

static int on_headers_complete(llhttp_t *p)
{
    struct kvg_http_conn *c = conn_of(p);
    struct kvg_http_req *r = c->req;
    r->method = llhttp_get_method(p);
    r->method_name = llhttp_method_name((llhttp_method_t)r->method);
    r->http_minor = llhttp_get_http_major(p) == 1 ? llhttp_get_http_minor(p) : 1;
    r->keep_alive = llhttp_should_keep_alive(p);
    size_t nh = c->hacc.n;
    if (nh > c->hdrs_cap) {
        size_t cap = nh < 16 ? 16 : nh;
        struct kvg_http_header *h = realloc(c->hdrs, cap * sizeof *h);
        if (!h) return HPE_USER;
        c->hdrs = h;
        c->hdrs_cap = cap;
    }
    r->headers = c->hdrs;
    r->nheaders = nh;
    kvg__http_hdrs_views(&c->hacc, c->hdrs);
    const char *base = c->head.data;
    r->url = (struct kvg_str){base, c->url_len};
    const char *q = memchr(base, '?', c->url_len);
    r->path = (struct kvg_str){base, q ? (size_t)(q - base) : c->url_len};
    r->query = q ? (struct kvg_str){q + 1, c->url_len - r->path.len - 1} : KVG_STR_NULL;
    r->start_ns = kvg_now_ns();
    const struct kvg_http_limits *lim = &c->srv->limits;
    if (c->srv->head_check) { /* who asks comes first: a stranger learns no limit */
        struct kvg_http_refusal *rf = calloc(1, sizeof *rf);
        if (!rf) return HPE_USER;
        if (c->srv->head_check(r, c->srv->ud, rf)) {
            c->refusal = rf;
            return HPE_USER;
        }
        free(rf);
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > lim->max_body_bytes) {
        c->err_status = 413;
        return HPE_USER;
    }
    /* A declared body takes its share of the process's budget before any of
     * it is read (or continued): refused now, not half-way. */
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length && body_take(c, p->content_length)) {
        c->err_status = 503;
        return HPE_USER;
    }
    /* Its room too, in one allocation: growing by doubling copied a big body
     * once more on the loop. Within the limit and the budget just taken. */
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length &&
        kvg_buf_reserve(&r->body, (size_t)p->content_length)) {
        c->err_status = 503;
        return HPE_USER;
    }
    c->body_due_ms = lim->body_deadline_ms ? uv_now(c->srv->loop) + lim->body_deadline_ms : 0;
    struct kvg_str expect = kvg_http_req_header(r, "expect");
    if (expect.p && r->http_minor >= 1) {
        if (!kvg_str_eq_nocase(expect, "100-continue")) {
            c->err_status = 417;
            return HPE_USER;
        }
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        kvg__http_write(c, cont, sizeof cont - 1);
    }
    c->state = ST_BODY;
    body_timer(c);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct kvg_http_conn *c = conn_of(p);
    /* A chunked body takes its budget as it comes; a declared one has it. */
    if (!(p->flags & F_CONTENT_LENGTH) && body_take(c, n)) {
        c->err_status = 503;
        return HPE_USER;
    }
    struct kvg_buf *b = &c->req->body;
    if (b->data && at == b->data + b->len) {
        b->len += n; /* read in place (on_alloc) */
    } else if (kvg_buf_append(b, at, n)) {
        c->err_status = 413;
        return HPE_USER;
    }
    body_timer(c);
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

/* Parses data: requests are dispatched as their heads and bodies complete
 * (the parser pauses after each: one request at a time). Returns how many
 * bytes were used; the rest waits until the answer ends. */
static size_t parse_bytes(struct kvg_http_conn *c, const char *data, size_t len)
{
    size_t off = 0;
    while ((c->state == ST_IDLE || c->state == ST_HEAD || c->state == ST_BODY) && off < len) {
        llhttp_errno_t e = llhttp_execute(&c->parser, data + off, len - off);
        if (e == HPE_OK) return len;
        if (e == HPE_PAUSED) {
            off = (size_t)(llhttp_get_error_pos(&c->parser) - data);
            llhttp_resume(&c->parser);
            dispatch(c); /* may answer at once and set state back to ST_IDLE */
            continue;
        }
        if (c->refusal) {
            struct kvg_http_refusal *rf = c->refusal;
            c->refusal = NULL;
            kvg__http_refuse(c, rf);
            free(rf);
            return len;
        }
        int status = c->err_status ? c->err_status : 400;
        const char *msg = status == 431   ? "request header fields too large"
                          : status == 413 ? "request body too large"
                          : status == 417 ? "unsupported Expect header"
                          : status == 503 ? "the gateway holds too many request bodies: retry later"
                                          : llhttp_get_error_reason(&c->parser);
        if (e == HPE_PAUSED_UPGRADE) msg = "protocol upgrades are not supported";
        if (c->state == ST_IDLE && !c->req && status == 400 && e != HPE_PAUSED_UPGRADE)
            msg = llhttp_get_error_reason(&c->parser);
        kvg__http_reject(c, status, msg ? msg : "malformed HTTP request");
        return len;
    }
    return off;
}

void kvg__http_process(struct kvg_http_conn *c)
{
    c->processing = 1;
    /* inbuf is not touched while its bytes are parsed: nothing appends to it
     * while processing is set (on_read parses in place then). */
    size_t used = parse_bytes(c, c->inbuf.data, c->inbuf.len);
    kvg_buf_consume(&c->inbuf, used);
    c->processing = 0;
    resume_reading(c);
}

/* --------------------------------------------------------------- lifetime */

static void on_handle_closed(uv_handle_t *h)
{
    struct kvg_http_conn *c = h->data;
    if (--c->handles > 0) return;
    struct kvg_http_server *srv = c->srv;
    body_release(c);
    free(c->refusal);
    kvg_buf_free(&c->head);
    kvg_buf_free(&c->inbuf);
    kvg_buf_free(&c->out);
    kvg_buf_free(&c->reqbuf.body);
    free(c->hdrs);
    if (c->ssl) SSL_free(c->ssl); /* frees both BIOs */
    kvg__http_hdrs_free(&c->hacc);
    free(c);
    srv->nconns--;
    server_maybe_free(srv);
}

void kvg__http_close(struct kvg_http_conn *c)
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
    kvg__http_req_free(r);
    kvg__http_dirty_unlink(c);
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
        kvg__http_reject(c, 408, "timed out reading the request");
        return;
    }
    if (c->state == ST_IDLE || c->state == ST_CLOSING) kvg__http_close(c);
}

/* Timers move on every read; rather than re-arming the libuv timer each
 * time, the deadline is stored and the timer re-armed only when it fires
 * early or must fire sooner. */
void kvg__http_timer_set(struct kvg_http_conn *c, uint32_t ms)
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

/* Pipelined bytes that arrive while a request is answered wait in inbuf,
 * bounded by the head limit plus one read (a client may pipeline, not
 * flood). Reading stops before a read could overflow it, and starts again
 * once the answer has ended and inbuf been parsed: no byte is dropped, but
 * meanwhile a client that goes away is not noticed. */
static void pause_reading(struct kvg_http_conn *c)
{
    if (c->read_paused || c->state == ST_CLOSING) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->read_paused = 1;
}

static void pause_if_full(struct kvg_http_conn *c)
{
    if (c->state == ST_HANDLING && c->inbuf.len + READ_BUF_SIZE > c->inbuf.limit) pause_reading(c);
}

static void resume_reading(struct kvg_http_conn *c)
{
    if (!c->read_paused || c->state == ST_HANDLING || c->state == ST_CLOSING) return;
    c->read_paused = 0;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read)) {
        kvg__http_close(c);
        return;
    }
    if (c->ssl) kvg__http_tls_read(c, NULL, 0); /* what OpenSSL still holds */
}

/* A declared body whose room is reserved is read straight into it, no more
 * than what is left of it (the next request's bytes never land there):
 * otherwise a big body was copied twice on the loop, read buffer to inbuf to
 * body. Everything else goes through the loop's read buffer. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct kvg_http_conn *c = h->data;
    (void)suggested;
    buf->base = c->srv->rbuf;
    buf->len = sizeof c->srv->rbuf;
    if (c->state != ST_BODY || c->ssl || c->inbuf.len || !c->req ||
        !(c->parser.flags & F_CONTENT_LENGTH))
        return;
    struct kvg_buf *b = &c->req->body;
    size_t room = b->data ? b->cap - b->len : 0;
    uint64_t left = c->parser.content_length;
    if (room < 4096 || left < 4096) return; /* the tail of a body: the usual way */
    buf->base = b->data + b->len;
    buf->len = left < room ? (size_t)left : room;
}

int kvg__http_linger_start(struct kvg_http_conn *c)
{
    return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct kvg_http_conn *c = s->data;
    if (c->state == ST_CLOSING) { /* lingering: dropped, up to a bound */
        if (nread > 0) c->lingered += (size_t)nread;
        if (nread < 0 || c->lingered > KVG_HTTP_LINGER_BYTES) kvg__http_close(c);
        return;
    }
    if (nread < 0) {
        /* The client closed its side. A request its handler still holds is
         * aborted (nginx's default: the client is gone); answers already
         * written still go out, then the connection closes. */
        if (nread == UV_EOF && !c->dispatched)
            kvg__http_close_gracefully(c);
        else
            kvg__http_close(c);
        return;
    }
    if (nread == 0 || c->state == ST_CLOSING) return;
    if (c->ssl) {
        kvg__http_tls_read(c, buf->base, (size_t)nread);
        return;
    }
    if (buf->base != c->srv->rbuf || (!c->inbuf.len && !c->processing)) {
        /* Parsed where they were read (a body's room, or the read buffer);
         * what a request being answered leaves waits in inbuf, which is
         * empty here and holds a read buffer's worth. */
        c->processing = 1;
        size_t used = parse_bytes(c, buf->base, (size_t)nread);
        c->processing = 0;
        if (used < (size_t)nread && c->state != ST_CLOSING &&
            kvg_buf_append(&c->inbuf, buf->base + used, (size_t)nread - used)) {
            kvg__http_close(c);
            return;
        }
    } else if (kvg_buf_append(&c->inbuf, buf->base, (size_t)nread)) {
        /* Not while an answer is under way: reading paused before this. */
        kvg__http_reject(c, 431, "request header fields too large");
        return;
    } else if (!c->processing) {
        kvg__http_process(c);
    }
    pause_if_full(c);
}

/* TLS: ciphertext in, plaintext appended to inbuf and parsed. Handshake
 * answers go out at once. */
static void kvg__http_tls_read(struct kvg_http_conn *c, const char *p, size_t n)
{
    if (n && BIO_write(c->rbio, p, (int)n) != (int)n) {
        kvg__http_close(c);
        return;
    }
    char plain[16384];
    for (;;) {
        /* While an answer is under way the plaintext waits in inbuf; when
         * that cannot take another record, the rest waits in OpenSSL, and
         * reading pauses until the answer ends (resume_reading). */
        if (c->state == ST_HANDLING && c->inbuf.len + sizeof plain > c->inbuf.limit) {
            pause_reading(c);
            break;
        }
        int r = SSL_read(c->ssl, plain, sizeof plain);
        if (r > 0) {
            if (kvg_buf_append(&c->inbuf, plain, (size_t)r)) {
                kvg__http_reject(c, 431, "request header fields too large");
                return;
            }
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ) break;
        /* Closed, or a handshake/record error: nothing more to say. */
        ERR_clear_error();
        kvg__http_tls_pump(c);
        kvg__http_close(c);
        return;
    }
    if (kvg__http_tls_pump(c) < 0) {
        kvg__http_close(c);
        return;
    }
    if (!c->processing) kvg__http_process(c);
}

void kvg__http_conn_accepted(struct kvg_http_server *srv, int fd)
{
    struct kvg_http_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
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
    kvg__http_hdrs_init(&c->hacc, &c->head, srv->limits.max_headers);
    kvg_buf_init(&c->inbuf, srv->limits.max_header_bytes + READ_BUF_SIZE);
    kvg_buf_init(&c->out, 0);
    kvg_buf_init(&c->reqbuf.body, srv->limits.max_body_bytes);
    llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
    c->parser.data = c;
    if (uv_tcp_open(&c->tcp, fd) < 0) {
        close(fd);
        kvg__http_close(c);
        return;
    }
    if (srv->stopping || (srv->limits.max_conns && srv->nconns > srv->limits.max_conns)) {
        kvg__http_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (srv->limits.send_buffer_bytes) {
        int v = (int)srv->limits.send_buffer_bytes;
        uv_send_buffer_size((uv_handle_t *)&c->tcp, &v);
    }
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
        snprintf(c->peer, sizeof c->peer, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
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
            kvg__http_close(c);
            return;
        }
        SSL_set_bio(c->ssl, c->rbio, c->wbio);
        SSL_set_accept_state(c->ssl);
    }
    c->state = ST_IDLE;
    kvg__http_timer_set(c, srv->limits.header_timeout_ms);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* Creates the listening socket ourselves so that SO_REUSEPORT can be set
 * (libuv 1.44 has no flag for it). The first socket of a group binds without
 * it, so an address another process holds, with or without SO_REUSEPORT, is
 * "address in use"; only then is SO_REUSEPORT turned on (the kernel reads it
 * when the socket listens), so this process's own loop threads can join. */
static int make_listen_socket(const char *host, int port, enum kvg_http_bind mode, int *fd_out)
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
    int one = 1, e = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (mode == KVG_HTTP_BIND_GROUP_JOIN &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        e = -errno;
    if (!e && bind(fd, (struct sockaddr *)&ss, slen) < 0) e = -errno;
    if (!e && mode == KVG_HTTP_BIND_GROUP_FIRST &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        e = -errno;
    if (e) {
        close(fd);
        return e;
    }
    *fd_out = fd;
    return 0;
}

int kvg_http_server_start(uv_loop_t *loop, const char *host, int port, enum kvg_http_bind bind_mode,
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
    int rc = make_listen_socket(host, port, bind_mode, &fd);
    if (rc) goto fail;
    uv_prepare_init(loop, &srv->prepare);
    uv_check_init(loop, &srv->check);
    srv->prepare.data = srv->check.data = srv;
    uv_prepare_start(&srv->prepare, kvg__http_on_prepare);
    uv_check_start(&srv->check, kvg__http_on_check);
    uv_timer_init(loop, &srv->pause_timer);
    srv->pause_timer.data = srv;
    srv->open_handles = 3;
    srv->listen_fd = fd;
    if (listen(fd, 1024) < 0) {
        rc = -errno;
    } else if ((rc = uv_poll_init(loop, &srv->listener, fd)) == 0) {
        srv->listener.data = srv;
        srv->listener_open = 1;
        rc = kvg__http_accept_start(srv);
    }
    if (rc < 0) {
        srv->closing = 1; /* freed when the handles have closed */
        kvg__http_accept_stop(srv, 1);
        if (srv->listener_open)
            uv_close((uv_handle_t *)&srv->listener, kvg__http_on_listener_closed);
        else
            close(fd);
        uv_close((uv_handle_t *)&srv->prepare, kvg__http_on_aux_closed);
        uv_close((uv_handle_t *)&srv->check, kvg__http_on_aux_closed);
        *out = NULL;
        return rc;
    }
    srv->listening = 1;
    struct sockaddr_storage ss;
    socklen_t slen = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &slen);
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
    kvg__http_accept_stop(srv, 0); /* the socket closes with its handle, not held by a dup */
    if (srv->listening) {
        srv->listening = 0;
        uv_close((uv_handle_t *)&srv->listener, kvg__http_on_listener_closed);
    }
    /* Idle keep-alive connections go now; busy ones close after their answer. */
    for (struct kvg_http_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == ST_IDLE && !c->inbuf.len) kvg__http_close(c);
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
    kvg__http_accept_stop(srv, 1);
    for (struct kvg_http_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        kvg__http_close(c);
    }
    uv_close((uv_handle_t *)&srv->prepare, kvg__http_on_aux_closed);
    uv_close((uv_handle_t *)&srv->check, kvg__http_on_aux_closed);
    server_maybe_free(srv);
}

void kvg_http_server_set_refused(struct kvg_http_server *srv, kvg_http_refused_cb cb)
{
    srv->refused = cb;
}

void kvg_http_server_set_head_check(struct kvg_http_server *srv, kvg_http_head_check cb)
{
    srv->head_check = cb;
}

void kvg_http_server_set_tls(struct kvg_http_server *srv, SSL_CTX *ctx)
{
    srv->tls = ctx;
}
