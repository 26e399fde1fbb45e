/* Replica benchmarks, run by tools/bench-replicas. Two tables:
 *
 *   throughput  data parallelism: the transformer on paced-4 and paced-8 as 2, 4 and 8
 *               replicas of one device each, the optimizer state replicated and sharded,
 *               against one device; and device 0's peak memory
 *   allreduce   the 4 and 16 MiB gradients of bench/wide-layer and wider-layer summed by
 *               their replicas: a ring on paced-4, a hierarchy on paced-8 (two groups of
 *               four); the measured all-reduce against the algorithm's model and the
 *               simulator
 *
 * The configurations of a table run in this process on executors built once, and take
 * turns step by step, the order reversed every round. Every figure comes from paced
 * devices and links: the executor holds each kernel and copy to the declared rates. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "profile.h"
#include "program.h"
#include "simulate.h"

enum { MAX_CONFIGS = 8, MAX_ROUNDS = 200 };

typedef struct options {
    const char *top;
    int rounds, warmup;
    bool throughput, allreduce;
} options;

typedef struct config {
    char label[64];
    int replicas;
    pl_executor *ex;
    double predicted, predicted_span;
    double steps[MAX_ROUNDS], spans[MAX_ROUNDS]; /* a step; the all-reduce's span in it */
    double late[MAX_ROUNDS];  /* the share of its reduces whose add outlasted the link */
    int n;
} config;

static void usage(FILE *out)
{
    fprintf(out, "usage: replicas [--top DIR] [--rounds N] [--warmup N] [--only TABLE]\n"
                 "Replica benchmarks; TABLE is throughput or allreduce (both by default).\n"
                 "  --top DIR     the source tree holding graphs/ (default .)\n"
                 "  --rounds N    measured rounds, 3-%d (default 7)\n"
                 "  --warmup N    unmeasured steps per configuration first, 0-20 (default 2)\n",
            MAX_ROUNDS);
}

static void print_error(const pl_error *err)
{
    char line[2048];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "replicas: %s\n", line);
}

/* Replicas of the whole model, replica r on device r (one replica: every op on device 0),
 * the optimizer state sharded or not. */
static pl_plan *data_parallel(const pl_graph *g, int replicas, bool sharded, pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (plan && pl_plan_set_replicas(plan, replicas, err) != PL_OK) {
        pl_plan_free(plan);
        return NULL;
    }
    if (plan)
        plan->shard_optimizer_state = sharded;
    for (int r = 0; plan && r < replicas; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(plan, r)[o] = r;
    return plan;
}

/* Whether task t of p belongs to the all-reduce of `gradient` (a copy of it between two
 * devices, or a reduce into it). */
static bool in_allreduce(const pl_program *p, const pl_task *t, int gradient)
{
    if (t->kind == PL_TASK_REDUCE)
        return p->buffers[p->refs[t->first_ref + 1]].tensor == gradient;
    if (t->kind != PL_TASK_COPY)
        return false;
    const pl_transfer *x = &p->transfers[t->transfer];
    return x->tensor == gradient && x->from != x->to;
}

/* From the moment every replica's gradient is accumulated (the last accumulation's end:
 * as if the replicas met at a barrier) to the all-reduce's last task's end. */
static double span_of(const pl_program *p, const double *starts, const double *ends,
                      int gradient)
{
    const pl_graph *g = p->graph;
    double ready = -INFINITY, last = -INFINITY;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (in_allreduce(p, t, gradient))
            last = fmax(last, ends[i]);
        else if (t->kind == PL_TASK_OP && g->ops[t->op].phase == PL_PHASE_BACKWARD &&
                 pl_graph_updated_param(g, t->op) == g->tensors[gradient].param)
            ready = fmax(ready, ends[i]);
    }
    (void)starts;
    return last > ready ? last - ready : 0;
}

/* Of the gradient's reduces in a step, the share that ran more than 5% past their link's
 * time (latency and bytes at its rate, what pacing holds a reduce for): there the add
 * itself, on cores shared by every link thread, outlasted the transfer. */
