/* The op table: one entry per op kind, holding everything that differs between kinds
 * (name, arity, accepted attributes, shape inference, FLOP count). Adding an op touches
 * its enum value, its entry in ops.c and, if it has a new attribute, the attribute table.
 * Autodiff attaches its backward rule to the same entry; the back end's kernel table
 * (back/kernels/table.c) says how each kind runs.
 *
 * The table is constant and thread-safe to read. */
#ifndef PLACER_OPS_H
#define PLACER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_op_kind {
    PL_OP_MATMUL,
    PL_OP_ADD,
    PL_OP_SUB,
    PL_OP_MUL,
    PL_OP_DIV,
    PL_OP_SCALE,
    PL_OP_RELU,
    PL_OP_GELU,
    PL_OP_TANH,
    PL_OP_SIGMOID,
    PL_OP_CLAMP,
    PL_OP_HARDSIGMOID,
    PL_OP_HARDSWISH,
    PL_OP_ERF,
    PL_OP_SOFTMAX,
    PL_OP_LOG_SOFTMAX,
    PL_OP_SOFTMAX_CROSS_ENTROPY,
    PL_OP_MSE,
    PL_OP_LAYER_NORM,
    PL_OP_BATCH_NORM,
    PL_OP_CONV2D,
    PL_OP_MAX_POOL,
    PL_OP_AVG_POOL,
    PL_OP_GLOBAL_AVG_POOL,
    PL_OP_ADAPTIVE_AVG_POOL,
    PL_OP_CONCAT,
    PL_OP_SPLIT,
    PL_OP_SLICE,
    PL_OP_RESHAPE,
    PL_OP_FLATTEN,
    PL_OP_TRANSPOSE,
    PL_OP_EMBEDDING,
    PL_OP_REDUCE_SUM,
    PL_OP_REDUCE_MEAN,
    PL_OP_DROPOUT,
    PL_OP_TOPK_GATE,
    PL_OP_LSTM_CELL,
    PL_OP_WHERE,
    PL_OP_EQUAL,
    PL_OP_NOT_EQUAL,
    PL_OP_LESS,
    PL_OP_LESS_EQUAL,
    PL_OP_GREATER,
    PL_OP_GREATER_EQUAL,
    PL_OP_LOGICAL_NOT,
    PL_OP_CONV1D,
    PL_OP_CONV3D,
    PL_OP_CONV_TRANSPOSE1D,
    PL_OP_CONV_TRANSPOSE2D,
    PL_OP_CONV_TRANSPOSE3D,
    PL_OP_GRU_CELL,
    PL_OP_EXP,
    PL_OP_LOG,
    PL_OP_SQRT,
    PL_OP_RSQRT,
    PL_OP_ABS,
    PL_OP_POW,
    /* Pooling over one and three spatial axes; their gradients are max_pool_grad,
     * avg_pool_grad and adaptive_avg_pool_grad, which read the axes from x's rank. */
    PL_OP_MAX_POOL1D,
    PL_OP_MAX_POOL3D,
    PL_OP_AVG_POOL1D,
    PL_OP_AVG_POOL3D,
    PL_OP_ADAPTIVE_AVG_POOL1D,
    PL_OP_ADAPTIVE_AVG_POOL3D,
    PL_OP_SILU,
    /* Internal ops: automatic differentiation (and, for the vocabulary-parallel loss's,
     * the tensor-parallel rewrite) writes them into the training graph; model files
     * cannot name them. Inputs -> outputs; "like" inputs give only their shape. */
    PL_OP_MATMUL_GRAD_A,   /* dy, a, b -> da; forward's transpose flags; sums broadcast axes */
    PL_OP_MATMUL_GRAD_B,   /* dy, a, b -> db; likewise */
    PL_OP_SUM_TO,          /* x, like -> x summed over the axes where `like` was broadcast */
    PL_OP_RELU_GRAD,       /* dy, y -> dy * (y > 0) */
    PL_OP_GELU_GRAD,       /* dy, x -> dy * gelu'(x) */
    PL_OP_TANH_GRAD,       /* dy, y -> dy * (1 - y^2) */
    PL_OP_SIGMOID_GRAD,    /* dy, y -> dy * y * (1 - y) */
    PL_OP_CLAMP_GRAD,      /* dy, x -> dy where min < x < max, else 0 */
    PL_OP_HARDSIGMOID_GRAD, /* dy, x -> dy / 6 where -3 < x < 3, else 0 */
    PL_OP_HARDSWISH_GRAD,  /* dy, x -> 0 below -3, dy * (x/3 + 1/2) up to 3, dy above */
    PL_OP_ERF_GRAD,        /* dy, x -> dy * 2/sqrt(pi) * exp(-x^2) */
    PL_OP_SOFTMAX_GRAD,    /* dy, y -> y * (dy - sum(dy * y)) along axis; also top-k gates */
    PL_OP_LOG_SOFTMAX_GRAD,            /* dy, y -> dy - exp(y) * sum(dy) along axis */
    PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD,  /* logits, labels, dloss -> dlogits */
    PL_OP_MSE_GRAD,        /* prediction, target, dloss -> dprediction */
    PL_OP_LAYER_NORM_GRAD, /* dy, x, gamma -> dx, dgamma, dbeta; eps */
    PL_OP_BATCH_NORM_GRAD, /* dy, x, gamma -> dx, dgamma, dbeta; eps; batch statistics */
    PL_OP_CONV2D_GRAD_INPUT,  /* dy, x, w -> dx; the forward's conv attributes */
    PL_OP_CONV2D_GRAD_FILTER, /* dy, x, w -> dw [, dbias] */
    PL_OP_MAX_POOL_GRAD,   /* dy, x -> dx (to the first maximum of each window) */
    PL_OP_AVG_POOL_GRAD,   /* dy, x -> dx */
    PL_OP_GLOBAL_AVG_POOL_GRAD, /* dy, x -> dx */
    PL_OP_ADAPTIVE_AVG_POOL_GRAD, /* dy, x -> dx */
    PL_OP_SLICE_GRAD,      /* dy, x -> dx: dy in [start, end) along axis, zeros elsewhere */
    PL_OP_RESHAPE_LIKE,    /* x, like -> x's elements in like's shape */
    PL_OP_BROADCAST_LIKE,  /* dy, x -> factor * dy repeated over the `axes` reduced from x */
    PL_OP_DROPOUT_GRAD,    /* dy -> dy masked and scaled exactly as the forward pass did
                              (a split dropout's shard: its attributes axis, start and end
                              place it in the whole tensor; end 0: it is whole) */
    PL_OP_LSTM_CELL_GRAD,  /* dh', dc', x, w, b [, h, c] [, gates] -> dx, dz [, dh, dc],
                              or projected dh', dc', gx [, w, h, c] [, gates] -> dz
                              [, dh, dc]; dz: of the gates' inputs [N,4H]; gates: the
                              forward's third output, else recomputed */
    PL_OP_WHERE_GRAD,      /* dy, cond -> dy where cond != 0 (else 0), dy where cond == 0 */
    PL_OP_CONV1D_GRAD_INPUT,  /* as conv2d's, for one spatial axis */
    PL_OP_CONV1D_GRAD_FILTER,
    PL_OP_CONV3D_GRAD_INPUT,  /* as conv2d's, for three spatial axes */
    PL_OP_CONV3D_GRAD_FILTER,
    PL_OP_GRU_CELL_GRAD,   /* dh', gx [, gh [, h]] -> dgx [, dgh [, dh]]; dgh [N,3H] even
                              where gh is the bias [3H] */
    PL_OP_SQRT_GRAD,       /* dy, y -> dy / (2 y) */
    PL_OP_RSQRT_GRAD,      /* dy, y -> -dy * y^3 / 2 */
    PL_OP_ABS_GRAD,        /* dy, x -> dy * sign(x), 0 at x = 0 */
    PL_OP_POW_GRAD,        /* dy, x -> dy * p * x^(p-1), 0 where p = 0; exponent p */
    PL_OP_SILU_GRAD,       /* dy, x -> dy * s (1 + x (1 - s)), s = sigmoid(x) */
    /* The cross-entropy of logits split along their class axis (split_graph.h: the
     * vocabulary-parallel loss), written by the tensor-parallel rewrite; [..., 1]: one
     * value per position. */
    PL_OP_LOGSUMEXP,       /* x -> log(sum(exp(x))) along the last axis, [..., 1] */
    PL_OP_LOGSUMEXP_GRAD,  /* dy, x, y -> dy * exp(x - y) */
    PL_OP_PICK,            /* x [..., C], labels [...] -> x[label - start] where the label is
                              in [start, start + C), else 0; [..., 1] */
    PL_OP_PICK_GRAD,       /* dy, labels, x -> dy at [label - start], 0 elsewhere */
    PL_OP_LSE_CROSS_ENTROPY, /* lse, picked, labels -> the mean over positions of lse -
                                picked where the label is in [0, end), else 0 */
    PL_OP_LSE_CROSS_ENTROPY_GRAD, /* lse, labels, dloss -> dlse, dpicked */
    PL_OP_ZEROS_LIKE,      /* x -> zeros of x's shape */
    PL_OP_ACCUMULATE,      /* acc, g -> (none): acc += g, in place */
    PL_OP_SCATTER_ACCUMULATE, /* acc [V,D], dy [...,D], ids [...] -> (none): acc[ids] += dy */
    PL_OP_SGD_UPDATE,      /* param, acc [, velocity] -> (none): in place; acc zeroed */
    PL_OP_ADAM_UPDATE,     /* param, acc, m, v -> (none): in place; acc zeroed */
    PL_OP_COUNT
} pl_op_kind;

