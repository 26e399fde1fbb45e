/* Depthwise convolution (one input channel and one filter per group) as direct loops:
 * for each tap of the filter, a row of the output gains the tap's weight times a row of
 * the input, shifted by the tap and strided by the stride. Threads share whole planes
 * (the filter gradient: whole channels, their samples summed in one order). Compiled for
 * each vector width (PL_VECTOR_CLONES): the rows are the loops that vectorise. */
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

PL_VECTOR_CLONES void pl_conv_depthwise(const conv_geom *g, const float *x, const float *w, const float *bias,
                       float *y, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t c = plane % g->c;
        const float *xp = x + plane * g->hw;
        float *yp = y + plane * g->ohw;
        float start = bias ? bias[c] : 0.0f;
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

PL_VECTOR_CLONES void pl_conv_depthwise_grad_input(const conv_geom *g, const float *dy, const float *w, float *dx,
                                  int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->n * g->c, ith, nth, &begin, &end);
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t c = plane % g->c;
        const float *dyp = dy + plane * g->ohw;
        float *dxp = dx + plane * g->hw;
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
enum { COLUMN_BLOCK = 256 };

/* Per tap and sample: each output column's products summed down the rows in float (one
 * vector lane a column), the columns then summed in double, the samples in double. */
PL_VECTOR_CLONES void pl_conv_depthwise_grad_filter(const conv_geom *g, const float *dy,
                                                    const float *x, float *dw, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(g->c, ith, nth, &begin, &end);
    float column[COLUMN_BLOCK];
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
