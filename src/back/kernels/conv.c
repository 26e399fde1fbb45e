/* Convolution of 1 to 3 spatial axes (NCL, NCHW, NCDHW; grouped, strided, padded,
 * dilated) as im2col + cblas_sgemm, its two gradients, and the transposed convolution,
 * which is the input gradient with a bias (depthwise filters: conv_depthwise.c; 3x3 at
 * stride 1, forward and input gradient: conv_winograd.c).
 *
 * A "column matrix" of one sample and group has a row per (input channel, kernel row,
 * kernel column) and a column per output position; the convolution is then the group's
 * filter [Og, K] times it. A 1x1 filter with stride 1 and no padding needs no copy: the
 * input itself is that matrix.
 *
 * Threads share "chunks" of work whose extent is a function of the shapes only, never of
 * nth: OpenBLAS does not promise bitwise equal results for the same element computed by
 * calls of different shapes, so a chunking that followed nth would make results follow
 * it too. With fixed chunks each output element comes from the same calls in the same
 * order for any nth, so all three kernels are bitwise nth-independent (the filter
 * gradient's sum over samples included: the sample blocks are fixed too, and summed in
 * a fixed order).
 *
 *   conv:             chunk = (sample, group, block of output columns)
 *   conv_grad_input:  chunk = (sample, group, block of input channels); the block's
 *                     rows of w^T.dy, then col2im into those channels of dx only;
 *                     conv_transpose likewise, its bias added by `finish`
 *   conv_grad_filter: chunk = (group, block of input channels, block of samples);
 *                     sample blocks after the first add into copies of dw that
 *                     `finish` sums in block order; dbias shared by channel */
#include <cblas.h>
#include <string.h>

#include "conv_impl.h"
#include "kernels.h"
#include "kernels_impl.h"

/* Forward column blocks: wide enough that repacking the filter per call is negligible,
 * narrow enough to give threads several chunks per sample of a large image. */
#define MIN_BLOCK_COLUMNS INT64_C(64)
#define MAX_BLOCK_COLUMNS INT64_C(1024)
/* The filter gradient is cut into about this many chunks for the threads to share, by
 * input channels while a chunk's sgemm keeps at least MIN_FILTER_COLUMNS columns (a
 * narrower sgemm runs far below the machine's peak), then by samples. */
#define FILTER_GRAD_CHUNKS INT64_C(32)
#define MIN_FILTER_COLUMNS INT64_C(256)
/* A column buffer of the filter gradient holds at least this many output positions (or
 * all of them), as few channels as that takes: its sgemm sums over the positions. */
#define MIN_FILTER_BAND INT64_C(1024)
/* On flat volumes, channel blocks are cut only when groups and samples give fewer chunks
 * than this: thinner blocks make thinner products. */
#define FLAT_FILTER_CHUNKS INT64_C(8)

/* x [n, c, spatial...], w [o, c / groups, spatial...], y [n, o, spatial...] of a
 * convolution with 1 to 3 spatial axes; attributes give one value per spatial axis, and
 * the missing leading axes (depth, then height) have size 1. */
