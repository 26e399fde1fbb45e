/* Private to the convolution kernels (conv.c: im2col and sgemm; conv_depthwise.c: direct
 * loops for one channel per group; conv_winograd.c: 3x3 stride-1 filters; conv_flat.c:
 * stride-1 filters on flat padded volumes): the shapes of
 * one convolution. Every convolution has three spatial axes here, depth, height and
 * width: a 2-D one has a depth of 1, a 1-D one a height of 1 too. */
#ifndef PLACER_CONV_IMPL_H
#define PLACER_CONV_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct conv_geom {
    int64_t n, c, d, h, w;    /* input */
    int64_t o, kd, kh, kw;    /* filter [o, c / groups, kd, kh, kw] */
    int64_t od, oh, ow;       /* output */
    int64_t groups, cg, og;   /* groups; input and output channels per group */
    int64_t sd, sh, sw, pd, ph, pw, dd, dh, dw;
    int64_t taps;             /* kd * kh * kw */
    int64_t k;                /* cg * taps: rows of a column matrix */
    int64_t hw, ohw;          /* elements of an input and of an output channel */
    bool direct;              /* 1x1x1, stride 1, no padding: the input is the column matrix */
} conv_geom;

static inline int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static inline int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Cuts `total` into the fewest blocks of at most `most`, of nearly equal size: returns
 * the block size. */
static inline int64_t even_block(int64_t total, int64_t most)
{
    return ceil_div(total, ceil_div(total, most < 1 ? 1 : most));
}

/* Floats in one thread's column buffer, at most (unless a single row needs more): 2 MiB,
 * so that the gradients' sgemm calls get enough rows on 224x224 images. */
#define COLUMN_BUFFER_FLOATS (INT64_C(1) << 19)

/* The output columns ox in [*lo, *hi) whose input column ox * sw + offset lies inside
 * [0, w), for the kernel column giving `offset` (= kj * dw - pw). */
static inline void valid_columns(const conv_geom *g, int64_t offset, int64_t *lo, int64_t *hi)
{
    *lo = offset >= 0 ? 0 : ceil_div(-offset, g->sw);
    *hi = g->w - 1 - offset < 0 ? 0 : (g->w - 1 - offset) / g->sw + 1;
    if (*hi > g->ow)
        *hi = g->ow;
    if (*lo > *hi)
        *lo = *hi;
}

/* Column matrices (conv_columns.c). A column matrix of one sample and group has a row
 * per (input channel, kernel tap) and a column per output position. pl_conv_im2col
 * writes the rows of channels [c0, c1) (`xg` at the group's first channel) for output
 * positions [j0, j1) into col, its rows `ld` floats apart; padding reads 0.
 * pl_conv_col2im is its adjoint: channels [c0, c1) of dx (`dxg` at the group's first
 * channel) from dcol's rows (`ld` apart, output positions from 0), every contribution
 * added in one fixed order. */
void pl_conv_im2col(const conv_geom *g, const float *xg, int64_t c0, int64_t c1, int64_t j0,
                    int64_t j1, float *col, int64_t ld);
void pl_conv_col2im(const conv_geom *g, const float *dcol, int64_t ld, int64_t c0, int64_t c1,
                    float *dxg);

/* A stride-1 convolution's flat padded volume (conv_flat.c): `layers` x `rows` x `width`
 * floats a channel, the input's element 0 at `origin`; the output's flat indices run over
 * [0, run), and output index j at tap t reads input index j + pl_conv_flat_tap(t). */
typedef struct flat_layout {
    int64_t width, rows, layers, volume, origin, run;
} flat_layout;

/* False unless the convolution has stride 1 on every axis. */
bool pl_conv_flat_layout(const conv_geom *g, flat_layout *f);
int64_t pl_conv_flat_tap(const conv_geom *g, const flat_layout *f, int64_t tap);
/* Flat indices [q0, q1) of one input channel x (padded: zeros around it), and of one
 * output channel y (zeros between its rows), into out. */
void pl_conv_flatten(const conv_geom *g, const flat_layout *f, const float *x, int64_t q0,
                     int64_t q1, float *out);
