/* How much faster than the cost model an op task runs inside a real plan: for each plan
 * given, a few steps on the cluster, and each op task's measured time over the time the
 * simulator takes for it (pl_cost_native), by quantile; the fastest FLOP rate a task
 * reached; and the step against pl_step_lower_bound. The evidence for the floor factors of
 * the native lower bound (docs/simulator.md, "The lower bound").
 *
 *   tools/benchmarks/op_floor [--cluster NAME] [--steps N] MODEL[:PLAN.json] ...
 *
 * MODEL is a bundled model's name or a model file; without a plan every op runs on the
 * first device. Columns: the op tasks counted; the least, 1st, 5th and 50th percentile of
 * their ratios; all their least times over all their modelled ones; the fastest FLOP rate a
 * task reached and the fastest the model gives one; the fastest step, the bound and their
 * ratio. Tasks the model puts under 20 us are left out: their times are mostly the clock's
 * and the hand-off's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bound.h"
#include "cost_model.h"
#include "plan.h"
#include "profile.h"
#include "program.h"

enum { MIN_TASK_US = 20 };

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double at(const double *sorted, int n, double q)
{
    return n ? sorted[(int)(q * (n - 1))] : 0;
}

/* One plan: `steps` steps after two warm-up ones; each task's least ratio over the steps. */
static int measure(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                   const char *label, const char *plan_path, int steps)
{
    pl_error err;
    pl_error_init(&err, label);
    pl_plan *plan = plan_path ? pl_plan_load_file(plan_path, g, c, &err) : pl_plan_new(g, &err);
    pl_executor *ex = plan ? bench_open_executor(g, c, &err) : NULL;
    pl_fit fit;
    double bound = 0;
    if (!ex || pl_executor_set_plan(ex, plan, &fit, &err) != PL_OK ||
        pl_step_lower_bound(g, c, m, &bound, &err) != PL_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    const pl_program *p = pl_executor_program(ex);
    double *least = malloc(2 * (size_t)p->n_tasks * sizeof *least + 1);
    double *step = malloc((size_t)steps * sizeof *step + 1);
    double *ratios = least + p->n_tasks;
    for (int i = 0; i < p->n_tasks; i++)
        least[i] = 1e30;
    float loss;
    double fastest = 0, modelled = 0;
    for (int s = -2; s < steps; s++) {
        if (pl_executor_step(ex, s + 3, &loss, &err) != PL_OK) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        if (s < 0)
            continue;
        step[s] = pl_executor_step_seconds(ex);
        const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_task *t = &p->tasks[i];
            if (t->kind != PL_TASK_OP)
                continue;
            double took = ends[i] - starts[i], model = pl_cost_native(m, p, c, t);
            if (model > 0 && took / model < least[i])
                least[i] = took / model;
            if (took > MIN_TASK_US * 1e-6 && pl_task_flops(p, t) / took > fastest)
                fastest = pl_task_flops(p, t) / took;
            if (model > MIN_TASK_US * 1e-6 && pl_task_flops(p, t) / model > modelled)
                modelled = pl_task_flops(p, t) / model;
        }
    }
    int n = 0;
    double measured_sum = 0, model_sum = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind != PL_TASK_OP || pl_cost_native(m, p, c, t) < MIN_TASK_US * 1e-6)
            continue;
        ratios[n++] = least[i];
        model_sum += pl_cost_native(m, p, c, t);
        measured_sum += least[i] * pl_cost_native(m, p, c, t);
    }
    qsort(ratios, (size_t)n, sizeof *ratios, compare_doubles);
    qsort(step, (size_t)steps, sizeof *step, compare_doubles);
    printf("%-34.34s %5d %6.3f %6.3f %6.3f %6.3f %6.3f %7.1f %7.1f %9.3f %9.3f %6.3f\n", label, n,
           at(ratios, n, 0), at(ratios, n, 0.01), at(ratios, n, 0.05), at(ratios, n, 0.5),
           model_sum > 0 ? measured_sum / model_sum : 0, fastest / 1e9, modelled / 1e9,
           1e3 * step[0], 1e3 * bound, step[0] / bound);
    free(least);
    free(step);
    pl_executor_free(ex);
    pl_plan_free(plan);
    return 0;
}

int main(int argc, char **argv)
{
    const char *top = getenv("PLACER_TOP") ? getenv("PLACER_TOP") : ".", *cluster = "local-2";
    int steps = 5, first = 1;
    for (; first < argc && argv[first][0] == '-'; first += 2) {
        if (first + 1 >= argc)
            return 2;
        if (strcmp(argv[first], "--cluster") == 0)
            cluster = argv[first + 1];
        else if (strcmp(argv[first], "--steps") != 0 ||
                 !bench_parse_int(argv[first + 1], 1, 1000, &steps))
            return 2;
    }
    pl_error err;
    pl_cluster *c = bench_open_cluster(top, cluster, &err);
    pl_cost_model m;
    bool calibrated;
    if (!c || pl_profile_load(&m, c, false, NULL, NULL, NULL, &calibrated, &err) != PL_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    printf("op tasks' least measured time over %d steps / the model's (tasks of %d us and "
           "more)\n%-34s %5s %6s %6s %6s %6s %6s %7s %7s %9s %9s %6s\n",
           steps, MIN_TASK_US, "model:plan", "tasks", "min", "p1", "p5", "p50", "sum", "GFLOP/s",
           "model", "fastest", "bound ms", "x LB");
    int status = 0;
    for (int i = first; i < argc && status == 0; i++) {
        char name[BENCH_MAX_NAME];
        snprintf(name, sizeof name, "%s", argv[i]);
        char *plan = strchr(name, ':');
        if (plan)
            *plan++ = '\0';
        pl_graph *g = bench_open_graph(top, name, &err);
        if (!g) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        status = measure(g, c, &m, argv[i], plan, steps);
        pl_graph_free(g);
    }
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    return status;
}
