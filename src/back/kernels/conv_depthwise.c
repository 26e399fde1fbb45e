/* Depthwise convolution (one input channel and one filter per group) as direct loops.
 *
 * At stride 1 a plane that fits FLAT_MAX floats with its padding runs "flat": the input is
 * copied into a zero-bordered plane whose rows are `pw_` wide, and output element (oy, ox)
 * is then computed at oy * pw_ + ox, so one filter tap is a single contiguous run over the
 * whole plane, (oh - 1) * pw_ + ow long (the columns past ow are computed and dropped). On
 * small planes (MobileNet's 7x7 and 14x14) a row-at-a-time loop spends its time on rows of
 * a few elements. Elsewhere, for each tap, a row of the output gains the tap's weight times
 * a row of the input, shifted by the tap and strided by the stride. Either way an output
 * element sums its taps in the same order (a tap outside the input adds a product with 0).
 * Threads share whole planes (the filter gradient: whole channels, their samples summed in
 * one order). Compiled for each vector width (PL_VECTOR_CLONES): the runs vectorise. */
#include <string.h>

#include "conv_impl.h"
#include "kernels.h"
#include "kernels_impl.h"

/* One tap (ki, kj) of the filter: the output columns [lo, hi) it reaches inside the input,
 * the input column of output column ox being ox * sw + offset. */
typedef struct tap {
    int64_t ki, index, offset, lo, hi;
} tap;

static tap tap_at(const conv_geom *g, int64_t ki, int64_t kj)
{
    tap t = {.ki = ki, .index = ki * g->kw + kj, .offset = kj * g->dw - g->pw};
    valid_columns(g, t.offset, &t.lo, &t.hi);
    return t;
}

/* The input row that output row oy reads through the tap, or -1 outside the input. */
static int64_t input_row(const conv_geom *g, const tap *t, int64_t oy)
{
    int64_t iy = oy * g->sh - g->ph + t->ki * g->dh;
    return iy >= 0 && iy < g->h ? iy : -1;
}

enum { FLAT_MAX = 4096 }; /* floats of a padded plane (16 KiB), on the stack */

/* A stride-1 plane with its padding: rows of `width` floats, `rows` of them, the input's
 * first element at `origin`; `run` is the flat length of the output. */
typedef struct flat_plane {
    int64_t width, rows, origin, run;
} flat_plane;

static bool flat_fits(const conv_geom *g, flat_plane *f)
{
    if (g->sh != 1 || g->sw != 1)
        return false;
    f->width = g->w + 2 * g->pw;
    f->rows = g->h + 2 * g->ph;
    f->origin = g->ph * f->width + g->pw;
    f->run = (g->oh - 1) * f->width + g->ow;
    return f->rows * f->width <= FLAT_MAX && g->oh > 0 && g->ow > 0;
}

/* The plane `src` (h x w) into `flat`, zeros around it. */
static void flatten_plane(const conv_geom *g, const flat_plane *f, const float *src, float *flat)
{
    memset(flat, 0, (size_t)(f->rows * f->width) * sizeof *flat);
    for (int64_t iy = 0; iy < g->h; iy++)
        memcpy(flat + f->origin + iy * f->width, src + iy * g->w, (size_t)g->w * sizeof *flat);
}

/* Where tap (ki, kj) starts in the flat plane, relative to output element 0's window. */
static int64_t flat_tap(const conv_geom *g, const flat_plane *f, int64_t ki, int64_t kj)
{
    return ki * g->dh * f->width + kj * g->dw;
}

/* An output plane (oh x ow) laid out in the flat plane's rows, zeros past ow. */
static void spread_plane(const conv_geom *g, const flat_plane *f, const float *src, float *flat)
{
    for (int64_t oy = 0; oy < g->oh; oy++) {
        float *row = flat + oy * f->width;
        memcpy(row, src + oy * g->ow, (size_t)g->ow * sizeof *row);
        if (oy + 1 < g->oh)
            memset(row + g->ow, 0, (size_t)(f->width - g->ow) * sizeof *row);
    }
}

