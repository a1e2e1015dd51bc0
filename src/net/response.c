/* Answers: the kvg_http_res_* calls a handler makes (head, body pieces,
 * end; fixed length or chunked; keep-alive or close), the server's own error
 * answers for requests the handler never saw, and graceful closing. */
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
    if (!rc) rc = kvg__http_write(req->conn, b.data, b.len);
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
        rc = kvg__http_write3(req->conn, pre, (size_t)n, data, len, "\r\n", 2);
    } else {
        rc = kvg__http_write(req->conn, data, len);
    }
    if (rc) return rc;
    req->bytes_out += len;
    if (req->conn->wq_bytes + req->conn->out.len >= WRITE_HIGH_WATER) {
        req->conn->want_drain = 1;
        return 1;
    }
    return 0;
}

/* Lingering close (RFC 9112 9.6, nginx's lingering_close): a connection
 * refused while its request was still arriving keeps reading, and
 * dropping, for at most KVG_HTTP_LINGER_MS and KVG_HTTP_LINGER_BYTES after
 * its answer went out; server.c's on_read closes it at the client's EOF. */
#define KVG_HTTP_LINGER_MS 2000
static void on_shutdown(uv_shutdown_t *s, int status)
{
    struct kvg_http_conn *c = s->data;
    free(s);
    if (status == 0 && c->linger && kvg__http_linger_start(c) == 0) {
        uint32_t idle = c->srv->limits.idle_timeout_ms;
        kvg__http_timer_set(c, idle && idle < KVG_HTTP_LINGER_MS ? idle : KVG_HTTP_LINGER_MS);
        return;
    }
    kvg__http_close(c);
}

/* Closes after the queued writes have gone out, or after the idle timeout
 * if the client never takes them. */
void kvg__http_close_gracefully(struct kvg_http_conn *c)
{
    if (c->state == ST_CLOSING) return;
    kvg__http_flush(c);
    uv_shutdown_t *s = malloc(sizeof *s);
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (!s || uv_shutdown(s, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        free(s);
        kvg__http_close(c);
        return;
    }
    s->data = c;
    c->state = ST_CLOSING;
    kvg__http_timer_set(c, c->srv->limits.idle_timeout_ms);
}

int kvg_http_res_end(struct kvg_http_req *req)
{
    if (!req->head_sent || req->ended) return -EINVAL;
    struct kvg_http_conn *c = req->conn;
    int rc = 0;
    if (req->chunked && req->method != HTTP_HEAD) rc = kvg__http_write(c, "0\r\n\r\n", 5);
    req->ended = 1;
    int close_now = req->close_after || rc;
    c->srv->nactive--;
    c->req = NULL;
    c->dispatched = 0;
    c->want_drain = 0;
    kvg__http_req_free(req);
    if (close_now) {
        kvg__http_close_gracefully(c);
        return rc;
    }
    kvg__http_reset_for_next(c);
    if (!c->processing) kvg__http_process(c);
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
    return kvg_http_res_error_param(req, status, type, code, message, NULL, extra, nextra);
}

int kvg_http_res_error_param(struct kvg_http_req *req, int status, const char *type,
                             const char *code, const char *message, const char *param,
                             const struct kvg_http_header *extra, size_t nextra)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = kvg_http_error_json_param(&b, status, type, code, message, param);
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
    kvg__http_close(c);
}

void kvg_http_res_close_after(struct kvg_http_req *req)
{
    req->close_after = 1;
}

/* A response the server makes itself, for a request the handler never saw
 * (malformed, over a limit): written raw, then the connection closes. */
void kvg__http_refuse(struct kvg_http_conn *c, const struct kvg_http_refusal *r)
{
    struct kvg_buf body, b;
    kvg_buf_init(&body, 0);
    kvg_buf_init(&b, 0);
    int rc = r->render ? r->render(r, &body)
                       : kvg_http_error_json(&body, r->status,
                                             r->type ? r->type : kvg_http_error_type(r->status),
                                             r->code, r->message);
    if (!rc) rc = kvg_buf_printf(&b, "HTTP/1.1 %d %s\r\n", r->status, kvg_http_reason(r->status));
    for (size_t i = 0; !rc && i < r->nheaders; i++)
        rc = kvg_buf_printf(&b, "%.*s: %.*s\r\n", (int)r->headers[i].name.len, r->headers[i].name.p,
                            (int)r->headers[i].value.len, r->headers[i].value.p);
    if (!rc)
        rc = kvg_buf_printf(&b,
                            "content-type: application/json\r\ncontent-length: %zu\r\n"
                            "connection: close\r\n\r\n",
                            body.len);
    if (!rc && !kvg_buf_append(&b, body.data, body.len)) kvg__http_write(c, b.data, b.len);
    kvg_buf_free(&body);
    kvg_buf_free(&b);
    if (c->req) {
        kvg__http_req_free(c->req);
        c->req = NULL;
    }
    c->linger = 1; /* the client may still be sending what was refused */
    kvg__http_close_gracefully(c);
}

void kvg__http_reject(struct kvg_http_conn *c, int status, const char *message)
{
    /* A code a client can switch on, as the gateway's own errors have. */
    struct kvg_http_refusal r = {.status = status,
                                 .code = status == 413   ? "request_too_large"
                                         : status == 431 ? "headers_too_large"
                                         : status == 408 ? "request_timeout"
                                         : status == 417 ? "expectation_failed"
                                         : status == 503 ? "server_busy"
                                                         : "malformed_request"};
    snprintf(r.message, sizeof r.message, "%s", message);
    if (c->req && c->srv->refused) c->srv->refused(c->req, c->srv->ud, &r);
    kvg__http_refuse(c, &r);
}