void pl_conv_spread(const conv_geom *g, const flat_layout *f, const float *y, int64_t q0,
                    int64_t q1, float *out);

/* The filter gradient of a stride-1 convolution runs on flat volumes, one sgemm a tap with
 * no column matrix (conv_flat.c), when each group has at least FLAT_MIN_CHANNELS channels
 * in and out and each channel at least FLAT_MIN_POSITIONS output positions. With fewer
 * channels a tap's product is too thin; with fewer positions the columns between output
 * rows are a larger share of the work, and each tap's call makes and adds a whole block
 * of dw for little work, so im2col's one call is faster (docs/training.md, "Kernels"). */
#define FLAT_MIN_CHANNELS 16
#define FLAT_MIN_POSITIONS 512

static inline bool conv_flat_filter(const conv_geom *g, flat_layout *f)
{
    return !g->direct && g->cg >= FLAT_MIN_CHANNELS && g->og >= FLAT_MIN_CHANNELS &&
           g->ohw >= FLAT_MIN_POSITIONS && pl_conv_flat_layout(g, f);
}

/* One chunk of the filter gradient: a group, its input channels [c0, c1), samples [n0, n1). */
typedef struct filter_block {
    int64_t group, c0, c1, n0, n1;
} filter_block;

/* Floats of one thread's workspace for blocks of `channels` input channels. */
int64_t pl_conv_flat_filter_floats(const conv_geom *g, const flat_layout *f, int64_t channels);
/* target (the block's first element of dw, rows g->k apart) = the block's filter gradient,
 * summed over its samples. */
void pl_conv_flat_grad_filter(const conv_geom *g, const flat_layout *f, const float *dy,
                              const float *x, const filter_block *block, float *target,
                              float *work);

/* Convolutions with fewer than BATCHED_BELOW output positions a sample (and not
 * depthwise, nor Winograd's where that applies) lay the column matrices of several samples
 * side by side (conv_batched.c): one sample's product would be too narrow to run near the
 * machine's peak. The filter gradient's products sum over the positions, so they gain
 * up to a wider size, BATCHED_FILTER_BELOW. A 1x1 filter at stride 1 reads its input in
 * place, one sample at a time, and gains from the copies only below DIRECT_BATCHED_BELOW
 * (docs/training.md, "Kernels"). */
#define BATCHED_BELOW 64
#define BATCHED_FILTER_BELOW 512
#define DIRECT_BATCHED_BELOW 8

size_t pl_conv_batched_workspace(const conv_geom *g, int nth);
void pl_conv_batched(const conv_geom *g, const float *x, const float *w, const float *bias,
                     float *y, float *work, int ith, int nth);
size_t pl_conv_batched_grad_input_workspace(const conv_geom *g, int nth);
void pl_conv_batched_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                float *work, int ith, int nth);
/* The filter gradient follows conv.c's cut into chunks, with sample blocks of
 * pl_conv_batched_samples; a chunk's buffers take pl_conv_batched_filter_floats. */
int64_t pl_conv_batched_samples(const conv_geom *g);
int64_t pl_conv_batched_filter_floats(const conv_geom *g, int64_t channels, int64_t samples);
void pl_conv_batched_grad_filter(const conv_geom *g, const float *dy, const float *x,
                                 const filter_block *block, float *target, float *work);

/* A convolution of height and width alone (depth 1 everywhere): the depthwise and
 * Winograd kernels take only these. */
static inline bool conv_planar(const conv_geom *g)
{
    return g->d == 1 && g->kd == 1 && g->od == 1 && g->pd == 0;
}

/* MobileNet's depthwise convolutions (a filter per channel, one channel per group) run as
 * direct loops over each plane: as sgemm calls they would have a single output row. Each
 * plane (dw: each channel) is one thread's whole, so results do not depend on nth. */
static inline bool conv_depthwise(const conv_geom *g)
{
    return g->groups > 1 && g->cg == 1 && g->og == 1 && conv_planar(g);
}

static inline bool conv_batched(const conv_geom *g)
{
    return g->ohw < (g->direct ? DIRECT_BATCHED_BELOW : BATCHED_BELOW) && g->n > 1 &&
           !conv_depthwise(g);
}

