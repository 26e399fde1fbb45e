/* Calibration (calibrate.h): measuring ops, copies and the executor's own costs. */
#include "calibrate.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autodiff.h"
#include "data.h"
#include "executor.h"
#include "graph_build.h"
#include "load.h"

/* Samples of one op kind: seconds against FLOPs and bytes. */
typedef struct samples {
    double *seconds, *flops, *bytes;
    int n, cap;
} samples;

static bool add_sample(samples *s, double seconds, double flops, double bytes)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        double *a = realloc(s->seconds, (size_t)cap * sizeof *a);
        if (a)
            s->seconds = a;
        double *b = realloc(s->flops, (size_t)cap * sizeof *b);
        if (b)
            s->flops = b;
        double *c = realloc(s->bytes, (size_t)cap * sizeof *c);
        if (c)
            s->bytes = c;
        if (!a || !b || !c)
            return false;
        s->cap = cap;
    }
    s->seconds[s->n] = seconds;
    s->flops[s->n] = flops;
    s->bytes[s->n++] = bytes;
    return true;
}

static void free_samples(samples *s)
{
    free(s->seconds);
    free(s->flops);
    free(s->bytes);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A cluster of `n` devices of `threads` threads (flops_per_second 0: native). */
static pl_cluster *test_cluster(int n, int threads, double flops, pl_error *err)
{
    char text[2048], pace[64] = "";
    if (flops > 0)
        snprintf(pace, sizeof pace, ", \"flops_per_second\": %g", flops);
    int at = snprintf(text, sizeof text, "{\"format\": \"placer-cluster\", \"version\": 1, "
                      "\"name\": \"calibration\", \"devices\": [");
    for (int d = 0; d < n; d++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s{\"name\": \"d%d\", \"threads\": "
                       "%d, \"memory_bytes\": %lld%s}", d ? ", " : "", d, threads, 1LL << 40,
                       pace);
    snprintf(text + at, sizeof text - (size_t)at, "], \"default_link\": {}}");
    return pl_cluster_load_buffer(text, strlen(text), "calibration", err);
}

/* A model's training graph at `batch`, its executor on `cluster` under `plan` (NULL: all
 * on device 0), inputs filled. */
typedef struct workload {
    pl_graph *g;
    pl_executor *ex;
    pl_plan *plan;
} workload;

static void close_workload(workload *w)
{
    pl_executor_free(w->ex);
    pl_plan_free(w->plan);
    pl_graph_free(w->g);
    *w = (workload){0};
}

static pl_status open_workload(workload *w, const char *path, int batch, const pl_cluster *c,
                               pl_error *err)
{
    *w = (workload){0};
    pl_dataset *data = NULL;
    if (!(w->g = pl_graph_load_file(path, err)) ||
        (batch && pl_graph_set_batch(w->g, batch, err) != PL_OK) ||
        pl_autodiff_build(w->g, err) != PL_OK || !(w->plan = pl_plan_new(w->g, err)) ||
        !(data = pl_dataset_open(w->g, "synthetic", 1, err)) ||
        !(w->ex = pl_executor_new(w->g, c, NULL, err))) {
        pl_dataset_free(data);
        close_workload(w);
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    }
    void **inputs = calloc((size_t)w->g->n_tensors, sizeof *inputs);
    for (int t = 0; inputs && t < w->g->n_tensors; t++)
        if (w->g->tensors[t].kind == PL_TENSOR_INPUT)
            inputs[t] = pl_executor_data(w->ex, t);
    if (inputs)
        pl_dataset_fill(data, PL_SPLIT_TRAIN, 0, 0, w->g->batch_size, inputs);
    free(inputs);
    pl_dataset_free(data);
    return PL_OK;
}

/* Runs one warm-up and `steps` measured steps; times[i * steps + s] is task i's duration
 * in step s. */
static pl_status run_steps(workload *w, int steps, double **times, pl_error *err)
{
    const pl_program *p = pl_executor_program(w->ex);
    *times = malloc((size_t)p->n_tasks * (size_t)steps * sizeof **times + 1);
    if (!*times)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    float loss;
    pl_status status = pl_executor_step(w->ex, 1, &loss, err);
    for (int s = 0; status == PL_OK && s < steps; s++) {
        status = pl_executor_step(w->ex, s + 2, &loss, err);
        const double *starts = pl_executor_task_starts(w->ex), *ends = pl_executor_task_ends(w->ex);
        for (int i = 0; i < p->n_tasks; i++)
            (*times)[(size_t)i * (size_t)steps + (size_t)s] = ends[i] - starts[i];
    }
    return status;
}

/* Measured op configurations, growing. */
typedef struct op_times {
    pl_op_time *v;
    int n, cap;
} op_times;

static bool add_time(op_times *t, uint64_t signature, double seconds)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 256;
        pl_op_time *more = realloc(t->v, (size_t)cap * sizeof *more);
        if (!more)
            return false;
        t->v = more;
        t->cap = cap;
    }
    t->v[t->n++] = (pl_op_time){signature, seconds};
    return true;
}

