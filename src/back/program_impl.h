/* What the parts of the program compiler share while building one (program.c orders the
 * tasks, program_buffers.c gives them buffers, dependencies and memory). */
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

typedef struct pl_builder {
    const pl_graph *g;
    const pl_cluster *c;
    pl_program *p;
    const pl_partitions *parts;
    int m;
    task_key *keys;            /* per task, by creation index */
    int *position;             /* creation index -> program order */
    int *op_task;              /* per op: the creation index of its first task */
    int *copy_task;            /* per transfer: likewise */
    int *link_index;           /* n_devices x n_devices: a link's index, or -1 */
    int *tensor_transfers;     /* per tensor t: transfers_by_tensor[tensor_transfers[t] ..
                                  tensor_transfers[t + 1]) are the transfers of t */
    int *transfers_by_tensor;
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

/* Lookups in program order. */
bool pl_tensor_per_micro_batch(const pl_graph *g, int t);
int pl_op_task(const pl_builder *b, int o, int k);
int pl_copy_task(const pl_builder *b, int x, int k);
int pl_find_transfer(const pl_builder *b, int t, int to);
int pl_source_task(const pl_builder *b, int t, int d, int k);

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
