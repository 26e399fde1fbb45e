/* Plans: where every op of a training graph runs, and the partitions that follows from.
 *
 * A plan assigns each forward op a device of a cluster and a pipeline stage, and says how
 * a step is split into micro-batches and in which schedule they run. It may replicate the
 * model: each replica places every op on a device of its own choosing (the stages are
 * shared), takes an equal share of the step's batch, and the replicas' parameter gradients
 * are summed before every update. Replicas whose ops of a stage share a device share that
 * stage's parameters (PipeDream's replicated stages are replicas that differ in one
 * stage's devices only). Every other op of
 * the training graph goes with its co-location group (graph.h: a backward op with the op
 * it differentiates, a parameter's accumulations and update with the parameter's first
 * reader), so a plan names forward ops only. Stages follow the dataflow: an op never
 * reads from a later stage.
 *
 * The partitions are derived data, shared by the executor and the simulator so that the
 * two cannot drift: per device, its ops in topological order; and every tensor that must
 * cross a link, with its source and destination device. Inputs are fed to each device
 * that reads them and constants exist everywhere, so neither crosses a link; a parameter
 * and its state live on the device of its update.
 *
 * Plans and partitions are plain data, owned by the caller (free with the _free calls,
 * NULL allowed), safe to read from several threads. */
#ifndef PLACER_PLAN_H
#define PLACER_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "graph.h"
#include "split_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_PLAN_FORMAT_VERSION = 3, PL_MAX_REPLICAS = 64 };

typedef enum pl_schedule { PL_SCHEDULE_GPIPE, PL_SCHEDULE_1F1B } pl_schedule;

typedef struct pl_provenance {
    char algorithm[64];       /* "expert", "rl", ... */
    uint64_t seed;
    double predicted_seconds; /* a step's predicted time, or 0 when unknown */
    double measured_seconds;  /* a step's measured time, or 0 */
} pl_provenance;

typedef struct pl_plan {
    int n_ops;          /* the forward ops of the graph it was made for */
    int replicas;       /* 1: the model is not replicated */
    int *device;        /* per replica r and forward op o, device[r * n_ops + o]: a device of
                           the cluster */
    int *stage;         /* per forward op: its pipeline stage, from 0 */
    int n_stages;
    int micro_batches;  /* per replica: replicas x micro_batches divides the batch */
    pl_schedule schedule;
    /* Parameters' gradients (graph.h: weight_gradient ops) run behind every forward and
     * backward op of their device instead of right after the backward op they follow:
     * they fill the pipeline's bubbles (zero-bubble pipelines, Qi et al. 2023). */
    bool defer_weight_gradients;
    /* Replicas split the optimiser state instead of each holding all of it (ZeRO stage 1,
     * Rajbhandari et al. 2020): the gradients are reduce-scattered, each copy updates its
     * share of the parameter with its share of the state, and the updated shares are
     * all-gathered. The same update, with a replica's state memory divided by the copies. */
    bool shard_optimizer_state;
    /* Tensor parallelism: per forward op, the devices that share it (1: it runs whole). An
     * op split over k devices runs as k shards, each on its part of the op's parameters and
     * outputs, with the collectives that keep the math whole between ops that do not share
     * a layout (split_graph.h). Shard s of replica r runs on
     * split_device[(r * n_ops + o) * PL_MAX_SPLIT + s], and device[] holds shard 0's.
     * split_device is NULL while no op is split (pl_plan_split). */
    int *split;
    int *split_device;
    /* Per forward op: its outputs are dropped once the forward pass has read them and
     * computed again before the backward pass needs them (activation recomputation). */
    bool *recompute;
    uint64_t model_hash; /* of the graph it places (pl_graph.hash) */
    pl_provenance provenance;
    /* What a plan file says it was made for (pl_plan_load_file): the model's name and
     * content hash ("" and 0 when the file does not say, and in a plan made in memory).
     * Information only: ops are matched by name, so a plan for an edited model still
     * reads; the command line warns when the hash is not the model's. */
    char file_model[256];
    uint64_t file_model_hash;
} pl_plan;

/* The schedule in words: "GPipe", "1F1B", either with ", weight gradients deferred". */
const char *pl_plan_schedule_text(const pl_plan *plan);
/* The replicas in words, to go before the stages: "" for one, "4 replicas, " or "4
 * replicas (optimizer state sharded), ". Returns buf. */
const char *pl_plan_replicas_text(const pl_plan *plan, char *buf, size_t cap);
/* The split ops and recomputed activations in words, to go after the replicas: "" when
 * no op is split or recomputed, "6 ops split over 2 devices (tensor parallel), " or "...
 * over 2 to 4 devices ...", then "activations of 30 ops recomputed, " (within 96 bytes).
 * Returns buf. */
const char *pl_plan_split_text(const pl_plan *plan, char *buf, size_t cap);
/* Whether the plan recomputes some op's activations. */
static inline bool pl_plan_recomputes(const pl_plan *plan)
{
    for (int o = 0; o < plan->n_ops; o++)
        if (plan->recompute[o])
            return true;
    return false;
}

