/* Percentiles and means of double samples; see stats.h for the method. */
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>

int kvg_stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void kvg_stats_sort(double *v, size_t n)
{
    if (n > 1) qsort(v, n, sizeof *v, kvg_stats_cmp_double);
}

double kvg_stats_pct_sorted(const double *v, size_t n, double p)
{
    if (!n) return NAN;
    if (!(p > 0)) return v[0]; /* a NaN p too */
    if (p >= 100) return v[n - 1];
    double h = p / 100.0 * (double)(n - 1);
    size_t i = (size_t)h;
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (h - (double)i) * (v[i + 1] - v[i]);
}

double kvg_stats_pct(double *v, size_t n, double p)
{
    kvg_stats_sort(v, n);
    return kvg_stats_pct_sorted(v, n, p);
}

double kvg_stats_mean(const double *v, size_t n)
{
    if (!n) return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s / (double)n;
}
