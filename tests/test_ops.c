/* The op table: shape inference and FLOP counts of every op, called directly on tensors
 * built here, including the batch rule and the errors a model author would meet. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "kernels.h"
#include "ops.h"
#include "suites.h"
#include "test_util.h"

/* A named f32 tensor from a dims string: tensor("a", "4,3", true). */
static pl_tensor tensor(const char *name, const char *dims, bool batched)
{
    pl_tensor t = pl_kc_tensor(dims, PL_F32, batched);
    t.name = name;
    return t;
}

typedef struct result {
    bool ok;
    pl_tensor out[4];
    double flops;
    char message[512];
    int blame_input, blame_attr;
} result;

static result infer(pl_op_kind kind, const pl_attrs *attrs, int n_in, const pl_tensor *in,
                    int n_out)
{
    result r = {0};
    const pl_tensor *inputs[8];
    pl_tensor *outputs[4];
    for (int i = 0; i < n_in; i++)
        inputs[i] = &in[i];
    for (int i = 0; i < n_out; i++)
        outputs[i] = &r.out[i];
    pl_attrs defaults;
    pl_attrs_default(&defaults);
    pl_infer_ctx ctx = {.in = inputs, .out = outputs, .n_in = n_in, .n_out = n_out,
                        .attrs = attrs ? attrs : &defaults, .blame_input = -1,
                        .blame_attr = -1};
    const pl_op_info *info = pl_op_info_of(kind);
    r.ok = info->infer(&ctx);
    if (r.ok)
        r.flops = info->flops(&ctx);
    memcpy(r.message, ctx.message, sizeof r.message);
    r.blame_input = ctx.blame_input;
    r.blame_attr = ctx.blame_attr;
    return r;
}

static void assert_shape(const pl_tensor *t, const char *want, bool batched)
{
    char got[96];
    pl_shape_format(t, got, sizeof got);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "\n    shape %s, wanted %s\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    CU_ASSERT_EQUAL(t->batch_axis, batched ? 0 : PL_NO_BATCH);
}

static void assert_fails(const result *r, const char *needle)
{
    CU_ASSERT_FALSE(r->ok);
    if (!strstr(r->message, needle))
        fprintf(stderr, "\n    message: %s\n    wanted:  %s\n", r->message, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->message, needle));
}

static pl_attrs attrs_default(void)
{
    pl_attrs a;
    pl_attrs_default(&a);
    return a;
}

static void test_matmul(void)
{
    pl_tensor in[2] = {tensor("x", "4,3", true), tensor("w", "3,5", false)};
    result r = infer(PL_OP_MATMUL, NULL, 2, in, 1);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[4,5]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 3 * 5, 1e-9);

    pl_attrs t = attrs_default();
    t.transpose_b = true;
    pl_tensor tb[2] = {tensor("x", "4,3", true), tensor("w", "5,3", false)};
    r = infer(PL_OP_MATMUL, &t, 2, tb, 1);
    assert_shape(&r.out[0], "[4,5]", true);

    pl_tensor bad[2] = {tensor("x", "4,3", true), tensor("w", "4,5", false)};
    r = infer(PL_OP_MATMUL, NULL, 2, bad, 1);
    assert_fails(&r, "inner dimensions differ: a is [4,3], b is [4,5]");
    CU_ASSERT_EQUAL(r.blame_input, 1);
}

static void test_matmul_batched(void)
{
    /* attention: [B,H,S,D] x [B,H,S,D]^T */
    pl_attrs t = attrs_default();
    t.transpose_b = true;
    pl_tensor qk[2] = {tensor("q", "2,4,8,16", true), tensor("k", "2,4,8,16", true)};
    result r = infer(PL_OP_MATMUL, &t, 2, qk, 1);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[2,4,8,8]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 2 * 4 * 8 * 8 * 16, 1e-6);

    /* a weight matrix broadcast over leading axes */
    pl_tensor bw[2] = {tensor("h", "2,8,16", true), tensor("w", "16,32", false)};
    r = infer(PL_OP_MATMUL, NULL, 2, bw, 1);
    assert_shape(&r.out[0], "[2,8,32]", true);

    /* the batch may not be contracted or moved */
    pl_attrs ta = attrs_default();
    ta.transpose_a = true;
    pl_tensor x[2] = {tensor("x", "4,3", true), tensor("w", "4,5", false)};
    r = infer(PL_OP_MATMUL, &ta, 2, x, 1);
    assert_fails(&r, "would sum over the batch");
    pl_tensor b2[2] = {tensor("w", "5,4", false), tensor("x", "4,3", true)};
    r = infer(PL_OP_MATMUL, NULL, 2, b2, 1);
    assert_fails(&r, "only a's rows or leading axes may hold it");
    pl_tensor stretch[2] = {tensor("h", "2,8,16", true), tensor("w", "3,16,4", false)};
    r = infer(PL_OP_MATMUL, NULL, 2, stretch, 1);
    assert_fails(&r, "do not broadcast");
}