/* Every op of one model at one batch, on one device of `threads` threads: a sample of its
 * kind and a measurement of its signature. */
static pl_status measure_ops(const char *path, int batch, int threads, int steps,
                             samples *kinds, op_times *measured, pl_error *err)
{
    pl_cluster *c = test_cluster(1, threads, 0, err);
    workload w = {0};
    pl_fit fit;
    double *times = NULL;
    pl_status status = c ? open_workload(&w, path, batch, c, err) : PL_ENOMEM;
    if (status == PL_OK && (status = pl_executor_set_plan(w.ex, w.plan, &fit, err)) == PL_OK &&
        (status = run_steps(&w, steps, &times, err)) == PL_OK) {
        const pl_program *p = pl_executor_program(w.ex);
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_task *task = &p->tasks[i];
            const pl_op *op = &w.g->ops[task->op];
            double seconds = median(times + (size_t)i * (size_t)steps, steps);
            if (!add_sample(&kinds[op->kind], seconds, pl_task_flops(p, task),
                            pl_task_op_bytes(p, task)) ||
                !add_time(measured, pl_op_signature(op, p->shapes, threads), seconds)) {
                status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
                break;
            }
        }
    }
    close_workload(&w);
    free(times);
    pl_cluster_free(c);
    return status;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A native link's copies: memcpy from 1 KiB to 16 MiB, the fastest of 5 each. */
static pl_status measure_copies(pl_cost_model *m, pl_error *err)
{
    enum { SIZES = 15, REPEATS = 5 };
    size_t largest = (size_t)1 << 24;
    char *from = malloc(largest), *to = malloc(largest);
    double seconds[SIZES], zeros[SIZES] = {0}, bytes[SIZES];
    if (!from || !to) {
        free(from);
        free(to);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    memset(from, 1, largest);
    memset(to, 2, largest);
    for (int s = 0; s < SIZES; s++) {
        size_t n = (size_t)1024 << s;
        double best = 1e9;
        for (int r = 0; r < REPEATS; r++) {
            double start = now_seconds();
            memcpy(to, from, n);
            double took = now_seconds() - start;
            if (took < best)
                best = took;
        }
        seconds[s] = best > 1e-9 ? best : 1e-9;
        bytes[s] = (double)n;
    }
    pl_op_cost fit = pl_cost_fit(seconds, zeros, bytes, SIZES);
    m->copy_seconds = fit.seconds;
    m->copy_per_byte = fit.per_byte;
    free(from);
    free(to);
    return PL_OK;
}

/* ---- the executor's own costs, from timelines ---------------------------------------------- */

typedef struct gaps {
    samples task;    /* between a device's tasks, the next one already ready */
    samples handoff; /* from a task's release by another resource to its start */
    samples late;    /* how long a paced op ran past its modelled time */
} gaps;

/* Reads one step's timeline: each task's latest predecessor, and what its resource did
 * just before it. */
static bool read_gaps(const pl_program *p, const double *starts, const double *ends, gaps *g)
{
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
        qsort(order, (size_t)n, 2 * sizeof *order, compare_doubles); /* by start */
    for (int j = 0; ok && j < n; j++) {
        int i = (int)order[2 * j + 1], r = p->tasks[i].resource;
        if (pred_resource[i] >= 0 && pred_resource[i] != r && last_end[r] <= pred_end[i])
            ok = add_sample(&g->handoff, starts[i] - pred_end[i], 0, 0);
        else if (last_end[r] >= 0 && last_end[r] >= pred_end[i])
            ok = add_sample(&g->task, starts[i] - last_end[r], 0, 0);
        last_end[r] = ends[i];
    }
    free(pred_end);
    free(pred_resource);
    free(last_end);
    free(order);
    return ok;
}

/* Small models with ops dealt to two native devices in runs of three: many hand-offs. */
static pl_status measure_overheads(const char *dir, int steps, gaps *g, pl_error *err)
{
    static const char *const models[] = {"mlp-small", "transformer-small", "inception-small"};
    pl_cluster *c = test_cluster(2, 1, 0, err);
    if (!c)
        return err ? err->status : PL_ENOMEM;
    pl_status status = PL_OK;
    for (size_t k = 0; status == PL_OK && k < sizeof models / sizeof *models; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/small/%s.json", dir, models[k]);
        workload w = {0};
        pl_fit fit;
        if ((status = open_workload(&w, path, 0, c, err)) != PL_OK)
            break;
        for (int o = 0; o < w.plan->n_ops; o++)
            w.plan->device[o] = (o / 3) % 2;
        status = pl_executor_set_plan(w.ex, w.plan, &fit, err);
        float loss;
        for (int s = 0; status == PL_OK && s <= steps; s++)
            if ((status = pl_executor_step(w.ex, s + 1, &loss, err)) == PL_OK && s > 0 &&
                !read_gaps(pl_executor_program(w.ex), pl_executor_task_starts(w.ex),
                           pl_executor_task_ends(w.ex), g))
                status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        close_workload(&w);
    }
    pl_cluster_free(c);
    return status;
}

/* mlp-small on one device paced at 100 MFLOP/s: how long after its modelled time each op
 * that takes at least 50 us ends. */
static pl_status measure_paced_lateness(const char *dir, int steps, gaps *g, pl_error *err)
{
    enum { RATE = 100000000 };
    char path[4096];
    snprintf(path, sizeof path, "%s/small/mlp-small.json", dir);
    pl_cluster *c = test_cluster(1, 1, RATE, err);
    workload w = {0};
    pl_fit fit;
    pl_status status = c ? open_workload(&w, path, 0, c, err) : PL_ENOMEM;
    if (status == PL_OK)
        status = pl_executor_set_plan(w.ex, w.plan, &fit, err);
    float loss;
    for (int s = 0; status == PL_OK && s <= steps; s++) {
        if ((status = pl_executor_step(w.ex, s + 1, &loss, err)) != PL_OK || s == 0)
            continue;
        const pl_program *p = pl_executor_program(w.ex);
        const double *starts = pl_executor_task_starts(w.ex), *ends = pl_executor_task_ends(w.ex);
        for (int i = 0; i < p->n_tasks; i++) {
            double modelled = pl_task_flops(p, &p->tasks[i]) / RATE;
            if (modelled >= 50e-6 && !add_sample(&g->late, ends[i] - starts[i] - modelled, 0, 0))
                status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
    }
    close_workload(&w);
    pl_cluster_free(c);
    return status;
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

/* Every model at its batch and at a half, a quarter and an eighth of it. */
static pl_status measure_suite(const pl_calibration *how, const char *dir, int threads,
                               samples *kinds, op_times *measured, pl_error *err)
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
                status = measure_ops(files[f], b, threads, how->steps ? how->steps : 3, kinds,
                                     measured, err);
            last = b;
        }
        free(files[f]);
    }
    free(files);
    return status;
}

