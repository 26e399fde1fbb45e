/* The graph IR: tensors with static shapes and the ops between them.
 *
 * Contract:
 * - A pl_graph is plain data: arrays of tensors and ops that refer to each other by index.
 *   It is built once by the loader (load.h), which validates everything, infers every
 *   shape and sorts the ops topologically: ops[i] only reads tensors produced by ops[j],
 *   j < i, or inputs and parameters. Nothing past the loader sees JSON.
 * - The graph owns all of its memory (one arena); pl_graph_free releases it.
 *   pl_graph_free(NULL) is a no-op.
 * - A batched tensor carries the batch on one axis, batch_axis (0 unless an input says
 *   otherwise and ops move it; see docs/model-format.md), so a step can be split into
 *   micro-batches along it without changing its meaning, except where an op has batch
 *   statistics: batch_statistics says whether the model allows it. A reshape may merge
 *   the batch with the axes after it (Swin's windows: [N, windows, ...] as
 *   [N * windows, ...]); each sample then owns batch_group consecutive elements of that
 *   axis, so a range of samples is still a range of the axis.
 * - Reading a graph from several threads is safe; changing it is the owner's alone.
 */
#ifndef PLACER_GRAPH_H
#define PLACER_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PL_MAX_RANK = 6,
    PL_MAX_NAME = 255,
    PL_MAX_OPS = 4000000,
    PL_MAX_SPLIT = 16, /* devices that share one op (split_graph.h) */
};
#define PL_NO_BATCH (-1) /* pl_tensor.batch_axis of a tensor that does not depend on it */
#define PL_MAX_DIM INT64_C(2147483647)      /* 2^31 - 1 */
#define PL_MAX_ELEMENTS INT64_C(2147483648) /* 2^31 per tensor */

typedef enum pl_dtype { PL_F32, PL_I32 } pl_dtype;

typedef enum pl_tensor_kind {
    PL_TENSOR_INPUT,      /* fed each step: data or labels */
    PL_TENSOR_PARAM,      /* the model's state: trained, or frozen (pl_tensor.frozen) */
    PL_TENSOR_ACTIVATION, /* produced by an op */
    PL_TENSOR_STATE,      /* kept across steps, changed in place: gradient accumulators,
                             optimiser moments, batch-norm running averages */
    PL_TENSOR_CONST       /* set once from its initialiser, never written (the loss seed) */
} pl_tensor_kind;

typedef enum pl_role { PL_ROLE_NONE, PL_ROLE_DATA, PL_ROLE_LABEL } pl_role;

typedef enum pl_init_kind {
    PL_INIT_ZEROS,
    PL_INIT_ONES,
    PL_INIT_CONSTANT,
    PL_INIT_UNIFORM,
    PL_INIT_NORMAL,
    PL_INIT_GLOROT_UNIFORM,
    PL_INIT_HE_NORMAL,
    PL_INIT_VALUES, /* every element given, row-major */
} pl_init_kind;

typedef struct pl_init {
    pl_init_kind kind;
    double a, b; /* value; low, high; mean, std */
    uint64_t seed;
    const double *values; /* PL_INIT_VALUES: the tensor's elements (the graph's arena) */
    /* A shard of a split tensor (split_graph.h): elements [shard_start, shard_start +
     * dims[shard_axis]) of axis shard_axis of a whole tensor whose axis has shard_whole
     * elements, its other axes alike. Its values are the whole tensor's there (`values`
     * and the fans are the whole tensor's). shard_whole 0: the tensor is whole. With
     * shard_groups g > 1 the whole axis is g equal groups (a fused product's query, key and
     * value) and the shard holds elements [shard_start, shard_start + dims[shard_axis] / g)
     * of each, one after another. */
    int shard_axis, shard_groups;
    int64_t shard_start, shard_whole;
} pl_init;

typedef struct pl_tensor {
    const char *name;
    pl_tensor_kind kind;
    pl_dtype dtype;
    int rank;
    int64_t dims[PL_MAX_RANK];
    int batch_axis; /* the axis that holds the batch, or PL_NO_BATCH */
    int batch_group; /* elements of the batch axis each sample owns, one after another;
                        0 reads as 1 (pl_tensor_batch_group) */
    pl_role role;  /* inputs only */
    pl_init init;  /* parameters, states and constants */
    int producer;  /* op index, or -1 for inputs, parameters, states and constants */
    int param;     /* states: the parameter they serve, or -1 */
    bool frozen;   /* parameters: "trainable": false, a constant or buffer that gets no
                      gradient, no optimiser state and no update */
} pl_tensor;

/* Where an op belongs in a training step: forward and backward ops run once per
 * micro-batch, updates once per step after every micro-batch. */
typedef enum pl_phase { PL_PHASE_FORWARD, PL_PHASE_BACKWARD, PL_PHASE_UPDATE } pl_phase;

typedef struct pl_op {
    const char *name;
    pl_op_kind kind;
    int n_inputs, n_outputs;
    int *inputs, *outputs; /* tensor indices */
    pl_attrs attrs;
    double flops;          /* floating-point operations of one execution */
    int64_t bytes_read;    /* all inputs, parameters included */
    int64_t bytes_written; /* all outputs */
    int64_t param_bytes;   /* the parameter inputs among bytes_read */
    int source_index;      /* position in the model file's "nodes", -1 if written later */
    pl_phase phase;
    int group;             /* co-location group: the index of the forward op this op goes
                              with (itself, for a forward op); placement moves groups */
    bool weight_gradient;  /* a backward op whose results reach parameter gradients only,
                              never an activation's: a schedule may run it later */
} pl_op;

typedef enum pl_optimizer_kind { PL_OPT_SGD, PL_OPT_ADAM } pl_optimizer_kind;

