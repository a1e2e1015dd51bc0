/* A copy of a request's headers for work that may outlive the request (a
 * big request's pick on a work thread); see proxy_int.h. */
#include <errno.h>
#include <string.h>

#include "proxy/proxy_int.h"

int kvg__proxy_snap_headers(struct kvg_buf *b, const struct kvg_http_req *req)
{
    kvg_buf_init(b, 0);
    for (size_t i = 0; i < req->nheaders; i++) {
        const struct kvg_http_header *h = &req->headers[i];
        uint32_t nl = (uint32_t)h->name.len, vl = (uint32_t)h->value.len;
        if (kvg_buf_append(b, &nl, 4) || kvg_buf_append(b, h->name.p, nl) ||
            kvg_buf_append(b, &vl, 4) || kvg_buf_append(b, h->value.p, vl))
            return -ENOMEM;
    }
    return 0;
}

struct kvg_str kvg__proxy_snap_header(const void *hctx, const char *name)
{
    const struct kvg_buf *b = hctx;
    size_t at = 0;
    while (at + 4 <= b->len) {
        uint32_t nl, vl;
        memcpy(&nl, b->data + at, 4);
        struct kvg_str n = {b->data + at + 4, nl};
        memcpy(&vl, b->data + at + 4 + nl, 4);
        struct kvg_str v = {b->data + at + 8 + nl, vl};
        if (kvg_str_eq_nocase(n, name)) return v;
        at += 8 + (size_t)nl + vl;
    }
    return KVG_STR_NULL;
}