#define PL_OP_FIRST_INTERNAL PL_OP_MATMUL_GRAD_A

/* Attributes, by id. Each op accepts a subset (pl_op_info.attrs). */
typedef enum pl_attr_id {
    PL_ATTR_TRANSPOSE_A,
    PL_ATTR_TRANSPOSE_B,
    PL_ATTR_FACTOR,
    PL_ATTR_AXIS,
    PL_ATTR_AXES,
    PL_ATTR_KEEPDIMS,
    PL_ATTR_EPS,
    PL_ATTR_MOMENTUM,
    PL_ATTR_STRIDE,
    PL_ATTR_PADDING,
    PL_ATTR_DILATION,
    PL_ATTR_GROUPS,
    PL_ATTR_KERNEL,
    PL_ATTR_SIZES,
    PL_ATTR_START,
    PL_ATTR_END,
    PL_ATTR_SHAPE,
    PL_ATTR_PERM,
    PL_ATTR_RATE,
    PL_ATTR_SEED,
    PL_ATTR_K,
    PL_ATTR_MIN,
    PL_ATTR_MAX,
    PL_ATTR_APPROXIMATE,
    PL_ATTR_CEIL_MODE,
    PL_ATTR_COUNT_INCLUDE_PAD,
    PL_ATTR_OUTPUT_SIZE,
    PL_ATTR_MODE,
    PL_ATTR_OUTPUT_PADDING,
    PL_ATTR_BATCH_AXIS,
    PL_ATTR_EXPONENT,
    PL_ATTR_BATCH_GROUP,
    PL_ATTR_COUNT
} pl_attr_id;

