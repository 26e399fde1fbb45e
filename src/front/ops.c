/* The op table, with each op's shape inference and FLOP count.
 *
 * Shape inference checks everything an op needs of its inputs (ranks, dims, dtypes,
 * attributes against shapes) and keeps the batch rule of graph.h: a batched tensor's
 * batch axis is never reduced, cut, joined or mixed with other axes; ops that move axes
 * (transpose, reshape, broadcasting) carry it to its new place, and ops that need the
 * batch on a particular axis (convolutions: axis 0) say so. Messages show the shapes
 * involved, since that is what a person fixes. */
#include "ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "autodiff_impl.h"
#include "ops_impl.h"

bool pl_infer_fail(pl_infer_ctx *ctx, int blame_input, int blame_attr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
    va_end(ap);
    ctx->blame_input = blame_input;
    ctx->blame_attr = blame_attr;
    return false;
}

/* ---- helpers ---------------------------------------------------------------------- */

#define NO_INPUT (-1)
#define NO_ATTR (-1)

typedef struct shape_text {
    char s[96];
} shape_text;

static shape_text shape_of(const pl_tensor *t)
{
    shape_text text;
    pl_shape_format(t, text.s, sizeof text.s);
    return text;
}

static const char *ordinal(int i)
{
    static const char *const names[] = {"first", "second", "third", "fourth", "fifth"};
    return i < 5 ? names[i] : "next";
}

static void set_output(pl_tensor *out, pl_dtype dtype, int rank, const int64_t *dims,
                       int batch_axis)
{
    out->dtype = dtype;
    out->rank = rank;
    memcpy(out->dims, dims, (size_t)rank * sizeof *dims);
    out->batch_axis = batch_axis;
}

static void copy_shape(pl_tensor *out, const pl_tensor *in)
{
    set_output(out, in->dtype, in->rank, in->dims, in->batch_axis);
}

static bool batched(const pl_tensor *t)
{
    return t->batch_axis != PL_NO_BATCH;
}

static bool need_f32(pl_infer_ctx *ctx, int i)
{
    if (ctx->in[i]->dtype == PL_F32)
        return true;
    return pl_infer_fail(ctx, i, NO_ATTR, "the %s input \"%s\" must be f32, not %s",
                         ordinal(i), ctx->in[i]->name,
                         pl_dtype_name(ctx->in[i]->dtype));
}

static bool need_rank(pl_infer_ctx *ctx, int i, int min_rank, int max_rank)
{
    int r = ctx->in[i]->rank;
    if (r >= min_rank && r <= max_rank)
        return true;
    shape_text s = shape_of(ctx->in[i]);
    if (min_rank == max_rank)
        return pl_infer_fail(ctx, i, NO_ATTR, "\"%s\" must have rank %d, but it is %s",
                             ctx->in[i]->name, min_rank, s.s);
    return pl_infer_fail(ctx, i, NO_ATTR, "\"%s\" must have rank %d to %d, but it is %s",
                         ctx->in[i]->name, min_rank, max_rank, s.s);
}

static bool need_unbatched(pl_infer_ctx *ctx, int i, const char *what)
{
    if (!batched(ctx->in[i]))
        return true;
    return pl_infer_fail(ctx, i, NO_ATTR, "the %s \"%s\" must not depend on the batch",
                         what, ctx->in[i]->name);
}

/* Ops whose kernels read the batch as one particular axis (NCHW images, the rows of a
 * cell's state): a batched input must hold it there. */
static bool need_batch_on(pl_infer_ctx *ctx, int i, int axis)
{
    const pl_tensor *t = ctx->in[i];
    if (!batched(t) || t->batch_axis == axis)
        return true;
    return pl_infer_fail(ctx, i, NO_ATTR, "\"%s\" has the batch on axis %d, but this op "
                         "needs it on axis %d: transpose it there first", t->name,
                         t->batch_axis, axis);
}

/* Ops that work along the last axis (normalising, gating): it must not be the batch. */
static bool need_batch_not_last(pl_infer_ctx *ctx, int i, const char *verb)
{
    const pl_tensor *t = ctx->in[i];
    if (!batched(t) || t->batch_axis != t->rank - 1)
        return true;
    return pl_infer_fail(ctx, i, NO_ATTR, "cannot %s the last axis %d of \"%s\": it is the "
                         "batch axis", verb, t->rank - 1, t->name);
}

/* Resolves a possibly negative axis of a rank-`rank` tensor into [0, rank). */
static bool resolve_axis(pl_infer_ctx *ctx, pl_attr_id attr, int64_t axis, int rank,
                         int64_t *resolved)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return pl_infer_fail(ctx, NO_INPUT, attr, "axis %lld is out of range for rank %d",
                             (long long)axis, rank);
    *resolved = a;
    return true;
}

static bool keep_batch_axis(pl_infer_ctx *ctx, int i, pl_attr_id attr, int64_t axis,
                            const char *verb)
{
    if (axis != ctx->in[i]->batch_axis)
        return true;
    return pl_infer_fail(ctx, i, attr,
                         "cannot %s axis %lld of \"%s\": it is the batch axis", verb,
                         (long long)axis, ctx->in[i]->name);
}

/* The axis of a broadcast result of rank `rank` that holds operand t's batch, where t's
 * last `trim` axes are left out; PL_NO_BATCH when t's batch is not among the others. */
static int broadcast_batch_axis(const pl_tensor *t, int rank, int trim)
{
    if (!batched(t) || t->batch_axis >= t->rank - trim)
        return PL_NO_BATCH;
    return rank - (t->rank - trim) + t->batch_axis;
}

/* NumPy broadcasting of `n` shapes (aligned at the last axis) into `out_dims`, keeping the
 * batch rule: batched operands hold the batch on the same result axis, and an unbatched
 * one that reaches that axis has size 1 there. `trim` drops each shape's last `trim`
 * axes first (matmul broadcasts only its leading axes; a batch among those it leaves to
 * matmul). */
static bool broadcast(pl_infer_ctx *ctx, const int *which, int n, int trim, int *out_rank,
                      int64_t *out_dims, int *out_batch_axis)
{
    int rank = 0;
    for (int j = 0; j < n; j++) {
        const pl_tensor *t = ctx->in[which[j]];
        if (t->rank - trim > rank)
            rank = t->rank - trim;
    }
    for (int a = 0; a < rank; a++)
        out_dims[a] = 1;
    for (int j = 0; j < n; j++) {
        const pl_tensor *t = ctx->in[which[j]];
        int r = t->rank - trim, offset = rank - r;
        for (int a = 0; a < r; a++) {
            int64_t d = t->dims[a], *o = &out_dims[offset + a];
            if (d == *o || d == 1)
                continue;
            if (*o == 1) {
                *o = d;
                continue;
            }
            shape_text s0 = shape_of(ctx->in[which[0]]), s1 = shape_of(t);
            return pl_infer_fail(ctx, which[j], NO_ATTR,
                                 "shapes do not broadcast: %s and %s (axis %d: %lld vs %lld)",
                                 s0.s, s1.s, offset + a, (long long)*o, (long long)d);
        }
    }
    int batch_axis = PL_NO_BATCH, first = -1;
    for (int j = 0; j < n; j++) {
        int here = broadcast_batch_axis(ctx->in[which[j]], rank, trim);
        if (here == PL_NO_BATCH)
            continue;
        if (batch_axis != PL_NO_BATCH && here != batch_axis)
            return pl_infer_fail(ctx, which[j], NO_ATTR,
                                 "the batched \"%s\" would hold the batch on axis %d of the "
                                 "result, but \"%s\" on axis %d", ctx->in[which[j]]->name,
                                 here, ctx->in[first]->name, batch_axis);
        batch_axis = here;
        first = which[j];
    }
    for (int j = 0; j < n && batch_axis != PL_NO_BATCH; j++) {
        const pl_tensor *t = ctx->in[which[j]];
        int a = batch_axis - (rank - (t->rank - trim));
        if (!batched(t) && a >= 0 && t->dims[a] != 1)
            return pl_infer_fail(ctx, which[j], NO_ATTR,
                                 "\"%s\" is not batched but would stretch over the batch "
                                 "axis %d (size %lld, expected 1 or fewer axes)",
                                 t->name, batch_axis, (long long)t->dims[a]);
    }
    *out_rank = rank;
    *out_batch_axis = batch_axis;
    return true;
}

static int64_t elements(const pl_tensor *t)
{
    return pl_tensor_elements(t);
}

/* ---- element-wise --------------------------------------------------------------------- */

static bool infer_unary(pl_infer_ctx *ctx)
{
    if (!need_f32(ctx, 0))
        return false;
    copy_shape(ctx->out[0], ctx->in[0]);
    return true;
}

