/* Executor benchmarks, run by tools/bench-exec. Four tables:
 *
 *   branch    two-branch on local-2: one branch per native device against one device
 *   pipeline  deep-mlp on paced-4: 4-stage GPipe and 1F1B against one device
 *   overhead  a chain of tiny ops: the executor against the one-device session, per task
 *   switch    pl_executor_set_plan on inception and transformer on paced-4
 *
 * Configurations compared in a table run in this one process, each on its own executor
 * (or session) built once, and take turns step by step, the order reversed every round:
 * whatever else the machine does hits all of them alike, and ratios are taken per round
 * (paired) as well as between medians. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "data.h"
#include "executor.h"
#include "measure.h"
#include "load.h"
#include "rng.h"
#include "session.h"

enum { MAX_REPEATS = 1000, STAGES = 4 };

/* Op names that tools/gen-models gives the second branch of two-branch. */
#define RIGHT_BRANCH "right/"
/* Chain steps take milliseconds: table 3 runs this many rounds per repeat. */
#define OVERHEAD_ROUNDS_PER_REPEAT 5
/* Session steps that measure a pipeline's real compute (a check, not a comparison). */
#define REAL_COMPUTE_STEPS 3

typedef enum table { BRANCH, PIPELINE, OVERHEAD, SWITCH, N_TABLES } table;
static const char *const table_names[N_TABLES] = {"branch", "pipeline", "overhead", "switch"};

typedef struct options {
    const char *top;   /* the source tree: graphs/ under it */
    const char *chain; /* table 3's model (tools/gen-chain) */
    int repeats, warmup, plans;
    bool run[N_TABLES];
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: exec [--top DIR] [--chain MODEL.json] [--repeats N] [--warmup N]\n"
            "            [--plans N] [--only TABLE[,TABLE...]]\n"
            "Executor benchmarks; TABLE is branch, pipeline, overhead or switch (all by\n"
            "default; overhead needs --chain, a model from tools/gen-chain).\n"
            "  --top DIR      the source tree holding graphs/ (default .)\n"
            "  --repeats N    measured rounds per configuration, 1-%d (default 7)\n"
            "  --warmup N     unmeasured steps per configuration first, 0-100 (default 2)\n"
            "  --plans N      plans per kind in the switch table, 1-100 (default 4)\n",
            MAX_REPEATS / OVERHEAD_ROUNDS_PER_REPEAT);
}

/* ---- small utilities ----------------------------------------------------------------- */

/* What the rest of the machine did during a table: the CPU time of every process (from
 * /proc/stat) less this one's. Another job on a core halves what a native device gets. */
typedef struct machine_mark {
    double wall, busy, own; /* seconds; busy < 0: /proc/stat unreadable */
} machine_mark;

static machine_mark machine_mark_now(void)
{
    machine_mark mark = {.wall = pl_now(), .busy = -1};
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    mark.own = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system,
                    &idle, &iowait, &irq, &softirq, &steal) == 8)
        mark.busy = (double)(user + nice + system + irq + softirq + steal) /
                    (double)sysconf(_SC_CLK_TCK);
    if (f)
        fclose(f);
    return mark;
}

/* "other processes kept 0.95 of 2 cores busy meanwhile" since `start`. */
static void print_machine_load(const machine_mark *start)
{
    machine_mark end = machine_mark_now();
    double others = (end.busy - start->busy - (end.own - start->own)) / (end.wall - start->wall);
    if (start->busy < 0 || end.busy < 0)
        printf("   the load of other processes is unknown (no /proc/stat)\n");
    else
        printf("   other processes kept %.2f of %d cores busy meanwhile%s\n",
               others > 0 ? others : 0, pl_machine_cores(),
               others > 0.2 ? ": the measurement shared the cores" : "");
}

static void print_error(const pl_error *err)
{
    char line[2048];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "exec: %s\n", line);
}

/* ---- models, clusters, data ------------------------------------------------------------ */

typedef struct workload {
    pl_graph *g;       /* a training graph */
    pl_cluster *c;
    pl_dataset *data;  /* synthetic samples for its inputs, or NULL: zeros */
} workload;

static void workload_close(workload *w)
{
    pl_dataset_free(w->data);
    pl_cluster_free(w->c);
    pl_graph_free(w->g);
    *w = (workload){0};
}

