/* What the parts of the program compiler share while building one (program.c orders the
 * tasks, program_places.c says where replicas keep their values and what they send,
 * program_allreduce.c sums the replicas' gradients, program_buffers.c gives the tasks
 * buffers, dependencies and memory). */
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

/* A ring all-reduce of one parameter's gradient over its copies (program.h). */
typedef struct pl_ring {
    int accumulator;   /* the gradient's tensor */
    int update;        /* the parameter's update op */
    int n;             /* copies: as many chunks */
    int first_place;   /* the copies: places[first_place ..], in ring order */
    int first_task;    /* creation index: n(n-1) copies and reduces of the reduce-scatter,
                          step by step, then n(n-1) copies of the all-gather */
    int first_chunk;   /* buffers: n chunks per copy (copy-major), then n receive buffers */
} pl_ring;

typedef struct pl_builder {
    const pl_graph *g;
    const pl_cluster *c;
    const pl_plan *plan;
    pl_program *p;
    int replicas;
    int m;                     /* micro-batches of a replica */
    int slices;                /* replicas x m */
    pl_partitions **parts;     /* per replica */
    task_key *keys;            /* per task, by creation index */
    int *position;             /* creation index -> program order */
    int *origin;               /* program order -> creation index */
    int *op_task;              /* per op: the creation index of its first task */
    int *copy_task;            /* per transfer: likewise */
    uint64_t *transfer_replicas; /* per transfer: the replicas whose slices it carries (bit
                                    r); 0 for a copy once a step */
    int *link_index;           /* n_devices x n_devices: a link's index, or -1 */
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
    int n_places;
    int n_rings;
    pl_ring *rings;
    int n_ring_tasks;
    int first_ring_task;       /* creation index of the rings' first task */
    int first_ring_transfer;   /* transfers from here on are the rings' */
    int *ring_refs;            /* per ring task: its source and destination buffers */
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

/* Lookups in program order. A slice k is replica k / m's micro-batch k % m. */
bool pl_tensor_per_micro_batch(const pl_graph *g, int t);
static inline int pl_replica_of(const pl_builder *b, int k)
{
    return k < 0 ? 0 : k / b->m;
}
int pl_op_task(const pl_builder *b, int o, int k);
int pl_update_task(const pl_builder *b, int o, int device);
int pl_copy_task(const pl_builder *b, int x, int k);
int pl_find_transfer(const pl_builder *b, int t, int from, int to);
int pl_source_task(const pl_builder *b, int t, int d, int k);
void pl_add_task(pl_builder *b, pl_task_kind kind, int index, int k, int resource, task_key key);
int pl_copy_resource(pl_builder *b, int from, int to);

/* program_places.c: every replica's partitions, the transfers they need (merged), and the
 * places of every tensor. */
pl_status pl_program_places(pl_builder *b, pl_error *err);
/* The place of tensor t on device d (the host's for inputs and constants), or -1. */
int pl_place_of(const pl_builder *b, int t, int d);
/* Whether a parameter or state tensor t has a copy on device d. */
bool pl_has_copy(const pl_builder *b, int t, int d);

/* program_allreduce.c: the rings (after the places), their tasks (after the others'),
 * their dataflow edges, and their buffers. */
pl_status pl_plan_rings(pl_builder *b, pl_error *err);
void pl_create_ring_tasks(pl_builder *b);
bool pl_ring_edges(const pl_builder *b, pl_edges *edges);
int pl_ring_buffer_count(const pl_builder *b);
/* Lays the rings' buffers out from p->buffers[first] (each copy's chunks on the host, a
 * receiving buffer per copy in its device's arena) and gives every ring task its refs. */
bool pl_ring_buffers(pl_builder *b, int first);

/* program_schedule.c: blocks are (stage, phase, micro-batch); their rank in the ideal
 * timeline of the schedule, indexed by pl_block_of. NULL with err set on failure. */
enum { PL_FORWARD = 0, PL_BACKWARD = 1 };

static inline int pl_block_of(int stage, int phase, int micro_batch, int m)
{
    return (stage * 2 + phase) * m + micro_batch;
}

int *pl_rank_blocks(int n_stages, int m, pl_schedule schedule, pl_error *err);

/* program_buffers.c: slots and buffers, each task's references, the dependencies, and
 * every device's memory. */
pl_status pl_program_assign_buffers(pl_builder *b, pl_error *err);

#endif
