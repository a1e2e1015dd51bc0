/* Percentiles and means of double samples: the one implementation the
 * benchmark reports, the autoscale planners and the bench programs use, so
 * two figures side by side in a report are computed alike.
 *
 * A percentile is linear interpolation between closest ranks (numpy's default
 * and inference-perf's): p of n sorted values is v[i] + (h - i) * (v[i + 1] -
 * v[i]) with h = p / 100 * (n - 1) and i = floor(h); p <= 0 gives the least
 * value, p >= 100 the greatest, one value is every percentile of itself, and
 * no values give NAN. */
#ifndef KVG_BASE_STATS_H
#define KVG_BASE_STATS_H

#include <stddef.h>

/* qsort's comparator for doubles, ascending (NaNs compare equal to all). */
int kvg_stats_cmp_double(const void *a, const void *b);
/* Sorts v[0..n) ascending. */
void kvg_stats_sort(double *v, size_t n);
/* The p-th percentile (p in [0, 100]) of v[0..n), already sorted ascending. */
double kvg_stats_pct_sorted(const double *v, size_t n, double p);
/* The same of unsorted values: sorts v in place first. */
double kvg_stats_pct(double *v, size_t n, double p);
/* The arithmetic mean of v[0..n); NAN when n is 0. */
double kvg_stats_mean(const double *v, size_t n);

#endif
