/* Upstream HTTP/1.1 client with per-loop keep-alive pools; see net/http_client.h. */
#include "net/http_client.h"

#include <errno.h>
#include <llhttp.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "net/headers.h"

#define READ_BUF_SIZE (64 * 1024)
/* A request bigger than this is handed to the socket this much per loop
 * turn: on loopback the kernel runs the receiver's side inside the
 * sender's write, and one 400 KB write held the loop for ~1 ms. */
#define WRITE_CHUNK (64 * 1024)
#define MAX_RESP_HEADERS 100

struct uconn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t creq;
    struct kvg_http_client *cl;
    char key[300];
    llhttp_t parser;
    struct kvg_http_call *call; /* NULL while pooled */
    int reused;
    int handles;
    int closing;
    int keep;          /* response allows reuse */
    int done;          /* message complete */
    int reading;       /* uv_read_start in effect (toggling costs an epoll_ctl) */
    int writes;        /* uv_writes not yet called back */
    const char *wnext; /* the body's bytes not yet given to a write */
    size_t wleft;
    uint64_t deadline_ms, timer_due_ms; /* see timer_set */
    struct kvg_buf head;
    struct kvg__http_hdrs hacc; /* where in head each header is */
    struct uconn *prev, *next;  /* idle list */
};

struct kvg_http_call {
    struct kvg_http_client *cl;
    struct kvg_http_target target;
    struct kvg_buf req; /* the request (its body too unless lent), kept for one retry */
    const char *body;   /* the lent body (opts.borrow_body), NULL when in req */
    size_t body_len;
    struct kvg_http_call_cbs cbs;
    struct kvg_http_call_opts opts;
    void *ud;
    struct uconn *conn;
    uint64_t due_ms; /* opts.total_timeout_ms as a loop time; 0 = none */
    int got_bytes;   /* any response byte seen */
    int retried;
    int paused;
};

struct kvg_http_client {
    uv_loop_t *loop;
    struct kvg_http_client_opts opts;
    struct uconn *idle; /* all pooled connections, most recent first */
    unsigned nconns;
    int closing;
    llhttp_settings_t settings;
    char rbuf[READ_BUF_SIZE];
};

static void conn_start_call(struct uconn *c);
static void call_fail(struct kvg_http_call *call, int err);
static void on_alloc(uv_handle_t *h, size_t s, uv_buf_t *b);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void read_on(struct uconn *c)
{
    if (c->reading || c->closing) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = 1;
}

