/* A consistent-hash ring over the current candidates, shared by the
 * consistent_hash and prefix_hash policies. Virtual nodes are placed at
 * XXH3("{url}#{i}"); a key goes to the first node at or after XXH3(key),
 * wrapping. The ring is rebuilt only when the candidate set changes (a worker
 * joins, leaves, or its health flips), so a key's worker moves only when its
 * own arc changes hands. Thread-safe. */
#ifndef KVG_ROUTER_RING_H
#define KVG_ROUTER_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "router/worker.h"

struct kvg_ring {
    pthread_mutex_t mu;
    uint32_t vnodes;
    uint64_t sig; /* signature of the candidate set the ring was built for */
    size_t n;     /* points */
    struct kvg_ring_point {
        uint64_t pos;
        uint32_t slot; /* index into urls */
    } * pts;
    char (*urls)[512];
    size_t nurls;
};

void kvg_ring_init(struct kvg_ring *r, uint32_t vnodes);
void kvg_ring_destroy(struct kvg_ring *r);
/* Index into cand[] that owns `hash`, or -1 when n == 0 / out of memory. */
int kvg_ring_lookup(struct kvg_ring *r, struct kvg_worker *const *cand, size_t n, uint64_t hash);
uint64_t kvg_ring_hash(const void *p, size_t len);

#endif