static conv_geom geometry(const pl_tensor *x, const pl_tensor *w, const pl_tensor *y,
                          const pl_attrs *at)
{
    int spatial = x->rank - 2;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int64_t st[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
    for (int a = 0; a < spatial; a++) {
        int slot = 3 - spatial + a;
        in[slot] = x->dims[2 + a];
        k[slot] = w->dims[2 + a];
        out[slot] = y->dims[2 + a];
        st[slot] = at->stride[a];
        pad[slot] = at->padding[a];
        dil[slot] = at->dilation[a];
    }
    conv_geom g = {
        .n = x->dims[0], .c = x->dims[1], .d = in[0], .h = in[1], .w = in[2],
        .o = w->dims[0], .kd = k[0], .kh = k[1], .kw = k[2],
        .od = out[0], .oh = out[1], .ow = out[2],
        .groups = at->groups,
        .sd = st[0], .sh = st[1], .sw = st[2],
        .pd = pad[0], .ph = pad[1], .pw = pad[2],
        .dd = dil[0], .dh = dil[1], .dw = dil[2],
    };
    g.cg = g.c / g.groups;
    g.og = g.o / g.groups;
    g.taps = g.kd * g.kh * g.kw;
    g.k = g.cg * g.taps;
    g.hw = g.d * g.h * g.w;
    g.ohw = g.od * g.oh * g.ow;
    g.direct = g.taps == 1 && g.sd == 1 && g.sh == 1 && g.sw == 1 && g.pd == 0 && g.ph == 0 &&
               g.pw == 0;
    return g;
}


/* ---- convolution --------------------------------------------------------------------------- */

static int64_t forward_block_columns(const conv_geom *g)
{
    int64_t fit = clamp(COLUMN_BUFFER_FLOATS / g->k, MIN_BLOCK_COLUMNS, MAX_BLOCK_COLUMNS);
    return even_block(g->ohw, fit);
}

static conv_geom forward_geometry(const pl_kernel_args *args)
{
    return geometry(args->in_t[0], args->in_t[1], args->out_t[0], &args->op->attrs);
}

PL_WORKSPACE(conv)
{
    conv_geom g = forward_geometry(args);
    if (conv_winograd(&g))
        return pl_conv_winograd_workspace(&g, args->nth);
    if (conv_batched(&g))
        return pl_conv_batched_workspace(&g, args->nth);
    if (conv_depthwise(&g))
        return (size_t)args->nth * (size_t)pl_conv_depthwise_floats(&g) * sizeof(float);
    if (g.direct)
        return 0;
    return (size_t)args->nth * (size_t)(g.k * forward_block_columns(&g)) * sizeof(float);
}

/* y[n, group's channels, j0:j1] = w_g . col (+ bias). */
PL_KERNEL(conv)
{
    conv_geom g = forward_geometry(args);
    const float *x = args->in[0], *w = args->in[1];
    const float *bias = args->op->n_inputs == 3 ? args->in[2] : NULL;
    float *y = args->out[0];
    if (conv_depthwise(&g)) {
        pl_conv_depthwise(&g, x, w, bias, y,
                          (float *)args->work + args->ith * pl_conv_depthwise_floats(&g),
                          args->ith, args->nth);
        return;
    }
    if (conv_winograd(&g)) {
        pl_conv_winograd(&g, x, w, bias, y, args->work, args->ith, args->nth);
        return;
    }
    if (conv_batched(&g)) {
        pl_conv_batched(&g, x, w, bias, y, args->work, args->ith, args->nth);
        return;
    }
    int64_t block = forward_block_columns(&g), blocks = ceil_div(g.ohw, block);
    float *col = g.direct ? NULL : (float *)args->work + (int64_t)args->ith * g.k * block;
    int64_t begin, end;
    pl_kernel_share(g.n * g.groups * blocks, args->ith, args->nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t b = chunk % blocks, gi = chunk / blocks % g.groups, ni = chunk / blocks / g.groups;
        int64_t j0 = b * block, j1 = j0 + block < g.ohw ? j0 + block : g.ohw, cols = j1 - j0;
        const float *xg = x + (ni * g.c + gi * g.cg) * g.hw;
        float *yg = y + (ni * g.o + gi * g.og) * g.ohw + j0;
        const float *source = xg + j0;
        int64_t ld = g.hw;
        if (!g.direct) {
            pl_conv_im2col(&g, xg, 0, g.cg, j0, j1, col, cols);
            source = col;
            ld = cols;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.og, (int)cols, (int)g.k,
                    1.0f, w + gi * g.og * g.k, (int)g.k, source, (int)ld, 0.0f, yg,
                    (int)g.ohw);
        if (bias)
            for (int64_t r = 0; r < g.og; r++) {
                float add = bias[gi * g.og + r];
                float *out = yg + r * g.ohw;
                for (int64_t j = 0; j < cols; j++)
                    out[j] += add;
            }
    }
}

/* ---- input gradient, and the transposed convolution --------------------------------- */

static conv_geom grad_geometry(const pl_kernel_args *args)
{
    /* dy, x, w: the forward's output, input and filter */
    return geometry(args->in_t[1], args->in_t[2], args->in_t[0], &args->op->attrs);
}

/* x, w -> y: the convolution whose input gradient it is maps y back to x. */
static conv_geom transposed_geometry(const pl_kernel_args *args)
{
    return geometry(args->out_t[0], args->in_t[1], args->in_t[0], &args->op->attrs);
}

/* Input channels per chunk: their rows of dcol fill at most one column buffer. */
static int64_t channel_block(const conv_geom *g)
{
    return even_block(g->cg, COLUMN_BUFFER_FLOATS / (g->taps * g->ohw));
}

static size_t input_gradient_workspace(const conv_geom *g, int nth)
{
    if (conv_winograd(g))
        return pl_conv_winograd_grad_input_workspace(g, nth);
    if (conv_batched(g))
        return pl_conv_batched_grad_input_workspace(g, nth);
    if (conv_depthwise(g))
        return (size_t)nth * (size_t)pl_conv_depthwise_floats(g) * sizeof(float);
    if (g->direct)
        return 0;
    return (size_t)nth * (size_t)(channel_block(g) * g->taps * g->ohw) * sizeof(float);
}

/* dx = col2im(w_g^T . dy), one block of input channels at a time: the block's rows of
 * w_g^T are the block's columns of w_g. */
static void input_gradient(const conv_geom *g, const float *dy, const float *w, float *dx,
                           float *work, int ith, int nth)
{
    if (conv_depthwise(g)) {
        pl_conv_depthwise_grad_input(g, dy, w, dx, work + ith * pl_conv_depthwise_floats(g), ith,
                                     nth);
        return;
    }
    if (conv_winograd(g)) {
        pl_conv_winograd_grad_input(g, dy, w, dx, work, ith, nth);
        return;
    }
    if (conv_batched(g)) {
        pl_conv_batched_grad_input(g, dy, w, dx, work, ith, nth);
        return;
    }
    int64_t block = channel_block(g), blocks = ceil_div(g->cg, block);
    float *dcol = g->direct ? NULL : work + (int64_t)ith * block * g->taps * g->ohw;
    int64_t begin, end;
    pl_kernel_share(g->n * g->groups * blocks, ith, nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t b = chunk % blocks, gi = chunk / blocks % g->groups;
        int64_t ni = chunk / blocks / g->groups;
        int64_t c0 = b * block, c1 = c0 + block < g->cg ? c0 + block : g->cg;
        int64_t rows = (c1 - c0) * g->taps;
        const float *dyg = dy + (ni * g->o + gi * g->og) * g->ohw;
        const float *wg = w + gi * g->og * g->k + c0 * g->taps;
        float *dxg = dx + (ni * g->c + gi * g->cg) * g->hw;
        float *target = g->direct ? dxg + c0 * g->hw : dcol;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)g->ohw,
                    (int)g->og, 1.0f, wg, (int)g->k, dyg, (int)g->ohw, 0.0f, target,
                    (int)g->ohw);
        if (!g->direct)
            pl_conv_col2im(g, dcol, g->ohw, c0, c1, dxg);
    }
}

