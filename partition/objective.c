/* The paper's objective and feasibility rules for a split (partition.h). */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

/* Adds node u's communication to the accelerators it charges: its own and every other
 * device one of its consumers is on, when there is such a device. `seen` has one entry a
 * device, compared against `mark`. */
void pl_partition_charge(const pl_partition_instance *inst, const int *device, int u,
                         const int *consumer_start, const int *consumer, double sign,
                         int *seen, int mark, double *loads)
{
    double cost = sign * inst->nodes[u].output_cost;
    int own = device[u];
    seen[own] = mark;
    bool crosses = false;
    for (int k = consumer_start[u]; k < consumer_start[u + 1]; k++) {
        int there = device[consumer[k]];
        if (seen[there] == mark)
            continue;
        seen[there] = mark;
        crosses = true;
        if (there != PL_PARTITION_CPU)
            loads[there] += cost;
    }
    if (crosses && own != PL_PARTITION_CPU)
        loads[own] += cost;
}

/* The loads of every device, the CPU's first; `consumer_*` the graph's CSR. */
void pl_partition_loads(const pl_partition_instance *inst, const int *device,
                        const int *consumer_start, const int *consumer, int *seen,
                        double *loads)
{
    int n_devices = inst->n_accelerators + 1;
    for (int d = 0; d < n_devices; d++)
        loads[d] = 0, seen[d] = -1;
    for (int v = 0; v < inst->n_nodes; v++) {
        const pl_partition_node *node = &inst->nodes[v];
        loads[device[v]] +=
            device[v] == PL_PARTITION_CPU ? node->cpu_latency : node->accelerator_latency;
    }
    for (int u = 0; u < inst->n_nodes; u++)
        pl_partition_charge(inst, device, u, consumer_start, consumer, 1, seen, u, loads);
}

double pl_partition_max_load(const pl_partition_instance *inst,
                             const pl_partition_split *split, double *device_loads)
{
    int n_devices = inst->n_accelerators + 1;
    double *loads = device_loads ? device_loads : calloc((size_t)n_devices, sizeof *loads);
    int *seen = calloc((size_t)n_devices, sizeof *seen);
    int *start = NULL, *consumer = NULL;
    double max_load = NAN;
    if (loads && seen &&
        pl_partition_csr(inst->n_nodes, inst->n_edges, inst->edge_source, inst->edge_dest,
                         &start, &consumer)) {
        pl_partition_loads(inst, split->device, start, consumer, seen, loads);
        max_load = 0;
        for (int d = 0; d < n_devices; d++)
            max_load = fmax(max_load, loads[d]);
    }
    if (loads != device_loads)
        free(loads);
    free(seen), free(start), free(consumer);
    return max_load;
}

/* The first node of each colour class, to find a class split over two devices. */
static pl_status check_colours(const pl_partition_instance *inst, const int *device,
                               pl_error *err)
{
    int *first = malloc(((size_t)inst->n_colours + 1) * sizeof *first);
    if (!first)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int c = 0; c < inst->n_colours; c++)
        first[c] = -1;
    pl_status status = PL_OK;
    for (int v = 0; v < inst->n_nodes && !status; v++) {
        int *seen = &first[inst->nodes[v].colour];
        if (*seen < 0)
            *seen = v;
        else if (device[*seen] != device[v])
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "nodes %lld and %lld share a colour class but not a device",
                                  (long long)inst->nodes[*seen].id,
                                  (long long)inst->nodes[v].id);
    }
    free(first);
    return status;
}

pl_status pl_partition_check(const pl_partition_instance *inst,
                             const pl_partition_split *split, pl_error *err)
{
    const int *device = split->device;
    double *size = calloc((size_t)inst->n_accelerators + 1, sizeof *size);
    if (!size)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = PL_OK;
    for (int v = 0; v < inst->n_nodes && !status; v++) {
        const pl_partition_node *node = &inst->nodes[v];
        if (device[v] < 0 || device[v] > inst->n_accelerators)
            status = pl_error_set(err, PL_EINPUT, NULL, "node %lld is on no device",
                                  (long long)node->id);
        else if (device[v] == PL_PARTITION_CPU && inst->n_cpus == 0)
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "node %lld is on the CPU, and the instance has none "
                                  "(maxCPUs 0)",
                                  (long long)node->id);
        else if (device[v] != PL_PARTITION_CPU && !node->accelerator_ok)
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "node %lld is on accelerator %d, which cannot run it "
                                  "(supportedOnFpga false)",
                                  (long long)node->id, device[v]);
        else
            size[device[v]] += node->size;
    }
    for (int d = 1; d <= inst->n_accelerators && !status; d++)
        if (size[d] > inst->max_size)
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "accelerator %d holds %.17g bytes, more than maxSizePerFPGA "
                                  "(%.17g)",
                                  d, size[d], inst->max_size);
    free(size);
    return status ? status : check_colours(inst, device, err);
}
