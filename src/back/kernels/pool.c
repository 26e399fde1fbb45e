/* Pooling kernels (NCHW): max and average pooling over 2-D windows, global and adaptive
 * average pooling, and their gradients.
 *
 * Windows are clipped to the input: max pooling pads with -infinity (a padded cell never
 * wins; inference guarantees every window holds at least one input cell) and average
 * pooling divides by the cells inside the input, or with count_include_pad (PyTorch's
 * default) by the window's cells inside the padded input. With ceil_mode a last window
 * may run past the padded input; those cells count for neither. The forward kernels
 * share output rows among threads; the windowed gradients scatter into overlapping
 * windows, so they share whole (sample, channel) planes instead, each plane written by
 * one thread in a fixed order. Every kernel here is bitwise nth-independent. */
#include <math.h>
#include <string.h>

#include "kernels.h"

enum { CACHED_COLUMNS = 16 }; /* kernel columns whose valid output range is precomputed */

typedef struct pool_geom {
    int64_t planes;      /* N * C */
    int64_t h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw;
    bool include_pad;    /* avg_pool's count_include_pad */
    /* For kernel column kj: the output columns [first, stop) reading inside the input.
     * Cached because the divisions cost more than the pooling of a short row. */
    int64_t first[CACHED_COLUMNS], stop[CACHED_COLUMNS];
} pool_geom;

static void column_range(const pool_geom *g, int64_t kj, int64_t *first, int64_t *stop)
{
    int64_t offset = kj - g->pw; /* input column = ox * sw + offset */
    *first = offset >= 0 ? 0 : (-offset + g->sw - 1) / g->sw;
    *stop = g->w - 1 - offset < 0 ? 0 : (g->w - 1 - offset) / g->sw + 1;
}

/* x and y: the forward's input and output descriptors. */
static pool_geom geometry(const pl_tensor *x, const pl_tensor *y, const pl_attrs *at)
{
    /* Without an explicit stride the windows tile: stride = kernel. */
    bool stride_given = at->given & PL_ATTR_BIT(PL_ATTR_STRIDE);
    pool_geom g = {
        .planes = x->dims[0] * x->dims[1],
        .h = x->dims[2], .w = x->dims[3], .oh = y->dims[2], .ow = y->dims[3],
        .kh = at->kernel[0], .kw = at->kernel[1],
        .sh = stride_given ? at->stride[0] : at->kernel[0],
        .sw = stride_given ? at->stride[1] : at->kernel[1],
        .ph = at->padding[0], .pw = at->padding[1],
        .include_pad = at->count_include_pad,
    };
    for (int64_t kj = 0; kj < g.kw && kj < CACHED_COLUMNS; kj++)
        column_range(&g, kj, &g.first[kj], &g.stop[kj]);
    return g;
}

/* The input cells [*lo, *hi) of the window at output index `o` along one axis. */
static void window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t size,
                   int64_t *lo, int64_t *hi)
{
    int64_t start = o * stride - pad, stop = start + kernel;
    *lo = start < 0 ? 0 : start;
    *hi = stop > size ? size : stop;
}

/* The output columns [*lo, *hi), within [t0, t1), whose window column kj falls inside
 * the input: input column ox * sw + kj - pw in [0, w). */
static void valid_outputs(const pool_geom *g, int64_t kj, int64_t t0, int64_t t1, int64_t *lo,
                          int64_t *hi)
{
    int64_t first, stop;
    if (kj < CACHED_COLUMNS)
        first = g->first[kj], stop = g->stop[kj];
    else
        column_range(g, kj, &first, &stop);
    *lo = first > t0 ? first : t0;
    *hi = stop < t1 ? stop : t1;
    if (*hi < *lo)
        *hi = *lo;
}

/* Windows are visited row by row and kernel column by kernel column, each a straight
 * loop over output columns: far cheaper than walking every window cell by cell, and in
 * each window's row-major order. */
static void max_pool_row(const pool_geom *g, const float *plane, int64_t oy, float *out)
{
    int64_t y0, y1;
    window(oy, g->sh, g->ph, g->kh, g->h, &y0, &y1);
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] = -INFINITY;
    for (int64_t iy = y0; iy < y1; iy++) {
        const float *src = plane + iy * g->w;
        for (int64_t kj = 0; kj < g->kw; kj++) {
            int64_t lo, hi, offset = kj - g->pw;
            valid_outputs(g, kj, 0, g->ow, &lo, &hi);
            for (int64_t ox = lo; ox < hi; ox++) {
                float v = src[ox * g->sw + offset];
                out[ox] = v > out[ox] ? v : out[ox];
            }
        }
    }
}

/* avg_pool's divisor along one axis for output index o: the window's cells inside the
 * input, or with include_pad inside the padded input (PyTorch clips the window to
 * size + pad before counting, to the input after). */
