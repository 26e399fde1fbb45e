/* place: a model placed on a cluster by a baseline, and the plan's step time predicted,
 * through the installed library alone (what `placer baseline` does, in one page).
 *
 *   place [MODEL.json [CLUSTER.json [ALGORITHM]]]
 *
 * Defaults: the bundled small MLP on the bundled paced-4 cluster (four emulated devices),
 * placed by pipeline-dp. The cost model is this machine's cached profile (`placer
 * calibrate`); when there is none, or it lacks the cluster's thread counts, it is measured
 * first (tens of seconds; $PLACER_GRAPHS names the models to measure, $PLACER_PROFILE
 * where to cache it). Exit status: 0 done, 1 failure, 2 bad input.
 *
 * Build: cc place.c $(pkg-config --cflags --libs placer). place.cpp is the same in C++. */
#include <placer/autodiff.h>
#include <placer/baseline.h>
#include <placer/bound.h>
#include <placer/load.h>
#include <placer/profile.h>
#include <placer/simulate.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Everything the program holds, freed in one place. */
typedef struct place_state {
    const char *model_path; /* names the model in errors */
    pl_graph *graph;
    pl_cluster *cluster;
    pl_cost_model *cost;
    pl_plan *plan;
    pl_program *program;
} place_state;

static int report(const pl_error *err)
{
    char line[PL_ERROR_SOURCE_MAX + PL_ERROR_PATH_MAX + PL_ERROR_TEXT_MAX + 16];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "place: %s\n", line);
    return err->status == PL_EINPUT ? 2 : 1;
}

/* Calibration's progress, a line a model. */
static void progress(void *context, const char *what)
{
    (void)context;
    fprintf(stderr, "place: calibrating: %s\n", what);
}

enum { PATH_CAP = 4096 };

/* A bundled file (buf holds PATH_CAP bytes): the directory calibration measures holds the
 * models and the clusters. */
static const char *bundled(char *buf, const char *name)
{
    const char *graphs = pl_profile_graphs_dir();
    if (!graphs || snprintf(buf, PATH_CAP, "%s/%s", graphs, name) >= PATH_CAP)
        return NULL;
    return buf;
}

/* The training graph, the cluster and the cost model. */
static int load(place_state *s, const char *cluster_path)
{
    pl_error err;
    s->graph = pl_graph_load_file(s->model_path, &err);
    if (!s->graph || pl_autodiff_build(s->graph, &err) != PL_OK)
        return report(&err);
    s->cluster = pl_cluster_load_file(cluster_path, &err);
    if (!s->cluster)
        return report(&err);
    bool calibrated = false;
    s->cost = calloc(1, sizeof *s->cost);
    if (!s->cost)
        return 1;
    if (pl_profile_load(s->cost, s->cluster, false, progress, NULL, NULL, &calibrated, &err) != PL_OK)
        return report(&err);
    printf("cost model: %s\n", calibrated ? "just calibrated" : "the cached profile");
    char warning[1024]; /* a profile measured on a busy machine, or long ago */
    if (pl_profile_warning(s->cost, (long long)time(NULL), warning, sizeof warning))
        fprintf(stderr, "place: warning: %s\n", warning);
    return 0;
}

/* Places, simulates and bounds; prints the outcome. */
static int place(place_state *s, pl_baseline algorithm)
{
    pl_error err;
    pl_error_init(&err, s->model_path);
    s->plan = pl_baseline_place(algorithm, s->graph, s->cluster, s->cost, 1, &err);
    if (!s->plan)
        return report(&err);
    s->program = pl_program_new(s->graph, s->cluster, s->plan, &err);
    pl_simulation sim;
    double bound;
    if (!s->program ||
        pl_simulate(s->program, s->cluster, s->cost, &sim, NULL, NULL, &err) != PL_OK ||
        pl_step_lower_bound(s->graph, s->cluster, s->cost, &bound, &err) != PL_OK)
        return report(&err);
    printf("%s on %s (%d devices), placed by %s: %d stage%s, %d micro-batch%s, %s\n",
           s->graph->name, s->cluster->name, s->cluster->n_devices, pl_baseline_name(algorithm),
           s->plan->n_stages, s->plan->n_stages == 1 ? "" : "s", s->plan->micro_batches,
           s->plan->micro_batches == 1 ? "" : "es", pl_plan_schedule_text(s->plan));
    if (sim.oom_device >= 0)
        printf("the plan does not fit device %s's memory\n",
               s->cluster->devices[sim.oom_device].name);
    printf("predicted step: %.3f ms\n", 1e3 * sim.step_seconds);
    printf("lower bound:    %.3f ms (the plan takes %.2fx the bound)\n", 1e3 * bound,
           sim.step_seconds / bound);
    return 0;
}

int main(int argc, char **argv)
{
    char model_buf[PATH_CAP], cluster_buf[PATH_CAP];
    const char *model_path = argc > 1 ? argv[1] : bundled(model_buf, "small/mlp-small.json");
    const char *cluster_path = argc > 2 ? argv[2] : bundled(cluster_buf, "clusters/paced-4.json");
    pl_baseline algorithm = pl_baseline_from_name(argc > 3 ? argv[3] : "pipeline-dp");
    if (argc > 4 || algorithm == PL_BASELINE_COUNT || !model_path || !cluster_path) {
        fprintf(stderr, "usage: place [MODEL.json [CLUSTER.json [ALGORITHM]]]%s\n",
                model_path && cluster_path ? "" : " (no bundled models found: name them)");
        return 2;
    }
    place_state s = {.model_path = model_path};
    int status = load(&s, cluster_path);
    if (status == 0)
        status = place(&s, algorithm);
    pl_program_free(s.program);
    pl_plan_free(s.plan);
    if (s.cost)
        pl_cost_model_clear(s.cost);
    free(s.cost);
    pl_cluster_free(s.cluster);
    pl_graph_free(s.graph);
    return status;
}
