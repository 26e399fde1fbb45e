/* Fitting the paced delays (cost_model.h) to what the executor's timelines showed
 * (calibrate_executor.c): a mean at each contention level, and where no kernel holds a core
 * a plane in the threads busy and the threads the step uses. */
#include <string.h>

#include "calibrate_impl.h"
#include "linear.h"

/* A level with fewer samples takes the level below's: a mean of a few heavy-tailed
 * delays is noise. */
enum { ENOUGH = 30, IDLE = 1, PACING = 2, TERMS = 1 + PL_SHARING_TERMS };

/* The mean of delays, never below 0 (none: 0). */
static double mean_of(const double *seconds, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += seconds[i];
    return n > 0 && sum > 0 ? sum / n : 0;
}

/* Where no kernel holds a core, the paced threads take turns on the cores: a delay grows
 * with the other threads busy (B, none at the idle level) and the other threads the step
 * uses (U, woken and put to sleep around it). Least squares over both levels' samples of
 * c + per_busy B + per_used U + per_both B U: c into levels[IDLE] and levels[PACING], the
 * rest into sharing; with c = 0 when it comes out negative. A slight ridge keeps the terms
 * the samples never vary at 0. */
static bool fit_sharing(const delay_samples *by_level, double *levels, double *sharing)
{
    double a[TERMS * TERMS] = {0}, b[TERMS] = {0}, x[TERMS] = {0};
    for (int level = IDLE; level <= PACING; level++) {
        const delay_samples *s = &by_level[level];
        for (int i = 0; i < s->n; i++) {
            double busy = level == IDLE ? 0 : s->busy[i], used = s->used[i];
            double row[TERMS] = {1, busy, used, busy * used};
            for (int j = 0; j < TERMS; j++) {
                b[j] += row[j] * s->seconds[i];
                for (int k = 0; k < TERMS; k++)
                    a[j * TERMS + k] += row[j] * row[k];
            }
        }
    }
    for (int j = 1; j < TERMS; j++)
        a[j * TERMS + j] += 1e-9 * (a[j * TERMS + j] + a[0]);
    /* the same system without c, for when c comes out negative */
    enum { SLOPES = TERMS - 1 };
    double slopes_a[SLOPES * SLOPES], slopes_b[SLOPES];
    for (int j = 0; j < SLOPES; j++) {
        slopes_b[j] = b[j + 1];
        for (int k = 0; k < SLOPES; k++)
            slopes_a[j * SLOPES + k] = a[(j + 1) * TERMS + k + 1];
    }
    if (!pl_solve_linear(a, b, TERMS, x))
        return false;
    if (x[0] < 0) {
        x[0] = 0;
        if (!pl_solve_linear(slopes_a, slopes_b, SLOPES, x + 1))
            return false;
    }
    levels[IDLE] = levels[PACING] = x[0];
    memcpy(sharing, x + 1, PL_SHARING_TERMS * sizeof *sharing);
    return true;
}

/* One delay's levels, each its mean. `contended`, a wait for a core (all but the
 * hand-off): no level falls below the one before, as more contention never shortens such
 * a wait, and with enough samples where no kernel holds a core the plane (fit_sharing)
 * replaces the means there. A hand-off, whose wake-up is slowest on an idle machine (the
 * woken thread's core has halted), keeps the means alone. Returns whether the plane was
 * fitted. */
static bool fit_levels(const delay_samples *by_level, double *levels, double *sharing,
                       bool contended)
{
    memset(sharing, 0, PL_SHARING_TERMS * sizeof *sharing);
    bool plane = contended && by_level[IDLE].n >= ENOUGH && by_level[PACING].n >= ENOUGH &&
                 fit_sharing(by_level, levels, sharing);
    for (int k = 0; k < PL_COST_CONTENTION; k++) {
        if (plane && (k == IDLE || k == PACING))
            continue;
        double below = k > 0 ? levels[k - 1] : 0;
        double mean = by_level[k].n >= ENOUGH || k == 0
                          ? mean_of(by_level[k].seconds, by_level[k].n) : below;
        levels[k] = mean > below || !contended ? mean : below;
    }
    return plane;
}

/* The gap to a queued next task: fit_levels over the gaps after tasks that woke no other
 * queue; and the cost of each wake-up call, the mean excess of the other gaps over what
 * those levels give, per call. */
static void fit_gaps(pl_cost_model *m, const delay_samples *by_level)
{
    delay_samples plain[PL_COST_CONTENTION] = {{0}};
    double excess = 0, calls = 0;
    for (int k = 0; k < PL_COST_CONTENTION; k++)
        for (int i = 0; i < by_level[k].n; i++)
            if (by_level[k].calls[i] == 0 &&
                !pl_calib_add_delay(&plain[k], by_level[k].seconds[i], by_level[k].busy[i],
                                    by_level[k].used[i], 0))
                break; /* out of memory: fewer samples */
    fit_levels(plain, m->paced_delays[PL_DELAY_NEXT], m->paced_sharing[PL_DELAY_NEXT], true);
    for (int k = 0; k < PL_COST_CONTENTION; k++) {
        for (int i = 0; i < by_level[k].n; i++)
            if (by_level[k].calls[i] > 0) {
                excess += by_level[k].seconds[i] -
                          pl_cost_delay(m, PL_DELAY_NEXT, k, by_level[k].busy[i],
                                        by_level[k].used[i]);
                calls += by_level[k].calls[i];
            }
        pl_calib_free_delays(&plain[k]);
    }
    m->paced_signal_seconds = calls > 0 && excess > 0 ? excess / calls : 0;
}

void pl_calib_fit_delays(pl_cost_model *m, delay_samples by_level[PL_DELAY_COUNT][PL_COST_CONTENTION],
                         const samples *finish)
{
    /* means: these delays add up along a step, the rare long ones included */
    bool plane[PL_DELAY_COUNT] = {false};
    for (int d = 0; d < PL_DELAY_COUNT; d++)
        if (d != PL_DELAY_NEXT)
            plane[d] = fit_levels(by_level[d], m->paced_delays[d], m->paced_sharing[d],
                                  d != PL_DELAY_HANDOFF);
    /* An op the pacer slept through spins its last moments too: never less late. Short
     * ops seldom sleep, so where its own plane could not be fitted it takes the spun one. */
    double *slept = m->paced_delays[PL_DELAY_SLEPT], *spun = m->paced_delays[PL_DELAY_SPUN];
    if (!plane[PL_DELAY_SLEPT] && plane[PL_DELAY_SPUN]) {
        slept[IDLE] = spun[IDLE];
        slept[PACING] = spun[PACING];
        memcpy(m->paced_sharing[PL_DELAY_SLEPT], m->paced_sharing[PL_DELAY_SPUN],
               sizeof m->paced_sharing[PL_DELAY_SLEPT]);
    }
    for (int k = 0; k < PL_COST_CONTENTION; k++)
        if (k != IDLE && k != PACING && slept[k] < spun[k])
            slept[k] = spun[k];
    fit_gaps(m, by_level[PL_DELAY_NEXT]);
    m->paced_finish_seconds = mean_of(finish->seconds, finish->n);
}