static void test_binary_broadcast(void)
{
    pl_tensor bias[2] = {tensor("h", "4,10", true), tensor("b", "10", false)};
    result r = infer(PL_OP_ADD, NULL, 2, bias, 1);
    assert_shape(&r.out[0], "[4,10]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 40, 1e-9);

    pl_tensor pos[2] = {tensor("e", "4,8,16", true), tensor("p", "8,16", false)};
    r = infer(PL_OP_ADD, NULL, 2, pos, 1);
    assert_shape(&r.out[0], "[4,8,16]", true);

    pl_tensor gate[2] = {tensor("h", "4,16", true), tensor("g", "4,1", true)};
    r = infer(PL_OP_MUL, NULL, 2, gate, 1);
    assert_shape(&r.out[0], "[4,16]", true);

    pl_tensor mismatch[2] = {tensor("a", "4,10", true), tensor("b", "9", false)};
    r = infer(PL_OP_SUB, NULL, 2, mismatch, 1);
    assert_fails(&r, "shapes do not broadcast: [4,10] and [9]");

    pl_tensor over_batch[2] = {tensor("a", "4,10", true), tensor("b", "4,10", false)};
    r = infer(PL_OP_ADD, NULL, 2, over_batch, 1);
    assert_fails(&r, "would stretch over the batch");

    /* div broadcasts as the others; an attention mask [T,T] adds over [N,H] */
    pl_tensor scaled[2] = {tensor("x", "4,3,5,5", true), tensor("d", "3,1,1", false)};
    r = infer(PL_OP_DIV, NULL, 2, scaled, 1);
    assert_shape(&r.out[0], "[4,3,5,5]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 300, 1e-9);
    pl_tensor masked[2] = {tensor("scores", "4,2,6,6", true), tensor("mask", "6,6", false)};
    r = infer(PL_OP_ADD, NULL, 2, masked, 1);
    assert_shape(&r.out[0], "[4,2,6,6]", true);
    r = infer(PL_OP_DIV, NULL, 2, over_batch, 1);
    assert_fails(&r, "would stretch over the batch");

    pl_tensor labels[2] = {tensor("a", "4,10", true), tensor("b", "4,10", true)};
    labels[1].dtype = PL_I32;
    r = infer(PL_OP_ADD, NULL, 2, labels, 1);
    assert_fails(&r, "must be f32, not i32");
}

static void test_unary_and_softmax(void)
{
    static const pl_op_kind kinds[] = {PL_OP_RELU,        PL_OP_GELU,      PL_OP_TANH,
                                       PL_OP_SIGMOID,     PL_OP_SCALE,     PL_OP_LOG_SOFTMAX,
                                       PL_OP_SOFTMAX,     PL_OP_HARDSWISH, PL_OP_HARDSIGMOID,
                                       PL_OP_ERF,         PL_OP_EXP,       PL_OP_LOG,
                                       PL_OP_SQRT,        PL_OP_RSQRT,     PL_OP_ABS,
                                       PL_OP_SILU};
    pl_tensor x[1] = {tensor("x", "4,7", true)};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        result r = infer(kinds[k], NULL, 1, x, 1);
        CU_ASSERT_TRUE(r.ok);
        assert_shape(&r.out[0], "[4,7]", true);
        CU_ASSERT_TRUE(r.flops >= 28);
    }
    pl_attrs a = attrs_default();
    a.axis = 0;
    result r = infer(PL_OP_SOFTMAX, &a, 1, x, 1);
    assert_fails(&r, "it is the batch axis");
    a.axis = -3;
    r = infer(PL_OP_SOFTMAX, &a, 1, x, 1);
    assert_fails(&r, "axis -3 is out of range for rank 2");
    pl_attrs d = attrs_default();
    d.rate = 1.0;
    r = infer(PL_OP_DROPOUT, &d, 1, x, 1);
    assert_fails(&r, "rate must be below 1");
}

/* clamp needs a bound, and its bounds may not cross; one alone is enough. */
static void test_clamp(void)
{
    pl_tensor x[1] = {tensor("x", "4,7", true)};
    pl_attrs c = attrs_default();
    result r = infer(PL_OP_CLAMP, &c, 1, x, 1);
    assert_fails(&r, "needs \"min\", \"max\" or both");
    c.given = PL_ATTR_BIT(PL_ATTR_MAX);
    c.clamp_max = 6;
    r = infer(PL_OP_CLAMP, &c, 1, x, 1);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[4,7]", true);
    c.given |= PL_ATTR_BIT(PL_ATTR_MIN);
    c.clamp_min = 6;
    r = infer(PL_OP_CLAMP, &c, 1, x, 1);
    CU_ASSERT_TRUE(r.ok); /* min = max: a constant */
    c.clamp_min = 6.5;
    r = infer(PL_OP_CLAMP, &c, 1, x, 1);
    assert_fails(&r, "max 6 is below min 6.5");
    CU_ASSERT_EQUAL(r.blame_attr, PL_ATTR_MAX);
}

static void test_losses(void)
{
    pl_tensor ok[2] = {tensor("logits", "4,10", true), tensor("y", "4", true)};
    ok[1].dtype = PL_I32;
    result r = infer(PL_OP_SOFTMAX_CROSS_ENTROPY, NULL, 2, ok, 1);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[]", false);

    pl_tensor seq[2] = {tensor("logits", "4,32,96", true), tensor("y", "4,32", true)};
    seq[1].dtype = PL_I32;
    r = infer(PL_OP_SOFTMAX_CROSS_ENTROPY, NULL, 2, seq, 1);
    CU_ASSERT_TRUE(r.ok);

    pl_tensor wrong[2] = {tensor("logits", "4,10", true), tensor("y", "4,10", true)};
    wrong[1].dtype = PL_I32;
    r = infer(PL_OP_SOFTMAX_CROSS_ENTROPY, NULL, 2, wrong, 1);
    assert_fails(&r, "labels [4,10] must have the shape of the logits [4,10] without");
    wrong[1] = tensor("y", "4", true);
    r = infer(PL_OP_SOFTMAX_CROSS_ENTROPY, NULL, 2, wrong, 1);
    assert_fails(&r, "must be i32 class indices");

    pl_tensor mse[2] = {tensor("p", "4,3", true), tensor("t", "4,3", true)};
    r = infer(PL_OP_MSE, NULL, 2, mse, 1);
    assert_shape(&r.out[0], "[]", false);
    mse[1] = tensor("t", "4,2", true);
    r = infer(PL_OP_MSE, NULL, 2, mse, 1);
    assert_fails(&r, "prediction [4,3] and target [4,2] must have the same shape");
}

static void test_norms(void)
{
    pl_tensor ln[3] = {tensor("x", "4,8,16", true), tensor("g", "16", false),
                       tensor("b", "16", false)};
    result r = infer(PL_OP_LAYER_NORM, NULL, 3, ln, 1);
    assert_shape(&r.out[0], "[4,8,16]", true);
    ln[2] = tensor("b", "8", false);
    r = infer(PL_OP_LAYER_NORM, NULL, 3, ln, 1);
    assert_fails(&r, "\"b\" is [8] but must be [16]");

    pl_tensor bn[3] = {tensor("x", "4,6,5,5", true), tensor("g", "6", false),
                       tensor("b", "6", false)};
    r = infer(PL_OP_BATCH_NORM, NULL, 3, bn, 1);
    assert_shape(&r.out[0], "[4,6,5,5]", true);
    bn[1] = tensor("g", "5", false);
    r = infer(PL_OP_BATCH_NORM, NULL, 3, bn, 1);
    assert_fails(&r, "channel axis 1");
}

static void test_conv2d(void)
{
    pl_attrs a = attrs_default();
    a.stride[0] = a.stride[1] = 2;
    a.padding[0] = a.padding[1] = 1;
    pl_tensor in[3] = {tensor("x", "2,3,32,32", true), tensor("w", "16,3,3,3", false),
                       tensor("b", "16", false)};
    result r = infer(PL_OP_CONV2D, &a, 3, in, 1);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[2,16,16,16]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 16 * 16 * 16 * (2.0 * 3 * 3 * 3 + 1), 1e-6);

    pl_attrs g = attrs_default();
    g.groups = 4;
    pl_tensor grouped[2] = {tensor("x", "2,8,10,10", true), tensor("w", "8,2,3,3", false)};
    r = infer(PL_OP_CONV2D, &g, 2, grouped, 1);
    assert_shape(&r.out[0], "[2,8,8,8]", true);
    g.groups = 3;
    r = infer(PL_OP_CONV2D, &g, 2, grouped, 1);
    assert_fails(&r, "groups 3 must divide the input channels 8");

    pl_tensor channels[2] = {tensor("x", "2,3,8,8", true), tensor("w", "4,2,3,3", false)};
    r = infer(PL_OP_CONV2D, NULL, 2, channels, 1);
    assert_fails(&r, "must have 3 input channels");
    pl_tensor big[2] = {tensor("x", "2,3,2,2", true), tensor("w", "4,3,3,3", false)};
    r = infer(PL_OP_CONV2D, NULL, 2, big, 1);
    assert_fails(&r, "does not fit the input");
}

