/* The step-time simulator: replays a program (program.h) as the executor runs it, with
 * task times from the cost model, thousands of times faster than running it.
 *
 * Same semantics as the executor: each device and link runs one task at a time and, of
 * its ready tasks, always the first in program order; a task is ready when every task it
 * depends on has finished, plus a hand-off when one of them ran elsewhere and its own
 * resource is idle (cost_model.h: polling, asleep, or a thread that never polls); copies
 * on one declared link or port (cluster.h) serialise, a native copy runs on its source
 * device. A paced
 * task's delays depend on how many other resources compute natively at the moment they
 * arise (cost_model.h), which the replay knows: a task computes from its start for its
 * native work (a native device's throughout), then waits for its held time. A step starts
 * with the caller releasing the first tasks and ends with the last task waking the
 * caller. Memory is the program's: the same peaks, the same out-of-memory device.
 *
 * Re-entrant: every call has its own scratch, so the search may simulate candidates on
 * several threads at once. */
#ifndef PLACER_SIMULATE_H
#define PLACER_SIMULATE_H

#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_simulation {
    double step_seconds;
    double critical_path_seconds;        /* the longest chain of dependent task times */
    double busy_seconds[PL_MAX_DEVICES]; /* per device: the time its tasks take */
    int64_t memory[PL_MAX_DEVICES];      /* per device: its peak (program.h) */
    int oom_device;                      /* the first device that does not fit, or -1 */
    int n_copies;
    int64_t copy_bytes;                  /* over every link, one step */
} pl_simulation;

/* Simulates one step. `starts` and `ends` (may be NULL) receive each task's times in
 * seconds from the step's start. A program that does not fit is simulated all the same;
 * `oom_device` says so. */
pl_status pl_simulate(const pl_program *program, const pl_cluster *cluster,
                      const pl_cost_model *model, pl_simulation *result, double *starts,
                      double *ends, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
