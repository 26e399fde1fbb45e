/* What the baseline placers share (private to policy/): the placement units with their
 * costs on each device and their memory, the dataflow between them, and the closing
 * steps every algorithm takes (memory check, simulation, provenance).
 *
 * A unit is a co-location group (graph.h): a forward op with its backward ops and the
 * updates of the parameters it reads first. Groups are numbered as their forward ops, so
 * group order is a topological order of the forward graph. Costs are at the full batch
 * (one micro-batch) and cover the whole group: forward, backward and update. */
#ifndef PLACER_BASELINE_IMPL_H
#define PLACER_BASELINE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "adjacency.h"
#include "baseline.h"
#include "program.h"

typedef struct pl_placer {
    const pl_graph *graph;
    const pl_cluster *cluster;
    const pl_cost_model *model;
    uint64_t seed;
    bool no_replicas;    /* the caller wants plans of one replica (the search's --no-replicas) */
    int n_groups;        /* graph->n_forward_ops */
    int n_devices;
    double *seconds;     /* [group * n_devices + device]: the group's ops on that device */
    double *flops;       /* per group: its forward op's FLOPs */
    int64_t *activation; /* per group: the activations its ops produce, one step (in a
                            recomputing view, what it keeps: below) */
    int64_t *resident;   /* per group: parameters and state at home with it */
    int64_t reserve;     /* every device: inputs, constants and the largest workspace (and
                            in a recomputing view, a segment's recomputation: below) */
    /* Dataflow between groups, edges from lower to higher group (a topological order):
     * a forward activation one group produces and another reads, or a parameter its home
     * group shares. Every such tensor also sends a gradient back the other way. A group's
     * edges in are one run of edges, in order of its inputs. */
    pl_adjacency *dataflow;
    int64_t *edge_bytes; /* per edge */
    /* The program of everything on device 0, which the reserve comes from: kept for
     * pl_placer_finish, since the single placer's plan is usually that one; NULL once
     * dropped. */
    pl_program *whole;
    /* A recomputing view (pl_placer_recompute): per group whether its forward op's
     * activations are recomputed, NULL in the plain view. A recomputing program packs its
     * buffers by lifetime (program.h), so the view counts what lives long: a group's
     * forward outputs where it keeps them (a checkpoint, or an op that cannot be
     * recomputed) and its parameters' gradients (held to the update); the rest is held
     * only while the backward pass uses it: a segment's recomputed outputs (the
     * recomputed groups before a checkpoint) while it runs over that segment, and the
     * gradients a group passes back. So every device's reserve grows by the largest
     * segment's forward outputs and the most gradients a group passes back
     * (recompute_reserve): an overestimate where a device holds part of a segment. */
    bool *recompute;
    int64_t *plain_activation; /* the plain view's activation[] while recomputing */
    int64_t recompute_reserve;
    /* How near the last placing (pl_placer_place) came to fitting, when it failed for
     * memory: the nearest plan of its attempts. */
    pl_baseline_misfit misfit;
} pl_placer;

/* Builds the placer's view of graph, cluster and costs. */
pl_status pl_placer_init(pl_placer *p, const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, uint64_t seed, pl_error *err);
void pl_placer_clear(pl_placer *p);
/* Places and simulates by one algorithm (pl_baseline_place_simulated) with the view
 * already built, which the algorithms only read: a caller placing by several builds it
 * once. Drops the kept program of everything on device 0 unless the algorithm is single.
 * When no plan fits (PL_ENOFIT), places again on the recomputing view, unless the
 * algorithm is megatron, then restores the plain view; p->misfit says how near it came. */
pl_plan *pl_placer_place(pl_placer *p, pl_baseline algorithm, pl_simulation *sim,
                         pl_error *err);
/* The same on the view as it is, plain or recomputing, once. */
pl_plan *pl_placer_place_once(pl_placer *p, pl_baseline algorithm, pl_simulation *sim,
                              pl_error *err);
/* Switches the view to recomputation (above); p->recompute stays NULL when no op's
 * activations can be recomputed. PL_ENOMEM leaves the view plain. */
