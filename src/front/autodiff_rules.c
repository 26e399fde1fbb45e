/* The backward rule of every differentiable op: given the gradients of its outputs,
 * append the ops that compute the gradients of its inputs (see autodiff_impl.h for the
 * helpers). Each rule copies the forward op first: emitting may move the op array. */
#include <stdlib.h>

#include "autodiff_impl.h"

#define EMIT(kind, n_out, attrs, ...)                                                       \
    pl_ad_emit(ad, kind, (const int[]){__VA_ARGS__},                                        \
               (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), n_out, attrs)

static pl_op forward(const pl_autodiff *ad, int op)
{
    return ad->g->ops[op];
}

/* Output k of a gradient op (its first output `grads`, -1: it failed) as the gradient of
 * input first_input + k of forward op f, for k < n, where one is needed. */
static bool contribute_outputs(pl_autodiff *ad, const pl_op *f, int first_input, int grads,
                               int n)
{
    if (grads < 0)
        return false;
    for (int k = 0; k < n; k++)
        if (pl_ad_needs(ad, f->inputs[first_input + k]) &&
            !pl_ad_contribute(ad, f->inputs[first_input + k], pl_ad_output(ad, grads, k)))
            return false;
    return true;
}

bool pl_backward_matmul(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]), a = f.inputs[0], b = f.inputs[1];
    if (pl_ad_needs(ad, a) &&
        !pl_ad_contribute(ad, a, EMIT(PL_OP_MATMUL_GRAD_A, 1, NULL, dy, a, b)))
        return false;
    if (pl_ad_needs(ad, b) &&
        !pl_ad_contribute(ad, b, EMIT(PL_OP_MATMUL_GRAD_B, 1, NULL, dy, a, b)))
        return false;
    return true;
}

/* y = a + b or a - b: the gradient passes through (negated for b of sub); contribute
 * reduces broadcast axes. */
static bool backward_sum(pl_autodiff *ad, int op, float b_sign)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    if (pl_ad_needs(ad, f.inputs[0]) && !pl_ad_contribute(ad, f.inputs[0], dy))
        return false;
    if (!pl_ad_needs(ad, f.inputs[1]))
        return true;
    int db = dy;
    if (b_sign < 0) {
        pl_attrs negate;
        pl_attrs_default(&negate);
        negate.factor = -1;
        db = EMIT(PL_OP_SCALE, 1, &negate, dy);
    }
    return pl_ad_contribute(ad, f.inputs[1], db);
}

bool pl_backward_add(pl_autodiff *ad, int op)
{
    return backward_sum(ad, op, 1);
}

bool pl_backward_sub(pl_autodiff *ad, int op)
{
    return backward_sum(ad, op, -1);
}

bool pl_backward_mul(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    for (int i = 0; i < 2; i++) {
        int x = f.inputs[i], other = f.inputs[1 - i];
        if (pl_ad_needs(ad, x) && !pl_ad_contribute(ad, x, EMIT(PL_OP_MUL, 1, NULL, dy, other)))
            return false;
    }
    return true;
}

/* y = a / b: da = dy / b; db = -dy * a / b^2 = -(dy / b) * y. contribute reduces the
 * broadcast axes of each. */
bool pl_backward_div(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]), a = f.inputs[0], b = f.inputs[1], y = f.outputs[0];
    int dy_over_b = EMIT(PL_OP_DIV, 1, NULL, dy, b);
    if (dy_over_b < 0 || (pl_ad_needs(ad, a) && !pl_ad_contribute(ad, a, dy_over_b)))
        return false;
    if (!pl_ad_needs(ad, b))
        return true;
    pl_attrs negate;
    pl_attrs_default(&negate);
    negate.factor = -1;
    int product = EMIT(PL_OP_MUL, 1, NULL, dy_over_b, y);
    return product >= 0 && pl_ad_contribute(ad, b, EMIT(PL_OP_SCALE, 1, &negate, product));
}

bool pl_backward_scale(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_SCALE, 1, NULL, dy));
}

