/* The training graph a plan with split ops runs (split_graph.h), and the plan restated
 * over its ops. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

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
    *split = s;
    *restated = p;
    return PL_OK;
}
