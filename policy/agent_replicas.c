/* Replication, the agent's action on the shape of a whole plan: a placement that uses u
 * devices is also tried as R replicas (R u devices at most, R x micro-batches dividing the
 * batch), replica r on u devices of its own. The other replicas take the devices the plan
 * leaves free, the cluster's groups (devices joined by faster links) first and in order
 * within each, so that on two machines of four devices a pipeline over one machine is
 * replicated on the other; each with its optimizer state replicated and sharded. The
 * fastest that simulates faster than the plan is kept, under the plan's label: refinement
 * then moves its ops in every replica. A split op's shards count among the devices a
 * placement uses, and each replica's shards take that replica's devices as its ops do. */
#include <math.h>
#include <stdlib.h>

#include "agent_impl.h"

/* The devices a replica may take: those `used` leaves free, group by group. */
static int free_devices(const pl_cluster *c, const bool *used, int *out)
{
    int all[PL_MAX_DEVICES], group[PL_MAX_DEVICES], n = 0;
    for (int d = 0; d < c->n_devices; d++)
        all[d] = d;
    int groups = pl_cluster_groups(c, all, c->n_devices, group);
    for (int g = 0; g < groups; g++)
        for (int d = 0; d < c->n_devices; d++)
            if (group[d] == g && !used[d])
                out[n++] = d;
    return n;
}

pl_status pl_agent_replicate(pl_agent *a, const pl_plan *plan, const char *algorithm,
                             pl_error *err)
{
    const pl_graph *g = a->graph;
    if (plan->replicas > 1 || pl_graph_whole_step_op(g) >= 0)
        return PL_OK;
    bool used[PL_MAX_DEVICES] = {false};
    int n_mine = 0, spare[PL_MAX_DEVICES];
    for (int o = 0; o < plan->n_ops; o++)
        for (int s = 0; s < plan->split[o]; s++) {
            int d = pl_plan_shard_device(plan, 0, o, s);
            n_mine += !used[d];
            used[d] = true;
        }
    int n_spare = free_devices(a->cluster, used, spare);
    int rank[PL_MAX_DEVICES]; /* a used device's place among the plan's, by index */
    for (int d = 0, k = 0; d < a->cluster->n_devices; d++)
        if (used[d])
            rank[d] = k++;
    pl_plan *trial = pl_plan_new(g, err), *best = pl_plan_new(g, err);
    pl_status status = trial && best ? PL_OK : PL_ENOMEM;
    double plan_step, fastest = INFINITY;
    bool fits;
    if (status == PL_OK)
        status = pl_agent_simulate(a, plan, &plan_step, &fits, err);
    for (int r = 2; status == PL_OK && (r - 1) * n_mine <= n_spare; r++) {
        if (g->batch_size % (r * plan->micro_batches) != 0)
            continue;
        if (!pl_agent_copy_plan(trial, plan) ||
            (status = pl_plan_set_replicas(trial, r, err)) != PL_OK) {
            status = PL_ENOMEM;
            break;
        }
        for (int k = 1; k < r; k++)
            for (int o = 0; o < plan->n_ops; o++) {
                int *mine = spare + (k - 1) * n_mine;
                pl_plan_replica(trial, k)[o] = mine[rank[plan->device[o]]];
                for (int s = 0; plan->split[o] > 1 && s < plan->split[o]; s++)
                    trial->split_device[((size_t)k * (size_t)plan->n_ops + (size_t)o) *
                                            PL_MAX_SPLIT + (size_t)s] =
                        mine[rank[pl_plan_shard_device(plan, 0, o, s)]];
            }
        for (int shard = 0; status == PL_OK && shard < 2; shard++) {
            double step;
            trial->shard_optimizer_state = shard;
            status = pl_agent_simulate(a, trial, &step, &fits, err);
            if (status == PL_OK && fits && step < fastest) {
                fastest = step;
                status = pl_agent_copy_plan(best, trial) ? PL_OK : PL_ENOMEM;
            }
        }
    }
    if (status == PL_OK && fastest < plan_step)
        status = pl_agent_keep(a, best, fastest, algorithm, err);
    pl_plan_free(trial);
    pl_plan_free(best);
    return status == PL_ENOMEM ? pl_error_set(err, PL_ENOMEM, NULL, "out of memory") : status;
}