/* Every input broadcast with the others: binary ops, and where's cond, a and b. */
static bool infer_binary(pl_infer_ctx *ctx)
{
    static const int all[] = {0, 1, 2};
    for (int i = 0; i < ctx->n_in; i++)
        if (!need_f32(ctx, i))
            return false;
    int rank, batch_axis;
    int64_t dims[PL_MAX_RANK];
    if (!broadcast(ctx, all, ctx->n_in, 0, &rank, dims, &batch_axis))
        return false;
    set_output(ctx->out[0], PL_F32, rank, dims, batch_axis);
    return true;
}

static bool infer_dropout(pl_infer_ctx *ctx)
{
    if (ctx->attrs->rate >= 1.0)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_RATE, "rate must be below 1, not %g",
                             ctx->attrs->rate);
    return infer_unary(ctx);
}

/* clamp: "min" and "max" are each optional, but one must be given and they must not cross. */
static bool infer_clamp(pl_infer_ctx *ctx)
{
    const pl_attrs *at = ctx->attrs;
    uint32_t bounds = PL_ATTR_BIT(PL_ATTR_MIN) | PL_ATTR_BIT(PL_ATTR_MAX);
    if (!(at->given & bounds))
        return pl_infer_fail(ctx, NO_INPUT, NO_ATTR, "needs \"min\", \"max\" or both");
    if (at->clamp_min > at->clamp_max)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_MAX, "max %g is below min %g",
                             at->clamp_max, at->clamp_min);
    return infer_unary(ctx);
}

static double flops_none(const pl_infer_ctx *ctx) { return 0; }
static double flops_out1(const pl_infer_ctx *ctx) { return (double)elements(ctx->out[0]); }
static double flops_out2(const pl_infer_ctx *ctx) { return 2.0 * elements(ctx->out[0]); }
static double flops_out4(const pl_infer_ctx *ctx) { return 4.0 * elements(ctx->out[0]); }
static double flops_out5(const pl_infer_ctx *ctx) { return 5.0 * elements(ctx->out[0]); }
static double flops_out8(const pl_infer_ctx *ctx) { return 8.0 * elements(ctx->out[0]); }
static double flops_in1(const pl_infer_ctx *ctx) { return (double)elements(ctx->in[0]); }
static double flops_in3(const pl_infer_ctx *ctx) { return 3.0 * elements(ctx->in[0]); }
static double flops_in5(const pl_infer_ctx *ctx) { return 5.0 * elements(ctx->in[0]); }

/* ---- matmul --------------------------------------------------------------------------- */

static void matmul_dims(const pl_infer_ctx *ctx, int64_t *m, int64_t *k, int64_t *k_b,
                        int64_t *n)
{
    const pl_tensor *a = ctx->in[0], *b = ctx->in[1];
    int64_t a_rows = a->dims[a->rank - 2], a_cols = a->dims[a->rank - 1];
    int64_t b_rows = b->dims[b->rank - 2], b_cols = b->dims[b->rank - 1];
    *m = ctx->attrs->transpose_a ? a_cols : a_rows;
    *k = ctx->attrs->transpose_a ? a_rows : a_cols;
    *k_b = ctx->attrs->transpose_b ? b_cols : b_rows;
    *n = ctx->attrs->transpose_b ? b_rows : b_cols;
}

static bool infer_matmul(pl_infer_ctx *ctx)
{
    const pl_tensor *a = ctx->in[0], *b = ctx->in[1];
    if (!need_f32(ctx, 0) || !need_f32(ctx, 1) || !need_rank(ctx, 0, 2, PL_MAX_RANK) ||
        !need_rank(ctx, 1, 2, PL_MAX_RANK))
        return false;
    int64_t m, k, k_b, n;
    matmul_dims(ctx, &m, &k, &k_b, &n);
    if (k != k_b) {
        shape_text sa = shape_of(a), sb = shape_of(b);
        return pl_infer_fail(ctx, 1, NO_ATTR,
                             "inner dimensions differ: a is %s%s, b is %s%s (%lld vs %lld)",
                             sa.s, ctx->attrs->transpose_a ? " transposed" : "", sb.s,
                             ctx->attrs->transpose_b ? " transposed" : "", (long long)k,
                             (long long)k_b);
    }
    /* A batch among the matrix axes may only be a's rows (the result's rows); a leading
     * one broadcasts. */
    bool a_rows_batched = batched(a) && a->batch_axis >= a->rank - 2;
    int a_rows = ctx->attrs->transpose_a ? a->rank - 1 : a->rank - 2;
    if (a_rows_batched && a->batch_axis != a_rows)
        return pl_infer_fail(ctx, 0, ctx->attrs->transpose_a ? PL_ATTR_TRANSPOSE_A : NO_ATTR,
                             "%s the batched \"%s\" would sum over the batch",
                             ctx->attrs->transpose_a ? "transposing" : "multiplying", a->name);
    if (batched(b) && b->batch_axis >= b->rank - 2)
        return pl_infer_fail(ctx, 1, NO_ATTR,
                             "the batched \"%s\" has the batch as a matrix axis; only a's "
                             "rows or leading axes may hold it", b->name);
    static const int both[] = {0, 1};
    int lead_rank, batch_axis;
    int64_t dims[PL_MAX_RANK];
    if (!broadcast(ctx, both, 2, 2, &lead_rank, dims, &batch_axis))
        return false;
    if (a_rows_batched) {
        if (batch_axis != PL_NO_BATCH)
            return pl_infer_fail(ctx, 1, NO_ATTR, "the batched \"%s\" would put a second "
                                 "batch axis beside the rows of \"%s\"", b->name, a->name);
        batch_axis = lead_rank;
    }
    dims[lead_rank] = m;
    dims[lead_rank + 1] = n;
    set_output(ctx->out[0], PL_F32, lead_rank + 2, dims, batch_axis);
    return true;
}

static double flops_matmul(const pl_infer_ctx *ctx)
{
    int64_t m, k, k_b, n;
    matmul_dims(ctx, &m, &k, &k_b, &n);
    const pl_tensor *y = ctx->out[0];
    double lead = (double)elements(y) / ((double)m * (double)n);
    return 2.0 * lead * (double)m * (double)n * (double)k;
}

/* ---- losses --------------------------------------------------------------------------- */

static const int64_t no_dims[1] = {0};

static bool infer_softmax_cross_entropy(pl_infer_ctx *ctx)
{
    const pl_tensor *logits = ctx->in[0], *labels = ctx->in[1];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 1, PL_MAX_RANK))
        return false;
    if (labels->dtype != PL_I32)
        return pl_infer_fail(ctx, 1, NO_ATTR, "the labels \"%s\" must be i32 class indices, "
                             "not %s", labels->name, pl_dtype_name(labels->dtype));
    if (!need_batch_not_last(ctx, 0, "take classes along"))
        return false;
    bool same = labels->rank == logits->rank - 1 && labels->batch_axis == logits->batch_axis;
    for (int a = 0; same && a < labels->rank; a++)
        same = labels->dims[a] == logits->dims[a];
    if (!same) {
        shape_text sl = shape_of(logits), sy = shape_of(labels);
        return pl_infer_fail(ctx, 1, NO_ATTR,
                             "labels %s must have the shape of the logits %s without their "
                             "last (class) axis", sy.s, sl.s);
    }
    set_output(ctx->out[0], PL_F32, 0, no_dims, PL_NO_BATCH);
    return true;
}

static bool infer_mse(pl_infer_ctx *ctx)
{
    const pl_tensor *p = ctx->in[0], *t = ctx->in[1];
    if (!need_f32(ctx, 0) || !need_f32(ctx, 1))
        return false;
    bool same = p->rank == t->rank && p->batch_axis == t->batch_axis;
    for (int a = 0; same && a < p->rank; a++)
        same = p->dims[a] == t->dims[a];
    if (!same) {
        shape_text sp = shape_of(p), st = shape_of(t);
        return pl_infer_fail(ctx, 1, NO_ATTR,
                             "prediction %s and target %s must have the same shape", sp.s, st.s);
    }
    set_output(ctx->out[0], PL_F32, 0, no_dims, PL_NO_BATCH);
    return true;
}

/* ---- normalisation -------------------------------------------------------------------- */

/* gamma and beta (inputs 1 and 2) must be unbatched [n]. */
static bool need_affine(pl_infer_ctx *ctx, int64_t n, const char *axis_name)
{
    for (int i = 1; i <= 2; i++) {
        const pl_tensor *t = ctx->in[i];
        if (!need_f32(ctx, i) || !need_unbatched(ctx, i, i == 1 ? "scale" : "shift"))
            return false;
        if (t->rank != 1 || t->dims[0] != n) {
            shape_text s = shape_of(t), x = shape_of(ctx->in[0]);
            return pl_infer_fail(ctx, i, NO_ATTR, "\"%s\" is %s but must be [%lld], the %s "
                                 "of the input %s", t->name, s.s, (long long)n, axis_name, x.s);
        }
    }
    return true;
}