/* conv1d and conv3d; transposed convolutions by PyTorch's formula, (in - 1) * stride -
 * 2 * padding + dilation * (kernel - 1) + output_padding + 1, and their FLOPs: each
 * input element times a filter's worth of outputs. */
static void test_conv_nd(void)
{
    pl_attrs a = attrs_default();
    a.stride[0] = 2;
    a.padding[0] = 1;
    pl_tensor line[2] = {tensor("x", "2,3,11", true), tensor("w", "4,3,3", false)};
    result r = infer(PL_OP_CONV1D, &a, 2, line, 1);
    assert_shape(&r.out[0], "[2,4,6]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 6 * (2.0 * 3 * 3), 1e-6);

    pl_attrs v = attrs_default();
    v.stride[0] = 1, v.stride[1] = 2, v.stride[2] = 3;
    v.padding[0] = v.padding[1] = v.padding[2] = 1;
    v.dilation[2] = 2;
    pl_tensor volume[3] = {tensor("x", "2,4,5,9,13", true), tensor("w", "6,4,3,3,3", false),
                           tensor("b", "6", false)};
    r = infer(PL_OP_CONV3D, &v, 3, volume, 1);
    assert_shape(&r.out[0], "[2,6,5,5,4]", true);
    volume[1] = tensor("w", "6,4,3,3", false);
    r = infer(PL_OP_CONV3D, &v, 3, volume, 1);
    assert_fails(&r, "must have rank 5");

    pl_attrs t = attrs_default();
    t.stride[0] = t.stride[1] = 2;
    t.padding[0] = t.padding[1] = 1;
    t.output_padding[0] = 1;
    t.groups = 2;
    pl_tensor up[3] = {tensor("x", "2,4,5,6", true), tensor("w", "4,3,3,3", false),
                       tensor("b", "6", false)};
    r = infer(PL_OP_CONV_TRANSPOSE2D, &t, 3, up, 1);
    assert_shape(&r.out[0], "[2,6,10,11]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 5 * 6 * (2.0 * 3 * 3 * 3) + 2.0 * 6 * 10 * 11,
                           1e-6);
    t.output_padding[1] = 2;
    r = infer(PL_OP_CONV_TRANSPOSE2D, &t, 3, up, 1);
    assert_fails(&r, "output_padding 2 must be smaller than the stride 2");
    t.output_padding[1] = 0;
    up[2] = tensor("b", "3", false);
    r = infer(PL_OP_CONV_TRANSPOSE2D, &t, 3, up, 1);
    assert_fails(&r, "bias [3] must be [6]");
    pl_tensor rows[2] = {tensor("x", "2,4,5", true), tensor("w", "3,2,3", false)};
    r = infer(PL_OP_CONV_TRANSPOSE1D, NULL, 2, rows, 1);
    assert_fails(&r, "must have 4 rows, one per input channel");
    pl_attrs shrink = attrs_default();
    shrink.padding[0] = 3;
    rows[1] = tensor("w", "4,2,3", false);
    r = infer(PL_OP_CONV_TRANSPOSE1D, &shrink, 2, rows, 1); /* 5 - 1 - 6 + 2 + 1 = 1 */
    assert_shape(&r.out[0], "[2,2,1]", true);
    shrink.padding[0] = 4;
    r = infer(PL_OP_CONV_TRANSPOSE1D, &shrink, 2, rows, 1);
    assert_fails(&r, "does not fit");
}

static void test_pools(void)
{
    pl_attrs a = attrs_default();
    a.kernel[0] = a.kernel[1] = 2;
    pl_tensor x[1] = {tensor("x", "2,4,28,28", true)};
    result r = infer(PL_OP_MAX_POOL, &a, 1, x, 1); /* stride defaults to the kernel */
    assert_shape(&r.out[0], "[2,4,14,14]", true);
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 1;
    a.padding[0] = a.padding[1] = 1;
    a.given = PL_ATTR_BIT(PL_ATTR_KERNEL) | PL_ATTR_BIT(PL_ATTR_STRIDE);
    r = infer(PL_OP_AVG_POOL, &a, 1, x, 1);
    assert_shape(&r.out[0], "[2,4,28,28]", true);
    a.padding[0] = 2;
    r = infer(PL_OP_AVG_POOL, &a, 1, x, 1);
    assert_fails(&r, "more than half the kernel");
    r = infer(PL_OP_GLOBAL_AVG_POOL, NULL, 1, x, 1);
    assert_shape(&r.out[0], "[2,4]", true);

    /* ceil_mode, PyTorch's sizes: 112 -> 56 with kernel 3, stride 2 (floor: 55); a window
     * that would start in the right padding is dropped (5 with kernel 3, stride 3,
     * padding 1: 2, not 3) */
    pl_attrs c = attrs_default();
    c.kernel[0] = c.kernel[1] = 3;
    c.stride[0] = 2;
    c.stride[1] = 3;
    c.padding[1] = 1;
    c.given = PL_ATTR_BIT(PL_ATTR_KERNEL) | PL_ATTR_BIT(PL_ATTR_STRIDE);
    pl_tensor odd[1] = {tensor("x", "2,4,112,5", true)};
    r = infer(PL_OP_MAX_POOL, &c, 1, odd, 1);
    assert_shape(&r.out[0], "[2,4,55,2]", true);
    c.ceil_mode = true;
    r = infer(PL_OP_MAX_POOL, &c, 1, odd, 1);
    assert_shape(&r.out[0], "[2,4,56,2]", true);

    /* adaptive: any output size, larger than the input too; FLOPs count every cell read */
    pl_attrs ad = attrs_default();
    ad.output_size[0] = 7;
    ad.output_size[1] = 3;
    pl_tensor one[1] = {tensor("x", "2,4,1,5", true)};
    r = infer(PL_OP_ADAPTIVE_AVG_POOL, &ad, 1, one, 1);
    assert_shape(&r.out[0], "[2,4,7,3]", true);
    /* rows: 7 windows of the 1 row; columns [0,2) [1,4) [3,5): 7 cells */
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 7 * 7, 1e-9);
    pl_tensor flat[1] = {tensor("x", "2,20", true)};
    r = infer(PL_OP_ADAPTIVE_AVG_POOL, &ad, 1, flat, 1);
    assert_fails(&r, "must have rank 4");
}

