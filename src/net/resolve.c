/* An engine URL resolved on libuv's thread pool (net/resolve.h). */
#include "net/resolve.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

struct resolve {
    uv_getaddrinfo_t req;
    struct kvg_http_target t;
    kvg_resolve_cb cb;
    void *ud;
};

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct resolve *r = req->data;
    if (!status && res && res->ai_addrlen <= sizeof r->t.addr) {
        memcpy(&r->t.addr, res->ai_addr, res->ai_addrlen);
        r->cb(r->ud, 0, &r->t);
    } else {
        r->cb(r->ud, KVG_ENOTFOUND, NULL);
    }
    uv_freeaddrinfo(res);
    free(r);
}

int kvg_resolve_url(uv_loop_t *loop, const char *url, kvg_resolve_cb cb, void *ud)
{
    struct resolve *r = calloc(1, sizeof *r);
    if (!r) return -ENOMEM;
    char host[256], port[16];
    int rc = kvg_http_target_split(url, &r->t, host, port);
    if (rc) {
        free(r);
        return rc;
    }
    r->cb = cb;
    r->ud = ud;
    r->req.data = r;
    /* The same question kvg_http_target_parse asks, answered off the loop. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if ((rc = uv_getaddrinfo(loop, &r->req, on_resolved, host, port, &hints))) free(r);
    return rc;
}
