/* Header lines as llhttp hands them over: a name or a value may arrive in
 * several pieces (when it spans two reads), so the bytes are appended to one
 * buffer and only their offsets are kept; views are made once the head is
 * complete, when the buffer no longer moves. Shared by the server (request
 * heads) and the client (response heads). Internal to src/http. */
#ifndef KVG_NET_HEADERS_H
#define KVG_NET_HEADERS_H

#include <stddef.h>

#include "base/buf.h"
#include "net/http.h"

struct kvg__http_hoff {
    size_t name_off, name_len, val_off, val_len;
};

struct kvg__http_hdrs {
    struct kvg_buf *buf; /* where the bytes go; not owned (the server's also holds the URL) */
    struct kvg__http_hoff *off;
    size_t n, cap, max;
    int state; /* 0 before a header, 1 in a name, 2 in a value */
};

/* Headers appended to buf, at most max of them. Allocates nothing yet. */
void kvg__http_hdrs_init(struct kvg__http_hdrs *h, struct kvg_buf *buf, size_t max);
/* Forgets the headers (the buffer is the caller's to reset); keeps memory. */
void kvg__http_hdrs_reset(struct kvg__http_hdrs *h);
/* A piece of a name or of a value. 0; KVG_ETOOBIG past max headers or the
 * buffer's limit; -ENOMEM. */
int kvg__http_hdrs_name(struct kvg__http_hdrs *h, const char *at, size_t n);
int kvg__http_hdrs_value(struct kvg__http_hdrs *h, const char *at, size_t n);
/* Fills out[0..h->n) with views into the buffer, valid while it is unchanged. */
void kvg__http_hdrs_views(const struct kvg__http_hdrs *h, struct kvg_http_header *out);
void kvg__http_hdrs_free(struct kvg__http_hdrs *h);

#endif
