/* The autoscaler's tick grid (autoscale/ctl.c,
 * kvg_autoscale_ctl_tick_wait): a late tick does not move the ones
 * after it, and a stall skips the ticks it missed. */
#include <stdint.h>

#include "autoscale/ctl.h"
#include "support/test.h"

TEST(a_late_tick_keeps_the_grid)
{
    uint64_t ticks = 0;
    CHECK_NEAR(kvg_autoscale_ctl_tick_wait(5, 0.01, &ticks), 4.99, 1e-9);
    ticks++; /* the first ran 1 s late: the second is still due at 10 s */
    CHECK_NEAR(kvg_autoscale_ctl_tick_wait(5, 6.0, &ticks), 4.0, 1e-9);
    ticks++; /* and one run 2 ms early (the loop's cached clock) keeps it */
    CHECK_NEAR(kvg_autoscale_ctl_tick_wait(5, 9.998, &ticks), 5.002, 1e-9);
    CHECK_INT((int)ticks, 2);
}

TEST(a_stall_skips_the_missed_ticks)
{
    uint64_t ticks = 1; /* the first ran; the loop then stalled to 17.5 s */
    ticks++;
    CHECK_NEAR(kvg_autoscale_ctl_tick_wait(5, 17.5, &ticks), 2.5, 1e-9);
    CHECK_INT((int)ticks, 3);
    ticks++;
    CHECK_NEAR(kvg_autoscale_ctl_tick_wait(5, 20.0, &ticks), 5.0, 1e-9);
}
