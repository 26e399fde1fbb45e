/* Pooling kernels (NCHW, and [N,C,L] and [N,C,D,H,W]): max and average pooling over
 * windows of one to three spatial axes, global and adaptive average pooling, and their
 * gradients.
 *
 * Every windowed kernel sees three spatial axes [d, h, w]: an op of fewer axes has leading
 * axes of size 1, with a kernel and stride of 1 and no padding there, which cost one pass
 * of a trivial loop. Windows are clipped to the input: max pooling pads with -infinity (a
 * padded cell never wins; inference guarantees every window holds at least one input
 * cell) and average pooling divides by the cells inside the input, or with
 * count_include_pad (PyTorch's default) by the window's cells inside the padded input.
 * With ceil_mode a last window may run past the padded input; those cells count for
 * neither. The forward kernels share output rows among threads; the windowed gradients
 * scatter into overlapping windows, so they share whole (sample, channel) planes instead,
 * each plane written by one thread in a fixed order. Every kernel here is bitwise
 * nth-independent. */
#include <math.h>
#include <string.h>

#include "kernels.h"

enum { CACHED_COLUMNS = 16 }; /* kernel columns whose valid output range is precomputed */

typedef struct pool_geom {
    int64_t planes;      /* N * C */
    int64_t d, h, w, od, oh, ow;
    int64_t kd, kh, kw, sd, sh, sw, pd, ph, pw;
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

/* The sizes of x and y along the three axes [d, h, w]: 1 before the tensor's own. */
static void volume_of(const pl_tensor *t, int64_t size[3])
{
    int spatial = t->rank - 2;
    for (int a = 0; a < 3; a++)
        size[a] = a < 3 - spatial ? 1 : t->dims[2 + a - (3 - spatial)];
}

/* x and y: the forward's input and output descriptors. */
static pool_geom geometry(const pl_tensor *x, const pl_tensor *y, const pl_attrs *at)
{
    /* Without an explicit stride the windows tile: stride = kernel. */
    bool stride_given = at->given & PL_ATTR_BIT(PL_ATTR_STRIDE);
    int lead = 3 - (x->rank - 2); /* the axes of size 1 in front of the op's own */
    int64_t in[3], out[3], k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
    volume_of(x, in);
    volume_of(y, out);
    for (int a = lead; a < 3; a++) {
        k[a] = at->kernel[a - lead];
        s[a] = stride_given ? at->stride[a - lead] : k[a];
        p[a] = at->padding[a - lead];
    }
    pool_geom g = {
        .planes = x->dims[0] * x->dims[1],
        .d = in[0], .h = in[1], .w = in[2], .od = out[0], .oh = out[1], .ow = out[2],
        .kd = k[0], .kh = k[1], .kw = k[2], .sd = s[0], .sh = s[1], .sw = s[2],
        .pd = p[0], .ph = p[1], .pw = p[2],
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

/* The input rows (iz, iy) of the windows of output row (oz, oy): [z0, z1) x [y0, y1). */
typedef struct row_window {
    int64_t z0, z1, y0, y1;
} row_window;

static row_window rows_of(const pool_geom *g, int64_t oz, int64_t oy)
{
    row_window r;
    window(oz, g->sd, g->pd, g->kd, g->d, &r.z0, &r.z1);
    window(oy, g->sh, g->ph, g->kh, g->h, &r.y0, &r.y1);
    return r;
}

/* One kernel column of one input row into a row of outputs: out[ox] for ox in [lo, hi)
 * takes src[ox * stride + offset]. */
typedef void (*column_fn)(float *out, const float *src, int64_t offset, int64_t stride,
                          int64_t lo, int64_t hi);

static void max_column(float *out, const float *src, int64_t offset, int64_t stride,
                       int64_t lo, int64_t hi)
{
    for (int64_t ox = lo; ox < hi; ox++) {
        float v = src[ox * stride + offset];
        out[ox] = v > out[ox] ? v : out[ox];
    }
}

static void sum_column(float *out, const float *src, int64_t offset, int64_t stride,
                       int64_t lo, int64_t hi)
{
    for (int64_t ox = lo; ox < hi; ox++)
        out[ox] += src[ox * stride + offset];
}

/* Windows are visited row by row and kernel column by kernel column, each a straight
 * loop over output columns: far cheaper than walking every window cell by cell, and in
 * each window's row-major order. */
static void pool_row(const pool_geom *g, const float *plane, int64_t oz, int64_t oy,
                     float *out, column_fn column)
{
    row_window r = rows_of(g, oz, oy);
    for (int64_t iz = r.z0; iz < r.z1; iz++)
        for (int64_t iy = r.y0; iy < r.y1; iy++) {
            const float *src = plane + (iz * g->h + iy) * g->w;
            for (int64_t kj = 0; kj < g->kw; kj++) {
                int64_t lo, hi;
                valid_outputs(g, kj, 0, g->ow, &lo, &hi);
                column(out, src, kj - g->pw, g->sw, lo, hi);
            }
        }
}

static void max_pool_row(const pool_geom *g, const float *plane, int64_t oz, int64_t oy,
                         float *out)
{
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] = -INFINITY;
    pool_row(g, plane, oz, oy, out, max_column);
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

/* The divisor of output (oz, oy, ox) of average pooling. */
static int64_t window_cells(const pool_geom *g, int64_t oz, int64_t oy, int64_t ox)
{
    return axis_cells(g, oz, g->sd, g->pd, g->kd, g->d) *
           axis_cells(g, oy, g->sh, g->ph, g->kh, g->h) *
           axis_cells(g, ox, g->sw, g->pw, g->kw, g->w);
}

static void avg_pool_row(const pool_geom *g, const float *plane, int64_t oz, int64_t oy,
                         float *out)
{
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] = 0.0f;
    pool_row(g, plane, oz, oy, out, sum_column);
    for (int64_t ox = 0; ox < g->ow; ox++)
        out[ox] /= (float)window_cells(g, oz, oy, ox);
}

typedef void (*pool_row_fn)(const pool_geom *g, const float *plane, int64_t oz, int64_t oy,
                            float *out);

/* Threads share the output rows of all planes. */
static void pool_forward(const pl_kernel_args *args, pool_row_fn row)
{
    pool_geom g = geometry(args->in_t[0], args->out_t[0], &args->op->attrs);
    const float *x = args->in[0];
    float *y = args->out[0];
    int64_t rows = g.od * g.oh, begin, end;
    pl_kernel_share(g.planes * rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        row(&g, x + r / rows * g.d * g.h * g.w, r % rows / g.oh, r % g.oh, y + r * g.ow);
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

/* The input box [lo, hi) along [d, h, w] that output (oz, oy, ox) averages. */
typedef struct adaptive_box {
    int64_t lo[3], hi[3];
} adaptive_box;

static adaptive_box adaptive_box_of(const int64_t in[3], const int64_t out[3],
                                    const int64_t at[3])
{
    adaptive_box b;
    for (int a = 0; a < 3; a++)
        adaptive_window(at[a], in[a], out[a], &b.lo[a], &b.hi[a]);
    return b;
}

static int64_t box_cells(const adaptive_box *b)
{
    return (b->hi[0] - b->lo[0]) * (b->hi[1] - b->lo[1]) * (b->hi[2] - b->lo[2]);
}

/* [N,C,(D,)(H,)W] -> [N,C,(OD,)(OH,)OW]: threads share output rows of all planes. */
PL_KERNEL(adaptive_avg_pool)
{
    int64_t in[3], out[3];
    volume_of(args->in_t[0], in);
    volume_of(args->out_t[0], out);
    int64_t rows = out[0] * out[1], plane_size = in[0] * in[1] * in[2];
    const pl_tensor *x_t = args->in_t[0];
    const float *x = args->in[0];
    float *y = args->out[0];
    int64_t begin, end;
    pl_kernel_share(x_t->dims[0] * x_t->dims[1] * rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        const float *plane = x + r / rows * plane_size;
        for (int64_t ox = 0; ox < out[2]; ox++) {
            adaptive_box b = adaptive_box_of(in, out, (int64_t[3]){r % rows / out[1],
                                                                   r % out[1], ox});
            double sum = 0.0;
            for (int64_t iz = b.lo[0]; iz < b.hi[0]; iz++)
                for (int64_t iy = b.lo[1]; iy < b.hi[1]; iy++)
                    for (int64_t ix = b.lo[2]; ix < b.hi[2]; ix++)
                        sum += plane[(iz * in[1] + iy) * in[2] + ix];
            y[r * out[2] + ox] = (float)(sum / (double)box_cells(&b));
        }
    }
}

/* ---- gradients ------------------------------------------------------------------------ */

enum { TILE = 256 }; /* output columns per pass of the gradients' stack buffers */

/* Each window's gradient goes to its first maximum in row-major order, found for a tile
 * of output columns at a time, then added in output order. */
static void max_pool_grad_row(const pool_geom *g, const float *dy, const float *x, float *dx,
                              int64_t oz, int64_t oy)
{
    row_window r = rows_of(g, oz, oy);
    float best[TILE];
    int64_t arg[TILE];
    for (int64_t t0 = 0; t0 < g->ow; t0 += TILE) {
        int64_t t1 = t0 + TILE < g->ow ? t0 + TILE : g->ow;
        for (int64_t ox = t0; ox < t1; ox++) { /* the first cell, unless a later wins */
            int64_t x0, x1;
            window(ox, g->sw, g->pw, g->kw, g->w, &x0, &x1);
            arg[ox - t0] = (r.z0 * g->h + r.y0) * g->w + x0;
            best[ox - t0] = x[arg[ox - t0]];
        }
        for (int64_t iz = r.z0; iz < r.z1; iz++)
            for (int64_t iy = r.y0; iy < r.y1; iy++)
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    int64_t lo, hi, at = (iz * g->h + iy) * g->w + kj - g->pw;
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
            dx[arg[ox - t0]] += dy[(oz * g->oh + oy) * g->ow + ox];
    }
}

static void avg_pool_grad_row(const pool_geom *g, const float *dy, const float *x, float *dx,
                              int64_t oz, int64_t oy)
{
    (void)x;
    row_window r = rows_of(g, oz, oy);
    float share[TILE];
    for (int64_t t0 = 0; t0 < g->ow; t0 += TILE) {
        int64_t t1 = t0 + TILE < g->ow ? t0 + TILE : g->ow;
        for (int64_t ox = t0; ox < t1; ox++)
            share[ox - t0] = dy[(oz * g->oh + oy) * g->ow + ox] /
                             (float)window_cells(g, oz, oy, ox);
        for (int64_t iz = r.z0; iz < r.z1; iz++)
            for (int64_t iy = r.y0; iy < r.y1; iy++)
                for (int64_t kj = 0; kj < g->kw; kj++) {
                    int64_t lo, hi, at = (iz * g->h + iy) * g->w + kj - g->pw;
                    valid_outputs(g, kj, t0, t1, &lo, &hi);
                    for (int64_t ox = lo; ox < hi; ox++)
                        dx[at + ox * g->sw] += share[ox - t0];
                }
    }
}

typedef void (*pool_grad_row_fn)(const pool_geom *g, const float *dy, const float *x,
                                 float *dx, int64_t oz, int64_t oy);

/* dy, x -> dx: threads share planes, since windows overlap within a plane; a plane's
 * output rows add into it in order. */
static void pool_backward(const pl_kernel_args *args, pool_grad_row_fn row)
{
    pool_geom g = geometry(args->in_t[1], args->in_t[0], &args->op->attrs);
    const float *dy = args->in[0], *x = args->in[1];
    float *dx = args->out[0];
    int64_t in_size = g.d * g.h * g.w, out_size = g.od * g.oh * g.ow, begin, end;
    pl_kernel_share(g.planes, args->ith, args->nth, &begin, &end);
    for (int64_t p = begin; p < end; p++) {
        float *plane = dx + p * in_size;
        memset(plane, 0, (size_t)in_size * sizeof *plane);
        for (int64_t oz = 0; oz < g.od; oz++)
            for (int64_t oy = 0; oy < g.oh; oy++)
                row(&g, dy + p * out_size, x + p * in_size, plane, oz, oy);
    }
}

PL_KERNEL(max_pool_grad)
{
    pool_backward(args, max_pool_grad_row);
}

PL_KERNEL(avg_pool_grad)
{
    pool_backward(args, avg_pool_grad_row);
}

/* dy, x -> dx: each output's dy / (its window's cells) added to the window; threads share
 * planes, since windows may overlap. */
PL_KERNEL(adaptive_avg_pool_grad)
{
    int64_t in[3], out[3];
    volume_of(args->in_t[1], in);
    volume_of(args->in_t[0], out);
    const pl_tensor *x_t = args->in_t[1];
    int64_t in_size = in[0] * in[1] * in[2], out_size = out[0] * out[1] * out[2];
    const float *dy = args->in[0];
    float *dx = args->out[0];
    int64_t begin, end;
    pl_kernel_share(x_t->dims[0] * x_t->dims[1], args->ith, args->nth, &begin, &end);
    for (int64_t p = begin; p < end; p++) {
        float *plane = dx + p * in_size;
        memset(plane, 0, (size_t)in_size * sizeof *plane);
        for (int64_t o = 0; o < out_size; o++) {
            adaptive_box b = adaptive_box_of(in, out, (int64_t[3]){o / (out[1] * out[2]),
                                                                   o / out[2] % out[1],
                                                                   o % out[2]});
            float share = dy[p * out_size + o] / (float)box_cells(&b);
            for (int64_t iz = b.lo[0]; iz < b.hi[0]; iz++)
                for (int64_t iy = b.lo[1]; iy < b.hi[1]; iy++)
                    for (int64_t ix = b.lo[2]; ix < b.hi[2]; ix++)
                        plane[(iz * in[1] + iy) * in[2] + ix] += share;
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