bool pl_backward_activation(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]), x = f.inputs[0], y = f.outputs[0];
    int dx;
    switch (f.kind) {
    case PL_OP_RELU: dx = EMIT(PL_OP_RELU_GRAD, 1, NULL, dy, y); break;
    case PL_OP_GELU: dx = EMIT(PL_OP_GELU_GRAD, 1, NULL, dy, x); break;
    case PL_OP_TANH: dx = EMIT(PL_OP_TANH_GRAD, 1, NULL, dy, y); break;
    case PL_OP_CLAMP: dx = EMIT(PL_OP_CLAMP_GRAD, 1, NULL, dy, x); break;
    case PL_OP_HARDSIGMOID: dx = EMIT(PL_OP_HARDSIGMOID_GRAD, 1, NULL, dy, x); break;
    case PL_OP_HARDSWISH: dx = EMIT(PL_OP_HARDSWISH_GRAD, 1, NULL, dy, x); break;
    case PL_OP_ERF: dx = EMIT(PL_OP_ERF_GRAD, 1, NULL, dy, x); break;
    case PL_OP_EXP: dx = EMIT(PL_OP_MUL, 1, NULL, dy, y); break;
    case PL_OP_LOG: dx = EMIT(PL_OP_DIV, 1, NULL, dy, x); break;
    case PL_OP_SQRT: dx = EMIT(PL_OP_SQRT_GRAD, 1, NULL, dy, y); break;
    case PL_OP_RSQRT: dx = EMIT(PL_OP_RSQRT_GRAD, 1, NULL, dy, y); break;
    case PL_OP_ABS: dx = EMIT(PL_OP_ABS_GRAD, 1, NULL, dy, x); break;
    case PL_OP_POW: dx = EMIT(PL_OP_POW_GRAD, 1, &f.attrs, dy, x); break;
    case PL_OP_SILU: dx = EMIT(PL_OP_SILU_GRAD, 1, NULL, dy, x); break;
    default: dx = EMIT(PL_OP_SIGMOID_GRAD, 1, NULL, dy, y); break;
    }
    return pl_ad_contribute(ad, x, dx);
}

bool pl_backward_softmax(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]), y = f.outputs[0];
    pl_attrs attrs = f.attrs;
    if (f.kind == PL_OP_TOPK_GATE)
        attrs.axis = -1; /* zero gates have zero gradient under the softmax rule */
    pl_op_kind kind = f.kind == PL_OP_LOG_SOFTMAX ? PL_OP_LOG_SOFTMAX_GRAD : PL_OP_SOFTMAX_GRAD;
    return pl_ad_contribute(ad, f.inputs[0], EMIT(kind, 1, &attrs, dy, y));
}

bool pl_backward_softmax_cross_entropy(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dloss = pl_ad_grad(ad, f.outputs[0]);
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD, 1, NULL,
                                                  f.inputs[0], f.inputs[1], dloss));
}

/* The vocabulary-parallel loss's ops (split_graph.h): a log-sum-exp's gradient is the
 * softmax, a picked logit's the label's one-hot, and the loss's, 1 / positions for each
 * position with a label in range, positive for the log-sum-exp and negative for the
 * picked logit. */
bool pl_backward_logsumexp(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_LOGSUMEXP_GRAD, 1, NULL, dy, f.inputs[0],
                                                  f.outputs[0]));
}

bool pl_backward_pick(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    return pl_ad_contribute(ad, f.inputs[0],
                            EMIT(PL_OP_PICK_GRAD, 1, NULL, dy, f.inputs[1], f.inputs[0]));
}

bool pl_backward_lse_cross_entropy(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dloss = pl_ad_grad(ad, f.outputs[0]);
    int both = EMIT(PL_OP_LSE_CROSS_ENTROPY_GRAD, 2, NULL, f.inputs[0], f.inputs[2], dloss);
    return contribute_outputs(ad, &f, 0, both, 2);
}

bool pl_backward_mse(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dloss = pl_ad_grad(ad, f.outputs[0]);
    int dpred = EMIT(PL_OP_MSE_GRAD, 1, NULL, f.inputs[0], f.inputs[1], dloss);
    if (pl_ad_needs(ad, f.inputs[0]) && !pl_ad_contribute(ad, f.inputs[0], dpred))
        return false;
    if (!pl_ad_needs(ad, f.inputs[1]))
        return true;
    pl_attrs negate;
    pl_attrs_default(&negate);
    negate.factor = -1;
    return pl_ad_contribute(ad, f.inputs[1], EMIT(PL_OP_SCALE, 1, &negate, dpred));
}

/* y = where(cond, a, b): dy goes to a where cond holds and to b elsewhere; contribute
 * reduces the broadcast axes. The mask gets none. */
bool pl_backward_where(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    if (!pl_ad_needs(ad, f.inputs[1]) && !pl_ad_needs(ad, f.inputs[2]))
        return true;
    int split = EMIT(PL_OP_WHERE_GRAD, 2, NULL, pl_ad_grad(ad, f.outputs[0]), f.inputs[0]);
    return contribute_outputs(ad, &f, 1, split, 2);
}

bool pl_backward_norm(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    pl_op_kind kind = f.kind == PL_OP_LAYER_NORM ? PL_OP_LAYER_NORM_GRAD : PL_OP_BATCH_NORM_GRAD;
    int dx = EMIT(kind, 3, NULL, pl_ad_grad(ad, f.outputs[0]), f.inputs[0], f.inputs[1]);
    return contribute_outputs(ad, &f, 0, dx, 3);
}

