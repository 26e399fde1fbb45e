/* Baseline placer benchmarks, run by tools/bench-baselines. Two tables:
 *
 *   speed   each algorithm's placement time on large graphs (tools/gen-chain): one
 *           warm-up call, then --repeats timed calls; median, min and max
 *   table   algorithms x suite models x clusters: the simulated step, the measured one
 *           (the executor: warm-up steps, then --steps measured; median and spread) and
 *           the ratio of each to the lower bound; on native devices the profile is first
 *           scaled to the machine's speed now by a probe of the model, as the main job
 *           does (probe.h), so that a machine slower or faster than when it was profiled
 *           reads as such, not as the simulator's error
 *
 * Plans predicted slower than --max-step are not measured (shown as "-"), which keeps the
 * run to a few minutes. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocator.h"
#include "bench.h"
#include "baseline.h"
#include "bound.h"
#include "data.h"
#include "executor.h"
#include "measure.h"
#include "profile.h"
#include "simulate.h"

enum { MAX_LIST = BENCH_MAX_LIST, MAX_NAME = BENCH_MAX_NAME, MAX_REPEATS = 50 };

typedef struct options {
    const char *top;
    char models[MAX_LIST][MAX_NAME], clusters[MAX_LIST][MAX_NAME], large[MAX_LIST][MAX_NAME];
    int n_models, n_clusters, n_large;
    int repeats, steps, warmup;
    double max_step;
    bool speed, table;
} options;

static pl_status load_profile(pl_cost_model *m, const pl_cluster *c, pl_error *err)
{
    bool calibrated;
    pl_cost_model_clear(m);
    return pl_profile_load(m, c, false, NULL, NULL, NULL, &calibrated, err);
}

/* ---- speed ------------------------------------------------------------------------------- */

static pl_status speed_graph(const options *o, const char *name, const pl_cluster *c,
                             const pl_cost_model *m, pl_error *err)
{
    pl_graph *g = bench_open_graph(o->top, name, err);
    if (!g)
        return err->status;
    pl_status status = PL_OK;
    for (int a = 0; a < PL_BASELINE_COUNT && status == PL_OK; a++) {
        double times[MAX_REPEATS];
        for (int r = -1; r < o->repeats && status == PL_OK; r++) { /* r = -1: warm-up */
            double start = pl_now();
            pl_plan *plan = pl_baseline_place((pl_baseline)a, g, c, m, 1, err);
            if (r >= 0)
                times[r] = pl_now() - start;
            status = plan ? PL_OK : err->status;
            pl_plan_free(plan);
        }
        if (status != PL_OK)
            break;
        pl_stats stats = pl_stats_of(times, o->repeats);
        printf("%-12s %7d %7d  %-12s %9.1f %9.1f %9.1f  %s\n", g->name, g->n_forward_ops,
               g->n_ops, pl_baseline_name((pl_baseline)a), 1e3 * stats.median,
               1e3 * stats.min, 1e3 * stats.max, stats.median < 1 ? "under 1 s" : "OVER 1 s");
    }
    pl_graph_free(g);
    return status;
}

static pl_status table_speed(const options *o, pl_error *err)
{
    pl_cost_model *m = calloc(1, sizeof *m);
    pl_cluster *c = bench_open_cluster(o->top, "paced-4", err);
    pl_status status = !m ? PL_ENOMEM : !c ? err->status : load_profile(m, c, err);
    if (status == PL_OK) {
        printf("== Placement time on paced-4 (%d timed calls after one warm-up; ms)\n",
               o->repeats);
        printf("%-12s %7s %7s  %-12s %9s %9s %9s\n", "graph", "fwd ops", "ops", "algorithm",
               "median", "min", "max");
    }
    for (int i = 0; i < o->n_large && status == PL_OK; i++)
        status = speed_graph(o, o->large[i], c, m, err);
    pl_cluster_free(c);
    if (m)
        pl_cost_model_clear(m);
    free(m);
    return status;
}

/* ---- the table -------------------------------------------------------------------------- */

/* One algorithm's row: simulated, measured (or "-"), ratios to the bound. */
static pl_status table_row(const options *o, const pl_graph *g, const pl_cluster *c,
                           const pl_cost_model *m, pl_baseline a, double bound,
                           pl_executor **ex, pl_error *err)
{
    pl_error mine;
    pl_error_init(&mine, NULL);
    pl_plan *plan = pl_baseline_place(a, g, c, m, 1, &mine);
    printf("%-12s %-8s %-12s", g->name, c->name, pl_baseline_name(a));
    if (!plan) {
        printf(" failed: %s\n", mine.text);
        return PL_OK;
    }
    double predicted = plan->provenance.predicted_seconds;
    printf(" %10.3f %7.2f", 1e3 * predicted, predicted / bound);
    pl_status status = PL_OK;
    if (predicted <= o->max_step) {
        pl_fit fit;
        pl_measurement measured;
        if (!*ex && !(*ex = bench_open_executor(g, c, err)))
            status = err->status;
        if (status == PL_OK)
            status = pl_executor_set_plan(*ex, plan, &fit, err);
        if (status == PL_OK && fit.fits)
            status = pl_executor_measure(*ex, o->warmup, o->steps, &measured, err);
        if (status == PL_OK && fit.fits)
            printf(" %10.3f %5.0f%%%s %7.2f %+7.1f%%", 1e3 * measured.series.median,
                   100 * measured.series.iqr_spread, measured.series.unstable ? "!" : " ",
                   measured.series.median / bound,
                   100 * (predicted - measured.series.median) / measured.series.median);
        else if (status == PL_OK)
            printf(" %10s", "no fit");
    } else {
        printf(" %10s %7s %7s %8s", "-", "-", "-", "-");
    }
    printf("\n");
    fflush(stdout);
    pl_plan_free(plan);
    return status;
}

