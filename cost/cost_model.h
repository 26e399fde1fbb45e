/* The cost model: how long the executor takes for each task of a program, on this
 * machine, fitted to measurements of the executor itself (cost/calibrate.c).
 *
 * - An op on a native device of T threads takes the time measured for its signature (its
 *   kind, attributes, input and output shapes, and T) when calibration measured one; else
 *   `seconds + per_flop * flops + per_byte * bytes` (FLOPs and bytes read and written at
 *   the micro-batch's shapes), with the three coefficients fitted per op kind and thread
 *   count to every measurement; a kind never measured uses the fit over all kinds. Where
 *   a kind's kernel takes routes of different speed by shape (a convolution's: depthwise,
 *   Winograd, small outputs, ...; kernels.h), each route calibration measured often
 *   enough has a fit of its own, which the kind's ops on that route take.
 * - On native devices on cores of their own, an op reading a buffer another device's
 *   thread copied in that step takes `remote_seconds` longer (the other core's cache).
 * - On a paced device an op takes the larger of that and its FLOPs at the declared rate,
 *   and ends late by a delay (`paced_delays`) that depends on whether its pacer slept or
 *   only spun (cluster.h) and on the contention when it fell due: a paced thread needs a
 *   core at that moment, and a kernel holds one.
 * - A copy over a native link (a memcpy on the source device) takes the time its size
 *   reads off `copy_curve`: the executor's copies measured at sizes a factor of 4 apart,
 *   interpolated (a copy that outgrows the caches runs at half the speed of one that
 *   fits, so no straight line fits both); over a paced link (a thread
 *   of its own, one of many sharing the cores) the larger of that and latency + bytes /
 *   bandwidth, late by the copies' delay, which depends on the contention as an op's
 *   does.
 * - A copy or reduce between devices of two ranks (cluster.h) is a message: its native
 *   time is the measured time of one between ranks of this host (`process_seconds`,
 *   `process_per_byte`), held as a copy over its link is.
 * - A task released by a task on another device or link starts at once when that resource
 *   is busy (it takes the task when free), else after a hand-off: on a native device that
 *   polls (cluster.h) `poll_seconds` while it has been idle less than the poll window,
 *   `wake_seconds` after (its thread sleeps, its core may have halted); on a paced device
 *   or link the paced hand-off delay, by the contention at the release; on a native
 *   device that never polls `handoff_seconds`, a sleeping thread woken. One released on
 *   the same resource starts `task_seconds` later, a paced one after the paced gap delay.
 *
 * - On hardware placer cannot run (cluster.h: pl_hardware), an op without a measured time
 *   for its signature takes its roofline (roofline.h); a copy takes latency + bytes /
 *   bandwidth over its link, a reduce the add after it on the receiving device, and
 *   nothing is paced or late.
 *
 * A profile is keyed by the machine (CPU model, cores, OpenBLAS build, placer version) and
 * is reused until any of them changes. Reading it from several threads is safe; free its
 * measurements with pl_cost_model_clear. */
#ifndef PLACER_COST_MODEL_H
#define PLACER_COST_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "graph.h"
#include "ops.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_COST_FORMAT_VERSION = 15, PL_COST_MAX_THREADS = 16, PL_COST_COPY_POINTS = 16 };
/* A route's fit is made from at least this many samples (else its kind's stands in), and
 * a profile holds at most PL_COST_MAX_ROUTE_FITS of them. */
enum { PL_COST_ROUTE_MIN_SAMPLES = 6, PL_COST_MAX_ROUTE_FITS = 256 };

/* The executor's delays on paced devices and links. Each is a mean (they add up along a
 * step, the rare long ones included) measured by the contention at the moment it arose
 * (pl_cost_contention): whether other devices and links take part in the step, were busy
 * at all, and how many of them were computing natively. Alone, a paced task ends within
 * a microsecond of its time; beside other paced threads that sleep and spin, a few
 * microseconds later, the more so the more threads are busy and the more the step uses
 * (they take turns on the cores, yielding, and are woken and put to sleep around it:
 * `paced_sharing`); with a kernel holding the core the thread wakes on, tens of
 * microseconds later. */