/* Pooling over one and three spatial axes: sizes, FLOPs (a window's cells per output),
 * and the window named in full when it does not fit. */
static void test_pools_nd(void)
{
    pl_attrs a = attrs_default();
    a.kernel[0] = 3;
    a.kernel[1] = a.kernel[2] = 2;
    a.padding[0] = 1;
    a.given = PL_ATTR_BIT(PL_ATTR_KERNEL);
    pl_tensor volume[1] = {tensor("x", "2,4,8,6,5", true)};
    result r = infer(PL_OP_MAX_POOL3D, &a, 1, volume, 1); /* (8+2-3)/3+1, 6/2, 5/2 */
    assert_shape(&r.out[0], "[2,4,3,3,2]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 3 * 3 * 2 * 12, 1e-9);
    a.ceil_mode = true; /* the last depth window starts in the input: kept; width: 3 */
    r = infer(PL_OP_AVG_POOL3D, &a, 1, volume, 1);
    assert_shape(&r.out[0], "[2,4,3,3,3]", true);
    r = infer(PL_OP_MAX_POOL1D, &a, 1, volume, 1);
    assert_fails(&r, "must have rank 3");
    a.kernel[1] = 7;
    r = infer(PL_OP_MAX_POOL3D, &a, 1, volume, 1);
    assert_fails(&r, "kernel 3x7x2 does not fit the input [2,4,8,6,5]");

    pl_attrs line = attrs_default();
    line.kernel[0] = 4;
    line.stride[0] = 2;
    line.padding[0] = 2;
    line.given = PL_ATTR_BIT(PL_ATTR_KERNEL) | PL_ATTR_BIT(PL_ATTR_STRIDE);
    pl_tensor seq[1] = {tensor("x", "3,5,11", true)};
    r = infer(PL_OP_AVG_POOL1D, &line, 1, seq, 1); /* (11+4-4)/2+1 */
    assert_shape(&r.out[0], "[3,5,6]", true);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 3.0 * 5 * 6 * 4, 1e-9);

    pl_attrs ad = attrs_default();
    ad.output_size[0] = 4;
    r = infer(PL_OP_ADAPTIVE_AVG_POOL1D, &ad, 1, seq, 1);
    assert_shape(&r.out[0], "[3,5,4]", true);
    ad.output_size[1] = ad.output_size[2] = 1;
    r = infer(PL_OP_ADAPTIVE_AVG_POOL3D, &ad, 1, volume, 1);
    assert_shape(&r.out[0], "[2,4,4,1,1]", true);
    /* depth windows [0,2) [2,4) [4,6) [6,8), each over the whole 6x5 plane */
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 2.0 * 4 * 8 * 6 * 5, 1e-9);
}

