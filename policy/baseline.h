/* Baseline placers: the classical algorithms the learned agent is held against.
 *
 * Each turns a training graph (autodiff.h) and a cluster into a plan (plan.h), using the
 * cost model for op and copy times where the algorithm needs them:
 *
 *   single         every op on the fastest device that holds the whole model
 *   round-robin    forward ops dealt over the devices in topological order
 *   expert         what a practitioner writes: contiguous blocks of FLOPs in proportion
 *                  to the devices' speeds, one per device, and a model's parallel
 *                  branches spread over devices
 *   metis          k-way partition minimising the bytes cut with compute in proportion to
 *                  the devices' speeds (METIS)
 *   etf, sct       memory-aware list scheduling in the style of Baechi's m-ETF and m-SCT,
 *                  each group on the device where it finishes first, never slower
 *                  (simulated) than single
 *   pipeline-dp    contiguous stages by dynamic programming over the topological order,
 *                  each stage timed on its own device, minimising the slowest stage with
 *                  its communication over its link, choosing the devices' order and the
 *                  micro-batch count
 *   data-parallel  the whole model replicated on 2 or more of the fastest devices, as many
 *                  as simulate fastest (the batch shared equally)
 *   hybrid         pipeline-dp inside a group of devices, replicated on every other group
 *                  (the cluster's groups joined by faster links, and equal runs of devices)
 *   megatron       tensor parallelism inside groups of well-linked devices, pipeline stages
 *                  across them, data replicas on top (Megatron-LM's recipe), the degrees
 *                  that simulate fastest
 *
 * Times are each device's own (its threads and declared rate) and each link's own.
 *
 * Rules every algorithm keeps: a plan places forward ops only, so co-location groups
 * (a backward op with its forward op, an update with its parameter) move together; it
 * respects each device's memory capacity as the program (program.h) counts it, or fails
 * (PL_ENOFIT) saying how much memory its nearest plan needs on which device against what
 * that device holds, where it got as far as a plan; it is deterministic for a given seed;
 * and its provenance names the algorithm. Other refusals (a model that cannot be
 * replicated, too few devices) are PL_EINPUT.
 *
 * Recomputation where memory needs it: an algorithm other than megatron (which recomputes
 * as part of its recipe) that finds no plan that fits places again on a view of the model
 * whose activations are recomputed: the outputs of every ceil(sqrt(n))-th of the n forward
 * ops are kept as checkpoints and the others' recomputed from them in the backward pass
 * (Chen et al. 2016; plan.h: recompute), and the algorithm's own memory estimates count
 * what that keeps (baseline_impl.h). Its plan recomputes those ops' activations; the
 * program's memory decides whether it fits, and when it still does not the error says
 * that recomputation was tried too. Replicated plans try their optimiser state sharded
 * before recomputation. A plan that fits without recomputing is the one it was before.
 *
 * Re-entrant: no state beyond the arguments, which are only read. */
#ifndef PLACER_BASELINE_H
#define PLACER_BASELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "plan.h"
#include "simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_baseline {
    PL_BASELINE_SINGLE,
    PL_BASELINE_ROUND_ROBIN,
    PL_BASELINE_EXPERT,
    PL_BASELINE_METIS,
    PL_BASELINE_ETF,
    PL_BASELINE_SCT,
    PL_BASELINE_PIPELINE_DP,
    PL_BASELINE_DATA_PARALLEL,
    PL_BASELINE_HYBRID,
    PL_BASELINE_MEGATRON,
    PL_BASELINE_COUNT
} pl_baseline;

/* How near an algorithm that failed came to fitting: its nearest plan's device furthest
 * over its memory (by the fraction of it), what that device needs and what it holds, and
 * how the plan saves memory. `device` -1: no plan was built to count (the algorithm's own
 * estimates refused every one), or the placing did not fail for memory. */
typedef struct pl_baseline_misfit {
    int device;
    int64_t needs, holds;
    bool recomputes; /* the plan recomputes activations */
    bool splits;     /* the plan splits ops over devices */
} pl_baseline_misfit;

/* "single", "round-robin", "expert", "metis", "etf", "sct", "pipeline-dp",
 * "data-parallel", "hybrid", "megatron". */
const char *pl_baseline_name(pl_baseline algorithm);
/* The algorithm of a name, or PL_BASELINE_COUNT when there is none. */
pl_baseline pl_baseline_from_name(const char *name);

/* A new plan (free with pl_plan_free) for a training graph on a cluster, or NULL with
 * `err` filled in. */
pl_plan *pl_baseline_place(pl_baseline algorithm, const pl_graph *graph,
                           const pl_cluster *cluster, const pl_cost_model *model,
                           uint64_t seed, pl_error *err);
/* The same, with the plan's simulation (simulate.h), which placing it made, in *sim: a
 * caller that wants both spares a second program and simulation, which on a large graph
 * cost as much as the placing. */
pl_plan *pl_baseline_place_simulated(pl_baseline algorithm, const pl_graph *graph,
                                     const pl_cluster *cluster, const pl_cost_model *model,
                                     uint64_t seed, pl_simulation *sim, pl_error *err);

/* Contiguous blocks of forward ops in topological order of about equal forward FLOPs:
 * block[o] (0 .. n_blocks-1, non-decreasing) for each forward op o; an op goes to the block
 * its FLOPs' midpoint falls in, so a heavy op may leave a block empty. The expert placer
 * and the benchmarks' pipeline plans use it. */
void pl_baseline_flop_blocks(const pl_graph *graph, int n_blocks, int *block);

#ifdef __cplusplus
}
#endif

#endif
