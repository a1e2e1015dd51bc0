/* Accepting connections, with a back-off when descriptors run out.
 *
 * The listening socket is polled (uv_poll) and accepted here rather than
 * by libuv's uv_listen, because out of file descriptors (EMFILE, ENFILE)
 * libuv accepts and closes every waiting connection and tells nobody. Here
 * the listener stops polling for KVG_HTTP_ACCEPT_PAUSE_MS instead: the
 * kernel keeps new connections in the backlog, requests in flight finish and
 * free descriptors, then accepting resumes. One log line a second at most
 * counts the failures; one more says when accepting resumed. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "net/server_int.h"

/* Connections accepted per wake-up at most, so one loop turn stays short. */
#define ACCEPT_BATCH 128

static void log_failure(struct kvg_http_server *srv, int err, const char *what)
{
    uint64_t now = kvg_now_ms();
    if (srv->fd_log_ms && now - srv->fd_log_ms < 1000) return; /* at most once a second */
    KVG_WARN("http: port %d: accept failed: %s (%llu times since the last report): %s", srv->port,
             uv_strerror(err), (unsigned long long)(srv->fd_errors - srv->fd_errors_logged), what);
    srv->fd_errors_logged = srv->fd_errors;
    srv->fd_log_ms = now;
}

static void on_readable(uv_poll_t *h, int status, int events);

static void on_pause_end(uv_timer_t *t)
{
    struct kvg_http_server *srv = t->data;
    if (!srv->paused || srv->stopping || srv->closing) return;
    srv->paused = 0;
    if (uv_poll_start(&srv->listener, UV_READABLE, on_readable) == 0)
        KVG_INFO("http: port %d: accepting again (%llu accepts failed for want of descriptors "
                 "so far)",
                 srv->port, (unsigned long long)srv->fd_errors);
}

static void pause_accepting(struct kvg_http_server *srv, int err)
{
    srv->fd_errors++;
    log_failure(srv, err, "accepting paused while descriptors are short");
    if (srv->paused) return;
    srv->paused = 1;
    uv_poll_stop(&srv->listener);
    uv_timer_start(&srv->pause_timer, on_pause_end, KVG_HTTP_ACCEPT_PAUSE_MS, 0);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
    struct kvg_http_server *srv = h->data;
    (void)events;
    if (status < 0 || srv->stopping) return;
    for (int i = 0; i < ACCEPT_BATCH && !srv->stopping; i++) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            kvg__http_conn_accepted(srv, fd);
            continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        if (e == EINTR || e == ECONNABORTED) continue;
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
            pause_accepting(srv, -e);
            return;
        }
        log_failure(srv, -e, "the connection is dropped");
        return;
    }
}

int kvg__http_accept_start(struct kvg_http_server *srv)
{
    return uv_poll_start(&srv->listener, UV_READABLE, on_readable);
}

void kvg__http_accept_stop(struct kvg_http_server *srv, int close_timer)
{
    uv_timer_stop(&srv->pause_timer);
    srv->paused = 0;
    if (close_timer && !uv_is_closing((uv_handle_t *)&srv->pause_timer))
        uv_close((uv_handle_t *)&srv->pause_timer, kvg__http_on_aux_closed);
}