static void test_join_and_cut(void)
{
    pl_attrs a = attrs_default();
    a.axis = 1;
    pl_tensor parts[3] = {tensor("a", "2,3,5,5", true), tensor("b", "2,4,5,5", true),
                          tensor("c", "2,1,5,5", true)};
    result r = infer(PL_OP_CONCAT, &a, 3, parts, 1);
    assert_shape(&r.out[0], "[2,8,5,5]", true);
    parts[2] = tensor("c", "2,1,4,5", true);
    r = infer(PL_OP_CONCAT, &a, 3, parts, 1);
    assert_fails(&r, "does not match");
    CU_ASSERT_EQUAL(r.blame_input, 2);
    a.axis = 0;
    r = infer(PL_OP_CONCAT, &a, 2, parts, 1);
    assert_fails(&r, "cannot concatenate along axis 0");

    pl_attrs s = attrs_default();
    s.axis = 1;
    pl_tensor x[1] = {tensor("x", "2,6,3", true)};
    r = infer(PL_OP_SPLIT, &s, 1, x, 3);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[2], "[2,2,3]", true);
    r = infer(PL_OP_SPLIT, &s, 1, x, 4);
    assert_fails(&r, "does not split into 4 equal parts");
    static const int64_t sizes[] = {1, 5};
    s.sizes = (pl_int_list){2, sizes};
    s.given = PL_ATTR_BIT(PL_ATTR_SIZES);
    r = infer(PL_OP_SPLIT, &s, 1, x, 2);
    assert_shape(&r.out[1], "[2,5,3]", true);
    r = infer(PL_OP_SPLIT, &s, 1, x, 3);
    assert_fails(&r, "2 sizes for 3 outputs");

    pl_attrs sl = attrs_default();
    sl.axis = 1, sl.start = 2, sl.end = 5;
    r = infer(PL_OP_SLICE, &sl, 1, x, 1);
    assert_shape(&r.out[0], "[2,3,3]", true);
    sl.end = 7;
    r = infer(PL_OP_SLICE, &sl, 1, x, 1);
    assert_fails(&r, "outside axis 1");
}

static void test_shape_changes(void)
{
    static const int64_t per_sample[] = {3, 4};
    pl_attrs a = attrs_default();
    a.shape = (pl_int_list){2, per_sample};
    pl_tensor x[1] = {tensor("x", "5,12", true)};
    result r = infer(PL_OP_RESHAPE, &a, 1, x, 1);
    assert_shape(&r.out[0], "[5,3,4]", true);
    pl_tensor w[1] = {tensor("w", "12", false)};
    r = infer(PL_OP_RESHAPE, &a, 1, w, 1);
    assert_shape(&r.out[0], "[3,4]", false);
    pl_tensor odd[1] = {tensor("x", "5,13", true)};
    r = infer(PL_OP_RESHAPE, &a, 1, odd, 1);
    assert_fails(&r, "has 13 elements per sample, the new shape 12");

    pl_tensor img[1] = {tensor("x", "5,2,3,4", true)};
    r = infer(PL_OP_FLATTEN, NULL, 1, img, 1);
    assert_shape(&r.out[0], "[5,24]", true);

    static const int64_t swap[] = {0, 2, 1, 3}, moves_batch[] = {1, 0, 2, 3},
                         twice[] = {0, 1, 1, 3};
    pl_attrs t = attrs_default();
    t.perm = (pl_int_list){4, swap};
    r = infer(PL_OP_TRANSPOSE, &t, 1, img, 1);
    assert_shape(&r.out[0], "[5,3,2,4]", true);
    t.perm = (pl_int_list){4, moves_batch};
    r = infer(PL_OP_TRANSPOSE, &t, 1, img, 1); /* the batch moves with its axis */
    CU_ASSERT_TRUE(r.ok);
    CU_ASSERT_EQUAL(r.out[0].batch_axis, 1);
    t.perm = (pl_int_list){4, twice};
    r = infer(PL_OP_TRANSPOSE, &t, 1, img, 1);
    assert_fails(&r, "not a permutation");
}