/* TOP/graphs/MODEL.json trained on TOP/graphs/clusters/CLUSTER.json; a model ending in
 * ".json" is a path as it is, and a NULL cluster leaves w->c for the caller. Inputs get
 * synthetic samples, or stay zero when `samples` is false. */
static pl_status workload_open(workload *w, const options *o, const char *model,
                               const char *cluster, bool samples, pl_error *err)
{
    *w = (workload){0};
    if (!(w->g = bench_open_graph(o->top, model, err)) ||
        (samples && !(w->data = pl_dataset_open(w->g, "synthetic", 1, err))) ||
        (cluster && !(w->c = bench_open_cluster(o->top, cluster, err))))
        goto fail;
    return PL_OK;
fail:
    workload_close(w);
    return err->status;
}

/* One native device of one thread, not pinned: what a session runs on. */
static pl_cluster *one_native_device(pl_error *err)
{
    static const char text[] =
        "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": \"native-1\", "
        "\"devices\": [{\"name\": \"cpu\", \"threads\": 1, \"memory_bytes\": 8589934592}]}";
    pl_error_init(err, "native-1");
    return pl_cluster_load_buffer(text, sizeof text - 1, "native-1", err);
}

/* "paced (dev0 2 GFLOP/s; link dev0->dev1 1 GB/s + 20 us)" or "native, not paced". */
static void describe_pacing(const pl_cluster *c, char *buf, size_t cap)
{
    if (!c->paced) {
        snprintf(buf, cap, "native, not paced");
        return;
    }
    const pl_device *d = &c->devices[0];
    int at = snprintf(buf, cap, "paced: %s %.3g GFLOP/s", d->name, d->flops_per_second / 1e9);
    if (c->n_devices > 1 && at > 0 && (size_t)at < cap) {
        const pl_link *link = pl_cluster_link(c, 0, 1);
        snprintf(buf + at, cap - (size_t)at, "; link %s->%s %.3g GB/s + %.3g us", d->name,
                 c->devices[1].name, link->bytes_per_second / 1e9, link->latency_seconds * 1e6);
    }
}

/* ---- plans ---------------------------------------------------------------------------- */

/* The largest divisor of the batch not above `want`. */
static int micro_batches_for(const pl_graph *g, int want)
{
    int m = want < g->batch_size ? want : g->batch_size;
    while (g->batch_size % m != 0)
        m--;
    return m;
}

/* Forward op o on stage and device s when the midpoint of its FLOPs falls in the s-th of
 * `n_stages` equal shares of the forward FLOPs: contiguous stages of equal compute, which
 * follow the dataflow because ops are in topological order. stage_flops gets each
 * stage's forward FLOPs (at the full batch) when not NULL. */
static pl_plan *staged_plan(const pl_graph *g, int n_stages, int m, pl_schedule schedule,
                            double *stage_flops, pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (!plan)
        return NULL;
    double total = 0, before = 0;
    for (int o = 0; o < g->n_forward_ops; o++)
        total += g->ops[o].flops;
    for (int s = 0; stage_flops && s < n_stages; s++)
        stage_flops[s] = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        double flops = g->ops[o].flops;
        int s = total > 0 ? (int)((before + 0.5 * flops) / total * n_stages) : 0;
        s = s < n_stages ? s : n_stages - 1;
        plan->device[o] = plan->stage[o] = s;
        if (stage_flops)
            stage_flops[s] += flops;
        before += flops;
    }
    plan->n_stages = n_stages;
    plan->micro_batches = m;
    plan->schedule = schedule;
    return plan;
}

/* Every forward op on a random device, one stage. */
static pl_plan *random_plan(const pl_graph *g, int n_devices, int m, uint64_t seed,
                            pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (!plan)
        return NULL;
    for (int o = 0; o < g->n_forward_ops; o++)
        plan->device[o] = (int)(pl_rng_u64(seed, (uint64_t)o) % (uint64_t)n_devices);
    plan->micro_batches = m;
    return plan;
}

/* ---- contenders: the configurations a table compares ------------------------------------ */

typedef struct contender {
    const char *label;
    pl_executor *ex;      /* an executor with its plan set, or else */
    pl_session *session;  /* a one-device session of one thread */
    int micro_batches;    /* the session's */
    int tasks;            /* per step: the program's tasks, or the session's op runs */
    int64_t steps;
    double times[MAX_REPEATS]; /* seconds per measured round */
    double busy[MAX_REPEATS];  /* executors: the seconds its devices ran tasks, summed */
    int n_times;
} contender;

