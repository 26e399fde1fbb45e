/* Flat padded volumes for stride-1 convolutions.
 *
 * The input of one channel, zero-padded, is laid out as a single run of floats: layers of
 * `rows` rows of `width` floats. Output element (z, y, x) is given the flat index
 * (z * rows + y) * width + x, and at stride 1 its window's tap (kz, ki, kj) then starts at
 * that index plus the tap's offset, the same for every output element. So one tap over a
 * whole channel is a single contiguous run (the flat indices with x >= ow or y >= oh lie
 * between output rows: they are computed and dropped, or carry zeros). */
#include <cblas.h>
#include <string.h>

#include "conv_impl.h"

bool pl_conv_flat_layout(const conv_geom *g, flat_layout *f)
{
    if (g->sd != 1 || g->sh != 1 || g->sw != 1 || g->od < 1 || g->oh < 1 || g->ow < 1)
        return false;
    f->width = g->w + 2 * g->pw;
    f->rows = g->h + 2 * g->ph;
    f->layers = g->d + 2 * g->pd;
    /* the output must be the padded volume less the dilated filter's extent */
    if (g->ow != f->width - (g->kw - 1) * g->dw || g->oh != f->rows - (g->kh - 1) * g->dh ||
        g->od != f->layers - (g->kd - 1) * g->dd)
        return false;
    f->volume = f->layers * f->rows * f->width;
    f->origin = (g->pd * f->rows + g->ph) * f->width + g->pw;
    f->run = ((g->od - 1) * f->rows + g->oh - 1) * f->width + g->ow;
    return true;
}

int64_t pl_conv_flat_tap(const conv_geom *g, const flat_layout *f, int64_t tap)
{
    int64_t kz = tap / (g->kh * g->kw), ki = tap / g->kw % g->kh, kj = tap % g->kw;
    return (kz * g->dd * f->rows + ki * g->dh) * f->width + kj * g->dw;
}

/* Flat positions [q0, q1) of the layout into out, from `src` (layers x rows x width floats
 * in `shape`) placed with its element 0 at flat position `at`; zeros around it. */
static void gather(const flat_layout *f, const float *src, const int64_t shape[3], int64_t at,
                   int64_t q0, int64_t q1, float *out)
{
    int64_t z0 = at / (f->rows * f->width), y0 = at / f->width % f->rows, x0 = at % f->width;
    for (int64_t q = q0; q < q1;) {
        int64_t row = q / f->width, end = (row + 1) * f->width < q1 ? (row + 1) * f->width : q1;
        int64_t z = row / f->rows - z0, y = row % f->rows - y0;
        float *dst = out + (q - q0);
        /* the row's columns [first, last); of them [lo, hi) hold source columns from lo - x0 */
        int64_t first = q - row * f->width, last = end - row * f->width, lo = last, hi = last;
        if (z >= 0 && z < shape[0] && y >= 0 && y < shape[1]) {
            lo = x0 < first ? first : x0 > last ? last : x0;
            hi = x0 + shape[2] < lo ? lo : x0 + shape[2] > last ? last : x0 + shape[2];
        }
        memset(dst, 0, (size_t)(lo - first) * sizeof *dst);
        if (lo < hi)
            memcpy(dst + (lo - first), src + (z * shape[1] + y) * shape[2] + (lo - x0),
                   (size_t)(hi - lo) * sizeof *dst);
        memset(dst + (hi - first), 0, (size_t)(last - hi) * sizeof *dst);
        q = end;
    }
}

void pl_conv_flatten(const conv_geom *g, const flat_layout *f, const float *x, int64_t q0,
                     int64_t q1, float *out)
{
    const int64_t shape[3] = {g->d, g->h, g->w};
    gather(f, x, shape, f->origin, q0, q1, out);
}

void pl_conv_spread(const conv_geom *g, const flat_layout *f, const float *y, int64_t q0,
                    int64_t q1, float *out)
{
    const int64_t shape[3] = {g->od, g->oh, g->ow};
    gather(f, y, shape, 0, q0, q1, out);
}

/* ---- filter gradient ------------------------------------------------------------------ */

/* The filter gradient's tap t is dw[:, c, t] = sum over j of dy[:, j] x[c, j + tap(t)]: one
 * sgemm of a block of input channels, read in place in their flat volumes shifted by the
 * tap, against the spread output gradient. im2col would first write taps shifted copies
 * of the input; here each call's operands are plain strided matrices. Output positions
 * are cut into bands whose buffers stay within FLAT_BUFFER_FLOATS, each band's input
 * running on past it by the last tap's offset. */
#define FLAT_BUFFER_FLOATS (INT64_C(1) << 20)
#define MIN_BAND INT64_C(512)

static int64_t last_tap(const conv_geom *g, const flat_layout *f)
{
    return pl_conv_flat_tap(g, f, g->taps - 1);
}

/* Positions per band for `channels` input channels. */
static int64_t band(const conv_geom *g, const flat_layout *f, int64_t channels)
{
    int64_t room = (FLAT_BUFFER_FLOATS - channels * last_tap(g, f)) / (channels + g->og);
    int64_t most = room > MIN_BAND ? room : MIN_BAND;
    return ceil_div(f->run, ceil_div(f->run, most));
}

int64_t pl_conv_flat_filter_floats(const conv_geom *g, const flat_layout *f, int64_t channels)
{
    int64_t b = band(g, f, channels);
    return g->taps * channels * g->og + channels * (b + last_tap(g, f)) + g->og * b;
}

void pl_conv_flat_grad_filter(const conv_geom *g, const flat_layout *f, const float *dy,
                              const float *x, const filter_block *block, float *target, float *work)
{
    int64_t gi = block->group, c0 = block->c0, n0 = block->n0, n1 = block->n1;
    int64_t channels = block->c1 - c0, b = band(g, f, channels), reach = last_tap(g, f);
    int64_t span = b + reach;
    float *sums = work; /* [og][taps][channels] */
    float *xs = sums + g->taps * channels * g->og, *dys = xs + channels * span;
    for (int64_t ni = n0; ni < n1; ni++) {
        const float *xg = x + (ni * g->c + gi * g->cg + c0) * g->hw;
        const float *dyg = dy + (ni * g->o + gi * g->og) * g->ohw;
        for (int64_t j0 = 0; j0 < f->run; j0 += b) {
            int64_t j1 = j0 + b < f->run ? j0 + b : f->run;
            for (int64_t c = 0; c < channels; c++)
                pl_conv_flatten(g, f, xg + c * g->hw, j0, j1 + reach, xs + c * span);
            for (int64_t o = 0; o < g->og; o++)
                pl_conv_spread(g, f, dyg + o * g->ohw, j0, j1, dys + o * b);
            float beta = ni > n0 || j0 > 0 ? 1.0f : 0.0f;
            for (int64_t t = 0; t < g->taps; t++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->og, (int)channels,
                            (int)(j1 - j0), 1.0f, dys, (int)b, xs + pl_conv_flat_tap(g, f, t),
                            (int)span, beta, sums + t * channels, (int)(g->taps * channels));
        }
    }
    for (int64_t o = 0; o < g->og; o++) /* each row of dw: [taps][channels] to [channels][taps] */
        for (int64_t c = 0; c < channels; c++)
            for (int64_t t = 0; t < g->taps; t++)
                target[o * g->k + c * g->taps + t] = sums[(o * g->taps + t) * channels + c];
}
