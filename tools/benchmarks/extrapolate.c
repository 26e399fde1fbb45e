/* How well the cost model predicts the ops of a model whose ops calibration never measured:
 * each bundled model held out in turn, its kinds' fits made again from the other models'
 * measured ops alone (pl_cost_fit, as calibration makes them), and its one-device step
 * at its own batch, summed over its ops, against the profile's measurements of those ops.
 * The figures are the profile's own measurements, no new run: they say how far the
 * fits extrapolate, and bench-sim's "unseen" rows what that costs a plan.
 *
 *   tools/benchmarks/extrapolate [--top DIR] [MODEL.json ...]
 *
 * The suite is what calibration measures: TOP/graphs, TOP/graphs/small and
 * TOP/graphs/calibration (TOP: the source tree, default .), at each model's batch and a
 * half, quarter and eighth of it. The calibration models stay in every fit: they hold
 * kinds no other model does, so holding one out says nothing of the fits. Models named on
 * the command line (their ops measured by `placer calibrate MODEL.json`) are predicted from
 * the whole suite's fits.
 * Columns: the model's ops the profile measured at its batch; their time summed; the
 * same predicted by the held-out fits; the error; the median of the ops' errors
 * (unweighted); the kind whose ops' predictions miss the most time, and by how much. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "bench.h"
#include "cost_model.h"
#include "graph_build.h"
#include "kernels.h"
#include "load.h"
#include "profile.h"

/* One measured op configuration. */
typedef struct sample {
    int model;
    bool own_batch;
    pl_op_sample op;
} sample;

typedef struct suite {
    sample *s;
    int n, cap;
    char names[64][BENCH_MAX_NAME];
    int n_models, n_bundled; /* models; the first n_bundled those calibration measures */
    int n_held;              /* the first n_held the suite's own, each held out in turn */
} suite;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Every op of the model at `batch` that the profile measured, into the suite. */
static void add_batch(suite *u, const pl_cost_model *m, const char *path, int model, int batch,
                      bool own)
{
    pl_error err;
    pl_error_init(&err, path);
    pl_graph *g = pl_graph_load_file(path, &err);
    if (!g || pl_graph_set_batch(g, batch, &err) != PL_OK || pl_autodiff_build(g, &err) != PL_OK) {
        fprintf(stderr, "extrapolate: %s\n", err.text);
        exit(2);
    }
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        double t = pl_cost_lookup(m, pl_op_signature(op, g->tensors, 1));
        if (t < 0)
            continue;
        if (u->n == u->cap) {
            u->cap = u->cap ? 2 * u->cap : 1024;
            u->s = realloc(u->s, (size_t)u->cap * sizeof *u->s);
            if (!u->s) {
                fprintf(stderr, "extrapolate: out of memory\n");
                exit(1);
            }
        }
        u->s[u->n++] = (sample){model, own,
                                {op->kind, pl_kernel_route_of(op, g->tensors), t, op->flops,
                                 (double)(op->bytes_read + op->bytes_written)}};
    }
    pl_graph_free(g);
}

/* The model at its batch and down to an eighth of it, halving, as calibration does; at its
 * batch alone when `own_only`. */
static void add_model(suite *u, const pl_cost_model *m, const char *path, bool own_only)
{
    pl_error err;
    pl_error_init(&err, path);
    pl_graph *g = pl_graph_load_file(path, &err);
    if (!g) {
        fprintf(stderr, "extrapolate: %s\n", err.text);
        exit(2);
    }
    int batch = g->batch_size, model = u->n_models++;
    pl_graph_free(g);
    const char *slash = strrchr(path, '/');
    snprintf(u->names[model], BENCH_MAX_NAME, "%s", slash ? slash + 1 : path);
    for (int b = batch, last = 0; b >= 1 && b >= batch / 8; b /= 2) {
        if (b != last)
            add_batch(u, m, path, model, b, b == batch);
        last = b;
        if (own_only)
            break;
    }
}

/* The suite's models in `dir`, by name. */
static void add_dir(suite *u, const pl_cost_model *m, const char *dir)
{
    DIR *d = opendir(dir);
    char names[64][BENCH_MAX_NAME];
    int n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e && n < 64; e = readdir(d)) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
            snprintf(names[n++], BENCH_MAX_NAME, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n && u->n_models < 64; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%.3800s/%.255s", dir, names[i]);
        add_model(u, m, path, false);
    }
}

/* The fits over the bundled models' samples but `left_out`'s (-1: none), as calibration
 * makes them (pl_cost_fit_samples), into a model of their own. */
