/* Calibration: measures this machine with the executor itself and fits the cost model.
 *
 * - Ops: every model of a directory (its .json files and those of its small/) runs on one
 *   device of T threads at its batch, half, a quarter and an eighth of it; each op's time
 *   (the median over the measured steps) is a sample of its kind at that size.
 * - Copies: the executor's own copies between two native devices (a memcpy by the source
 *   device's thread), of small and full-size models dealt to them: bytes to megabytes.
 * - The executor's own costs, read from the timelines of small models placed on two native
 *   devices: the gap between a device's tasks (per-task overhead) and the delay of a task
 *   released from another device (a sleeping thread waking); and how late paced tasks end.
 *
 * It takes tens of seconds; `placer calibrate` caches the result (profile.h). */
#ifndef PLACER_CALIBRATE_H
#define PLACER_CALIBRATE_H

#include <signal.h>

#include "cost_model.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_calibration {
    const char *graphs_dir; /* the models to measure: DIR and DIR/small */
    const int *threads;     /* the thread counts to measure; NULL: {1} */
    int n_threads;
    int steps;              /* measured steps per model and batch; 0: 5 */
    /* Called before each model, for progress lines; may be NULL. */
    void (*progress)(void *context, const char *what);
    void *context;
    /* A signal handler's flag, or NULL: once set, calibration stops within a step (a
     * paced one within the executor's poll) with PL_EINTERRUPTED. */
    const volatile sig_atomic_t *interrupt;
} pl_calibration;

/* Overwrites `model` (release it with pl_cost_model_clear); on failure or interrupt it
 * holds nothing to release. */
pl_status pl_cost_calibrate(pl_cost_model *model, const pl_calibration *how, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
