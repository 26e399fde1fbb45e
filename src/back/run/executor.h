/* The multi-device executor: runs a training graph placed by a plan on a cluster, for
 * real, and measures it.
 *
 * Each device is a worker pool (pool.h) driven by its own thread, with its own memory
 * arena. A copy over a native link (a memcpy, which a core does) runs on its source
 * device's thread; each declared (paced) link that a plan copies over has a thread of its
 * own. Either copies tensors into the destination device's arena. A native device that
 * owns its cores polls briefly for its next task before it sleeps. A step runs the plan's
 * program (program.h): every device and link takes, of its tasks that are ready, the
 * first in program order, so a step computes exactly what the program order computes.
 * Devices and links that declare a throughput are paced: a kernel or copy is held until
 * its modelled time has passed, never released early.
 *
 * Parameters, state, constants and inputs live in host buffers, one per tensor, for the
 * executor's life; they count against the memory of the device that holds them (inputs
 * and constants: every device that reads them). Switching plans keeps the threads, the
 * host buffers and the arenas (grown when needed), so the placement search can measure
 * many plans in one process.
 *
 * Interrupts: a paced wait can be long (a kernel of a 1000 FLOP/s device holds its thread
 * for minutes). Given an interrupt flag (pl_executor_set_interrupt), every paced wait
 * checks it at least every PL_EXECUTOR_POLL_MS and, once it is set, ends: the step's
 * kernels and copies still all run, so its results and the parameters it updates are
 * those of a whole step, but nothing more is held to its modelled time, and the step
 * returns PL_EINTERRUPTED (its times measure nothing).
 *
 * Not thread-safe: one caller drives an executor. */
#ifndef PLACER_EXECUTOR_H
#define PLACER_EXECUTOR_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "comm.h"
#include "error.h"
#include "graph.h"
#include "plan.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_executor pl_executor;

/* `graph` is a training graph (autodiff.h) and `cluster` its devices, both borrowed for
 * the executor's life. `host`: NULL, and the executor allocates and initialises every
 * parameter, state, constant and input; or host[t] for each such tensor t (a session's
 * buffers, laid out for the full batch), borrowed. */
pl_executor *pl_executor_new(const pl_graph *graph, const pl_cluster *cluster,
                             void *const *host, pl_error *err);
/* Frees the executor and stops its threads; NULL: a no-op. Once its processes have failed
 * (comm.h) it is kept as it is, memory and threads, since MPI may still use its buffers: the
 * process is to end (MPI_Abort). */
void pl_executor_free(pl_executor *executor);

/* An executor as pl_executor_new(graph, cluster, NULL, err) makes it, its inputs holding
 * the first training batch of `data_path` (data.h: a Fashion-MNIST directory, a text file
 * or "synthetic"; NULL chooses by the model), for measuring plans: every step reuses the
 * batch, since the data do not change a step's time. NULL with `err` filled in. */
pl_executor *pl_executor_new_with_data(const pl_graph *graph, const pl_cluster *cluster,
                                       const char *data_path, pl_error *err);

/* Runs the executor as one rank of the cluster's processes (comm.h), before its first
 * plan: this process runs the tasks of its own devices and sends and receives what
 * crosses to the others. Every rank then calls pl_executor_set_plan, pl_executor_step
 * and pl_executor_sync_host together, with the same arguments (they are collective). A
 * step's time is the slowest rank's, and its timeline and losses are every rank's.
 * PL_EINPUT when the cluster's ranks (n_ranks) are not the processes started. */
pl_status pl_executor_set_comm(pl_executor *executor, pl_comm *comm, pl_error *err);

/* Rather than every rank making the same calls, rank 0 may lead (the placement search,
 * which decides on the way which plan to measure next): once rank 0 leads, its calls of
 * pl_executor_set_plan, pl_executor_step and pl_executor_sync_host are sent to the other
 * ranks, which follow in pl_executor_follow until rank 0 frees its executor. Follow
 * returns PL_OK then, or the first error. Only rank 0 leads; only the others follow. */
pl_status pl_executor_lead(pl_executor *executor, pl_error *err);
pl_status pl_executor_follow(pl_executor *executor, pl_error *err);

