/* Replicated baselines: data parallelism, and pipelines replicated over groups of devices.
 *
 *   data-parallel  the whole model on each of R devices, the fastest first, R from 2 to
 *                  every device (dividing the batch), the R that simulates fastest
 *   hybrid         pipeline-dp inside a group of devices and a replica of that pipeline
 *                  on every other group: the cluster's own groups (devices joined by faster
 *                  links) when it has equal ones, and equal runs of devices; the grouping
 *                  that simulates fastest
 *
 * Both try each plan with its optimizer state replicated and sharded (plan.h); where no
 * plan fits, the one that misses the devices' memory by least is what finishing reports
 * (and what placing again with recomputation starts from: baseline.h).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

/* PL_EINPUT saying why `algorithm` cannot replicate the model here: its batch statistics
 * are per step, or the cluster has fewer than `least` devices (`few` says why too few). */
static pl_status check_replicable(const pl_placer *p, const char *algorithm, int least,
                                  const char *few, pl_error *err)
{
    char reason[PL_MAX_NAME + 256];
    if (pl_graph_whole_step_reason(p->graph, reason, sizeof reason))
        return pl_error_set(err, PL_EINPUT, NULL, "%s: the model cannot be replicated: %s",
                            algorithm, reason);
    if (p->n_devices < least)
        return pl_error_set(err, PL_EINPUT, NULL, "%s: %s", algorithm, few);
    return PL_OK;
}

