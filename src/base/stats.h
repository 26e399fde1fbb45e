/* Order statistics of measured samples: the median and spread every measurement reports
 * (the executor's protocol, calibration, the job's head-to-head, the benchmarks), written
 * once. Each function sorts the samples in place; none allocates. Thread-safe. */
#ifndef PLACER_STATS_H
#define PLACER_STATS_H

/* qsort's comparison of two doubles, ascending. */
int pl_compare_doubles(const void *a, const void *b);

/* The median of n samples (the mean of the middle two when n is even); 0 when n is 0. */
double pl_median(double *samples, int n);

/* The q-quantile, 0 <= q <= 1, interpolated linearly between neighbours; NaN when n is 0. */
double pl_quantile(double *samples, int n, double q);

typedef struct pl_stats {
    double median, min, max;
} pl_stats;

/* Median, least and greatest of n samples; all 0 when n is 0. */
pl_stats pl_stats_of(double *samples, int n);

#endif