static inline bool conv_batched_filter(const conv_geom *g)
{
    return g->ohw < (g->direct ? DIRECT_BATCHED_BELOW : BATCHED_FILTER_BELOW) && g->n > 1 &&
           !conv_depthwise(g);
}

/* Depthwise convolutions of fewer than DEPTHWISE_SMALL_PLANE output positions a plane, with
 * filters of at most DEPTHWISE_SMALL_TAPS taps, run channel by channel inside each pair of
 * an output and an input position (conv_depthwise_small.c): one plane at a time, their
 * few multiply-adds cost less than the loops around them (docs/training.md, "Kernels"). */
#define DEPTHWISE_SMALL_PLANE 256
#define DEPTHWISE_SMALL_TAPS 49
#define DEPTHWISE_SMALL_REACHES 2304 /* every 3x3 filter on such planes */

bool pl_conv_depthwise_small(const conv_geom *g);
/* One thread's buffers on small planes, `work` below: floats. */
int64_t pl_conv_depthwise_small_floats(const conv_geom *g);
void pl_conv_depthwise_small_forward(const conv_geom *g, const float *x, const float *w,
                                     const float *bias, float *y, float *work, int ith, int nth);
void pl_conv_depthwise_small_grad_input(const conv_geom *g, const float *dy, const float *w,
                                        float *dx, float *work, int ith, int nth);
void pl_conv_depthwise_small_grad_filter(const conv_geom *g, const float *dy, const float *x,
                                         float *dw, float *work, int ith, int nth);

/* `work`: this thread's pl_conv_depthwise_floats (none but on small planes). */
static inline int64_t pl_conv_depthwise_floats(const conv_geom *g)
{
    return pl_conv_depthwise_small(g) ? pl_conv_depthwise_small_floats(g) : 0;
}
void pl_conv_depthwise(const conv_geom *g, const float *x, const float *w, const float *bias,
                       float *y, float *work, int ith, int nth);
void pl_conv_depthwise_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                  float *work, int ith, int nth);
void pl_conv_depthwise_grad_filter(const conv_geom *g, const float *dy, const float *x,
                                   float *dw, float *work, int ith, int nth);

/* 3x3 filters at stride 1 with enough channels in and out run as Winograd's F(2x2, 3x3)
 * (forward and input gradient; the filter gradient stays with im2col), when the batch
 * has enough 2x2 output tiles: each call transforms the whole filter, and 16 products
 * only a few tiles wide run far below the machine's peak, so with fewer tiles, or few
 * channels, im2col is faster (docs/training.md, "Kernels"). Tiles that overhang an odd
 * plane compute outputs that are thrown away: at most a quarter more than the plane
 * (WINOGRAD_MOST_WASTE quarters), which leaves out 3x3, 5x5 and 7x7 planes (3x3: 16
 * outputs computed for 9, and 1.3 to 2x slower than the small outputs' products). */
#define WINOGRAD_MIN_CHANNELS 16
#define WINOGRAD_MIN_TILES 48
#define WINOGRAD_MOST_WASTE 5

static inline bool conv_winograd(const conv_geom *g)
{
    int64_t tiled = 4 * ceil_div(g->oh, 2) * ceil_div(g->ow, 2);
    return conv_planar(g) && g->kh == 3 && g->kw == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 &&
           g->dw == 1 && g->groups == 1 && g->ph <= 2 && g->pw <= 2 &&
           g->c >= WINOGRAD_MIN_CHANNELS && g->o >= WINOGRAD_MIN_CHANNELS &&
           g->n * tiled / 4 >= WINOGRAD_MIN_TILES && 4 * tiled <= WINOGRAD_MOST_WASTE * g->ohw;
}

size_t pl_conv_winograd_workspace(const conv_geom *g, int nth);
size_t pl_conv_winograd_grad_input_workspace(const conv_geom *g, int nth);
void pl_conv_winograd(const conv_geom *g, const float *x, const float *w, const float *bias,
                      float *y, float *work, int ith, int nth);
void pl_conv_winograd_grad_input(const conv_geom *g, const float *dy, const float *w,
                                 float *dx, float *work, int ith, int nth);

#endif
