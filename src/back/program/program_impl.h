/* What the parts of the program compiler share while building one (program.c orders the
 * tasks, program_places.c says where replicas keep their values and what they send,
 * program_allreduce.c sums the replicas' gradients, program_buffers.c gives the tasks
 * buffers, dependencies and memory; program_builder.c holds what they all build on). */
#ifndef PLACER_PROGRAM_IMPL_H
#define PLACER_PROGRAM_IMPL_H

#include <stdbool.h>

#include "program.h"

/* A task's place in the schedule: its (stage, phase, micro-batch) block's rank in the
 * ideal timeline (-1: before everything, INT_MAX: after), then the op's topological
 * index, then 0 for the op and 1 + transfer for the copies of its output. */
typedef struct task_key {
    int block, op, sub;
} task_key;

/* An all-reduce (program_allreduce.c): the gradients of parameters whose copies are on the
 * same devices (its nodes), summed together. One gradient is summed where it is; several
 * are packed into one buffer on each node first and unpacked after. Its steps are
 * primitives: a node's range sent to the next and added into its own as it arrives (a
 * reduce), a finished range sent to the next in place of its own (a pass), and the packs
 * and unpacks. With a sharded optimiser state the updates come between the reduce-scatter
 * and the all-gather, which passes parameters: in place, or packed like the gradients. */
typedef struct pl_collective_op {
    int kind;           /* PL_REDUCE, PL_PASS, PL_PACK, PL_UNPACK */
    int from, to;       /* nodes */
    int64_t start, end; /* elements of the bucket */
    int member;         /* packs and unpacks: the gradient */
    bool param;         /* on the parameters, not the gradients (a sharded state's gather) */
} pl_collective_op;

enum { PL_REDUCE, PL_PASS, PL_PACK, PL_UNPACK };

typedef struct pl_bucket {
    int n;               /* nodes: the copies' devices, in the algorithm's order */
    int device[PL_MAX_REPLICAS];
    int first_member, n_members; /* b->members[..]: accumulators, in order of readiness */
    int64_t elements;
    bool sharded;        /* the members' optimiser state is (plan.h) */
    int updates_at;      /* sharded: the first op after the updates (the all-gather's) */
    int fine;            /* the ranges a hazard is tracked in: fine chunks per node */
    int first_op, n_ops; /* b->collective_ops[..]; the tasks follow in the same order */
    int first_task;
    int first_unit;      /* hazard units (program_allreduce.c) */
    int64_t *storage;    /* packed: per node, the bucket's offset in its arena */
} pl_bucket;

typedef struct pl_builder {
    const pl_graph *g;
    const pl_cluster *c;
    const pl_plan *plan;
    pl_program *p;
    bool tight; /* arenas packed by lifetime (pl_pack_arena) */
    /* per tensor: its kind (pl_tensor_kind), which compiling reads for every reference; a
     * byte each, where the graph's tensors are a cache line and more each */
    unsigned char *tensor_kind;
    int replicas;
    int m;                     /* micro-batches of a replica */
    int slices;                /* replicas x m */
    pl_partitions **parts;     /* per replica */
    int task_cap;              /* what tasks, keys, position and origin hold */
    task_key *keys;            /* per task, by creation index */
    int *position;             /* creation index -> program order */
    int *origin;               /* program order -> creation index */
    int *op_task;              /* per op: the creation index of its first task */
    int *copy_task;            /* per transfer: likewise */
    uint64_t *transfer_replicas; /* per transfer: the replicas whose slices it carries (bit
                                    r); 0 for a copy once a step */
    int *link_index;           /* n_devices x n_devices: the index of the link or port a
                                  pair's copies run on, or -1 */
    int *tensor_transfers;     /* per tensor t: transfers_by_tensor[tensor_transfers[t] ..
                                  tensor_transfers[t + 1]) are the transfers of t */
    int *transfers_by_tensor;
    /* Places: where a tensor's values are. Tensor t's are places[first_place[t] ..
     * first_place[t + 1]): the host for an input or constant; else one per device that
     * produces, receives or keeps a copy of it. */
    int *first_place;
    int *place_device;         /* per place: its device, or -1 (the host) */
    int *place_copy;           /* per place: a parameter's or state's copy, else -1 */
    int *place_tensor;         /* per place: its tensor */
    pl_range *place_stored;    /* per place: the elements it holds (a shard of state) */
    int n_places;
    int *update_op;            /* per accumulator: its parameter's update op, or -1 */
    int *first_accumulation;   /* per accumulator t: accumulations[first_accumulation[t] ..
                                  first_accumulation[t + 1]), the ops accumulating into it */
    int *accumulations;
    int n_buckets;
    pl_bucket *buckets;
    int *members;
    int64_t *member_start;     /* per member: its first element in its bucket */
    int n_collective_ops;
    pl_collective_op *collective_ops;
    int first_collective_task; /* creation index of the all-reduces' first task */
    int first_collective_transfer; /* transfers from here on are the all-reduces' */
    int *collective_refs;      /* per all-reduce task: its source and destination buffers */
    int n_units;               /* hazard units of the all-reduces */
    int *unit_first, *unit_count; /* per buffer: its units, or none (count 0) */
} pl_builder;

