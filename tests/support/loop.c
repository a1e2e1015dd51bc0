/* A bounded wait on a libuv loop for unit tests; see loop.h. */
#include "support/loop.h"

#include "base/util.h"

static void tick(uv_timer_t *t)
{
    (void)t;
}

void kvg_test_run_until(uv_loop_t *loop, const int *flag, uint64_t ms)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    uint64_t end = kvg_now_ms() + ms;
    while ((!flag || !*flag) && kvg_now_ms() < end) uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}