/* A tensor batched on `axis`. */
static pl_tensor batched_on(const char *name, const char *dims, int axis)
{
    pl_tensor t = tensor(name, dims, true);
    t.batch_axis = axis;
    return t;
}

static void assert_batch_axis(const result *r, const char *want, int axis)
{
    CU_ASSERT_TRUE(r->ok);
    if (!r->ok)
        fprintf(stderr, "\n    message: %s\n", r->message);
    char got[96];
    pl_shape_format(&r->out[0], got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, want);
    CU_ASSERT_EQUAL(r->out[0].batch_axis, axis);
}

/* Sequence-first tensors [T,N,E]: ops carry the batch axis where it goes, and refuse to
 * reduce, cut or mix along it. */
static void test_batch_axis(void)
{
    pl_tensor x[1] = {batched_on("x", "7,4,6", 1)};
    pl_tensor w[2] = {x[0], tensor("w", "6,5", false)};
    result r = infer(PL_OP_MATMUL, NULL, 2, w, 1);
    assert_batch_axis(&r, "[7,4,5]", 1);
    pl_tensor bias[2] = {x[0], tensor("b", "4,1", false)};
    r = infer(PL_OP_ADD, NULL, 2, bias, 1);
    assert_fails(&r, "would stretch over the batch axis 1");
    pl_tensor rows[2] = {x[0], tensor("p", "7,1,6", false)};
    r = infer(PL_OP_ADD, NULL, 2, rows, 1);
    assert_batch_axis(&r, "[7,4,6]", 1);
    pl_tensor apart[2] = {x[0], batched_on("y", "7,4,6", 0)};
    r = infer(PL_OP_ADD, NULL, 2, apart, 1);
    assert_fails(&r, "would hold the batch on axis 0 of the result, but \"x\" on axis 1");

    static const int64_t to_front[] = {1, 0, 2};
    pl_attrs t = attrs_default();
    t.perm = (pl_int_list){3, to_front};
    r = infer(PL_OP_TRANSPOSE, &t, 1, x, 1);
    assert_batch_axis(&r, "[4,7,6]", 0);

    pl_attrs a = attrs_default();
    a.axis = 1;
    r = infer(PL_OP_SOFTMAX, &a, 1, x, 1);
    assert_fails(&r, "cannot normalise along axis 1 of \"x\": it is the batch axis");
    a.axis = 0;
    r = infer(PL_OP_SOFTMAX, &a, 1, x, 1);
    assert_batch_axis(&r, "[7,4,6]", 1);
    r = infer(PL_OP_SLICE, &(pl_attrs){.axis = 1, .start = 0, .end = 2}, 1, x, 1);
    assert_fails(&r, "cannot slice along axis 1");
    static const int64_t first[] = {0};
    pl_attrs reduce = attrs_default();
    reduce.axes = (pl_int_list){1, first};
    r = infer(PL_OP_REDUCE_MEAN, &reduce, 1, x, 1);
    assert_batch_axis(&r, "[4,6]", 0);

    /* reshape: per-sample shape, batch placed by "batch_axis"; samples must not mix */
    static const int64_t split_e[] = {7, 2, 3}, merged[] = {42};
    pl_attrs re = attrs_default();
    re.shape = (pl_int_list){3, split_e};
    re.batch_axis = 1;
    r = infer(PL_OP_RESHAPE, &re, 1, x, 1);
    assert_batch_axis(&r, "[7,4,2,3]", 1);
    re.shape = (pl_int_list){1, merged};
    re.batch_axis = 0;
    r = infer(PL_OP_RESHAPE, &re, 1, x, 1);
    assert_fails(&r, "would mix samples");
    CU_ASSERT_EQUAL(r.blame_attr, PL_ATTR_SHAPE); /* "batch_axis" when given */

    /* ops that read the batch on axis 0 say so */
    pl_tensor img[1] = {batched_on("img", "3,4,5,5", 1)};
    r = infer(PL_OP_FLATTEN, NULL, 1, img, 1);
    assert_fails(&r, "\"img\" has the batch on axis 1, but this op needs it on axis 0");
    pl_tensor last[3] = {batched_on("h", "6,4", 1), tensor("g", "4", false),
                         tensor("b", "4", false)};
    r = infer(PL_OP_LAYER_NORM, NULL, 3, last, 1);
    assert_fails(&r, "cannot normalise over axis 1 of \"h\": it is the batch axis");

    /* matmul: the batch may be a's rows anywhere, never the summed axis */
    pl_tensor m[2] = {batched_on("q", "2,4,6", 1), tensor("k", "2,6,3", false)};
    r = infer(PL_OP_MATMUL, NULL, 2, m, 1);
    assert_batch_axis(&r, "[2,4,3]", 1);
    pl_tensor summed[2] = {batched_on("q", "2,6,4", 2), tensor("k", "2,4,3", false)};
    r = infer(PL_OP_MATMUL, NULL, 2, summed, 1);
    assert_fails(&r, "would sum over the batch");
}

/* A reshape may merge the batch with the axes after it (Swin's windows) and split it out
 * again: each sample then owns batch_group consecutive elements of the batch axis. */
