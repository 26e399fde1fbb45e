/* Order statistics of measured samples (stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

int pl_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void sort(double *samples, int n)
{
    qsort(samples, (size_t)n, sizeof *samples, pl_compare_doubles);
}

/* The median of sorted samples. */
static double middle(const double *sorted, int n)
{
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double pl_median(double *samples, int n)
{
    if (n <= 0)
        return 0;
    sort(samples, n);
    return middle(samples, n);
}

double pl_quantile(double *samples, int n, double q)
{
    if (n <= 0)
        return NAN;
    sort(samples, n);
    double at = q * (n - 1);
    int low = (int)at;
    return low + 1 < n ? samples[low] + (at - low) * (samples[low + 1] - samples[low])
                       : samples[low];
}

pl_stats pl_stats_of(double *samples, int n)
{
    if (n <= 0)
        return (pl_stats){0, 0, 0};
    sort(samples, n);
    return (pl_stats){middle(samples, n), samples[0], samples[n - 1]};
}