pl_status pl_placer_recompute(pl_placer *p, pl_error *err);
/* Switches back to the plain view. */
void pl_placer_keep_all(pl_placer *p);
/* Whether a recomputing plan keeps group g's forward outputs: every ceil(sqrt(n))-th of
 * the n groups is a checkpoint, which the groups before it, back to the previous one, are
 * recomputed from (Chen et al. 2016: about sqrt(n) kept and sqrt(n) recomputed at once). */
bool pl_placer_checkpoint(const pl_placer *p, int group);
/* A new plan (pl_plan_new) that recomputes what the view recomputes. */
pl_plan *pl_placer_new_plan(const pl_placer *p, pl_error *err);
/* Frees the kept program of everything on device 0 (pl_placer.whole): for algorithms that
 * build programs of their own while placing, so that two are not held at once. */
void pl_placer_drop_whole(pl_placer *p);

static inline double pl_placer_seconds(const pl_placer *p, int group, int device)
{
    return p->seconds[(size_t)group * (size_t)p->n_devices + (size_t)device];
}
/* The group's own memory wherever it runs: its activations and resident tensors. */
static inline int64_t pl_placer_memory(const pl_placer *p, int group)
{
    return p->activation[group] + p->resident[group];
}
/* What a device can hold of groups: its capacity less the reserve. */
int64_t pl_placer_room(const pl_placer *p, int device);
/* Seconds to copy `bytes` from one device to another, as the cost model times copies. */
double pl_placer_copy_seconds(const pl_placer *p, int from, int to, double bytes);
/* A device's speed: steps a second with the whole model on it (1 / its total seconds). */
double pl_placer_device_speed(const pl_placer *p, int device);
/* Mean seconds of a group over the devices. */
double pl_placer_mean_seconds(const pl_placer *p, int group);

/* Memory bookkeeping for algorithms that place groups one by one in group order: a group
 * on `device` costs its own memory plus, for every edge from a group placed elsewhere, the
 * copy it receives (and the gradient its source receives back). */
typedef struct pl_ledger {
    int64_t used[PL_MAX_DEVICES];
} pl_ledger;
/* Whether `group` fits on `device` given where its predecessors are (device[] of groups
 * placed so far). */
bool pl_ledger_fits(const pl_ledger *l, const pl_placer *p, const int *device, int group,
                    int dev);
void pl_ledger_add(pl_ledger *l, const pl_placer *p, const int *device, int group, int dev);
/* The whole ledger of a complete assignment. */
void pl_ledger_of(pl_ledger *l, const pl_placer *p, const int *device);

/* Moves groups off devices the ledger finds over their room, to the device with the most
 * room left, latest groups first; false when some device still overflows. For
 * assignments of one stage. */
bool pl_placer_rebalance(const pl_placer *p, int *device);

/* Contiguous blocks of about equal total weight over items in order: an item goes to the
 * block its weight's midpoint falls in. */
void pl_weighted_blocks(const double *weight, int n, int n_blocks, int *block);
/* The same with block b taking share[b] of the total weight (shares in any unit; NULL:
 * equal shares). */
void pl_shared_blocks(const double *weight, int n, int n_blocks, const double *share, int *block);

/* Finishes a plan: checks it, builds its program, fails (PL_ENOFIT) naming the device
 * furthest over its memory (into *misfit too, where that is nearer than what it holds:
 * may be NULL), simulates it (into *sim; provenance.predicted_seconds) and names the
 * algorithm. */
pl_status pl_placer_finish(const pl_placer *p, pl_plan *plan, const char *algorithm,
                           pl_simulation *sim, pl_baseline_misfit *misfit, pl_error *err);
/* The simulated step of a plan into *seconds, or -1 there when it does not fit; and how
 * far its fullest device is over its memory, as a fraction of it, into *over (0 when it
 * fits; `over` may be NULL). */
pl_status pl_placer_simulate(const pl_placer *p, const pl_plan *plan, double *seconds,
                             double *over, pl_error *err);

/* The algorithms: each fills the plan (made by pl_plan_new for the graph). */
pl_status pl_place_single(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_round_robin(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_expert(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_metis(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_etf(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_sct(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_pipeline_dp(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_data_parallel(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_hybrid(const pl_placer *p, pl_plan *plan, pl_error *err);
pl_status pl_place_megatron(const pl_placer *p, pl_plan *plan, pl_error *err);

pl_status pl_placer_no_memory(pl_error *err);

#endif