/* A new plan with every forward op on device 0, stage 0, one replica, one micro-batch. */
pl_plan *pl_plan_new(const pl_graph *graph, pl_error *err);
void pl_plan_free(pl_plan *plan);
/* Gives the plan `replicas` replicas (1 to PL_MAX_REPLICAS), each placed as replica 0 is
 * until changed. PL_ENOMEM leaves it as it was. */
pl_status pl_plan_set_replicas(pl_plan *plan, int replicas, pl_error *err);
/* Splits forward op `o` over `k` devices (1 to PL_MAX_SPLIT; 1 makes it whole again on
 * its first device): `devices` holds replicas x k entries, replica r's shards at
 * devices[r * k ..]. PL_EINPUT for a device repeated within a replica or k out of range;
 * the cluster's devices are checked by pl_plan_check. */
pl_status pl_plan_split(pl_plan *plan, int o, int k, const int *devices, pl_error *err);
/* The device of shard s of op o in replica r (its device when the op is whole). */
static inline int pl_plan_shard_device(const pl_plan *plan, int r, int o, int s)
{
    if (!plan->split_device || plan->split[o] == 1)
        return plan->device[(size_t)r * (size_t)plan->n_ops + (size_t)o];
    return plan->split_device[((size_t)r * (size_t)plan->n_ops + (size_t)o) * PL_MAX_SPLIT +
                              (size_t)s];
}
/* Replica r's forward ops on device d: whole there, or a shard of them there. */
int pl_plan_ops_on(const pl_plan *plan, int r, int d);
/* Whether the plan runs another training graph than the model's: it splits an op or
 * recomputes activations (split_graph.h builds that graph). */
bool pl_plan_rewrites_graph(const pl_plan *plan);
/* The training graph a plan runs when it rewrites the model's (pl_plan_rewrites_graph),
 * and the plan restated over its ops: each op on the devices of the model's op it comes
 * from (split_graph.h: its origin and shard), in that op's stage, every other setting
 * the plan's. Both the caller's to free. PL_EINPUT when the rewrite refuses the splits. */
pl_status pl_plan_split_graph(const pl_plan *plan, const pl_graph *graph,
                              pl_split_graph **split, pl_plan **restated, pl_error *err);
/* Makes `to` (a plan of the same graph) a copy of `from`, replicas and provenance too. */
pl_status pl_plan_copy(pl_plan *to, const pl_plan *from, pl_error *err);
/* Copies what is not per op: stages counted, micro-batches, schedule, flags, provenance. */
void pl_plan_copy_settings(pl_plan *to, const pl_plan *from);
/* Replica r's devices: per forward op. */
static inline int *pl_plan_replica(const pl_plan *plan, int r)
{
    return plan->device + (size_t)r * (size_t)plan->n_ops;
}

/* Checks a plan against its graph and cluster: devices exist, stages follow the dataflow
 * and number 0..n_stages-1, replicas times micro-batches divide the batch and are allowed
 * by the model (pl_graph_allows_micro_batches). PL_EINPUT with the op named. */
pl_status pl_plan_check(const pl_plan *plan, const pl_graph *graph, const pl_cluster *cluster,
                        pl_error *err);

/* Reads a plan file (docs/plan-format.md) for this graph and cluster, checked; errors as
 * the model loader gives them. The cluster is matched by its devices, not its name: a
 * plan whose "devices" (count and names) are the cluster's reads whatever the cluster is
 * called, and one made for other devices is refused naming the device that differs. A
 * plan without "devices" (hand-written) is checked op by op. The model's name and hash
 * in the file are recorded in file_model and file_model_hash, not checked. */
pl_plan *pl_plan_load_file(const char *path, const pl_graph *graph, const pl_cluster *cluster,
                           pl_error *err);
/* Writes the plan, its partitions and provenance, atomically. `graph` is the training
 * graph (autodiff.h) the partitions are derived from. */
pl_status pl_plan_write_file(const char *path, const pl_plan *plan, const pl_graph *graph,
                             const pl_cluster *cluster, pl_error *err);

typedef struct pl_transfer {
    int tensor;
    int from, to; /* devices */
} pl_transfer;

typedef struct pl_partitions {
    int n_devices;
    int *op_device;     /* per op of the training graph */
    int *op_stage;
    int *first_op;      /* per device d: its ops are ops[first_op[d] .. first_op[d+1]) */
    int *ops;           /* op indices, grouped by device, topological within a device */
    int *tensor_device; /* per tensor: where it is produced or lives; -1 inputs, constants */
    int n_transfers;
    pl_transfer *transfers; /* in the order of the ops that first need them */
} pl_partitions;

/* The partitions of a checked plan's replica 0 over a training graph. */
pl_partitions *pl_partitions_new(const pl_plan *plan, const pl_graph *graph, int n_devices,
                                 pl_error *err);
/* Replica r's partitions: its ops, where its tensors are, what it sends. */
pl_partitions *pl_partitions_of_replica(const pl_plan *plan, int r, const pl_graph *graph,
                                        int n_devices, pl_error *err);
void pl_partitions_free(pl_partitions *partitions);

#ifdef __cplusplus
}
#endif

#endif
