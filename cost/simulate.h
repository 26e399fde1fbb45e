/* The step-time simulator: replays a program (program.h) as the executor runs it, with
 * task times from the cost model, thousands of times faster than running it.
 *
 * Same semantics as the executor: each device and link runs one task at a time and, of
 * its ready tasks, always the first in program order; a task is ready when every task it
 * depends on has finished, plus a hand-off when one of them ran elsewhere and its own
 * resource is idle (cost_model.h: polling, asleep, or a thread that never polls); copies
 * on one declared link serialise, a native copy runs on its source device. A step starts
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

/* A lower bound on any plan's step for a training graph on a cluster. A plan cuts the
 * batch into micro-batches of one size; at each size a plan may choose, the larger of
 * - one micro-batch's critical path (every op on its fastest device, free communication),
 * - the step's work, each op on its fastest device, spread evenly over every device,
 * - the heaviest co-location group's work, since a group runs on one device, and
 * - for each update, its ancestors' work (spread over every device, or the heaviest
 *   group's share of it) and then the update, which waits for every micro-batch;
 * and the least of those over the sizes. Each op's time is as pl_simulate takes it (on a
 * paced device with the pacer's lateness), so no plan simulates faster than the bound.
 * The memory capacities are not used: the bound stays valid, if looser, for models that
 * must be split to fit. */
pl_status pl_step_lower_bound(const pl_graph *graph, const pl_cluster *cluster,
                              const pl_cost_model *model, double *seconds, pl_error *err);

#endif
