/* Header accumulation for the server and the client; see headers.h. */
#include "net/headers.h"

#include <errno.h>
#include <stdlib.h>

#include "base/err.h"

void kvg__http_hdrs_init(struct kvg__http_hdrs *h, struct kvg_buf *buf, size_t max)
{
    *h = (struct kvg__http_hdrs){.buf = buf, .max = max};
}

void kvg__http_hdrs_reset(struct kvg__http_hdrs *h)
{
    h->n = 0;
    h->state = 0;
}

int kvg__http_hdrs_name(struct kvg__http_hdrs *h, const char *at, size_t n)
{
    if (h->state != 1) {
        if (h->n == h->max) return KVG_ETOOBIG;
        if (h->n == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 16;
            if (cap > h->max) cap = h->max;
            struct kvg__http_hoff *o = realloc(h->off, cap * sizeof *o);
            if (!o) return -ENOMEM;
            h->off = o;
            h->cap = cap;
        }
        h->off[h->n++] = (struct kvg__http_hoff){h->buf->len, 0, 0, 0};
        h->state = 1;
    }
    h->off[h->n - 1].name_len += n;
    return kvg_buf_append(h->buf, at, n);
}

int kvg__http_hdrs_value(struct kvg__http_hdrs *h, const char *at, size_t n)
{
    if (!h->n) return KVG_EPARSE; /* llhttp gives a name first; never here */
    if (h->state != 2) {
        h->off[h->n - 1].val_off = h->buf->len;
        h->state = 2;
    }
    h->off[h->n - 1].val_len += n;
    return kvg_buf_append(h->buf, at, n);
}

void kvg__http_hdrs_views(const struct kvg__http_hdrs *h, struct kvg_http_header *out)
{
    const char *base = h->buf->data;
    for (size_t i = 0; i < h->n; i++) {
        out[i].name = (struct kvg_str){base + h->off[i].name_off, h->off[i].name_len};
        out[i].value = (struct kvg_str){base + h->off[i].val_off, h->off[i].val_len};
    }
}

void kvg__http_hdrs_free(struct kvg__http_hdrs *h)
{
    free(h->off);
    h->off = NULL;
    h->n = h->cap = 0;
}
