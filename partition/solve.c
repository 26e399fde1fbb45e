/* placer's partitioner (partition.h): the dynamic program over linear orders first (cheap,
 * and its result bounds the rest), over ideals where they are few enough, then the local
 * search from the best contiguous split. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partition_impl.h"

enum { DEFAULT_MAX_IDEALS = 20000 };
/* Past this many units, enumerating ideals costs more (a scan of every unit per ideal) than
 * it can bring before the limit: the orders alone. */
enum { MAX_UNITS_FOR_IDEALS = 4096 };
/* The programs over orders take time in proportion to the units times a device's share of
 * them: past this many units, the greedy split alone (then the local search). */
enum { MAX_UNITS_FOR_ORDERS = 20000 };

/* A second topological order of the units, depth first (the most recent ready unit next),
 * beside their numbering's breadth-first one: chains stay together in it. */
static bool depth_first_order(const pl_partition_graph *g, int *order)
{
    int n = g->n_units, m = g->pred_start[n];
    int *tail = malloc(((size_t)m + 1) * sizeof *tail), *start = NULL, *next = NULL;
    int *waiting = calloc((size_t)n + 1, sizeof *waiting);
    int *stack = malloc(((size_t)n + 1) * sizeof *stack);
    bool ok = tail && waiting && stack;
    for (int u = 0; ok && u < n; u++)
        for (int k = g->pred_start[u]; k < g->pred_start[u + 1]; k++)
            tail[k] = u, waiting[u]++;
    ok = ok && pl_partition_csr(n, m, g->pred, tail, &start, &next);
    if (ok) {
        int top = 0, placed = 0;
        for (int u = n - 1; u >= 0; u--)
            if (waiting[u] == 0)
                stack[top++] = u;
        while (top > 0) {
            int u = stack[--top];
            order[placed++] = u;
            for (int k = start[u + 1] - 1; k >= start[u]; k--)
                if (--waiting[next[k]] == 0)
                    stack[top++] = next[k];
        }
    }
    free(tail), free(start), free(next), free(waiting), free(stack);
    return ok;
}

/* The max-load of a greedy split of the units in `order` over the accelerators, each
 * filled to an even share of the accelerator latency; HUGE_VAL when it breaks a rule.
 * The first dynamic program prunes by it, so that its runs stay about a device's share
 * long instead of spanning the graph. */
static double greedy_bound(const pl_partition_graph *g, const int *order, int *device)
{
    const pl_partition_instance *inst = g->instance;
    if (inst->n_accelerators == 0)
        return HUGE_VAL;
    double total = 0, filled = 0;
    for (int v = 0; v < inst->n_nodes; v++)
        total += inst->nodes[v].accelerator_latency;
    int accelerator = 1;
    for (int i = 0; i < g->n_units; i++) {
        int u = order[i];
        double latency = 0;
        for (int k = g->unit_start[u]; k < g->unit_start[u + 1]; k++)
            latency += inst->nodes[g->unit_node[k]].accelerator_latency;
        if (filled > 0 && filled + latency > total * accelerator / inst->n_accelerators &&
            accelerator < inst->n_accelerators)
            accelerator++;
        filled += latency;
        for (int k = g->unit_start[u]; k < g->unit_start[u + 1]; k++)
            device[g->unit_node[k]] = accelerator;
    }
    pl_partition_split split = {inst->n_nodes, device};
    if (pl_partition_check(inst, &split, NULL) != PL_OK)
        return HUGE_VAL;
    double max_load = pl_partition_max_load(inst, &split, NULL);
    return isnan(max_load) ? HUGE_VAL : max_load;
}

/* The best contiguous split into split->device; its max-load, HUGE_VAL when none fits,
 * NAN when out of memory. */
static double best_contiguous(const pl_partition_graph *g, long max_ideals, int *device,
                              pl_partition_result *result, pl_error *err)
{
    int n = g->n_units;
    int *orders = malloc(2 * ((size_t)n + 1) * sizeof *orders);
    int *candidate = malloc(((size_t)g->instance->n_nodes + 1) * sizeof *candidate);
    double best = NAN;
    if (!orders || !candidate || !depth_first_order(g, orders + n + 1)) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (int u = 0; u < n; u++)
        orders[u] = u; /* units are numbered in a (breadth-first) topological order */
    best = greedy_bound(g, orders, device);
    result->orders = n <= MAX_UNITS_FOR_ORDERS;
    for (int k = 0; k < 2 && result->orders; k++) {
        double found = pl_partition_linear_dp(g, orders + k * (n + 1), best, candidate, err);
        if (isnan(found)) {
            best = NAN;
            goto done;
        }
        if (found < best)
            best = found, memcpy(device, candidate, (size_t)g->instance->n_nodes * sizeof *device);
    }
    double found = n <= MAX_UNITS_FOR_IDEALS
                       ? pl_partition_ideal_dp(g, max_ideals, best, candidate, &result->n_ideals,
                                               err)
                       : (result->n_ideals = -1);
    result->ideals = found >= 0;
    if (isnan(found))
        best = NAN;
    else if (found >= 0 && found < best)
        best = found, memcpy(device, candidate, (size_t)g->instance->n_nodes * sizeof *device);
done:
    free(orders);
    free(candidate);
    return best;
}

pl_status pl_partition_solve(const pl_partition_instance *inst, long max_ideals,
                             pl_partition_split **split, pl_partition_result *result,
                             pl_error *err)
{
    *split = NULL;
    memset(result, 0, sizeof *result);
    pl_partition_graph graph;
    if (pl_partition_graph_init(&graph, inst, err))
        return PL_ENOMEM;
    pl_partition_split *s = pl_partition_split_new(inst, err);
    pl_status status = s ? PL_OK : PL_ENOMEM;
    double best = s ? best_contiguous(&graph, max_ideals > 0 ? max_ideals : DEFAULT_MAX_IDEALS,
                                      s->device, result, err)
                    : NAN;
    if (!status && isnan(best))
        status = PL_ENOMEM;
    else if (!status && isinf(best))
        status = pl_error_set(err, PL_EINPUT, NULL,
                              "no contiguous split fits: a colour class that no accelerator "
                              "can hold (maxSizePerFPGA, supportedOnFpga) and no CPU to run "
                              "it, or too few devices");
    if (!status) {
        result->dp_max_load = pl_partition_max_load(inst, s, NULL);
        result->refined_max_load = pl_partition_refine(&graph, s->device, err);
        if (isnan(result->dp_max_load) || isnan(result->refined_max_load))
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    if (!status && pl_partition_check(inst, s, err) != PL_OK)
        status = pl_error_set(err, PL_EINTERNAL, NULL, "the partitioner made a split that "
                                                       "breaks a rule");
    pl_partition_graph_release(&graph);
    if (status) {
        pl_partition_split_free(s);
        return status;
    }
    *split = s;
    return PL_OK;
}
