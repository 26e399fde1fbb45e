/* Shape inference and FLOP counts of the internal ops that automatic differentiation
 * writes: their outputs take the shapes of the tensors they are gradients of. Autodiff
 * is their only author, so the checks here guard against its own mistakes. */
#include <string.h>

#include "graph.h"
#include "ops_impl.h"

static bool like(pl_infer_ctx *ctx, int out, int in)
{
    const pl_tensor *src = ctx->in[in];
    pl_tensor *dst = ctx->out[out];
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof dst->dims);
    dst->batch_axis = src->batch_axis;
    dst->batch_group = src->batch_group;
    return true;
}

bool pl_infer_like_first(pl_infer_ctx *ctx) { return like(ctx, 0, 0); }
bool pl_infer_like_second(pl_infer_ctx *ctx) { return like(ctx, 0, 1); }
bool pl_infer_like_third(pl_infer_ctx *ctx) { return like(ctx, 0, 2); }

bool pl_infer_norm_grad(pl_infer_ctx *ctx)
{
    return like(ctx, 0, 1) && like(ctx, 1, 2) && like(ctx, 2, 2);
}

bool pl_infer_where_grad(pl_infer_ctx *ctx)
{
    return like(ctx, 0, 0) && like(ctx, 1, 0);
}


bool pl_infer_conv_grad_filter(pl_infer_ctx *ctx)
{
    like(ctx, 0, 2);
    if (ctx->n_out == 2) { /* the bias gradient: one per output channel */
        pl_tensor *db = ctx->out[1];
        db->dtype = PL_F32;
        db->rank = 1;
        db->dims[0] = ctx->in[2]->dims[0];
        db->batch_axis = PL_NO_BATCH;
    }
    return true;
}

/* dh', dc', x, w, b [, h, c] [, gates] -> dx, dz [, dh, dc]: the gradients of the
 * cell's activation inputs and of its gate pre-activations z = [x | h].w + b, from which
 * autodiff makes those of w and b; projected, dh', dc', gx [, w, h, c] [, gates] -> dz
 * [, dh, dc], dz being gx's gradient (ops.h: pl_lstm_cell_projected). */
bool pl_infer_lstm_cell_grad(pl_infer_ctx *ctx)
{
    int cell_inputs = pl_lstm_cell_grad_cell_inputs(ctx->n_out);
    if (ctx->n_in != 2 + cell_inputs && ctx->n_in != 3 + cell_inputs)
        return pl_infer_fail(ctx, -1, -1, "%d outputs need %d or %d inputs", ctx->n_out,
                             2 + cell_inputs, 3 + cell_inputs);
    bool projected = pl_lstm_cell_grad_projected(ctx->n_out);
    int dz = projected ? 0 : 1, state = projected ? 4 : 5; /* dz's output, h's input */
    if (!projected)
        like(ctx, 0, 2);
    like(ctx, dz, 2); /* dz: x's rows, b's 4H columns; or gx's shape */
    if (!projected)
        ctx->out[dz]->dims[1] = ctx->in[4]->dims[0];
    if (ctx->n_out > dz + 1) {
        like(ctx, dz + 1, state);
        like(ctx, dz + 2, state + 1);
    }
    return true;
}

/* dh', gx [, gh [, h]] -> dgx [, dgh [, dh]]: one gradient per forward input, dgh with
 * gx's rows even where gh is the bias alone (autodiff sums it over the rows). */
bool pl_infer_gru_cell_grad(pl_infer_ctx *ctx)
{
    if (ctx->n_out != ctx->n_in - 1)
        return pl_infer_fail(ctx, -1, -1, "%d inputs need %d outputs", ctx->n_in,
                             ctx->n_in - 1);
    like(ctx, 0, 1);
    if (ctx->n_out > 1)
        like(ctx, 1, 1);
    if (ctx->n_out > 2)
        like(ctx, 2, 3);
    return true;
}

bool pl_infer_in_place(pl_infer_ctx *ctx)
{
    const pl_tensor *target = ctx->in[0];
    if (target->kind != PL_TENSOR_STATE && target->kind != PL_TENSOR_PARAM)
        return pl_infer_fail(ctx, 0, -1, "\"%s\" is updated in place, so it must be a "
                             "parameter or state", target->name);
    return true;
}

double pl_flops_matmul_grad(const pl_infer_ctx *ctx)
{
    /* The same product as the forward pass: 2 * |dy| * k. */
    const pl_tensor *dy = ctx->in[0], *a = ctx->in[1];
    int64_t k = ctx->attrs->transpose_a ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    return 2.0 * (double)pl_tensor_elements(dy) * (double)k;
}

double pl_flops_conv_grad(const pl_infer_ctx *ctx)
{
    /* The forward's product: 2 * |dy| * the filter's elements per output channel. */
    const pl_tensor *dy = ctx->in[0], *w = ctx->in[2];
    return 2.0 * (double)pl_tensor_elements(dy) *
           (double)(pl_tensor_elements(w) / w->dims[0]);
}

double pl_flops_lstm_cell_grad(const pl_infer_ctx *ctx)
{
    /* dx|dh: one product, and a second to recompute the gates if none were saved; a
     * projected cell without state has neither. */
    int cell_inputs = pl_lstm_cell_grad_cell_inputs(ctx->n_out);
    double n = (double)ctx->in[2]->dims[0], h = (double)ctx->in[0]->dims[1];
    double rows = cell_inputs == 1 ? 0.0 : (double)ctx->in[3]->dims[0];
    double products = ctx->n_in == 2 + cell_inputs ? 2.0 : 1.0;
    return products * 2.0 * n * rows * 4.0 * h + 40.0 * n * h;
}

double pl_flops_gru_cell_grad(const pl_infer_ctx *ctx)
{
    return 30.0 * (double)pl_tensor_elements(ctx->in[0]);
}

double pl_flops_elements_in0(const pl_infer_ctx *ctx)
{
    return (double)pl_tensor_elements(ctx->in[0]);
}

double pl_flops_elements_in1(const pl_infer_ctx *ctx)
{
    return (double)pl_tensor_elements(ctx->in[1]);
}

double pl_flops_elements_out0x4(const pl_infer_ctx *ctx)
{
    return 4.0 * (double)pl_tensor_elements(ctx->out[0]);
}

double pl_flops_update(const pl_infer_ctx *ctx)
{
    return 10.0 * (double)pl_tensor_elements(ctx->in[0]);
}

double pl_flops_zero(const pl_infer_ctx *ctx)
{
    return 0;
}