typedef enum pl_delay {
    PL_DELAY_SLEPT,   /* a paced op its pacer slept through: how late it ends */
    PL_DELAY_SPUN,    /* one its pacer only spun through */
    PL_DELAY_COPY,    /* a copy over a paced link: how late it ends */
    PL_DELAY_HANDOFF, /* a task released to an idle paced device or link: till it starts */
    PL_DELAY_NEXT,    /* a paced device's or link's next task, queued already: the gap,
                         plus paced_signal_seconds a task it just handed elsewhere */
    PL_DELAY_COUNT
} pl_delay;
enum { PL_COST_CONTENTION = 5 };
/* Where no kernel holds a core (contention 1 and 2), a delay is its level's value plus
 * these terms: per other thread busy (B), per other thread the step uses (U: devices and
 * links with tasks), per B x U. */
enum { PL_SHARING_BUSY, PL_SHARING_USED, PL_SHARING_BOTH, PL_SHARING_TERMS };
/* A kernel counts as computing (holding a core) for contention while it has at least this
 * much native work left: one about to end frees its core within microseconds. */
#define PL_COST_HOLDING_SECONDS 10e-6
extern const char *const pl_delay_names[PL_DELAY_COUNT + 1]; /* NULL-terminated */

/* The contention level a delay is read at: 0 when the step's tasks all run on one
 * resource (the other threads never wake); else from the other devices and links busy
 * with a task and how many of those compute natively (the rest sleep or spin in their
 * pacer): 1 none busy, 2 busy but none computing, 3 one computing, 4 more. */
int pl_cost_contention(bool alone, int others_busy, int others_computing);

typedef struct pl_op_cost {
    double seconds, per_flop, per_byte;
    int samples; /* 0: not measured */
    /* On a native device: how much longer the kind's ops take while another native device
     * computes, as a factor (1 or more; 0: not measured, taken as 1). Two cores share
     * caches, memory bandwidth and, on a virtual machine, perhaps one physical core. */
    double together;
    double fastest; /* the fastest FLOP rate among its samples (FLOPs a second; 0: not
                       known, as in a model made by hand): the native lower bound's roofline */
    double least;   /* the least of its samples' times over the fit's (0: not known): how
                       far below the fit an op may run */
} pl_op_cost;

/* A native copy of `bytes` takes `seconds`. */
typedef struct pl_copy_point {
    double bytes, seconds;
} pl_copy_point;

/* How a profile was measured, and how noisy the machine was meanwhile (all 0 in a model
 * made by hand). Calibration times every op twice, in two passes over the models; an op's
 * spread is |t1 / t2 - 1| between its two times (ops under PL_CALIBRATION_MIN_SECONDS left
 * out, calibrate.h). Whether it was noisy: pl_calibration_noisy (calibrate.h), by the
 * thresholds recorded with it. */
typedef struct pl_calibration_record {
    long long measured_at; /* when it ended: UTC, seconds since the epoch; 0: unknown */
    double seconds;        /* how long it took, every attempt included */
    int attempts;          /* measurements made; the quietest was kept */
    int compared;          /* op signatures timed in both passes */
    double spread_median, spread_p90; /* of the ops' spread */
    double others_share;   /* 0 to 1: the machine's CPU time others used (/proc/stat) */
    double spread_threshold, others_threshold;
} pl_calibration_record;

/* The fit of one kernel route (kernels.h: pl_kernel_route) of an op kind. */
typedef struct pl_route_fit {
    int threads;
    pl_op_kind kind;
    int route;
    pl_op_cost cost;
} pl_route_fit;

/* One measured op configuration. */
typedef struct pl_op_time {
    uint64_t signature;
    double seconds;
} pl_op_time;

