/* The lower bound on a plan's step time: what no plan of a graph on a cluster can beat,
 * in the simulator's own terms, so that a plan's step over the bound says how much room is
 * left. Pure and thread-safe: it reads the graph, the cluster and the cost model. */
#ifndef PLACER_BOUND_H
#define PLACER_BOUND_H

#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A lower bound on any plan's step for a training graph on a cluster. A plan cuts the
 * batch into micro-batches of one size; at each size a plan may choose, the larger of
 * - one micro-batch's critical path (every op on its fastest device, free communication),
 * - the step's work spread over the devices: on equal devices evenly, on unequal ones
 *   weighted by device (each group's work taken where its weighted time is least, with
 *   weights that start in proportion to the devices' speeds), and each op on its fastest
 *   device spread evenly, whichever is larger,
 * - the heaviest co-location group's work on the device where it runs fastest,
 * - the work plus the idle of the pipeline's fill and drain, spread the same ways, and
 * - for each update, its ancestors' work (spread as above, or the heaviest group's share
 *   of it) and then the update, which waits for every micro-batch;
 * - what the links cost (pl_step_lower_bound_parts, below);
 * and the least of those over the sizes. A plan may split an op of a kind split_graph.h
 * splits over up to min(devices, PL_MAX_SPLIT) devices: such an op's time on the critical
 * path (but a hardware kernel's launch, which every shard pays) and the fill and drain,
 * and its group's work, count shared among that many. A
 * model that may be replicated (plan.h) may run
 * a group's micro-batches on as many devices as there are micro-batches (or devices): the
 * heaviest group's work is then shared by that many, and the fill and drain go. Each op's time is as pl_simulate takes it (on a
 * paced device with the pacer's lateness), so no plan simulates faster than the bound;
 * on a native device with a calibrated profile, a floor under what a measured op task may
 * take (bound.c), so that no measured step falls below it either.
 * The memory capacities are not used: the bound stays valid, if looser, for models that
 * must be split to fit. */
pl_status pl_step_lower_bound(const pl_graph *graph, const pl_cluster *cluster,
                              const pl_cost_model *model, double *seconds, pl_error *err);

/* The bound and its parts at the micro-batch size where it is least: the terms above,
 * which take communication as free, and the links' term. On clusters whose links all
 * declare a bandwidth, a tensor too large to cross a link within the step keeps its ops
 * on one device in each replica, and between the cluster's groups (cluster.h) in one
 * group; a trained parameter too large to be sent (copied, or all-reduced) keeps every
 * replica's readers and update on one device, or in one group. The ops kept together
 * load one device (one group) with their work, shared by the replicas unless a kept
 * parameter holds them, and the links' term is the least step at or above that load at
 * its own thresholds (cost/bound_comm.c). With a native link it is 0. */
typedef struct pl_bound_parts {
    double seconds;       /* the bound: the larger part at micro_batch_size */
    double compute;       /* the terms with free communication */
    double communication; /* the links' term */
    int micro_batch_size;
    double free_communication; /* the bound were communication free: the least of the
                                  terms with free communication over the sizes */
} pl_bound_parts;
pl_status pl_step_lower_bound_parts(const pl_graph *graph, const pl_cluster *cluster,
                                    const pl_cost_model *model, pl_bound_parts *parts,
                                    pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
