/* The server's write path: every write of one loop turn is coalesced into a
 * single send per connection (flushed before the loop polls and after the
 * I/O callbacks), tried at once without a write request when the socket
 * takes it all, encrypted first on TLS connections; back-pressure reaches the
 * handler through on_drain. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "net/server_int.h"

static void on_write(uv_write_t *w, int status)
{
    struct write_chunk *ch = (struct write_chunk *)w;
    struct kvg_http_conn *c = ch->conn;
    c->wq_bytes -= ch->len;
    free(ch->data);
    free(ch);
    if (status < 0) {
        kvg__http_close(c);
        return;
    }
    if (c->want_drain && c->wq_bytes + c->out.len < WRITE_HIGH_WATER / 2 && c->req &&
        c->req->on_drain) {
        c->want_drain = 0;
        c->req->on_drain(c->req, c->req->ud);
    }
}

void kvg__http_dirty_unlink(struct kvg_http_conn *c)
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
int kvg__http_tls_pump(struct kvg_http_conn *c)
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
int kvg__http_flush(struct kvg_http_conn *c)
{
    kvg__http_dirty_unlink(c);
    if (!c->out.len || c->state == ST_CLOSING) return 0;
    if (!c->ssl) return sock_send(c, &c->out);
    int r = SSL_write(c->ssl, c->out.data, (int)c->out.len); /* memory BIO: all or error */
    kvg_buf_reset(&c->out);
    if (r <= 0) return KVG_EUPSTREAM;
    return kvg__http_tls_pump(c);
}

/* Output is coalesced: every write made during one loop turn goes out in a
 * single syscall, flushed before the loop polls again (prepare) and after
 * the I/O callbacks ran (check). A response head and its body, or the
 * chunks of one engine read, thus share one packet. */
static void flush_dirty(struct kvg_http_server *srv)
{
    while (srv->dirty) {
        struct kvg_http_conn *c = srv->dirty;
        if (kvg__http_flush(c) < 0) kvg__http_close(c);
    }
}

void kvg__http_on_prepare(uv_prepare_t *h)
{
    flush_dirty(h->data);
}

void kvg__http_on_check(uv_check_t *h)
{
    flush_dirty(h->data);
}

/* Queues len bytes (copied) made of up to three pieces. */
int kvg__http_write3(struct kvg_http_conn *c, const void *a, size_t alen, const void *b,
                     size_t blen, const void *d, size_t dlen)
{
    if (c->state == ST_CLOSING) return KVG_ECLOSED;
    int rc = kvg_buf_reserve(&c->out, alen + blen + dlen);
    if (rc) return rc;
    if (alen) kvg_buf_append(&c->out, a, alen);
    if (blen) kvg_buf_append(&c->out, b, blen);
    if (dlen) kvg_buf_append(&c->out, d, dlen);
    if (c->out.len >= 64 * 1024) return kvg__http_flush(c);
    if (!c->dirty) {
        c->dirty = 1;
        c->dprev = NULL;
        c->dnext = c->srv->dirty;
        if (c->dnext) c->dnext->dprev = c;
        c->srv->dirty = c;
    }
    return 0;
}

int kvg__http_write(struct kvg_http_conn *c, const void *p, size_t n)
{
    return kvg__http_write3(c, p, n, NULL, 0, NULL, 0);
}