/* On native devices, the machine's speed now as the main job probes it (probe.h), into
 * m's speed for the model's rows, and said in a line of its own. */
static pl_status probe_model(const options *o, const char *name, const pl_cluster *c,
                             pl_cost_model *m, pl_error *err)
{
    m->speed = 0;
    if (c->paced || c->simulated)
        return PL_OK;
    pl_probe probe;
    double speed;
    if (bench_probe(o->top, name, m, &probe, &speed, err) != PL_OK)
        return err->status;
    m->speed = speed;
    printf("%-12s %-8s probe: ops take x%.3f their profiled time (%s)\n", name, c->name,
           pl_cost_speed(m), probe.reference ? "through cnn" : "its own ops");
    return PL_OK;
}

static pl_status table_model(const options *o, const char *name, const pl_cluster *c,
                             pl_cost_model *m, pl_error *err)
{
    pl_graph *g = bench_open_graph(o->top, name, err);
    if (!g)
        return err->status;
    double bound = 0;
    pl_executor *ex = NULL;
    pl_status status = probe_model(o, name, c, m, err);
    if (status == PL_OK)
        status = pl_step_lower_bound(g, c, m, &bound, err);
    for (int a = 0; a < PL_BASELINE_COUNT && status == PL_OK; a++)
        status = table_row(o, g, c, m, (pl_baseline)a, bound, &ex, err);
    pl_executor_free(ex);
    pl_graph_free(g);
    return status;
}

static pl_status table_all(const options *o, pl_error *err)
{
    pl_cost_model *m = calloc(1, sizeof *m);
    pl_status status = m ? PL_OK : PL_ENOMEM;
    printf("\n== Step time: simulated and measured (median of %d steps after %d warm-up; "
           "iqr: interquartile range/median, !: unstable (measure.h)); x: ratio to the lower bound; error of the simulation; "
           "plans predicted over %.1f s not measured\n", o->steps, o->warmup, o->max_step);
    printf("%-12s %-8s %-12s %10s %7s %10s %7s %7s %8s\n", "model", "cluster", "algorithm",
           "sim ms", "x", "meas ms", "iqr", "x", "sim err");
    for (int k = 0; k < o->n_clusters && status == PL_OK; k++) {
        pl_cluster *c = bench_open_cluster(o->top, o->clusters[k], err);
        status = c ? load_profile(m, c, err) : err->status;
        for (int i = 0; i < o->n_models && status == PL_OK; i++)
            status = table_model(o, o->models[i], c, m, err);
        pl_cluster_free(c);
    }
    if (m)
        pl_cost_model_clear(m);
    free(m);
    return status;
}

/* ---- main ------------------------------------------------------------------------------ */

static bool parse(int argc, char **argv, options *o)
{
    *o = (options){.top = ".", .repeats = 5, .steps = 3, .warmup = 1, .max_step = 1.0,
                   .speed = true, .table = true};
    bench_split_list("cnn,inception,lstm_lm,mlp,moe,recommender,resnet,seq2seq,transformer",
               o->models, &o->n_models);
    bench_split_list("local-2,paced-4,paced-8,unequal-4", o->clusters, &o->n_clusters);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(arg, "--quick") == 0) {
            bench_split_list("mlp,transformer,inception", o->models, &o->n_models);
            o->repeats = 3;
            o->steps = 2;
            o->max_step = 0.3;
            continue;
        }
        if (!value)
            return false;
        if (strcmp(arg, "--top") == 0)
            o->top = value;
        else if (strcmp(arg, "--large") == 0)
            ok = bench_split_list(value, o->large, &o->n_large);
        else if (strcmp(arg, "--models") == 0)
            ok = bench_split_list(value, o->models, &o->n_models);
        else if (strcmp(arg, "--clusters") == 0)
            ok = bench_split_list(value, o->clusters, &o->n_clusters);
        else if (strcmp(arg, "--repeats") == 0)
            ok = bench_parse_int(value, 1, MAX_REPEATS, &o->repeats);
        else if (strcmp(arg, "--steps") == 0)
            ok = bench_parse_int(value, 1, 100, &o->steps);
        else if (strcmp(arg, "--warmup") == 0)
            ok = bench_parse_int(value, 0, 10, &o->warmup);
        else if (strcmp(arg, "--only") == 0) {
            o->speed = strcmp(value, "speed") == 0;
            o->table = strcmp(value, "table") == 0;
            ok = o->speed || o->table;
        } else
            return false;
        if (!ok)
            return false;
        i++;
    }
    return !o->speed || o->n_large > 0;
}

int main(int argc, char **argv)
{
    pl_allocator_keep_freed(); /* as placer does */
    options o;
    if (!parse(argc, argv, &o)) {
        fprintf(stderr, "usage: baselines [--top DIR] --large A.json,B.json [--models M,...] "
                        "[--clusters C,...]\n                 [--repeats N] [--steps N] "
                        "[--warmup N] [--only speed|table] [--quick]\n");
        return 2;
    }
    pl_error err;
    pl_error_init(&err, NULL);
    pl_status status = o.speed ? table_speed(&o, &err) : PL_OK;
    if (status == PL_OK && o.table)
        status = table_all(&o, &err);
    if (status != PL_OK) {
        char line[2048];
        pl_error_format(&err, line, sizeof line);
        fprintf(stderr, "baselines: %s\n", line);
        return 1;
    }
    return 0;
}