static void fit_kinds(pl_cost_model *m, int threads, samples *kinds)
{
    samples all = {0};
    for (int k = 0; k < PL_OP_COUNT; k++) {
        if (kinds[k].n >= 2)
            m->ops[threads][k] = pl_cost_fit(kinds[k].seconds, kinds[k].flops, kinds[k].bytes,
                                             kinds[k].n);
        for (int i = 0; i < kinds[k].n; i++)
            add_sample(&all, kinds[k].seconds[i], kinds[k].flops[i], kinds[k].bytes[i]);
    }
    if (all.n >= 2)
        m->ops[threads][PL_OP_COUNT] = pl_cost_fit(all.seconds, all.flops, all.bytes, all.n);
    free_samples(&all);
}

pl_status pl_cost_calibrate(pl_cost_model *m, const pl_calibration *how, pl_error *err)
{
    static const int one[] = {1};
    const int *threads = how->threads ? how->threads : one;
    int n_threads = how->threads ? how->n_threads : 1;
    int steps = how->steps ? how->steps : 3;
    memset(m, 0, sizeof *m);
    pl_cost_machine_key(m->machine, sizeof m->machine);
    pl_status status = PL_OK;
    for (int i = 0; status == PL_OK && i < n_threads; i++) {
        int t = threads[i];
        if (t < 1 || t > PL_COST_MAX_THREADS)
            return pl_error_set(err, PL_EINPUT, NULL, "devices of %d threads: calibration "
                                "covers 1 to %d", t, PL_COST_MAX_THREADS);
        samples kinds[PL_OP_COUNT] = {{0}};
        op_times measured = {0};
        char small[4096];
        snprintf(small, sizeof small, "%s/small", how->graphs_dir);
        status = measure_suite(how, how->graphs_dir, t, kinds, &measured, err);
        if (status == PL_OK)
            status = measure_suite(how, small, t, kinds, &measured, err);
        if (status == PL_OK)
            fit_kinds(m, t, kinds);
        if (status == PL_OK)
            status = pl_cost_add_measured(m, measured.v, measured.n, err);
        for (int k = 0; k < PL_OP_COUNT; k++)
            free_samples(&kinds[k]);
        free(measured.v);
    }
    gaps g = {{0}, {0}, {0}};
    if (status == PL_OK)
        status = measure_copies(m, err);
    if (status == PL_OK)
        status = measure_overheads(how->graphs_dir, steps, &g, err);
    if (status == PL_OK)
        status = measure_paced_lateness(how->graphs_dir, steps, &g, err);
    if (status == PL_OK) {
        m->task_seconds = median(g.task.seconds, g.task.n);
        m->handoff_seconds = median(g.handoff.seconds, g.handoff.n);
        m->paced_late_seconds = median(g.late.seconds, g.late.n);
        if (m->paced_late_seconds < 0)
            m->paced_late_seconds = 0;
    }
    free_samples(&g.task);
    free_samples(&g.handoff);
    free_samples(&g.late);
    return status;
}
