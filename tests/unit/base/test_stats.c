/* Unit tests for base/stats: the percentile's edge cases (no values, one
 * value, p at 0 and 100, between ranks), sorting, the mean. */
#include "support/test.h"

#include <math.h>

#include "base/stats.h"

TEST(pct_of_nothing_is_nan)
{
    CHECK(isnan(kvg_stats_pct_sorted(NULL, 0, 50)));
    CHECK(isnan(kvg_stats_pct(NULL, 0, 90)));
    CHECK(isnan(kvg_stats_mean(NULL, 0)));
}

TEST(pct_of_one_value_is_that_value)
{
    double v[] = {7.5};
    CHECK_NEAR(kvg_stats_pct_sorted(v, 1, 0), 7.5, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 1, 50), 7.5, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 1, 100), 7.5, 0);
}

TEST(pct_ends_are_min_and_max)
{
    double v[] = {1, 2, 4, 8};
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 0), 1, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, -5), 1, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 100), 8, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 250), 8, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, NAN), 1, 0);
}

TEST(pct_interpolates_between_closest_ranks)
{
    /* numpy.percentile([1, 2, 4, 8], q): 50 -> 3.0, 90 -> 6.8, 25 -> 1.75. */
    double v[] = {1, 2, 4, 8};
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 50), 3.0, 1e-12);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 90), 6.8, 1e-12);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 25), 1.75, 1e-12);
    /* On a rank exactly: p 100/3 of 4 values is the second. */
    CHECK_NEAR(kvg_stats_pct_sorted(v, 4, 100.0 / 3), 2, 1e-12);
}

TEST(pct_sorts_unsorted_values_in_place)
{
    double v[] = {8, 1, 4, 2, 4};
    CHECK_NEAR(kvg_stats_pct(v, 5, 50), 4, 0);
    CHECK_NEAR(v[0], 1, 0);
    CHECK_NEAR(v[1], 2, 0);
    CHECK_NEAR(v[4], 8, 0);
    CHECK_NEAR(kvg_stats_pct_sorted(v, 5, 90), 6.4, 1e-12);
}

TEST(cmp_double_orders_ascending)
{
    double a = 1, b = 2;
    CHECK(kvg_stats_cmp_double(&a, &b) < 0);
    CHECK(kvg_stats_cmp_double(&b, &a) > 0);
    CHECK_INT(kvg_stats_cmp_double(&a, &a), 0);
    double v[] = {3, -1, 2.5, -7, 0};
    kvg_stats_sort(v, 5);
    for (int i = 0; i < 4; i++) CHECK(v[i] <= v[i + 1]);
    CHECK_NEAR(v[0], -7, 0);
}

TEST(mean_of_values)
{
    double v[] = {1, 2, 3, 10};
    CHECK_NEAR(kvg_stats_mean(v, 4), 4, 1e-12);
    CHECK_NEAR(kvg_stats_mean(v, 1), 1, 0);
}
