/* Calibration: measures this machine with the executor itself and fits the cost model.
 *
 * - Ops: every model of a directory (its .json files and those of its small/ and
 *   calibration/: models of shapes the others lack, measured for the fits alone) runs on
 *   one device of T threads at its batch, half, a quarter and an eighth of it; each op's
 *   time (the median over the measured steps) is a sample of its kind, and of its kernel's
 *   route, at that size.
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

#include "comm.h"
#include "cost_model.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* When a calibration counts as noisy (pl_calibration_noisy, cost_model.h; docs/simulator.md
 * gives the figures they were chosen from): the 90th percentile over the ops of their spread
 * between the two passes, |t1 / t2 - 1|, exceeds PL_CALIBRATION_SPREAD_THRESHOLD; or other
 * work took more than PL_CALIBRATION_OTHERS_THRESHOLD of the machine's CPU time meanwhile
 * (a steady load slows both passes alike, so they agree). Ops under
 * PL_CALIBRATION_MIN_SECONDS in both passes are left out (the clock and a single interrupt
 * decide their spread), and with fewer than PL_CALIBRATION_MIN_COMPARED ops left the spread
 * is not judged. */
#define PL_CALIBRATION_SPREAD_THRESHOLD 0.4
#define PL_CALIBRATION_OTHERS_THRESHOLD 0.75
#define PL_CALIBRATION_MIN_SECONDS 100e-6
enum { PL_CALIBRATION_MIN_COMPARED = 30 };

typedef struct pl_calibration {
    const char *graphs_dir; /* the models to measure: DIR, DIR/small and DIR/calibration */
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

/* Whether a calibration was noisy (above), by the thresholds recorded with it. */
bool pl_calibration_noisy(const pl_calibration_record *record);

/* Overwrites `model` (release it with pl_cost_model_clear); on failure or interrupt it
 * holds nothing to release. Fills model->calibration: when, how long, how noisy (one
 * attempt: re-measuring a noisy calibration is the profile's, profile.h). */
pl_status pl_cost_calibrate(pl_cost_model *model, const pl_calibration *how, pl_error *err);

/* The ops of the models at `paths` (a model the user places), measured as the suite's are
 * (at its batch, a half, a quarter and an eighth of it, in two passes, for each of `how`'s
 * thread counts) and added to `model`'s measured op configurations, replacing any it had:
 * the simulator then takes their times instead of the kinds' fits, which stay the suite's.
 * *added counts the configurations the model lacked. */
pl_status pl_cost_calibrate_models(pl_cost_model *model, char *const *paths, int n_paths,
                                   const pl_calibration *how, int *added, pl_error *err);

/* A transfer between ranks, measured: `bytes` sent from rank 0 to rank 1 and back through
 * the comm (pl_comm_ping_pong) at sizes from 4 KiB to 16 MiB, the one-way median of each
 * fitted as process_seconds + process_per_byte * bytes, on every rank's model. Collective:
 * every rank of `comm` calls it (with one rank it measures nothing). */
pl_status pl_calibrate_processes(pl_cost_model *model, pl_comm *comm, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
