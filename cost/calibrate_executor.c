/* Calibration of the executor's own costs (calibrate.h), read from its timelines: the
 * gap between a device's tasks, the hand-off to another device, paced lateness. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate_impl.h"

/* The remote inputs' term is read off ops this short: on longer ones their pace beside the
 * other core, not the inputs, decides the difference. */
#define REMOTE_MAX_SECONDS 50e-6

/* The paced lateness is measured on clusters linked like the bundled paced ones. */
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

/* The op tasks of one step's timeline on native devices: their times against the model's,
 * with the bytes of the inputs another device copied in (remote) or none (local). */
static bool read_remote(const pl_program *p, const double *starts, const double *ends,
                        const pl_cost_model *m, const pl_cluster *c, gaps *g)
{
    double *copied_in = calloc((size_t)p->n_tasks + 1, sizeof *copied_in);
    bool ok = copied_in != NULL;
    for (int i = 0; ok && i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind != PL_TASK_COPY || p->transfers[t->transfer].from == p->transfers[t->transfer].to)
            continue;
        for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++)
            if (pl_task_reads_copy(p, &p->tasks[p->succ[e]], t))
                copied_in[p->succ[e]] += (double)pl_task_bytes(p, t);
    }
    for (int i = 0; ok && i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        double profiled = t->kind == PL_TASK_OP ? pl_cost_native(m, p, c, t) : 0;
        if (profiled > 0 && ends[i] > starts[i])
            ok = pl_calib_add_sample(copied_in[i] > 0 ? &g->remote : &g->local,
                                     ends[i] - starts[i], profiled, copied_in[i]);
    }
    free(copied_in);
    return ok;
}

/* What one step's timeline is read for. */
typedef struct reading {
    gaps *g;
    bool copies, gaps, lateness, remote;
    const pl_cost_model *m;    /* lateness, remote: the ops' native times */
    const pl_cluster *cluster; /* gaps: which devices poll; lateness: the devices */
    bool polling;              /* gaps: read the polling devices' hand-offs alone */
    bool handoffs;             /* lateness: the paced hand-offs and gaps too */
    int first_level;           /* lateness: the lowest contention level read */
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

/* Each task's last dependency to finish: when (released[i]) and on which resource
 * (releaser[i]; -1 for a task that depends on none). */
static void last_releasers(const pl_program *p, const double *ends, double *released,
                           int *releaser)
{
    for (int i = 0; i < p->n_tasks; i++)
        releaser[i] = -1;
    for (int i = 0; i < p->n_tasks; i++)
        for (int e = p->tasks[i].first_succ; e < p->tasks[i].first_succ + p->tasks[i].n_succ; e++)
            if (releaser[p->succ[e]] < 0 || ends[i] > released[p->succ[e]]) {
                released[p->succ[e]] = ends[i];
                releaser[p->succ[e]] = p->tasks[i].resource;
            }
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
    if (ok)
        last_releasers(p, ends, pred_end, pred_resource);
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

/* One step's timeline, each resource's tasks in order of start, for asking who computed
 * natively when. */
typedef struct timeline {
    const pl_program *p;
    const double *starts, *ends;
    pl_task_cost *cost; /* per task: its work, held time and delay, from the model */
    int *order;     /* tasks by resource, then start */
    int *first;     /* per resource: where its tasks begin in `order` */
    int used;       /* resources with tasks */
    bool alone;     /* every task on one resource */
} timeline;

static const timeline *sorting; /* qsort has no context argument */

static int by_resource_then_start(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int rx = sorting->p->tasks[x].resource, ry = sorting->p->tasks[y].resource;
    if (rx != ry)
        return rx - ry;
    double sx = sorting->starts[x], sy = sorting->starts[y];
    return sx < sy ? -1 : sx > sy ? 1 : x - y;
}

static bool open_timeline(timeline *t, const pl_program *p, const double *starts,
                          const double *ends, const reading *how)
{
    int n = p->n_tasks, resources = p->n_devices + p->n_links;
    *t = (timeline){.p = p, .starts = starts, .ends = ends};
    t->cost = malloc(((size_t)n + 1) * sizeof *t->cost);
    t->order = malloc(((size_t)n + 1) * sizeof *t->order);
    t->first = calloc((size_t)resources + 2, sizeof *t->first);
    if (!t->cost || !t->order || !t->first)
        return false;
    for (int i = 0; i < n; i++) {
        t->order[i] = i;
        t->cost[i] = pl_cost_task_parts(how->m, p, how->cluster, &p->tasks[i]);
        t->first[p->tasks[i].resource + 1]++;
    }
    for (int r = 0; r < resources; r++) {
        t->used += t->first[r + 1] > 0;
        t->first[r + 1] += t->first[r];
    }
    t->alone = t->used <= 1;
    sorting = t;
    qsort(t->order, (size_t)n, sizeof *t->order, by_resource_then_start);
    return true;
}

static void close_timeline(timeline *t)
{
    free(t->cost);
    free(t->order);
    free(t->first);
}

/* The contention resource r met at `when` (pl_cost_contention): the other resources
 * running a task (*busy_out), and those of them computing natively (a paced task until its
 * native work ends, a native device's throughout). */
static int contention_at(const timeline *t, const pl_cluster *c, int r, double when,
                         int *busy_out)
{
    const pl_program *p = t->p;
    int busy = 0, computing = 0;
    for (int other = 0; other < p->n_devices + p->n_links; other++) {
        if (other == r)
            continue;
        int lo = t->first[other], hi = t->first[other + 1]; /* the last start <= when */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (t->starts[t->order[mid]] <= when)
                lo = mid;
            else
                hi = mid;
        }
        if (lo == t->first[other + 1])
            continue;
        int i = t->order[lo];
        bool paced = other >= p->n_devices || c->devices[other].flops_per_second > 0;
        double work_ends = paced ? t->starts[i] + t->cost[i].native : t->ends[i];
        bool running = t->starts[i] <= when && when < t->ends[i];
        busy += running;
        computing += running && when + PL_COST_HOLDING_SECONDS < work_ends;
    }
    *busy_out = busy;
    return pl_cost_contention(t->alone, busy, computing);
}

/* How many tasks `task` made ready on other resources (each a wake-up call its thread
 * made before taking its next task). */
static int signals(const pl_program *p, int task, const double *ends,
                   const double *released, const int *releaser)
{
    const pl_task *t = &p->tasks[task];
    int count = 0;
    for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++) {
        int next = p->succ[e];
        count += p->tasks[next].resource != t->resource && releaser[next] == t->resource &&
                 released[next] == ends[task];
    }
    return count;
}