static void contender_free(contender *c)
{
    pl_executor_free(c->ex);
    pl_session_free(c->session);
    c->ex = NULL;
    c->session = NULL;
}

static void *contender_data(contender *c, int t)
{
    return c->ex ? pl_executor_data(c->ex, t) : pl_session_data(c->session, t);
}

/* One batch of samples into the contender's inputs; every step reuses it. */
static pl_status fill_inputs(contender *c, const workload *w, pl_error *err)
{
    if (!w->data)
        return PL_OK;
    void **inputs = calloc((size_t)w->g->n_tensors, sizeof *inputs);
    if (!inputs)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int t = 0; t < w->g->n_tensors; t++)
        if (w->g->tensors[t].kind == PL_TENSOR_INPUT)
            inputs[t] = contender_data(c, t);
    pl_dataset_fill(w->data, PL_SPLIT_TRAIN, 0, 0, w->g->batch_size, inputs);
    free(inputs);
    return PL_OK;
}

/* An executor on w's cluster running `plan`, which must fit. Takes the plan (NULL: the
 * caller could not make it, err says why). */
static pl_status executor_contender(contender *c, const char *label, const workload *w,
                                    pl_plan *plan, pl_error *err)
{
    const pl_cluster *cluster = w->c;
    *c = (contender){.label = label};
    pl_fit fit = {.fits = true};
    pl_status status = plan ? PL_OK : err->status;
    if (status == PL_OK && !(c->ex = pl_executor_new(w->g, cluster, NULL, err)))
        status = err->status;
    if (status == PL_OK)
        status = pl_executor_set_plan(c->ex, plan, &fit, err);
    if (status == PL_OK && !fit.fits)
        status = pl_error_set(err, PL_EINPUT, NULL, "%s: the plan needs %lld bytes on device %s, "
                              "which has %lld", label, (long long)fit.need,
                              cluster->devices[fit.device].name, (long long)fit.capacity);
    if (status == PL_OK)
        status = fill_inputs(c, w, err);
    if (status == PL_OK)
        c->tasks = pl_executor_program(c->ex)->n_tasks;
    pl_plan_free(plan);
    return status;
}

static pl_status session_contender(contender *c, const char *label, const workload *w,
                                   int micro_batches, pl_error *err)
{
    *c = (contender){.label = label, .micro_batches = micro_batches};
    if (!(c->session = pl_session_new(w->g, 1, err)))
        return err->status;
    const pl_graph *g = w->g;
    for (int o = 0; o < g->n_ops; o++)
        c->tasks += g->ops[o].phase == PL_PHASE_UPDATE ? 1 : micro_batches;
    return fill_inputs(c, w, err);
}

/* The seconds the devices of the executor's last step spent in their tasks, summed. */
static double device_busy_seconds(const pl_executor *ex)
{
    const pl_program *p = pl_executor_program(ex);
    const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
    double busy = 0;
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].resource < p->n_devices)
            busy += ends[i] - starts[i];
    return busy;
}

/* One training step's wall time, the call as a user makes it. */
static pl_status contender_step(contender *c, double *seconds, pl_error *err)
{
    float loss;
    int64_t step = ++c->steps;
    double start = pl_now();
    pl_status status = c->ex ? pl_executor_step(c->ex, step, &loss, err)
                             : pl_session_train_step(c->session, step, c->micro_batches, &loss,
                                                     err);
    *seconds = pl_now() - start;
    return status;
}

/* `warmup` steps of each, then `rounds` rounds of one measured step each, in an order
 * reversed every round so that no contender always follows the same one. */
static pl_status measure_alternating(contender *cs, int n, int warmup, int rounds,
                                     pl_error *err)
{
    double ignored;
    for (int k = 0; k < warmup * n; k++)
        if (contender_step(&cs[k % n], &ignored, err) != PL_OK)
            return err->status;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < n; k++) {
            contender *c = &cs[r % 2 ? n - 1 - k : k];
            if (contender_step(c, &c->times[c->n_times], err) != PL_OK)
                return err->status;
            c->busy[c->n_times++] = c->ex ? device_busy_seconds(c->ex) : 0;
        }
    return PL_OK;
}

static pl_stats time_stats(const contender *c)
{
    double sorted[MAX_REPEATS];
    memcpy(sorted, c->times, (size_t)c->n_times * sizeof *sorted);
    return pl_stats_of(sorted, c->n_times);
}

