/* Depthwise convolution (one input channel and one filter per group) as direct loops.
 *
 * At stride 1 a plane that fits FLAT_MAX floats with its padding runs "flat" (conv_flat.c):
 * one filter tap is then a single contiguous run over the whole padded plane. On
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

/* At stride 1, planes that fit FLAT_MAX floats with their padding run flat (conv_flat.c). */
static bool flat_fits(const conv_geom *g, flat_layout *f)
{
    return pl_conv_flat_layout(g, f) && f->volume <= FLAT_MAX;
}

PL_VECTOR_CLONES static void depthwise_flat(const conv_geom *g, const flat_layout *f,
                                            const float *xp, const float *w, float start, float *yp)
{
    float padded[FLAT_MAX], out[FLAT_MAX];
    pl_conv_flatten(g, f, xp, 0, f->volume, padded);
    for (int64_t j = 0; j < f->run; j++)
        out[j] = start;
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            const float *src = padded + pl_conv_flat_tap(g, f, ki * g->kw + kj);
            float wv = w[ki * g->kw + kj];
            for (int64_t j = 0; j < f->run; j++)
                out[j] += wv * src[j];
        }
    for (int64_t oy = 0; oy < g->oh; oy++)
        memcpy(yp + oy * g->ow, out + oy * f->width, (size_t)g->ow * sizeof *yp);
}

PL_VECTOR_CLONES void pl_conv_depthwise(const conv_geom *g, const float *x, const float *w, const float *bias,
                       float *y, float *work, int ith, int nth)
{
    if (pl_conv_depthwise_small(g)) {
        pl_conv_depthwise_small_forward(g, x, w, bias, y, work, ith, nth);
        return;
    }
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    flat_layout f;
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
PL_VECTOR_CLONES static void depthwise_grad_input_flat(const conv_geom *g, const flat_layout *f,
                                                       const float *dyp, const float *w, float *dxp)
{
    float spread[FLAT_MAX], padded[FLAT_MAX];
    pl_conv_spread(g, f, dyp, 0, f->run, spread);
    memset(padded, 0, (size_t)f->volume * sizeof *padded);
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            float *dst = padded + pl_conv_flat_tap(g, f, ki * g->kw + kj);
            float wv = w[ki * g->kw + kj];
            for (int64_t j = 0; j < f->run; j++)
                dst[j] += wv * spread[j];
        }
    for (int64_t iy = 0; iy < g->h; iy++)
        memcpy(dxp + iy * g->w, padded + f->origin + iy * f->width, (size_t)g->w * sizeof *dxp);
}

PL_VECTOR_CLONES void pl_conv_depthwise_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                  float *work, int ith, int nth)
{
    if (pl_conv_depthwise_small(g)) {
        pl_conv_depthwise_small_grad_input(g, dy, w, dx, work, ith, nth);
        return;
    }
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    flat_layout f;
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
PL_VECTOR_CLONES static void depthwise_grad_filter_flat(const conv_geom *g, const flat_layout *f,
                                                        const float *dy, const float *x, int64_t c,
                                                        double *total)
{
    float spread[FLAT_MAX], padded[FLAT_MAX];
    for (int64_t t = 0; t < g->taps; t++)
        total[t] = 0.0;
    for (int64_t ni = 0; ni < g->n; ni++) {
        pl_conv_spread(g, f, dy + (ni * g->c + c) * g->ohw, 0, f->run, spread);
        pl_conv_flatten(g, f, x + (ni * g->c + c) * g->hw, 0, f->volume, padded);
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                const float *src = padded + pl_conv_flat_tap(g, f, ki * g->kw + kj);
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
                                                    const float *x, float *dw, float *work,
                                                    int ith, int nth)
{
    if (pl_conv_depthwise_small(g)) {
        pl_conv_depthwise_small_grad_filter(g, dy, x, dw, work, ith, nth);
        return;
    }
    int64_t begin, end;
    pl_kernel_share(g->c, ith, nth, &begin, &end);
    float column[COLUMN_BLOCK];
    flat_layout f;
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
