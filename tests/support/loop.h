/* A bounded wait on a libuv loop for unit tests that drive one (the Redis
 * connection, the quota store): see loop.c. */
#ifndef KVG_TEST_LOOP_H
#define KVG_TEST_LOOP_H

#include <stdint.h>
#include <uv.h>

/* Runs `loop` until *flag is non-zero (flag NULL: never) or `ms` have
 * passed; a 5 ms ticker bounds each turn, so the bound holds on a loop with
 * nothing else to do. */
void kvg_test_run_until(uv_loop_t *loop, const int *flag, uint64_t ms);

#endif