PL_VECTOR_CLONES static void depthwise_flat(const conv_geom *g, const flat_plane *f,
                                            const float *xp, const float *w, float start, float *yp)
{
    float padded[FLAT_MAX], out[FLAT_MAX];
    flatten_plane(g, f, xp, padded);
    for (int64_t j = 0; j < f->run; j++)
        out[j] = start;
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            const float *src = padded + flat_tap(g, f, ki, kj);
            float wv = w[ki * g->kw + kj];
            for (int64_t j = 0; j < f->run; j++)
                out[j] += wv * src[j];
        }
    for (int64_t oy = 0; oy < g->oh; oy++)
        memcpy(yp + oy * g->ow, out + oy * f->width, (size_t)g->ow * sizeof *yp);
}

PL_VECTOR_CLONES void pl_conv_depthwise(const conv_geom *g, const float *x, const float *w, const float *bias,
                       float *y, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    flat_plane f;
    bool flat = flat_fits(g, &f);
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t c = plane % g->c;
        const float *xp = x + plane * g->hw;
        float *yp = y + plane * g->ohw;
        float start = bias ? bias[c] : 0.0f;
        if (flat) {
            depthwise_flat(g, &f, xp, w + c * g->taps, start, yp);
            continue;
        }
        for (int64_t j = 0; j < g->ohw; j++)
            yp[j] = start;
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                tap t = tap_at(g, ki, kj);
                float wv = w[c * g->taps + t.index];
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    int64_t iy = input_row(g, &t, oy);
                    if (iy < 0)
                        continue;
                    const float *src = xp + iy * g->w + t.offset;
                    float *dst = yp + oy * g->ow;
                    if (g->sw == 1)
                        for (int64_t ox = t.lo; ox < t.hi; ox++)
                            dst[ox] += wv * src[ox];
                    else
                        for (int64_t ox = t.lo; ox < t.hi; ox++)
                            dst[ox] += wv * src[ox * g->sw];
                }
            }
    }
}

/* The forward's transpose: each tap scatters the output gradient's plane into the padded
 * input plane. */
PL_VECTOR_CLONES static void depthwise_grad_input_flat(const conv_geom *g, const flat_plane *f,
                                                       const float *dyp, const float *w, float *dxp)
{
    float spread[FLAT_MAX], padded[FLAT_MAX];
    spread_plane(g, f, dyp, spread);
    memset(padded, 0, (size_t)(f->rows * f->width) * sizeof *padded);
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            float *dst = padded + flat_tap(g, f, ki, kj);
            float wv = w[ki * g->kw + kj];
            for (int64_t j = 0; j < f->run; j++)
                dst[j] += wv * spread[j];
        }
    for (int64_t iy = 0; iy < g->h; iy++)
        memcpy(dxp + iy * g->w, padded + f->origin + iy * f->width, (size_t)g->w * sizeof *dxp);
}

PL_VECTOR_CLONES void pl_conv_depthwise_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                  int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    flat_plane f;
    bool flat = flat_fits(g, &f);
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t c = plane % g->c;
        const float *dyp = dy + plane * g->ohw;
        float *dxp = dx + plane * g->hw;
        if (flat) {
            depthwise_grad_input_flat(g, &f, dyp, w + c * g->taps, dxp);
            continue;
        }
        memset(dxp, 0, (size_t)g->hw * sizeof(float));
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                tap t = tap_at(g, ki, kj);
                float wv = w[c * g->taps + t.index];
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    int64_t iy = input_row(g, &t, oy);
                    if (iy < 0)
                        continue;
                    const float *src = dyp + oy * g->ow;
                    float *dst = dxp + iy * g->w + t.offset;
                    if (g->sw == 1)
                        for (int64_t ox = t.lo; ox < t.hi; ox++)
                            dst[ox] += wv * src[ox];
                    else
                        for (int64_t ox = t.lo; ox < t.hi; ox++)
                            dst[ox * g->sw] += wv * src[ox];
                }
            }
    }
}

