/* The kernel contract: how an op's computation is called.
 *
 * Kernels are pure: they read their inputs and write their outputs (and, for ops marked
 * `mutates` in the op table, their first inputs), use only the workspace they were given,
 * allocate nothing, take no locks and keep no state. All f32 data is float, all i32 data
 * int32_t, contiguous and row-major in the shape of its tensor descriptor.
 *
 * Threads: the executor calls `kernel` once on each of the `nth` threads of a device, with
 * `ith` in [0, nth), concurrently; each thread computes its own disjoint share of the
 * output, so the result must not depend on nth (up to float summation order, where a
 * kernel documents it). When the kernel table gives a `finish`, the executor calls it once,
 * on one thread, after every thread's `kernel` has returned: reductions keep per-thread
 * partial results in the workspace and combine them there. Matrix products call OpenBLAS
 * (cblas_sgemm), which the executor runs single-threaded: parallelism is ours.
 *
 * Shapes come from the descriptors in the arguments, not from the graph: the executor
 * passes micro-batch shapes when it splits a step. */
#ifndef PLACER_KERNELS_H
#define PLACER_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* Where in training a call happens: dropout masks and Adam's bias correction use it. */
typedef struct pl_step_info {
    int64_t step;      /* 1 for the first training step */
    int micro_batch;   /* index within the step, 0-based */
    int micro_batches; /* per step; updates divide accumulated gradients by it */
    bool training;     /* false in evaluation: dropout passes through, batch norm uses its
                          running averages */
} pl_step_info;

typedef struct pl_kernel_args {
    const pl_op *op;              /* kind and attributes */
    const pl_tensor *const *in_t; /* input descriptors (shapes, dtypes) */
    const pl_tensor *const *out_t;
    void *const *in;              /* input data; written only by `mutates` ops */
    void *const *out;             /* output data */
    void *work;                   /* `workspace` bytes, shared by all threads of the call */
    int ith, nth;
    const pl_step_info *step;
} pl_kernel_args;

/* Sets OpenBLAS up for the kernels, before their first call: one thread of its own, and
 * its AVX-512 kernels on a CPU that has AVX-512 where it would not choose them itself
 * (blas_setup.c). */
void pl_blas_setup(void);

/* The OpenBLAS core the kernels run (after pl_blas_setup's choice), e.g. "SkylakeX". */
const char *pl_blas_core(void);

/* This thread's share [*begin, *end) of n items, in contiguous blocks. */
static inline void pl_kernel_share(int64_t n, int ith, int nth, int64_t *begin, int64_t *end)
{
    int64_t per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra ? 1 : 0);
}

/* How an op kind runs: `kernel` on every thread of a device, each doing its share;
 * `finish`, when set, once after all of them (reductions); `workspace`, when set, the
 * scratch bytes the op needs for `nth` threads. */
typedef struct pl_kernel_fns {
    void (*kernel)(const pl_kernel_args *args);
    void (*finish)(const pl_kernel_args *args);
    size_t (*workspace)(const pl_kernel_args *args);
} pl_kernel_fns;

/* The kernel table's entry for an op kind (table.c); NULL for an unknown kind. */
const pl_kernel_fns *pl_kernel_of(pl_op_kind kind);

#define PL_KERNEL(name) void pl_kernel_##name(const pl_kernel_args *args)
#define PL_FINISH(name) void pl_kernel_##name##_finish(const pl_kernel_args *args)
#define PL_WORKSPACE(name) size_t pl_kernel_##name##_workspace(const pl_kernel_args *args)

/* dense.c: matrix products on OpenBLAS */
PL_KERNEL(matmul);
PL_KERNEL(matmul_grad_a);
PL_KERNEL(matmul_grad_b);

/* elementwise.c: NumPy broadcasting, activations, dropout and their gradients */
PL_KERNEL(add);
PL_KERNEL(sub);
PL_KERNEL(mul);
PL_KERNEL(div);
PL_KERNEL(scale);
PL_KERNEL(relu);
PL_KERNEL(gelu);
PL_KERNEL(tanh);
PL_KERNEL(sigmoid);
PL_KERNEL(clamp);
PL_KERNEL(hardsigmoid);
PL_KERNEL(hardswish);
PL_KERNEL(erf);
PL_KERNEL(relu_grad);
PL_KERNEL(gelu_grad);
PL_KERNEL(tanh_grad);
PL_KERNEL(sigmoid_grad);
PL_KERNEL(clamp_grad);
PL_KERNEL(hardsigmoid_grad);
PL_KERNEL(hardswish_grad);
PL_KERNEL(erf_grad);
PL_KERNEL(exp);
PL_KERNEL(log);
PL_KERNEL(sqrt);
PL_KERNEL(rsqrt);
PL_KERNEL(abs);
PL_KERNEL(pow);
PL_KERNEL(sqrt_grad);
PL_KERNEL(rsqrt_grad);
PL_KERNEL(abs_grad);
PL_KERNEL(pow_grad);
PL_KERNEL(silu);
PL_KERNEL(silu_grad);
PL_KERNEL(dropout);
PL_KERNEL(dropout_grad);
PL_KERNEL(zeros_like);
PL_KERNEL(sum_to);
PL_KERNEL(broadcast_like);
PL_KERNEL(reduce_sum);
PL_KERNEL(reduce_mean);