/* The forward convolution and its two gradients, by spatial axes. */
static const pl_op_kind conv_kinds[3][3] = {
    {PL_OP_CONV1D, PL_OP_CONV1D_GRAD_INPUT, PL_OP_CONV1D_GRAD_FILTER},
    {PL_OP_CONV2D, PL_OP_CONV2D_GRAD_INPUT, PL_OP_CONV2D_GRAD_FILTER},
    {PL_OP_CONV3D, PL_OP_CONV3D_GRAD_INPUT, PL_OP_CONV3D_GRAD_FILTER},
};

static const pl_op_kind *conv_family(const pl_autodiff *ad, const pl_op *f)
{
    return conv_kinds[ad->g->tensors[f->inputs[0]].rank - 3];
}

bool pl_backward_conv(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    const pl_op_kind *kinds = conv_family(ad, &f);
    int dy = pl_ad_grad(ad, f.outputs[0]), x = f.inputs[0], w = f.inputs[1];
    if (pl_ad_needs(ad, x) && !pl_ad_contribute(ad, x, EMIT(kinds[1], 1, NULL, dy, x, w)))
        return false;
    bool bias = f.n_inputs == 3;
    if (!pl_ad_needs(ad, w) && !(bias && pl_ad_needs(ad, f.inputs[2])))
        return true;
    int dw = EMIT(kinds[2], bias ? 2 : 1, NULL, dy, x, w);
    if (dw < 0 || (pl_ad_needs(ad, w) && !pl_ad_contribute(ad, w, dw)))
        return false;
    return !bias || !pl_ad_needs(ad, f.inputs[2]) ||
           pl_ad_contribute(ad, f.inputs[2], pl_ad_output(ad, dw, 1));
}

/* y = the convolution's input gradient of x, so dx is the convolution of dy and dw its
 * filter gradient with the roles of x and dy exchanged; the bias's gradient sums dy
 * over every axis but the channels' (the samples' sum as any broadcast bias's). */
bool pl_backward_conv_transpose(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    const pl_op_kind *kinds = conv_family(ad, &f);
    int dy = pl_ad_grad(ad, f.outputs[0]), x = f.inputs[0], w = f.inputs[1];
    if (pl_ad_needs(ad, x) && !pl_ad_contribute(ad, x, EMIT(kinds[0], 1, NULL, dy, w)))
        return false;
    if (pl_ad_needs(ad, w) && !pl_ad_contribute(ad, w, EMIT(kinds[2], 1, NULL, x, dy, w)))
        return false;
    if (f.n_inputs < 3 || !pl_ad_needs(ad, f.inputs[2]))
        return true;
    int rank = ad->g->tensors[x].rank;
    int64_t *axes = pl_arena_alloc(&ad->g->arena, (size_t)rank * sizeof *axes);
    if (!axes)
        return pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory"), false;
    for (int a = 2; a < rank; a++)
        axes[a - 2] = a;
    pl_attrs sum; /* over the spatial axes; contributing [N,O] to [O] sums the samples */
    pl_attrs_default(&sum);
    sum.axes = (pl_int_list){rank - 2, axes};
    return pl_ad_contribute(ad, f.inputs[2], EMIT(PL_OP_REDUCE_SUM, 1, &sum, dy));
}

bool pl_backward_pool(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    /* One gradient kind for every count of spatial axes: x's rank says which. */
    static const pl_op_kind grads[][2] = {
        {PL_OP_MAX_POOL, PL_OP_MAX_POOL_GRAD},
        {PL_OP_MAX_POOL1D, PL_OP_MAX_POOL_GRAD},
        {PL_OP_MAX_POOL3D, PL_OP_MAX_POOL_GRAD},
        {PL_OP_AVG_POOL, PL_OP_AVG_POOL_GRAD},
        {PL_OP_AVG_POOL1D, PL_OP_AVG_POOL_GRAD},
        {PL_OP_AVG_POOL3D, PL_OP_AVG_POOL_GRAD},
        {PL_OP_ADAPTIVE_AVG_POOL, PL_OP_ADAPTIVE_AVG_POOL_GRAD},
        {PL_OP_ADAPTIVE_AVG_POOL1D, PL_OP_ADAPTIVE_AVG_POOL_GRAD},
        {PL_OP_ADAPTIVE_AVG_POOL3D, PL_OP_ADAPTIVE_AVG_POOL_GRAD},
    };
    pl_op_kind kind = PL_OP_GLOBAL_AVG_POOL_GRAD;
    for (size_t i = 0; i < sizeof grads / sizeof *grads; i++)
        if (grads[i][0] == f.kind)
            kind = grads[i][1];
    return pl_ad_contribute(ad, f.inputs[0],
                            EMIT(kind, 1, NULL, pl_ad_grad(ad, f.outputs[0]), f.inputs[0]));
}