/* Per round: base's time over c's (a speedup), or (c - base) / c's tasks (an overhead). */
static pl_stats paired_speedup(const contender *base, const contender *c)
{
    double r[MAX_REPEATS];
    for (int i = 0; i < c->n_times; i++)
        r[i] = base->times[i] / c->times[i];
    return pl_stats_of(r, c->n_times);
}

/* Per round: c's device time over base's, for the same kernels: 1 when the cores that
 * compute at once do not slow each other down. */
static pl_stats paired_busy_ratio(const contender *base, const contender *c)
{
    double r[MAX_REPEATS];
    for (int i = 0; i < c->n_times; i++)
        r[i] = c->busy[i] / base->busy[i];
    return pl_stats_of(r, c->n_times);
}

static pl_stats paired_overhead(const contender *base, const contender *c)
{
    double r[MAX_REPEATS];
    for (int i = 0; i < c->n_times; i++)
        r[i] = (c->times[i] - base->times[i]) / c->tasks;
    return pl_stats_of(r, c->n_times);
}

/* Median, min and max, the max followed by "!" when the steps were unstable (measure.h:
 * two speeds or a drift), else by a space. */
static void print_times(const contender *c)
{
    pl_stats s = time_stats(c);
    pl_series series;
    bool unstable = pl_series_examine(c->times, c->n_times, &series, NULL) == PL_OK &&
                    series.unstable;
    printf("%9.2f %8.2f %8.2f%s", s.median * 1e3, s.min * 1e3, s.max * 1e3,
           unstable ? "!" : " ");
}

/* ---- 1. branch parallelism ------------------------------------------------------------- */

