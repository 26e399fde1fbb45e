/* What the backward rules (autodiff_rules.c) see of the autodiff driver (autodiff.c). */
#ifndef PLACER_AUTODIFF_IMPL_H
#define PLACER_AUTODIFF_IMPL_H

#include "autodiff.h"
#include "ops.h"

typedef struct pl_lstm_block pl_lstm_block; /* autodiff_lstm.c */

typedef struct pl_autodiff {
    pl_graph *g;
    pl_error *err;
    int n_model_tensors; /* the arrays below cover the model's tensors, not those added */
    int *grad;      /* per tensor: its gradient tensor so far, or -1 */
    bool *needs;    /* per tensor: a parameter's gradient flows through it */
    int *home;      /* per parameter tensor: its home group, or -1 */
    int *accumulator; /* per parameter tensor: "PARAM/grad", or -1 */
    int op;         /* the forward op being differentiated */
    int emitted;    /* a counter for unique names */
    pl_lstm_block *lstm_blocks; /* per LSTM weight: the steps waiting for its gradient */
    int n_lstm_blocks;
} pl_autodiff;

/* The gradient of tensor t, or -1 when none reaches it. */
int pl_ad_grad(const pl_autodiff *ad, int t);
/* The gradient of t, or a new zeros tensor shaped like t when none reaches it. */
int pl_ad_grad_or_zeros(pl_autodiff *ad, int t);
/* Whether input t of the current op needs a gradient. */
bool pl_ad_needs(const pl_autodiff *ad, int t);
/* Appends a backward op (group: the current forward op) and returns its first output
 * tensor, or -1 on failure (err set). attrs NULL: the forward op's attributes. */
int pl_ad_emit(pl_autodiff *ad, pl_op_kind kind, const int *inputs, int n_inputs,
               int n_outputs, const pl_attrs *attrs);
/* Output k of the op that produced tensor t (its outputs are consecutive tensors). */
int pl_ad_output(const pl_autodiff *ad, int first_output, int k);
/* Adds `gradient` to tensor t's gradient: summed for activations, accumulated into the
 * state for parameters. Reduces over broadcast axes first when shapes differ. */
bool pl_ad_contribute(pl_autodiff *ad, int t, int gradient);
/* An embedding table's rows: acc[ids - start] += dy, without a dense gradient. */
bool pl_ad_contribute_rows(pl_autodiff *ad, int table, int dy, int ids, int64_t start);

/* Backward rules, one per differentiable forward op kind (autodiff_rules.c). */
bool pl_backward_matmul(pl_autodiff *ad, int op);
bool pl_backward_add(pl_autodiff *ad, int op);
bool pl_backward_sub(pl_autodiff *ad, int op);
bool pl_backward_mul(pl_autodiff *ad, int op);
bool pl_backward_div(pl_autodiff *ad, int op);
bool pl_backward_scale(pl_autodiff *ad, int op);
/* relu, gelu, tanh, sigmoid, clamp, hardsigmoid, hardswish, erf, exp, log, sqrt, rsqrt,
 * abs, pow, silu */
bool pl_backward_activation(pl_autodiff *ad, int op);
bool pl_backward_softmax(pl_autodiff *ad, int op);    /* softmax, log_softmax, topk_gate */
bool pl_backward_softmax_cross_entropy(pl_autodiff *ad, int op);
bool pl_backward_mse(pl_autodiff *ad, int op);
bool pl_backward_logsumexp(pl_autodiff *ad, int op); /* the vocabulary-parallel loss's */
bool pl_backward_pick(pl_autodiff *ad, int op);
bool pl_backward_lse_cross_entropy(pl_autodiff *ad, int op);
bool pl_backward_norm(pl_autodiff *ad, int op);       /* layer_norm, batch_norm */
bool pl_backward_conv(pl_autodiff *ad, int op);      /* conv1d, conv2d, conv3d */
bool pl_backward_conv_transpose(pl_autodiff *ad, int op); /* conv_transpose1d to 3d */
bool pl_backward_pool(pl_autodiff *ad, int op);       /* max, avg, global avg */
bool pl_backward_concat(pl_autodiff *ad, int op);
bool pl_backward_split(pl_autodiff *ad, int op);
bool pl_backward_slice(pl_autodiff *ad, int op);
bool pl_backward_reshape(pl_autodiff *ad, int op);    /* reshape, flatten */
bool pl_backward_transpose(pl_autodiff *ad, int op);
bool pl_backward_embedding(pl_autodiff *ad, int op);
bool pl_backward_reduce(pl_autodiff *ad, int op);     /* reduce_sum, reduce_mean */
bool pl_backward_dropout(pl_autodiff *ad, int op);
bool pl_backward_where(pl_autodiff *ad, int op);
bool pl_backward_lstm_cell(pl_autodiff *ad, int op); /* autodiff_lstm.c */
bool pl_backward_gru_cell(pl_autodiff *ad, int op);
/* The LSTM weight gradients waiting on an output of forward op `op` (a computed weight or
 * bias), before the walk differentiates `op`. */
bool pl_ad_flush_lstm(pl_autodiff *ad, int op);
/* The LSTM weight gradients of the steps still waiting, after the walk. */
bool pl_ad_finish_lstm(pl_autodiff *ad);

#endif
