/* Lock-free stack (see lfstack.h). Only whole-stack takes, never single
 * pops, so there is no ABA: a node cannot leave and come back between a
 * pusher's load and its compare-exchange in a way that matters. */
#include "base/lfstack.h"

#include <stddef.h>

int kvg_lfs_push(kvg_lfs *s, struct kvg_lfs_node *n)
{
    struct kvg_lfs_node *old = atomic_load_explicit(s, memory_order_relaxed);
    do {
        n->next = old;
    } while (!atomic_compare_exchange_weak_explicit(s, &old, n, memory_order_release,
                                                    memory_order_relaxed));
    return old == NULL;
}

struct kvg_lfs_node *kvg_lfs_take(kvg_lfs *s)
{
    if (!atomic_load_explicit(s, memory_order_relaxed)) return NULL;
    struct kvg_lfs_node *l = atomic_exchange_explicit(s, NULL, memory_order_acquire), *r = NULL;
    while (l) { /* newest first -> oldest first */
        struct kvg_lfs_node *next = l->next;
        l->next = r;
        r = l;
        l = next;
    }
    return r;
}

int kvg_lfs_empty(kvg_lfs *s)
{
    return atomic_load_explicit(s, memory_order_relaxed) == NULL;
}
