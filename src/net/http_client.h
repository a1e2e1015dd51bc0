/* HTTP/1.1 client for upstream engines, with a keep-alive connection pool per
 * loop. The proxy, the health checker and the metrics scraper use it.
 *
 * One struct kvg_http_client per loop thread (its connections are that loop's
 * handles). A call sends one request and reports the response head, the body
 * (de-chunked) piece by piece as it arrives, and the end, through callbacks
 * that run on the loop. on_done runs exactly once unless the call is
 * cancelled; after on_done or kvg_http_call_cancel the call pointer is dead.
 *
 * A reused keep-alive connection that fails before any response byte (the
 * engine closed it while idle) is retried once on a fresh connection, as
 * common HTTP clients do. */
#ifndef KVG_NET_HTTP_CLIENT_H
#define KVG_NET_HTTP_CLIENT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/http.h"

struct kvg_http_client;
struct kvg_http_call;

struct kvg_http_client_opts {
    uint32_t pool_idle_timeout_ms; /* close pooled connections idle this long */
    uint32_t max_idle_per_host;
    size_t max_response_head; /* status line + headers */
};

/* An upstream address, resolved once (kvg_http_target_parse). */
struct kvg_http_target {
    struct sockaddr_storage addr;
    char hostport[300];  /* "host:port" for the Host header and pool key */
    char base_path[256]; /* path prefix from the URL ("" or "/prefix") */
};

/* Parses "http://host:port[/prefix]" and resolves host (getaddrinfo: blocking,
 * meant for configuration time). 0, -EINVAL, KVG_EUNSUPP (https), or a
 * resolution error. */
int kvg_http_target_parse(const char *url, struct kvg_http_target *t);
/* The same without resolving (net/resolve.h does it off the loop): t's
 * hostport and base_path, host (without brackets) and port (decimal) for
 * the resolver; t->addr stays zeroed. 0, -EINVAL or KVG_EUNSUPP. */
int kvg_http_target_split(const char *url, struct kvg_http_target *t, char host[256],
                          char port[16]);

struct kvg_http_call_cbs {
    void (*on_head)(void *ud, int status, const struct kvg_http_header *h, size_t n);
    void (*on_body)(void *ud, const char *p, size_t n);
    /* err: 0 complete; KVG_ETIMEOUT; KVG_EUPSTREAM (malformed response);
     * negative libuv code (connect refused, reset). */
    void (*on_done)(void *ud, int err);
};

struct kvg_http_call_opts {
    uint32_t connect_timeout_ms;
    uint32_t first_byte_timeout_ms; /* until the response head; 0 = none */
    uint32_t idle_timeout_ms;       /* between body pieces; 0 = none */
    /* The whole call, from kvg_http_call_start to the response's end, a
     * retry included; 0 = none. The other timeouts reset as bytes arrive,
     * so only this one ends an answer that trickles forever. */
    uint32_t total_timeout_ms;
    /* The body is lent, not copied: the caller keeps it unchanged until the
     * call's on_done or kvg_http_call_cancel (a big body is then written
     * from where it lies). */
    int borrow_body;
};

void kvg_http_client_opts_default(struct kvg_http_client_opts *o);
int kvg_http_client_new(uv_loop_t *loop, const struct kvg_http_client_opts *o,
                        struct kvg_http_client **out);
/* Closes idle connections and frees the client once its handles are closed.
 * No call may be in flight. */
void kvg_http_client_close(struct kvg_http_client *cl);

/* Starts a request. `path` (the target's base path comes first), `headers`
 * and `body` (unless opts->borrow_body) are copied; Host, Content-Length and
 * Connection are added.
 * *out (optional) lets the caller cancel. */
int kvg_http_call_start(struct kvg_http_client *cl, const struct kvg_http_target *t,
                        const char *method, struct kvg_str path,
                        const struct kvg_http_header *headers, size_t nheaders, const void *body,
                        size_t len, const struct kvg_http_call_opts *opts,
                        const struct kvg_http_call_cbs *cbs, void *ud, struct kvg_http_call **out);
/* Stops the call: no more callbacks; its connection is closed, not reused. */
void kvg_http_call_cancel(struct kvg_http_call *call);
/* Backpressure: stop/restart reading the response body. */
void kvg_http_call_pause(struct kvg_http_call *call);
void kvg_http_call_resume(struct kvg_http_call *call);

#endif