/* Over the last axis by default; "axis" 1 of [N,C,H,W] normalises each position's channels. */
static bool infer_layer_norm(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    int64_t axis = 0;
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, batched(x) ? 2 : 1, PL_MAX_RANK) ||
        !resolve_axis(ctx, PL_ATTR_AXIS, ctx->attrs->axis, x->rank, &axis) ||
        !keep_batch_axis(ctx, 0, PL_ATTR_AXIS, axis, "normalise over"))
        return false;
    char axis_name[32] = "last axis";
    if (axis != x->rank - 1)
        snprintf(axis_name, sizeof axis_name, "axis %lld", (long long)axis);
    if (!need_affine(ctx, x->dims[axis], axis_name))
        return false;
    copy_shape(ctx->out[0], x);
    return true;
}

static bool infer_batch_norm(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 2, PL_MAX_RANK) || !need_batch_on(ctx, 0, 0))
        return false;
    if (!need_affine(ctx, x->dims[1], "channel axis 1"))
        return false;
    /* Training graphs add the running mean and variance, kept as state. */
    if (ctx->n_in != 3 && (ctx->n_in != 5 || ctx->in[3]->kind != PL_TENSOR_STATE ||
                           ctx->in[4]->kind != PL_TENSOR_STATE))
        return pl_infer_fail(ctx, 3, NO_ATTR, "batch_norm takes x, gamma and beta; training "
                             "adds its running averages itself");
    copy_shape(ctx->out[0], x);
    return true;
}

/* ---- convolution and pooling ----------------------------------------------------------- */

/* Output size of a window sliding over `size`; false when the window does not fit.
 * ceil_mode (pooling, as PyTorch): a last, partial window is kept when it starts inside
 * the input or its left padding. */
static bool window_out(int64_t size, int64_t kernel, int64_t stride, int64_t pad,
                       int64_t dilation, bool ceil_mode, int64_t *out)
{
    int64_t span = dilation * (kernel - 1) + 1, room = size + 2 * pad;
    if (room < span)
        return false;
    *out = (room - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (*out - 1) * stride >= size + pad)
        (*out)--;
    return true;
}

/* Size along one axis of a transposed convolution's output: the input size a
 * convolution with the same settings maps back from; false when it is below 1. */
static bool transposed_out(int64_t size, int64_t kernel, int64_t stride, int64_t pad,
                           int64_t dilation, int64_t output_padding, int64_t *out)
{
    *out = (size - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1;
    return *out >= 1;
}

static bool need_conv_bias(pl_infer_ctx *ctx, int64_t o)
{
    const pl_tensor *bias = ctx->in[2];
    if (!need_f32(ctx, 2) || !need_unbatched(ctx, 2, "bias"))
        return false;
    if (bias->rank != 1 || bias->dims[0] != o) {
        shape_text sb = shape_of(bias);
        return pl_infer_fail(ctx, 2, NO_ATTR, "bias %s must be [%lld], one per output "
                             "channel", sb.s, (long long)o);
    }
    return true;
}

/* The output's spatial sizes, one axis at a time. */
static bool conv_sizes(pl_infer_ctx *ctx, int spatial, bool transposed, int64_t *dims)
{
    const pl_tensor *x = ctx->in[0], *w = ctx->in[1];
    const pl_attrs *at = ctx->attrs;
    for (int a = 0; a < spatial; a++) {
        int64_t size = x->dims[2 + a], k = w->dims[2 + a];
        if (transposed && at->output_padding[a] >= at->stride[a])
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_OUTPUT_PADDING, "output_padding "
                                 "%lld must be smaller than the stride %lld",
                                 (long long)at->output_padding[a], (long long)at->stride[a]);
        bool fits = transposed ? transposed_out(size, k, at->stride[a], at->padding[a],
                                                at->dilation[a], at->output_padding[a],
                                                &dims[2 + a])
                               : window_out(size, k, at->stride[a], at->padding[a],
                                            at->dilation[a], false, &dims[2 + a]);
        if (!fits) {
            shape_text sx = shape_of(x), sw = shape_of(w);
            return pl_infer_fail(ctx, 1, NO_ATTR, "filter %s does not fit the input %s with "
                                 "padding %lld and dilation %lld", sw.s, sx.s,
                                 (long long)at->padding[a], (long long)at->dilation[a]);
        }
    }
    return true;
}

/* Convolutions of 1 to 3 spatial axes: x [N,C,...], w [O,C/groups,...] -> [N,O,...];
 * transposed: w [C,O/groups,...], as PyTorch's ConvTranspose layers hold it. */
static bool infer_conv(pl_infer_ctx *ctx, int spatial, bool transposed)
{
    const pl_tensor *x = ctx->in[0], *w = ctx->in[1];
    const pl_attrs *at = ctx->attrs;
    if (!need_f32(ctx, 0) || !need_f32(ctx, 1) || !need_rank(ctx, 0, 2 + spatial, 2 + spatial) ||
        !need_rank(ctx, 1, 2 + spatial, 2 + spatial) || !need_unbatched(ctx, 1, "filter") ||
        !need_batch_on(ctx, 0, 0))
        return false;
    int64_t c = x->dims[1], g = at->groups;
    int64_t o = transposed ? w->dims[1] * g : w->dims[0];
    int64_t filter_in = transposed ? w->dims[0] : w->dims[1] * g;
    if (c % g != 0 || o % g != 0)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_GROUPS, "groups %lld must divide the input "
                             "channels %lld and the output channels %lld", (long long)g,
                             (long long)c, (long long)o);
    if (filter_in != c) {
        shape_text sx = shape_of(x), sw = shape_of(w);
        if (transposed)
            return pl_infer_fail(ctx, 1, NO_ATTR, "filter %s must have %lld rows, one per "
                                 "input channel of %s", sw.s, (long long)c, sx.s);
        return pl_infer_fail(ctx, 1, NO_ATTR, "filter %s must have %lld input channels "
                             "(input %s in %lld group%s)", sw.s, (long long)(c / g), sx.s,
                             (long long)g, g == 1 ? "" : "s");
    }
    if (ctx->n_in == 3 && !need_conv_bias(ctx, o))
        return false;
    int64_t dims[PL_MAX_RANK] = {x->dims[0], o};
    if (!conv_sizes(ctx, spatial, transposed, dims))
        return false;
    set_output(ctx->out[0], PL_F32, 2 + spatial, dims, x->batch_axis);
    return true;
}

static bool infer_conv1d(pl_infer_ctx *ctx) { return infer_conv(ctx, 1, false); }
static bool infer_conv2d(pl_infer_ctx *ctx) { return infer_conv(ctx, 2, false); }
static bool infer_conv3d(pl_infer_ctx *ctx) { return infer_conv(ctx, 3, false); }
static bool infer_conv_transpose1d(pl_infer_ctx *ctx) { return infer_conv(ctx, 1, true); }
static bool infer_conv_transpose2d(pl_infer_ctx *ctx) { return infer_conv(ctx, 2, true); }
static bool infer_conv_transpose3d(pl_infer_ctx *ctx) { return infer_conv(ctx, 3, true); }

/* Multiply-adds per filter application: its elements past the first axis. */
static double filter_taps(const pl_tensor *w)
{
    double taps = 1;
    for (int a = 1; a < w->rank; a++)
        taps *= (double)w->dims[a];
    return taps;
}

/* Each output element takes a filter's worth of multiply-adds (and a bias). */
static double flops_conv(const pl_infer_ctx *ctx)
{
    return (double)elements(ctx->out[0]) * (2.0 * filter_taps(ctx->in[1]) + (ctx->n_in == 3));
}

/* Each input element scatters into a filter's worth of outputs. */
static double flops_conv_transpose(const pl_infer_ctx *ctx)
{
    return 2.0 * (double)elements(ctx->in[0]) * filter_taps(ctx->in[1]) +
           (ctx->n_in == 3 ? (double)elements(ctx->out[0]) : 0.0);
}

/* A window's sizes as text: "3", "2x2", "1x3x3". */
static void window_text(const int64_t *sizes, int spatial, char *buf, size_t cap)
{
    size_t used = 0;
    for (int a = 0; a < spatial && used < cap; a++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", a ? "x" : "",
                                 (long long)sizes[a]);
}

/* Windowed pooling of 1 to 3 spatial axes: x [N,C,...] -> [N,C,...]. */
static bool infer_pool(pl_infer_ctx *ctx, int spatial)
{
    const pl_tensor *x = ctx->in[0];
    const pl_attrs *at = ctx->attrs;
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 2 + spatial, 2 + spatial) ||
        !need_batch_on(ctx, 0, 0))
        return false;
    bool stride_given = at->given & PL_ATTR_BIT(PL_ATTR_STRIDE);
    int64_t dims[PL_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int a = 0; a < spatial; a++) {
        int64_t k = at->kernel[a], stride = stride_given ? at->stride[a] : k;
        if (at->padding[a] * 2 > k)
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_PADDING, "padding %lld is more than "
                                 "half the kernel %lld", (long long)at->padding[a],
                                 (long long)k);
        if (!window_out(x->dims[2 + a], k, stride, at->padding[a], 1, at->ceil_mode,
                        &dims[2 + a])) {
            shape_text sx = shape_of(x);
            char kernel[64];
            window_text(at->kernel, spatial, kernel, sizeof kernel);
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_KERNEL, "kernel %s does not fit the "
                                 "input %s", kernel, sx.s);
        }
    }
    set_output(ctx->out[0], PL_F32, 2 + spatial, dims, x->batch_axis);
    return true;
}