/* softmax.c: softmax family, losses, top-k gating */
PL_KERNEL(softmax);
PL_KERNEL(log_softmax);
PL_KERNEL(softmax_grad);
PL_KERNEL(log_softmax_grad);
PL_KERNEL(softmax_cross_entropy);
PL_FINISH(softmax_cross_entropy);
PL_WORKSPACE(softmax_cross_entropy);
PL_KERNEL(softmax_cross_entropy_grad);
PL_KERNEL(mse);
PL_FINISH(mse);
PL_WORKSPACE(mse);
PL_KERNEL(mse_grad);
PL_KERNEL(topk_gate);

/* vocab_loss.c: softmax cross-entropy over logits split along their classes */
PL_KERNEL(logsumexp);
PL_KERNEL(logsumexp_grad);
PL_KERNEL(pick);
PL_KERNEL(pick_grad);
PL_KERNEL(lse_cross_entropy);
PL_FINISH(lse_cross_entropy);
PL_WORKSPACE(lse_cross_entropy);
PL_KERNEL(lse_cross_entropy_grad);

/* norm.c: layer and batch normalisation */
PL_KERNEL(layer_norm);
PL_KERNEL(layer_norm_grad);
PL_FINISH(layer_norm_grad);
PL_WORKSPACE(layer_norm_grad);
PL_KERNEL(batch_norm);
PL_KERNEL(batch_norm_grad);

/* The routes a kernel takes by shape, where an op kind has several (routes.c; the
 * convolutions' and batch norm's, docs/training.md "Kernels"): their speeds differ by up
 * to an order of magnitude at the same FLOPs and bytes, so the cost model fits each apart
 * (cost_model.h). */
typedef enum pl_kernel_route {
    PL_ROUTE_ONE = -1,       /* the kind has a single route */
    PL_ROUTE_IM2COL,         /* im2col and an sgemm a sample (a 1x1 filter reads in place) */
    PL_ROUTE_SMALL_OUTPUTS,  /* several samples' columns in one sgemm (conv_batched.c) */
    PL_ROUTE_WINOGRAD,       /* F(2x2, 3x3) (conv_winograd.c) */
    PL_ROUTE_FLAT,           /* the filter gradient on flat padded volumes (conv_flat.c) */
    PL_ROUTE_DEPTHWISE,      /* a filter a channel, plane by plane (conv_depthwise.c) */
    PL_ROUTE_DEPTHWISE_SMALL, /* the same on small planes, channels innermost */
    PL_ROUTE_PLANES,         /* batch norm, a channel's plane at a time (norm.c) */
    PL_ROUTE_SMALL_PLANES,   /* batch norm of small planes, a block's planes as one run */
    PL_KERNEL_ROUTES
} pl_kernel_route;
extern const char *const pl_kernel_route_names[PL_KERNEL_ROUTES + 1]; /* NULL-terminated */

/* The route `op`'s kernel takes at `shapes` (by tensor index, as a program's shapes at
 * its micro-batch); PL_ROUTE_ONE for a kind of a single route. */
pl_kernel_route pl_kernel_route_of(const pl_op *op, const pl_tensor *shapes);

/* conv.c: convolution (im2col + GEMM) and its gradients */
/* Convolutions of 1 to 3 spatial axes (the rank of x says which) */
PL_KERNEL(conv);
PL_WORKSPACE(conv);
PL_KERNEL(conv_grad_input);
PL_WORKSPACE(conv_grad_input);
PL_KERNEL(conv_grad_filter);
PL_FINISH(conv_grad_filter);
PL_WORKSPACE(conv_grad_filter);
PL_KERNEL(conv_transpose);
PL_FINISH(conv_transpose);
PL_WORKSPACE(conv_transpose);

/* pool.c */
PL_KERNEL(max_pool);
PL_KERNEL(avg_pool);
PL_KERNEL(global_avg_pool);
PL_KERNEL(adaptive_avg_pool);
PL_KERNEL(max_pool_grad);
PL_KERNEL(avg_pool_grad);
PL_KERNEL(global_avg_pool_grad);
PL_KERNEL(adaptive_avg_pool_grad);

/* shape.c: data movement */
PL_KERNEL(concat);
PL_KERNEL(split);
PL_KERNEL(slice);
PL_KERNEL(slice_grad);
PL_KERNEL(copy); /* reshape, flatten, reshape_like: the same bytes */
PL_KERNEL(transpose);
PL_KERNEL(embedding);

/* elementwise.c: where, comparisons and logical not (masks of 0 and 1) */
PL_KERNEL(where);
PL_KERNEL(where_grad);
PL_KERNEL(equal);
PL_KERNEL(not_equal);
PL_KERNEL(less);
PL_KERNEL(less_equal);
PL_KERNEL(greater);
PL_KERNEL(greater_equal);
PL_KERNEL(logical_not);

/* lstm.c */
PL_KERNEL(lstm_cell);
PL_WORKSPACE(lstm_cell);
PL_KERNEL(lstm_cell_grad);
PL_FINISH(lstm_cell_grad);
PL_WORKSPACE(lstm_cell_grad);

/* gru.c */
PL_KERNEL(gru_cell);
PL_KERNEL(gru_cell_grad);

/* optim.c: gradient accumulation and parameter updates, in place */
PL_KERNEL(accumulate);
PL_KERNEL(scatter_accumulate);
PL_KERNEL(sgd_update);
PL_KERNEL(adam_update);

#endif
