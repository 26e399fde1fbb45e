/* Depthwise convolutions of small planes (MobileNet's and ShuffleNet's last layers on small
 * images: 1x1 to 7x7), channel by channel inside each (output position, tap) pair.
 *
 * conv_depthwise.c works one plane at a time; a plane of a few positions then costs its
 * loops' and copies' overhead many times over its few multiply-adds. All planes share one
 * geometry, so the pairs of an output position and an input position that a tap joins are
 * listed once ("reaches"), and each reach runs down a block of channels: one
 * multiply-add per channel, from planes a fixed stride apart.
 *
 * Each output sums its taps in increasing order from its bias, each input gradient its
 * reaches in (tap, position) order, each filter gradient its samples and positions in
 * double: fixed orders, and threads share whole blocks of channels (of one sample, but the
 * filter gradient's), so results do not depend on nth. A chunk works on copies of its
 * planes with the channels innermost (transpose_in), in a thread's workspace of
 * pl_conv_depthwise_small_floats. */
#include <string.h>

#include "conv_impl.h"
#include "kernels.h"
#include "kernels_impl.h"

/* Channels a chunk takes: the filter gradient's double sums of a block stay on the stack. */
enum { CHANNEL_BLOCK = 64 };

typedef struct reach {
    int32_t out, in, tap;
} reach;

/* The plane's reaches, by output position then tap (`tap_major`: by tap then output
 * position); returns how many. Taps that fall in the padding reach nothing. */
static int plane_reaches(const conv_geom *g, bool tap_major, reach *r)
{
    int n = 0;
    int64_t outer = tap_major ? g->taps : g->ohw, inner = tap_major ? g->ohw : g->taps;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t p = tap_major ? b : a, t = tap_major ? a : b;
            int64_t oy = p / g->ow, ox = p % g->ow, ki = t / g->kw, kj = t % g->kw;
            int64_t iy = oy * g->sh - g->ph + ki * g->dh, ix = ox * g->sw - g->pw + kj * g->dw;
            if (iy >= 0 && iy < g->h && ix >= 0 && ix < g->w)
                r[n++] = (reach){(int32_t)p, (int32_t)(iy * g->w + ix), (int32_t)t};
        }
    return n;
}

bool pl_conv_depthwise_small(const conv_geom *g)
{
    return g->ohw < DEPTHWISE_SMALL_PLANE && g->taps <= DEPTHWISE_SMALL_TAPS &&
           g->ohw * g->taps <= DEPTHWISE_SMALL_REACHES;
}

/* Chunk k of the forward and input gradient: sample *ni, channels [*c0, *c1); a block's
 * samples one after another, so that a thread copies the block's filters once. */
static void chunk_channels(const conv_geom *g, int64_t k, int64_t *ni, int64_t *c0, int64_t *c1)
{
    *ni = k % g->n;
    *c0 = k / g->n * CHANNEL_BLOCK;
    *c1 = *c0 + CHANNEL_BLOCK < g->c ? *c0 + CHANNEL_BLOCK : g->c;
}

int64_t pl_conv_depthwise_small_floats(const conv_geom *g)
{
    /* an input plane, an output plane and the filters, a block's channels each; the
     * filter gradient's sums in double (two floats each) */
    return (g->hw + g->ohw + 3 * g->taps) * CHANNEL_BLOCK;
}

/* The planes of channels [c0, c1) (`count` positions each, `plane` floats apart) into
 * `t`, position-major: t[p * CHANNEL_BLOCK + k] is channel c0 + k's position p. A block's
 * planes are a plane apart: walked channel by channel they alias in the L1 cache (planes
 * of 256 floats map onto a sixteenth of its sets), so the reaches run on this copy, their
 * channels side by side. */
static void transpose_in(const float *v, int64_t plane, int64_t count, int64_t c0, int64_t c1,
                         float *t)
{
    for (int64_t c = c0; c < c1; c++)
        for (int64_t p = 0; p < count; p++)
            t[p * CHANNEL_BLOCK + c - c0] = v[c * plane + p];
}

static void transpose_out(const float *t, int64_t plane, int64_t count, int64_t c0, int64_t c1,
                          float *v)
{
    for (int64_t c = c0; c < c1; c++)
        for (int64_t p = 0; p < count; p++)
            v[c * plane + p] = t[p * CHANNEL_BLOCK + c - c0];
}

/* Channels [c0, c1) of planes of `plane` positions, channels innermost: `v`'s own when a
 * plane is one position (side by side already), else the copy in `t`. */
static const float *inner_in(const float *v, int64_t plane, int64_t c0, int64_t c1, float *t)
{
    if (plane == 1)
        return v + c0;
    transpose_in(v, plane, plane, c0, c1, t);
    return t;
}

/* Where a result of such planes is summed: `v`'s own, or `t` for transpose_out. */
static float *inner_out(float *v, int64_t plane, int64_t c0, float *t)
{
    return plane == 1 ? v + c0 : t;
}

