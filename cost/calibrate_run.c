/* Calibration's shared parts: samples, and models run on a small cluster. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "calibrate_impl.h"
#include "graph_build.h"
#include "grow.h"
#include "load.h"

bool pl_calib_add_sample(samples *s, double seconds, double flops, double bytes)
{
    int caps[3] = {s->cap, s->cap, s->cap};
    bool room = pl_grow(&s->seconds, &caps[0], s->n + 1, sizeof *s->seconds, 64) &&
                pl_grow(&s->flops, &caps[1], s->n + 1, sizeof *s->flops, 64) &&
                pl_grow(&s->bytes, &caps[2], s->n + 1, sizeof *s->bytes, 64);
    s->cap = caps[0] < caps[1] ? caps[0] : caps[1]; /* what all three arrays hold */
    s->cap = s->cap < caps[2] ? s->cap : caps[2];
    if (!room)
        return false;
    s->seconds[s->n] = seconds;
    s->flops[s->n] = flops;
    s->bytes[s->n++] = bytes;
    return true;
}

bool pl_calib_add_delay(delay_samples *s, double seconds, int busy, int used, int calls)
{
    int caps[4] = {s->cap, s->cap, s->cap, s->cap};
    bool room = pl_grow(&s->seconds, &caps[0], s->n + 1, sizeof *s->seconds, 64) &&
                pl_grow(&s->busy, &caps[1], s->n + 1, sizeof *s->busy, 64) &&
                pl_grow(&s->used, &caps[2], s->n + 1, sizeof *s->used, 64) &&
                pl_grow(&s->calls, &caps[3], s->n + 1, sizeof *s->calls, 64);
    s->cap = caps[0];
    for (int k = 1; k < 4; k++) /* what all four arrays hold */
        s->cap = s->cap < caps[k] ? s->cap : caps[k];
    if (!room)
        return false;
    s->seconds[s->n] = seconds;
    s->busy[s->n] = busy;
    s->used[s->n] = used;
    s->calls[s->n++] = calls;
    return true;
}

void pl_calib_free_delays(delay_samples *s)
{
    free(s->seconds);
    free(s->busy);
    free(s->used);
    free(s->calls);
}

void pl_calib_free_samples(samples *s)
{
    free(s->seconds);
    free(s->flops);
    free(s->bytes);
}

void pl_calib_fit_copies(pl_cost_model *m, const samples *copies)
{
    enum { MIN_COPIES = 3 };
    int n = copies->n;
    double *size = malloc((size_t)n * sizeof *size + 1);
    double *time = malloc((size_t)n * sizeof *time + 1);
    m->n_copy_points = 0;
    for (int range = 0; size && time && range < 32 && m->n_copy_points < PL_COST_COPY_POINTS;
         range++) {
        double low = range ? ldexp(1, 2 * range) : 0, high = ldexp(1, 2 * range + 2);
        int k = 0;
        for (int i = 0; i < n; i++)
            if (copies->bytes[i] >= low && copies->bytes[i] < high) {
                size[k] = copies->bytes[i];
                time[k++] = copies->seconds[i];
            }
        if (k < MIN_COPIES)
            continue;
        pl_copy_point *point = &m->copy_curve[m->n_copy_points++];
        *point = (pl_copy_point){pl_median(size, k), pl_median(time, k)};
        if (m->n_copy_points > 1 && point->seconds < point[-1].seconds)
            point->seconds = point[-1].seconds;
    }
    free(size);
    free(time);
    if (m->n_copy_points < 2) {
        pl_op_cost line = pl_cost_fit(copies->seconds, copies->flops, copies->bytes, n);
        pl_cost_set_copy_line(m, line.seconds, line.per_byte);
    }
}

/* A cluster of `n` devices of `threads` threads (flops_per_second 0: native); `pin`: device
 * d on core d, as the local machine's devices (they then poll when idle, cluster.h), when
 * the machine has a core for each. */
pl_cluster *pl_calib_cluster(int n, int threads, double flops, int first_core, pl_error *err)
{
    char text[2048], pace[64] = "";
    if (flops > 0)
        snprintf(pace, sizeof pace, ", \"flops_per_second\": %g", flops);
    bool pin = first_core >= 0 && threads == 1 && first_core + n <= pl_machine_cores();
    int at = snprintf(text, sizeof text, "{\"format\": \"placer-cluster\", \"version\": 1, "
                      "\"name\": \"calibration\", \"devices\": [");
    for (int d = 0; d < n; d++) {
        char cores[32] = "";
        if (pin)
            snprintf(cores, sizeof cores, ", \"cores\": [%d]", first_core + d);
        at += snprintf(text + at, sizeof text - (size_t)at, "%s{\"name\": \"d%d\", \"threads\": "
                       "%d, \"memory_bytes\": %lld%s%s}", d ? ", " : "", d, threads,
                       1LL << 40, pace, cores);
    }
    snprintf(text + at, sizeof text - (size_t)at, "], \"default_link\": {}}");
    return pl_cluster_load_buffer(text, strlen(text), "calibration", err);
}

void pl_calib_close(workload *w)
{
    pl_executor_free(w->ex);
    pl_plan_free(w->plan);
    pl_graph_free(w->g);
    *w = (workload){0};
}

pl_status pl_calib_open(workload *w, const char *path, int batch, const pl_cluster *c,
                        const volatile sig_atomic_t *interrupt, pl_error *err)
{
    *w = (workload){.interrupt = interrupt};
    if (!(w->g = pl_graph_load_file(path, err)) ||
        (batch && pl_graph_set_batch(w->g, batch, err) != PL_OK) ||
        pl_autodiff_build(w->g, err) != PL_OK || !(w->plan = pl_plan_new(w->g, err)) ||
        !(w->ex = pl_executor_new_with_data(w->g, c, "synthetic", err))) {
        pl_calib_close(w);
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    }
    pl_executor_set_interrupt(w->ex, interrupt);
    return PL_OK;
}

pl_status pl_calib_step(workload *w, long long step, pl_error *err)
{
    if (w->interrupt && *w->interrupt)
        return pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted during calibration");
    float loss;
    return pl_executor_step(w->ex, step, &loss, err);
}

/* Runs one warm-up and `steps` measured steps; times[i * steps + s] is task i's duration
 * in step s. */
pl_status pl_calib_run_steps(workload *w, int steps, double **times, pl_error *err)
{
    const pl_program *p = pl_executor_program(w->ex);
    *times = malloc((size_t)p->n_tasks * (size_t)steps * sizeof **times + 1);
    if (!*times)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = pl_calib_step(w, 1, err);
    for (int s = 0; status == PL_OK && s < steps; s++) {
        status = pl_calib_step(w, s + 2, err);
        const double *starts = pl_executor_task_starts(w->ex), *ends = pl_executor_task_ends(w->ex);
        for (int i = 0; i < p->n_tasks; i++)
            (*times)[(size_t)i * (size_t)steps + (size_t)s] = ends[i] - starts[i];
    }
    return status;
}

