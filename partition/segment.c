/* The cost of a growing node set (partition_impl.h): each node's charge is kept by two
 * counts, whether it is inside and how many of its out-edges end inside, so that adding
 * or removing a unit costs its nodes' degrees, not the graph. */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

pl_status pl_partition_segment_init(pl_partition_segment *s, const pl_partition_graph *g,
                                    pl_error *err)
{
    size_t n = (size_t)g->instance->n_nodes;
    *s = (pl_partition_segment){.graph = g};
    s->inside = calloc(n, sizeof *s->inside);
    s->consumers_inside = calloc(n, sizeof *s->consumers_inside);
    if (s->inside && s->consumers_inside)
        return PL_OK;
    pl_partition_segment_release(s);
    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

void pl_partition_segment_release(pl_partition_segment *s)
{
    free(s->inside);
    free(s->consumers_inside);
    s->inside = NULL;
    s->consumers_inside = NULL;
}

/* Node v pays its output cost when an out-edge crosses the border: from inside to
 * outside, or from outside in. */
static bool charged(const pl_partition_segment *s, int v)
{
    const pl_partition_graph *g = s->graph;
    int inside = s->consumers_inside[v];
    int out_degree = g->consumer_start[v + 1] - g->consumer_start[v];
    return s->inside[v] ? inside < out_degree : inside > 0;
}

/* Applies a change to v's counts (`inside` flips it in or out, else `edge` moves one of its
 * out-edges' heads by +1/-1), keeping the communication sum. */
static void update(pl_partition_segment *s, int v, int flip, int edge)
{
    bool before = charged(s, v);
    if (flip)
        s->inside[v] = (unsigned char)(flip > 0);
    s->consumers_inside[v] += edge;
    bool after = charged(s, v);
    if (before != after)
        s->communication += (after ? 1 : -1) * s->graph->instance->nodes[v].output_cost;
}

static void move_unit(pl_partition_segment *s, int unit, int sign)
{
    const pl_partition_graph *g = s->graph;
    for (int i = g->unit_start[unit]; i < g->unit_start[unit + 1]; i++) {
        int v = g->unit_node[i];
        const pl_partition_node *node = &g->instance->nodes[v];
        update(s, v, sign, 0);
        for (int k = g->producer_start[v]; k < g->producer_start[v + 1]; k++)
            update(s, g->producer[k], 0, sign);
        s->accelerator_latency += sign * node->accelerator_latency;
        s->cpu_latency += sign * node->cpu_latency;
        s->size += sign * node->size;
        s->unsupported += sign * !node->accelerator_ok;
    }
}

void pl_partition_segment_add(pl_partition_segment *s, int unit)
{
    move_unit(s, unit, 1);
}

void pl_partition_segment_remove(pl_partition_segment *s, int unit)
{
    move_unit(s, unit, -1);
}

double pl_partition_segment_accelerator(const pl_partition_segment *s)
{
    if (s->unsupported > 0 || s->size > s->graph->instance->max_size)
        return HUGE_VAL;
    return s->accelerator_latency + s->communication;
}

double pl_partition_segment_cpu(const pl_partition_segment *s)
{
    return s->cpu_latency;
}

/* Past the bound on every device, longer runs from the same start only cost more. */
bool pl_partition_segment_beyond(const pl_partition_segment *s, double bound)
{
    bool accelerator_beyond = s->accelerator_latency >= bound || s->unsupported > 0 ||
                              s->size > s->graph->instance->max_size ||
                              s->graph->instance->n_accelerators == 0;
    bool cpu_beyond = s->cpu_latency >= bound || s->graph->instance->n_cpus == 0;
    return accelerator_beyond && cpu_beyond;
}
