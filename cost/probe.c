/* The probe (probe.h): a model's ops for a moment, against the profile's times. */
#include "probe.h"

#include <stdlib.h>

#include "autodiff.h"
#include "calibrate_impl.h"
#include "graph_build.h"
#include "kernels.h"
#include "clock.h"
#include "load.h"

enum { PROBE_STEPS = 5, PROBE_MIN_OPS = 5, PROBE_MAX_RUNS = 25 };
#define PROBE_SECONDS 0.05
/* A model whose step takes less is not probed: its ops take microseconds, and its runs read
 * 0.8 to 1.4 times the profile from one job to the next on a quiet machine; the reference
 * speaks for the machine. */
#define PROBE_MIN_STEP_SECONDS 0.001
/* The model's own ops speak for the machine when the profile's times of them are at
 * least this share of its step: a few small ops (a transformer's gradient sums, whose
 * shapes the suite shares) run against caches the ops before them left cold, 1.2 to 1.4
 * times their time in the profile, and are no measure of its pace. Such a model is not run
 * at all: after a large one (an imported ResNet's step), the reference ran 1.4-1.5 times
 * its profiled time, after a small one 1.0. */
#define PROBE_MIN_SHARE 0.25

/* The profile's time for an op configuration as measured, before any scaling. */
static double profiled(const pl_cost_model *m, uint64_t signature)
{
    double t = pl_cost_lookup(m, signature);
    return t >= 0 && m->speed > 0 ? t / m->speed : t;
}

/* The model at one batch: its steps run, its profiled ops' times summed into `out`. */
static pl_status run_at(const pl_cost_model *m, const char *path, int batch, const pl_cluster *c,
                        const volatile sig_atomic_t *interrupt, pl_probe *out, pl_error *err)
{
    workload w;
    pl_fit fit;
    double *times = NULL;
    pl_status status = pl_calib_open(&w, path, batch, c, interrupt, err);
    if (status == PL_OK && (status = pl_executor_set_plan(w.ex, w.plan, &fit, err)) == PL_OK &&
        (status = pl_calib_run_steps(&w, PROBE_STEPS, &times, err)) == PL_OK) {
        const pl_program *p = pl_executor_program(w.ex);
        for (int i = 0; i < p->n_tasks; i++) {
            if (p->tasks[i].kind != PL_TASK_OP)
                continue;
            double expected = profiled(m, pl_op_signature(&w.g->ops[p->tasks[i].op], p->shapes, 1));
            if (expected < 0)
                continue;
            out->measured += pl_median(times + (size_t)i * PROBE_STEPS, PROBE_STEPS);
            out->profiled += expected;
            out->ops++;
        }
    }
    pl_calib_close(&w);
    free(times);
    return status;
}

/* The batch to probe the model at: the largest of its batch, half, quarter and eighth
 * whose one-device step, predicted from the training graph alone at the eighth (no
 * executor: a large model's weights take seconds to set up), is short; 0 when even the
 * eighth's step or the model's parameters and state are too large to probe, or (`own`)
 * when the profile measured too little of it to speak for the machine: fewer than
 * PROBE_MIN_OPS of its ops, or under PROBE_MIN_SHARE of its step. */
static pl_status probe_batch(const pl_cost_model *m, const char *path, bool own, int *size,
                             pl_error *err)
{
    *size = 0;
    pl_graph *g = pl_graph_load_file(path, err);
    if (!g)
        return err ? err->status : PL_EINPUT;
    int batch = g->batch_size, smallest = batch / 8 > 0 ? batch / 8 : 1;
    pl_status status = pl_graph_set_batch(g, smallest, err);
    if (status == PL_OK)
        status = pl_autodiff_build(g, err);
    if (status != PL_OK) {
        pl_graph_free(g);
        return status;
    }
    double step = 0, profiled_seconds = 0;
    int profiled_ops = 0;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        double t = pl_cost_lookup(m, pl_op_signature(op, g->tensors, 1));
        if (t >= 0) {
            profiled_seconds += t;
            profiled_ops++;
        }
        step += t >= 0 ? t
                       : pl_cost_op(m, op->kind, pl_kernel_route_of(op, g->tensors), 1,
                                    op->flops,
                                    (double)(op->bytes_read + op->bytes_written));
    }
    pl_graph_stats stats;
    pl_graph_stats_compute(g, &stats);
    pl_graph_free(g);
    if (step > PL_PROBE_MAX_STEP_SECONDS ||
        (double)(stats.param_bytes + stats.state_bytes) > PL_PROBE_MAX_BYTES)
        return PL_OK; /* too long to probe: the reference speaks for the machine */
    if (own && (profiled_ops < PROBE_MIN_OPS || profiled_seconds < PROBE_MIN_SHARE * step))
        return PL_OK;
    int largest = smallest;
    while (largest * 2 <= batch && step * 2 <= PL_PROBE_MAX_STEP_SECONDS) {
        largest *= 2;
        step *= 2;
    }
    if (!own || step >= PROBE_MIN_STEP_SECONDS)
        *size = largest;
    return PL_OK;
}

/* The model probed into `out`, if probe_batch finds a batch for it: run as calibration runs
 * it (a workload opened, a warm-up, a few steps), again and again until PROBE_SECONDS have
 * passed (PROBE_MAX_RUNS at most), its measured seconds the median of the runs'. A small model's
 * run takes microseconds, and one run of it read 0.8 to 1.4 times the profile from one job
 * to the next on a quiet machine; more steps in one run read it hot, faster than calibration
 * and the plans' measurements see it. */
static pl_status probe_model(const pl_cost_model *m, const char *path, bool own,
                             const pl_cluster *c, const volatile sig_atomic_t *interrupt,
                             pl_probe *out, pl_error *err)
{
    int size;
    pl_status status = probe_batch(m, path, own, &size, err);
    if (status != PL_OK || size == 0)
        return status;
    out->batch = size;
    double until = pl_now() + PROBE_SECONDS, measured[PROBE_MAX_RUNS];
    int runs = 0;
    pl_probe run;
    do {
        run = (pl_probe){0};
        status = run_at(m, path, size, c, interrupt, &run, err);
        measured[runs++] = run.measured;
    } while (status == PL_OK && runs < PROBE_MAX_RUNS && pl_now() < until);
    out->measured = pl_median(measured, runs);
    out->profiled = run.profiled; /* the same ops every run */
    out->ops = run.ops;
    return status;
}

pl_status pl_cost_probe(const pl_cost_model *m, const char *model_path, const char *reference_path,
                        const volatile sig_atomic_t *interrupt, pl_probe *out, pl_error *err)
{
    double start = pl_now();
    *out = (pl_probe){.scale = 1};
    pl_cluster *c = pl_calib_cluster(1, 1, 0, -1, err);
    pl_status status = c ? PL_OK : PL_ENOMEM;
    if (status == PL_OK && model_path)
        status = probe_model(m, model_path, true, c, interrupt, out, err);
    if (status == PL_OK && out->batch == 0 && reference_path) { /* the model not run */
        out->reference = true;
        status = probe_model(m, reference_path, false, c, interrupt, out, err);
        out->batch = 0;
    }
    if (status == PL_OK && out->ops > 0 && out->profiled > 0)
        out->scale = out->measured / out->profiled;
    pl_cluster_free(c);
    out->seconds = pl_now() - start;
    return status;
}