/* A step's edges on paced devices: the caller's hand-off to the first task (a hand-off at
 * the contention of an idle machine) and the last task's to the caller. */
static bool read_edges(const timeline *t, double step, gaps *g)
{
    double first = step, last = 0;
    for (int i = 0; i < t->p->n_tasks; i++) {
        first = t->starts[i] < first ? t->starts[i] : first;
        last = t->ends[i] > last ? t->ends[i] : last;
    }
    return t->p->n_tasks == 0 ||
           (pl_calib_add_delay(&g->delay[PL_DELAY_HANDOFF][pl_cost_contention(t->alone, 0, 0)],
                               first, 0, t->used - 1, 0) &&
            pl_calib_add_sample(&g->finish, step - last, 0, 0));
}

/* Files a delay under the contention resource r met at `when`, with the other resources
 * busy then and those the step uses (and, for a gap, the wake-up calls made first). */
static bool add_delay(const reading *how, const timeline *t, pl_delay delay, int r,
                      double when, double seconds, int calls)
{
    int busy, level = contention_at(t, how->cluster, r, when, &busy);
    return level < how->first_level ||
           pl_calib_add_delay(&how->g->delay[delay][level], seconds, busy, t->used - 1, calls);
}

/* The paced delays of one step (cost_model.h), each filed under the contention when it
 * arose: how late each paced task ended past its held time (at its due time), the
 * hand-off to an idle paced resource (at the release), the gap to a queued next task
 * (at the previous task's end), and the step's edges. */
static bool read_delays(const pl_program *p, const double *starts, const double *ends,
                        double step, const reading *how)
{
    timeline t = {0};
    int n = p->n_tasks;
    double *released = malloc(((size_t)n + 1) * sizeof *released);
    int *releaser = malloc(((size_t)n + 1) * sizeof *releaser);
    bool ok = released && releaser && open_timeline(&t, p, starts, ends, how);
    if (ok)
        last_releasers(p, ends, released, releaser);
    for (int j = 0; ok && j < n; j++) {
        int i = t.order[j], r = p->tasks[i].resource;
        if (t.cost[i].late >= 0) {
            double due = starts[i] + t.cost[i].held;
            ok = add_delay(how, &t, (pl_delay)t.cost[i].late, r, due, ends[i] - due, 0);
        }
        bool paced = r >= p->n_devices || how->cluster->devices[r].flops_per_second > 0;
        double previous_end = j > t.first[r] ? ends[t.order[j - 1]] : -1;
        if (!ok || !paced || !how->handoffs)
            continue;
        if (releaser[i] >= 0 && releaser[i] != r && previous_end <= released[i])
            ok = add_delay(how, &t, PL_DELAY_HANDOFF, r, released[i], starts[i] - released[i], 0);
        else if (previous_end >= 0 && (releaser[i] < 0 || previous_end >= released[i]))
            ok = add_delay(how, &t, PL_DELAY_NEXT, r, previous_end, starts[i] - previous_end,
                           signals(p, t.order[j - 1], ends, released, releaser));
    }
    if (ok && how->handoffs)
        ok = read_edges(&t, step, how->g);
    close_timeline(&t);
    free(released);
    free(releaser);
    return ok;
}