static bool infer_pool1d(pl_infer_ctx *ctx) { return infer_pool(ctx, 1); }
static bool infer_pool2d(pl_infer_ctx *ctx) { return infer_pool(ctx, 2); }
static bool infer_pool3d(pl_infer_ctx *ctx) { return infer_pool(ctx, 3); }

/* One FLOP per window cell of each output. */
static double flops_pool(const pl_infer_ctx *ctx)
{
    double cells = 1;
    for (int a = 0; a < ctx->in[0]->rank - 2; a++)
        cells *= (double)ctx->attrs->kernel[a];
    return (double)elements(ctx->out[0]) * cells;
}

static bool infer_global_avg_pool(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 4, 4) || !need_batch_on(ctx, 0, 0))
        return false;
    set_output(ctx->out[0], PL_F32, 2, x->dims, x->batch_axis);
    return true;
}

/* adaptive_avg_pool of 1 to 3 spatial axes: [N,C,...] -> [N,C,output_size...] (any sizes,
 * larger than the input too: windows then repeat cells). */
static bool infer_adaptive_avg_pool(pl_infer_ctx *ctx, int spatial)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 2 + spatial, 2 + spatial) ||
        !need_batch_on(ctx, 0, 0))
        return false;
    int64_t dims[PL_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int a = 0; a < spatial; a++)
        dims[2 + a] = ctx->attrs->output_size[a];
    set_output(ctx->out[0], PL_F32, 2 + spatial, dims, x->batch_axis);
    return true;
}

static bool infer_adaptive_avg_pool1d(pl_infer_ctx *ctx)
{
    return infer_adaptive_avg_pool(ctx, 1);
}

static bool infer_adaptive_avg_pool2d(pl_infer_ctx *ctx)
{
    return infer_adaptive_avg_pool(ctx, 2);
}

static bool infer_adaptive_avg_pool3d(pl_infer_ctx *ctx)
{
    return infer_adaptive_avg_pool(ctx, 3);
}

/* Cells read along one axis: window i is [floor(i*in/out), ceil((i+1)*in/out)). */
static double adaptive_cells(int64_t in, int64_t out)
{
    double cells = 0;
    for (int64_t i = 0; i < out; i++)
        cells += (double)(((i + 1) * in + out - 1) / out - i * in / out);
    return cells;
}

/* One FLOP per input cell read, the repeats of overlapping windows included. */
static double adaptive_flops(const pl_tensor *x, const pl_tensor *y)
{
    double cells = (double)(x->dims[0] * x->dims[1]);
    for (int a = 2; a < x->rank; a++)
        cells *= adaptive_cells(x->dims[a], y->dims[a]);
    return cells;
}

static double flops_adaptive_avg_pool(const pl_infer_ctx *ctx)
{
    return adaptive_flops(ctx->in[0], ctx->out[0]);
}

static double flops_adaptive_avg_pool_grad(const pl_infer_ctx *ctx) /* dy, x -> dx */
{
    return adaptive_flops(ctx->in[1], ctx->in[0]);
}

/* ---- joining and cutting ---------------------------------------------------------------- */

static bool infer_concat(pl_infer_ctx *ctx)
{
    const pl_tensor *first = ctx->in[0];
    int64_t axis = 0;
    if (!resolve_axis(ctx, PL_ATTR_AXIS, ctx->attrs->axis, first->rank, &axis) ||
        !keep_batch_axis(ctx, 0, PL_ATTR_AXIS, axis, "concatenate along"))
        return false;
    int64_t dims[PL_MAX_RANK];
    memcpy(dims, first->dims, sizeof dims);
    dims[axis] = 0;
    for (int i = 0; i < ctx->n_in; i++) {
        const pl_tensor *t = ctx->in[i];
        bool fits = t->rank == first->rank && t->dtype == first->dtype &&
                    t->batch_axis == first->batch_axis;
        for (int a = 0; fits && a < t->rank; a++)
            fits = a == axis || t->dims[a] == first->dims[a];
        if (!fits) {
            shape_text s0 = shape_of(first), si = shape_of(t);
            return pl_infer_fail(ctx, i, NO_ATTR, "\"%s\" %s %s does not match \"%s\" %s %s "
                                 "outside axis %lld", t->name, pl_dtype_name(t->dtype), si.s,
                                 first->name, pl_dtype_name(first->dtype), s0.s,
                                 (long long)axis);
        }
        dims[axis] += t->dims[axis];
    }
    set_output(ctx->out[0], first->dtype, first->rank, dims, first->batch_axis);
    return true;
}

static bool infer_split(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    const pl_attrs *at = ctx->attrs;
    int64_t axis = 0;
    if (!resolve_axis(ctx, PL_ATTR_AXIS, at->axis, x->rank, &axis) ||
        !keep_batch_axis(ctx, 0, PL_ATTR_AXIS, axis, "split along"))
        return false;
    int64_t total = x->dims[axis];
    if (at->given & PL_ATTR_BIT(PL_ATTR_SIZES)) {
        if (at->sizes.n != ctx->n_out)
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_SIZES, "%d sizes for %d outputs",
                                 at->sizes.n, ctx->n_out);
        int64_t sum = 0;
        for (int i = 0; i < at->sizes.n; i++)
            sum += at->sizes.v[i];
        if (sum != total)
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_SIZES, "sizes add up to %lld, but axis "
                                 "%lld of \"%s\" has %lld", (long long)sum, (long long)axis,
                                 x->name, (long long)total);
    } else if (total % ctx->n_out != 0) {
        return pl_infer_fail(ctx, NO_INPUT, NO_ATTR, "axis %lld of \"%s\" (%lld) does not split "
                             "into %d equal parts; give \"sizes\"", (long long)axis, x->name,
                             (long long)total, ctx->n_out);
    }
    for (int i = 0; i < ctx->n_out; i++) {
        copy_shape(ctx->out[i], x);
        ctx->out[i]->dims[axis] = (at->given & PL_ATTR_BIT(PL_ATTR_SIZES)) ? at->sizes.v[i]
                                                                          : total / ctx->n_out;
    }
    return true;
}

static bool infer_slice(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    const pl_attrs *at = ctx->attrs;
    int64_t axis = 0;
    if (!resolve_axis(ctx, PL_ATTR_AXIS, at->axis, x->rank, &axis) ||
        !keep_batch_axis(ctx, 0, PL_ATTR_AXIS, axis, "slice along"))
        return false;
    if (at->start >= at->end || at->end > x->dims[axis])
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_END, "range [%lld, %lld) is empty or outside "
                             "axis %lld of \"%s\" (size %lld)", (long long)at->start,
                             (long long)at->end, (long long)axis, x->name,
                             (long long)x->dims[axis]);
    copy_shape(ctx->out[0], x);
    ctx->out[0]->dims[axis] = at->end - at->start;
    return true;
}

/* ---- shape changes --------------------------------------------------------------------- */

static int64_t product(const int64_t *dims, int n)
{
    int64_t count = 1;
    for (int a = 0; a < n; a++) {
        if (count > PL_MAX_ELEMENTS / dims[a])
            return PL_MAX_ELEMENTS + 1; /* too many: never equal to a valid input's */
        count *= dims[a];
    }
    return count;
}

/* For a batched x, "shape" is the per-sample shape, "batch_axis" (default 0) the result's
 * axis for the batch and "batch_group" (default 1) its elements per sample: more than one
 * when the batch is merged with the axes after it. The data does not move, so each sample
 * keeps its elements only when as many elements come before the batch axis in the result
 * as in x: the batch stays the outermost part of a merged axis. */