/* The ops of the right branch on device 1, the rest on device 0. */
static pl_plan *branch_plan(const pl_graph *g, pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    int moved = 0;
    for (int o = 0; plan && o < g->n_forward_ops; o++)
        moved += plan->device[o] = strncmp(g->ops[o].name, RIGHT_BRANCH,
                                           strlen(RIGHT_BRANCH)) == 0;
    if (plan && moved == 0) {
        pl_error_set(err, PL_EINPUT, NULL, "no op's name starts with \"%s\": not the two-branch "
                     "model of tools/gen-models --bench", RIGHT_BRANCH);
        pl_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* The table's first lines: what ran where, how it was measured, what else ran. */
static void print_heading(const char *title, const workload *w, const options *o,
                          int rounds, const machine_mark *start)
{
    char pacing[256];
    describe_pacing(w->c, pacing, sizeof pacing);
    int threads = w->c->devices[0].threads;
    printf("\n== %s: %s (batch %d) on %s (%d device%s of %d thread%s, %s), %d cores\n", title,
           w->g->name, w->g->batch_size, w->c->name, w->c->n_devices,
           w->c->n_devices == 1 ? "" : "s", threads, threads == 1 ? "" : "s", pacing,
           pl_machine_cores());
    printf("   %d measured rounds, configurations alternating step by step, after %d warm-up "
           "steps each; times are the wall time of one step (ms); !: a configuration's "
           "steps ran at two speeds or drifted (measure.h)\n", rounds, o->warmup);
    print_machine_load(start);
}

static void print_branch_table(const options *o, const workload *w, const contender *cs,
                               const machine_mark *start)
{
    print_heading("1. Branch parallelism", w, o, o->repeats, start);
    printf("   the right branch on device 1; input, left branch, join and head on device 0;\n"
           "   device ms: the time the devices spent in tasks, summed over devices (median)\n");
    printf("%-24s %6s %9s %8s %8s %10s   %s\n", "configuration", "tasks", "median", "min", "max",
           "device ms", "speedup: of medians (paired min-max)");
    for (int i = 0; i < 2; i++) {
        pl_stats ratio = paired_speedup(&cs[0], &cs[i]);
        double busy[MAX_REPEATS];
        memcpy(busy, cs[i].busy, (size_t)cs[i].n_times * sizeof *busy);
        printf("%-24s %6d ", cs[i].label, cs[i].tasks);
        print_times(&cs[i]);
        printf(" %10.2f   %.2fx (%.2f-%.2f)\n", pl_stats_of(busy, cs[i].n_times).median * 1e3,
               time_stats(&cs[0]).median / time_stats(&cs[i]).median, ratio.min, ratio.max);
    }
    pl_stats slowdown = paired_busy_ratio(&cs[0], &cs[1]);
    printf("the same kernels took %.2fx (paired %.2f-%.2f) as long on two cores at once as on "
           "one alone:\n1.00 when the cores are independent, more when they share a physical "
           "core or memory bandwidth\n", slowdown.median, slowdown.min, slowdown.max);
}

static pl_status table_branch(const options *o, pl_error *err)
{
    machine_mark start = machine_mark_now();
    workload w;
    if (workload_open(&w, o, "bench/two-branch", "local-2", true, err) != PL_OK)
        return err->status;
    contender cs[2] = {{0}};
    pl_status status = executor_contender(&cs[0], "everything on device 0", &w,
                                          pl_plan_new(w.g, err), err);
    if (status == PL_OK)
        status = executor_contender(&cs[1], "one branch per device", &w,
                                    branch_plan(w.g, err), err);
    if (status == PL_OK)
        status = measure_alternating(cs, 2, o->warmup, o->repeats, err);
    if (status == PL_OK)
        print_branch_table(o, &w, cs, &start);
    for (int i = 0; i < 2; i++)
        contender_free(&cs[i]);
    workload_close(&w);
    return status;
}

/* ---- 2. pipelines ------------------------------------------------------------------------ */

/* The real compute of a step of m micro-batches: a one-thread session's median step. */
static pl_status real_compute(const workload *w, int m, int steps, double *seconds,
                              pl_error *err)
{
    contender c;
    pl_status status = session_contender(&c, "real compute", w, m, err);
    if (status == PL_OK)
        status = measure_alternating(&c, 1, 1, steps, err);
    if (status == PL_OK)
        *seconds = time_stats(&c).median;
    contender_free(&c);
    return status;
}

/* What pacing holds a task for on its resource: FLOPs at the device's rate, or latency
 * plus bytes at the link's bandwidth; 0 when native. */
static double modelled_seconds(const pl_program *p, const pl_cluster *c, const pl_task *task)
{
    if (task->resource < p->n_devices) {
        double rate = c->devices[task->resource].flops_per_second;
        return rate > 0 ? pl_task_flops(p, task) / rate : 0;
    }
    const pl_link_use *use = &p->links[task->resource - p->n_devices];
    const pl_link *link = pl_cluster_link(c, use->from, use->to);
    double rate = link->bytes_per_second;
    return link->latency_seconds + (rate > 0 ? (double)pl_task_bytes(p, task) / rate : 0);
}

/* How long a task of the executor's last step ran past its modelled time, on average:
 * the cost of pacing itself (waking up after a sleep) and of compute slower than modelled. */
static double mean_lateness(const pl_executor *ex, const pl_cluster *c)
{
    const pl_program *p = pl_executor_program(ex);
    const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
    double late = 0;
    for (int i = 0; i < p->n_tasks; i++)
        late += ends[i] - starts[i] - modelled_seconds(p, c, &p->tasks[i]);
    return late / p->n_tasks;
}

static const char *schedule_name(pl_schedule schedule)
{
    return schedule == PL_SCHEDULE_1F1B ? "1F1B" : "GPipe";
}

static void print_pipeline_row(const contender *base, const contender *c, int m, double real,
                               double late)
{
    double ideal = (double)STAGES * m / (m + STAGES - 1), median = time_stats(c).median;
    double ratio = time_stats(base).median / median;
    pl_stats paired = paired_speedup(base, c);
    printf("%-10s %3d %6d ", c == base ? "one device" : c->label, m, c->tasks);
    print_times(c);
    if (c == base)
        ideal = 1;
    printf("   %5.2fx (%.2f-%.2f) %6.2fx %6.0f%% %9.1f %6.2f %7.1f\n", ratio, paired.min,
           paired.max, ideal, 100 * ratio / ideal, real * 1e3, real / median, late * 1e6);
}

enum { N_MICRO = 3, N_PIPELINES = 2 * N_MICRO };
static const int pipeline_micro_batches[N_MICRO] = {8, 16, 32};

/* Table 2's measurements: one device, then GPipe and 1F1B for each micro-batch count. */
typedef struct pipeline_runs {
    contender cs[1 + N_PIPELINES];
    int m[1 + N_PIPELINES];
    double real[1 + N_PIPELINES]; /* seconds of real compute per step */
    double stage_flops[STAGES];
} pipeline_runs;

static pl_status pipeline_contenders(const workload *w, pipeline_runs *runs, pl_error *err)
{
    runs->m[0] = 1;
    pl_status status = executor_contender(&runs->cs[0], "one device", w, pl_plan_new(w->g, err),
                                          err);
    for (int i = 1; i <= N_PIPELINES && status == PL_OK; i++) {
        pl_schedule schedule = i % 2 ? PL_SCHEDULE_GPIPE : PL_SCHEDULE_1F1B;
        runs->m[i] = micro_batches_for(w->g, pipeline_micro_batches[(i - 1) / 2]);
        status = executor_contender(&runs->cs[i], schedule_name(schedule), w,
                                    staged_plan(w->g, STAGES, runs->m[i], schedule,
                                                runs->stage_flops, err), err);
    }
    return status;
}

static pl_status pipeline_real_compute(const workload *w, pipeline_runs *runs, pl_error *err)
{
    pl_status status = PL_OK;
    for (int i = 0; i <= N_PIPELINES && status == PL_OK; i++)
        if (i < 2 || runs->m[i] != runs->m[i - 1]) /* GPipe and 1F1B compute alike */
            status = real_compute(w, runs->m[i], REAL_COMPUTE_STEPS, &runs->real[i], err);
        else
            runs->real[i] = runs->real[i - 1];
    return status;
}

static void print_pipeline_table(const options *o, const workload *w, const pipeline_runs *runs,
                                 const machine_mark *start)
{
    print_heading("2. Pipelines", w, o, o->repeats, start);
    printf("   %d stages by forward FLOPs, stage = device:", STAGES);
    for (int s = 0; s < STAGES; s++)
        printf(" %s%.1f", s ? "/ " : "", runs->stage_flops[s] / 1e6);
    printf(" MFLOP\n");
    printf("   throughput: one device's median step over this one's (paired min-max); "
           "ideal: S*m/(m+S-1);\n"
           "   real ms: the step's compute on one core (1-thread session); cores: real ms over "
           "the step, of %d;\n"
           "   late us: how long a task of the last step ran past its modelled time, on "
           "average\n", pl_machine_cores());
    printf("%-10s %3s %6s %9s %8s %8s   %-19s %7s %7s %9s %6s %7s\n", "schedule", "m", "tasks",
           "median", "min", "max", "throughput", "ideal", "of it", "real ms", "cores", "late us");
    for (int i = 0; i <= N_PIPELINES; i++)
        print_pipeline_row(&runs->cs[0], &runs->cs[i], runs->m[i], runs->real[i],
                           mean_lateness(runs->cs[i].ex, w->c));
}

static pl_status table_pipeline(const options *o, pl_error *err)
{
    machine_mark start = machine_mark_now();
    workload w;
    if (workload_open(&w, o, "bench/deep-mlp", "paced-4", true, err) != PL_OK)
        return err->status;
    pipeline_runs *runs = calloc(1, sizeof *runs);
    pl_status status = runs ? pipeline_contenders(&w, runs, err)
                            : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK)
        status = measure_alternating(runs->cs, 1 + N_PIPELINES, o->warmup, o->repeats, err);
    if (status == PL_OK)
        status = pipeline_real_compute(&w, runs, err);
    if (status == PL_OK)
        print_pipeline_table(o, &w, runs, &start);
    for (int i = 0; runs && i <= N_PIPELINES; i++)
        contender_free(&runs->cs[i]);
    free(runs);
    workload_close(&w);
    return status;
}

/* ---- 3. per-task overhead ---------------------------------------------------------------- */

static double largest_op_flops(const pl_graph *g)
{
    double largest = 0;
    for (int o = 0; o < g->n_ops; o++)
        largest = g->ops[o].flops > largest ? g->ops[o].flops : largest;
    return largest;
}

static void print_overhead_table(const options *o, const workload *w, const contender *cs,
                                 int rounds, const machine_mark *start)
{
    print_heading("3. Per-task overhead", w, o, rounds, start);
    printf("   %d ops in training, the largest %.1f kFLOP; the session runs them in order on "
           "the calling thread\n", w->g->n_ops, largest_op_flops(w->g) / 1e3);
    printf("%-10s %6s %9s %8s %8s   %s\n", "runner", "tasks", "median", "min", "max",
           "us per task (median step / tasks)");
    for (int i = 0; i < 2; i++) {
        printf("%-10s %6d ", cs[i].label, cs[i].tasks);
        print_times(&cs[i]);
        printf("   %.2f\n", time_stats(&cs[i]).median / cs[i].tasks * 1e6);
    }
    pl_stats extra = paired_overhead(&cs[0], &cs[1]);
    printf("executor - session: %.2f us per task (paired rounds: median; min %.2f, max %.2f)\n",
           extra.median * 1e6, extra.min * 1e6, extra.max * 1e6);
}

static pl_status table_overhead(const options *o, pl_error *err)
{
    machine_mark start = machine_mark_now();
    /* Zero inputs: gen-chain's residual blocks have no normalisation, and on samples their
     * activations overflow to NaN in the first step; zeros stay finite and cost the
     * kernels just as much. */
    workload w;
    if (workload_open(&w, o, o->chain, NULL, false, err) != PL_OK)
        return err->status;
    contender cs[2] = {{0}};
    int rounds = o->repeats * OVERHEAD_ROUNDS_PER_REPEAT;
    pl_status status = (w.c = one_native_device(err)) ? PL_OK : err->status;
    if (status == PL_OK)
        status = session_contender(&cs[0], "session", &w, 1, err);
    if (status == PL_OK)
        status = executor_contender(&cs[1], "executor", &w, pl_plan_new(w.g, err), err);
    if (status == PL_OK)
        status = measure_alternating(cs, 2, o->warmup, rounds, err);
    if (status == PL_OK)
        print_overhead_table(o, &w, cs, rounds, &start);
    for (int i = 0; i < 2; i++)
        contender_free(&cs[i]);
    workload_close(&w);
    return status;
}

/* ---- 4. plan switches ---------------------------------------------------------------------- */

typedef enum plan_kind { RANDOM, PIPELINED, N_KINDS } plan_kind;
static const char *const kind_names[N_KINDS] = {"random devices, 1 stage", "4-stage pipeline"};

typedef struct switch_result {
    double *times; /* one per plan and measured pass */
    int n_times, min_tasks, max_tasks, fit, plans;
} switch_result;

/* Plan i of `kind`: micro-batches 1, 2, 4, 8, 1, ... (as the batch allows); pipelines
 * alternate GPipe and 1F1B. */
static pl_plan *switch_plan(const workload *w, plan_kind kind, int i, pl_error *err)
{
    int m = micro_batches_for(w->g, 1 << (i % 4));
    if (kind == RANDOM)
        return random_plan(w->g, w->c->n_devices, m, (uint64_t)i + 1, err);
    return staged_plan(w->g, STAGES, m, i % 2 ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE, NULL,
                       err);
}

/* Times one switch to `plan` into r (pass >= 0; pass -1 is the warm-up). */
static pl_status time_switch(pl_executor *ex, const pl_plan *plan, int pass, switch_result *r,
                             pl_error *err)
{
    pl_fit fit;
    double start = pl_now();
    pl_status status = pl_executor_set_plan(ex, plan, &fit, err);
    double seconds = pl_now() - start;
    if (status != PL_OK || pass < 0)
        return status;
    r->times[r->n_times++] = seconds;
    if (pass == 0) {
        const pl_program *p = pl_executor_program(ex);
        int tasks = p ? p->n_tasks : 0;
        r->min_tasks = r->plans == 0 || tasks < r->min_tasks ? tasks : r->min_tasks;
        r->max_tasks = tasks > r->max_tasks ? tasks : r->max_tasks;
        r->fit += fit.fits;
        r->plans++;
    }
    return PL_OK;
}

/* The plans of both kinds in turn, a warm-up pass (arenas grow) then o->repeats passes. */
static pl_status measure_switches(const options *o, const workload *w, pl_plan **plans,
                                  switch_result *results, pl_error *err)
{
    pl_executor *ex = pl_executor_new(w->g, w->c, NULL, err);
    if (!ex)
        return err->status;
    pl_status status = PL_OK;
    for (int pass = -1; pass < o->repeats && status == PL_OK; pass++)
        for (int i = 0; i < N_KINDS * o->plans && status == PL_OK; i++)
            status = time_switch(ex, plans[i], pass, &results[i % N_KINDS], err);
    pl_executor_free(ex);
    return status;
}

static pl_status switch_model(const options *o, const char *model, pl_error *err)
{
    workload w;
    if (workload_open(&w, o, model, "paced-4", true, err) != PL_OK)
        return err->status;
    int n = N_KINDS * o->plans;
    pl_plan **plans = calloc((size_t)n, sizeof *plans);
    switch_result results[N_KINDS] = {{0}};
    bool allocated = plans != NULL;
    for (int k = 0; k < N_KINDS; k++)
        allocated &= (results[k].times = malloc((size_t)o->plans * (size_t)o->repeats *
                                                sizeof *results[k].times)) != NULL;
    pl_status status = allocated ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < n && status == PL_OK; i++)
        if (!(plans[i] = switch_plan(&w, (plan_kind)(i % N_KINDS), i / N_KINDS, err)))
            status = err->status;
    if (status == PL_OK)
        status = measure_switches(o, &w, plans, results, err);
    for (int k = 0; k < N_KINDS && status == PL_OK; k++) {
        pl_stats s = pl_stats_of(results[k].times, results[k].n_times);
        printf("%-12s %-24s %5d %5d-%-6d %3d/%-3d %8.2f %8.2f %8.2f\n", w.g->name,
               kind_names[k], results[k].plans, results[k].min_tasks, results[k].max_tasks,
               results[k].fit, results[k].plans, s.median * 1e3, s.min * 1e3, s.max * 1e3);
    }
    for (int i = 0; plans && i < n; i++)
        pl_plan_free(plans[i]);
    free(plans);
    for (int k = 0; k < N_KINDS; k++)
        free(results[k].times);
    workload_close(&w);
    return status;
}