bool pl_backward_concat(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int dy = pl_ad_grad(ad, f.outputs[0]);
    const pl_tensor *y = &ad->g->tensors[f.outputs[0]];
    int64_t axis = f.attrs.axis < 0 ? f.attrs.axis + y->rank : f.attrs.axis, offset = 0;
    for (int i = 0; i < f.n_inputs; i++) {
        int x = f.inputs[i];
        int64_t size = ad->g->tensors[x].dims[axis];
        if (pl_ad_needs(ad, x)) {
            pl_attrs cut;
            pl_attrs_default(&cut);
            cut.axis = axis;
            cut.start = offset;
            cut.end = offset + size;
            if (!pl_ad_contribute(ad, x, EMIT(PL_OP_SLICE, 1, &cut, dy)))
                return false;
        }
        offset += size;
    }
    return true;
}

bool pl_backward_split(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int *parts = malloc((size_t)f.n_outputs * sizeof *parts);
    if (!parts)
        return false;
    bool ok = true;
    for (int i = 0; i < f.n_outputs && ok; i++)
        ok = (parts[i] = pl_ad_grad_or_zeros(ad, f.outputs[i])) >= 0;
    pl_attrs join;
    pl_attrs_default(&join);
    join.axis = f.attrs.axis;
    ok = ok && pl_ad_contribute(ad, f.inputs[0],
                                pl_ad_emit(ad, PL_OP_CONCAT, parts, f.n_outputs, 1, &join));
    free(parts);
    return ok;
}

bool pl_backward_slice(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_SLICE_GRAD, 1, NULL,
                                                  pl_ad_grad(ad, f.outputs[0]), f.inputs[0]));
}

bool pl_backward_reshape(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_RESHAPE_LIKE, 1, NULL,
                                                  pl_ad_grad(ad, f.outputs[0]), f.inputs[0]));
}

bool pl_backward_transpose(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int64_t *inverse = pl_arena_alloc(&ad->g->arena, (size_t)f.attrs.perm.n * sizeof *inverse);
    if (!inverse)
        return false;
    for (int a = 0; a < f.attrs.perm.n; a++)
        inverse[f.attrs.perm.v[a]] = a;
    pl_attrs back = f.attrs;
    back.perm = (pl_int_list){f.attrs.perm.n, inverse};
    return pl_ad_contribute(ad, f.inputs[0],
                            EMIT(PL_OP_TRANSPOSE, 1, &back, pl_ad_grad(ad, f.outputs[0])));
}

bool pl_backward_embedding(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    return pl_ad_contribute_rows(ad, f.inputs[0], pl_ad_grad(ad, f.outputs[0]), f.inputs[1],
                                 f.attrs.start);
}

bool pl_backward_reduce(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    const pl_tensor *x = &ad->g->tensors[f.inputs[0]], *y = &ad->g->tensors[f.outputs[0]];
    pl_attrs spread = f.attrs;
    spread.factor = f.kind == PL_OP_REDUCE_MEAN
                        ? (double)pl_tensor_elements(y) / (double)pl_tensor_elements(x)
                        : 1.0;
    return pl_ad_contribute(ad, f.inputs[0], EMIT(PL_OP_BROADCAST_LIKE, 1, &spread,
                                                  pl_ad_grad(ad, f.outputs[0]), f.inputs[0]));
}

bool pl_backward_dropout(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    return pl_ad_contribute(ad, f.inputs[0],
                            EMIT(PL_OP_DROPOUT_GRAD, 1, NULL, pl_ad_grad(ad, f.outputs[0])));
}

/* gru_cell(gx [, gh [, h]]) -> h'; gru_cell_grad(dh', gx [, gh [, h]]) -> one gradient per
 * input (contribute sums dgh over the rows where gh is the bias alone). */
bool pl_backward_gru_cell(pl_autodiff *ad, int op)
{
    pl_op f = forward(ad, op);
    int inputs[4] = {pl_ad_grad(ad, f.outputs[0])};
    for (int i = 0; i < f.n_inputs; i++)
        inputs[1 + i] = f.inputs[i];
    int first = pl_ad_emit(ad, PL_OP_GRU_CELL_GRAD, inputs, 1 + f.n_inputs, f.n_inputs, NULL);
    if (first < 0)
        return false;
    for (int i = 0; i < f.n_inputs; i++)
        if (pl_ad_needs(ad, f.inputs[i]) &&
            !pl_ad_contribute(ad, f.inputs[i], pl_ad_output(ad, first, i)))
            return false;
    return true;
}