static int64_t axis_cells(const pool_geom *g, int64_t o, int64_t stride, int64_t pad,
                          int64_t kernel, int64_t size)
{
    int64_t lo, hi;
    if (!g->include_pad) {
        window(o, stride, pad, kernel, size, &lo, &hi);
        return hi - lo;
    }
    int64_t start = o * stride - pad, stop = start + kernel;
    return (stop < size + pad ? stop : size + pad) - start;
}

/* The divisor of output (oy, ox) of average pooling. */
static int64_t window_cells(const pool_geom *g, int64_t oy, int64_t ox)
{
    return axis_cells(g, oy, g->sh, g->ph, g->kh, g->h) *
           axis_cells(g, ox, g->sw, g->pw, g->kw, g->w);
}

static void avg_pool_row(const pool_geom *g, const float *plane, int64_t oy, float *out)
{
    int64_t y0, y1;
    window(oy, g->sh, g->ph, g->kh, g->h, &y0, &y1);
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] = 0.0f;
    for (int64_t iy = y0; iy < y1; iy++) {
        const float *src = plane + iy * g->w;
        for (int64_t kj = 0; kj < g->kw; kj++) {
            int64_t lo, hi, offset = kj - g->pw;
            valid_outputs(g, kj, 0, g->ow, &lo, &hi);
            for (int64_t ox = lo; ox < hi; ox++)
                out[ox] += src[ox * g->sw + offset];
        }
    }
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] /= (float)window_cells(g, oy, ox);
}

typedef void (*pool_row_fn)(const pool_geom *g, const float *plane, int64_t oy, float *out);

/* Threads share the output rows of all planes. */
static void pool_forward(const pl_kernel_args *args, pool_row_fn row)
{
    pool_geom g = geometry(args->in_t[0], args->out_t[0], &args->op->attrs);
    const float *x = args->in[0];
    float *y = args->out[0];
    int64_t begin, end;
    pl_kernel_share(g.planes * g.oh, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        row(&g, x + r / g.oh * g.h * g.w, r % g.oh, y + r * g.ow);
}

PL_KERNEL(max_pool)
{
    pool_forward(args, max_pool_row);
}

PL_KERNEL(avg_pool)
{
    pool_forward(args, avg_pool_row);
}

/* [N,C,H,W] -> [N,C]: threads share planes. */
PL_KERNEL(global_avg_pool)
{
    const pl_tensor *x_t = args->in_t[0];
    int64_t planes = x_t->dims[0] * x_t->dims[1], size = x_t->dims[2] * x_t->dims[3];
    const float *x = args->in[0];
    float *y = args->out[0];
    int64_t begin, end;
    pl_kernel_share(planes, args->ith, args->nth, &begin, &end);
    for (int64_t p = begin; p < end; p++) {
        const float *plane = x + p * size;
        double sum = 0.0;
        for (int64_t i = 0; i < size; i++)
            sum += plane[i];
        y[p] = (float)(sum / (double)size);
    }
}

/* Adaptive average pooling: output i along an axis of `in` cells averages
 * [floor(i*in/out), ceil((i+1)*in/out)), as PyTorch; windows overlap or repeat cells when
 * out does not divide in. */
static void adaptive_window(int64_t i, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    *lo = i * in / out;
    *hi = ((i + 1) * in + out - 1) / out;
}

/* [N,C,H,W] -> [N,C,OH,OW]: threads share output rows of all planes. */
PL_KERNEL(adaptive_avg_pool)
{
    const pl_tensor *x_t = args->in_t[0], *y_t = args->out_t[0];
    int64_t h = x_t->dims[2], w = x_t->dims[3], oh = y_t->dims[2], ow = y_t->dims[3];
    const float *x = args->in[0];
    float *y = args->out[0];
    int64_t begin, end;
    pl_kernel_share(x_t->dims[0] * x_t->dims[1] * oh, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        const float *plane = x + r / oh * h * w;
        int64_t y0, y1;
        adaptive_window(r % oh, h, oh, &y0, &y1);
        for (int64_t ox = 0; ox < ow; ox++) {
            int64_t x0, x1;
            adaptive_window(ox, w, ow, &x0, &x1);
            double sum = 0.0;
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t ix = x0; ix < x1; ix++)
                    sum += plane[iy * w + ix];
            y[r * ow + ox] = (float)(sum / (double)((y1 - y0) * (x1 - x0)));
        }
    }
}

/* ---- gradients ------------------------------------------------------------------------ */

enum { TILE = 256 }; /* output columns per pass of the gradients' stack buffers */

/* Each window's gradient goes to its first maximum in row-major order, found for a tile
 * of output columns at a time, then added in output order. */