static bool infer_reshape(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    const pl_int_list *shape = &ctx->attrs->shape;
    int lead = batched(x) ? 1 : 0, out_axis = (int)ctx->attrs->batch_axis;
    int64_t group = ctx->attrs->batch_group;
    static const pl_attr_id batch_attrs[] = {PL_ATTR_BATCH_AXIS, PL_ATTR_BATCH_GROUP};
    for (int i = 0; i < 2 && !batched(x); i++)
        if (ctx->attrs->given & PL_ATTR_BIT(batch_attrs[i]))
            return pl_infer_fail(ctx, 0, batch_attrs[i], "\"%s\" is not batched", x->name);
    if (shape->n + lead > PL_MAX_RANK)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_SHAPE, "the result would have rank %d; "
                             "the limit is %d", shape->n + lead, PL_MAX_RANK);
    if (batched(x) && out_axis > shape->n)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_BATCH_AXIS, "batch axis %d is out of "
                             "range for the result's rank %d", out_axis, shape->n + 1);
    pl_batch_layout in = pl_tensor_batch_layout(x);
    int64_t dims[PL_MAX_RANK];
    for (int a = 0, k = 0; a < shape->n + lead; a++)
        dims[a] = batched(x) && a == out_axis ? in.batch * group : shape->v[k++];
    int64_t count = product(shape->v, shape->n), want = in.outer * in.inner;
    if (count > PL_MAX_ELEMENTS / group || count * group != want) {
        shape_text sx = shape_of(x);
        char times[48] = "";
        if (group > 1)
            snprintf(times, sizeof times, " times batch_group %lld", (long long)group);
        return pl_infer_fail(ctx, NO_INPUT, group > 1 ? PL_ATTR_BATCH_GROUP : PL_ATTR_SHAPE,
                             "\"%s\" %s has %lld elements%s, the new shape %lld%s", x->name,
                             sx.s, (long long)want, batched(x) ? " per sample" : "",
                             (long long)count, times);
    }
    int64_t before = batched(x) ? product(shape->v, out_axis) : 1;
    if (before != in.outer) {
        shape_text sx = shape_of(x);
        bool placed = ctx->attrs->given & PL_ATTR_BIT(PL_ATTR_BATCH_AXIS);
        return pl_infer_fail(ctx, NO_INPUT, placed ? PL_ATTR_BATCH_AXIS : PL_ATTR_SHAPE,
                             "the new shape would mix "
                             "samples: \"%s\" %s has %lld elements before its batch axis %d, "
                             "the result %lld before batch axis %d (the batch may merge only "
                             "with the axes after it: transpose first)",
                             x->name, sx.s, (long long)in.outer, x->batch_axis,
                             (long long)before, out_axis);
    }
    set_output(ctx->out[0], x->dtype, shape->n + lead, dims, batched(x) ? out_axis
                                                                         : PL_NO_BATCH);
    ctx->out[0]->batch_group = (int)group;
    return true;
}

static bool infer_flatten(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_rank(ctx, 0, 2, PL_MAX_RANK) || !need_batch_on(ctx, 0, 0))
        return false;
    int64_t dims[2] = {x->dims[0], elements(x) / x->dims[0]};
    set_output(ctx->out[0], x->dtype, 2, dims, x->batch_axis);
    return true;
}

static bool infer_transpose(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    const pl_int_list *perm = &ctx->attrs->perm;
    if (perm->n != x->rank)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_PERM, "perm has %d axes but \"%s\" has rank %d",
                             perm->n, x->name, x->rank);
    bool seen[PL_MAX_RANK] = {false};
    int64_t dims[PL_MAX_RANK];
    int batch_axis = PL_NO_BATCH; /* where the batch moves */
    for (int a = 0; a < perm->n; a++) {
        int64_t p = perm->v[a];
        if (p >= x->rank || seen[p])
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_PERM, "perm is not a permutation of "
                                 "0..%d", x->rank - 1);
        seen[p] = true;
        dims[a] = x->dims[p];
        if (p == x->batch_axis)
            batch_axis = a;
    }
    set_output(ctx->out[0], x->dtype, x->rank, dims, batch_axis);
    return true;
}

static bool infer_embedding(pl_infer_ctx *ctx)
{
    const pl_tensor *table = ctx->in[0], *ids = ctx->in[1];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 2, 2) || !need_unbatched(ctx, 0, "table"))
        return false;
    if (ids->dtype != PL_I32)
        return pl_infer_fail(ctx, 1, NO_ATTR, "the ids \"%s\" must be i32, not %s", ids->name,
                             pl_dtype_name(ids->dtype));
    if (ids->rank + 1 > PL_MAX_RANK)
        return pl_infer_fail(ctx, 1, NO_ATTR, "the result would have rank %d; the limit is %d",
                             ids->rank + 1, PL_MAX_RANK);
    int64_t dims[PL_MAX_RANK];
    memcpy(dims, ids->dims, (size_t)ids->rank * sizeof *dims);
    dims[ids->rank] = table->dims[1];
    set_output(ctx->out[0], PL_F32, ids->rank + 1, dims, ids->batch_axis);
    return true;
}

static bool infer_reduce(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    const pl_int_list *axes = &ctx->attrs->axes;
    if (!need_f32(ctx, 0))
        return false;
    bool reduced[PL_MAX_RANK] = {false};
    for (int i = 0; i < axes->n; i++) {
        int64_t axis = 0;
        if (!resolve_axis(ctx, PL_ATTR_AXES, axes->v[i], x->rank, &axis) ||
            !keep_batch_axis(ctx, 0, PL_ATTR_AXES, axis, "reduce"))
            return false;
        if (reduced[axis])
            return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_AXES, "axis %lld is listed twice",
                                 (long long)axis);
        reduced[axis] = true;
    }
    int64_t dims[PL_MAX_RANK];
    int rank = 0, batch_axis = PL_NO_BATCH;
    for (int a = 0; a < x->rank; a++) {
        if (a == x->batch_axis)
            batch_axis = rank;
        if (!reduced[a])
            dims[rank++] = x->dims[a];
        else if (ctx->attrs->keepdims)
            dims[rank++] = 1;
    }
    set_output(ctx->out[0], PL_F32, rank, dims, batch_axis);
    return true;
}

static bool infer_softmax(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    int64_t axis = 0;
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, 1, PL_MAX_RANK) ||
        !resolve_axis(ctx, PL_ATTR_AXIS, ctx->attrs->axis, x->rank, &axis) ||
        !keep_batch_axis(ctx, 0, PL_ATTR_AXIS, axis, "normalise along"))
        return false;
    copy_shape(ctx->out[0], x);
    return true;
}

static bool infer_topk_gate(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_f32(ctx, 0) || !need_rank(ctx, 0, batched(x) ? 2 : 1, PL_MAX_RANK) ||
        !need_batch_not_last(ctx, 0, "gate along"))
        return false;
    int64_t experts = x->dims[x->rank - 1];
    if (ctx->attrs->k > experts)
        return pl_infer_fail(ctx, NO_INPUT, PL_ATTR_K, "k %lld exceeds the %lld experts of "
                             "\"%s\"", (long long)ctx->attrs->k, (long long)experts, x->name);
    copy_shape(ctx->out[0], x);
    return true;
}

static double flops_topk_gate(const pl_infer_ctx *ctx)
{
    return (double)elements(ctx->in[0]) * (double)(ctx->attrs->k + 5);
}

/* ---- LSTM ------------------------------------------------------------------------------ */

/* The state h [N,H] and c [N,H], inputs `first` and after, batched like the cell's first
 * input; then the outputs h', c' [N,H] and the optional activated gates [N,4H]. */
static bool infer_lstm_state(pl_infer_ctx *ctx, int first, int64_t n, int64_t h)
{
    const pl_tensor *x = ctx->in[0];
    bool projected = pl_lstm_cell_projected(ctx->n_in);
    for (int i = first; i < ctx->n_in; i++) {
        const pl_tensor *s = ctx->in[i];
        if (s->rank != 2 || s->dims[0] != n || s->dims[1] != h ||
            s->batch_axis != x->batch_axis) {
            shape_text ss = shape_of(s);
            return pl_infer_fail(ctx, i, NO_ATTR, "state \"%s\" is %s but must be [%lld,%lld]%s",
                                 s->name, ss.s, (long long)n, (long long)h,
                                 !batched(x) ? "" : projected ? ", batched like gx"
                                                              : ", batched like x");
        }
    }
    int64_t dims[2] = {n, h};
    for (int i = 0; i < 2; i++)
        set_output(ctx->out[i], PL_F32, 2, dims, x->batch_axis);
    if (ctx->n_out == 3) { /* the activated gates, i f g o, kept for the gradient */
        int64_t gates[2] = {n, 4 * h};
        set_output(ctx->out[2], PL_F32, 2, gates, x->batch_axis);
    }
    return true;
}

/* Inputs: x [N,E], w [E+H,4H], b [4H], then optionally h [N,H] and c [N,H]. */
static bool infer_full_lstm_cell(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ctx->in[2];
    if (!need_rank(ctx, 0, 2, 2) || !need_rank(ctx, 1, 2, 2) || !need_rank(ctx, 2, 1, 1) ||
        !need_unbatched(ctx, 1, "weight") || !need_unbatched(ctx, 2, "bias") ||
        !need_batch_on(ctx, 0, 0))
        return false;
    if (b->dims[0] % 4 != 0)
        return pl_infer_fail(ctx, 2, NO_ATTR, "bias \"%s\" has %lld entries; it must be 4H, "
                             "for the gates i, f, g, o", b->name, (long long)b->dims[0]);
    int64_t n = x->dims[0], e = x->dims[1], h = b->dims[0] / 4;
    if (w->dims[0] != e + h || w->dims[1] != 4 * h) {
        shape_text sw = shape_of(w), sx = shape_of(x);
        return pl_infer_fail(ctx, 1, NO_ATTR, "weight %s must be [%lld,%lld] for input %s "
                             "and hidden size %lld", sw.s, (long long)(e + h),
                             (long long)(4 * h), sx.s, (long long)h);
    }
    return infer_lstm_state(ctx, 3, n, h);
}

