/* How placer's work grows with the model: for each model file given (tools/bench-scaling
 * writes residual chains of 100 to 100,000 ops with tools/gen-chain), on paced-4, the
 * time to load it (parse, validate, sort, infer), to build its training graph, to place
 * it with every baseline, and to build and simulate the step program of the one-device
 * plan and of pipeline-dp's plan. Each figure is the median of --repeats calls after one
 * warm-up; a baseline that took longer than --give-up seconds on one model is not timed
 * on larger ones ("skipped"). Prints a table, and with --csv FILE the same rows as CSV.
 *
 *   scaling [--top DIR] [--repeats N] [--give-up S] [--csv FILE] MODEL.json...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "baseline.h"
#include "bench.h"
#include "load.h"
#include "profile.h"
#include "program.h"
#include "simulate.h"

enum { MAX_REPEATS = 25 };

typedef struct options {
    const char *top, *csv;
    int repeats;
    double give_up;
} options;

typedef struct row {
    const char *file;
    int ops, training_ops;
    const char *what;
    double seconds; /* median; < 0: skipped */
} row;

static void print_row(FILE *csv, const row *r)
{
    if (r->seconds < 0)
        printf("%-28s %8d %8d %-24s %12s\n", r->file, r->ops, r->training_ops, r->what,
               "skipped");
    else
        printf("%-28s %8d %8d %-24s %12.3f\n", r->file, r->ops, r->training_ops, r->what,
               1e3 * r->seconds);
    if (csv) {
        fprintf(csv, "%s,%d,%d,%s,", r->file, r->ops, r->training_ops, r->what);
        if (r->seconds >= 0)
            fprintf(csv, "%.6f", 1e3 * r->seconds);
        fprintf(csv, "\n");
    }
    fflush(stdout);
}

/* The median of `repeats` timed loads after one warm-up. */
static pl_status time_load(const char *path, int repeats, double *seconds, pl_error *err)
{
    double times[MAX_REPEATS];
    for (int k = -1; k < repeats; k++) {
        double start = pl_now();
        pl_graph *g = pl_graph_load_file(path, err);
        if (!g)
            return err->status;
        if (k >= 0)
            times[k] = pl_now() - start;
        pl_graph_free(g);
    }
    *seconds = pl_median(times, repeats);
    return PL_OK;
}

static pl_status time_autodiff(const char *path, int repeats, double *seconds, pl_error *err)
{
    double times[MAX_REPEATS];
    for (int k = -1; k < repeats; k++) {
        pl_graph *g = pl_graph_load_file(path, err);
        if (!g)
            return err->status;
        double start = pl_now();
        pl_status status = pl_autodiff_build(g, err);
        if (k >= 0)
            times[k] = pl_now() - start;
        pl_graph_free(g);
        if (status != PL_OK)
            return status;
    }
    *seconds = pl_median(times, repeats);
    return PL_OK;
}

/* One algorithm's placement: the median of `repeats` calls after one warm-up; the last
 * plan kept in *plan (NULL allowed) for the simulation rows. */
static pl_status time_place(pl_baseline a, const pl_graph *g, const pl_cluster *c,
                            const pl_cost_model *m, int repeats, double *seconds,
                            pl_plan **kept, pl_error *err)
{
    double times[MAX_REPEATS];
    for (int k = -1; k < repeats; k++) {
        double start = pl_now();
        pl_plan *plan = pl_baseline_place(a, g, c, m, 1, err);
        if (!plan)
            return err->status;
        if (k >= 0)
            times[k] = pl_now() - start;
        if (kept && k == repeats - 1)
            *kept = plan;
        else
            pl_plan_free(plan);
    }
    *seconds = pl_median(times, repeats);
    return PL_OK;
}

/* Building the step program of `plan` and simulating it, timed apart. */
static pl_status time_simulate(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                               const pl_plan *plan, int repeats, double *build,
                               double *simulate, pl_error *err)
{
    double built[MAX_REPEATS], simulated[MAX_REPEATS];
    for (int k = -1; k < repeats; k++) {
        double start = pl_now();
        pl_program *p = pl_program_new(g, c, plan, err);
        if (!p)
            return err->status;
        double middle = pl_now();
        pl_simulation sim;
        pl_status status = pl_simulate(p, c, m, &sim, NULL, NULL, err);
        double end = pl_now();
        pl_program_free(p);
        if (status != PL_OK)
            return status;
        if (k >= 0) {
            built[k] = middle - start;
            simulated[k] = end - middle;
        }
    }
    *build = pl_median(built, repeats);
    *simulate = pl_median(simulated, repeats);
    return PL_OK;
}