/* Columns a filter tap's products are summed in at once: a block of one output row. */
enum { COLUMN_BLOCK = 256, DOT_LANES = 16 };

/* Per sample and tap: the products of the flat planes summed in DOT_LANES fixed lanes (the
 * same at every vector width), the lanes then in double; the samples in double. */
PL_VECTOR_CLONES static void depthwise_grad_filter_flat(const conv_geom *g, const flat_plane *f,
                                                        const float *dy, const float *x, int64_t c,
                                                        double *total)
{
    float spread[FLAT_MAX], padded[FLAT_MAX];
    for (int64_t t = 0; t < g->taps; t++)
        total[t] = 0.0;
    for (int64_t ni = 0; ni < g->n; ni++) {
        spread_plane(g, f, dy + (ni * g->c + c) * g->ohw, spread);
        flatten_plane(g, f, x + (ni * g->c + c) * g->hw, padded);
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                const float *src = padded + flat_tap(g, f, ki, kj);
                float lane[DOT_LANES] = {0};
                int64_t j = 0;
                for (; j + DOT_LANES <= f->run; j += DOT_LANES)
                    for (int l = 0; l < DOT_LANES; l++)
                        lane[l] += spread[j + l] * src[j + l];
                for (; j < f->run; j++)
                    lane[j % DOT_LANES] += spread[j] * src[j];
                double sum = 0.0;
                for (int l = 0; l < DOT_LANES; l++)
                    sum += lane[l];
                total[ki * g->kw + kj] += sum;
            }
    }
}

/* Per tap and sample: each output column's products summed down the rows in float (one
 * vector lane a column), the columns then summed in double, the samples in double. */
PL_VECTOR_CLONES void pl_conv_depthwise_grad_filter(const conv_geom *g, const float *dy,
                                                    const float *x, float *dw, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->c, ith, nth, &begin, &end);
    float column[COLUMN_BLOCK];
    flat_plane f;
    if (flat_fits(g, &f) && g->taps <= FLAT_MAX) {
        double total[FLAT_MAX];
        for (int64_t c = begin; c < end; c++) {
            depthwise_grad_filter_flat(g, &f, dy, x, c, total);
            for (int64_t t = 0; t < g->taps; t++)
                dw[c * g->taps + t] = (float)total[t];
        }
        return;
    }
    for (int64_t c = begin; c < end; c++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                tap t = tap_at(g, ki, kj);
                double total = 0.0;
                for (int64_t ni = 0; ni < g->n; ni++) {
                    const float *dyp = dy + (ni * g->c + c) * g->ohw;
                    const float *xp = x + (ni * g->c + c) * g->hw;
                    for (int64_t lo = t.lo; lo < t.hi; lo += COLUMN_BLOCK) {
                        int64_t hi = lo + COLUMN_BLOCK < t.hi ? lo + COLUMN_BLOCK : t.hi;
                        for (int64_t ox = lo; ox < hi; ox++)
                            column[ox - lo] = 0.0f;
                        for (int64_t oy = 0; oy < g->oh; oy++) {
                            int64_t iy = input_row(g, &t, oy);
                            if (iy < 0)
                                continue;
                            const float *src = xp + iy * g->w + t.offset;
                            const float *d = dyp + oy * g->ow;
                            if (g->sw == 1)
                                for (int64_t ox = lo; ox < hi; ox++)
                                    column[ox - lo] += d[ox] * src[ox];
                            else
                                for (int64_t ox = lo; ox < hi; ox++)
                                    column[ox - lo] += d[ox] * src[ox * g->sw];
                        }
                        for (int64_t ox = lo; ox < hi; ox++)
                            total += column[ox - lo];
                    }
                }
                dw[c * g->taps + t.index] = (float)total;
            }
}