/* Sets the workload's plan, runs warm-up steps and `steps` steps, reads each timeline. */
static pl_status read_steps(workload *w, int steps, const reading *how, pl_error *err)
{
    pl_fit fit;
    int warmup = how->lateness ? 2 : 1; /* paced threads' first steps start cold */
    pl_status status = pl_executor_set_plan(w->ex, w->plan, &fit, err);
    for (int s = 0; status == PL_OK && s < warmup + steps; s++) {
        if ((status = pl_calib_step(w, s + 1, err)) != PL_OK || s < warmup)
            continue;
        const pl_program *p = pl_executor_program(w->ex);
        const double *starts = pl_executor_task_starts(w->ex), *ends = pl_executor_task_ends(w->ex);
        if ((how->copies && !read_copies(p, starts, ends, how->g)) ||
            (how->gaps && !read_gaps(p, starts, ends, how)) ||
            (how->remote && !read_remote(p, starts, ends, how->m, how->cluster, how->g)) ||
            (how->lateness &&
             !read_delays(p, starts, ends, pl_executor_step_seconds(w->ex), how)))
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

pl_status pl_calib_overheads(const char *dir, int steps, const pl_cost_model *m,
                             const volatile sig_atomic_t *interrupt, gaps *g, pl_error *err)
{
    /* cnn: copies of megabytes, beyond the caches */
    static const char *const models[] = {"small/mlp-small", "small/transformer-small",
                                         "small/inception-small", "mlp", "lstm_lm", "moe",
                                         "cnn"};
    enum { N_SMALL = 3 };
    pl_cluster *sleeping = pl_calib_cluster(2, 1, 0, -1, err);
    pl_cluster *polling = sleeping ? pl_calib_cluster(2, 1, 0, 0, err) : NULL;
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
            status = run_dealt(path, polling, steps, interrupt,
                               &(reading){.g = g, .copies = true, .gaps = true, .remote = true,
                                          .m = m, .polling = true, .cluster = polling}, err);
    }
    pl_cluster_free(sleeping);
    pl_cluster_free(polling);
    return status;
}

/* `devices` devices of one thread paced at `rate`, joined by links as the bundled paced
 * clusters' are. */
static pl_cluster *paced_cluster(double rate, int devices, pl_error *err)
{
    char text[2048];
    int at = snprintf(text, sizeof text, "{\"format\": \"placer-cluster\", \"version\": 1, "
                      "\"name\": \"calibration\", \"devices\": [");
    for (int d = 0; d < devices; d++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s{\"name\": \"d%d\", \"threads\": "
                       "1, \"memory_bytes\": %lld, \"flops_per_second\": %g}", d ? ", " : "", d,
                       1LL << 40, rate);
    snprintf(text + at, sizeof text - (size_t)at, "], \"default_link\": {\"bytes_per_second\": "
             "%g, \"latency_seconds\": %g}}", LINK_BYTES_PER_SECOND, LINK_LATENCY);
    return pl_cluster_load_buffer(text, strlen(text), "calibration", err);
}

/* A pipeline as the placement search makes them: contiguous blocks of forward ops of about
 * equal FLOPs (fewer when one op outweighs a block), block d on device d; `micro_batches`
 * (or as many as divide the batch and the model allows), 1F1B, weight gradients deferred
 * into the bubbles, so every device is busy. */
static void pipeline(const pl_graph *g, pl_plan *plan, int stages, int micro_batches)
{
    double total = 0, done = 0;
    for (int o = 0; o < g->n_forward_ops; o++)
        total += g->ops[o].flops;
    int stage = 0, last = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        int block = total > 0 ? (int)((done + 0.5 * g->ops[o].flops) / total * stages) : 0;
        stage += o > 0 && block != last;
        last = block;
        plan->device[o] = plan->stage[o] = stage;
        done += g->ops[o].flops;
    }
    plan->n_stages = stage + 1;
    plan->micro_batches = micro_batches;
    while (!pl_graph_allows_micro_batches(g, plan->micro_batches))
        plan->micro_batches /= 2;
    plan->schedule = PL_SCHEDULE_1F1B;
    plan->defer_weight_gradients = true;
}

/* Ops dealt to the devices one by one: every op's output crosses a link. */
static void round_robin(const pl_graph *g, pl_plan *plan, int devices)
{
    for (int o = 0; o < g->n_forward_ops; o++)
        plan->device[o] = o % devices;
}

pl_status pl_calib_paced_lateness(const char *dir, int steps, const pl_cost_model *m,
                                  const volatile sig_atomic_t *interrupt, gaps *g, pl_error *err)
{
    /* full-size models pipelined, as the suite runs on paced-4 (else, in a reduced suite:
     * tests, a small one paced slower so that its ops are as long), read for the levels
     * where kernels hold cores; small ones pipelined, dealt over the devices and on one
     * device alone, with many short tasks, read at every level. A full-size step's moments
     * with no kernel running are short gaps between long kernels, whose ends and starts
     * lengthen the delays there (means of 8-10 us where small models' are 2-6 us); such
     * delays are a vanishing share of a full-size step and most of a small one's. */
    typedef enum layout { PIPELINED, DEALT, ALONE } layout;
    static const struct {
        const char *model;
        double rate;
        layout layout;
        int devices;       /* dealt over, or pipelined in as many stages */
        int micro_batches; /* pipelined */
    } workloads[] = {
        {"lstm_lm", 2e9, PIPELINED, 4, 8}, {"transformer", 2e9, PIPELINED, 4, 8},
        {"small/mlp-small", 1e8, PIPELINED, 4, 8}, {"small/transformer-small", 2e9, DEALT, 4, 1},
        {"small/inception-small", 2e9, DEALT, 8, 1}, {"small/lstm_lm-small", 2e9, PIPELINED, 4, 8},
        {"small/seq2seq-small", 2e9, PIPELINED, 2, 4}, {"small/moe-small", 2e9, PIPELINED, 3, 2},
        {"small/transformer-small", 2e9, ALONE, 1, 1}, {"small/moe-small", 2e9, ALONE, 1, 1}};
    enum { FALLBACK = 2, N_LONG = 3 };
    pl_status status = PL_OK;
    bool ran = false;
    for (size_t k = 0; status == PL_OK && k < sizeof workloads / sizeof *workloads; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, workloads[k].model);
        if ((k == FALLBACK && ran) || access(path, R_OK) != 0)
            continue;
        pl_cluster *c = paced_cluster(workloads[k].rate, workloads[k].devices, err);
        workload w = {0};
        status = c ? pl_calib_open(&w, path, 0, c, interrupt, err) : err ? err->status : PL_ENOMEM;
        if (status == PL_OK) {
            if (workloads[k].layout == DEALT)
                round_robin(w.g, w.plan, workloads[k].devices);
            else if (workloads[k].layout == PIPELINED)
                pipeline(w.g, w.plan, workloads[k].devices, workloads[k].micro_batches);
            /* hand-offs and gaps from the small models alone, where a step is mostly
             * made of them; the full-size pipelines' are fewer, and slower
             * (docs/simulator.md) */
            bool small = k >= N_LONG;
            status = read_steps(&w, small ? 8 * steps : steps,
                                &(reading){.g = g, .lateness = true, .handoffs = small, .m = m,
                                           .cluster = c, .first_level = small ? 0 : 3}, err);
            ran = ran || k < FALLBACK;
        }
        pl_calib_close(&w);
        pl_cluster_free(c);
    }
    return status;
}

void pl_calib_fit_remote_inputs(pl_cost_model *m, const gaps *g)
{
    double *v = malloc(((size_t)g->local.n + (size_t)g->remote.n + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; v && i < g->local.n; i++)
        if (g->local.flops[i] <= REMOTE_MAX_SECONDS)
            v[n++] = g->local.seconds[i] / g->local.flops[i];
    double pace = n > 0 ? pl_median(v, n) : 0;
    n = 0;
    for (int i = 0; v && pace > 0 && i < g->remote.n; i++)
        if (g->remote.flops[i] <= REMOTE_MAX_SECONDS)
            v[n++] = g->remote.seconds[i] - pace * g->remote.flops[i];
    double extra = n > 0 ? pl_median(v, n) : 0;
    m->remote_seconds = extra > 0 && extra < 1e-3 ? extra : 0;
    free(v);
}