static double late_reduces(const pl_program *p, const pl_cluster *c, const double *starts,
                           const double *ends, int gradient)
{
    int n = 0, late = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind != PL_TASK_REDUCE || !in_allreduce(p, t, gradient))
            continue;
        const pl_transfer *x = &p->transfers[t->transfer];
        const pl_link *l = pl_cluster_link(c, x->from, x->to);
        double hold = l->latency_seconds + (l->bytes_per_second > 0
                                                ? (double)pl_task_bytes(p, t) / l->bytes_per_second
                                                : 0);
        n++;
        late += ends[i] - starts[i] > 1.05 * hold;
    }
    return n ? (double)late / n : 0;
}

/* An executor running `plan` (taken), and its simulated step and all-reduce span. */
static pl_status open_config(config *k, const pl_graph *g, const pl_cluster *c,
                             const pl_cost_model *m, pl_plan *plan, int gradient,
                             pl_error *err)
{
    pl_status status = plan ? PL_OK : err->status;
    pl_fit fit = {.fits = true};
    if (status == PL_OK && !(k->ex = bench_open_executor(g, c, err)))
        status = err->status;
    if (status == PL_OK)
        status = pl_executor_set_plan(k->ex, plan, &fit, err);
    if (status == PL_OK && !fit.fits)
        status = pl_error_set(err, PL_EINPUT, NULL, "%s does not fit", k->label);
    const pl_program *p = status == PL_OK ? pl_executor_program(k->ex) : NULL;
    double *times = p ? malloc(2 * ((size_t)p->n_tasks + 1) * sizeof *times) : NULL;
    pl_simulation sim;
    if (p && !times)
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK)
        status = pl_simulate(p, c, m, &sim, times, times + p->n_tasks + 1, err);
    if (status == PL_OK) {
        k->predicted = sim.step_seconds;
        k->predicted_span = gradient >= 0 ? span_of(p, times, times + p->n_tasks + 1, gradient)
                                          : 0;
    }
    free(times);
    pl_plan_free(plan);
    return status;
}

/* Warm-up steps, then rounds of one step each, the order reversed every round. */
static pl_status measure(config *ks, int n, const options *o, const pl_cluster *c, int gradient,
                         pl_error *err)
{
    float loss;
    int64_t step = 0;
    for (int w = 0; w < o->warmup; w++)
        for (int i = 0; i < n; i++)
            if (pl_executor_step(ks[i].ex, ++step, &loss, err) != PL_OK)
                return err->status;
    for (int round = 0; round < o->rounds; round++)
        for (int j = 0; j < n; j++) {
            config *k = &ks[round % 2 ? n - 1 - j : j];
            if (pl_executor_step(k->ex, ++step, &loss, err) != PL_OK)
                return err->status;
            const pl_program *p = pl_executor_program(k->ex);
            k->steps[k->n] = pl_executor_step_seconds(k->ex);
            const double *starts = pl_executor_task_starts(k->ex);
            const double *ends = pl_executor_task_ends(k->ex);
            k->late[k->n] = gradient >= 0 ? late_reduces(p, c, starts, ends, gradient) : 0;
            k->spans[k->n++] = gradient >= 0 ? span_of(p, starts, ends, gradient) : 0;
        }
    return PL_OK;
}

static void close_configs(config *ks, int n)
{
    for (int i = 0; i < n; i++)
        pl_executor_free(ks[i].ex);
}

static pl_status open_workload(const options *o, const char *model, const char *cluster,
                               pl_graph **g, pl_cluster **c, pl_cost_model *m, pl_error *err)
{
    bool calibrated = false;
    if (!(*g = bench_open_graph(o->top, model, err)) ||
        !(*c = bench_open_cluster(o->top, cluster, err)))
        return err->status;
    memset(m, 0, sizeof *m);
    return pl_profile_load(m, *c, false, NULL, NULL, NULL, &calibrated, err);
}

/* ---- 1. throughput ------------------------------------------------------------------------ */

