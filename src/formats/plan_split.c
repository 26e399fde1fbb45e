/* The training graph a plan with split ops or recomputed activations runs (split_graph.h,
 * recompute.h), and the plan restated over its ops. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "recompute.h"

/* Ops share their shards' devices when every replica puts their shards on the same ones:
 * each op's group is the first such op's index. */
static void group_ops(const pl_plan *plan, int *group)
{
    for (int o = 0; o < plan->n_ops; o++) {
        group[o] = plan->split[o] > 1 ? o : -1;
        for (int q = 0; q < o && group[o] == o; q++) {
            if (group[q] != q || plan->split[q] != plan->split[o])
                continue;
            bool same = true;
            for (int r = 0; same && r < plan->replicas; r++)
                for (int s = 0; same && s < plan->split[o]; s++)
                    same = pl_plan_shard_device(plan, r, q, s) ==
                           pl_plan_shard_device(plan, r, o, s);
            if (same)
                group[o] = q;
        }
    }
}

/* The restated plan's recomputed ops recomputed in the rewritten graph; its clones are
 * values the model does not have (tensor_origin -1). */
static pl_status recompute(pl_split_graph *s, const pl_plan *restated, pl_error *err)
{
    int before = s->graph->n_tensors;
    pl_status status = pl_recompute_graph(s->graph, restated->recompute, err);
    if (status != PL_OK || s->graph->n_tensors == before)
        return status;
    int *origin = realloc(s->tensor_origin, (size_t)s->graph->n_tensors * sizeof *origin);
    if (!origin)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int t = before; t < s->graph->n_tensors; t++)
        origin[t] = -1;
    s->tensor_origin = origin;
    return PL_OK;
}

pl_status pl_plan_split_graph(const pl_plan *plan, const pl_graph *graph, pl_split_graph **split,
                              pl_plan **restated, pl_error *err)
{
    *split = NULL;
    *restated = NULL;
    int *group = malloc((size_t)(plan->n_ops > 0 ? plan->n_ops : 1) * sizeof *group);
    if (!group)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    group_ops(plan, group);
    pl_split_graph *s = pl_split_graph_new(graph, plan->split, group, plan->stage, err);
    free(group);
    if (!s)
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    pl_plan *p = pl_plan_new(s->graph, err);
    if (!p || pl_plan_set_replicas(p, plan->replicas, err) != PL_OK) {
        pl_plan_free(p);
        pl_split_graph_free(s);
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    }
    for (int o = 0; o < p->n_ops; o++) {
        int from = s->op_origin[o], shard = s->op_shard[o] < 0 ? 0 : s->op_shard[o];
        for (int r = 0; r < plan->replicas; r++)
            pl_plan_replica(p, r)[o] = pl_plan_shard_device(plan, r, from, shard);
        p->stage[o] = plan->stage[from];
        p->recompute[o] = plan->recompute[from];
    }
    pl_plan_copy_settings(p, plan);
    if (recompute(s, p, err) != PL_OK) {
        pl_plan_free(p);
        pl_split_graph_free(s);
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    }
    *split = s;
    *restated = p;
    return PL_OK;
}