typedef struct pl_cost_model {
    char machine[512];  /* the key: what the profile was measured on */
    /* by thread count (index 1 .. PL_COST_MAX_THREADS), op kind (PL_OP_COUNT: all kinds) */
    pl_op_cost ops[PL_COST_MAX_THREADS + 1][PL_OP_COUNT + 1];
    pl_route_fit routes[PL_COST_MAX_ROUTE_FITS]; /* by thread count, kind and route */
    int n_routes;
    pl_copy_point copy_curve[PL_COST_COPY_POINTS]; /* bytes ascending, seconds not falling */
    int n_copy_points;
    double handoff_seconds, task_seconds;
    /* Native devices on cores of their own: how much longer an op takes when another
     * device's thread copied some of its inputs in that step (they come from the other
     * core's cache, not its own). 0 where not measured (a model made by hand). */
    double remote_seconds;
    double poll_seconds, wake_seconds; /* a polling native device: picking a task up while
                                          polling, and once asleep past the poll window */
    double paced_delays[PL_DELAY_COUNT][PL_COST_CONTENTION]; /* seconds, by contention */
    double paced_sharing[PL_DELAY_COUNT][PL_SHARING_TERMS];   /* seconds per thread */
    double paced_signal_seconds; /* a paced thread waking another's queue (a system call)
                                    before it takes its own next task */
    double paced_finish_seconds; /* the step's last paced task waking its caller */
    /* A transfer between two ranks on this host (comm.h), one way, through the comm's
     * messages: seconds + per_byte * bytes; both 0 until measured under mpirun
     * (pl_calibrate_processes), and then a transfer between ranks costs a native copy. */
    double process_seconds, process_per_byte;
    pl_op_time *measured; /* sorted by signature; malloc'd */
    int n_measured;
    pl_calibration_record calibration;
    /* The machine's pace now over the profile's (probe.h): native op and copy times are
     * multiplied by it. 0: as measured. Set for one job, never written to a profile. */
    double speed;
    /* Op times measured elsewhere (op_times.h) that replace the times above for the ops
     * of their graph they time; NULL: none. Borrowed, never written to a profile. */
    const struct pl_op_times *op_times;
} pl_cost_model;

void pl_cost_model_clear(pl_cost_model *model);

/* The factor native times take now (`speed`; 1 when unset). */
static inline double pl_cost_speed(const pl_cost_model *model)
{
    return model->speed > 0 ? model->speed : 1;
}

/* An op's signature: what its time depends on (kind, attributes, the shapes and dtypes of
 * its inputs and outputs in `shapes`) and the device's thread count. */
uint64_t pl_op_signature(const pl_op *op, const pl_tensor *shapes, int threads);
/* Adds measurements (any order, repeats allowed: the lower median of each signature's times is
 * kept, and a new signature's time replaces an old one). */
pl_status pl_cost_add_measured(pl_cost_model *model, pl_op_time *times, int n, pl_error *err);
/* The measured time of a signature (at the model's speed), or -1. */
double pl_cost_lookup(const pl_cost_model *model, uint64_t signature);

/* How many of the graph's ops (at its shapes, on a device of `threads` threads) have a
 * measured time: the rest are predicted by their kind's fit, extrapolated. */
int pl_cost_measured_ops(const pl_cost_model *model, const pl_graph *graph, int threads);

/* This machine's key: "cpu=...; cores=2; openblas=...; placer=0.1". */
void pl_cost_machine_key(char *buf, size_t cap);

/* Whether the model has measurements for devices of `threads` threads. */
bool pl_cost_has_threads(const pl_cost_model *model, int threads);
/* The fastest FLOP rate calibration saw for any op on devices of `threads` threads (at the
 * measured thread count pl_cost_op takes for them); 0 when not known. */
double pl_cost_fastest_rate(const pl_cost_model *model, int threads);
/* The least of the samples' times over the fit that pl_cost_op takes for an op of `kind`
 * on kernel route `route` (pl_kernel_route; PL_ROUTE_ONE for the kind's fit) on devices
 * of `threads` threads; 0 when not known. */
double pl_cost_least_over_fit(const pl_cost_model *model, pl_op_kind kind, int route,
                              int threads);

/* A paced delay at a contention level (pl_cost_contention; clamped), with `others_busy`
 * other devices and links busy then and `others_used` in the step (never below 0). */
double pl_cost_delay(const pl_cost_model *model, pl_delay delay, int contention,
                     int others_busy, int others_used);

/* One task as the executor runs it: `native` seconds of work on its thread, held until
 * `held` seconds from its start (at least `native`), then late by `late` (PL_DELAY_SLEPT,
 * PL_DELAY_SPUN or PL_DELAY_COPY; -1: not paced, never late). */