PL_WORKSPACE(conv_grad_input)
{
    conv_geom g = grad_geometry(args);
    return input_gradient_workspace(&g, args->nth);
}

PL_KERNEL(conv_grad_input)
{
    conv_geom g = grad_geometry(args);
    input_gradient(&g, args->in[0], args->in[2], args->out[0], args->work, args->ith,
                   args->nth);
}

PL_WORKSPACE(conv_transpose)
{
    conv_geom g = transposed_geometry(args);
    return input_gradient_workspace(&g, args->nth);
}

PL_KERNEL(conv_transpose)
{
    conv_geom g = transposed_geometry(args);
    input_gradient(&g, args->in[0], args->in[1], args->out[0], args->work, args->ith,
                   args->nth);
}

/* y += bias, once every thread's share of y is written. */
PL_FINISH(conv_transpose)
{
    if (args->op->n_inputs < 3)
        return;
    conv_geom g = transposed_geometry(args);
    const float *bias = args->in[2];
    float *y = args->out[0];
    for (int64_t ni = 0; ni < g.n; ni++)
        for (int64_t ch = 0; ch < g.c; ch++) {
            float add = bias[ch], *plane = y + (ni * g.c + ch) * g.hw;
            for (int64_t i = 0; i < g.hw; i++)
                plane[i] += add;
        }
}

