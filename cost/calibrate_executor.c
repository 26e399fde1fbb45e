/* Calibration of the executor's own costs (calibrate.h), read from its timelines: the
 * gap between a device's tasks, the hand-off to another device, paced lateness. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate_impl.h"

/* The paced lateness is measured on a cluster shaped like the bundled paced-4. */
#define PACED_DEVICES 4
#define LINK_BYTES_PER_SECOND 1e9
#define LINK_LATENCY 20e-6

/* The copies of one step's timeline: seconds against bytes. */
static bool read_copies(const pl_program *p, const double *starts, const double *ends, gaps *g)
{
    bool ok = true;
    for (int i = 0; ok && i < p->n_tasks; i++) {
        if (p->tasks[i].kind == PL_TASK_COPY && ends[i] > starts[i])
            ok = pl_calib_add_sample(&g->copy, ends[i] - starts[i], 0,
                                     (double)pl_task_bytes(p, &p->tasks[i]));
    }
    return ok;
}

/* What one step's timeline is read for. */
typedef struct reading {
    gaps *g;
    bool copies, gaps, lateness;
    double rate;               /* lateness: the paced devices' FLOP/s */
    const pl_cost_model *m;    /* lateness: the ops' native times */
    const pl_cluster *cluster; /* gaps: which devices poll; lateness: the devices */
    bool polling;              /* gaps: read the polling devices' hand-offs alone */
} reading;

/* The samples a hand-off to resource r, idle for `idle` seconds, belongs to: NULL for
 * none (a polling run's first task on a device: still polling from the last step). */
static samples *handoff_kind(const pl_program *p, const reading *how, int r, double idle)
{
    if (!how->polling)
        return &how->g->handoff;
    if (r >= p->n_devices || !pl_device_polls(&how->cluster->devices[r]) || idle < 0)
        return NULL;
    return idle < PL_DEVICE_POLL_SECONDS ? &how->g->poll : &how->g->wake;
}

/* Reads one step's timeline: each task's latest predecessor, and what its resource did
 * just before it. */
static bool read_gaps(const pl_program *p, const double *starts, const double *ends,
                      const reading *how)
{
    gaps *g = how->g;
    int n = p->n_tasks, resources = p->n_devices + p->n_links;
    double *pred_end = calloc((size_t)n + 1, sizeof *pred_end);
    int *pred_resource = malloc(((size_t)n + 1) * sizeof *pred_resource);
    double *last_end = malloc(((size_t)resources + 1) * sizeof *last_end);
    double *order = malloc(((size_t)n + 1) * 2 * sizeof *order); /* (start, task) pairs */
    bool ok = pred_end && pred_resource && last_end && order;
    for (int i = 0; ok && i < n; i++)
        pred_resource[i] = -1;
    for (int i = 0; ok && i < n; i++)
        for (int e = p->tasks[i].first_succ; e < p->tasks[i].first_succ + p->tasks[i].n_succ; e++)
            if (pred_resource[p->succ[e]] < 0 || ends[i] > pred_end[p->succ[e]]) {
                pred_end[p->succ[e]] = ends[i];
                pred_resource[p->succ[e]] = p->tasks[i].resource;
            }
    for (int r = 0; ok && r < resources; r++)
        last_end[r] = -1;
    for (int i = 0; ok && i < n; i++) {
        order[2 * i] = starts[i];
        order[2 * i + 1] = i;
    }
    if (ok)
        qsort(order, (size_t)n, 2 * sizeof *order, pl_compare_doubles); /* by start */
    for (int j = 0; ok && j < n; j++) {
        int i = (int)order[2 * j + 1], r = p->tasks[i].resource;
        if (pred_resource[i] >= 0 && pred_resource[i] != r && last_end[r] <= pred_end[i]) {
            samples *kind = handoff_kind(p, how, r, last_end[r] < 0 ? -1 :
                                                    pred_end[i] - last_end[r]);
            ok = !kind || pl_calib_add_sample(kind, starts[i] - pred_end[i], 0, 0);
        } else if (!how->polling && last_end[r] >= 0 && last_end[r] >= pred_end[i]) {
            ok = pl_calib_add_sample(&g->task, starts[i] - last_end[r], 0, 0);
        }
        last_end[r] = ends[i];
    }
    free(pred_end);
    free(pred_resource);
    free(last_end);
    free(order);
    return ok;
}