static pl_status throughput_on(const options *o, const char *cluster, pl_error *err)
{
    pl_graph *g = NULL;
    pl_cluster *c = NULL;
    pl_cost_model m = {0};
    config *ks = calloc(MAX_CONFIGS, sizeof *ks);
    int n = 0;
    pl_status status = ks ? open_workload(o, "transformer", cluster, &g, &c, &m, err)
                          : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int r = 1; status == PL_OK && r <= c->n_devices; r *= 2)
        for (int sharded = 0; status == PL_OK && sharded <= (r > 1); sharded++) {
            if (g->batch_size % r != 0)
                continue;
            config *k = &ks[n++];
            k->replicas = r;
            snprintf(k->label, sizeof k->label, r == 1 ? "one device" : "%d replicas%s", r,
                     sharded ? ", sharded" : "");
            status = open_config(k, g, c, &m, data_parallel(g, r, sharded, err), -1, err);
        }
    if (status == PL_OK)
        status = measure(ks, n, o, c, -1, err);
    if (status == PL_OK) {
        printf("\n%s: %s (batch %d), %d rounds after %d warm-up steps each, paced\n", c->name,
               g->name, g->batch_size, o->rounds, o->warmup);
        printf("%-22s %10s %8s %8s %10s %9s %10s %9s %9s\n", "plan", "median ms", "min",
               "max", "samples/s", "speedup", "simulated", "error", "peak MiB");
        double one = pl_stats_of(ks[0].steps, ks[0].n).median;
        for (int i = 0; i < n; i++) {
            pl_stats s = pl_stats_of(ks[i].steps, ks[i].n);
            printf("%-22s %10.1f %8.1f %8.1f %10.1f %8.2fx %10.1f %+8.1f%% %9.1f\n",
                   ks[i].label, s.median * 1e3, s.min * 1e3, s.max * 1e3,
                   g->batch_size / s.median, one / s.median, ks[i].predicted * 1e3,
                   100 * (ks[i].predicted - s.median) / s.median,
                   (double)pl_executor_program(ks[i].ex)->memory[0].total / (1 << 20));
        }
    }
    close_configs(ks, n);
    free(ks);
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    pl_graph_free(g);
    return status;
}

static pl_status table_throughput(const options *o, pl_error *err)
{
    printf("\n== 1. Data parallelism: replicas of the whole model, one device each, against "
           "one device (speedup: of the medians; sharded: the optimizer state; peak: device "
           "0's memory)\n");
    pl_status status = throughput_on(o, "paced-4", err);
    return status == PL_OK ? throughput_on(o, "paced-8", err) : status;
}

/* ---- 2. the all-reduce --------------------------------------------------------------------- */

/* The all-reduce of `bytes` over devices 0 .. n-1 of c, as the program builds it: a ring
 * over equal links (2(n-1) steps of a part of bytes / n each), or over k groups of g joined
 * by slower links, a ring inside each group (bytes / g a step), a ring between the groups
 * (bytes / (g k) a step, the g parts on g links at once), and the ring inside again. Each
 * step a link's latency and its bytes at the link's rate. *ring: a ring over the slowest
 * link, the formula of the literature. */
static double allreduce_model(const pl_cluster *c, int n, double bytes, double *ring)
{
    double slow_bw = INFINITY, slow_latency = 0, fast_bw = 0, fast_latency = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const pl_link *l = pl_cluster_link(c, i, j);
            if (i == j)
                continue;
            if (l->bytes_per_second < slow_bw)
                slow_bw = l->bytes_per_second, slow_latency = l->latency_seconds;
            if (l->bytes_per_second > fast_bw)
                fast_bw = l->bytes_per_second, fast_latency = l->latency_seconds;
        }
    *ring = 2.0 * (n - 1) / n * bytes / slow_bw + 2.0 * (n - 1) * slow_latency;
    int all[PL_MAX_DEVICES], group[PL_MAX_DEVICES];
    for (int d = 0; d < n; d++)
        all[d] = d;
    int k = pl_cluster_groups(c, all, n, group), g = n / k;
    if (k == 1 || k == n)
        return *ring;
    return 2.0 * (g - 1) * (fast_latency + bytes / g / fast_bw) +
           2.0 * (k - 1) * (slow_latency + bytes / g / k / slow_bw);
}