#define PL_ATTR_BIT(id) (UINT32_C(1) << (id))

typedef enum pl_attr_type {
    PL_ATTR_TYPE_BOOL, /* true/false */
    PL_ATTR_TYPE_INT,  /* integer within [min, max] */
    PL_ATTR_TYPE_PAIR, /* integer or one per spatial axis ([h, w]), each within [min, max] */
    PL_ATTR_TYPE_INTS, /* array of integers within [min, max] */
    PL_ATTR_TYPE_REAL, /* number within [min, max] */
    PL_ATTR_TYPE_ENUM, /* one of the strings in `names`, stored as its index (an int) */
} pl_attr_type;

/* gelu's "approximate": the index of each name in its attribute's `names`. */
typedef enum pl_gelu_approximate { PL_GELU_TANH, PL_GELU_EXACT } pl_gelu_approximate;

/* dropout's "mode": what one keep decision covers. An element; a sample, all of its
 * values (stochastic depth's "row"); or the whole step (stochastic depth's "batch"). */
typedef enum pl_dropout_mode {
    PL_DROPOUT_ELEMENT,
    PL_DROPOUT_ROW,
    PL_DROPOUT_BATCH
} pl_dropout_mode;

typedef struct pl_int_list {
    int n;
    const int64_t *v;
} pl_int_list;

/* Every attribute any op has, in one flat struct: kernels read fields directly. Fields an
 * op does not accept keep the defaults of pl_attrs_default. */
typedef struct pl_attrs {
    uint32_t given; /* PL_ATTR_BIT of each attribute the model file set */
    bool transpose_a, transpose_b, keepdims, ceil_mode, count_include_pad;
    int approximate; /* pl_gelu_approximate */
    int mode;        /* pl_dropout_mode */
    int64_t axis, groups, start, end, k;
    int64_t batch_axis;  /* reshape: where the batch goes in the result */
    int64_t batch_group; /* reshape: the result's batch axis elements per sample (1) */
    /* Window attributes, one per spatial axis of the op (pl_op_info.spatial) from the
     * first: [h, w] for 2-D ops, [d, h, w] for 3-D ones, [l] for 1-D ones. */
    int64_t stride[3], padding[3], dilation[3], kernel[3], output_size[3], output_padding[3];
    pl_int_list axes, sizes, shape, perm;
    double factor, eps, momentum, rate;
    double clamp_min, clamp_max; /* "min" and "max": -inf and +inf when not given */
    double exponent;             /* pow's */
    int64_t seed;
    /* Internal ops only (set by autodiff, never read from a file): the optimiser. */
    double lr, weight_decay, beta1, beta2;
} pl_attrs;