/* How late each paced op that its pacer sleeps through, and each paced copy, ends past its
 * modelled time. */
static bool read_lateness(const pl_program *p, const double *starts, const double *ends,
                          const reading *how)
{
    bool ok = true;
    for (int i = 0; ok && i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        double took = ends[i] - starts[i];
        if (task->kind == PL_TASK_COPY) { /* the link's time as the model takes it, unlate */
            double modelled = pl_cost_task(how->m, p, how->cluster, task) -
                              how->m->paced_copy_late_seconds;
            ok = pl_calib_add_sample(&how->g->copy_late, took - modelled, 0, 0);
        } else {
            double held = pl_task_flops(p, task) / how->rate;
            double native = pl_cost_native(how->m, p, how->cluster, task);
            if (held - native > PL_DEVICE_PACE_SPIN_SECONDS) /* it sleeps (pl_cost_paced) */
                ok = pl_calib_add_sample(&how->g->late, took - held, 0, 0);
            else if (held > native) /* it spins */
                ok = pl_calib_add_sample(&how->g->spin_late, took - held, 0, 0);
        }
    }
    return ok;
}

/* Sets the workload's plan, runs one warm-up and `steps` steps, reads each timeline. */
static pl_status read_steps(workload *w, int steps, const reading *how, pl_error *err)
{
    pl_fit fit;
    pl_status status = pl_executor_set_plan(w->ex, w->plan, &fit, err);
    for (int s = 0; status == PL_OK && s <= steps; s++) {
        if ((status = pl_calib_step(w, s + 1, err)) != PL_OK || s == 0)
            continue;
        const pl_program *p = pl_executor_program(w->ex);
        const double *starts = pl_executor_task_starts(w->ex), *ends = pl_executor_task_ends(w->ex);
        if ((how->copies && !read_copies(p, starts, ends, how->g)) ||
            (how->gaps && !read_gaps(p, starts, ends, how)) ||
            (how->lateness && !read_lateness(p, starts, ends, how)))
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    return status;
}

/* A model with its ops dealt to two native devices in runs of three: many transfers. */
static pl_status run_dealt(const char *path, const pl_cluster *c, int steps,
                           const volatile sig_atomic_t *interrupt, const reading *how,
                           pl_error *err)
{
    workload w = {0};
    pl_status status = pl_calib_open(&w, path, 0, c, interrupt, err);
    if (status != PL_OK)
        return status;
    for (int o = 0; o < w.plan->n_ops; o++)
        w.plan->device[o] = (o / 3) % 2;
    status = read_steps(&w, steps, how, err);
    pl_calib_close(&w);
    return status;
}

pl_status pl_calib_overheads(const char *dir, int steps, const volatile sig_atomic_t *interrupt,
                             gaps *g, pl_error *err)
{
    /* cnn: copies of megabytes, beyond the caches */
    static const char *const models[] = {"small/mlp-small", "small/transformer-small",
                                         "small/inception-small", "mlp", "lstm_lm", "moe",
                                         "cnn"};
    enum { N_SMALL = 3 };
    pl_cluster *sleeping = pl_calib_cluster(2, 1, 0, false, err);
    pl_cluster *polling = sleeping ? pl_calib_cluster(2, 1, 0, true, err) : NULL;
    pl_status status = polling ? PL_OK : err ? err->status : PL_ENOMEM;
    for (size_t k = 0; status == PL_OK && k < sizeof models / sizeof *models; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, models[k]);
        if (access(path, R_OK) != 0) /* a reduced suite (tests) may leave some out */
            continue;
        /* devices that sleep when idle: the hand-off to a thread that never polls */
        if (k < N_SMALL)
            status = run_dealt(path, sleeping, steps, interrupt,
                               &(reading){.g = g, .gaps = true, .cluster = sleeping}, err);
        /* devices on cores of their own, as the local machine's: polling, or asleep once
         * idle long enough (full-size ops are long enough); and the copies */
        if (status == PL_OK)
            status = run_dealt(path, polling, steps, interrupt, &(reading){.g = g, .copies = true,
                               .gaps = true, .polling = true, .cluster = polling}, err);
    }
    pl_cluster_free(sleeping);
    pl_cluster_free(polling);
    return status;
}

