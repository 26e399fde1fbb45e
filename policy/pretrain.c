/* Pre-training over a corpus (pretrain.h): visits of simulated searches, each starting
 * from the weights the last one ended with. */
#include <stdlib.h>
#include <string.h>

#include "pretrain.h"
#include "rng.h"
#include "search.h"

void pl_pretrain_options_default(pl_pretrain_options *o)
{
    *o = (pl_pretrain_options){.seed = 1, .rounds = 3, .iterations = 20, .samples = 32,
                               .consolidation_steps = 0};
}

/* order[] a permutation of 0..n-1 drawn from (seed, round): Fisher-Yates. */
static void shuffle(int *order, int n, uint64_t seed, int round)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    uint64_t key = pl_rng_mix(seed ^ pl_rng_mix((uint64_t)round + 1));
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(pl_rng_u64(key, (uint64_t)i) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

/* The search's fastest plan of one replica that fits (an action places one replica), or
 * NULL. */
static const pl_plan *best_single(const pl_search *s)
{
    const pl_search_row *best = NULL;
    for (int r = 0; r < s->n_rows; r++) {
        const pl_search_row *row = &s->rows[r];
        if (row->plan && row->fits && row->plan->replicas == 1 &&
            (!best || row->sim.step_seconds < best->sim.step_seconds))
            best = row;
    }
    return best ? best->plan : NULL;
}

/* One visit: a simulated search from *weights (n 0: fresh ones), whose policy's weights
 * then replace them; *kept (NULL: not wanted) becomes a copy of the search's fastest plan
 * of one replica, or NULL. */
static pl_status visit(const pl_pretrain_pair *pair, const pl_pretrain_options *o,
                       uint64_t seed, volatile sig_atomic_t *interrupt, pl_policy_weights *weights,
                       pl_pretrain_visit *report, pl_plan **kept, pl_error *err)
{
    pl_search_options so;
    pl_search_options_default(&so);
    so.budget = 0;
    so.iterations = o->iterations;
    so.samples = o->samples;
    so.seed = seed;
    so.simulate_only = true;
    so.run_to_budget = true;
    so.policy = weights->n ? weights : NULL;
    pl_search *s = pl_search_run(pair->graph, pair->cluster, pair->model, &so, NULL, NULL,
                                 interrupt, err);
    if (!s)
        return err ? err->status : PL_EINPUT;
    pl_status status = s->interrupted ? PL_EINTERRUPTED : PL_OK;
    if (status == PL_OK && s->agent) {
        pl_policy_weights next;
        if ((status = pl_agent_weights(s->agent, &next, err)) == PL_OK) {
            pl_policy_weights_clear(weights);
            *weights = next;
        }
        int n = pl_agent_iterations(s->agent);
        report->mean_sampled = n ? pl_agent_curve(s->agent)[n - 1].mean_step : 0;
    }
    const pl_plan *single = best_single(s);
    if (status == PL_OK && kept && single) {
        pl_plan_free(*kept);
        if (!(*kept = pl_plan_new(pair->graph, err)) ||
            pl_plan_copy(*kept, single, err) != PL_OK)
            status = err ? err->status : PL_ENOMEM;
    }
    if (s->best_baseline >= 0)
        report->best_baseline = s->rows[s->best_baseline].sim.step_seconds;
    if (s->chosen >= 0)
        report->best = s->rows[s->chosen].sim.step_seconds;
    else if (status == PL_OK)
        status = pl_error_set(err, PL_EINPUT, NULL, "%s: no plan fits the cluster's memory",
                              pair->name);
    pl_search_free(s);
    if (status == PL_EINTERRUPTED)
        pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted");
    return status;
}

/* Consolidation: one policy, from *weights, fitted to every pair's plan at once
 * (pl_agent_imitate_jointly), the weights then replaced by its own. Pairs without a plan
 * sit out. */
static pl_status consolidate(const pl_pretrain_pair *pairs, int n_pairs,
                             const pl_pretrain_options *o,
                             pl_plan *const *plans, volatile sig_atomic_t *interrupt,
                             pl_policy_weights *weights, pl_error *err)
{
    pl_agent **agents = calloc((size_t)n_pairs, sizeof *agents);
    const pl_plan **kept = calloc((size_t)n_pairs, sizeof *kept);
    pl_status status =
        agents && kept ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_agent_options ao;
    pl_agent_options_default(&ao);
    ao.seed = o->seed;
    ao.hidden = weights->hidden, ao.rounds = weights->rounds, ao.groups = weights->groups;
    int n = 0;
    for (int p = 0; p < n_pairs && status == PL_OK; p++) {
        if (!plans[p])
            continue;
        pl_agent *a = pl_agent_new(pairs[p].graph, pairs[p].cluster, pairs[p].model, &ao, err);
        if (!a) {
            status = err ? err->status : PL_ENOMEM;
            break;
        }
        agents[n] = a, kept[n++] = plans[p];
        status = pl_agent_start_from(a, weights, err);
    }
    if (status == PL_OK && n > 0) {
        pl_agent_set_deadline(agents[0], 0, interrupt);
        status = pl_agent_imitate_jointly(agents, kept, n, o->consolidation_steps, err);
    }
    if (status == PL_OK && n > 0 && interrupt && *interrupt)
        status = PL_EINTERRUPTED; /* the steps done are kept, as a visit's are */
    if ((status == PL_OK || status == PL_EINTERRUPTED) && n > 0) {
        pl_policy_weights next;
        pl_status got = pl_agent_weights(agents[0], &next, err);
        if (got == PL_OK) {
            pl_policy_weights_clear(weights);
            *weights = next;
        } else {
            status = got;
        }
    }
    for (int k = 0; agents && k < n; k++)
        pl_agent_free(agents[k]);
    free(agents);
    free(kept);
    return status;
}

pl_status pl_pretrain(const pl_pretrain_pair *pairs, int n_pairs,
                      const pl_pretrain_options *o, const pl_policy_weights *start,
                      pl_pretrain_progress progress, void *context,
                      volatile sig_atomic_t *interrupt, pl_policy_weights *weights,
                      int *no_fit, pl_error *err)
{
    memset(weights, 0, sizeof *weights);
    if (no_fit)
        *no_fit = -1;
    if (n_pairs < 1 || o->rounds < 1 || o->iterations < 1 || o->samples < 2 ||
        o->consolidation_steps < 0)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "pre-training needs a model and cluster, rounds, iterations, "
                            "at least two samples and no negative consolidation steps");
    if (start) {
        *weights = *start;
        if (!(weights->values = malloc((size_t)start->n * sizeof *weights->values)))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        memcpy(weights->values, start->values, (size_t)start->n * sizeof *weights->values);
    }
    int *order = malloc((size_t)n_pairs * sizeof *order);
    pl_plan **plans = calloc((size_t)n_pairs, sizeof *plans);
    if (!order || !plans) {
        free(order);
        free(plans);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    pl_status status = PL_OK;
    int visits = o->rounds * n_pairs;
    for (int round = 0; round < o->rounds && status == PL_OK; round++) {
        shuffle(order, n_pairs, o->seed, round);
        for (int i = 0; i < n_pairs && status == PL_OK; i++) {
            int number = round * n_pairs + i;
            pl_pretrain_visit report = {.pair = &pairs[order[i]], .round = round,
                                        .visit = number + 1, .visits = visits};
            bool last = round == o->rounds - 1 && o->consolidation_steps > 0;
            status = visit(report.pair, o, pl_rng_u64(o->seed, (uint64_t)number),
                           interrupt, weights, &report, last ? &plans[order[i]] : NULL, err);
            if (status == PL_OK && progress)
                progress(context, &report);
            if (status == PL_EINPUT && no_fit)
                *no_fit = order[i];
        }
    }
    if (status == PL_OK && o->consolidation_steps > 0)
        status = consolidate(pairs, n_pairs, o, plans, interrupt, weights, err);
    if (status == PL_EINTERRUPTED)
        pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted");
    for (int p = 0; p < n_pairs; p++)
        pl_plan_free(plans[p]);
    free(plans);
    free(order);
    if (status == PL_EINPUT)
        pl_policy_weights_clear(weights);
    return status;
}
