/* A step program: one training step of a placed graph, compiled into tasks.
 *
 * The executor runs a program and the simulator (cost/) replays it, so the two share one
 * meaning of a plan. A task is an op for one micro-batch (forward and backward ops), an
 * op once per step (updates), a copy of a tensor over a link, or a reduce: a range of a
 * gradient sent over a link and added into the destination's own (the all-reduce of
 * replicas, below). Each task runs on one
 * resource: a device, or a declared directed link between two devices, or, on a cluster
 * with ports (cluster.h), a device's node or network port, which carries its copies to
 * every device it reaches that way (a copy over a native link runs on its source device:
 * a memcpy takes a core); a resource runs one task at a time and, of the tasks that are
 * ready, always the first in program order.
 *
 * Program order is the schedule. Each pipeline stage's micro-batches follow GPipe (every
 * forward, then every backward) or 1F1B (forwards until the stage holds n_stages - stage
 * micro-batches, then one backward for each forward); an ideal timeline of those sequences
 * orders the stages against each other, and a topological sort by that order makes the
 * program. Copies come right after the task producing what they carry.
 *
 * Buffers: every tensor has one home, where its producer runs or, for parameters and
 * state, where its update runs; a tensor read on another device arrives by a copy into
 * that device's memory. Each micro-batch of an activation has a buffer, alive from its
 * writer to its last reader in program order. A device's arena keeps each value's
 * micro-batches in slots of their own (a GPipe stage keeps every micro-batch, a 1F1B stage
 * n_stages - stage); where the plan recomputes activations, or where the program would
 * not fit its devices so, the arena is packed by lifetime instead (first fit by offset,
 * or the slots where those take less): buffers never alive at once share bytes, so a
 * value read only by the forward pass (a recomputed op's: recompute.h) is gone before the
 * backward pass. Sharing bytes makes a writer wait for the other values that held them,
 * which can cost time: hence only where memory asks for it. A buffer takes only bytes last
 * held by buffers read on its writer's resource (or by other micro-batches of its value),
 * so that sharing does not tie a device to a link.
 * The loss op's inputs and outputs of the last micro-batch live to the end of the step,
 * for the host to read.
 * A task depends on the tasks before it in program order that write what it reads, or
 * read or write what it writes, and a writer on the writer and readers of the buffers that
 * last held its bytes: any run that respects these dependencies computes what the program
 * computes in order, which is what one device computes, and cannot deadlock.
 *
 * Memory: a device holds its activations and received copies (its arena), the
 * parameters and state at home on it, the inputs and constants it reads, and the
 * workspace of its largest op. A program whose device needs more than its capacity is
 * still built; `oom_device` says which device does not fit.
 *
 * Replicas: the step's batch is cut into replicas x micro-batches slices, and replica r
 * computes slices r * m .. r * m + m - 1 (m micro-batches each) on its own devices, as one
 * device would compute as many micro-batches. A parameter has a copy on every device where
 * a replica updates it (replicas updating it on the same device share a copy); its
 * accumulated gradients are summed over the copies by a ring all-reduce (each copy's
 * gradient cut into as many chunks as copies; n - 1 steps of sending a chunk on and adding
 * it, n - 1 of passing the sums on), which starts as soon as the copies' accumulations are
 * done, and then every copy applies the same update. The first copy is the parameter's own
 * storage, so that what one device would hold after a step is there after it.
 *
 * A sharded optimiser state (plan.h) changes the end: each copy keeps the sum of one part
 * of the gradient (the reduce-scatter), updates that part of the parameter with its part
 * of the state (its `shard`), and the updated parts are passed round as the sums were
 * (the all-gather). A further copy of sharded state holds its shard only.
 *
 * A program is plain data, read-only once built: several threads may read it. */
#ifndef PLACER_PROGRAM_H
#define PLACER_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "graph.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_task_kind { PL_TASK_OP, PL_TASK_COPY, PL_TASK_REDUCE } pl_task_kind;

typedef struct pl_task {
    pl_task_kind kind;
    int op;          /* PL_TASK_OP: the op; else -1 */
    int transfer;    /* copies and reduces: index into `transfers`; else -1 */
    int micro_batch; /* the slice: replica r's micro-batch k is r * m + k; -1: once per step
                        (updates, parameter copies, all-reduces) */
    int resource;    /* a device, or n_devices + an index into `links` (declared links) */
    int n_deps;      /* tasks that must finish first */
    int first_succ, n_succ; /* succ[first_succ ..]: the tasks depending on this one */
    int first_ref;   /* refs[first_ref ..]: an op's inputs then outputs; a copy's source
                        then destination; a reduce's received chunk, then its own */
    int shard;       /* an update of part of its parameter: index into `shards`; else -1 */
} pl_task;

