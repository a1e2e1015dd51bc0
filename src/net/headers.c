/* Header accumulation for the server and the client; see headers.h. */
#include "net/headers.h"

#include <errno.h>
#include <stdlib.h>

#include "base/err.h"

void kvg_http__hdrs_init(struct kvg_http__hdrs *h, struct kvg_buf *buf, size_t max)
{
    *h = (struct kvg_http__hdrs){.buf = buf, .max = max};
}

void kvg_http__hdrs_reset(struct kvg_http__hdrs *h)
{
    h->n = 0;
    h->state = 0;
}

int kvg_http__hdrs_name(struct kvg_http__hdrs *h, const char *at, size_t n)
{
    if (h->state != 1) {
        if (h->n == h->max) return KVG_ETOOBIG;
        if (h->n == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 16;
            if (cap > h->max) cap = h->max;
            struct kvg_http__hoff *o = realloc(h->off, cap * sizeof *o);
            if (!o) return -ENOMEM;
            h->off = o;
            h->cap = cap;
        }
        h->off[h->n++] = (struct kvg_http__hoff){h->buf->len, 0, 0, 0};
        h->state = 1;
    }
    h->off[h->n - 1].name_len += n;
    return kvg_buf_append(h->buf, at, n);
}

int kvg_http__hdrs_value(struct kvg_http__hdrs *h, const char *at, size_t n)
{
    if (!h->n) return KVG_EPARSE; /* llhttp gives a name first; never here */
    if (h->state != 2) {
        h->off[h->n - 1].val_off = h->buf->len;
        h->state = 2;
    }
    h->off[h->n - 1].val_len += n;
    return kvg_buf_append(h->buf, at, n);
}

void kvg_http__hdrs_views(const struct kvg_http__hdrs *h, struct kvg_http_header *out)
{
    const char *base = h->buf->data;
    for (size_t i = 0; i < h->n; i++) {
        out[i].name = (struct kvg_str){base + h->off[i].name_off, h->off[i].name_len};
        out[i].value = (struct kvg_str){base + h->off[i].val_off, h->off[i].val_len};
    }
}

void kvg_http__hdrs_free(struct kvg_http__hdrs *h)
{
    free(h->off);
    h->off = NULL;
    h->n = h->cap = 0;
}
