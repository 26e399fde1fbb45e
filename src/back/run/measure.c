/* The measurement protocol (measure.h): a series of step times examined for two modes and
 * for drift, and the executor's measurement in rounds until a series is steady. */
#include "measure.h"

#include <math.h>
#include <stdlib.h>

#include "stats.h"

/* A step time and when it ran, to sort by time and still know the order. */
typedef struct timed {
    double seconds;
    int index;
} timed;

static int compare_timed(const void *a, const void *b)
{
    const timed *x = a, *y = b;
    return (x->seconds > y->seconds) - (x->seconds < y->seconds);
}

/* The widest gap between consecutive sorted times with enough steps on each side. */
static void find_modes(const double *sorted, int n, pl_series *s)
{
    int side = (int)ceil(PL_SERIES_MODE_SHARE * n - 1e-9);
    side = side < 1 ? 1 : side;
    double widest = 0;
    int below = 0; /* steps below the widest gap */
    for (int i = side - 1; i + side < n; i++) {
        double ratio = sorted[i] > 0 ? sorted[i + 1] / sorted[i] : 0;
        if (ratio > widest) {
            widest = ratio;
            below = i + 1;
        }
    }
    s->low_mode = s->high_mode = s->median;
    if (widest > PL_SERIES_GAP_RATIO) {
        double low[2] = {sorted[(below - 1) / 2], sorted[below / 2]};
        int above = n - below;
        const double *high = sorted + below;
        s->bimodal = true;
        s->low_steps = below;
        s->low_mode = 0.5 * (low[0] + low[1]);
        s->high_mode = 0.5 * (high[(above - 1) / 2] + high[above / 2]);
    }
}

/* Spearman's rho of the times (sorted, with their indices) against their index: ties get
 * their mean rank. */
static double rank_correlation(const timed *by_time, int n)
{
    if (n < 3)
        return 0;
    double mean = 0.5 * (n - 1), covariance = 0, rank_variance = 0, index_variance = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && by_time[j + 1].seconds == by_time[i].seconds)
            j++;
        double rank = 0.5 * (i + j);
        for (int k = i; k <= j; k++) {
            covariance += (rank - mean) * (by_time[k].index - mean);
            rank_variance += (rank - mean) * (rank - mean);
            index_variance += (by_time[k].index - mean) * (by_time[k].index - mean);
        }
        i = j + 1;
    }
    return rank_variance > 0 ? covariance / sqrt(rank_variance * index_variance) : 0;
}

/* The median of the steps with index in [first, last), from the times sorted with their
 * indices; `scratch` holds last - first times. */
static double median_of_steps(const timed *by_time, int n, int first, int last, double *scratch)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (by_time[i].index >= first && by_time[i].index < last)
            scratch[k++] = by_time[i].seconds; /* in ascending order already */
    return k % 2 ? scratch[k / 2] : 0.5 * (scratch[k / 2 - 1] + scratch[k / 2]);
}

static void find_drift(const timed *by_time, int n, double *scratch, pl_series *s)
{
    s->correlation = rank_correlation(by_time, n);
    if (n < PL_SERIES_DRIFT_MIN_STEPS || !(s->median > 0))
        return;
    int third = n / 3;
    double first = median_of_steps(by_time, n, 0, third, scratch);
    double last = median_of_steps(by_time, n, n - third, n, scratch);
    s->drift = (last - first) / s->median;
    s->drifting = fabs(s->drift) > PL_SERIES_DRIFT &&
                  fabs(s->correlation) >= PL_SERIES_DRIFT_CORRELATION;
}

pl_status pl_series_examine(const double *times, int n, pl_series *s, pl_error *err)
{
    *s = (pl_series){.steps = n};
    if (n <= 0)
        return PL_OK;
    timed *by_time = malloc((size_t)n * sizeof *by_time);
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!by_time || !sorted) {
        free(by_time);
        free(sorted);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory examining %d step times", n);
    }
    for (int i = 0; i < n; i++)
        by_time[i] = (timed){times[i], i};
    qsort(by_time, (size_t)n, sizeof *by_time, compare_timed);
    for (int i = 0; i < n; i++)
        sorted[i] = by_time[i].seconds;
    pl_stats stats = pl_stats_of(sorted, n); /* sorted already: stays as it is */
    s->median = stats.median;
    s->min = stats.min;
    s->max = stats.max;
    s->q1 = pl_quantile(sorted, n, 0.25);
    s->q3 = pl_quantile(sorted, n, 0.75);
    if (s->median > 0) {
        s->spread = (s->max - s->min) / s->median;
        s->iqr_spread = (s->q3 - s->q1) / s->median;
    }
    find_modes(sorted, n, s);
    find_drift(by_time, n, sorted, s);
    s->unstable = s->bimodal || s->drifting;
    free(by_time);
    free(sorted);
    return PL_OK;
}

/* One round: `steps` measured steps into `times`. */
/* One step; PL_EINTERRUPTED once the interrupt flag is up (executor.h): a native step
 * is not cut short, so a measurement stops between steps (among ranks, all at one). */
static pl_status step_once(pl_executor *ex, float *loss, pl_error *err)
{
    pl_status status = pl_executor_step(ex, pl_executor_steps_run(ex) + 1, loss, err);
    if (status == PL_OK && pl_executor_interrupted(ex))
        status = pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted");
    return status;
}

static pl_status run_round(pl_executor *ex, int steps, double *times, float *loss,
                           pl_error *err)
{
    for (int i = 0; i < steps; i++) {
        pl_status status = step_once(ex, loss, err);
        if (status != PL_OK)
            return status;
        times[i] = pl_executor_step_seconds(ex);
    }
    return PL_OK;
}

pl_status pl_executor_measure(pl_executor *ex, int warmup, int steps, pl_measurement *m,
                              pl_error *err)
{
    if (steps < 1)
        return pl_error_set(err, PL_EINPUT, NULL, "measure at least one step, not %d", steps);
    *m = (pl_measurement){.warmup = warmup, .steps = steps};
    double *times = malloc((size_t)steps * sizeof *times);
    if (!times)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = PL_OK;
    for (int i = 0; i < warmup && status == PL_OK; i++)
        status = step_once(ex, &m->last_loss, err);
    pl_series rounds[PL_MEASURE_MAX_ROUNDS];
    while (status == PL_OK && m->rounds < PL_MEASURE_MAX_ROUNDS &&
           (m->rounds == 0 || rounds[m->rounds - 1].unstable)) {
        pl_machine_cpu before = pl_machine_load_read();
        status = run_round(ex, steps, times, &m->last_loss, err);
        pl_machine_cpu after = pl_machine_load_read();
        m->round_load[m->rounds] = pl_machine_load_between(&before, &after);
        if (status == PL_OK)
            status = pl_series_examine(times, steps, &rounds[m->rounds], err);
        if (status == PL_OK) {
            m->round_median[m->rounds] = rounds[m->rounds].median;
            m->round_unstable[m->rounds] = rounds[m->rounds].unstable;
            m->rounds++;
        }
    }
    free(times);
    if (status != PL_OK)
        return status;
    /* the last round when it is steady (it ended the rounds), else the tightest */
    int best = m->rounds - 1;
    for (int r = 0; r < m->rounds && rounds[m->rounds - 1].unstable; r++)
        if (rounds[r].iqr_spread < rounds[best].iqr_spread)
            best = r;
    m->round = best + 1;
    m->series = rounds[best];
    m->load = m->round_load[best];
    return PL_OK;
}