static pl_status scale_model(const options *o, const char *path, const pl_cluster *c,
                             const pl_cost_model *m, bool *given_up, FILE *csv, pl_error *err)
{
    pl_error_init(err, path);
    pl_graph *g = pl_graph_load_file(path, err);
    if (!g || pl_autodiff_build(g, err) != PL_OK) {
        pl_graph_free(g);
        return err->status;
    }
    const char *file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    row r = {.file = file, .ops = g->n_forward_ops, .training_ops = g->n_ops};
    pl_status status = time_load(path, o->repeats, &r.seconds, err);
    r.what = "load";
    if (status == PL_OK)
        print_row(csv, &r);
    r.what = "training graph";
    if (status == PL_OK && (status = time_autodiff(path, o->repeats, &r.seconds, err)) == PL_OK)
        print_row(csv, &r);
    pl_plan *single = NULL, *piped = NULL;
    for (int a = 0; status == PL_OK && a < PL_BASELINE_COUNT; a++) {
        char what[64];
        snprintf(what, sizeof what, "place: %s", pl_baseline_name((pl_baseline)a));
        r.what = what;
        r.seconds = -1;
        pl_plan **kept = a == PL_BASELINE_SINGLE ? &single
                         : a == PL_BASELINE_PIPELINE_DP ? &piped : NULL;
        if (!given_up[a] || kept)
            status = time_place((pl_baseline)a, g, c, m, given_up[a] ? 1 : o->repeats,
                                &r.seconds, kept, err);
        if (status == PL_OK && given_up[a] && !kept)
            r.seconds = -1;
        if (status == PL_OK)
            print_row(csv, &r);
        if (r.seconds > o->give_up)
            given_up[a] = true;
    }
    const struct { const char *name; pl_plan *plan; } plans[] = {{"one device", single},
                                                                 {"pipeline-dp", piped}};
    for (int k = 0; status == PL_OK && k < 2; k++) {
        double build = 0, simulate = 0;
        if ((status = time_simulate(g, c, m, plans[k].plan, o->repeats, &build, &simulate,
                                    err)) != PL_OK)
            break;
        char what[64];
        snprintf(what, sizeof what, "program: %s", plans[k].name);
        r = (row){.file = file, .ops = g->n_forward_ops, .training_ops = g->n_ops,
                  .what = what, .seconds = build};
        print_row(csv, &r);
        snprintf(what, sizeof what, "simulate: %s", plans[k].name);
        r.seconds = simulate;
        print_row(csv, &r);
    }
    pl_plan_free(single);
    pl_plan_free(piped);
    pl_graph_free(g);
    return status;
}

int main(int argc, char **argv)
{
    options o = {.top = ".", .repeats = 5, .give_up = 10};
    int first = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
        const char *arg = argv[first], *value = first + 1 < argc ? argv[first + 1] : NULL;
        if (value && strcmp(arg, "--top") == 0)
            o.top = value;
        else if (value && strcmp(arg, "--csv") == 0)
            o.csv = value;
        else if (value && strcmp(arg, "--repeats") == 0 &&
                 bench_parse_int(value, 1, MAX_REPEATS, &o.repeats))
            continue;
        else if (value && strcmp(arg, "--give-up") == 0 && (o.give_up = atof(value)) > 0)
            continue;
        else
            break;
    }
    if (first >= argc || strncmp(argv[first], "--", 2) == 0) {
        fprintf(stderr, "usage: scaling [--top DIR] [--repeats 1-%d] [--give-up SECONDS] "
                "[--csv FILE] MODEL.json...\n", MAX_REPEATS);
        return 2;
    }
    pl_error err;
    pl_cluster *c = bench_open_cluster(o.top, "paced-4", &err);
    pl_cost_model m;
    bool calibrated;
    if (!c || pl_profile_load(&m, c, false, NULL, NULL, NULL, &calibrated, &err) != PL_OK) {
        char line[2048];
        pl_error_format(&err, line, sizeof line);
        fprintf(stderr, "scaling: %s\n", line);
        pl_cluster_free(c);
        return 1;
    }
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (o.csv && !csv) {
        perror(o.csv);
        return 1;
    }
    if (csv)
        fprintf(csv, "model,forward_ops,training_ops,work,milliseconds\n");
    printf("== Time per call on paced-4 (median of %d after a warm-up; ms)\n", o.repeats);
    printf("%-28s %8s %8s %-24s %12s\n", "model", "fwd ops", "ops", "work", "ms");
    bool given_up[PL_BASELINE_COUNT] = {false};
    int status = 0;
    for (int f = first; f < argc && status == 0; f++)
        if (scale_model(&o, argv[f], c, &m, given_up, csv, &err) != PL_OK) {
            char line[2048];
            pl_error_format(&err, line, sizeof line);
            fprintf(stderr, "scaling: %s\n", line);
            status = 1;
        }
    if (csv && fclose(csv) != 0) {
        perror(o.csv);
        status = 1;
    }
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    return status;
}