/* ---- filter gradient ------------------------------------------------------------------ */

/* The fixed cut of the filter gradient into (group, input-channel block, sample block)
 * chunks. For im2col, channel blocks fit a column buffer and are otherwise as many as give
 * FILTER_GRAD_CHUNKS chunks, down to MIN_FILTER_COLUMNS columns of dw each; on flat
 * volumes (conv_flat.c) a block keeps every channel unless the groups and samples give
 * too few chunks, and at least FLAT_MIN_CHANNELS channels. If that is too few chunks, the
 * samples are cut into blocks too, each adding into its own copy of dw (block 0 into dw
 * itself, the others in the workspace), summed by `finish` in block order. Batched
 * convolutions (conv_batched.c) take sample blocks wide enough for one product each. */
typedef struct filter_plan {
    bool flat, batched;
    flat_layout layout;
    int64_t c_block, c_blocks, s_block, s_blocks;
    int64_t band; /* im2col: output positions a column buffer holds (else all) */
} filter_plan;

static filter_plan filter_grad_plan(const conv_geom *g)
{
    filter_plan p = {.flat = false, .batched = conv_batched_filter(g)};
    if (conv_depthwise(g)) { /* pl_conv_depthwise_grad_filter: whole channels, no copies */
        p.c_block = p.c_blocks = 1;
        p.s_block = g->n;
        p.s_blocks = 1;
        p.band = g->ohw;
        return p;
    }
    int64_t c_blocks;
    if (conv_flat_filter(g, &p.layout)) {
        p.flat = true;
        c_blocks = clamp(ceil_div(FLAT_FILTER_CHUNKS, g->groups * g->n), 1,
                         g->cg / FLAT_MIN_CHANNELS);
    } else {
        int64_t widest = p.batched ? pl_conv_batched_samples(g) * g->ohw
                         : g->ohw < MIN_FILTER_BAND ? g->ohw
                                                    : MIN_FILTER_BAND;
        c_blocks = ceil_div(g->cg, even_block(g->cg, COLUMN_BUFFER_FLOATS / (g->taps * widest)));
        int64_t narrowest = ceil_div(MIN_FILTER_COLUMNS, g->taps); /* channels per block */
        int64_t most = ceil_div(g->cg, narrowest);
        if (g->groups * c_blocks < FILTER_GRAD_CHUNKS && c_blocks < most)
            c_blocks = clamp(ceil_div(FILTER_GRAD_CHUNKS, g->groups), c_blocks, most);
    }
    p.c_block = ceil_div(g->cg, c_blocks);
    p.c_blocks = ceil_div(g->cg, p.c_block);
    int64_t s_blocks = p.batched ? ceil_div(g->n, pl_conv_batched_samples(g))
                                 : clamp(ceil_div(FILTER_GRAD_CHUNKS, g->groups * p.c_blocks), 1, g->n);
    p.s_block = ceil_div(g->n, s_blocks);
    p.s_blocks = ceil_div(g->n, p.s_block);
    p.band = g->direct || p.flat ? g->ohw
                                 : even_block(g->ohw, COLUMN_BUFFER_FLOATS / (p.c_block * g->taps));
    return p;
}

static int64_t filter_elements(const conv_geom *g)
{
    return g->o * g->k;
}

