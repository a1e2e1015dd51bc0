/* The upstream HTTP client against a scripted engine on a loopback socket:
 * the response shapes engines send (length, chunked, close-delimited,
 * interim 100) and the malformed ones that must end the call with
 * KVG_EUPSTREAM instead of reaching the proxy (a status llhttp accepts but
 * HTTP does not, a body cut short, an oversized head); and lent request
 * bodies, written whole, and never left half-written on a pooled connection
 * by an engine that answers early; and the overall deadline, which ends an
 * answer that trickles forever. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/err.h"
#include "net/http_client.h"
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

/* A non-blocking listening socket on 127.0.0.1 (a free port), and *t
 * pointing at it. */
static int listen_local(struct kvg_http_target *t)
{
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
    CHECK_INT(kvg_http_target_parse(url, t), 0);
    return lfd;
}

/* Closes the engine's sockets (fd may be -1) and the client, and lets the
 * loop finish closing its handles (bounded). */
static void end_engine(uv_loop_t *loop, struct kvg_http_client *cl, int lfd, int fd)
{
    if (fd >= 0) close(fd);
    close(lfd);
    kvg_http_client_close(cl);
    for (int turn = 0; turn < 1000 && uv_loop_alive(loop); turn++) uv_run(loop, UV_RUN_NOWAIT);
    CHECK_INT(uv_loop_close(loop), 0);
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

    struct kvg_http_target t;
    int lfd = listen_local(&t);

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
    end_engine(&loop, cl, lfd, fd);
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

/* An engine that sends its head and then a chunk every millisecond or so,
 * forever: the idle timeout (5 s) never fires, only the call's overall
 * deadline (200 ms) ends it, with KVG_ETIMEOUT after the head and some body.
 * The loop is bounded in turns (~3 s, under the idle timeout): without the
 * deadline the call is still open when they run out. */
TEST(total_timeout_ends_a_trickling_answer)
{
    struct outcome o = {0};
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_http_client *cl;
    CHECK_INT(kvg_http_client_new(&loop, NULL, &cl), 0);
    struct kvg_http_target t;
    int lfd = listen_local(&t);
    struct kvg_http_call_opts copts = {.connect_timeout_ms = 1000,
                                       .first_byte_timeout_ms = 5000,
                                       .idle_timeout_ms = 5000,
                                       .total_timeout_ms = 200};
    struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    CHECK_INT(
        kvg_http_call_start(cl, &t, "GET", KVG_STR("/x"), NULL, 0, NULL, 0, &copts, &cbs, &o, NULL),
        0);
    static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    int fd = -1, sending = 0;
    for (int turn = 0; turn < 3000 && !o.dones; turn++) {
        if (fd < 0) fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        char tmp[1024];
        if (fd >= 0 && !sending && recv(fd, tmp, sizeof tmp, 0) > 0) {
            CHECK(send(fd, head, sizeof head - 1, MSG_NOSIGNAL) > 0);
            sending = 1;
        }
        if (sending) send(fd, "1\r\n#\r\n", 6, MSG_NOSIGNAL);
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    end_engine(&loop, cl, lfd, fd);
    CHECK_INT(o.dones, 1);
    CHECK_INT(o.err, KVG_ETIMEOUT);
    CHECK_INT(o.heads, 1);
    CHECK(o.body_len > 0);
}

/* ------------------------------------------------ lent bodies (borrow_body) */

/* An engine on its own thread, with blocking sockets bounded by timeouts.
 * early: answers 413 after the first bytes of the first request's body and
 * reads no more, as an engine refusing a body early may. */
struct engine {
    int lfd, early;
    int accepts, requests, body_ok;
    size_t body_len;
};

static int recv_some(int fd, char *p, size_t n)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 5000) != 1) return -1;
    return (int)recv(fd, p, n, 0);
}

static int accept_timed(int lfd)
{
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    if (poll(&pf, 1, 5000) != 1) return -1;
    return accept(lfd, NULL, NULL);
}

/* Reads one request head into buf (NUL-ended); returns the bytes past it. */
static int read_head(int fd, char *buf, size_t cap, size_t *extra)
{
    size_t got = 0;
    while (got + 1 < cap) {
        int r = recv_some(fd, buf + got, cap - 1 - got);
        if (r <= 0) return -1;
        got += (size_t)r;
        buf[got] = 0;
        char *e = strstr(buf, "\r\n\r\n");
        if (e) {
            *extra = got - (size_t)(e + 4 - buf);
            return (int)(e + 4 - buf);
        }
    }
    return -1;
}

static uint8_t body_byte(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 12));
}

