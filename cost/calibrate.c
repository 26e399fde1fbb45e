/* Calibration (calibrate.h): measuring ops, copies and the executor's own costs. */
#include "calibrate.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calibrate_impl.h"
#include "clock.h"
#include "grow.h"
#include "kernels.h"
#include "load.h"
#include "machine_load.h"

/* Measured op configurations, growing. */
typedef struct op_times {
    pl_op_time *v;
    int n, cap;
} op_times;

static bool add_time(op_times *t, uint64_t signature, double seconds)
{
    if (!pl_grow(&t->v, &t->cap, t->n + 1, sizeof *t->v, 256))
        return false;
    t->v[t->n++] = (pl_op_time){signature, seconds};
    return true;
}

/* Samples for the fits, growing. */
typedef struct op_samples {
    pl_op_sample *v;
    int n, cap;
} op_samples;

static bool add_op_sample(op_samples *s, pl_op_sample sample)
{
    if (!s)
        return true;
    if (!pl_grow(&s->v, &s->cap, s->n + 1, sizeof *s->v, 256))
        return false;
    s->v[s->n++] = sample;
    return true;
}

/* Every op of one model at one batch, on one device of `threads` threads: a sample for the
 * fits (unless `fits` is NULL) and a measurement of its signature. */
static pl_status measure_ops(const char *path, int batch, int threads, int steps,
                             const volatile sig_atomic_t *interrupt, op_samples *fits,
                             op_times *measured, pl_error *err)
{
    pl_cluster *c = pl_calib_cluster(1, threads, 0, -1, err);
    workload w = {0};
    pl_fit fit;
    double *times = NULL;
    pl_status status = c ? pl_calib_open(&w, path, batch, c, interrupt, err) : PL_ENOMEM;
    if (status == PL_OK && (status = pl_executor_set_plan(w.ex, w.plan, &fit, err)) == PL_OK &&
        (status = pl_calib_run_steps(&w, steps, &times, err)) == PL_OK) {
        const pl_program *p = pl_executor_program(w.ex);
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_task *task = &p->tasks[i];
            const pl_op *op = &w.g->ops[task->op];
            double seconds = pl_median(times + (size_t)i * (size_t)steps, steps);
            pl_op_sample sample = {op->kind, pl_kernel_route_of(op, p->shapes), seconds,
                                   pl_task_flops(p, task), pl_task_op_bytes(p, task)};
            if (!add_op_sample(fits, sample) ||
                !add_time(measured, pl_op_signature(op, p->shapes, threads), seconds)) {
                status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
                break;
            }
        }
    }
    pl_calib_close(&w);
    free(times);
    pl_cluster_free(c);
    return status;
}

/* ---- how noisy it was ---------------------------------------------------------------------- */

/* The ops' spread between the passes (calibrate_impl.h), growing over the thread counts. */
typedef struct spreads {
    double *v;
    int n, cap;
} spreads;

/* The spread of one thread count's passes: times[0 .. second) and [second .. n). */
static pl_status add_spread(spreads *s, pl_op_time *times, int second, int n, pl_error *err)
{
    if (!pl_grow(&s->v, &s->cap, s->n + second + 1, sizeof *s->v, 256))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    s->n += pl_calib_pass_spread(times, second, times + second, n - second,
                                 PL_CALIBRATION_MIN_SECONDS, s->v + s->n);
    return PL_OK;
}

static void record(pl_calibration_record *r, spreads *s, double start,
                   const pl_machine_cpu *before)
{
    pl_machine_cpu after = pl_machine_load_read();
    pl_machine_load load = pl_machine_load_between(before, &after);
    r->measured_at = (long long)time(NULL);
    r->seconds = pl_now() - start;
    r->attempts = 1;
    r->compared = s->n;
    r->spread_median = s->n ? pl_quantile(s->v, s->n, 0.5) : 0;
    r->spread_p90 = s->n ? pl_quantile(s->v, s->n, 0.9) : 0;
    r->others_share = pl_machine_load_share(&load);
    r->spread_threshold = PL_CALIBRATION_SPREAD_THRESHOLD;
    r->others_threshold = PL_CALIBRATION_OTHERS_THRESHOLD;
}

bool pl_calibration_noisy(const pl_calibration_record *r)
{
    return (r->compared >= PL_CALIBRATION_MIN_COMPARED && r->spread_p90 > r->spread_threshold) ||
           r->others_share > r->others_threshold;
}

