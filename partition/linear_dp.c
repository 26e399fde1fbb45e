/* The dynamic program over a linear order of the units (partition_impl.h): every device
 * holds a run of consecutive units. Where the graph has too many ideals this is what
 * remains of contiguity; a topological order keeps each run a contiguous set. */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

typedef struct placing {
    const pl_partition_graph *graph;
    const int *order;
    int *device;
} placing;

static void place_run(long from, long to, int device, void *ctx)
{
    const placing *p = ctx;
    const pl_partition_graph *g = p->graph;
    for (long i = from; i < to; i++)
        for (int k = g->unit_start[p->order[i]]; k < g->unit_start[p->order[i] + 1]; k++)
            p->device[g->unit_node[k]] = device;
}

double pl_partition_linear_dp(const pl_partition_graph *g, const int *order,
                              double bound_above, int *device, pl_error *err)
{
    const pl_partition_instance *inst = g->instance;
    int n = g->n_units;
    pl_partition_table table;
    pl_partition_segment segment;
    if (pl_partition_table_init(&table, inst->n_accelerators, inst->n_cpus > 0, n + 1, err))
        return NAN;
    if (pl_partition_segment_init(&segment, g, err)) {
        pl_partition_table_release(&table);
        return NAN;
    }
    for (int start = 0; start < n; start++) {
        pl_partition_table_settle(&table, start);
        if (pl_partition_table_value(&table, start) >= bound_above)
            continue;
        int end = start;
        while (end < n) {
            pl_partition_segment_add(&segment, order[end++]);
            pl_partition_table_offer(&table, start, end,
                                     pl_partition_segment_accelerator(&segment),
                                     pl_partition_segment_cpu(&segment));
            if (pl_partition_segment_beyond(&segment, bound_above))
                break;
        }
        while (end > start)
            pl_partition_segment_remove(&segment, order[--end]);
    }
    pl_partition_table_settle(&table, n);
    double best = pl_partition_table_value(&table, n);
    if (best < bound_above) {
        placing p = {g, order, device};
        pl_partition_table_walk(&table, n, place_run, &p);
    } else {
        best = HUGE_VAL;
    }
    pl_partition_segment_release(&segment);
    pl_partition_table_release(&table);
    return best;
}