typedef struct pl_task_cost {
    double native, held;
    int late;
} pl_task_cost;
pl_task_cost pl_cost_task_parts(const pl_cost_model *model, const pl_program *program,
                                const pl_cluster *cluster, const pl_task *task);
/* The seconds of one task of a program on its device or link of `cluster`, as the
 * executor would take alone (contention 0), without the hand-off before it. An op task
 * whose op `op_times` times takes that time, its micro-batch's share of it, whatever the
 * device. */
double pl_cost_task(const pl_cost_model *model, const pl_program *program,
                    const pl_cluster *cluster, const pl_task *task);
/* The same task as a native device or link would run it: no pacing. */
double pl_cost_native(const pl_cost_model *model, const pl_program *program,
                      const pl_cluster *cluster, const pl_task *task);
/* A paced task: `native` seconds of work held until `paced`, and late as its pacer sleeps
 * or spins alone (contention 0). */
double pl_cost_paced(const pl_cost_model *model, double native, double paced);
/* A native copy's curve as a straight line, seconds + per_byte * bytes (hand-made models). */
void pl_cost_set_copy_line(pl_cost_model *model, double seconds, double per_byte);
/* A native copy of `bytes`: linear between the curve's points, the first point's time
 * below it, the last point's rate above it (0 without points). */
double pl_cost_native_copy(const pl_cost_model *model, double bytes);
/* A copy of `bytes` over a link, as the executor takes it alone (contention 0; the
 * hand-off not included). */
double pl_cost_copy(const pl_cost_model *model, const pl_link *link, double bytes);
/* How much longer an op of `kind` on a native device of `threads` threads takes while
 * another native device computes (pl_op_cost's `together`; 1 where unmeasured). */
double pl_cost_together(const pl_cost_model *model, pl_op_kind kind, int threads);
/* An op of `kind` whose kernel takes route `route` (pl_kernel_route_of, kernels.h; -1,
 * PL_ROUTE_ONE, for the kind's fit over all its routes) on a native device of `threads`
 * threads, at the given FLOPs and bytes: the route's fit, else the kind's, else all
 * kinds'. */
double pl_cost_op(const pl_cost_model *model, pl_op_kind kind, int route, int threads,
                  double flops, double bytes);
/* The same on `device`: the roofline on hardware placer cannot run (roofline.h), else
 * pl_cost_op at its thread count. */
double pl_cost_op_on(const pl_cost_model *model, pl_op_kind kind, int route,
                     const pl_device *device, double flops, double bytes);
/* Bytes an op task reads and writes at the micro-batch's shapes; a slice reads only what
 * it writes. */
double pl_task_op_bytes(const pl_program *program, const pl_task *task);

/* Fits one op kind's coefficients to samples (seconds, flops, bytes), non-negative, by
 * least squares on relative error (times span microseconds to seconds), and records the
 * fastest FLOP rate among them and the least of their times over the fit's. */
pl_op_cost pl_cost_fit(const double *seconds, const double *flops, const double *bytes, int n);

/* One measured op: a sample for the fits. */
typedef struct pl_op_sample {
    pl_op_kind kind;
    int route; /* pl_kernel_route */
    double seconds, flops, bytes;
} pl_op_sample;

/* Fits the model for devices of `threads` threads to the samples: each kind with two
 * samples or more, all kinds together, and each route of a kind with
 * PL_COST_ROUTE_MIN_SAMPLES samples or more where the kind took more than one. Replaces
 * the fits it makes (their `together` kept), and leaves the others; PL_ENOMEM, or PL_EINPUT
 * when the route fits would outgrow PL_COST_MAX_ROUTE_FITS. */
pl_status pl_cost_fit_samples(pl_cost_model *model, int threads, const pl_op_sample *samples,
                              int n, pl_error *err);

/* Profile files (JSON, written atomically). Reading checks the format version and every
 * field (numbers in range, each op kind and thread count at most once, measurements
 * sorted, the calibration's time written twice alike, nothing after the document), `err`
 * named after the file; a profile of another machine key reads fine: callers check it with
 * pl_profile_check (profile.h). */
pl_status pl_cost_model_write(const pl_cost_model *model, const char *path, pl_error *err);
/* Reading fills `model` afresh: clear a model read before reading into it again. */
pl_status pl_cost_model_read(pl_cost_model *model, const char *path, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