/* ---- the whole calibration ----------------------------------------------------------------- */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of a directory, sorted; NULL-terminated. */
static char **list_models(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    *n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char **more = realloc(names, (size_t)(*n + 2) * sizeof *names);
        if (!more)
            break;
        names = more;
        size_t cap = strlen(dir) + len + 2;
        if ((names[*n] = malloc(cap)))
            snprintf(names[(*n)++], cap, "%s/%s", dir, e->d_name);
    }
    if (d)
        closedir(d);
    if (names)
        qsort(names, (size_t)*n, sizeof *names, compare_names);
    return names;
}

/* Every model at its batch and at a half, a quarter and an eighth of it, each run `steps`
 * steps. */
static pl_status measure_suite(const pl_calibration *how, const char *dir, int threads,
                               int steps, op_samples *fits, op_times *measured, pl_error *err)
{
    int n;
    char **files = list_models(dir, &n);
    pl_status status = PL_OK;
    for (int f = 0; f < n; f++) {
        pl_graph *g = status == PL_OK ? pl_graph_load_file(files[f], err) : NULL;
        if (!g && status == PL_OK)
            status = err ? err->status : PL_EINPUT;
        int batch = g ? g->batch_size : 0;
        pl_graph_free(g);
        if (how->progress && status == PL_OK)
            how->progress(how->context, files[f]);
        for (int b = batch, last = 0; status == PL_OK && b >= 1 && b >= batch / 8; b /= 2) {
            if (b != last)
                status = measure_ops(files[f], b, threads, steps, how->interrupt, fits,
                                     measured, err);
            last = b;
        }
        free(files[f]);
    }
    free(files);
    return status;
}

/* The suite's models, full-size and small, on two native devices at once
 * (calibrate_together.c). */
static pl_status measure_together(pl_cost_model *m, const pl_calibration *how, int steps,
                                  pl_error *err)
{
    char small[4096];
    snprintf(small, sizeof small, "%s/small", how->graphs_dir);
    int n_full, n_small;
    char **full = list_models(how->graphs_dir, &n_full);
    char **smalls = list_models(small, &n_small);
    char **both = malloc((size_t)(n_full + n_small + 1) * sizeof *both);
    pl_status status = both ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (both) {
        for (int f = 0; f < n_full + n_small; f++)
            both[f] = f < n_full ? full[f] : smalls[f - n_full];
        if (how->progress)
            how->progress(how->context, "ops on two devices at once");
        status = pl_calib_together(m, both, n_full + n_small, steps, how->interrupt, err);
    }
    for (int f = 0; f < n_full + n_small; f++)
        free(f < n_full ? full[f] : smalls[f - n_full]);
    free(full);
    free(smalls);
    free(both);
    return status;
}

pl_status pl_cost_calibrate_models(pl_cost_model *m, char *const *paths, int n_paths,
                                   const pl_calibration *how, int *added, pl_error *err)
{
    static const int one[] = {1};
    const int *threads = how->threads ? how->threads : one;
    int n_threads = how->threads ? how->n_threads : 1;
    int steps = how->steps ? how->steps : 5;
    int pass_steps = (steps + 1) / 2 > 2 ? (steps + 1) / 2 : 2;
    *added = 0;
    pl_status status = PL_OK;
    for (int i = 0; status == PL_OK && i < n_threads; i++) {
        op_times measured = {0}; /* the fits stay the suite's */
        for (int pass = 0; pass < 2 && status == PL_OK; pass++) /* as the suite's, twice */
            for (int f = 0; f < n_paths && status == PL_OK; f++) {
                pl_graph *g = pl_graph_load_file(paths[f], err);
                if (!g) {
                    status = err ? err->status : PL_EINPUT;
                    break;
                }
                int batch = g->batch_size;
                pl_graph_free(g);
                if (how->progress && pass == 0)
                    how->progress(how->context, paths[f]);
                for (int b = batch, last = 0; status == PL_OK && b >= 1 && b >= batch / 8; b /= 2) {
                    if (b != last)
                        status = measure_ops(paths[f], b, threads[i], pass_steps, how->interrupt,
                                             NULL, &measured, err);
                    last = b;
                }
            }
        int before = m->n_measured;
        if (status == PL_OK)
            status = pl_cost_add_measured(m, measured.v, measured.n, err);
        if (status == PL_OK) /* one entry a signature: the rest replaced old ones */
            *added += m->n_measured - before;
        free(measured.v);
    }
    return status;
}

