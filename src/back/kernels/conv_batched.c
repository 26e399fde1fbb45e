/* Convolutions whose outputs are small (a few output positions a sample: the last layers
 * of a ResNet on small images have 1 to 16), with the column matrices of several samples
 * side by side.
 *
 * One sample's product would have as many columns as output positions: an sgemm 1 to 16
 * columns wide runs an order of magnitude below the machine's peak, and reads the whole
 * filter once a sample. A block of samples makes one product as wide as their positions
 * together, reading the filter once.
 *
 * A block's column matrix is [k, samples x ohw]: sample s's positions are its columns
 * s x ohw to (s + 1) x ohw. Outputs and output gradients are stored sample by sample, so
 * the forward writes its product into a buffer and copies each sample's rows out, and the
 * gradients first gather dy's rows of the block's samples into a buffer the same way.
 *
 * Chunks are a function of the shapes only, as in conv.c, so results do not depend on
 * nth. The forward and input gradient cut a (group, sample block) into blocks of output
 * rows or input channels when there are too few chunks for the threads; a thread whose
 * previous chunk had the same group and sample block reuses its buffer. */
#include <cblas.h>
#include <string.h>

#include "conv_impl.h"
#include "kernels.h"

/* Columns a block's product aims at: the width at which sgemm runs near its peak. */
#define TARGET_COLUMNS INT64_C(512)
/* Chunks the forward and input gradient aim at, for the threads; rows of a product,
 * at least, when they cut a block's rows for it. */
#define CHUNKS INT64_C(8)
#define MIN_ROWS INT64_C(64)

/* Samples a block: enough that their columns reach TARGET_COLUMNS, while a column matrix
 * of `rows` rows stays within a column buffer. */
static int64_t samples_per_block(const conv_geom *g, int64_t rows)
{
    int64_t fit = COLUMN_BUFFER_FLOATS / (rows * g->ohw);
    int64_t want = ceil_div(TARGET_COLUMNS, g->ohw);
    return even_block(g->n, clamp(want < fit ? want : fit, 1, g->n));
}

/* The cut of the forward or the input gradient: sample blocks of `samples`, and each
 * (group, sample block) cut into `parts` of `per_part` output rows (forward) or input
 * channels (gradient). */
typedef struct batch_plan {
    int64_t samples, sample_blocks;
    int64_t per_part, parts;
} batch_plan;

/* `whole` output rows or input channels of `rows_each` product rows each (1 or taps), in
 * parts cut until there are CHUNKS chunks or a product would have fewer than MIN_ROWS rows;
 * sample blocks sized for a column matrix of `column_rows` rows. */
static batch_plan plan(const conv_geom *g, int64_t column_rows, int64_t whole, int64_t rows_each)
{
    batch_plan p = {.samples = samples_per_block(g, column_rows), .per_part = whole};
    p.sample_blocks = ceil_div(g->n, p.samples);
    int64_t blocks = g->groups * p.sample_blocks;
    int64_t thinnest = ceil_div(MIN_ROWS, rows_each);
    if (blocks < CHUNKS && whole > thinnest)
        p.per_part = clamp(even_block(whole, ceil_div(whole, ceil_div(CHUNKS, blocks))), thinnest,
                           whole);
    p.parts = ceil_div(whole, p.per_part);
    return p;
}

static batch_plan forward_plan(const conv_geom *g)
{
    return plan(g, g->k, g->og, 1);
}

/* Input channels a part: their rows of the column-matrix gradient fit a column buffer. */
static batch_plan input_gradient_plan(const conv_geom *g)
{
    batch_plan p = plan(g, g->og, g->cg, g->taps);
    int64_t columns = p.samples * g->ohw;
    int64_t fit = COLUMN_BUFFER_FLOATS / (g->taps * columns);
    if (p.per_part > fit) {
        p.per_part = even_block(g->cg, fit);
        p.parts = ceil_div(g->cg, p.per_part);
    }
    return p;
}

/* One chunk of a plan: its group, samples [n0, n1) and their columns, and its part
 * [p0, p1) of the `whole` rows or channels; `fresh` when the thread's previous chunk
 * (*last) had another group or sample block, whose buffer it then no longer holds. */
typedef struct batch_chunk {
    int64_t group, n0, n1, cols, p0, p1;
    bool fresh;
} batch_chunk;

static batch_chunk chunk_of(const conv_geom *g, const batch_plan *p, int64_t chunk, int64_t whole,
                            int64_t *last)
{
    int64_t block = chunk / p->parts;
    batch_chunk c = {.group = block / p->sample_blocks, .fresh = block != *last};
    c.n0 = block % p->sample_blocks * p->samples;
    c.n1 = c.n0 + p->samples < g->n ? c.n0 + p->samples : g->n;
    c.cols = (c.n1 - c.n0) * g->ohw;
    c.p0 = chunk % p->parts * p->per_part;
    c.p1 = c.p0 + p->per_part < whole ? c.p0 + p->per_part : whole;
    *last = block;
    return c;
}

/* Rows [r0, r1) of group gi's output channels of samples [n0, n1), from `in` [rows,
 * samples x ohw] or into `out` likewise: a block's columns to and from each sample's
 * own planes. */
static void gather_outputs(const conv_geom *g, const float *y, int64_t gi, int64_t r0, int64_t r1,
                           int64_t n0, int64_t n1, float *out)
{
    int64_t cols = (n1 - n0) * g->ohw;
    for (int64_t ni = n0; ni < n1; ni++)
        for (int64_t r = r0; r < r1; r++)
            memcpy(out + (r - r0) * cols + (ni - n0) * g->ohw,
                   y + (ni * g->o + gi * g->og + r) * g->ohw, (size_t)g->ohw * sizeof(float));
}