/* Floats of one thread's buffers: a column buffer, or conv_flat.c's. */
static int64_t filter_buffer_floats(const conv_geom *g, const filter_plan *p)
{
    if (p->flat)
        return pl_conv_flat_filter_floats(g, &p->layout, p->c_block);
    if (p->batched)
        return pl_conv_batched_filter_floats(g, p->c_block, p->s_block);
    if (conv_depthwise(g))
        return pl_conv_depthwise_floats(g);
    return g->direct ? 0 : p->c_block * g->taps * p->band;
}

/* Workspace: dw copies for sample blocks 1.., then one thread's buffers after another. */
PL_WORKSPACE(conv_grad_filter)
{
    conv_geom g = grad_geometry(args);
    filter_plan p = filter_grad_plan(&g);
    int64_t copies = (p.s_blocks - 1) * filter_elements(&g);
    return (size_t)(copies + (int64_t)args->nth * filter_buffer_floats(&g, &p)) * sizeof(float);
}

/* Sum of n floats in eight interleaved lanes: vectorisable, and the same order every
 * time. */
static double sum_floats(const float *v, int64_t n)
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += v[i + l];
    double total = 0;
    for (int l = 0; l < 8; l++)
        total += lane[l];
    for (; i < n; i++)
        total += v[i];
    return total;
}

/* dbias[oc] = sum over samples and positions of dy[:, oc, :]; threads share channels. */
static void bias_grad_share(const conv_geom *g, const float *dy, float *db, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->o, ith, nth, &begin, &end);
    for (int64_t oc = begin; oc < end; oc++) {
        double total = 0;
        for (int64_t ni = 0; ni < g->n; ni++)
            total += sum_floats(dy + (ni * g->o + oc) * g->ohw, g->ohw);
        db[oc] = (float)total;
    }
}

/* dw_g[:, rows of channels c0:c1] = sum over a block of samples of dy_g . col^T. */
PL_KERNEL(conv_grad_filter)
{
    conv_geom g = grad_geometry(args);
    const float *dy = args->in[0], *x = args->in[1];
    filter_plan p = filter_grad_plan(&g);
    float *copies = args->work;
    float *buffers = copies + (p.s_blocks - 1) * filter_elements(&g) +
                     (int64_t)args->ith * filter_buffer_floats(&g, &p);
    if (conv_depthwise(&g)) {
        pl_conv_depthwise_grad_filter(&g, dy, x, args->out[0], buffers, args->ith, args->nth);
        if (args->op->n_outputs == 2)
            bias_grad_share(&g, dy, args->out[1], args->ith, args->nth);
        return;
    }
    int64_t begin, end;
    pl_kernel_share(g.groups * p.c_blocks * p.s_blocks, args->ith, args->nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t sb = chunk % p.s_blocks, cb = chunk / p.s_blocks % p.c_blocks;
        int64_t gi = chunk / p.s_blocks / p.c_blocks;
        int64_t c0 = cb * p.c_block, c1 = c0 + p.c_block < g.cg ? c0 + p.c_block : g.cg;
        int64_t n0 = sb * p.s_block, n1 = n0 + p.s_block < g.n ? n0 + p.s_block : g.n;
        float *dw = sb ? copies + (sb - 1) * filter_elements(&g) : args->out[0];
        float *target = dw + gi * g.og * g.k + c0 * g.taps;
        filter_block block = {.group = gi, .c0 = c0, .c1 = c1, .n0 = n0, .n1 = n1};
        if (p.flat) {
            pl_conv_flat_grad_filter(&g, &p.layout, dy, x, &block, target, buffers);
            continue;
        }
        if (p.batched) {
            pl_conv_batched_grad_filter(&g, dy, x, &block, target, buffers);
            continue;
        }
        for (int64_t ni = n0; ni < n1; ni++) {
            const float *xg = x + (ni * g.c + gi * g.cg) * g.hw;
            for (int64_t j0 = 0; j0 < g.ohw; j0 += p.band) {
                int64_t j1 = j0 + p.band < g.ohw ? j0 + p.band : g.ohw;
                const float *source = xg + c0 * g.hw + j0;
                int64_t ld = g.hw;
                if (!g.direct) {
                    pl_conv_im2col(&g, xg, c0, c1, j0, j1, buffers, j1 - j0);
                    source = buffers;
                    ld = j1 - j0;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.og,
                            (int)((c1 - c0) * g.taps), (int)(j1 - j0), 1.0f,
                            dy + (ni * g.o + gi * g.og) * g.ohw + j0, (int)g.ohw, source, (int)ld,
                            ni > n0 || j0 > 0 ? 1.0f : 0.0f, target, (int)g.k);
            }
        }
    }
    if (args->op->n_outputs == 2)
        bias_grad_share(&g, dy, args->out[1], args->ith, args->nth);
}

