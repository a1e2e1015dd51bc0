/* An engine URL resolved off the loop (net/resolve.h): the callback runs
 * only inside uv_run, never in the call that starts it, with the target
 * kvg_http_target_parse would give; a bad URL is refused at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "base/err.h"
#include "net/resolve.h"
#include "support/test.h"

struct seen {
    int calls, status;
    struct kvg_http_target t;
};

static void on_done(void *ud, int status, const struct kvg_http_target *t)
{
    struct seen *s = ud;
    s->calls++;
    s->status = status;
    if (t) s->t = *t;
}

/* Resolves url on a fresh loop; calls counts the callbacks seen before
 * uv_run (they must be none). */
static int resolve(const char *url, struct seen *s, int *calls_before_run)
{
    uv_loop_t loop;
    memset(s, 0, sizeof *s);
    if (uv_loop_init(&loop)) return -1;
    int rc = kvg_resolve_url(&loop, url, on_done, s);
    *calls_before_run = s->calls;
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc;
}

/* 1 when url resolves, later and once, into s. */
static int resolved_later(const char *url, struct seen *s)
{
    int before;
    return resolve(url, s, &before) == 0 && before == 0 && s->calls == 1 && s->status == 0;
}

static int port_of(const struct kvg_http_target *t)
{
    const struct sockaddr *a = (const struct sockaddr *)&t->addr;
    if (a->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
    if (a->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
    return -1;
}

TEST(literal_address)
{
    struct seen s;
    CHECK(resolved_later("http://127.0.0.1:9123/v1base", &s));
    CHECK_STR(s.t.hostport, "127.0.0.1:9123");
    CHECK_STR(s.t.base_path, "/v1base");
    CHECK_INT(port_of(&s.t), 9123);
    const struct sockaddr_in *in = (const struct sockaddr_in *)&s.t.addr;
    CHECK_INT(in->sin_family, AF_INET);
    CHECK_INT((int)ntohl(in->sin_addr.s_addr), 0x7f000001);
}

TEST(ipv6_literal)
{
    struct seen s;
    CHECK(resolved_later("http://[::1]:8080", &s));
    CHECK_INT(s.t.addr.ss_family, AF_INET6);
    CHECK_INT(port_of(&s.t), 8080);
}

TEST(host_name)
{
    struct seen s;
    CHECK(resolved_later("http://localhost:8000", &s));
    CHECK_STR(s.t.hostport, "localhost:8000"); /* the name stays the Host header */
    CHECK_INT(port_of(&s.t), 8000);
    /* The same target the blocking parse gives. */
    struct kvg_http_target p;
    CHECK_INT(kvg_http_target_parse("http://localhost:8000", &p), 0);
    CHECK_INT(p.addr.ss_family, s.t.addr.ss_family);
    CHECK_INT(port_of(&p), port_of(&s.t));
}

TEST(unknown_name)
{
    struct seen s;
    int before;
    CHECK_INT(resolve("http://no-such-host.invalid:8000", &s, &before), 0);
    CHECK_INT(before, 0);
    CHECK_INT(s.calls, 1);
    CHECK_INT(s.status, KVG_ENOTFOUND);
}

TEST(bad_urls_at_once)
{
    struct seen s;
    int before;
    CHECK_INT(resolve("https://127.0.0.1:8000", &s, &before), KVG_EUNSUPP);
    CHECK_INT(resolve("http://127.0.0.1:0", &s, &before), -EINVAL);
    CHECK_INT(resolve("http://127.0.0.1:x", &s, &before), -EINVAL);
    CHECK_INT(resolve("http://", &s, &before), -EINVAL);
    CHECK_INT(s.calls, 0); /* no callback for a refused URL */
}
