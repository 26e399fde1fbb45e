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
 * filter gradient's), so results do not depend on nth. */
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

/* Chunk k of the forward and input gradient: sample *ni, channels [*c0, *c1). */
static void chunk_channels(const conv_geom *g, int64_t k, int64_t *ni, int64_t *c0, int64_t *c1)
{
    int64_t blocks = ceil_div(g->c, CHANNEL_BLOCK);
    *ni = k / blocks;
    *c0 = k % blocks * CHANNEL_BLOCK;
    *c1 = *c0 + CHANNEL_BLOCK < g->c ? *c0 + CHANNEL_BLOCK : g->c;
}

void pl_conv_depthwise_small_forward(const conv_geom *g, const float *x, const float *w,
                                     const float *bias, float *y, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, false, r);
    int64_t begin, end;
    pl_kernel_share(g->n * ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t ni, c0, c1;
        chunk_channels(g, k, &ni, &c0, &c1);
        const float *xs = x + ni * g->c * g->hw;
        float *ys = y + ni * g->c * g->ohw;
        for (int64_t c = c0; c < c1; c++)
            for (int64_t p = 0; p < g->ohw; p++)
                ys[c * g->ohw + p] = bias ? bias[c] : 0.0f;
        for (int i = 0; i < n; i++)
            for (int64_t c = c0; c < c1; c++)
                ys[c * g->ohw + r[i].out] += w[c * g->taps + r[i].tap] * xs[c * g->hw + r[i].in];
    }
}

void pl_conv_depthwise_small_grad_input(const conv_geom *g, const float *dy, const float *w,
                                        float *dx, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, true, r);
    int64_t begin, end;
    pl_kernel_share(g->n * ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t ni, c0, c1;
        chunk_channels(g, k, &ni, &c0, &c1);
        const float *dys = dy + ni * g->c * g->ohw;
        float *dxs = dx + ni * g->c * g->hw;
        memset(dxs + c0 * g->hw, 0, (size_t)((c1 - c0) * g->hw) * sizeof *dxs);
        for (int i = 0; i < n; i++)
            for (int64_t c = c0; c < c1; c++)
                dxs[c * g->hw + r[i].in] += w[c * g->taps + r[i].tap] * dys[c * g->ohw + r[i].out];
    }
}

void pl_conv_depthwise_small_grad_filter(const conv_geom *g, const float *dy, const float *x,
                                         float *dw, int ith, int nth)
{
    reach r[DEPTHWISE_SMALL_REACHES];
    int n = plane_reaches(g, true, r);
    double sums[CHANNEL_BLOCK * DEPTHWISE_SMALL_TAPS];
    int64_t begin, end;
    pl_kernel_share(ceil_div(g->c, CHANNEL_BLOCK), ith, nth, &begin, &end);
    for (int64_t k = begin; k < end; k++) {
        int64_t c0 = k * CHANNEL_BLOCK, c1 = c0 + CHANNEL_BLOCK < g->c ? c0 + CHANNEL_BLOCK : g->c;
        for (int64_t i = 0; i < (c1 - c0) * g->taps; i++)
            sums[i] = 0.0;
        for (int64_t ni = 0; ni < g->n; ni++) {
            const float *dys = dy + ni * g->c * g->ohw, *xs = x + ni * g->c * g->hw;
            for (int i = 0; i < n; i++)
                for (int64_t c = c0; c < c1; c++)
                    sums[(c - c0) * g->taps + r[i].tap] += (double)(dys[c * g->ohw + r[i].out] *
                                                                    xs[c * g->hw + r[i].in]);
        }
        for (int64_t c = c0; c < c1; c++)
            for (int64_t t = 0; t < g->taps; t++)
                dw[c * g->taps + t] = (float)sums[(c - c0) * g->taps + t];
    }
}
