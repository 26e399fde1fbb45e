/* What the parts of calibration share (calibrate.c measures ops and copies and fits
 * them; calibrate_executor.c reads the executor's own costs from its timelines). */
#ifndef PLACER_CALIBRATE_IMPL_H
#define PLACER_CALIBRATE_IMPL_H

#include "calibrate.h"
#include "executor.h"
#include "stats.h"

/* Samples of one op kind: seconds against FLOPs and bytes. */
typedef struct samples {
    double *seconds, *flops, *bytes;
    int n, cap;
} samples;

/* A model's training graph, its executor, and a plan to set. */
typedef struct workload {
    pl_graph *g;
    pl_executor *ex;
    pl_plan *plan;
    const volatile sig_atomic_t *interrupt; /* checked before each step; may be NULL */
} workload;

bool pl_calib_add_sample(samples *s, double seconds, double flops, double bytes);
void pl_calib_free_samples(samples *s);

/* Paced delays filed at one contention level: each one's seconds, the other threads busy
 * then and the other threads its step uses, and (a gap to a queued next task) the wake-up
 * calls its thread made first. */
typedef struct delay_samples {
    double *seconds;
    int *busy, *used, *calls;
    int n, cap;
} delay_samples;

bool pl_calib_add_delay(delay_samples *s, double seconds, int busy, int used, int calls);
void pl_calib_free_delays(delay_samples *s);

/* Fits the native copy curve (cost_model.h) to copies' seconds against bytes: in each
 * range of sizes a factor of 4 wide with at least 3 copies, the median size and the median
 * time, times made not to fall with size; with fewer than two such ranges, a line fitted
 * to them all. */
void pl_calib_fit_copies(pl_cost_model *m, const samples *copies);

/* A cluster of `n` devices of `threads` threads; flops > 0: paced at that rate;
 * first_core >= 0: device d of one thread on core first_core + d when the machine has the
 * cores (such devices poll, cluster.h), else unpinned. */
pl_cluster *pl_calib_cluster(int n, int threads, double flops, int first_core, pl_error *err);

/* A model's training graph at `batch` (0: its own), its executor on `cluster` with a plan
 * of everything on device 0 (not yet set), inputs filled with synthetic data; `interrupt`
 * (may be NULL) stops its steps. */
pl_status pl_calib_open(workload *w, const char *path, int batch, const pl_cluster *c,
                        const volatile sig_atomic_t *interrupt, pl_error *err);
/* One step, or PL_EINTERRUPTED when the interrupt flag is set. */
pl_status pl_calib_step(workload *w, long long step, pl_error *err);
void pl_calib_close(workload *w);
/* One warm-up and `steps` measured steps; times[i * steps + s] is task i's duration. */
pl_status pl_calib_run_steps(workload *w, int steps, double **times, pl_error *err);

/* signature.c: how much two passes over the same ops disagree. For each signature both
 * passes timed (its lower median in each, as the profile keeps), |first / second - 1|
 * into spread (room for n_first), leaving out ops that took under min_seconds in both.
 * Sorts both passes in place; returns how many it wrote. */
int pl_calib_pass_spread(pl_op_time *first, int n_first, pl_op_time *second, int n_second,
                         double min_seconds, double *spread);

/* calibrate_executor.c: what the timelines show. */
typedef struct gaps {
    samples task;    /* between a device's tasks, the next one already ready */
    samples handoff; /* from a task's release by another resource to its start: a
                        resource that never polls (paced devices) */
    samples poll;    /* the same, on a polling device idle less than the poll window */
    samples wake;    /* and on one idle longer: asleep */
    /* paced runs: each delay (cost_model.h) by the contention when it arose */
    delay_samples delay[PL_DELAY_COUNT][PL_COST_CONTENTION];
    samples finish; /* from the last paced task's end to the step's */
    samples copy;    /* native copies: seconds against bytes */
    /* polling runs, devices on cores of their own: op tasks' times (seconds) against
     * their profiled ones (flops) with the bytes of their inputs the other device copied
     * in (bytes; remote) or none (local) */
    samples remote, local;
} gaps;

/* Small models of DIR/small and full-size ones of DIR dealt to two native devices: the
 * per-task gap and the hand-off to a sleeping thread (small models, devices not pinned);
 * the hand-offs to a polling device and to one asleep past its poll window, the copies,
 * the per-task gap there, and the ops' times with and without inputs the other device
 * copied in against m's (every model, devices pinned to cores of their own when the
 * machine has them). */
pl_status pl_calib_overheads(const char *dir, int steps, const pl_cost_model *m,
                             const volatile sig_atomic_t *interrupt,
                             gaps *g, pl_error *err);
/* The remote inputs' term (cost_model.h): the median of the remote ops' times less their
 * profiled ones scaled by the local ops' median ratio (their pace in those runs, the other
 * core computing beside them), over ops profiled under 50 us; 0 if that is negative. */
void pl_calib_fit_remote_inputs(pl_cost_model *m, const gaps *g);
/* The paced delays (cost_model.h) by the threads computing when each arose, read from
 * four paced devices sharing the machine's cores as paced-4's do: lstm_lm and transformer
 * pipelined (long ops, kernels holding cores), small models dealt round-robin (short ops,
 * many copies and hand-offs); `m` gives the tasks' native times. */
pl_status pl_calib_paced_lateness(const char *dir, int steps, const pl_cost_model *m,
                                  const volatile sig_atomic_t *interrupt, gaps *g, pl_error *err);

/* calibrate_together.c: each of `models` (paths) at its batch and half of it, run on two
 * native devices at once, one on each of cores 0 and 1: every op kind's factor over its
 * time alone (`m`'s measured times, one thread) into m->ops[1][kind].together, and over
 * every kind into m->ops[1][PL_OP_COUNT]. Nothing on a machine of one core. */
pl_status pl_calib_together(pl_cost_model *m, char *const *models, int n_models, int steps,
                            const volatile sig_atomic_t *interrupt, pl_error *err);

/* calibrate_delays.c: fits the model's paced delays (cost_model.h) to their samples and
 * the step's finish. */
void pl_calib_fit_delays(pl_cost_model *m, delay_samples by_level[PL_DELAY_COUNT][PL_COST_CONTENTION],
                         const samples *finish);

#endif