static pl_status table_switch(const options *o, pl_error *err)
{
    machine_mark start = machine_mark_now();
    printf("\n== 4. Plan switches: pl_executor_set_plan on paced-4 (4 devices; a switch runs "
           "no step, so pacing does not enter)\n");
    printf("   each plan set once to warm up, then %d passes over all plans of both kinds in "
           "turn; times in ms per switch\n", o->repeats);
    printf("%-12s %-24s %5s %-12s %-7s %8s %8s %8s\n", "model", "plans", "count", "tasks", "fit",
           "median", "min", "max");
    pl_status status = switch_model(o, "inception", err);
    if (status == PL_OK)
        status = switch_model(o, "transformer", err);
    if (status == PL_OK)
        print_machine_load(&start);
    return status;
}

/* ---- main ------------------------------------------------------------------------------ */

/* "branch,switch" into o->run; false on an unknown name. */
static bool parse_tables(const char *list, options *o)
{
    memset(o->run, 0, sizeof o->run);
    for (const char *name = list;; name++) {
        size_t length = strcspn(name, ",");
        int t = 0;
        while (t < N_TABLES && !(strlen(table_names[t]) == length &&
                                 strncmp(name, table_names[t], length) == 0))
            t++;
        if (t == N_TABLES)
            return false;
        o->run[t] = true;
        name += length;
        if (*name == '\0')
            return true;
    }
}

