/* Resolving an engine URL's host name off the event loop. getaddrinfo
 * blocks (a slow DNS server stalls every connection of the loop that calls
 * it), so a request handler that learns a new URL, like POST /workers,
 * resolves it on libuv's thread pool and carries on in a callback. */
#ifndef KVG_NET_RESOLVE_H
#define KVG_NET_RESOLVE_H

#include <uv.h>

#include "net/http_client.h"

/* status 0: t is the URL's target, resolved (valid during the call only);
 * else a negative code (KVG_ENOTFOUND: the name does not resolve). */
typedef void (*kvg_resolve_cb)(void *ud, int status, const struct kvg_http_target *t);

/* Starts resolving url ("http://host:port[/prefix]") on loop. 0: cb runs
 * once, later, on loop's thread (never inside this call); a literal address
 * goes the same way. Else -EINVAL or KVG_EUNSUPP (the URL), -ENOMEM, or
 * libuv's code, and cb is not called. The request frees itself after cb. */
int kvg_resolve_url(uv_loop_t *loop, const char *url, kvg_resolve_cb cb, void *ud);

#endif