/* Four devices of one thread paced at `rate`, joined by links as the bundled paced-4's. */
static pl_cluster *paced_cluster(double rate, pl_error *err)
{
    char text[1024];
    int at = snprintf(text, sizeof text, "{\"format\": \"placer-cluster\", \"version\": 1, "
                      "\"name\": \"calibration\", \"devices\": [");
    for (int d = 0; d < PACED_DEVICES; d++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s{\"name\": \"d%d\", \"threads\": "
                       "1, \"memory_bytes\": %lld, \"flops_per_second\": %g}", d ? ", " : "", d,
                       1LL << 40, rate);
    snprintf(text + at, sizeof text - (size_t)at, "], \"default_link\": {\"bytes_per_second\": "
             "%g, \"latency_seconds\": %g}}", LINK_BYTES_PER_SECOND, LINK_LATENCY);
    return pl_cluster_load_buffer(text, strlen(text), "calibration", err);
}

/* A pipeline as the placement search ends with: contiguous blocks of forward ops of about
 * equal FLOPs (fewer when one op outweighs a block), block d on device d; 8 micro-batches
 * (or as many as divide the batch), 1F1B, weight gradients deferred into the bubbles, so
 * every device is busy. */
static void pipeline(const pl_graph *g, pl_plan *plan)
{
    double total = 0, done = 0;
    for (int o = 0; o < g->n_forward_ops; o++)
        total += g->ops[o].flops;
    int stage = 0, last = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        int block = total > 0 ? (int)((done + 0.5 * g->ops[o].flops) / total * PACED_DEVICES) : 0;
        stage += o > 0 && block != last;
        last = block;
        plan->device[o] = plan->stage[o] = stage;
        done += g->ops[o].flops;
    }
    plan->n_stages = stage + 1;
    plan->micro_batches = 8;
    while (g->batch_size % plan->micro_batches)
        plan->micro_batches /= 2;
    plan->schedule = PL_SCHEDULE_1F1B;
    plan->defer_weight_gradients = true;
}

pl_status pl_calib_paced_lateness(const char *dir, int steps, const pl_cost_model *m,
                                  const volatile sig_atomic_t *interrupt, gaps *g, pl_error *err)
{
    /* full-size models, as the suite runs on paced-4; else (a reduced suite: tests) a
     * small one, paced slower so that its ops are as long */
    static const struct { const char *model; double rate; } workloads[] = {
        {"lstm_lm", 2e9}, {"transformer", 2e9}, {"small/mlp-small", 1e8}};
    enum { FALLBACK = 2 };
    pl_status status = PL_OK;
    bool ran = false;
    for (int k = 0; status == PL_OK && k < FALLBACK + 1; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, workloads[k].model);
        if ((k == FALLBACK && ran) || access(path, R_OK) != 0)
            continue;
        pl_cluster *c = paced_cluster(workloads[k].rate, err);
        workload w = {0};
        status = c ? pl_calib_open(&w, path, 0, c, interrupt, err) : err ? err->status : PL_ENOMEM;
        if (status == PL_OK) {
            pipeline(w.g, w.plan);
            status = read_steps(&w, steps, &(reading){.g = g, .lateness = true,
                                .rate = workloads[k].rate, .m = m, .cluster = c}, err);
            ran = true;
        }
        pl_calib_close(&w);
        pl_cluster_free(c);
    }
    return status;
}
