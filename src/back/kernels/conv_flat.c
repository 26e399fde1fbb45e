/* Flat padded volumes for stride-1 convolutions.
 *
 * The input of one channel, zero-padded, is laid out as a single run of floats: layers of
 * `rows` rows of `width` floats. Output element (z, y, x) is given the flat index
 * (z * rows + y) * width + x, and at stride 1 its window's tap (kz, ki, kj) then starts at
 * that index plus the tap's offset, the same for every output element. So one tap over a
 * whole channel is a single contiguous run (the flat indices with x >= ow or y >= oh lie
 * between output rows: they are computed and dropped, or carry zeros). */
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