static void fit_without(const suite *u, int left_out, pl_cost_model *fits)
{
    pl_op_sample *v = malloc((size_t)u->n * sizeof *v + 1);
    int n = 0;
    for (int i = 0; v && i < u->n; i++)
        if (u->s[i].model != left_out && u->s[i].model < u->n_bundled)
            v[n++] = u->s[i].op;
    memset(fits, 0, sizeof *fits);
    pl_error err;
    pl_error_init(&err, NULL);
    if (!v || pl_cost_fit_samples(fits, 1, v, n, &err) != PL_OK) {
        fprintf(stderr, "extrapolate: %s\n", v ? err.text : "out of memory");
        exit(1);
    }
    free(v);
}

/* One model's row; its error over its measured time into *error. */
static void report(const suite *u, int model, const pl_cost_model *fits, double *error)
{
    double measured = 0, predicted = 0, miss[PL_OP_COUNT] = {0};
    double *errors = malloc((size_t)u->n * sizeof *errors + 1);
    int n = 0;
    for (int i = 0; i < u->n; i++) {
        const sample *s = &u->s[i];
        if (s->model != model || !s->own_batch)
            continue;
        const pl_op_sample *o = &s->op;
        double p = pl_cost_op(fits, o->kind, o->route, 1, o->flops, o->bytes);
        measured += o->seconds;
        predicted += p;
        miss[o->kind] += p - o->seconds;
        errors[n++] = fabs(p - o->seconds) / o->seconds;
    }
    qsort(errors, (size_t)n, sizeof *errors, compare_doubles);
    int worst = 0;
    for (int k = 1; k < PL_OP_COUNT; k++)
        if (fabs(miss[k]) > fabs(miss[worst]))
            worst = k;
    *error = measured > 0 ? (predicted - measured) / measured : 0;
    printf("%-26s %5d %10.3f %10.3f %+8.1f%% %8.1f%%   %s %+.3f ms\n", u->names[model], n,
           1e3 * measured, 1e3 * predicted, 100 * *error, n ? 100 * errors[n / 2] : 0.0,
           pl_op_info_of((pl_op_kind)worst)->name, 1e3 * miss[worst]);
    free(errors);
}

static void summary(const char *what, double *errors, int n)
{
    if (n == 0)
        return;
    for (int i = 0; i < n; i++)
        errors[i] = fabs(errors[i]);
    qsort(errors, (size_t)n, sizeof *errors, compare_doubles);
    printf("%s: %d models, median |error| %.1f%%, worst %.1f%%\n", what, n, 100 * errors[n / 2],
           100 * errors[n - 1]);
}

int main(int argc, char **argv)
{
    const char *top = ".";
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--top") == 0) {
        top = argv[2];
        first = 3;
    }
    pl_error err;
    pl_error_init(&err, NULL);
    pl_cluster *c = bench_open_cluster(top, "local-2", &err);
    pl_cost_model m;
    if (!c || !pl_profile_read_cached(&m, c)) {
        fprintf(stderr,
                "extrapolate: no calibration profile for this machine (placer "
                "calibrate)%s%s\n",
                c ? "" : ": ", c ? "" : err.text);
        return 1;
    }
    suite u = {0};
    char dir[3900];
    snprintf(dir, sizeof dir, "%.3800s/graphs", top);
    add_dir(&u, &m, dir);
    snprintf(dir, sizeof dir, "%.3800s/graphs/small", top);
    add_dir(&u, &m, dir);
    u.n_held = u.n_models;
    snprintf(dir, sizeof dir, "%.3800s/graphs/calibration", top);
    add_dir(&u, &m, dir);
    u.n_bundled = u.n_models;
    for (int i = first; i < argc && u.n_models < 64; i++)
        add_model(&u, &m, argv[i], true);

    printf("extrapolation: each op's time from its kind's fit over models calibration measured\n"
           "(from the profile's measurements: one device, one thread; no new run)\n");
    printf("%-26s %5s %10s %10s %9s %9s   %s\n", "model", "ops", "meas ms", "fit ms", "error",
           "med|op e|", "kind missing most");
    double errors[64];
    pl_cost_model *fits = malloc(sizeof *fits);
    if (!fits) {
        fprintf(stderr, "extrapolate: out of memory\n");
        return 1;
    }
    for (int k = 0; k < u.n_held; k++) {
        fit_without(&u, k, fits);
        report(&u, k, fits, &errors[k]);
    }
    summary("held out in turn", errors, u.n_held);
    if (u.n_models > u.n_bundled) {
        fit_without(&u, -1, fits);
        for (int k = u.n_bundled; k < u.n_models; k++)
            report(&u, k, fits, &errors[k - u.n_bundled]);
        summary("named models, from the whole suite's fits", errors, u.n_models - u.n_bundled);
    }
    free(fits);
    free(u.s);
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    return 0;
}
