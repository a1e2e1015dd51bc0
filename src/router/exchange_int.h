/* Between the exchange's files (router/exchange.c, router/exchange_peers.c). */
#ifndef KVG_ROUTER_EXCHANGE_INT_H
#define KVG_ROUTER_EXCHANGE_INT_H

#include "router/exchange.h"

/* Walks a valid batch's load section (version 3; none before): load gets
 * each (worker, in_flight); a non-zero return stops the walk and is
 * returned. Returns the loads walked or a negative code. */
int kvg__exchange_walk_loads(const void *data, size_t len,
                             int (*load)(void *ud, struct kvg_str worker, uint32_t in_flight),
                             void *ud);

#endif
