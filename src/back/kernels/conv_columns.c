/* Column matrices: im2col and its adjoint (conv_impl.h), for conv.c's products of one
 * sample and conv_batched.c's of several side by side. */
#include <string.h>

#include "conv_impl.h"
#include "kernels_impl.h"

/* The input row (depth and height) that kernel tap (kz, ki) reads for output row
 * (oz, oy), as an offset into a channel's plane; -1 in the padding. */
static int64_t input_row(const conv_geom *g, int64_t kz, int64_t ki, int64_t oz, int64_t oy)
{
    int64_t iz = oz * g->sd - g->pd + kz * g->dd, iy = oy * g->sh - g->ph + ki * g->dh;
    if (iz < 0 || iz >= g->d || iy < 0 || iy >= g->h)
        return -1;
    return (iz * g->h + iy) * g->w;
}

/* On small planes a row of the column matrix is a few floats, and working out where each
 * run of them starts costs more than the copy: there the (tap, output position) pairs'
 * input offsets are listed once, for every channel (MAP_MOST pairs at most, on the stack). */
#define MAP_MOST 2048

/* The input offset (within a channel's plane) that each tap reads for output positions
 * [j0, j1), tap by tap, -1 in the padding; false when there are more than MAP_MOST pairs
 * or a single channel to copy, where the runs are cheaper. */
static bool tap_map(const conv_geom *g, int64_t channels, int64_t j0, int64_t j1, int32_t *map)
{
    int64_t n = j1 - j0;
    if (channels < 2 || n * g->taps > MAP_MOST)
        return false;
    for (int64_t tap = 0; tap < g->taps; tap++) {
        int64_t kz = tap / (g->kh * g->kw), ki = tap / g->kw % g->kh, kj = tap % g->kw;
        for (int64_t j = j0; j < j1; j++) {
            int64_t oy = j / g->ow, ox = j % g->ow;
            int64_t in_row = input_row(g, kz, ki, oy / g->oh, oy % g->oh);
            int64_t ix = ox * g->sw - g->pw + kj * g->dw;
            bool inside = in_row >= 0 && ix >= 0 && ix < g->w;
            map[tap * n + j - j0] = inside ? (int32_t)(in_row + ix) : -1;
        }
    }
    return true;
}

/* Stride 2 (every ResNet stem and downsampling) has a loop of its own with the stride a
 * constant, which vectorises; compiled for each vector width. */
PL_VECTOR_CLONES void pl_conv_im2col(const conv_geom *g, const float *xg, int64_t c0, int64_t c1,
                                     int64_t j0, int64_t j1, float *col, int64_t ld)
{
    int32_t map[MAP_MOST];
    if (tap_map(g, c1 - c0, j0, j1, map)) {
        int64_t n = j1 - j0;
        for (int64_t c = c0; c < c1; c++) {
            const float *plane = xg + c * g->hw;
            for (int64_t tap = 0; tap < g->taps; tap++) {
                const int32_t *at = map + tap * n;
                float *row = col + ((c - c0) * g->taps + tap) * ld;
                for (int64_t j = 0; j < n; j++)
                    row[j] = at[j] >= 0 ? plane[at[j]] : 0.0f;
            }
        }
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        const float *plane = xg + c * g->hw;
        for (int64_t tap = 0; tap < g->taps; tap++) {
            int64_t kz = tap / (g->kh * g->kw), ki = tap / g->kw % g->kh, kj = tap % g->kw;
            float *row = col + ((c - c0) * g->taps + tap) * ld;
            int64_t offset = kj * g->dw - g->pw, lo, hi;
            valid_columns(g, offset, &lo, &hi);
            for (int64_t j = j0; j < j1;) {
                int64_t oy = j / g->ow, x0 = j % g->ow;
                int64_t x1 = x0 + (j1 - j) < g->ow ? x0 + (j1 - j) : g->ow;
                int64_t in_row = input_row(g, kz, ki, oy / g->oh, oy % g->oh);
                float *dst = row + (j - j0); /* output column ox at dst[ox - x0] */
                if (in_row < 0) {
                    memset(dst, 0, (size_t)(x1 - x0) * sizeof(float));
                } else {
                    const float *src = plane + in_row; /* input column ox*sw+offset */
                    int64_t a = clamp(lo, x0, x1), b = clamp(hi, a, x1);
                    for (int64_t ox = x0; ox < a; ox++)
                        dst[ox - x0] = 0.0f;
                    if (g->sw == 1)
                        memcpy(dst + (a - x0), src + a + offset, (size_t)(b - a) * sizeof(float));
                    else if (g->sw == 2)
                        for (int64_t ox = a; ox < b; ox++)
                            dst[ox - x0] = src[ox * 2 + offset];
                    else
                        for (int64_t ox = a; ox < b; ox++)
                            dst[ox - x0] = src[ox * g->sw + offset];
                    for (int64_t ox = b; ox < x1; ox++)
                        dst[ox - x0] = 0.0f;
                }
                j += x1 - x0;
            }
        }
    }
}

void pl_conv_col2im(const conv_geom *g, const float *dcol, int64_t ld, int64_t c0, int64_t c1,
                    float *dxg)
{
    int32_t map[MAP_MOST];
    if (tap_map(g, c1 - c0, 0, g->ohw, map)) { /* contributions in the same order as below */
        for (int64_t c = c0; c < c1; c++) {
            float *plane = dxg + c * g->hw;
            memset(plane, 0, (size_t)g->hw * sizeof(float));
            for (int64_t tap = 0; tap < g->taps; tap++) {
                const int32_t *at = map + tap * g->ohw;
                const float *row = dcol + ((c - c0) * g->taps + tap) * ld;
                for (int64_t j = 0; j < g->ohw; j++)
                    if (at[j] >= 0)
                        plane[at[j]] += row[j];
            }
        }
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        float *plane = dxg + c * g->hw;
        memset(plane, 0, (size_t)g->hw * sizeof(float));
        for (int64_t tap = 0; tap < g->taps; tap++) {
            int64_t kz = tap / (g->kh * g->kw), ki = tap / g->kw % g->kh, kj = tap % g->kw;
            const float *row = dcol + ((c - c0) * g->taps + tap) * ld;
            int64_t offset = kj * g->dw - g->pw, lo, hi;
            valid_columns(g, offset, &lo, &hi);
            for (int64_t oy = 0; oy < g->od * g->oh; oy++) { /* output rows, all depths */
                int64_t in_row = input_row(g, kz, ki, oy / g->oh, oy % g->oh);
                if (in_row < 0)
                    continue;
                float *dst = plane + in_row; /* input column ox*sw+offset */
                const float *src = row + oy * g->ow;
                if (g->sw == 1)
                    for (int64_t ox = lo; ox < hi; ox++)
                        dst[ox + offset] += src[ox];
                else
                    for (int64_t ox = lo; ox < hi; ox++)
                        dst[ox * g->sw + offset] += src[ox];
            }
        }
    }
}