static void read_off(struct uconn *c)
{
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

void kvg_http_client_opts_default(struct kvg_http_client_opts *o)
{
    /* Below uvicorn's 5 s keep-alive (vLLM, SGLang) so we rarely race the
     * engine closing a pooled connection. */
    o->pool_idle_timeout_ms = 4000;
    o->max_idle_per_host = 256;
    o->max_response_head = 64 * 1024;
}

int kvg_http_target_split(const char *url, struct kvg_http_target *t, char host[256], char port[16])
{
    memset(t, 0, sizeof *t);
    if (!strncmp(url, "https://", 8)) return KVG_EUNSUPP;
    if (!strncmp(url, "http://", 7)) url += 7;
    const char *slash = strchr(url, '/');
    size_t hplen = slash ? (size_t)(slash - url) : strlen(url);
    if (hplen == 0 || hplen >= sizeof t->hostport) return -EINVAL;
    memcpy(t->hostport, url, hplen);
    if (slash) {
        size_t blen = strlen(slash);
        while (blen && slash[blen - 1] == '/') blen--;
        if (blen >= sizeof t->base_path) return -EINVAL;
        memcpy(t->base_path, slash, blen);
    }
    snprintf(port, 16, "80");
    const char *hp = t->hostport;
    if (hp[0] == '[') {
        const char *rb = strchr(hp, ']');
        if (!rb || (size_t)(rb - hp - 1) >= 256) return -EINVAL;
        memcpy(host, hp + 1, (size_t)(rb - hp - 1));
        host[rb - hp - 1] = 0;
        if (rb[1] == ':') snprintf(port, 16, "%s", rb + 2);
    } else {
        const char *colon = strrchr(hp, ':');
        size_t hl = colon ? (size_t)(colon - hp) : strlen(hp);
        if (hl >= 256) return -EINVAL;
        memcpy(host, hp, hl);
        host[hl] = 0;
        if (colon) snprintf(port, 16, "%s", colon + 1);
    }
    uint64_t pn;
    if (kvg_parse_u64(port, &pn) || pn == 0 || pn > 65535) return -EINVAL;
    return 0;
}

int kvg_http_target_parse(const char *url, struct kvg_http_target *t)
{
    char host[256], port[16];
    int rc = kvg_http_target_split(url, t, host, port);
    if (rc) return rc;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc || !res) return KVG_ENOTFOUND;
    memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* -------------------------------------------------------------- lifetime */

static void on_closed(uv_handle_t *h)
{
    struct uconn *c = h->data;
    if (--c->handles > 0) return;
    struct kvg_http_client *cl = c->cl;
    kvg_buf_free(&c->head);
    kvg__http_hdrs_free(&c->hacc);
    free(c);
    cl->nconns--;
    if (cl->closing && cl->nconns == 0) free(cl);
}

static void idle_unlink(struct uconn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (c->cl->idle == c)
        c->cl->idle = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void conn_close(struct uconn *c)
{
    if (c->closing) return;
    c->closing = 1;
    if (!c->call) idle_unlink(c);
    c->call = NULL;
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_timer(uv_timer_t *t)
{
    struct uconn *c = t->data;
    uint64_t now = uv_now(c->cl->loop);
    if (c->deadline_ms > now) { /* moved meanwhile: wait for the rest */
        c->timer_due_ms = c->deadline_ms;
        uv_timer_start(&c->timer, on_timer, c->deadline_ms - now, 0);
        return;
    }
    struct kvg_http_call *call = c->call;
    if (!call) {
        conn_close(c); /* pooled too long */
        return;
    }
    call_fail(call, KVG_ETIMEOUT);
}

/* Lazy re-arming, as in the server: a read moves the deadline; the libuv
 * timer is only restarted when it fires early or must fire sooner. */
static void timer_set(struct uconn *c, uint32_t ms)
{
    if (!ms) {
        c->deadline_ms = 0;
        uv_timer_stop(&c->timer);
        return;
    }
    uint64_t due = uv_now(c->cl->loop) + ms;
    int later = uv_is_active((uv_handle_t *)&c->timer) && c->timer_due_ms <= due;
    c->deadline_ms = due;
    if (later) return;
    c->timer_due_ms = due;
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* A call's connection timer: `ms` from now, but never past the call's
 * overall deadline (a passed one fires at once). */
static void call_timer_set(struct uconn *c, struct kvg_http_call *call, uint32_t ms)
{
    if (call->due_ms) {
        uint64_t now = uv_now(c->cl->loop);
        uint64_t left = call->due_ms > now ? call->due_ms - now : 1;
        if (!ms || left < ms) ms = (uint32_t)left;
    }
    timer_set(c, ms);
}

/* Ends the call with an error: its connection is not reused. */
static void call_fail(struct kvg_http_call *call, int err)
{
    struct uconn *c = call->conn;
    call->conn = NULL;
    if (c) {
        c->call = NULL;
        conn_close(c);
    }
    void (*done)(void *, int) = call->cbs.on_done;
    void *ud = call->ud;
    kvg_buf_free(&call->req);
    free(call);
    if (done) done(ud, err);
}

/* A failure before any response byte on a reused connection: the engine
 * closed it while pooled. Try once more on a new connection. */
static int call_retry_fresh(struct kvg_http_call *call);

static void conn_failed(struct uconn *c, int err)
{
    struct kvg_http_call *call = c->call;
    if (!call) {
        conn_close(c);
        return;
    }
    if (c->reused && !call->got_bytes && !call->retried) {
        call->conn = NULL;
        c->call = NULL;
        conn_close(c);
        if (call_retry_fresh(call) == 0) return;
        call_fail(call, err);
        return;
    }
    call_fail(call, err);
}

/* --------------------------------------------------------------- parsing */

static struct uconn *uc(llhttp_t *p)
{
    return p->data;
}

static int on_message_begin(llhttp_t *p)
{
    struct uconn *c = uc(p);
    kvg_buf_reset(&c->head);
    kvg__http_hdrs_reset(&c->hacc);
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    return kvg__http_hdrs_name(&uc(p)->hacc, at, n) ? HPE_USER : 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    return kvg__http_hdrs_value(&uc(p)->hacc, at, n) ? HPE_USER : 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct uconn *c = uc(p);
    struct kvg_http_call *call = c->call;
    int status = llhttp_get_status_code(p);
    /* llhttp takes any 1-3 digit code; one outside 100-999 cannot be relayed. */
    if (status < 100 || status > 999) return HPE_USER;
    /* Interim (100 Continue): no body whatever its headers say (1 tells
     * llhttp so); wait for the real response. */
    if (status < 200) return 1;
    struct kvg_http_header hs[MAX_RESP_HEADERS];
    kvg__http_hdrs_views(&c->hacc, hs);
    call_timer_set(c, call, call->opts.idle_timeout_ms);
    if (call->cbs.on_head) call->cbs.on_head(call->ud, status, hs, c->hacc.n);
    return c->call == call ? 0 : HPE_USER; /* cancelled inside the callback */
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct uconn *c = uc(p);
    struct kvg_http_call *call = c->call;
    call_timer_set(c, call, call->opts.idle_timeout_ms);
    if (call->cbs.on_body) call->cbs.on_body(call->ud, at, n);
    return c->call == call ? 0 : HPE_USER;
}

static int on_message_complete(llhttp_t *p)
{
    struct uconn *c = uc(p);
    if (llhttp_get_status_code(p) < 200) return 0;
    c->done = 1;
    c->keep = llhttp_should_keep_alive(p);
    return HPE_PAUSED;
}

/* Returns a finished connection to the pool (or closes it) and reports. */
static void call_complete(struct uconn *c)
{
    struct kvg_http_call *call = c->call;
    struct kvg_http_client *cl = c->cl;
    call->conn = NULL;
    c->call = NULL;
    c->done = 0;
    /* An engine may answer before it has read the whole request (an early
     * error): the rest still being written makes the connection unusable,
     * and closing it stops the write before the request's bytes are freed. */
    c->wleft = 0; /* no further piece of this request's body is written */
    if (c->keep && !c->writes && !cl->closing && !call->paused) {
        llhttp_init(&c->parser, HTTP_RESPONSE, &cl->settings);
        c->parser.data = c;
        c->reused = 1;
        c->next = cl->idle;
        c->prev = NULL;
        if (cl->idle) cl->idle->prev = c;
        cl->idle = c;
        timer_set(c, cl->opts.pool_idle_timeout_ms);
    } else {
        conn_close(c);
    }
    void (*done)(void *, int) = call->cbs.on_done;
    void *ud = call->ud;
    kvg_buf_free(&call->req);
    free(call);
    if (done) done(ud, 0);
}

static void on_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    struct uconn *c = h->data;
    b->base = c->cl->rbuf;
    b->len = sizeof c->cl->rbuf;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct uconn *c = s->data;
    if (c->closing) return;
    struct kvg_http_call *call = c->call;
    if (!call) {
        conn_close(c); /* pooled connection: data or EOF means it is done for */
        return;
    }
    if (nread == 0) return;
    if (nread < 0) {
        /* A close-delimited body ends here; on_message_complete pauses the
         * parser, so finishing it reports HPE_PAUSED with done set. */
        llhttp_errno_t fe = HPE_USER;
        if (nread == UV_EOF && call->got_bytes && llhttp_message_needs_eof(&c->parser))
            fe = llhttp_finish(&c->parser);
        if (fe == HPE_OK || (fe == HPE_PAUSED && c->done)) {
            c->keep = 0;
            call_complete(c);
            return;
        }
        conn_failed(c, call->got_bytes ? KVG_EUPSTREAM : (int)nread);
        return;
    }
    call->got_bytes = 1;
    llhttp_errno_t e = llhttp_execute(&c->parser, buf->base, (size_t)nread);
    if (c->closing || c->call != call) return; /* cancelled from a callback */
    if (e == HPE_PAUSED && c->done) {
        const char *pos = llhttp_get_error_pos(&c->parser);
        if (pos != buf->base + nread) c->keep = 0; /* bytes after the response */
        call_complete(c);
        return;
    }
    if (e != HPE_OK) {
        KVG_DEBUG("upstream %s: bad response: %s", call->target.hostport,
                  llhttp_get_error_reason(&c->parser));
        call_fail(call, KVG_EUPSTREAM);
    }
}

static void write_piece(struct uconn *c);

static void on_written(uv_write_t *w, int status)
{
    struct uconn *c = w->data;
    free(w);
    c->writes--;
    if (status < 0 && !c->closing && c->call)
        conn_failed(c, status);
    else if (status == 0 && !c->closing && c->call && c->wleft)
        write_piece(c);
}

/* The next WRITE_CHUNK of a big body; its callback, a loop turn later,
 * writes the one after. */
static void write_piece(struct uconn *c)
{
    uv_write_t *w = malloc(sizeof *w);
    if (!w) {
        conn_failed(c, -ENOMEM);
        return;
    }
    w->data = c;
    size_t n = c->wleft < WRITE_CHUNK ? c->wleft : WRITE_CHUNK;
    uv_buf_t b = uv_buf_init((char *)c->wnext, (unsigned)n);
    c->wnext += n;
    c->wleft -= n;
    int rc = uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written);
    if (rc < 0) {
        free(w);
        conn_failed(c, rc);
        return;
    }
    c->writes++;
}

static void conn_start_call(struct uconn *c)
{
    struct kvg_http_call *call = c->call;
    uv_write_t *w = malloc(sizeof *w);
    if (!w) {
        call_fail(call, -ENOMEM);
        return;
    }
    w->data = c;
    /* As in the server: write at once when the socket takes it all. */
    uv_buf_t b[2] = {uv_buf_init(call->req.data, (unsigned)call->req.len),
                     uv_buf_init((char *)call->body, (unsigned)call->body_len)};
    unsigned nb = call->body_len ? 2 : 1;
    c->wleft = 0;
    if (call->body_len > WRITE_CHUNK) { /* the head and a first piece now, the rest later */
        b[1].len = WRITE_CHUNK;
        c->wnext = call->body + WRITE_CHUNK;
        c->wleft = call->body_len - WRITE_CHUNK;
    }
    int n = c->wleft ? 0 : uv_try_write((uv_stream_t *)&c->tcp, b, nb);
    size_t sent = n > 0 ? (size_t)n : 0, total = b[0].len + (nb > 1 ? b[1].len : 0);
    int rc = 0;
    if (sent == total) {
        free(w);
    } else {
        unsigned i = 0; /* the rest: from where the socket stopped */
        if (sent >= b[0].len) {
            sent -= b[0].len;
            i = 1;
        }
        b[i].base += sent;
        b[i].len -= (unsigned)sent;
        rc = uv_write(w, (uv_stream_t *)&c->tcp, b + i, nb - i, on_written);
        if (rc == 0) c->writes++;
    }
    if (rc < 0) {
        free(w);
        conn_failed(c, rc);
        return;
    }
    call_timer_set(c, call, call->opts.first_byte_timeout_ms);
    if (!call->paused) read_on(c);
}

static void on_connect(uv_connect_t *r, int status)
{
    struct uconn *c = r->data;
    if (c->closing) return;
    if (status < 0) {
        if (c->call)
            call_fail(c->call, status);
        else
            conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    conn_start_call(c);
}

static struct uconn *conn_new(struct kvg_http_client *cl, struct kvg_http_call *call)
{
    struct uconn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cl = cl;
    snprintf(c->key, sizeof c->key, "%s", call->target.hostport);
    uv_tcp_init(cl->loop, &c->tcp);
    uv_timer_init(cl->loop, &c->timer);
    c->tcp.data = c->timer.data = c->creq.data = c;
    c->handles = 2;
    cl->nconns++;
    kvg_buf_init(&c->head, cl->opts.max_response_head);
    kvg__http_hdrs_init(&c->hacc, &c->head, MAX_RESP_HEADERS);
    llhttp_init(&c->parser, HTTP_RESPONSE, &cl->settings);
    c->parser.data = c;
    return c;
}

static int call_attach_new(struct kvg_http_call *call)
{
    struct uconn *c = conn_new(call->cl, call);
    if (!c) return -ENOMEM;
    c->call = call;
    call->conn = c;
    int rc = uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&call->target.addr, on_connect);
    if (rc < 0) {
        call->conn = NULL;
        c->call = NULL;
        conn_close(c);
        return rc;
    }
    call_timer_set(c, call, call->opts.connect_timeout_ms);
    return 0;
}

static int call_retry_fresh(struct kvg_http_call *call)
{
    call->retried = 1;
    return call_attach_new(call);
}

int kvg_http_call_start(struct kvg_http_client *cl, const struct kvg_http_target *t,
                        const char *method, struct kvg_str path,
                        const struct kvg_http_header *headers, size_t nheaders, const void *body,
                        size_t len, const struct kvg_http_call_opts *opts,
                        const struct kvg_http_call_cbs *cbs, void *ud, struct kvg_http_call **out)
{
    struct kvg_http_call *call = calloc(1, sizeof *call);
    if (!call) return -ENOMEM;
    call->cl = cl;
    call->target = *t;
    call->cbs = *cbs;
    call->opts = *opts;
    call->ud = ud;
    if (opts->total_timeout_ms) call->due_ms = uv_now(cl->loop) + opts->total_timeout_ms;
    kvg_buf_init(&call->req, 0);
    struct kvg_buf *b = &call->req;
    if (opts->borrow_body && len) {
        call->body = body;
        call->body_len = len;
    }
    int rc = kvg_buf_reserve(b, 512 + path.len + (call->body ? 0 : len));
    if (!rc) rc = kvg_buf_append_str(b, method);
    if (!rc) rc = kvg_buf_append(b, " ", 1);
    if (!rc) rc = kvg_buf_append_str(b, t->base_path);
    if (!rc) rc = kvg_buf_append(b, path.p, path.len);
    if (!rc) rc = kvg_buf_append_str(b, " HTTP/1.1\r\nhost: ");
    if (!rc) rc = kvg_buf_append_str(b, t->hostport);
    if (!rc) rc = kvg_buf_append(b, "\r\n", 2);
    for (size_t i = 0; !rc && i < nheaders; i++)
        rc = kvg_buf_append_header(b, headers[i].name, headers[i].value);
    if (!rc && (len || strcmp(method, "GET"))) {
        rc = kvg_buf_append_str(b, "content-length: ");
        if (!rc) rc = kvg_buf_append_u64(b, len);
        if (!rc) rc = kvg_buf_append(b, "\r\n", 2);
    }
    if (!rc) rc = kvg_buf_append(b, "\r\n", 2);
    if (!rc && len && !call->body) rc = kvg_buf_append(b, body, len);
    if (rc) {
        kvg_buf_free(b);
        free(call);
        return rc;
    }
    /* Most recently used idle connection to the same address, if any. */
    struct uconn *c = cl->idle;
    while (c && strcmp(c->key, t->hostport)) c = c->next;
    if (c) {
        idle_unlink(c);
        c->call = call;
        call->conn = c;
        conn_start_call(c);
    } else if ((rc = call_attach_new(call)) < 0) {
        kvg_buf_free(b);
        free(call);
        return rc;
    }
    if (out) *out = call;
    return 0;
}

void kvg_http_call_cancel(struct kvg_http_call *call)
{
    struct uconn *c = call->conn;
    if (c) {
        c->call = NULL;
        conn_close(c);
    }
    kvg_buf_free(&call->req);
    free(call);
}

void kvg_http_call_pause(struct kvg_http_call *call)
{
    call->paused = 1;
    if (call->conn) read_off(call->conn);
}

void kvg_http_call_resume(struct kvg_http_call *call)
{
    call->paused = 0;
    if (call->conn) read_on(call->conn);
}

int kvg_http_client_new(uv_loop_t *loop, const struct kvg_http_client_opts *o,
                        struct kvg_http_client **out)
{
    struct kvg_http_client *cl = calloc(1, sizeof *cl);
    if (!cl) return -ENOMEM;
    cl->loop = loop;
    if (o)
        cl->opts = *o;
    else
        kvg_http_client_opts_default(&cl->opts);
    llhttp_settings_init(&cl->settings);
    cl->settings.on_message_begin = on_message_begin;
    cl->settings.on_header_field = on_header_field;
    cl->settings.on_header_value = on_header_value;
    cl->settings.on_headers_complete = on_headers_complete;
    cl->settings.on_body = on_body;
    cl->settings.on_message_complete = on_message_complete;
    *out = cl;
    return 0;
}

void kvg_http_client_close(struct kvg_http_client *cl)
{
    cl->closing = 1;
    while (cl->idle) conn_close(cl->idle);
    if (cl->nconns == 0) free(cl);
}
