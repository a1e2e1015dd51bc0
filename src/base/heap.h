/* A binary min-heap of fixed-size elements, ordered by the caller's
 * less-than. Elements are copied in and out (they are small records: a time
 * and a pointer or two). The heap owns its array; kvg_heap_free releases
 * it, not what the elements point to. One heap is used by one thread. */
#ifndef KVG_BASE_HEAP_H
#define KVG_BASE_HEAP_H

#include <stddef.h>

struct kvg_heap {
    unsigned char *v; /* cap elements, then one scratch element */
    size_t n, cap, size;
    int (*less)(const void *a, const void *b);
};

/* An empty heap of elements of `size` bytes; nothing is allocated yet. */
void kvg_heap_init(struct kvg_heap *h, size_t size, int (*less)(const void *a, const void *b));
/* Copies *elem in. 0, or -ENOMEM (the heap is unchanged). */
int kvg_heap_push(struct kvg_heap *h, const void *elem);
/* Moves the smallest element into *out; h must not be empty. Among equal
 * elements which comes first is unspecified: give `less` a tie-breaker when
 * the order matters. */
void kvg_heap_pop(struct kvg_heap *h, void *out);
/* The smallest element, or NULL when empty; valid until the next change. */
const void *kvg_heap_top(const struct kvg_heap *h);
/* Element i in storage order (0 <= i < n), e.g. to free what they own. */
void *kvg_heap_at(const struct kvg_heap *h, size_t i);
void kvg_heap_free(struct kvg_heap *h);

#endif