static pl_status allreduce_on(const options *o, const char *model, const char *cluster,
                              pl_error *err)
{
    pl_graph *g = NULL;
    pl_cluster *c = NULL;
    pl_cost_model m = {0};
    config *ks = calloc(MAX_CONFIGS, sizeof *ks);
    int n = 0;
    pl_status status = ks ? open_workload(o, model, cluster, &g, &c, &m, err)
                          : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    int weight = status == PL_OK ? pl_graph_find_tensor(g, "wide/w") : -1;
    int gradient = -1;
    for (int t = 0; weight >= 0 && t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_STATE && g->tensors[t].param == weight &&
            strstr(g->tensors[t].name, "/grad"))
            gradient = t;
    if (status == PL_OK && gradient < 0)
        status = pl_error_set(err, PL_EINPUT, NULL, "%s has no \"wide/w\" gradient: "
                              "regenerate graphs/bench (tools/gen-models --bench)", model);
    for (int r = 2; status == PL_OK && r <= c->n_devices; r *= 2) {
        config *k = &ks[n++];
        k->replicas = r;
        snprintf(k->label, sizeof k->label, "%d replicas", r);
        status = open_config(k, g, c, &m, data_parallel(g, r, false, err), gradient, err);
    }
    if (status == PL_OK)
        status = measure(ks, n, o, c, gradient, err);
    if (status == PL_OK) {
        double bytes = (double)pl_tensor_bytes(&g->tensors[gradient]);
        printf("\n%s: %s's \"%s\" (%.1f MiB), %d rounds after %d warm-up steps each, paced\n",
               c->name, g->name, g->tensors[gradient].name, bytes / (1 << 20), o->rounds,
               o->warmup);
        printf("%-12s %10s %8s %8s %9s %8s %10s %8s %10s %10s\n", "replicas", "median ms",
               "min", "max", "model ms", "meas/mod", "simulated", "sim/meas", "ring ms",
               "late adds");
        for (int i = 0; i < n; i++) {
            pl_stats s = pl_stats_of(ks[i].spans, ks[i].n);
            double ring, modelled = allreduce_model(c, ks[i].replicas, bytes, &ring);
            printf("%-12s %10.2f %8.2f %8.2f %9.2f %7.3fx %10.2f %7.3fx %10.2f %9.0f%%\n",
                   ks[i].label, s.median * 1e3, s.min * 1e3, s.max * 1e3, modelled * 1e3,
                   s.median / modelled, ks[i].predicted_span * 1e3,
                   ks[i].predicted_span / s.median, ring * 1e3,
                   100 * pl_stats_of(ks[i].late, ks[i].n).median);
        }
    }
    close_configs(ks, n);
    free(ks);
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    pl_graph_free(g);
    return status;
}

static pl_status table_allreduce(const options *o, pl_error *err)
{
    printf("\n== 2. The all-reduce in a training step: from the last replica's gradient ready "
           "(as after a barrier) to its last task's end\n");
    printf("   model: the algorithm's steps at the links' declared rates and latencies (a ring: "
           "2(n-1)/n of the bytes over the slowest link plus 2(n-1) latencies; a hierarchy: "
           "its rings inside the groups and between them); ring: that of a ring over all;\n"
           "   late adds: the share of the reduces (a range received and added as it arrives) "
           "that ran over 5%% past their link's time, the median over rounds\n");
    static const char *const runs[][2] = {{"bench/wide-layer", "paced-4"},
                                          {"bench/wider-layer", "paced-4"},
                                          {"bench/wide-layer", "paced-8"},
                                          {"bench/wider-layer", "paced-8"}};
    pl_status status = PL_OK;
    for (size_t i = 0; status == PL_OK && i < sizeof runs / sizeof *runs; i++)
        status = allreduce_on(o, runs[i][0], runs[i][1], err);
    return status;
}

/* ---- main -------------------------------------------------------------------------------- */

static bool parse_options(int argc, char **argv, options *o)
{
    *o = (options){.top = ".", .rounds = 7, .warmup = 2, .throughput = true, .allreduce = true};
    for (int i = 1; i < argc; i += 2) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = value != NULL;
        if (ok && strcmp(arg, "--top") == 0)
            o->top = value;
        else if (ok && strcmp(arg, "--rounds") == 0)
            ok = bench_parse_int(value, 3, MAX_ROUNDS, &o->rounds);
        else if (ok && strcmp(arg, "--warmup") == 0)
            ok = bench_parse_int(value, 0, 20, &o->warmup);
        else if (ok && strcmp(arg, "--only") == 0) {
            o->throughput = strcmp(value, "throughput") == 0;
            o->allreduce = strcmp(value, "allreduce") == 0;
            ok = o->throughput || o->allreduce;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "replicas: bad option or value: %s%s%s\n", arg, value ? " " : "",
                    value ? value : "");
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    options o;
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (!parse_options(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    pl_error err;
    pl_error_init(&err, NULL);
    if ((o.throughput && table_throughput(&o, &err) != PL_OK) ||
        (o.allreduce && table_allreduce(&o, &err) != PL_OK)) {
        print_error(&err);
        return 1;
    }
    return 0;
}