PL_VECTOR_CLONES void pl_conv_depthwise_small_forward(const conv_geom *g, const float *x,
                                                      const float *w, const float *bias,
                                                      float *y, float *work, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, false, r);
    float *xt = work, *yt = xt + g->hw * CHANNEL_BLOCK, *wt = yt + g->ohw * CHANNEL_BLOCK;
    int64_t begin, end, filters = -1;
    pl_kernel_share(g->n * ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t ni, c0, c1;
        chunk_channels(g, k, &ni, &c0, &c1);
        int64_t width = c1 - c0;
        if (c0 != filters)
            transpose_in(w, g->taps, g->taps, c0, c1, wt);
        filters = c0;
        const float *xs = inner_in(x + ni * g->c * g->hw, g->hw, c0, c1, xt);
        float *ys = inner_out(y + ni * g->c * g->ohw, g->ohw, c0, yt);
        for (int64_t p = 0; p < g->ohw; p++) {
            if (bias)
                memcpy(ys + p * CHANNEL_BLOCK, bias + c0, (size_t)width * sizeof *ys);
            else
                memset(ys + p * CHANNEL_BLOCK, 0, (size_t)width * sizeof *ys);
        }
        for (int i = 0; i < n; i++) {
            float *yo = ys + r[i].out * CHANNEL_BLOCK;
            const float *xi = xs + r[i].in * CHANNEL_BLOCK, *wk = wt + r[i].tap * CHANNEL_BLOCK;
            for (int64_t c = 0; c < width; c++)
                yo[c] += wk[c] * xi[c];
        }
        if (g->ohw > 1)
            transpose_out(yt, g->ohw, g->ohw, c0, c1, y + ni * g->c * g->ohw);
    }
}

PL_VECTOR_CLONES void pl_conv_depthwise_small_grad_input(const conv_geom *g, const float *dy,
                                                         const float *w, float *dx,
                                                         float *work, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, true, r);
    float *dxt = work, *dyt = dxt + g->hw * CHANNEL_BLOCK, *wt = dyt + g->ohw * CHANNEL_BLOCK;
    int64_t begin, end, filters = -1;
    pl_kernel_share(g->n * ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t ni, c0, c1;
        chunk_channels(g, k, &ni, &c0, &c1);
        int64_t width = c1 - c0;
        if (c0 != filters)
            transpose_in(w, g->taps, g->taps, c0, c1, wt);
        filters = c0;
        const float *dys = inner_in(dy + ni * g->c * g->ohw, g->ohw, c0, c1, dyt);
        float *dxs = inner_out(dx + ni * g->c * g->hw, g->hw, c0, dxt);
        for (int64_t p = 0; p < g->hw; p++)
            memset(dxs + p * CHANNEL_BLOCK, 0, (size_t)width * sizeof *dxs);
        for (int i = 0; i < n; i++) {
            float *dxi = dxs + r[i].in * CHANNEL_BLOCK;
            const float *dyo = dys + r[i].out * CHANNEL_BLOCK, *wk = wt + r[i].tap * CHANNEL_BLOCK;
            for (int64_t c = 0; c < width; c++)
                dxi[c] += wk[c] * dyo[c];
        }
        if (g->hw > 1)
            transpose_out(dxt, g->hw, g->hw, c0, c1, dx + ni * g->c * g->hw);
    }
}

PL_VECTOR_CLONES void pl_conv_depthwise_small_grad_filter(const conv_geom *g, const float *dy,
                                                          const float *x, float *dw,
                                                          float *work, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, true, r);
    float *xt = work, *dyt = xt + g->hw * CHANNEL_BLOCK;
    double *sums = (double *)(dyt + g->ohw * CHANNEL_BLOCK); /* [tap][channel] */
    int64_t begin, end;
    pl_kernel_share(ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t c0 = k * CHANNEL_BLOCK, c1 = c0 + CHANNEL_BLOCK < g->c ? c0 + CHANNEL_BLOCK : g->c;
        int64_t width = c1 - c0;
        for (int64_t i = 0; i < g->taps * CHANNEL_BLOCK; i++)
            sums[i] = 0.0;
        for (int64_t ni = 0; ni < g->n; ni++) {
            const float *dys = inner_in(dy + ni * g->c * g->ohw, g->ohw, c0, c1, dyt);
            const float *xs = inner_in(x + ni * g->c * g->hw, g->hw, c0, c1, xt);
            for (int i = 0; i < n; i++) {
                double *st = sums + r[i].tap * CHANNEL_BLOCK;
                const float *dyo = dys + r[i].out * CHANNEL_BLOCK, *xi = xs + r[i].in * CHANNEL_BLOCK;
                for (int64_t c = 0; c < width; c++)
                    st[c] += (double)(dyo[c] * xi[c]);
            }
        }
        for (int64_t c = c0; c < c1; c++)
            for (int64_t t = 0; t < g->taps; t++)
                dw[c * g->taps + t] = (float)sums[t * CHANNEL_BLOCK + c - c0];
    }
}
