/* The agent's search alone, run by tools/bench-search: for each model and seed, the seven
 * baselines are simulated and offered to a fresh agent, which imitates the fastest and
 * then runs a fixed number of iterations. Printed per run: the best baseline's simulated
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

#include "agent.h"
#include "allocator.h"
#include "baseline.h"
#include "bench.h"
#include "bound.h"
#include "profile.h"
#include "simulate.h"

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

/* The baselines that place the model, each simulated: the fastest's index in *best. */
static int place_baselines(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                           pl_plan *plans[PL_BASELINE_COUNT], double step[PL_BASELINE_COUNT],
                           int *best)
{
    int n = 0;
    *best = -1;
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        pl_error err;
        pl_error_init(&err, pl_baseline_name(b));
        pl_plan *plan = pl_baseline_place(b, g, c, m, 1, &err);
        pl_program *program = plan ? pl_program_new(g, c, plan, &err) : NULL;
        pl_simulation sim;
        if (!program || pl_simulate(program, c, m, &sim, NULL, NULL, &err) != PL_OK ||
            sim.oom_device >= 0) {
            pl_program_free(program);
            pl_plan_free(plan);
            continue;
        }
        pl_program_free(program);
        plans[n] = plan;
        step[n] = sim.step_seconds;
        if (*best < 0 || step[n] < step[*best])
            *best = n;
        n++;
    }
    return n;
}

static pl_status search(const options *o, const pl_graph *g, const pl_cluster *c,
                        const pl_cost_model *m, int seed, pl_plan *const *plans,
                        const double *step, int n_plans, int best, double bound, totals *t,
                        pl_error *err)
{
    pl_agent_options ao;
    pl_agent_options_default(&ao);
    ao.seed = (uint64_t)seed;
    double start = pl_now();
    pl_agent *a = pl_agent_new(g, c, m, &ao, err);
    if (!a)
        return err->status;
    pl_status status = PL_OK;
    for (int k = 0; k < n_plans && status == PL_OK; k++)
        status = k == best ? PL_OK : pl_agent_offer(a, plans[k], err);
    if (status == PL_OK)
        status = pl_agent_imitate(a, plans[best], err);
    for (int i = 0; i < o->iterations && status == PL_OK; i++)
        status = pl_agent_iterate(a, NULL, err);
    if (status == PL_OK) {
        const pl_agent_iteration *curve = pl_agent_curve(a);
        int n = pl_agent_iterations(a), k = n < 10 ? n : 10;
        double first = 0, last = 0, agent = curve[n - 1].best_step;
        for (int i = 0; i < k; i++) {
            first += curve[i].mean_reward / k;
            last += curve[n - k + i].mean_reward / k;
        }
        printf("| %s | %d | %s | %.3f ms | %.3f ms | %.3f | %.3f | %.4f -> %.4f | %.0f s |\n",
               g->name, seed, plans[best]->provenance.algorithm, 1e3 * step[best], 1e3 * agent,
               agent / step[best], agent / bound, first, last, pl_now() - start);
        fflush(stdout);
        t->log_over_baseline += log(agent / step[best]);
        t->log_over_bound += log(agent / bound);
        t->runs++;
        t->rising += last > first;
    }
    pl_agent_free(a);
    return status;
}

static pl_status run_model(const options *o, const char *name, totals *t, pl_error *err)
{
    pl_graph *g = bench_open_graph(o->top, name, err);
    if (!g)
        return err->status;
    pl_cluster *c = bench_open_cluster(o->top, o->cluster, err);
    pl_cost_model m = {0};
    bool calibrated;
    double bound = 0, step[PL_BASELINE_COUNT];
    pl_plan *plans[PL_BASELINE_COUNT];
    int n_plans = 0, best = -1;
    pl_status status = c ? pl_profile_load(&m, c, false, NULL, NULL, &calibrated, err)
                         : err->status;
    if (status == PL_OK)
        status = pl_step_lower_bound(g, c, &m, &bound, err);
    if (status == PL_OK && (n_plans = place_baselines(g, c, &m, plans, step, &best)) == 0)
        status = pl_error_set(err, PL_EINPUT, NULL, "no baseline places %s", name);
    for (int s = 0; s < o->n_seeds && status == PL_OK; s++)
        status = search(o, g, c, &m, o->seeds[s], plans, step, n_plans, best, bound, t,
                        err);
    for (int k = 0; k < n_plans; k++)
        pl_plan_free(plans[k]);
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