/* Elements [start, end) of a tensor. */
typedef struct pl_range {
    int64_t start, end;
} pl_range;

/* Where a value is: a device's arena (offset into it), or the host buffer of its tensor
 * (device -1: inputs, constants, parameters and state; offset selects a micro-batch, or a
 * chunk of a gradient). A parameter's or state's further copies (replicas) are host
 * buffers of their own: `copy` > 0 says which. */
typedef struct pl_buffer {
    int tensor;
    int device;
    int copy;
    int64_t offset;
    int64_t bytes;
} pl_buffer;

/* A link resource: the link from `from` to `to` (port PL_PORT_NONE), or `from`'s port,
 * whose copies go to several devices; `to` is then the first of them in the program
 * (every destination of a port has the same link's figures). */
typedef struct pl_link_use {
    int from, to;
    pl_port port;
} pl_link_use;

typedef struct pl_device_memory {
    int64_t arena;     /* activations and received copies, packed by lifetime */
    int64_t resident;  /* parameters, state, inputs and constants it holds or reads */
    int64_t workspace; /* its largest op's scratch */
    int64_t total;
} pl_device_memory;

typedef struct pl_program {
    /* The training graph the tasks run: the model's, or, for a plan that splits ops or
     * recomputes activations, the rewritten one (split_graph.h, recompute.h), which the
     * program owns with the plan restated over it (`split`, `split_plan`; NULL
     * otherwise). `model` is the model's graph. */
    const pl_graph *graph;
    const pl_graph *model;
    pl_split_graph *split;
    pl_plan *split_plan;
    pl_partitions *partitions;
    int n_devices;
    int n_links;
    pl_link_use *links;  /* the declared directed links and ports this program copies over */
    int replicas;
    int micro_batches;   /* slices of the batch: replicas x micro-batches of a replica */
    pl_schedule schedule;
    int n_transfers;
    pl_transfer *transfers; /* what copies carry: every replica's, then the all-reduces' */
    int n_copies;        /* 1 + the further copies of parameters and state */
    int *copy_tensor;    /* per further copy c >= 1: its tensor (copy_tensor[0] unused) */
    pl_range *copy_range; /* per further copy: the elements it holds (a shard of state) */
    int *copy_device;    /* per further copy: the device that holds it */
    bool *copy_is_shard; /* per further copy: a sharded state's (host buffers are not whole) */
    int n_shards;
    pl_range *shards;    /* what sharded updates update, and what their state copies hold */
    pl_tensor *shapes;   /* every tensor at the micro-batch size */
    double *op_flops;    /* every op's FLOPs at the micro-batch size */
    int n_tasks;
    pl_task *tasks;      /* program order */
    int *succ;
    int *refs;           /* buffer indices */
    int n_buffers;
    pl_buffer *buffers;
    pl_device_memory *memory; /* per device */
    int oom_device;      /* the first device whose memory.total exceeds its capacity, or -1 */
} pl_program;

/* Compiles a step of `graph` (a training graph) under `plan`, checked against the
 * cluster. PL_EINPUT for a plan that does not fit the graph or cluster. */
pl_program *pl_program_new(const pl_graph *graph, const pl_cluster *cluster,
                           const pl_plan *plan, pl_error *err);
void pl_program_free(pl_program *program);

/* The op's FLOPs at the micro-batch size (a sharded update's share), a copy's or reduce's
 * bytes: what pacing holds a task for (a reduce is held as a copy over its link). */
double pl_task_flops(const pl_program *program, const pl_task *task);
/* The share of its op's work a task does: a sharded update's part of its parameter, else
 * 1. */
double pl_task_share(const pl_program *program, const pl_task *task);
int64_t pl_task_bytes(const pl_program *program, const pl_task *task);
/* Whether op task `reader` reads the buffer copy task `copy` writes (a successor of a copy
 * may only wait for its buffer's space). */
bool pl_task_reads_copy(const pl_program *program, const pl_task *reader, const pl_task *copy);
/* The training ops that run on device d (every replica's, each op once). */
int pl_program_ops_on(const pl_program *program, int d);
/* "fc1/matmul#3" (micro-batch 3), "copy fc1/relu#3" or "reduce fc1/w/grad" into buf; for
 * traces. */
void pl_task_name(const pl_program *program, const pl_task *task, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
