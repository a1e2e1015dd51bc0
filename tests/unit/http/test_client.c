/* The upstream HTTP client against a scripted engine on a loopback socket:
 * the response shapes engines send (length, chunked, close-delimited,
 * interim 100) and the malformed ones that must end the call with
 * KVG_EUPSTREAM instead of reaching the proxy (a status llhttp accepts but
 * HTTP does not, a body cut short, an oversized head). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/err.h"
#include "http/client.h"
#include "support/test.h"

struct outcome {
    int heads, dones, err, status;
    char body[256];
    size_t body_len;
};

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    struct outcome *o = ud;
    o->heads++;
    o->status = status;
}

static void on_body(void *ud, const char *p, size_t n)
{
    struct outcome *o = ud;
    size_t k = n < sizeof o->body - o->body_len ? n : sizeof o->body - o->body_len;
    memcpy(o->body + o->body_len, p, k);
    o->body_len += k;
}

static void on_done(void *ud, int err)
{
    struct outcome *o = ud;
    o->dones++;
    o->err = err;
}

/* One call answered with `resp`, then the engine hangs up. */
static struct outcome run_one(const char *resp)
{
    struct outcome o = {0};
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_http_client_opts co;
    kvg_http_client_opts_default(&co);
    co.max_response_head = 512;
    struct kvg_http_client *cl;
    CHECK_INT(kvg_http_client_new(&loop, &co, &cl), 0);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    CHECK(lfd >= 0);
    CHECK_INT(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_INT(listen(lfd, 4), 0);
    CHECK_INT(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    struct kvg_http_target t;
    CHECK_INT(kvg_http_target_parse(url, &t), 0);

    struct kvg_http_call_opts copts = {
        .connect_timeout_ms = 1000, .first_byte_timeout_ms = 2000, .idle_timeout_ms = 2000};
    struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    CHECK_INT(
        kvg_http_call_start(cl, &t, "GET", KVG_STR("/x"), NULL, 0, NULL, 0, &copts, &cbs, &o, NULL),
        0);

    int fd = -1, answered = 0;
    for (int turn = 0; turn < 100000 && !o.dones; turn++) {
        if (fd < 0 && !answered) fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd >= 0) {
            char tmp[1024];
            if (recv(fd, tmp, sizeof tmp, 0) > 0) { /* the request arrived: answer, hang up */
                CHECK_INT(send(fd, resp, strlen(resp), MSG_NOSIGNAL), (long long)strlen(resp));
                close(fd);
                fd = -1;
                answered = 1;
            }
        }
        uv_run(&loop, UV_RUN_NOWAIT);
        if (answered && !o.dones) usleep(100);
    }
    if (fd >= 0) close(fd);
    close(lfd);
    kvg_http_client_close(cl);
    for (int turn = 0; turn < 1000 && uv_loop_alive(&loop); turn++) uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_INT(uv_loop_close(&loop), 0);
    CHECK_INT(o.dones, 1);
    return o;
}

TEST(content_length)
{
    struct outcome o = run_one("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    CHECK_INT(o.err, 0);
    CHECK_INT(o.status, 200);
    CHECK_INT(o.body_len, 2);
    CHECK(!memcmp(o.body, "{}", 2));
}

TEST(chunked_is_dechunked)
{
    struct outcome o = run_one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    CHECK_INT(o.err, 0);
    CHECK_INT(o.body_len, 5);
    CHECK(!memcmp(o.body, "abcde", 5));
}

TEST(close_delimited_body)
{
    struct outcome o = run_one("HTTP/1.0 503 Service Unavailable\r\n\r\nbusy");
    CHECK_INT(o.err, 0);
    CHECK_INT(o.status, 503);
    CHECK_INT(o.body_len, 4);
}

TEST(interim_100_is_skipped)
{
    struct outcome o = run_one("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
    CHECK_INT(o.err, 0);
    CHECK_INT(o.heads, 1);
    CHECK_INT(o.status, 204);
}

TEST(status_outside_http_range_is_malformed)
{
    /* llhttp parses "10" as a status code; relaying it would send a client
     * a status line HTTP does not allow (found by fuzz_http_client). */
    struct outcome o = run_one("HTTP/1.1 10 Odd\r\nContent-Length: 0\r\n\r\n");
    CHECK_INT(o.err, KVG_EUPSTREAM);
    CHECK_INT(o.heads, 0);
}

TEST(body_cut_short_is_malformed)
{
    struct outcome o = run_one("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    CHECK_INT(o.err, KVG_EUPSTREAM);
    CHECK_INT(o.heads, 1);
}

TEST(oversized_head_is_malformed)
{
    char resp[1024];
    int n = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nX-Big: ");
    memset(resp + n, 'a', 700);
    strcpy(resp + n + 700, "\r\n\r\n");
    struct outcome o = run_one(resp);
    CHECK_INT(o.err, KVG_EUPSTREAM);
    CHECK_INT(o.heads, 0);
}

TEST(interim_response_has_no_body)
{
    /* A 1xx response's framing headers are ignored: the next bytes are the
     * real response, and no body reaches the caller before its head (found
     * by fuzz_http_client). */
    struct outcome o = run_one("HTTP/1.1 199 Early\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    CHECK_INT(o.err, 0);
    CHECK_INT(o.heads, 1);
    CHECK_INT(o.status, 200);
    CHECK_INT(o.body_len, 2);
}