static void scatter_outputs(const conv_geom *g, const float *in, const float *bias, int64_t gi,
                            int64_t r0, int64_t r1, int64_t n0, int64_t n1, float *y)
{
    int64_t cols = (n1 - n0) * g->ohw;
    for (int64_t ni = n0; ni < n1; ni++)
        for (int64_t r = r0; r < r1; r++) {
            const float *src = in + (r - r0) * cols + (ni - n0) * g->ohw;
            float *dst = y + (ni * g->o + gi * g->og + r) * g->ohw;
            float add = bias ? bias[gi * g->og + r] : 0.0f;
            for (int64_t j = 0; j < g->ohw; j++)
                dst[j] = src[j] + add;
        }
}

/* The column matrix of channels [c0, c1) of group gi and samples [n0, n1). */
static void columns(const conv_geom *g, const float *x, int64_t gi, int64_t c0, int64_t c1,
                    int64_t n0, int64_t n1, float *col)
{
    int64_t cols = (n1 - n0) * g->ohw;
    for (int64_t ni = n0; ni < n1; ni++)
        pl_conv_im2col(g, x + (ni * g->c + gi * g->cg) * g->hw, c0, c1, 0, g->ohw,
                       col + (ni - n0) * g->ohw, cols);
}

/* ---- forward: y = w_g . col, a block of output rows at a time --------------------------- */

size_t pl_conv_batched_workspace(const conv_geom *g, int nth)
{
    batch_plan p = forward_plan(g);
    int64_t cols = p.samples * g->ohw;
    return (size_t)nth * (size_t)((g->k + p.per_part) * cols) * sizeof(float);
}

void pl_conv_batched(const conv_geom *g, const float *x, const float *w, const float *bias,
                     float *y, float *work, int ith, int nth)
{
    batch_plan p = forward_plan(g);
    int64_t widest = p.samples * g->ohw;
    float *col = work + (int64_t)ith * (g->k + p.per_part) * widest;
    float *product = col + g->k * widest;
    int64_t begin, end, built = -1;
    pl_kernel_share(g->groups * p.sample_blocks * p.parts, ith, nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        batch_chunk c = chunk_of(g, &p, chunk, g->og, &built);
        if (c.fresh)
            columns(g, x, c.group, 0, g->cg, c.n0, c.n1, col);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(c.p1 - c.p0), (int)c.cols,
                    (int)g->k, 1.0f, w + (c.group * g->og + c.p0) * g->k, (int)g->k, col,
                    (int)c.cols, 0.0f, product, (int)c.cols);
        scatter_outputs(g, product, bias, c.group, c.p0, c.p1, c.n0, c.n1, y);
    }
}

/* ---- input gradient: dx = col2im(w_g^T . dy), a block of input channels at a time ----- */

size_t pl_conv_batched_grad_input_workspace(const conv_geom *g, int nth)
{
    batch_plan p = input_gradient_plan(g);
    int64_t cols = p.samples * g->ohw;
    return (size_t)nth * (size_t)((g->og + p.per_part * g->taps) * cols) * sizeof(float);
}

void pl_conv_batched_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                float *work, int ith, int nth)
{
    batch_plan p = input_gradient_plan(g);
    int64_t widest = p.samples * g->ohw;
    float *dys = work + (int64_t)ith * (g->og + p.per_part * g->taps) * widest;
    float *dcol = dys + g->og * widest;
    int64_t begin, end, gathered = -1;
    pl_kernel_share(g->groups * p.sample_blocks * p.parts, ith, nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        batch_chunk c = chunk_of(g, &p, chunk, g->cg, &gathered);
        if (c.fresh)
            gather_outputs(g, dy, c.group, 0, g->og, c.n0, c.n1, dys);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)((c.p1 - c.p0) * g->taps),
                    (int)c.cols, (int)g->og, 1.0f, w + c.group * g->og * g->k + c.p0 * g->taps,
                    (int)g->k, dys, (int)c.cols, 0.0f, dcol, (int)c.cols);
        for (int64_t ni = c.n0; ni < c.n1; ni++)
            pl_conv_col2im(g, dcol + (ni - c.n0) * g->ohw, c.cols, c.p0, c.p1,
                           dx + (ni * g->c + c.group * g->cg) * g->hw);
    }
}

/* ---- filter gradient: one chunk of conv.c's cut ------------------------------------------ */

int64_t pl_conv_batched_samples(const conv_geom *g)
{
    return samples_per_block(g, g->og);
}

int64_t pl_conv_batched_filter_floats(const conv_geom *g, int64_t channels, int64_t samples)
{
    return (g->og + channels * g->taps) * samples * g->ohw;
}

void pl_conv_batched_grad_filter(const conv_geom *g, const float *dy, const float *x,
                                 const filter_block *block, float *target, float *work)
{
    int64_t gi = block->group, c0 = block->c0, c1 = block->c1, n0 = block->n0, n1 = block->n1;
    int64_t cols = (n1 - n0) * g->ohw;
    float *dys = work, *col = dys + g->og * cols;
    gather_outputs(g, dy, gi, 0, g->og, n0, n1, dys);
    columns(g, x, gi, c0, c1, n0, n1, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->og, (int)((c1 - c0) * g->taps),
                (int)cols, 1.0f, dys, (int)cols, col, (int)cols, 0.0f, target, (int)g->k);
}
