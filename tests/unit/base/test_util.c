/* Unit tests for base/util: the comma-separated list helper, and the clocks:
 * the deadline's arithmetic (carry into seconds, normalised nanoseconds) and
 * that each clock's units agree with its other form. Ordering only, no
 * durations: the machines are shared. */
#include "support/test.h"

#include "base/util.h"

static uint64_t ts_ns(struct timespec ts)
{
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TEST(deadline_is_now_plus_ns_normalised)
{
    struct timespec a, c;
    clock_gettime(CLOCK_MONOTONIC, &a);
    struct timespec b = kvg_deadline_after(CLOCK_MONOTONIC, 1999999999ull);
    clock_gettime(CLOCK_MONOTONIC, &c);
    CHECK(b.tv_nsec >= 0 && b.tv_nsec < 1000000000L);
    CHECK(ts_ns(b) >= ts_ns(a) + 1999999999ull);
    CHECK(ts_ns(b) <= ts_ns(c) + 1999999999ull);
    struct timespec z = kvg_deadline_after(CLOCK_REALTIME, 0);
    CHECK(z.tv_nsec >= 0 && z.tv_nsec < 1000000000L);
}

TEST(clock_units_agree)
{
    double s0 = kvg_now_s();
    uint64_t ns = kvg_now_ns();
    double s1 = kvg_now_s();
    /* 1 us of slack each side for the double's rounding. */
    CHECK((double)ns / 1e9 >= s0 - 1e-6);
    CHECK((double)ns / 1e9 <= s1 + 1e-6);
    double w0 = kvg_wall_s();
    uint64_t ms = kvg_wall_ms();
    double w1 = kvg_wall_s();
    CHECK((double)ms >= w0 * 1000 - 1);
    CHECK((double)ms <= w1 * 1000 + 1);
    CHECK(w0 > 1.6e9); /* seconds since 1970, not since boot */
}

TEST(thread_cpu_time_moves_forward)
{
    uint64_t a = kvg_thread_cpu_ns();
    volatile uint64_t x = 0;
    for (uint64_t i = 0; i < 5000000; i++) x += i;
    uint64_t b = kvg_thread_cpu_ns();
    CHECK(b > a);
}

TEST(list_add_once_keeps_items_unique_and_fits)
{
    char l[12] = "";
    kvg_list_add_once(l, sizeof l, "ab");
    CHECK_STR(l, "ab");
    kvg_list_add_once(l, sizeof l, "a"); /* a prefix of an item is not that item */
    CHECK_STR(l, "ab,a");
    kvg_list_add_once(l, sizeof l, "ab");
    kvg_list_add_once(l, sizeof l, "a");
    CHECK_STR(l, "ab,a");
    kvg_list_add_once(l, sizeof l, "cde");
    CHECK_STR(l, "ab,a,cde");              /* 8 bytes + NUL */
    kvg_list_add_once(l, sizeof l, "fgh"); /* would need 13 bytes with the NUL */
    CHECK_STR(l, "ab,a,cde");
    kvg_list_add_once(l, sizeof l, "f");
    CHECK_STR(l, "ab,a,cde,f");
}