/* Input 0 as a recurrent cell's gate inputs: [N, gates * H], the batch on axis 0. */
static bool need_gate_inputs(pl_infer_ctx *ctx, int gates, const char *names)
{
    const pl_tensor *gx = ctx->in[0];
    if (!need_rank(ctx, 0, 2, 2) || !need_batch_on(ctx, 0, 0))
        return false;
    if (gx->dims[1] % gates != 0)
        return pl_infer_fail(ctx, 0, NO_ATTR,
                             "gate inputs \"%s\" have %lld columns; they "
                             "must be %dH, for the gates %s",
                             gx->name, (long long)gx->dims[1], gates, names);
    return true;
}

/* Inputs: gx [N,4H], then optionally w [H,4H], h [N,H] and c [N,H]. */
static bool infer_projected_lstm_cell(pl_infer_ctx *ctx)
{
    const pl_tensor *gx = ctx->in[0];
    if (!need_gate_inputs(ctx, 4, "i, f, g, o"))
        return false;
    int64_t n = gx->dims[0], h = gx->dims[1] / 4;
    if (ctx->n_in > 1) {
        const pl_tensor *w = ctx->in[1];
        if (!need_rank(ctx, 1, 2, 2) || !need_unbatched(ctx, 1, "weight"))
            return false;
        if (w->dims[0] != h || w->dims[1] != 4 * h) {
            shape_text sw = shape_of(w), sg = shape_of(gx);
            return pl_infer_fail(ctx, 1, NO_ATTR, "weight %s must be [%lld,%lld] for gate "
                                 "inputs %s", sw.s, (long long)h, (long long)(4 * h), sg.s);
        }
    }
    return infer_lstm_state(ctx, 2, n, h);
}

/* The form by the input count (ops.h: pl_lstm_cell_projected). */
static bool infer_lstm_cell(pl_infer_ctx *ctx)
{
    if (ctx->n_in == 2)
        return pl_infer_fail(ctx, NO_INPUT, NO_ATTR, "give x, w, b [, h, c], or gate "
                             "inputs gx [, w, h, c]");
    if (ctx->n_in == 4 && ctx->in[2]->rank == 1) /* x, w, b and h alone */
        return pl_infer_fail(ctx, 3, NO_ATTR, "give both h and c, or neither");
    for (int i = 0; i < ctx->n_in; i++)
        if (!need_f32(ctx, i))
            return false;
    return pl_lstm_cell_projected(ctx->n_in) ? infer_projected_lstm_cell(ctx)
                                             : infer_full_lstm_cell(ctx);
}

/* The gate product [x | h].w (none for a projected cell without state), then a few
 * operations per unit. */
static double flops_lstm_cell(const pl_infer_ctx *ctx)
{
    double n = (double)ctx->in[0]->dims[0], h = (double)ctx->out[0]->dims[1];
    double rows = ctx->n_in == 1 ? 0.0 : (double)ctx->in[1]->dims[0];
    return 2.0 * n * rows * 4.0 * h + 30.0 * n * h;
}

/* ---- GRU ------------------------------------------------------------------------------- */

/* Inputs: gx [N,3H], then optionally gh ([N,3H], or [3H] alone: the hidden bias from a
 * zero state) and h [N,H]. */
static bool infer_gru_cell(pl_infer_ctx *ctx)
{
    for (int i = 0; i < ctx->n_in; i++)
        if (!need_f32(ctx, i))
            return false;
    const pl_tensor *gx = ctx->in[0];
    if (!need_gate_inputs(ctx, 3, "r, z, n"))
        return false;
    int64_t n = gx->dims[0], h = gx->dims[1] / 3;
    if (ctx->n_in > 1) {
        const pl_tensor *gh = ctx->in[1];
        bool bias = gh->rank == 1 && !batched(gh) && gh->dims[0] == 3 * h;
        bool rows = gh->rank == 2 && gh->batch_axis == gx->batch_axis && gh->dims[0] == n &&
                    gh->dims[1] == 3 * h;
        if (!bias && !rows) {
            shape_text sg = shape_of(gh);
            return pl_infer_fail(ctx, 1, NO_ATTR, "hidden gate inputs \"%s\" are %s but must "
                                 "be [%lld,%lld] like the gate inputs, or a bias [%lld]",
                                 gh->name, sg.s, (long long)n, (long long)(3 * h),
                                 (long long)(3 * h));
        }
    }
    if (ctx->n_in > 2) {
        const pl_tensor *s = ctx->in[2];
        if (s->rank != 2 || s->dims[0] != n || s->dims[1] != h || s->batch_axis != gx->batch_axis) {
            shape_text ss = shape_of(s);
            return pl_infer_fail(ctx, 2, NO_ATTR, "state \"%s\" is %s but must be [%lld,%lld]%s",
                                 s->name, ss.s, (long long)n, (long long)h,
                                 batched(gx) ? ", batched like the gate inputs" : "");
        }
    }
    int64_t dims[2] = {n, h};
    set_output(ctx->out[0], PL_F32, 2, dims, gx->batch_axis);
    return true;
}

/* Per unit: two sigmoids, a tanh, the reset product and the blend; the products that make
 * gx and gh are matmuls of their own. */
static double flops_gru_cell(const pl_infer_ctx *ctx)
{
    return 20.0 * (double)pl_tensor_elements(ctx->out[0]);
}

/* ---- the table -------------------------------------------------------------------------- */

#define A(id) PL_ATTR_BIT(PL_ATTR_##id)
#define CONV_ATTRS (A(STRIDE) | A(PADDING) | A(DILATION) | A(GROUPS))
#define TRANSPOSED_ATTRS (CONV_ATTRS | A(OUTPUT_PADDING))
#define POOL_ATTRS (A(KERNEL) | A(STRIDE) | A(PADDING) | A(CEIL_MODE))

