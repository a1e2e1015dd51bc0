/* The binary heap of heap.h: sifting moves a hole instead of swapping, so each
 * level costs one element copy. */
#include "base/heap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define AT(h, i) ((h)->v + (i) * (h)->size)

void kvg_heap_init(struct kvg_heap *h, size_t size, int (*less)(const void *a, const void *b))
{
    memset(h, 0, sizeof *h);
    h->size = size;
    h->less = less;
}

int kvg_heap_push(struct kvg_heap *h, const void *elem)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        unsigned char *v = realloc(h->v, (cap + 1) * h->size); /* + the scratch element */
        if (!v) return -ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!h->less(elem, AT(h, p))) break;
        memcpy(AT(h, i), AT(h, p), h->size);
        i = p;
    }
    memcpy(AT(h, i), elem, h->size);
    return 0;
}

void kvg_heap_pop(struct kvg_heap *h, void *out)
{
    memcpy(out, AT(h, 0), h->size);
    if (--h->n == 0) return;
    /* The last element goes where the hole ends: keep it in the scratch slot
     * while the hole sinks from the root. */
    unsigned char *last = AT(h, h->cap);
    memcpy(last, AT(h, h->n), h->size);
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->less(AT(h, c + 1), AT(h, c))) c++;
        if (!h->less(AT(h, c), last)) break;
        memcpy(AT(h, i), AT(h, c), h->size);
        i = c;
    }
    memcpy(AT(h, i), last, h->size);
}

const void *kvg_heap_top(const struct kvg_heap *h)
{
    return h->n ? h->v : NULL;
}

void *kvg_heap_at(const struct kvg_heap *h, size_t i)
{
    return AT(h, i);
}

void kvg_heap_free(struct kvg_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
