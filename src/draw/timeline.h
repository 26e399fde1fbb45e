/* A training step in time, drawn as SVG: what each device and link did, when, and where
 * the pipeline stood idle.
 *
 * The drawing has one row per device of the cluster and one per declared link the program
 * copies over ("dev0 → dev1"), in that order; each task of the step program (program.h)
 * is a bar on its resource's row from its start to its end, coloured by phase (forward,
 * backward, update, copy; odd micro-batches a lighter shade of their phase), with a
 * tooltip (<title>) naming the model's op, or the tensor a copy carries, its micro-batch
 * and its duration. Idle time is the gaps between bars. Below the rows, a time axis in
 * milliseconds with ticks; right of them, the share of the step each row was busy; on top,
 * the caller's title followed by the step time, and a key of the colours. Every task is
 * drawn, however short (a bar is at least a fraction of a pixel wide: its tooltip has the
 * true times), and a bar carries its name only when the name fits inside it, so a step of
 * thousands of tasks stays readable; the picture widens with the busiest row's task count,
 * within bounds. Names (op, tensor, device, title) are XML-escaped, control characters
 * replaced: the output is standalone SVG 1.1 in UTF-8.
 *
 * The times come from whoever ran the step: the simulator (simulate.h: pl_simulate's
 * `starts` and `ends`) or the executor's last step (executor.h: pl_executor_task_starts
 * and pl_executor_task_ends), both in seconds from the step's start, indexed as the
 * program's tasks. This module computes none of them.
 *
 * Everything is borrowed; nothing is kept after the call. Re-entrant: calls on different
 * outputs may run on several threads at once. The library never prints. */
#ifndef PLACER_TIMELINE_H
#define PLACER_TIMELINE_H

#include <stdio.h>

#include "cluster.h"
#include "error.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the timeline of one step of `program` (whose graph names the ops) on `cluster`
 * (the one the program was compiled for: it names the devices) to `out`, which the caller
 * owns and keeps open.
 *
 * `starts[i]` and `ends[i]` are task i's times in seconds from the step's start: finite,
 * 0 <= start <= end, else PL_EINPUT naming the task, with nothing written.
 * `step_seconds` is the step's time as the caller knows it (the simulation's
 * step_seconds, the executor's pl_executor_step_seconds, which may end a little after
 * the last task); 0 or less (or not finite): the last task's end. The axis covers the step and every task.
 * `title` (NULL: the model's name) heads the picture; " — step 12.345 ms" follows it.
 *
 * PL_EINPUT for a cluster whose device count is not the program's; PL_EIO when writing
 * failed; PL_ENOMEM. */
pl_status pl_timeline_write(const pl_program *program, const pl_cluster *cluster,
                            const double *starts, const double *ends, double step_seconds,
                            const char *title, FILE *out, pl_error *err);

/* The same into the file at `path`, by placer's output rules (docs/outputs.md: replaced
 * atomically, links followed, a device or FIFO or "-" written directly): on any failure
 * the target is as it was. Errors as pl_timeline_write's, and PL_EIO naming the path
 * when it cannot be written. */
pl_status pl_timeline_write_file(const char *path, const pl_program *program,
                                 const pl_cluster *cluster, const double *starts,
                                 const double *ends, double step_seconds, const char *title,
                                 pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