static void max_pool_grad_plane(const pool_geom *g, const float *dy, const float *x, float *dx)
{
    memset(dx, 0, (size_t)(g->h * g->w) * sizeof(float));
    float best[TILE];
    int64_t arg[TILE];
    for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t y0, y1;
        window(oy, g->sh, g->ph, g->kh, g->h, &y0, &y1);
        for (int64_t t0 = 0; t0 < g->ow; t0 += TILE) {
            int64_t t1 = t0 + TILE < g->ow ? t0 + TILE : g->ow;
            for (int64_t ox = t0; ox < t1; ox++) { /* the first cell, unless a later wins */
                int64_t x0, x1;
                window(ox, g->sw, g->pw, g->kw, g->w, &x0, &x1);
                arg[ox - t0] = y0 * g->w + x0;
                best[ox - t0] = x[arg[ox - t0]];
            }
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    int64_t lo, hi, at = iy * g->w + kj - g->pw;
                    valid_outputs(g, kj, t0, t1, &lo, &hi);
                    for (int64_t ox = lo; ox < hi; ox++) { /* no branch: maxima are random */
                        int64_t cell = at + ox * g->sw;
                        float v = x[cell];
                        int64_t later_wins = -(int64_t)(v > best[ox - t0]); /* all ones */
                        best[ox - t0] = v > best[ox - t0] ? v : best[ox - t0];
                        arg[ox - t0] = (arg[ox - t0] & ~later_wins) | (cell & later_wins);
                    }
                }
            for (int64_t ox = t0; ox < t1; ox++)
                dx[arg[ox - t0]] += dy[oy * g->ow + ox];
        }
    }
}

static void avg_pool_grad_plane(const pool_geom *g, const float *dy, const float *x, float *dx)
{
    memset(dx, 0, (size_t)(g->h * g->w) * sizeof(float));
    float share[TILE];
    for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t y0, y1;
        window(oy, g->sh, g->ph, g->kh, g->h, &y0, &y1);
        for (int64_t t0 = 0; t0 < g->ow; t0 += TILE) {
            int64_t t1 = t0 + TILE < g->ow ? t0 + TILE : g->ow;
            for (int64_t ox = t0; ox < t1; ox++)
                share[ox - t0] = dy[oy * g->ow + ox] / (float)window_cells(g, oy, ox);
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    int64_t lo, hi, at = iy * g->w + kj - g->pw;
                    valid_outputs(g, kj, t0, t1, &lo, &hi);
                    for (int64_t ox = lo; ox < hi; ox++)
                        dx[at + ox * g->sw] += share[ox - t0];
                }
        }
    }
}

typedef void (*pool_grad_plane_fn)(const pool_geom *g, const float *dy, const float *x,
                                   float *dx);

/* dy, x -> dx: threads share planes, since windows overlap within a plane. */
static void pool_backward(const pl_kernel_args *args, pool_grad_plane_fn plane)
{
    pool_geom g = geometry(args->in_t[1], args->in_t[0], &args->op->attrs);
    const float *dy = args->in[0], *x = args->in[1];
    float *dx = args->out[0];
    int64_t in_size = g.h * g.w, out_size = g.oh * g.ow, begin, end;
    pl_kernel_share(g.planes, args->ith, args->nth, &begin, &end);
    for (int64_t p = begin; p < end; p++)
        plane(&g, dy + p * out_size, x + p * in_size, dx + p * in_size);
}

PL_KERNEL(max_pool_grad)
{
    pool_backward(args, max_pool_grad_plane);
}

PL_KERNEL(avg_pool_grad)
{
    pool_backward(args, avg_pool_grad_plane);
}

/* dy, x -> dx: each output's dy / (its window's cells) added to the window; threads share
 * planes, since windows may overlap. */
PL_KERNEL(adaptive_avg_pool_grad)
{
    const pl_tensor *dy_t = args->in_t[0], *x_t = args->in_t[1];
    int64_t h = x_t->dims[2], w = x_t->dims[3], oh = dy_t->dims[2], ow = dy_t->dims[3];
    const float *dy = args->in[0];
    float *dx = args->out[0];
    int64_t begin, end;
    pl_kernel_share(x_t->dims[0] * x_t->dims[1], args->ith, args->nth, &begin, &end);
    for (int64_t p = begin; p < end; p++) {
        float *plane = dx + p * h * w;
        memset(plane, 0, (size_t)(h * w) * sizeof *plane);
        for (int64_t oy = 0; oy < oh; oy++) {
            int64_t y0, y1;
            adaptive_window(oy, h, oh, &y0, &y1);
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t x0, x1;
                adaptive_window(ox, w, ow, &x0, &x1);
                float share = dy[(p * oh + oy) * ow + ox] / (float)((y1 - y0) * (x1 - x0));
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++)
                        plane[iy * w + ix] += share;
            }
        }
    }
}

/* dx[n,c,:,:] = dy[n,c] / (H*W); threads share elements of dx. */
PL_KERNEL(global_avg_pool_grad)
{
    const pl_tensor *x_t = args->in_t[1];
    int64_t size = x_t->dims[2] * x_t->dims[3];
    const float *dy = args->in[0];
    float *dx = args->out[0];
    float scale = 1.0f / (float)size;
    int64_t begin, end;
    pl_kernel_share(pl_tensor_elements(x_t), args->ith, args->nth, &begin, &end);
    for (int64_t i = begin; i < end;) {
        int64_t p = i / size, stop = (p + 1) * size < end ? (p + 1) * size : end;
        float value = dy[p] * scale;
        for (; i < stop; i++)
            dx[i] = value;
    }
}