static bool parse_options(int argc, char **argv, options *o)
{
    *o = (options){.top = ".", .repeats = 7, .warmup = 2, .plans = 4};
    for (int t = 0; t < N_TABLES; t++)
        o->run[t] = true;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = value != NULL;
        if (strcmp(arg, "--top") == 0 && ok)
            o->top = value;
        else if (strcmp(arg, "--chain") == 0 && ok)
            o->chain = value;
        else if (strcmp(arg, "--repeats") == 0 && ok)
            ok = bench_parse_int(value, 1, MAX_REPEATS / OVERHEAD_ROUNDS_PER_REPEAT, &o->repeats);
        else if (strcmp(arg, "--warmup") == 0 && ok)
            ok = bench_parse_int(value, 0, 100, &o->warmup);
        else if (strcmp(arg, "--plans") == 0 && ok)
            ok = bench_parse_int(value, 1, 100, &o->plans);
        else if (strcmp(arg, "--only") == 0 && ok)
            ok = parse_tables(value, o);
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "exec: bad option or value: %s%s%s\n", arg, value ? " " : "",
                    value ? value : "");
            return false;
        }
        i++;
    }
    if (o->run[OVERHEAD] && !o->chain) {
        fprintf(stderr, "exec: the overhead table needs --chain MODEL.json (tools/gen-chain)\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    static pl_status (*const tables[N_TABLES])(const options *, pl_error *) = {
        table_branch, table_pipeline, table_overhead, table_switch};
    options o;
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (!parse_options(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    for (int t = 0; t < N_TABLES; t++) {
        pl_error err;
        pl_error_init(&err, NULL);
        if (o.run[t] && tables[t](&o, &err) != PL_OK) {
            print_error(&err);
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}