/* Devices from the fastest to the slowest (by index on a tie). */
static void by_speed(const pl_placer *p, int *order)
{
    double speed[PL_MAX_DEVICES];
    for (int d = 0; d < p->n_devices; d++) {
        speed[d] = pl_placer_device_speed(p, d);
        order[d] = d;
    }
    for (int i = 1; i < p->n_devices; i++) /* insertion: a few dozen devices at most */
        for (int j = i; j > 0 && speed[order[j]] > speed[order[j - 1]]; j--) {
            int swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
}

/* The best plan so far: the fastest simulated that fits (fastest >= 0), or while none
 * fits, the one whose fullest device is least over its memory (least_over, a fraction of
 * it; DBL_MAX: none tried). */
typedef struct kept {
    double fastest, least_over;
} kept;

/* Keeps `plan` in `best` when it simulates faster (or is the first that fits), or while
 * none fits, misses by less; with its optimizer state replicated and then sharded (which
 * shares the update among the copies, and fits where a replicated state may not). */
static pl_status keep_faster(const pl_placer *p, pl_plan *plan, pl_plan *best, kept *k,
                             pl_error *err)
{
    pl_status status = PL_OK;
    for (int shard = 0; status == PL_OK && shard < 2; shard++) {
        double seconds, over;
        plan->shard_optimizer_state = shard;
        status = pl_placer_simulate(p, plan, &seconds, &over, err);
        bool faster = seconds >= 0 && (k->fastest < 0 || seconds < k->fastest);
        bool nearer = k->fastest < 0 && seconds < 0 && over < k->least_over;
        if (status == PL_OK && (faster || nearer)) {
            if (faster)
                k->fastest = seconds;
            else
                k->least_over = over;
            status = pl_plan_copy(best, plan, err);
        }
    }
    return status;
}

pl_status pl_place_data_parallel(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    pl_status status = check_replicable(p, "data-parallel", 2,
                                        "one device: nothing to replicate over", err);
    if (status != PL_OK)
        return status;
    int order[PL_MAX_DEVICES];
    by_speed(p, order);
    pl_plan *trial = pl_placer_new_plan(p, err);
    kept k = {-1, DBL_MAX};
    status = trial ? PL_OK : PL_ENOMEM;
    for (int replicas = 2; status == PL_OK && replicas <= p->n_devices; replicas++) {
        if (p->graph->batch_size % replicas != 0)
            continue;
        status = pl_plan_set_replicas(trial, replicas, err);
        for (int r = 0; status == PL_OK && r < replicas; r++)
            for (int o = 0; o < p->n_groups; o++)
                pl_plan_replica(trial, r)[o] = order[r];
        if (status == PL_OK)
            status = keep_faster(p, trial, plan, &k, err);
    }
    pl_plan_free(trial);
    if (status == PL_OK && k.least_over == DBL_MAX && k.fastest < 0)
        return pl_error_set(err, PL_EINPUT, NULL, "data-parallel: no replica count from 2 to "
                            "%d divides the batch of %d", p->n_devices, p->graph->batch_size);
    return status; /* finishing reports a plan that does not fit */
}

/* The groupings to try: replicas x devices each, devices[r * size + i] the i-th of
 * replica r's. The cluster's own groups when they are equal and several; and runs of
 * devices in index order, for every replica count from 2 with at least 2 devices each. */
typedef struct grouping {
    int replicas, size;
    int devices[PL_MAX_DEVICES];
} grouping;

static int groupings(const pl_placer *p, grouping *out)
{
    int all[PL_MAX_DEVICES], group[PL_MAX_DEVICES], n = 0;
    for (int d = 0; d < p->n_devices; d++)
        all[d] = d;
    int k = pl_cluster_groups(p->cluster, all, p->n_devices, group);
    if (k > 1 && p->n_devices % k == 0 && p->n_devices / k >= 2) {
        grouping *g = &out[n];
        g->replicas = k;
        g->size = p->n_devices / k;
        int filled[PL_MAX_DEVICES] = {0};
        bool equal = true;
        for (int d = 0; d < p->n_devices && equal; d++) {
            equal = filled[group[d]] < g->size;
            if (equal)
                g->devices[group[d] * g->size + filled[group[d]]++] = d;
        }
        n += equal;
    }
    for (int replicas = 2; replicas * 2 <= p->n_devices; replicas++) {
        if (p->n_devices % replicas != 0)
            continue;
        grouping *g = &out[n++];
        g->replicas = replicas;
        g->size = p->n_devices / replicas;
        for (int d = 0; d < p->n_devices; d++)
            g->devices[d] = d;
    }
    return n;
}

/* pipeline-dp on a group of devices, on the view the placer has (plain or recomputing),
 * once; NULL with `err` filled in when none fits. */
static pl_plan *group_pipeline(const pl_placer *p, const pl_cluster *group, pl_error *err)
{
    pl_placer view;
    pl_simulation sim;
    pl_plan *pipeline = NULL;
    if (pl_placer_init(&view, p->graph, group, p->model, p->seed, err) == PL_OK &&
        (!p->recompute || pl_placer_recompute(&view, err) == PL_OK))
        pipeline = pl_placer_place_once(&view, PL_BASELINE_PIPELINE_DP, &sim, err);
    pl_placer_clear(&view);
    return pipeline;
}

/* pipeline-dp on the grouping's first group, replicated on the others. */
static pl_status replicate_pipeline(const pl_placer *p, const grouping *g, pl_plan *plan,
                                    pl_error *err)
{
    pl_cluster *first = pl_cluster_subset(p->cluster, g->devices, g->size, err);
    if (!first)
        return err ? err->status : PL_ENOMEM;
    pl_error quiet;
    pl_error_init(&quiet, NULL);
    pl_plan *pipeline = group_pipeline(p, first, &quiet);
    pl_cluster_free(first);
    if (!pipeline)
        return quiet.status == PL_ENOMEM ? pl_error_set(err, PL_ENOMEM, NULL, "out of memory")
                                         : PL_EINPUT; /* no pipeline fits a group: skip */
    pl_status status = pl_plan_copy(plan, pipeline, err);
    if (status == PL_OK)
        status = pl_plan_set_replicas(plan, g->replicas, err);
    for (int r = 0; status == PL_OK && r < g->replicas; r++)
        for (int o = 0; o < p->n_groups; o++)
            pl_plan_replica(plan, r)[o] = g->devices[r * g->size + pipeline->device[o]];
    while (plan->micro_batches > 1 &&
           p->graph->batch_size % (g->replicas * plan->micro_batches) != 0)
        plan->micro_batches /= 2;
    pl_plan_free(pipeline);
    return status;
}

pl_status pl_place_hybrid(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    pl_status status = check_replicable(p, "hybrid", 4,
                                        "fewer than 4 devices: no two pipelines of two", err);
    if (status != PL_OK)
        return status;
    grouping *options = malloc(PL_MAX_DEVICES * sizeof *options);
    pl_plan *trial = pl_plan_new(p->graph, err);
    status = options && trial ? PL_OK : pl_placer_no_memory(err);
    int n = status == PL_OK ? groupings(p, options) : 0;
    kept k = {-1, DBL_MAX};
    bool divides = false;
    for (int i = 0; status == PL_OK && i < n; i++) {
        if (p->graph->batch_size % options[i].replicas != 0)
            continue;
        divides = true;
        status = replicate_pipeline(p, &options[i], trial, err);
        if (status == PL_OK)
            status = keep_faster(p, trial, plan, &k, err);
        else if (status == PL_EINPUT)
            status = PL_OK;
    }
    free(options);
    pl_plan_free(trial);
    if (status == PL_OK && k.least_over == DBL_MAX && k.fastest < 0)
        return divides ? pl_error_set(err, PL_ENOFIT, NULL, "hybrid: no group of devices "
                                      "holds a pipeline of the model")
                       : pl_error_set(err, PL_EINPUT, NULL, "hybrid: the batch of %d divides "
                                      "among none of the groupings", p->graph->batch_size);
    return status; /* finishing reports a plan that does not fit */
}