enum { PL_EXECUTOR_POLL_MS = 50 }; /* how often a paced wait checks the flag */

/* The flag (a signal handler's, say; NULL: none) that ends paced waits early, borrowed
 * for the executor's life; read by the executor's threads, set by anyone. */
void pl_executor_set_interrupt(pl_executor *executor, const volatile sig_atomic_t *interrupt);
/* Whether to stop for an interrupt. In one process: whether the flag is set. Among
 * processes, a decision the ranks take together, so that all stop at the same step: every
 * step combines every rank's flag (as it stood when that rank's part of the step ended),
 * and from the first step at which one was set this is true on every rank; a follower
 * also learns it from its leader's end (pl_executor_follow). Before that it is false,
 * whatever this rank's flag says. */
bool pl_executor_interrupted(const pl_executor *executor);

/* Whether a plan fits: when it does not, the first device that overflows, what it would
 * need (its peak) and its capacity. */
typedef struct pl_fit {
    bool fits;
    int device;
    int64_t need, capacity;
} pl_fit;

/* Switches to `plan` (checked against graph and cluster: PL_EINPUT when wrong). A plan
 * that does not fit a device's memory is a result, not an error: PL_OK with fit->fits
 * false, and the executor has no plan until one that fits is set. A replicated plan's
 * further copies of the parameters and state (program.h) are made from their storage
 * (pl_executor_data) at the first step after: load weights before it. */
pl_status pl_executor_set_plan(pl_executor *executor, const pl_plan *plan, pl_fit *fit,
                               pl_error *err);
/* The current plan's program, or NULL. */
const pl_program *pl_executor_program(const pl_executor *executor);

/* The host buffer of a parameter, state, constant or input tensor (inputs for the full
 * batch: fill them before a step), made whole first (pl_executor_sync_host). For an
 * input or output of the loss op, its value in the last micro-batch of the last step, on
 * its home device; NULL where a split plan (split_graph.h) never makes it whole. Other
 * activations' memory is reused within a step (program.h): their values are not kept. */
void *pl_executor_data(pl_executor *executor, int t);

/* Makes every host buffer whole: a sharded optimiser state's shards (plan.h), which the
 * replicas keep apart while they step, are copied back (across ranks, gathered). Call it
 * before reading the host buffers another way (a session's checkpoint); setting another
 * plan does it too. PL_EIO when the processes fail (comm.h). */
pl_status pl_executor_sync_host(pl_executor *executor, pl_error *err);

/* One training step: every micro-batch's forward and backward ops, then the updates.
 * *loss gets the mean of the micro-batches' losses. PL_EINPUT without a plan that fits;
 * PL_EINTERRUPTED when the interrupt flag cut its pacing short (the step is done, *loss
 * set, its times not modelled: see Interrupts above). PL_EIO when the processes fail: a
 * peer stopped answering within PLACER_MPI_TIMEOUT (comm.h); every rank that waits on it
 * returns the error, and the executor takes no further plan or step. */
pl_status pl_executor_step(pl_executor *executor, int64_t step, float *loss, pl_error *err);

/* The last step's timeline: its wall-clock seconds, and each task's start and end in
 * seconds from the step's start (indexed as the program's tasks). */
double pl_executor_step_seconds(const pl_executor *executor);
const double *pl_executor_task_starts(const pl_executor *executor);
const double *pl_executor_task_ends(const pl_executor *executor);

/* Steps run since the executor was made (the next step's number, minus one). The
 * measurement protocol that runs steps is in measure.h. */
int64_t pl_executor_steps_run(const pl_executor *executor);

/* The name of device d of the cluster. */
const char *pl_executor_device_name(const pl_executor *executor, int d);
/* Whether some device or link is paced (cluster.h). */
bool pl_executor_paced(const pl_executor *executor);
/* The threads that compute at once (every device's pool) against the machine's cores:
 * more threads than cores make the measurement share cores. */
int pl_executor_threads(const pl_executor *executor);

/* Writes the last step's timeline as Chrome/Perfetto trace-event JSON (one row per device
 * and per link, tasks named by op or tensor and micro-batch), atomically. */
pl_status pl_executor_write_trace(const pl_executor *executor, const char *path,
                                  pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