/* A growing list of edges between tasks. */
typedef struct pl_edges {
    int *from, *to;
    int n, cap;
} pl_edges;

bool pl_edges_add(pl_edges *edges, int from, int to);
/* Successor lists: succ[first[i] .. first[i + 1]) are the tasks after task i. */
bool pl_edges_csr(const pl_edges *edges, int n_tasks, int **first, int **succ);
void pl_edges_free(pl_edges *edges);

/* program_builder.c: tasks and edges. Lookups in program order. A slice k is replica k / m's micro-batch k % m. */
static inline pl_tensor_kind pl_tensor_kind_of(const pl_builder *b, int t)
{
    return (pl_tensor_kind)b->tensor_kind[t];
}
static inline bool pl_tensor_per_micro_batch(const pl_builder *b, int t)
{
    return pl_tensor_kind_of(b, t) == PL_TENSOR_ACTIVATION;
}
static inline int pl_replica_of(const pl_builder *b, int k)
{
    return k < 0 ? 0 : k / b->m;
}
int pl_update_task(const pl_builder *b, int o, int device);
/* False when out of memory. */
bool pl_add_task(pl_builder *b, pl_task_kind kind, int index, int k, int resource,
                 task_key key);
int pl_copy_resource(pl_builder *b, int from, int to);

/* program_places.c: every replica's partitions, the transfers they need (merged), and the
 * places of every tensor. */
pl_status pl_program_places(pl_builder *b, pl_error *err);
/* The place of tensor t on device d (the host's for inputs and constants), or -1. */
int pl_place_of(const pl_builder *b, int t, int d);
/* Whether a parameter or state tensor t has a copy on device d. */
bool pl_has_copy(const pl_builder *b, int t, int d);

/* program_allreduce.c: each accumulator's update and accumulations (after the places); the
 * all-reduces' tasks (after the others', and their keys), their dataflow edges, and their
 * buffers. */
pl_status pl_index_accumulations(pl_builder *b, pl_error *err);
bool pl_create_allreduce_tasks(pl_builder *b);
bool pl_allreduce_edges(const pl_builder *b, pl_edges *edges);
int pl_allreduce_buffer_count(const pl_builder *b);
/* Lays their buffers out from p->buffers[first] (`base`: each place's first buffer),
 * with their arena memory, every task's refs and the hazard units of every buffer. */
bool pl_allreduce_buffers(pl_builder *b, int first, const int *base);
/* Whether task i (program order) is an all-reduce's: *index its index among them. */
static inline bool pl_collective_task(const pl_builder *b, int i, int *index)
{
    *index = b->origin[i] - b->first_collective_task;
    return b->n_collective_ops > 0 && *index >= 0;
}

/* program_schedule.c: blocks are (stage, phase, micro-batch); their rank in the ideal
 * timeline of the schedule, indexed by pl_block_of. NULL with err set on failure. */
enum { PL_FORWARD = 0, PL_BACKWARD = 1 };

int pl_block_of(int stage, int phase, int micro_batch, int m);

int *pl_rank_blocks(int n_stages, int m, pl_schedule schedule, pl_error *err);

/* program_arena.c: an activation buffer of a device's arena, alive from its writer to its
 * last reader (positions in program order); the resources its writer and its readers run
 * on (readers -1: several); the value (a place) it holds one micro-batch of. */
typedef struct pl_arena_block {
    int buffer;
    int start, end;
    int64_t bytes;
    int writer, readers;
    int value;
} pl_arena_block;
/* Lays a device's blocks out (they are reordered) after what its arena holds already:
 * sets each buffer's offset and grows memory[device].arena to the peak. Each value's
 * micro-batches in slots of their own; or, when `tight`, packed by lifetime, values
 * sharing bytes (where that is smaller): less memory, but a writer then waits for the
 * readers of other values that held its bytes, which can cost time. Adds an edge (buffer,
 * earlier buffer) for each earlier block that last held some of a block's bytes: its
 * writer waits for their readers. False when out of memory. */
bool pl_pack_arena(pl_program *p, int device, pl_arena_block *blocks, int n, bool tight,
                   pl_edges *preds);

/* program_buffers.c: slots and buffers, each task's references, the dependencies, and
 * every device's memory. */
pl_status pl_program_assign_buffers(pl_builder *b, pl_error *err);

#endif
