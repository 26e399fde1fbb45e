/* Op times measured elsewhere: a profile of the model's training step (a PyTorch profiler
 * trace, turned into an op-times file by tools/import-trace; docs/simulator.md, "Op times
 * measured elsewhere") that replaces the cost model's time for the ops it times.
 *
 * Contract:
 * - The file names the model's forward ops; each entry gives the forward and backward
 *   seconds of one step for a set of them (a module that became several ops). An entry's
 *   forward time is shared among its ops, and its backward time among the backward ops of
 *   their co-location groups (graph.h: the gradients and the accumulations into parameter
 *   gradients that autodiff made for them), in proportion to the cost model's times for
 *   them: the file says how long the whole takes, the cost model how it divides.
 * - Times are of the whole batch, which must be the model's; a task of a plan that splits
 *   the batch takes its share (pl_op_times_seconds). Ops the file does not time, updates
 *   and every copy keep the cost model's times.
 * - A pl_op_times belongs to the training graph it was read for and is read-only after:
 *   several threads may read it. A cost model borrows it (cost_model.h: op_times), so it
 *   must outlive the cost model's use. pl_op_times_free(NULL) is a no-op. */
#ifndef PLACER_OP_TIMES_H
#define PLACER_OP_TIMES_H

#include <stdbool.h>
#include <stdint.h>

#include "cost_model.h"
#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_OP_TIMES_FORMAT_VERSION = 1 };

typedef struct pl_op_times {
    const pl_graph *graph; /* the training graph it times (borrowed) */
    int n_ops;             /* the graph's when read */
    double *seconds;       /* per op of `graph`: one step's, at the whole batch; -1: none */
    char model[PL_MAX_NAME + 1];  /* the model the file was made for */
    uint64_t model_hash;          /* its hash (graph.h), when has_model_hash */
    bool has_model_hash;
    char device[PL_MAX_NAME + 1]; /* what the times were measured on */
    int n_entries;
    int n_forward_ops;  /* the model's ops with a forward time */
    int n_backward_ops; /* backward ops of the training graph with a time */
    double forward_seconds, backward_seconds; /* the file's totals */
} pl_op_times;

/* Reads an op-times file ("-": standard input) for a training graph (autodiff.h). Every
 * name must be a forward op of the graph, each at most once in the file; the batch must
 * be the graph's. `model` times the ops an entry shares its time among, on a device of
 * `threads` threads. Errors name the file and a JSON pointer. Returns a new pl_op_times,
 * or NULL. */
pl_op_times *pl_op_times_read(const char *path, const pl_graph *graph,
                              const pl_cost_model *model, int threads, pl_error *err);
void pl_op_times_free(pl_op_times *times);

/* Op `op` of `graph` over `share` of the batch (a micro-batch's), or -1 when `times`
 * (NULL allowed) has no time for it or was read for another graph. */
double pl_op_times_seconds(const pl_op_times *times, const pl_graph *graph, int op,
                           double share);

#ifdef __cplusplus
}
#endif

#endif
