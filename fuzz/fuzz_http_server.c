/* libFuzzer target for kvgate's HTTP/1.1 server (src/net/server.c and its
 * response writers): every byte a client sends reaches llhttp and our parser
 * callbacks (header accumulation, limits, pipelining, Expect, upgrades), so
 * the input is sent as-is over a real loopback connection to a server on
 * its own libuv loop, driven from this thread.
 *
 * The handler answers in the shapes the gateway uses (whole body, chunked
 * stream, OpenAI error, close-after) chosen by the path. Checks: whatever
 * comes back starts with a status line, and once the client hangs up the
 * server holds no connection and no request: nothing leaks, nothing is left
 * dispatched. Every wait is bounded by a count of loop turns. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "net/http.h"

static uv_loop_t loop;
static struct kvg_http_server *srv;
static int port;

static int starts_with(struct kvg_str s, const char *p)
{
    size_t n = strlen(p);
    return s.len >= n && memcmp(s.p, p, n) == 0;
}

static void handler(struct kvg_http_req *req, void *ud)
{
    (void)ud;
    /* Views the server hands out must be readable to their full length;
     * ASan catches them otherwise. */
    volatile unsigned sum = 0;
    for (size_t i = 0; i < req->nheaders; i++) {
        for (size_t j = 0; j < req->headers[i].name.len; j++)
            sum += (unsigned char)req->headers[i].name.p[j];
        for (size_t j = 0; j < req->headers[i].value.len; j++)
            sum += (unsigned char)req->headers[i].value.p[j];
    }
    for (size_t j = 0; j < req->query.len; j++) sum += (unsigned char)req->query.p[j];
    struct kvg_str ct = kvg_http_req_header(req, "content-type");
    if (ct.p && ct.len) sum += (unsigned char)ct.p[ct.len - 1];
    (void)sum;

    if (starts_with(req->path, "/stream")) {
        if (kvg_http_res_start(req, 200, NULL, 0, -1) < 0) abort();
        for (int i = 0; i < 3; i++)
            if (kvg_http_res_write(req, "data: {}\n\n", 10) < 0) abort();
        kvg_http_res_end(req);
        return;
    }
    if (starts_with(req->path, "/error")) {
        kvg_http_res_error(req, 400, NULL, NULL, "bad request", NULL, 0);
        return;
    }
    if (starts_with(req->path, "/close")) kvg_http_res_close_after(req);
    kvg_http_res_send(req, 200, "application/octet-stream", NULL, 0, req->body.data, req->body.len);
}

static void setup(void)
{
    if (uv_loop_init(&loop)) abort();
    struct kvg_http_limits lim;
    kvg_http_limits_default(&lim);
    lim.max_header_bytes = 2048; /* small, so the fuzzer reaches the limits */
    lim.max_body_bytes = 4096;
    lim.max_headers = 16;
    if (kvg_http_server_start(&loop, "127.0.0.1", 0, KVG_HTTP_BIND_EXCLUSIVE, &lim, handler, NULL,
                              &srv) < 0)
        abort();
    port = kvg_http_server_port(srv);
}

static int connect_client(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) abort();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) abort();
    return fd;
}

/* Reads what the server sent; returns 1 once the server closed, 0 otherwise. */
static int drain(int fd, char *resp, size_t cap, size_t *got)
{
    for (;;) {
        char tmp[4096];
        ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n == 0) return 1;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1; /* reset: closed */
        size_t k = (size_t)n < cap - *got ? (size_t)n : cap - *got;
        memcpy(resp + *got, tmp, k);
        *got += k;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        setup();
        ready = 1;
    }
    if (size > 32768) return 0;

    int fd = connect_client();
    static char resp[8192];
    size_t got = 0, sent = 0;
    int closed = 0, idle = 0;
    for (int turn = 0; turn < 20000 && !closed && idle < 4; turn++) {
        int progress = 0;
        if (sent < size) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0) {
                sent += (size_t)n;
                progress = 1;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN) {
                closed = 1; /* the server rejected and hung up mid-send */
            }
        }
        uv_run(&loop, UV_RUN_NOWAIT);
        size_t before = got;
        if (drain(fd, resp, sizeof resp, &got)) closed = 1;
        if (got != before) progress = 1;
        idle = progress || sent < size || kvg_http_server_conns(srv) == 0 ? 0 : idle + 1;
    }
    if (got >= 5 && memcmp(resp, "HTTP/", 5) != 0) abort();
    close(fd);

    /* The client is gone: the server must let go of everything. */
    for (int turn = 0; turn < 20000 && kvg_http_server_conns(srv); turn++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (kvg_http_server_conns(srv) || kvg_http_server_active(srv)) abort();
    return 0;
}
