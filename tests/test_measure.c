/* The measurement protocol's examination of a series of step times (measure.h): steady,
 * bimodal, drifting and noisy series made by hand, and series too short to judge. */
#include <math.h>

#include "measure.h"
#include "suites.h"
#include "test_util.h"

static pl_series examine(const double *times, int n)
{
    pl_series s;
    CU_ASSERT_EQUAL(pl_series_examine(times, n, &s, NULL), PL_OK);
    return s;
}

/* The order statistics by hand: sorted 1..5, median 3, quartiles 2 and 4. */
static void test_statistics(void)
{
    const double times[] = {4, 1, 3, 2, 5};
    pl_series s = examine(times, 5);
    CU_ASSERT_EQUAL(s.steps, 5);
    CU_ASSERT_DOUBLE_EQUAL(s.median, 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.min, 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.max, 5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.q1, 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.q3, 4, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.spread, 4.0 / 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.iqr_spread, 2.0 / 3, 1e-12);
    /* 4 1 3 2 5: ranks 3 0 2 1 4 against 0..4, rho = 1 - 6 * 14 / (5 * 24) */
    CU_ASSERT_DOUBLE_EQUAL(s.correlation, 1 - 6.0 * 14 / 120, 1e-12);
}

/* Within a few per cent, no order: neither flag. */
static void test_steady(void)
{
    const double times[] = {1.00, 1.02, 0.99, 1.01, 1.03, 1.00, 0.98, 1.02, 1.01, 1.00};
    pl_series s = examine(times, 10);
    CU_ASSERT_FALSE(s.bimodal);
    CU_ASSERT_FALSE(s.drifting);
    CU_ASSERT_FALSE(s.unstable);
    CU_ASSERT_DOUBLE_EQUAL(s.low_mode, s.median, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.high_mode, s.median, 1e-12);
    CU_ASSERT(s.iqr_spread < 0.03);
}

/* What was seen on a shared machine: steps at 0.39 ms and at 12 ms, interleaved. */
static void test_bimodal(void)
{
    const double times[] = {0.39e-3, 12.0e-3, 0.40e-3, 0.38e-3, 11.8e-3,
                            0.39e-3, 12.2e-3, 0.41e-3, 12.1e-3, 0.39e-3};
    pl_series s = examine(times, 10);
    CU_ASSERT_TRUE(s.bimodal);
    CU_ASSERT_TRUE(s.unstable);
    CU_ASSERT_EQUAL(s.low_steps, 6);
    CU_ASSERT_DOUBLE_EQUAL(s.low_mode, 0.39e-3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.high_mode, 12.05e-3, 1e-12);
    CU_ASSERT_FALSE(s.drifting); /* the slow steps are spread over the series */
}

/* One stray step in ten is under the share of a mode: noise, not two modes; and a wide
 * but unimodal spread has no gap. */
static void test_noisy_unimodal(void)
{
    const double stray[] = {1.0, 1.01, 0.99, 1.0, 9.0, 1.02, 1.0, 0.98, 1.01, 1.0};
    pl_series s = examine(stray, 10);
    CU_ASSERT_FALSE(s.bimodal);
    CU_ASSERT_FALSE(s.unstable);
    CU_ASSERT(s.spread > 7);        /* the range sees the stray step */
    CU_ASSERT(s.iqr_spread < 0.03); /* the interquartile range does not */
    const double wide[] = {1.30, 1.05, 1.42, 1.12, 1.00, 1.36, 1.21, 1.08, 1.45, 1.17,
                           1.26, 1.02};
    s = examine(wide, 12);
    CU_ASSERT_FALSE(s.bimodal);
    CU_ASSERT_FALSE(s.drifting);
    CU_ASSERT(s.iqr_spread > 0.15);
}

/* A machine slowing down through the series, steadily: drifting, not bimodal. */
static void test_drifting(void)
{
    double times[12];
    for (int i = 0; i < 12; i++)
        times[i] = 1.0 + 0.1 * i + (i % 2 ? 0.02 : -0.02);
    pl_series s = examine(times, 12);
    CU_ASSERT_TRUE(s.drifting);
    CU_ASSERT_TRUE(s.unstable);
    CU_ASSERT_FALSE(s.bimodal);
    CU_ASSERT(s.drift > 0.5);
    CU_ASSERT(s.correlation > 0.9);
    /* speeding up drifts too */
    for (int i = 0; i < 12; i++)
        times[i] = 2.2 - 0.1 * i;
    s = examine(times, 12);
    CU_ASSERT_TRUE(s.drifting);
    CU_ASSERT(s.drift < -0.4);
    CU_ASSERT(s.correlation < -0.9);
    /* a gentle warming-up of 5% is in order but below the threshold */
    for (int i = 0; i < 12; i++)
        times[i] = 1.0 + 0.005 * i;
    s = examine(times, 12);
    CU_ASSERT_FALSE(s.drifting);
    CU_ASSERT(s.correlation > 0.99);
}

/* Thirds that differ by chance, without an order: the rank correlation keeps it steady. */
static void test_thirds_without_order(void)
{
    const double times[] = {1.0, 1.3, 1.0, 1.3, 1.3, 1.0, 1.0, 1.3, 1.3};
    pl_series s = examine(times, 9);
    CU_ASSERT(fabs(s.drift) > PL_SERIES_DRIFT); /* first third 1.0, last third 1.3 */
    CU_ASSERT(fabs(s.correlation) < PL_SERIES_DRIFT_CORRELATION);
    CU_ASSERT_FALSE(s.drifting);
}

/* Too few steps: none is empty, one is steady, drift is not judged under
 * PL_SERIES_DRIFT_MIN_STEPS; two steps at two speeds are bimodal (one each side). */
static void test_tiny(void)
{
    pl_series s = examine(NULL, 0);
    CU_ASSERT_EQUAL(s.steps, 0);
    CU_ASSERT_FALSE(s.unstable);
    CU_ASSERT_EQUAL(s.median, 0);
    const double one[] = {0.5};
    s = examine(one, 1);
    CU_ASSERT_FALSE(s.unstable);
    CU_ASSERT_DOUBLE_EQUAL(s.median, 0.5, 1e-12);
    CU_ASSERT_EQUAL(s.spread, 0);
    const double two[] = {0.39e-3, 12.0e-3};
    s = examine(two, 2);
    CU_ASSERT_TRUE(s.bimodal);
    CU_ASSERT_EQUAL(s.low_steps, 1);
    const double rising[] = {1.0, 1.2, 1.4, 1.6, 1.8};
    s = examine(rising, 5);
    CU_ASSERT_FALSE(s.drifting);
    CU_ASSERT_EQUAL(s.drift, 0);
    CU_ASSERT_FALSE(s.bimodal);
}

void pl_register_measure_tests(void)
{
    static const pl_test_case cases[] = {
        {"median, quartiles, spreads and rank correlation by hand", test_statistics},
        {"a steady series is neither bimodal nor drifting", test_steady},
        {"steps at two speeds are bimodal, with each mode's median", test_bimodal},
        {"a stray step or a wide spread is noise, not two modes", test_noisy_unimodal},
        {"a series that slows or speeds steadily drifts", test_drifting},
        {"thirds apart without an order do not drift", test_thirds_without_order},
        {"too few steps to judge", test_tiny},
        {NULL, NULL},
    };
    pl_test_add_suite("measure", cases);
}