static void *engine_run(void *arg)
{
    struct engine *e = arg;
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    char buf[65536];
    int fd = accept_timed(e->lfd);
    if (fd < 0) return NULL;
    e->accepts++;
    for (int req = 0; req < 2; req++) {
        size_t extra = 0;
        int h = read_head(fd, buf, sizeof buf, &extra);
        if (h < 0) break;
        e->requests++;
        const char *cl = strstr(buf, "content-length: ");
        size_t len = cl ? strtoull(cl + 16, NULL, 10) : 0, at = 0;
        int good = 1;
        if (e->early && req == 0) {
            static const char no[] = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";
            if (send(fd, no, sizeof no - 1, MSG_NOSIGNAL) < 0) break;
            /* The next request must come on a new connection: this one still
             * carries the rest of the refused body. */
            int fd2 = accept_timed(e->lfd);
            if (fd2 < 0) break;
            e->accepts++;
            close(fd);
            fd = fd2;
            continue;
        }
        for (size_t i = 0; i < extra; i++, at++) good &= (uint8_t)buf[h + i] == body_byte(at);
        while (at < len) {
            int r = recv_some(fd, buf, sizeof buf);
            if (r <= 0) break;
            for (int i = 0; i < r; i++, at++) good &= (uint8_t)buf[i] == body_byte(at);
        }
        if (at == len && len == e->body_len && good) e->body_ok++;
        if (send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL) < 0) break;
    }
    close(fd);
    return NULL;
}

/* Two POSTs of a lent body of `len` bytes through one client, the body freed
 * (and scribbled over first) as soon as each call is done. */
static void lend_twice(struct engine *e, size_t len, struct outcome o[2])
{
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_http_client *cl;
    CHECK_INT(kvg_http_client_new(&loop, NULL, &cl), 0);
    e->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    CHECK(e->lfd >= 0);
    CHECK_INT(bind(e->lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_INT(listen(e->lfd, 4), 0);
    CHECK_INT(getsockname(e->lfd, (struct sockaddr *)&a, &alen), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    struct kvg_http_target t;
    CHECK_INT(kvg_http_target_parse(url, &t), 0);
    e->body_len = len;
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, engine_run, e), 0);

    struct kvg_http_call_opts copts = {.connect_timeout_ms = 2000,
                                       .first_byte_timeout_ms = 5000,
                                       .idle_timeout_ms = 5000,
                                       .borrow_body = 1};
    struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    for (int k = 0; k < 2; k++) {
        char *body = malloc(len);
        CHECK(body);
        for (size_t i = 0; i < len; i++) body[i] = (char)body_byte(i);
        CHECK_INT(kvg_http_call_start(cl, &t, "POST", KVG_STR("/v1/completions"), NULL, 0, body,
                                      len, &copts, &cbs, &o[k], NULL),
                  0);
        for (int turn = 0; turn < 200000 && !o[k].dones; turn++) {
            uv_run(&loop, UV_RUN_NOWAIT);
            if (!o[k].dones) usleep(50);
        }
        memset(body, 0, len); /* lent until on_done: nothing may read it now */
        free(body);
    }
    pthread_join(th, NULL);
    close(e->lfd);
    kvg_http_client_close(cl);
    for (int turn = 0; turn < 1000 && uv_loop_alive(&loop); turn++) uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_INT(uv_loop_close(&loop), 0);
}

TEST(lent_body_is_written_whole_and_connection_reused)
{
    /* 8 MB: more than the socket takes at once, so the rest is written from
     * the lent buffer after a partial write. */
    struct engine e = {0};
    struct outcome o[2] = {{0}};
    lend_twice(&e, 8u << 20, o);
    CHECK_INT(o[0].dones, 1);
    CHECK_INT(o[0].err, 0);
    CHECK_INT(o[0].status, 200);
    CHECK_INT(o[1].err, 0);
    CHECK_INT(o[1].status, 200);
    CHECK_INT(e.body_ok, 2);
    CHECK_INT(e.accepts, 1);
}

TEST(lent_bodies_around_the_write_piece_size_arrive_whole)
{
    /* A body over 64 KB goes to the socket a piece per loop turn: one byte
     * past a piece, an exact two pieces and a ragged tail all arrive byte
     * for byte, and the connection is reused once the last piece is out. */
    static const size_t lens[] = {(64u << 10) + 1, 128u << 10, (400u << 10) + 123};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        struct engine e = {0};
        struct outcome o[2] = {{0}};
        lend_twice(&e, lens[k], o);
        CHECK_INT(o[0].status, 200);
        CHECK_INT(o[1].status, 200);
        CHECK_INT(e.body_ok, 2);
        CHECK_INT(e.accepts, 1);
    }
}

TEST(early_answer_does_not_reuse_a_connection_mid_write)
{
    /* The engine refuses the body after its first bytes and answers with
     * keep-alive: the connection still has the rest of the body to write, so
     * the next call must not go on it (its request would follow the refused
     * body's bytes), and the body's buffer is freed with nothing writing it. */
    struct engine e = {.early = 1};
    struct outcome o[2] = {{0}};
    lend_twice(&e, 32u << 20, o);
    CHECK_INT(o[0].dones, 1);
    CHECK_INT(o[0].status, 413);
    CHECK_INT(o[1].dones, 1);
    CHECK_INT(o[1].err, 0);
    CHECK_INT(o[1].status, 200);
    CHECK_INT(e.accepts, 2);
    CHECK_INT(e.body_ok, 1);
}
