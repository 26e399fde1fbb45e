/* Private to the op table: shape inference and FLOP counts of the internal (gradient,
 * optimiser and vocabulary-parallel loss) ops, defined in ops_grad.c and ops_vocab.c and
 * listed in the table in ops.c. */
#ifndef PLACER_OPS_IMPL_H
#define PLACER_OPS_IMPL_H

#include "ops.h"

bool pl_infer_like_first(pl_infer_ctx *ctx);   /* one output shaped like input 0 */
bool pl_infer_like_second(pl_infer_ctx *ctx);  /* one output shaped like input 1 */
bool pl_infer_like_third(pl_infer_ctx *ctx);   /* one output shaped like input 2 */
bool pl_infer_norm_grad(pl_infer_ctx *ctx);    /* dx like x, dgamma and dbeta like gamma */
bool pl_infer_where_grad(pl_infer_ctx *ctx);   /* both outputs like input 0 */
bool pl_infer_conv_grad_filter(pl_infer_ctx *ctx); /* dw like w [, dbias] */
bool pl_infer_lstm_cell_grad(pl_infer_ctx *ctx);
bool pl_infer_gru_cell_grad(pl_infer_ctx *ctx);
bool pl_infer_in_place(pl_infer_ctx *ctx);     /* accumulators and updates: no outputs */

double pl_flops_matmul_grad(const pl_infer_ctx *ctx);
double pl_flops_conv_grad(const pl_infer_ctx *ctx);
double pl_flops_lstm_cell_grad(const pl_infer_ctx *ctx);
double pl_flops_gru_cell_grad(const pl_infer_ctx *ctx);
double pl_flops_elements_in0(const pl_infer_ctx *ctx);   /* one per element of input 0 */
double pl_flops_elements_in1(const pl_infer_ctx *ctx);   /* one per element of input 1 */
double pl_flops_elements_out0x4(const pl_infer_ctx *ctx);
double pl_flops_update(const pl_infer_ctx *ctx);         /* ~10 per parameter element */
double pl_flops_zero(const pl_infer_ctx *ctx);

/* The vocabulary-parallel loss's ops (ops_vocab.c). */
bool pl_infer_logsumexp(pl_infer_ctx *ctx);          /* x [..., C] -> [..., 1] */
bool pl_infer_pick(pl_infer_ctx *ctx);               /* x [..., C], labels [...] -> [..., 1] */
bool pl_infer_lse_cross_entropy(pl_infer_ctx *ctx);  /* lse, picked, labels -> a scalar */
double pl_flops_logsumexp(const pl_infer_ctx *ctx);

#endif
