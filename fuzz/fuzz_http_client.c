/* libFuzzer target for kvgate's upstream HTTP client (src/net/http_client.c):
 * an engine's response head, chunked framing and body are outside bytes.
 * A plain loopback socket plays the engine: it accepts the client's
 * connection, reads its request, answers with the input verbatim and hangs
 * up, so every response ends one way or another.
 *
 * Checks the contract the proxy relies on: on_done runs exactly once per
 * call, on_head at most once and before any body, with a status the parser
 * accepted (100-999), and the call ends in a bounded number of loop turns
 * once the engine has hung up (no hang waiting for bytes that cannot come). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "net/http_client.h"

static uv_loop_t loop;
static struct kvg_http_client *client;
static struct kvg_http_target target;
static int listen_fd;

struct outcome {
    int heads, dones, err;
    size_t body;
};

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    struct outcome *o = ud;
    if (o->heads || o->body || o->dones) abort();
    if (status < 100 || status > 999) abort();
    volatile unsigned sum = 0; /* header views must be readable (ASan) */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < h[i].name.len; j++) sum += (unsigned char)h[i].name.p[j];
        for (size_t j = 0; j < h[i].value.len; j++) sum += (unsigned char)h[i].value.p[j];
    }
    (void)sum;
    o->heads++;
}

static void on_body(void *ud, const char *p, size_t n)
{
    struct outcome *o = ud;
    if (!o->heads || o->dones) abort();
    volatile unsigned sum = 0;
    for (size_t i = 0; i < n; i++) sum += (unsigned char)p[i];
    (void)sum;
    o->body += n;
}

static void on_done(void *ud, int err)
{
    struct outcome *o = ud;
    if (o->dones++) abort();
    o->err = err;
}

static void setup(void)
{
    if (uv_loop_init(&loop)) abort();
    struct kvg_http_client_opts co;
    kvg_http_client_opts_default(&co);
    co.max_response_head = 2048; /* small, so the fuzzer reaches the limit */
    if (kvg_http_client_new(&loop, &co, &client) < 0) abort();

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(listen_fd, 16) < 0 || getsockname(listen_fd, (struct sockaddr *)&a, &alen) < 0)
        abort();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    if (kvg_http_target_parse(url, &target) < 0) abort();
}

/* The engine side of one connection: read the request head, answer with
 * the input, hang up. Returns 1 once done with this connection. */
static int serve_one(int fd, const uint8_t *data, size_t size, size_t *sent, int *got_req)
{
    char tmp[4096];
    ssize_t n;
    while ((n = recv(fd, tmp, sizeof tmp, 0)) > 0) *got_req = 1;
    if (n == 0) return 1; /* the client hung up */
    if (!*got_req) return 0;
    while (*sent < size) {
        n = send(fd, data + *sent, size - *sent, MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
        *sent += (size_t)n;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        setup();
        ready = 1;
    }
    if (size > 65536) return 0;

    struct outcome o = {0};
    struct kvg_http_call_opts copts = {
        .connect_timeout_ms = 1000, .first_byte_timeout_ms = 2000, .idle_timeout_ms = 2000};
    struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    struct kvg_http_header h = {{"content-type", 12}, {"application/json", 16}};
    if (kvg_http_call_start(client, &target, "POST", KVG_STR("/v1/completions"), &h, 1, "{}", 2,
                            &copts, &cbs, &o, NULL) < 0)
        abort();

    /* A pooled connection the previous input left may be tried first and
     * retried fresh: serve every connection that arrives the same way. */
    int fd = -1, got_req = 0;
    size_t sent = 0;
    for (int turn = 0; turn < 200000 && !o.dones; turn++) {
        if (fd < 0) {
            fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK);
            got_req = 0;
            sent = 0;
        }
        if (fd >= 0 && serve_one(fd, data, size, &sent, &got_req)) {
            close(fd);
            fd = -1;
        }
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    if (fd >= 0) close(fd);
    if (o.dones != 1) abort(); /* the engine hung up: the call must end */
    return 0;
}