/* dw += the other sample blocks' copies, in block order. */
PL_FINISH(conv_grad_filter)
{
    conv_geom g = grad_geometry(args);
    filter_plan p = filter_grad_plan(&g);
    int64_t n = filter_elements(&g);
    float *dw = args->out[0];
    const float *copies = args->work;
    for (int64_t sb = 1; sb < p.s_blocks; sb++) {
        const float *copy = copies + (sb - 1) * n;
        for (int64_t i = 0; i < n; i++)
            dw[i] += copy[i];
    }
}

/* ---- routes (routes.c) ------------------------------------------------------------------- */

/* As the forward and the input gradient choose. */
static pl_kernel_route forward_route(const conv_geom *g)
{
    if (conv_depthwise(g))
        return pl_conv_depthwise_small(g) ? PL_ROUTE_DEPTHWISE_SMALL : PL_ROUTE_DEPTHWISE;
    if (conv_winograd(g))
        return PL_ROUTE_WINOGRAD;
    return conv_batched(g) ? PL_ROUTE_SMALL_OUTPUTS : PL_ROUTE_IM2COL;
}

/* As filter_grad_plan chooses. */
static pl_kernel_route filter_route(const conv_geom *g)
{
    flat_layout layout;
    if (conv_depthwise(g))
        return pl_conv_depthwise_small(g) ? PL_ROUTE_DEPTHWISE_SMALL : PL_ROUTE_DEPTHWISE;
    if (conv_flat_filter(g, &layout))
        return PL_ROUTE_FLAT;
    return conv_batched_filter(g) ? PL_ROUTE_SMALL_OUTPUTS : PL_ROUTE_IM2COL;
}

pl_kernel_route pl_conv_route(const pl_op *op, const pl_tensor *shapes)
{
    const pl_tensor *in0 = &shapes[op->inputs[0]], *in1 = &shapes[op->inputs[1]];
    switch (op->kind) {
    case PL_OP_CONV1D:
    case PL_OP_CONV2D:
    case PL_OP_CONV3D: {
        conv_geom g = geometry(in0, in1, &shapes[op->outputs[0]], &op->attrs);
        return forward_route(&g);
    }
    case PL_OP_CONV_TRANSPOSE1D: /* x, w -> y: the input gradient of y's convolution */
    case PL_OP_CONV_TRANSPOSE2D:
    case PL_OP_CONV_TRANSPOSE3D: {
        conv_geom g = geometry(&shapes[op->outputs[0]], in1, in0, &op->attrs);
        return forward_route(&g);
    }
    case PL_OP_CONV1D_GRAD_INPUT: /* dy, x, w */
    case PL_OP_CONV2D_GRAD_INPUT:
    case PL_OP_CONV3D_GRAD_INPUT: {
        conv_geom g = geometry(in1, &shapes[op->inputs[2]], in0, &op->attrs);
        return forward_route(&g);
    }
    case PL_OP_CONV1D_GRAD_FILTER:
    case PL_OP_CONV2D_GRAD_FILTER:
    case PL_OP_CONV3D_GRAD_FILTER: {
        conv_geom g = geometry(in1, &shapes[op->inputs[2]], in0, &op->attrs);
        return filter_route(&g);
    }
    default:
        return PL_ROUTE_ONE;
    }
}
