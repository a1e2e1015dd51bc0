/* A lock-free stack for hand-offs between threads: any thread pushes, and
 * whoever drains takes everything at once. Neither side ever waits for the
 * other: a push only retries when another push won the race, and the take
 * is one exchange, so a thread preempted anywhere holds nobody back (what a
 * loop handing work to lower-priority threads needs; see proxy/workq.h).
 * Nodes are intrusive: a struct puts a kvg_lfs_node first and is cast back. */
#ifndef KVG_BASE_LFSTACK_H
#define KVG_BASE_LFSTACK_H

#include <stdatomic.h>

struct kvg_lfs_node {
    struct kvg_lfs_node *next;
};

typedef _Atomic(struct kvg_lfs_node *) kvg_lfs;

/* Pushes n (owned by the stack until taken); 1 if the stack was empty. */
int kvg_lfs_push(kvg_lfs *s, struct kvg_lfs_node *n);
/* Everything pushed so far, oldest first, linked by next (NULL: empty). */
struct kvg_lfs_node *kvg_lfs_take(kvg_lfs *s);
/* 1 when nothing is waiting (a hint: a push may land right after). */
int kvg_lfs_empty(kvg_lfs *s);

#endif