pl_status pl_cost_calibrate(pl_cost_model *m, const pl_calibration *how, pl_error *err)
{
    static const int one[] = {1};
    const int *threads = how->threads ? how->threads : one;
    int n_threads = how->threads ? how->n_threads : 1;
    int steps = how->steps ? how->steps : 5;
    memset(m, 0, sizeof *m);
    pl_cost_machine_key(m->machine, sizeof m->machine);
    double start = pl_now();
    pl_machine_cpu load_before = pl_machine_load_read();
    spreads spread = {0};
    pl_status status = PL_OK;
    for (int i = 0; status == PL_OK && i < n_threads; i++) {
        int t = threads[i];
        if (t < 1 || t > PL_COST_MAX_THREADS)
            return pl_error_set(err, PL_EINPUT, NULL, "devices of %d threads: calibration "
                                "covers 1 to %d", t, PL_COST_MAX_THREADS);
        op_samples fits = {0};
        op_times measured = {0};
        char small[4096], shapes[4096];
        snprintf(small, sizeof small, "%s/small", how->graphs_dir);
        snprintf(shapes, sizeof shapes, "%s/calibration", how->graphs_dir);
        /* Twice, seconds apart, and an op's time is the lower median of its samples: once
         * a whole model's run came out 30% slow (the VM's core slowed for a moment), and
         * every op of that model with it. */
        int pass_steps = (steps + 1) / 2 > 2 ? (steps + 1) / 2 : 2;
        int second = 0; /* where the second pass's times begin */
        for (int pass = 0; pass < 2 && status == PL_OK; pass++) {
            second = pass == 1 ? measured.n : 0;
            status = measure_suite(how, how->graphs_dir, t, pass_steps, &fits, &measured, err);
            if (status == PL_OK)
                status = measure_suite(how, small, t, pass_steps, &fits, &measured, err);
            if (status == PL_OK)
                status = measure_suite(how, shapes, t, pass_steps, &fits, &measured, err);
        }
        if (status == PL_OK && measured.n == 0) /* a profile of nothing predicts 0 ms */
            status = pl_error_set(err, PL_EINPUT, NULL, "no models to calibrate with in %s "
                                  "or %s (PLACER_GRAPHS names placer's graphs/ directory)",
                                  how->graphs_dir, small);
        if (status == PL_OK)
            status = pl_cost_fit_samples(m, t, fits.v, fits.n, err);
        if (status == PL_OK)
            status = add_spread(&spread, measured.v, second, measured.n, err);
        if (status == PL_OK)
            status = pl_cost_add_measured(m, measured.v, measured.n, err);
        free(fits.v);
        free(measured.v);
    }
    if (status == PL_OK && pl_cost_has_threads(m, 1))
        status = measure_together(m, how, steps > 2 ? 2 : steps, err);
    gaps g;
    memset(&g, 0, sizeof g);
    if (status == PL_OK)
        status = pl_calib_overheads(how->graphs_dir, steps, m, how->interrupt, &g, err);
    if (status == PL_OK) /* the paced runs read copies' native times off the curve */
        pl_calib_fit_copies(m, &g.copy);
    if (status == PL_OK)
        status = pl_calib_paced_lateness(how->graphs_dir, steps > 2 ? 2 : steps, m,
                                         how->interrupt, &g, err);
    if (status == PL_OK) {
        m->task_seconds = pl_median(g.task.seconds, g.task.n);
        m->handoff_seconds = pl_median(g.handoff.seconds, g.handoff.n);
        m->poll_seconds = pl_median(g.poll.seconds, g.poll.n);
        m->wake_seconds = pl_median(g.wake.seconds, g.wake.n);
        if (g.poll.n == 0) /* one core: nothing polls */
            m->poll_seconds = m->handoff_seconds;
        if (g.wake.n == 0)
            m->wake_seconds = m->handoff_seconds;
        pl_calib_fit_delays(m, g.delay, &g.finish);
        pl_calib_fit_remote_inputs(m, &g);
        record(&m->calibration, &spread, start, &load_before);
    }
    free(spread.v);
    pl_calib_free_samples(&g.task);
    pl_calib_free_samples(&g.handoff);
    pl_calib_free_samples(&g.poll);
    pl_calib_free_samples(&g.wake);
    for (int d = 0; d < PL_DELAY_COUNT; d++)
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            pl_calib_free_delays(&g.delay[d][k]);
    pl_calib_free_samples(&g.finish);
    pl_calib_free_samples(&g.copy);
    pl_calib_free_samples(&g.remote);
    pl_calib_free_samples(&g.local);
    if (status != PL_OK)
        pl_cost_model_clear(m);
    return status;
}
