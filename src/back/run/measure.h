/* The measurement protocol: how a plan's step time is measured on the executor, and how a
 * series of step times is judged trustworthy or not (docs/executor.md, "Measuring a step").
 *
 * A series of step times in the order they ran is examined for two signs that something
 * other than the plan set the times (another process sharing the cores, say):
 *   - bimodal: sorted, the times have a gap, a ratio above PL_SERIES_GAP_RATIO between two
 *     consecutive times, with at least PL_SERIES_MODE_SHARE of the steps (and at least one)
 *     on each side: the steps ran at two speeds, and the median is one of them or neither;
 *   - drifting: at least PL_SERIES_DRIFT_MIN_STEPS steps, the medians of the first and the
 *     last third differ by more than PL_SERIES_DRIFT of the whole median, and the times
 *     rank-correlate with the step's index (Spearman) beyond PL_SERIES_DRIFT_CORRELATION:
 *     the machine changed speed during the series, steadily rather than by noise.
 * Either makes the series unstable. Noise alone (a unimodal spread, one odd step out of
 * five) makes neither.
 *
 * pl_executor_measure runs `warmup` steps, then a round of `steps` measured steps; while
 * the round's series is unstable and fewer than PL_MEASURE_MAX_ROUNDS rounds ran, it runs
 * another round (no second warm-up). It reports the first steady round, or, when none was,
 * the round with the smallest interquartile spread; `unstable` then stays set. It reads how
 * busy the machine was (machine_load.h) at each round's start and end: what others took
 * of the cores during each round, and during the one reported.
 *
 * Thread-safety: pl_series_examine is pure (thread-safe); pl_executor_measure drives the
 * executor, whose one caller it must be (executor.h). */
#ifndef PLACER_MEASURE_H
#define PLACER_MEASURE_H

#include <stdbool.h>

#include "error.h"
#include "executor.h"
#include "machine_load.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_SERIES_GAP_RATIO 1.5         /* consecutive sorted times this far apart: a gap */
#define PL_SERIES_MODE_SHARE 0.2        /* of the steps, at least, on each side of the gap */
#define PL_SERIES_DRIFT 0.2             /* first and last thirds' medians apart, of the median */
#define PL_SERIES_DRIFT_CORRELATION 0.6 /* |Spearman's rho| of time against index, at least */
enum { PL_SERIES_DRIFT_MIN_STEPS = 6, PL_MEASURE_MAX_ROUNDS = 3 };

/* A series of step times, examined. Times in seconds; shares are fractions of the median
 * (0.03 is 3%). */
typedef struct pl_series {
    int steps;
    double median, min, max;
    double q1, q3;      /* the quartiles (pl_quantile's interpolation) */
    double spread;      /* (max - min) / median: the whole range */
    double iqr_spread;  /* (q3 - q1) / median: the middle half, robust to a stray step */
    bool bimodal;       /* a gap (above) */
    double low_mode, high_mode; /* when bimodal: the medians of the steps below and above
                                   the widest gap; else both the median */
    int low_steps;      /* when bimodal: the steps below the gap */
    bool drifting;      /* a drift (above) */
    double drift;       /* (last third's median - first third's) / median; 0 with fewer
                           than PL_SERIES_DRIFT_MIN_STEPS steps */
    double correlation; /* Spearman's rho of time against index; 0 with fewer than 3 steps */
    bool unstable;      /* bimodal or drifting */
} pl_series;

/* Examines `n` step times in the order they ran (borrowed, not changed) into *series.
 * n = 0 gives all zeros; one step is steady (nothing to compare it with). PL_ENOMEM
 * (with `err`, which may be NULL) when a copy of the times cannot be allocated. */
pl_status pl_series_examine(const double *times, int n, pl_series *series, pl_error *err);

/* What pl_executor_measure measured. */
typedef struct pl_measurement {
    int warmup, steps;  /* warm-up steps, then measured steps per round */
    int rounds;         /* rounds run, 1 to PL_MEASURE_MAX_ROUNDS */
    int round;          /* the round reported, from 1 */
    pl_series series;   /* that round's step times, examined: series.median is the step */
    double round_median[PL_MEASURE_MAX_ROUNDS]; /* every round's, [rounds] */
    bool round_unstable[PL_MEASURE_MAX_ROUNDS];
    pl_machine_load round_load[PL_MEASURE_MAX_ROUNDS]; /* how busy the machine was */
    pl_machine_load load; /* during the round reported */
    float last_loss;
} pl_measurement;

/* Measures the executor's plan by the protocol above. Parameters train as the steps run.
 * PL_EINPUT when `steps` < 1 or there is no plan; an interrupted step ends it:
 * PL_EINTERRUPTED, nothing measured. */
pl_status pl_executor_measure(pl_executor *executor, int warmup, int steps,
                              pl_measurement *measurement, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
