/* The kernel table: how each op kind runs, beside the op table (front/ops.c) that says
 * what it computes. One entry per kind; a test checks that none is missing. */
#include "kernels.h"

/* An op's kernel alone, with a workspace, or a reduction with a workspace and a finish. */
#define KERNEL(name) {.kernel = pl_kernel_##name}
#define KERNEL_WORK(name) {.kernel = pl_kernel_##name, .workspace = pl_kernel_##name##_workspace}
#define KERNEL_REDUCE(name)                                                                 \
    {.kernel = pl_kernel_##name, .workspace = pl_kernel_##name##_workspace,                 \
     .finish = pl_kernel_##name##_finish}

static const pl_kernel_fns kernel_table[PL_OP_COUNT] = {
    [PL_OP_MATMUL] = KERNEL(matmul),
    [PL_OP_ADD] = KERNEL(add),
    [PL_OP_SUB] = KERNEL(sub),
    [PL_OP_MUL] = KERNEL(mul),
    [PL_OP_DIV] = KERNEL(div),
    [PL_OP_SCALE] = KERNEL(scale),
    [PL_OP_RELU] = KERNEL(relu),
    [PL_OP_GELU] = KERNEL(gelu),
    [PL_OP_TANH] = KERNEL(tanh),
    [PL_OP_SIGMOID] = KERNEL(sigmoid),
    [PL_OP_CLAMP] = KERNEL(clamp),
    [PL_OP_HARDSIGMOID] = KERNEL(hardsigmoid),
    [PL_OP_HARDSWISH] = KERNEL(hardswish),
    [PL_OP_ERF] = KERNEL(erf),
    [PL_OP_SOFTMAX] = KERNEL(softmax),
    [PL_OP_LOG_SOFTMAX] = KERNEL(log_softmax),
    [PL_OP_SOFTMAX_CROSS_ENTROPY] = KERNEL_REDUCE(softmax_cross_entropy),
    [PL_OP_MSE] = KERNEL_REDUCE(mse),
    [PL_OP_LAYER_NORM] = KERNEL(layer_norm),
    [PL_OP_BATCH_NORM] = KERNEL(batch_norm),
    [PL_OP_CONV2D] = KERNEL_WORK(conv2d),
    [PL_OP_MAX_POOL] = KERNEL(max_pool),
    [PL_OP_AVG_POOL] = KERNEL(avg_pool),
    [PL_OP_GLOBAL_AVG_POOL] = KERNEL(global_avg_pool),
    [PL_OP_ADAPTIVE_AVG_POOL] = KERNEL(adaptive_avg_pool),
    [PL_OP_CONCAT] = KERNEL(concat),
    [PL_OP_SPLIT] = KERNEL(split),
    [PL_OP_SLICE] = KERNEL(slice),
    [PL_OP_RESHAPE] = KERNEL(copy),
    [PL_OP_FLATTEN] = KERNEL(copy),
    [PL_OP_TRANSPOSE] = KERNEL(transpose),
    [PL_OP_EMBEDDING] = KERNEL(embedding),
    [PL_OP_REDUCE_SUM] = KERNEL(reduce_sum),
    [PL_OP_REDUCE_MEAN] = KERNEL(reduce_mean),
    [PL_OP_DROPOUT] = KERNEL(dropout),
    [PL_OP_TOPK_GATE] = KERNEL(topk_gate),
    [PL_OP_LSTM_CELL] = KERNEL_WORK(lstm_cell),
    [PL_OP_GRU_CELL] = KERNEL(gru_cell),
    [PL_OP_MATMUL_GRAD_A] = KERNEL(matmul_grad_a),
    [PL_OP_MATMUL_GRAD_B] = KERNEL(matmul_grad_b),
    [PL_OP_SUM_TO] = KERNEL(sum_to),
    [PL_OP_RELU_GRAD] = KERNEL(relu_grad),
    [PL_OP_GELU_GRAD] = KERNEL(gelu_grad),
    [PL_OP_TANH_GRAD] = KERNEL(tanh_grad),
    [PL_OP_SIGMOID_GRAD] = KERNEL(sigmoid_grad),
    [PL_OP_CLAMP_GRAD] = KERNEL(clamp_grad),
    [PL_OP_HARDSIGMOID_GRAD] = KERNEL(hardsigmoid_grad),
    [PL_OP_HARDSWISH_GRAD] = KERNEL(hardswish_grad),
    [PL_OP_ERF_GRAD] = KERNEL(erf_grad),
    [PL_OP_SOFTMAX_GRAD] = KERNEL(softmax_grad),
    [PL_OP_LOG_SOFTMAX_GRAD] = KERNEL(log_softmax_grad),
    [PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD] = KERNEL(softmax_cross_entropy_grad),
    [PL_OP_MSE_GRAD] = KERNEL(mse_grad),
    [PL_OP_LAYER_NORM_GRAD] = KERNEL_REDUCE(layer_norm_grad),
    [PL_OP_BATCH_NORM_GRAD] = KERNEL(batch_norm_grad),
    [PL_OP_CONV2D_GRAD_INPUT] = KERNEL_WORK(conv2d_grad_input),
    [PL_OP_CONV2D_GRAD_FILTER] = KERNEL_REDUCE(conv2d_grad_filter),
    [PL_OP_MAX_POOL_GRAD] = KERNEL(max_pool_grad),
    [PL_OP_AVG_POOL_GRAD] = KERNEL(avg_pool_grad),
    [PL_OP_GLOBAL_AVG_POOL_GRAD] = KERNEL(global_avg_pool_grad),
    [PL_OP_ADAPTIVE_AVG_POOL_GRAD] = KERNEL(adaptive_avg_pool_grad),
    [PL_OP_SLICE_GRAD] = KERNEL(slice_grad),
    [PL_OP_RESHAPE_LIKE] = KERNEL(copy),
    [PL_OP_BROADCAST_LIKE] = KERNEL(broadcast_like),
    [PL_OP_DROPOUT_GRAD] = KERNEL(dropout_grad),
    [PL_OP_LSTM_CELL_GRAD] = KERNEL_REDUCE(lstm_cell_grad),
    [PL_OP_GRU_CELL_GRAD] = KERNEL(gru_cell_grad),
    [PL_OP_ZEROS_LIKE] = KERNEL(zeros_like),
    [PL_OP_ACCUMULATE] = KERNEL(accumulate),
    [PL_OP_SCATTER_ACCUMULATE] = KERNEL(scatter_accumulate),
    [PL_OP_SGD_UPDATE] = KERNEL(sgd_update),
    [PL_OP_ADAM_UPDATE] = KERNEL(adam_update),
};

const pl_kernel_fns *pl_kernel_of(pl_op_kind kind)
{
    return kind < PL_OP_COUNT ? &kernel_table[kind] : NULL;
}
