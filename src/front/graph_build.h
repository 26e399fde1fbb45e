/* Growing a graph after loading: automatic differentiation appends the training ops.
 *
 * Contract: ops are appended in topological order (their inputs already exist); each new
 * op's output shapes come from the op table's shape inference, its costs as the loader's.
 * Tensors and ops may move when the arrays grow: hold indices, not pointers, across
 * calls. Not thread-safe. */
#ifndef PLACER_GRAPH_BUILD_H
#define PLACER_GRAPH_BUILD_H

#include "error.h"
#include "graph.h"

/* Shape inference of op `o` over the tensor array `tensors` (the graph's own or a copy):
 * fills the op's output descriptors, and *flops when not NULL. On failure returns false
 * with the reason in ctx (message, blame). */
bool pl_op_infer(const pl_graph *g, int o, pl_tensor *tensors, pl_infer_ctx *ctx,
                 double *flops);
/* The same on the graph's tensors, then the op's FLOPs and bytes. Loader and builder
 * share it. */
bool pl_graph_infer_op(pl_graph *g, int o, pl_infer_ctx *ctx);

/* Every tensor's shape when a step (or micro-batch) holds `batch` samples, written into
 * `tensors` (n_tensors entries); the graph is unchanged. */
pl_status pl_graph_shapes_for_batch(const pl_graph *g, int batch, pl_tensor *tensors,
                                    pl_error *err);
/* Changes the graph's batch size: every shape and cost follows. */
pl_status pl_graph_set_batch(pl_graph *g, int batch, pl_error *err);

/* A new tensor of `kind` shaped like `shape` (dtype, rank, dims, batch axis copied); the
 * name is copied. Returns its index, or -1 when out of memory. */
int pl_graph_add_tensor(pl_graph *g, const char *name, pl_tensor_kind kind,
                        const pl_tensor *shape);

/* A new op reading `inputs`, with `n_outputs` new activation tensors named
 * "NAME:0", "NAME:1", ... Returns the op index or -1 (err says why: out of memory, or
 * shape inference failed, which is a bug of the caller: PL_EINTERNAL). */
int pl_graph_add_op(pl_graph *g, pl_op_kind kind, const char *name, const int *inputs,
                    int n_inputs, int n_outputs, const pl_attrs *attrs, pl_phase phase,
                    int group, pl_error *err);

#endif