static void test_merged_batch(void)
{
    static const int64_t window[] = {4, 6}, grid[] = {3, 4, 6}, rows[] = {7, 5}, cut[] = {5};
    pl_attrs re = attrs_default();
    re.shape = (pl_int_list){2, window};
    re.batch_group = 3;
    pl_tensor x[1] = {tensor("x", "2,3,4,6", true)};
    result r = infer(PL_OP_RESHAPE, &re, 1, x, 1);
    assert_batch_axis(&r, "[6,4,6]", 0);
    CU_ASSERT_EQUAL(pl_tensor_batch_group(&r.out[0]), 3);

    pl_tensor windows[1] = {r.out[0]};
    re = attrs_default();
    re.shape = (pl_int_list){3, grid};
    r = infer(PL_OP_RESHAPE, &re, 1, windows, 1);
    assert_batch_axis(&r, "[2,3,4,6]", 0);
    CU_ASSERT_EQUAL(pl_tensor_batch_group(&r.out[0]), 1);
    re.shape = (pl_int_list){2, window}; /* per sample: 3 windows of [4,6], not one */
    r = infer(PL_OP_RESHAPE, &re, 1, windows, 1);
    assert_fails(&r, "has 72 elements per sample, the new shape 24");

    pl_tensor seq[1] = {batched_on("y", "7,2,3,5", 1)};
    re.shape = (pl_int_list){2, rows};
    re.batch_axis = 1;
    re.batch_group = 3;
    r = infer(PL_OP_RESHAPE, &re, 1, seq, 1);
    assert_batch_axis(&r, "[7,6,5]", 1);
    CU_ASSERT_EQUAL(pl_tensor_batch_group(&r.out[0]), 3);

    pl_tensor before[1] = {batched_on("z", "3,2,5", 1)}; /* [3N, 5]: the batch inside */
    re.shape = (pl_int_list){1, cut};
    re.batch_axis = 0;
    r = infer(PL_OP_RESHAPE, &re, 1, before, 1);
    assert_fails(&r, "the batch may merge only with the axes after it");

    /* [3, 2 samples x 4, 5]: sample 1 is the second half of each of the 3 outer runs */
    pl_tensor merged = batched_on("m", "3,8,5", 1);
    merged.batch_group = 4;
    pl_batch_layout l = pl_tensor_batch_layout(&merged);
    CU_ASSERT(l.outer == 3 && l.batch == 2 && l.inner == 20 && l.group == 4);
    float whole[120], part[60];
    for (int i = 0; i < 120; i++)
        whole[i] = (float)i;
    pl_batch_gather(&merged, whole, 1, 1, part);
    int wrong = 0;
    for (int o = 0; o < 3; o++)
        for (int j = 0; j < 20; j++)
            wrong += part[o * 20 + j] != whole[o * 40 + 20 + j];
    CU_ASSERT_EQUAL(wrong, 0);
}

static void test_embedding_and_reduce(void)
{
    pl_tensor in[2] = {tensor("table", "1000,16", false), tensor("ids", "4,8", true)};
    in[1].dtype = PL_I32;
    result r = infer(PL_OP_EMBEDDING, NULL, 2, in, 1);
    assert_shape(&r.out[0], "[4,8,16]", true);
    in[1].dtype = PL_F32;
    r = infer(PL_OP_EMBEDDING, NULL, 2, in, 1);
    assert_fails(&r, "must be i32");
    /* Its gradient adds the looked-up rows only: the FLOPs (what pacing holds the task
     * for) are the rows' gradient's elements, not the table's. */
    pl_tensor scatter[3] = {tensor("table/grad", "1000,16", false), tensor("dy", "4,8,16", true),
                            tensor("ids", "4,8", true)};
    scatter[0].kind = PL_TENSOR_STATE;
    scatter[2].dtype = PL_I32;
    r = infer(PL_OP_SCATTER_ACCUMULATE, NULL, 3, scatter, 0);
    CU_ASSERT_TRUE(r.ok);
    CU_ASSERT_DOUBLE_EQUAL(r.flops, 4 * 8 * 16, 1e-9);

    static const int64_t last[] = {-1}, batch[] = {0}, twice[] = {1, -1};
    pl_attrs a = attrs_default();
    a.axes = (pl_int_list){1, last};
    pl_tensor x[1] = {tensor("x", "4,8", true)};
    r = infer(PL_OP_REDUCE_MEAN, &a, 1, x, 1);
    assert_shape(&r.out[0], "[4]", true);
    a.keepdims = true;
    r = infer(PL_OP_REDUCE_SUM, &a, 1, x, 1);
    assert_shape(&r.out[0], "[4,1]", true);
    a.axes = (pl_int_list){1, batch};
    r = infer(PL_OP_REDUCE_SUM, &a, 1, x, 1);
    assert_fails(&r, "cannot reduce axis 0");
    a.axes = (pl_int_list){2, twice};
    r = infer(PL_OP_REDUCE_SUM, &a, 1, x, 1);
    assert_fails(&r, "listed twice");
}