typedef struct pl_optimizer {
    pl_optimizer_kind kind;
    double lr, momentum, weight_decay; /* sgd (weight_decay for both) */
    double beta1, beta2, eps;          /* adam */
} pl_optimizer;

/* What a batch-statistics op (pl_op_info.batch_statistics) means when a plan splits a
 * step into micro-batches (docs/model-format.md, "batch_statistics"). */
typedef enum pl_batch_statistics {
    PL_BATCH_STATISTICS_PER_STEP,        /* over the whole step's batch, as PyTorch: such a
                                            model runs its steps whole, one micro-batch */
    PL_BATCH_STATISTICS_PER_MICRO_BATCH, /* each micro-batch its own (GPipe's semantics) */
} pl_batch_statistics;

typedef struct pl_graph {
    const char *name;
    const char *description; /* "" when absent */
    int batch_size;
    int n_tensors, n_ops;
    int n_forward_ops; /* ops[0 .. n_forward_ops) are the model's; autodiff appends */
    int tensor_cap, op_cap;
    pl_tensor *tensors;
    pl_op *ops;    /* topological order */
    int loss;      /* tensor index */
    pl_optimizer optimizer;
    pl_batch_statistics batch_statistics;
    uint64_t hash; /* of the model's content (load.c): checkpoints and plans name the
                      model they were made for */
    pl_arena arena;
} pl_graph;

/* Totals over the whole graph, for summaries and lower bounds. */
typedef struct pl_graph_stats {
    int n_inputs, n_params, n_activations;
    int64_t param_count;      /* parameter elements */
    int64_t param_bytes;
    int64_t input_bytes;      /* one step's inputs */
    int64_t activation_bytes; /* every activation of one step, all kept as training does */
    int64_t state_bytes;      /* training state: accumulators, moments, constants */
    double flops;             /* one forward pass */
    int op_count[PL_OP_COUNT];
} pl_graph_stats;

void pl_graph_free(pl_graph *graph);

int64_t pl_tensor_elements(const pl_tensor *tensor);
/* Every dimension 1 to PL_MAX_DIM and at most PL_MAX_ELEMENTS elements, checked without
 * overflow (pl_tensor_elements multiplies blindly). */
bool pl_tensor_within_limits(const pl_tensor *tensor);
/* Whether the tensor's shape is `rank` dimensions equal to `dims`. */
bool pl_tensor_has_dims(const pl_tensor *tensor, int rank, const int64_t *dims);
int64_t pl_tensor_bytes(const pl_tensor *tensor);

/* Elements of a batched tensor's batch axis per sample: 1 unless a reshape merged the
 * batch with the axes after it. */
int pl_tensor_batch_group(const pl_tensor *tensor);

/* A tensor seen as [outer, batch, inner]: the axes before its batch axis, the samples, and
 * each sample's elements in one run: its `group` elements of the batch axis (usually 1)
 * times the axes after it. The batch's samples are `outer` runs of `inner` elements each,
 * so a run of samples is contiguous only when outer is 1 (the batch on axis 0). An
 * unbatched tensor is [1, 1, elements]. */
typedef struct pl_batch_layout {
    int64_t outer, batch, inner;
    int64_t group;
} pl_batch_layout;
pl_batch_layout pl_tensor_batch_layout(const pl_tensor *tensor);
/* Copies samples [first, first + count) of `whole` (a batched tensor's data, laid out as
 * `tensor`) into `part`, a tensor like it with `count` samples; pl_batch_scatter copies
 * them back. Element size 4 (f32 and i32 alike). */
void pl_batch_gather(const pl_tensor *tensor, const void *whole, int64_t first, int64_t count,
                     void *part);
void pl_batch_scatter(const pl_tensor *tensor, void *whole, int64_t first, int64_t count,
                      const void *part);
/* Copies a shard's elements (pl_init's shard fields, groups too) between its own buffer
 * `part` and the whole tensor's `whole`: into the whole when to_whole, else out of it.
 * Element size 4. */
void pl_shard_copy(const pl_tensor *shard, void *whole, void *part, bool to_whole);
const char *pl_dtype_name(pl_dtype dtype);

/* Index of the tensor or op with this name, or -1. Linear: for tools and tests. */
int pl_graph_find_tensor(const pl_graph *graph, const char *name);
int pl_graph_find_op(const pl_graph *graph, const char *name);

/* The trained parameter whose gradient op `op` accumulates (accumulate, scatter_accumulate)
 * or which it updates (an optimiser's update), or -1 for any other op. A parameter's
 * accumulations and update run together, on a device a plan's partitions choose (plan.h),
 * not necessarily their co-location group's. */
int pl_graph_updated_param(const pl_graph *graph, int op);

/* The first forward op that needs the step's batch whole: one with batch statistics in a
 * model that asks for them per step. -1 when none: then every micro-batch count dividing
 * the batch keeps the step's meaning. Linear in the ops. */
int pl_graph_whole_step_op(const pl_graph *graph);
/* Whether a plan may split this graph's step into `micro_batches`: they divide the batch,
 * and there is more than one only when pl_graph_whole_step_op finds none. */
bool pl_graph_allows_micro_batches(const pl_graph *graph, int micro_batches);
/* Why this graph's steps stay whole, in one line naming the op and the model field that
 * would allow micro-batches; false (buf untouched) when they need not. */
bool pl_graph_whole_step_reason(const pl_graph *graph, char *buf, int cap);

void pl_graph_stats_compute(const pl_graph *graph, pl_graph_stats *stats);

/* Writes "[64,784]" (at most cap bytes, always terminated). */
void pl_shape_format(const pl_tensor *tensor, char *buf, int cap);

#ifdef __cplusplus
}
#endif

#endif