static const pl_op_info op_table[PL_OP_COUNT] = {
#define OP(kind, text, in_min, in_max, out_min, out_max, accepted, needed, infer_fn, flops_fn, \
           ...)                                                                            \
    [kind] = {.name = text, .min_inputs = in_min, .max_inputs = in_max,                     \
              .min_outputs = out_min, .max_outputs = out_max, .attrs = accepted,            \
              .required = needed, .infer = infer_fn, .flops = flops_fn, __VA_ARGS__}
    /* kind, name, inputs min/max, outputs min/max, attrs, required, infer, flops, rest */
    OP(PL_OP_MATMUL, "matmul", 2, 2, 1, 1, A(TRANSPOSE_A) | A(TRANSPOSE_B), 0,
       infer_matmul, flops_matmul,
       .backward = pl_backward_matmul),
    OP(PL_OP_ADD, "add", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1,
       .backward = pl_backward_add),
    OP(PL_OP_SUB, "sub", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1,
       .backward = pl_backward_sub),
    OP(PL_OP_MUL, "mul", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1,
       .backward = pl_backward_mul),
    OP(PL_OP_DIV, "div", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1,
       .backward = pl_backward_div),
    OP(PL_OP_SCALE, "scale", 1, 1, 1, 1, A(FACTOR), A(FACTOR), infer_unary, flops_out1,
       .backward = pl_backward_scale),
    OP(PL_OP_RELU, "relu", 1, 1, 1, 1, 0, 0, infer_unary, flops_out1,
       .backward = pl_backward_activation),
    OP(PL_OP_GELU, "gelu", 1, 1, 1, 1, A(APPROXIMATE), 0, infer_unary, flops_out8,
       .backward = pl_backward_activation),
    OP(PL_OP_TANH, "tanh", 1, 1, 1, 1, 0, 0, infer_unary, flops_out5,
       .backward = pl_backward_activation),
    OP(PL_OP_SIGMOID, "sigmoid", 1, 1, 1, 1, 0, 0, infer_unary, flops_out4,
       .backward = pl_backward_activation),
    OP(PL_OP_CLAMP, "clamp", 1, 1, 1, 1, A(MIN) | A(MAX), 0, infer_clamp, flops_out2,
       .backward = pl_backward_activation),
    OP(PL_OP_HARDSIGMOID, "hardsigmoid", 1, 1, 1, 1, 0, 0, infer_unary, flops_out4,
       .backward = pl_backward_activation),
    OP(PL_OP_HARDSWISH, "hardswish", 1, 1, 1, 1, 0, 0, infer_unary, flops_out4,
       .backward = pl_backward_activation),
    OP(PL_OP_ERF, "erf", 1, 1, 1, 1, 0, 0, infer_unary, flops_out8,
       .backward = pl_backward_activation),
    OP(PL_OP_SOFTMAX, "softmax", 1, 1, 1, 1, A(AXIS), 0, infer_softmax, flops_out5,
       .backward = pl_backward_softmax),
    OP(PL_OP_LOG_SOFTMAX, "log_softmax", 1, 1, 1, 1, A(AXIS), 0, infer_softmax, flops_out5,
       .backward = pl_backward_softmax),
    OP(PL_OP_SOFTMAX_CROSS_ENTROPY, "softmax_cross_entropy", 2, 2, 1, 1, 0, 0,
       infer_softmax_cross_entropy, flops_in5,
       .backward = pl_backward_softmax_cross_entropy),
    OP(PL_OP_MSE, "mse", 2, 2, 1, 1, 0, 0, infer_mse, flops_in3,
       .backward = pl_backward_mse),
    OP(PL_OP_LAYER_NORM, "layer_norm", 3, 3, 1, 1, A(EPS) | A(AXIS), 0, infer_layer_norm,
       flops_out8,
       .backward = pl_backward_norm),
    OP(PL_OP_BATCH_NORM, "batch_norm", 3, 5, 1, 1, A(EPS) | A(MOMENTUM), 0,
       infer_batch_norm, flops_out8,
       .backward = pl_backward_norm, .mutates = true, /* its running averages */
       .batch_statistics = true),
    OP(PL_OP_CONV2D, "conv2d", 2, 3, 1, 1, CONV_ATTRS, 0, infer_conv2d, flops_conv,
       .backward = pl_backward_conv),
    OP(PL_OP_MAX_POOL, "max_pool", 1, 1, 1, 1, POOL_ATTRS, A(KERNEL), infer_pool2d, flops_pool,
       .backward = pl_backward_pool),
    OP(PL_OP_AVG_POOL, "avg_pool", 1, 1, 1, 1, POOL_ATTRS | A(COUNT_INCLUDE_PAD), A(KERNEL),
       infer_pool2d, flops_pool,
       .backward = pl_backward_pool),
    OP(PL_OP_GLOBAL_AVG_POOL, "global_avg_pool", 1, 1, 1, 1, 0, 0, infer_global_avg_pool, flops_in1,
       .backward = pl_backward_pool),
    OP(PL_OP_ADAPTIVE_AVG_POOL, "adaptive_avg_pool", 1, 1, 1, 1, A(OUTPUT_SIZE), A(OUTPUT_SIZE),
       infer_adaptive_avg_pool2d, flops_adaptive_avg_pool,
       .backward = pl_backward_pool),
    OP(PL_OP_CONCAT, "concat", 1, -1, 1, 1, A(AXIS), A(AXIS), infer_concat, flops_none,
       .backward = pl_backward_concat),
    OP(PL_OP_SPLIT, "split", 1, 1, 1, 127, A(AXIS) | A(SIZES), A(AXIS), infer_split, flops_none,
       .backward = pl_backward_split),
    OP(PL_OP_SLICE, "slice", 1, 1, 1, 1, A(AXIS) | A(START) | A(END), A(AXIS) | A(START) | A(END),
       infer_slice, flops_none,
       .backward = pl_backward_slice),
    OP(PL_OP_RESHAPE, "reshape", 1, 1, 1, 1, A(SHAPE) | A(BATCH_AXIS) | A(BATCH_GROUP),
       A(SHAPE), infer_reshape, flops_none,
       .backward = pl_backward_reshape),
    OP(PL_OP_FLATTEN, "flatten", 1, 1, 1, 1, 0, 0, infer_flatten, flops_none,
       .backward = pl_backward_reshape),
    OP(PL_OP_TRANSPOSE, "transpose", 1, 1, 1, 1, A(PERM), A(PERM), infer_transpose, flops_none,
       .backward = pl_backward_transpose),
    OP(PL_OP_EMBEDDING, "embedding", 2, 2, 1, 1, A(START), 0, infer_embedding, flops_none,
       .backward = pl_backward_embedding),
    OP(PL_OP_REDUCE_SUM, "reduce_sum", 1, 1, 1, 1, A(AXES) | A(KEEPDIMS), A(AXES),
       infer_reduce, flops_in1,
       .backward = pl_backward_reduce),
    OP(PL_OP_REDUCE_MEAN, "reduce_mean", 1, 1, 1, 1, A(AXES) | A(KEEPDIMS), A(AXES),
       infer_reduce, flops_in1,
       .backward = pl_backward_reduce),
    OP(PL_OP_DROPOUT, "dropout", 1, 1, 1, 1, A(RATE) | A(SEED) | A(MODE), A(RATE),
       infer_dropout, flops_out2,
       .backward = pl_backward_dropout),
    OP(PL_OP_TOPK_GATE, "topk_gate", 1, 1, 1, 1, A(K), A(K), infer_topk_gate, flops_topk_gate,
       .backward = pl_backward_softmax),
    OP(PL_OP_LSTM_CELL, "lstm_cell", 1, 5, 2, 3, 0, 0, infer_lstm_cell, flops_lstm_cell,
       .backward = pl_backward_lstm_cell),
    OP(PL_OP_WHERE, "where", 3, 3, 1, 1, 0, 0, infer_binary, flops_out1,
       .backward = pl_backward_where),
    /* Comparisons and logical not: masks of 0 and 1, through which no gradient flows. */
    OP(PL_OP_EQUAL, "equal", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_NOT_EQUAL, "not_equal", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_LESS, "less", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_LESS_EQUAL, "less_equal", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_GREATER, "greater", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_GREATER_EQUAL, "greater_equal", 2, 2, 1, 1, 0, 0, infer_binary, flops_out1),
    OP(PL_OP_LOGICAL_NOT, "logical_not", 1, 1, 1, 1, 0, 0, infer_unary, flops_out1),
    OP(PL_OP_CONV1D, "conv1d", 2, 3, 1, 1, CONV_ATTRS, 0, infer_conv1d, flops_conv,
       .backward = pl_backward_conv, .spatial = 1),
    OP(PL_OP_CONV3D, "conv3d", 2, 3, 1, 1, CONV_ATTRS, 0, infer_conv3d, flops_conv,
       .backward = pl_backward_conv, .spatial = 3),
    OP(PL_OP_CONV_TRANSPOSE1D, "conv_transpose1d", 2, 3, 1, 1, TRANSPOSED_ATTRS, 0,
       infer_conv_transpose1d, flops_conv_transpose,
       .backward = pl_backward_conv_transpose, .spatial = 1),
    OP(PL_OP_CONV_TRANSPOSE2D, "conv_transpose2d", 2, 3, 1, 1, TRANSPOSED_ATTRS, 0,
       infer_conv_transpose2d, flops_conv_transpose,
       .backward = pl_backward_conv_transpose),
    OP(PL_OP_CONV_TRANSPOSE3D, "conv_transpose3d", 2, 3, 1, 1, TRANSPOSED_ATTRS, 0,
       infer_conv_transpose3d, flops_conv_transpose,
       .backward = pl_backward_conv_transpose, .spatial = 3),
    OP(PL_OP_GRU_CELL, "gru_cell", 1, 3, 1, 1, 0, 0, infer_gru_cell, flops_gru_cell,
       .backward = pl_backward_gru_cell),
    OP(PL_OP_EXP, "exp", 1, 1, 1, 1, 0, 0, infer_unary, flops_out5,
       .backward = pl_backward_activation),
    OP(PL_OP_LOG, "log", 1, 1, 1, 1, 0, 0, infer_unary, flops_out5,
       .backward = pl_backward_activation),
    OP(PL_OP_SQRT, "sqrt", 1, 1, 1, 1, 0, 0, infer_unary, flops_out1,
       .backward = pl_backward_activation),
    OP(PL_OP_RSQRT, "rsqrt", 1, 1, 1, 1, 0, 0, infer_unary, flops_out2,
       .backward = pl_backward_activation),
    OP(PL_OP_ABS, "abs", 1, 1, 1, 1, 0, 0, infer_unary, flops_out1,
       .backward = pl_backward_activation),
    OP(PL_OP_POW, "pow", 1, 1, 1, 1, A(EXPONENT), A(EXPONENT), infer_unary, flops_out8,
       .backward = pl_backward_activation),
    OP(PL_OP_MAX_POOL1D, "max_pool1d", 1, 1, 1, 1, POOL_ATTRS, A(KERNEL), infer_pool1d,
       flops_pool, .backward = pl_backward_pool, .spatial = 1),
    OP(PL_OP_MAX_POOL3D, "max_pool3d", 1, 1, 1, 1, POOL_ATTRS, A(KERNEL), infer_pool3d,
       flops_pool, .backward = pl_backward_pool, .spatial = 3),
    OP(PL_OP_AVG_POOL1D, "avg_pool1d", 1, 1, 1, 1, POOL_ATTRS | A(COUNT_INCLUDE_PAD), A(KERNEL),
       infer_pool1d, flops_pool, .backward = pl_backward_pool, .spatial = 1),
    OP(PL_OP_AVG_POOL3D, "avg_pool3d", 1, 1, 1, 1, POOL_ATTRS | A(COUNT_INCLUDE_PAD), A(KERNEL),
       infer_pool3d, flops_pool, .backward = pl_backward_pool, .spatial = 3),
    OP(PL_OP_ADAPTIVE_AVG_POOL1D, "adaptive_avg_pool1d", 1, 1, 1, 1, A(OUTPUT_SIZE),
       A(OUTPUT_SIZE), infer_adaptive_avg_pool1d, flops_adaptive_avg_pool,
       .backward = pl_backward_pool, .spatial = 1),
    OP(PL_OP_ADAPTIVE_AVG_POOL3D, "adaptive_avg_pool3d", 1, 1, 1, 1, A(OUTPUT_SIZE),
       A(OUTPUT_SIZE), infer_adaptive_avg_pool3d, flops_adaptive_avg_pool,
       .backward = pl_backward_pool, .spatial = 3),
    OP(PL_OP_SILU, "silu", 1, 1, 1, 1, 0, 0, infer_unary, flops_out5,
       .backward = pl_backward_activation),
