/* The agent's search alone, run by tools/bench-search: for each model and seed, the
 * search of the job (search.h) simulating only: the seven baselines are simulated and
 * offered to a fresh agent, which imitates the fastest and then runs a fixed number of
 * iterations. Printed per run: the best baseline's simulated
 * step, the agent's best, their ratio, the agent's over the lower bound, the mean sampled
 * reward over the first and the last 10 iterations, and the wall time.
 *
 * Everything is simulated and the iterations are counted, not timed, so a run's numbers
 * depend on the code, the profile and the seed alone: two versions of the agent can be
 * compared over many seeds without the executor's noise or the machine's pace (the job,
 * tools/bench-agent, measures both and runs for a time budget). */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "bench.h"
#include "profile.h"
#include "search.h"

typedef struct options {
    const char *top, *cluster;
    char models[BENCH_MAX_LIST][BENCH_MAX_NAME];
    int n_models, seeds[BENCH_MAX_LIST], n_seeds, iterations;
} options;

typedef struct totals {
    double log_over_baseline, log_over_bound;
    int runs, rising;
} totals;

static void usage(FILE *to)
{
    fprintf(to, "Usage: search [--top DIR] [--models a,b] [--seeds 1,2] [--iterations N]\n"
                "              [--cluster NAME]\n");
}

static bool parse(int argc, char **argv, options *o)
{
    *o = (options){.top = ".", .cluster = "paced-4", .seeds = {1, 2}, .n_seeds = 2,
                   .iterations = 300};
    char seeds[BENCH_MAX_LIST][BENCH_MAX_NAME];
    bool ok = bench_split_list("inception,moe,recommender,lstm_lm,seq2seq,transformer",
                               o->models, &o->n_models);
    for (int i = 1; ok && i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--top") == 0 && value)
            o->top = value, i++;
        else if (strcmp(argv[i], "--cluster") == 0 && value)
            o->cluster = value, i++;
        else if (strcmp(argv[i], "--models") == 0 && value)
            ok = bench_split_list(value, o->models, &o->n_models), i++;
        else if (strcmp(argv[i], "--seeds") == 0 && value) {
            ok = bench_split_list(value, seeds, &o->n_seeds), i++;
            for (int s = 0; ok && s < o->n_seeds; s++)
                ok = bench_parse_int(seeds[s], 0, 1 << 30, &o->seeds[s]);
        }
        else if (strcmp(argv[i], "--iterations") == 0 && value)
            ok = bench_parse_int(value, 10, 1000000, &o->iterations), i++;
        else
            ok = false;
    }
    return ok;
}

/* The mean sampled reward over the first and the last ten iterations (fewer when fewer). */
static void reward_ends(const pl_agent *agent, double *first, double *last)
{
    const pl_agent_iteration *curve = pl_agent_curve(agent);
    int n = pl_agent_iterations(agent), k = n < 10 ? n : 10;
    *first = *last = 0;
    for (int i = 0; i < k; i++) {
        *first += curve[i].mean_reward / k;
        *last += curve[n - k + i].mean_reward / k;
    }
}

/* One run: the search (search.h) simulating only, for a number of iterations. */
static pl_status search(const options *o, const pl_graph *g, const pl_cluster *c,
                        const pl_cost_model *m, int seed, totals *t, pl_error *err)
{
    pl_search_options so;
    pl_search_options_default(&so);
    so.simulate_only = true;
    so.budget = 0; /* counted, not timed */
    so.iterations = o->iterations;
    so.seed = (uint64_t)seed;
    double start = pl_now();
    pl_search *s = pl_search_run(g, c, m, &so, NULL, NULL, NULL, err);
    if (!s)
        return err->status;
    if (s->best_baseline < 0 || pl_agent_iterations(s->agent) == 0) {
        pl_search_free(s);
        return pl_error_set(err, PL_EINPUT, NULL, "no baseline places %s", g->name);
    }
    const pl_search_row *base = &s->rows[s->best_baseline];
    int n = pl_agent_iterations(s->agent);
    double agent = pl_agent_curve(s->agent)[n - 1].best_step, first, last;
    reward_ends(s->agent, &first, &last);
    printf("| %s | %d | %s | %.3f ms | %.3f ms | %.3f | %.3f | %.4f -> %.4f | %.0f s |\n",
           g->name, seed, base->name, 1e3 * base->sim.step_seconds, 1e3 * agent,
           agent / base->sim.step_seconds, agent / s->bound, first, last, pl_now() - start);
    fflush(stdout);
    t->log_over_baseline += log(agent / base->sim.step_seconds);
    t->log_over_bound += log(agent / s->bound);
    t->runs++;
    t->rising += last > first;
    pl_search_free(s);
    return PL_OK;
}

static pl_status run_model(const options *o, const char *name, totals *t, pl_error *err)
{
    pl_graph *g = bench_open_graph(o->top, name, err);
    if (!g)
        return err->status;
    pl_cluster *c = bench_open_cluster(o->top, o->cluster, err);
    pl_cost_model m = {0};
    bool calibrated;
    pl_status status = c ? pl_profile_load(&m, c, false, NULL, NULL, NULL, &calibrated, err)
                         : err->status;
    for (int s = 0; s < o->n_seeds && status == PL_OK; s++)
        status = search(o, g, c, &m, o->seeds[s], t, err);
    pl_cost_model_clear(&m);
    pl_cluster_free(c);
    pl_graph_free(g);
    return status;
}

int main(int argc, char **argv)
{
    pl_allocator_keep_freed(); /* as placer does */
    /* and one OpenBLAS thread, as in the job, whose executor sets it: the policy's small
     * products gain nothing from more, and idle OpenBLAS threads spin (sched_yield)
     * against the simulation threads for the two cores */
    openblas_set_num_threads(1);
    options o;
    if (!parse(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    printf("== The agent's search in the simulator: %d iterations per run, cluster %s\n",
           o.iterations, o.cluster);
    printf("| model | seed | best baseline | simulated | agent's best | agent / baseline | "
           "agent / lower bound | mean sampled reward, first -> last 10 | time |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
    totals t = {0};
    for (int k = 0; k < o.n_models; k++) {
        pl_error err;
        if (run_model(&o, o.models[k], &t, &err) != PL_OK) {
            char line[1024];
            pl_error_format(&err, line, sizeof line);
            fprintf(stderr, "search: %s\n", line);
            return 1;
        }
    }
    if (t.runs > 0)
        printf("\ngeometric mean over %d runs: agent / best baseline %.4f, agent / lower bound "
               "%.4f; the mean sampled reward rose in %d\n",
               t.runs, exp(t.log_over_baseline / t.runs), exp(t.log_over_bound / t.runs),
               t.rising);
    return 0;
}