static void test_gate_and_lstm(void)
{
    pl_attrs k = attrs_default();
    k.k = 2;
    pl_tensor logits[1] = {tensor("g", "4,8", true)};
    result r = infer(PL_OP_TOPK_GATE, &k, 1, logits, 1);
    assert_shape(&r.out[0], "[4,8]", true);
    k.k = 9;
    r = infer(PL_OP_TOPK_GATE, &k, 1, logits, 1);
    assert_fails(&r, "k 9 exceeds the 8 experts");

    pl_tensor cell[5] = {tensor("x", "4,10", true), tensor("w", "30,80", false),
                         tensor("b", "80", false), tensor("h", "4,20", true),
                         tensor("c", "4,20", true)};
    r = infer(PL_OP_LSTM_CELL, NULL, 3, cell, 2);
    CU_ASSERT_TRUE(r.ok);
    assert_shape(&r.out[0], "[4,20]", true);
    assert_shape(&r.out[1], "[4,20]", true);
    CU_ASSERT_TRUE(r.flops >= 2.0 * 4 * 30 * 80);
    r = infer(PL_OP_LSTM_CELL, NULL, 5, cell, 2);
    CU_ASSERT_TRUE(r.ok);
    r = infer(PL_OP_LSTM_CELL, NULL, 4, cell, 2);
    assert_fails(&r, "give both h and c, or neither");
    cell[1] = tensor("w", "31,80", false);
    r = infer(PL_OP_LSTM_CELL, NULL, 3, cell, 2);
    assert_fails(&r, "weight [31,80] must be [30,80]");

    /* projected: gx [N,4H] [, w [H,4H], h, c] */
    pl_tensor projected[4] = {tensor("gx", "4,80", true), tensor("w", "20,80", false),
                              tensor("h", "4,20", true), tensor("c", "4,20", true)};
    r = infer(PL_OP_LSTM_CELL, NULL, 1, projected, 2);
    assert_shape(&r.out[1], "[4,20]", true);
    CU_ASSERT_TRUE(r.flops < 2.0 * 4 * 20 * 80);
    r = infer(PL_OP_LSTM_CELL, NULL, 4, projected, 2);
    assert_shape(&r.out[0], "[4,20]", true);
    CU_ASSERT_TRUE(r.flops >= 2.0 * 4 * 20 * 80);
    r = infer(PL_OP_LSTM_CELL, NULL, 2, projected, 2);
    assert_fails(&r, "give x, w, b [, h, c], or gate inputs gx [, w, h, c]");
    projected[1] = tensor("w", "30,80", false);
    r = infer(PL_OP_LSTM_CELL, NULL, 4, projected, 2);
    assert_fails(&r, "weight [30,80] must be [20,80] for gate inputs [4,80]");
    projected[0] = tensor("gx", "4,81", true);
    r = infer(PL_OP_LSTM_CELL, NULL, 1, projected, 2);
    assert_fails(&r, "\"gx\" have 81 columns; they must be 4H");
}

static void test_table_is_complete(void)
{
    for (int k = 0; k < PL_OP_COUNT; k++) {
        const pl_op_info *info = pl_op_info_of((pl_op_kind)k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(info->name);
        CU_ASSERT_PTR_NOT_NULL(info->infer);
        CU_ASSERT_PTR_NOT_NULL(info->flops);
        CU_ASSERT_EQUAL(pl_op_from_name(info->name), k);
        CU_ASSERT_EQUAL(info->required & ~info->attrs, 0u);
        CU_ASSERT_PTR_NOT_NULL(pl_kernel_of((pl_op_kind)k)->kernel);
    }
    CU_ASSERT_PTR_NULL(pl_kernel_of(PL_OP_COUNT));
    for (int id = 0; id < PL_ATTR_COUNT; id++) {
        const pl_attr_info *attr = pl_attr_info_of((pl_attr_id)id);
        CU_ASSERT_EQUAL(pl_attr_from_name(attr->name), id);
        /* an enum names its values; nothing else has names */
        CU_ASSERT_EQUAL(attr->type == PL_ATTR_TYPE_ENUM, attr->names != NULL);
    }
    CU_ASSERT_EQUAL(pl_op_from_name("matmull"), PL_OP_COUNT);
    char names[1024];
    pl_op_names_join(names, sizeof names);
    const char *first = "abs, adaptive_avg_pool, adaptive_avg_pool1d, adaptive_avg_pool3d, add";
    CU_ASSERT_EQUAL(strncmp(names, first, strlen(first)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(names, ", transpose")); /* the buffer holds them all */
}

void pl_register_ops_tests(void)
{
    static const pl_test_case cases[] = {
        {"matmul shapes, FLOPs and errors", test_matmul},
        {"batched matmul keeps the batch axis", test_matmul_batched},
        {"binary ops broadcast like NumPy", test_binary_broadcast},
        {"unary ops, softmax axes, dropout rate", test_unary_and_softmax},
        {"clamp bounds", test_clamp},
        {"losses are scalars over matching labels", test_losses},
        {"layer and batch norm parameters", test_norms},
        {"conv2d stride, padding, groups, bias", test_conv2d},
        {"conv1d, conv3d and transposed convolutions", test_conv_nd},
        {"pooling windows", test_pools},
        {"pooling over one and three spatial axes", test_pools_nd},
        {"concat, split, slice", test_join_and_cut},
        {"reshape, flatten, transpose", test_shape_changes},
        {"the batch on any axis", test_batch_axis},
        {"the batch merged with the axes after it", test_merged_batch},
        {"embedding and reductions", test_embedding_and_reduce},
        {"top-k gate and LSTM cell", test_gate_and_lstm},
        {"op, kernel and attribute tables are complete", test_table_is_complete},
        {NULL, NULL},
    };
    pl_test_add_suite("ops", cases);
}