typedef struct pl_attr_info {
    const char *name;
    pl_attr_type type;
    size_t offset;   /* of the field in pl_attrs */
    double min, max; /* inclusive range of each value */
    int max_count;   /* PL_ATTR_TYPE_INTS: the longest list accepted */
    const char *const *names; /* PL_ATTR_TYPE_ENUM: the accepted strings, NULL-terminated */
} pl_attr_info;

const pl_attr_info *pl_attr_info_of(pl_attr_id id);
pl_attr_id pl_attr_from_name(const char *name); /* PL_ATTR_COUNT when unknown */
void pl_attrs_default(pl_attrs *attrs);

/* What shape inference sees and fills in. Inputs are complete; the infer function sets
 * each output's dtype, rank, dims and batch axis, and on a problem calls pl_infer_fail
 * and returns false. */
struct pl_tensor;
typedef struct pl_infer_ctx {
    const struct pl_tensor *const *in;
    struct pl_tensor *const *out;
    int n_in, n_out;
    const pl_attrs *attrs;
    /* Set by pl_infer_fail: the message, and what to blame (an input index or an
     * attribute id, -1 when the op as a whole is wrong); blame_output (set by
     * pl_op_infer, -1 otherwise): an output beyond the size limits of graph.h. */
    char message[512];
    int blame_input;
    int blame_attr;
    int blame_output;
} pl_infer_ctx;

bool pl_infer_fail(pl_infer_ctx *ctx, int blame_input, int blame_attr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct pl_autodiff;

typedef struct pl_op_info {
    const char *name;
    int8_t min_inputs, max_inputs; /* max -1: any number */
    int8_t min_outputs, max_outputs;
    uint32_t attrs;    /* accepted attributes */
    uint32_t required; /* attributes that must be given */
    bool (*infer)(pl_infer_ctx *ctx);
    /* Floating-point operations of one execution, from the inferred shapes. */
    double (*flops)(const pl_infer_ctx *ctx);
    /* Automatic differentiation (autodiff.c): appends the ops computing the gradients of
     * the op's inputs. NULL: the op has no gradient (labels, ids, internal ops). */
    bool (*backward)(struct pl_autodiff *ad, int op);
    bool internal; /* written by autodiff; model files cannot name it */
    bool mutates;  /* writes state inputs in place (accumulators, optimiser moments,
                      batch-norm running averages) */
    int8_t spatial; /* spatial axes of its window attributes (stride, padding, ...):
                       1 to 3; 0 for 2 */
    bool batch_statistics; /* in training, each sample's result depends on the other
                              samples of the call (batch norm's mean and variance): a
                              micro-batch normalises with its own statistics, not the
                              step's (graph.h: pl_graph_whole_step_op) */
} pl_op_info;

const pl_op_info *pl_op_info_of(pl_op_kind kind);
pl_op_kind pl_op_from_name(const char *name); /* PL_OP_COUNT when unknown */
/* Writes "add, avg_pool, batch_norm, ...": every op name, sorted. */
void pl_op_names_join(char *buf, size_t cap);

/* lstm_cell's two forms, told apart by the input count: x, w [E+H,4H], b [, h, c] (3 or
 * 5 inputs), and the projected form gx [N,4H] [, w [H,4H], h, c] (1 or 4 inputs), whose
 * gate inputs gx = x.W_ih + both biases are made for a whole sequence by one matmul. The
 * projected form's lstm_cell_grad has one output fewer, since dz is gx's gradient: dz
 * [, dh, dc] (1 or 3 outputs) against dx, dz [, dh, dc] (2 or 4). */
static inline bool pl_lstm_cell_projected(int n_inputs)
{
    return n_inputs == 1 || n_inputs == 4;
}

static inline bool pl_lstm_cell_grad_projected(int n_outputs)
{
    return n_outputs % 2 == 1;
}

/* How many of lstm_cell_grad's inputs after dh' and dc' are the cell's; one more is the
 * forward's saved gates. */
static inline int pl_lstm_cell_grad_cell_inputs(int n_outputs)
{
    bool state = n_outputs >= 3;
    if (pl_lstm_cell_grad_projected(n_outputs))
        return state ? 4 : 1;
    return state ? 5 : 3;
}

#ifdef __cplusplus
}
#endif

#endif