#undef OP

#define INTERNAL(kind, text, in_min, in_max, out_min, out_max, infer_fn, flops_fn, ...)        \
    [kind] = {.name = text, .min_inputs = in_min, .max_inputs = in_max,                         \
              .min_outputs = out_min, .max_outputs = out_max, .infer = infer_fn,                \
              .flops = flops_fn, .internal = true, __VA_ARGS__}
    INTERNAL(PL_OP_MATMUL_GRAD_A, "matmul_grad_a", 3, 3, 1, 1, pl_infer_like_second,
             pl_flops_matmul_grad),
    INTERNAL(PL_OP_MATMUL_GRAD_B, "matmul_grad_b", 3, 3, 1, 1, pl_infer_like_third,
             pl_flops_matmul_grad),
    INTERNAL(PL_OP_SUM_TO, "sum_to", 2, 2, 1, 1, pl_infer_like_second, pl_flops_elements_in0),
    INTERNAL(PL_OP_RELU_GRAD, "relu_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_GELU_GRAD, "gelu_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_TANH_GRAD, "tanh_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_SIGMOID_GRAD, "sigmoid_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_CLAMP_GRAD, "clamp_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_HARDSIGMOID_GRAD, "hardsigmoid_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_HARDSWISH_GRAD, "hardswish_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_ERF_GRAD, "erf_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_SOFTMAX_GRAD, "softmax_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_LOG_SOFTMAX_GRAD, "log_softmax_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD, "softmax_cross_entropy_grad", 3, 3, 1, 1,
             pl_infer_like_first, pl_flops_elements_out0x4),
    INTERNAL(PL_OP_MSE_GRAD, "mse_grad", 3, 3, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_LAYER_NORM_GRAD, "layer_norm_grad", 3, 3, 3, 3, pl_infer_norm_grad,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_BATCH_NORM_GRAD, "batch_norm_grad", 3, 3, 3, 3, pl_infer_norm_grad,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_CONV2D_GRAD_INPUT, "conv2d_grad_input", 3, 3, 1, 1, pl_infer_like_second,
             pl_flops_conv_grad),
    INTERNAL(PL_OP_CONV2D_GRAD_FILTER, "conv2d_grad_filter", 3, 3, 1, 2,
             pl_infer_conv_grad_filter, pl_flops_conv_grad),
    INTERNAL(PL_OP_MAX_POOL_GRAD, "max_pool_grad", 2, 2, 1, 1, pl_infer_like_second,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_AVG_POOL_GRAD, "avg_pool_grad", 2, 2, 1, 1, pl_infer_like_second,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_GLOBAL_AVG_POOL_GRAD, "global_avg_pool_grad", 2, 2, 1, 1,
             pl_infer_like_second, pl_flops_elements_in0),
    INTERNAL(PL_OP_ADAPTIVE_AVG_POOL_GRAD, "adaptive_avg_pool_grad", 2, 2, 1, 1,
             pl_infer_like_second, flops_adaptive_avg_pool_grad),
    INTERNAL(PL_OP_SLICE_GRAD, "slice_grad", 2, 2, 1, 1, pl_infer_like_second, pl_flops_zero),
    INTERNAL(PL_OP_RESHAPE_LIKE, "reshape_like", 2, 2, 1, 1, pl_infer_like_second,
             pl_flops_zero),
    INTERNAL(PL_OP_BROADCAST_LIKE, "broadcast_like", 2, 2, 1, 1, pl_infer_like_second,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_DROPOUT_GRAD, "dropout_grad", 1, 1, 1, 1, pl_infer_like_first,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_LSTM_CELL_GRAD, "lstm_cell_grad", 3, 8, 1, 4, pl_infer_lstm_cell_grad,
             pl_flops_lstm_cell_grad),
    INTERNAL(PL_OP_WHERE_GRAD, "where_grad", 2, 2, 2, 2, pl_infer_where_grad,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_CONV1D_GRAD_INPUT, "conv1d_grad_input", 3, 3, 1, 1, pl_infer_like_second,
             pl_flops_conv_grad, .spatial = 1),
    INTERNAL(PL_OP_CONV1D_GRAD_FILTER, "conv1d_grad_filter", 3, 3, 1, 2,
             pl_infer_conv_grad_filter, pl_flops_conv_grad, .spatial = 1),
    INTERNAL(PL_OP_CONV3D_GRAD_INPUT, "conv3d_grad_input", 3, 3, 1, 1, pl_infer_like_second,
             pl_flops_conv_grad, .spatial = 3),
    INTERNAL(PL_OP_CONV3D_GRAD_FILTER, "conv3d_grad_filter", 3, 3, 1, 2,
             pl_infer_conv_grad_filter, pl_flops_conv_grad, .spatial = 3),
    INTERNAL(PL_OP_GRU_CELL_GRAD, "gru_cell_grad", 2, 4, 1, 3, pl_infer_gru_cell_grad,
             pl_flops_gru_cell_grad),
    INTERNAL(PL_OP_SQRT_GRAD, "sqrt_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_RSQRT_GRAD, "rsqrt_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_ABS_GRAD, "abs_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_POW_GRAD, "pow_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_SILU_GRAD, "silu_grad", 2, 2, 1, 1, pl_infer_like_first,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_LOGSUMEXP, "logsumexp", 1, 1, 1, 1, pl_infer_logsumexp, pl_flops_logsumexp,
             .backward = pl_backward_logsumexp),
    INTERNAL(PL_OP_LOGSUMEXP_GRAD, "logsumexp_grad", 3, 3, 1, 1, pl_infer_like_second,
             pl_flops_elements_out0x4),
    INTERNAL(PL_OP_PICK, "pick", 2, 2, 1, 1, pl_infer_pick, pl_flops_elements_in1,
             .backward = pl_backward_pick),
    INTERNAL(PL_OP_PICK_GRAD, "pick_grad", 3, 3, 1, 1, pl_infer_like_third,
             pl_flops_elements_in0),
    INTERNAL(PL_OP_LSE_CROSS_ENTROPY, "lse_cross_entropy", 3, 3, 1, 1,
             pl_infer_lse_cross_entropy, pl_flops_elements_in0,
             .backward = pl_backward_lse_cross_entropy),
    INTERNAL(PL_OP_LSE_CROSS_ENTROPY_GRAD, "lse_cross_entropy_grad", 3, 3, 2, 2,
             pl_infer_where_grad, pl_flops_elements_in0),
    INTERNAL(PL_OP_ZEROS_LIKE, "zeros_like", 1, 1, 1, 1, pl_infer_like_first, pl_flops_zero),
    INTERNAL(PL_OP_ACCUMULATE, "accumulate", 2, 2, 0, 0, pl_infer_in_place,
             pl_flops_elements_in0, .mutates = true),
    /* one addition per element of the looked-up rows' gradient, not of the table */
    INTERNAL(PL_OP_SCATTER_ACCUMULATE, "scatter_accumulate", 3, 3, 0, 0, pl_infer_in_place,
             pl_flops_elements_in1, .mutates = true),
    INTERNAL(PL_OP_SGD_UPDATE, "sgd_update", 2, 3, 0, 0, pl_infer_in_place, pl_flops_update,
             .mutates = true),
    INTERNAL(PL_OP_ADAM_UPDATE, "adam_update", 4, 4, 0, 0, pl_infer_in_place, pl_flops_update,
             .mutates = true),
#undef INTERNAL
};

const pl_op_info *pl_op_info_of(pl_op_kind kind)
{
    return kind < PL_OP_COUNT ? &op_table[kind] : NULL;
}

pl_op_kind pl_op_from_name(const char *name)
{
    for (int k = 0; k < PL_OP_COUNT; k++)
        if (strcmp(op_table[k].name, name) == 0)
            return (pl_op_kind)k;
    return PL_OP_COUNT;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void pl_op_names_join(char *buf, size_t cap)
{
    const char *names[PL_OP_COUNT];
    int n = 0;
    for (int k = 0; k < PL_OP_COUNT; k++)
        if (!op_table[k].internal)
            names[n++] = op_table[k].name;
    qsort(names, (size_t)n, sizeof *names, compare_names);
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "", names[k]);
}
