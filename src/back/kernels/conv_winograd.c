/* 3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
 * "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * The output is cut into 2x2 tiles; a tile depends on a 4x4 patch d of each input
 * channel. With the filter g and the patch transformed, U = G g G^T and V = B^T d B (4x4
 * each), the tile is A^T M A, where M sums U . V (element by element) over the input
 * channels. So each of the 16 positions xi of the transformed tile is one matrix product
 * M[xi] [out channels, tiles] = U[xi] [out, in] times V[xi] [in, tiles]: 16 sgemm calls
 * doing 16 multiply-adds per tile and channel pair where the direct convolution does 36.
 * The position is the middle axis of U [o][16][c], V [c][16][tiles] and M [o][16][tiles]
 * (each product reads every 16th row), so that a transform's 16 values land close
 * together rather than in 16 distant planes; the transforms run along rows of tiles, or
 * along channels for the filter, so that they vectorise.
 *
 * The gradient of the input is the same convolution of dy, padded by 2 - p, with the
 * filter turned half a circle and its channel axes swapped. Turning g turns G g G^T the
 * same way except for positions 1 and 2 of each axis, which stay (G's middle rows are
 * symmetric): so the gradient reuses U, transposed, with positions 0 and 3 swapped.
 *
 * Threads share chunks: a block of consecutive tiles over the whole batch (a block crosses
 * sample boundaries, so that a small image's few tiles still make a wide product) times a
 * block of output channels (several when the tile blocks are too few to keep the threads
 * busy: ResNet's last layers have 128 tiles at batch 8). A chunk transforms the filters
 * of its output channels and the patches of its tiles, unless the thread's previous chunk
 * did. The chunks depend on the shapes only and every output is computed by one call
 * sequence, so the result does not depend on nth. */
#include <cblas.h>
#include <string.h>

#include "conv_impl.h"
#include "kernels.h"
#include "kernels_impl.h"

#define POSITIONS 16 /* of a transformed 4x4 tile */
/* Transformed patches and products of one tile block, in floats: 8 MiB, so that the
 * products stay wide (MIN_TILES) even with 512 channels in and out. */
#define BLOCK_FLOATS (INT64_C(1) << 21)
#define MIN_TILES INT64_C(64)
#define MAX_TILES INT64_C(512)
/* Output channels are split until there are this many chunks, in blocks of at least
 * MIN_ROWS channels (the products' height). */
#define CHUNKS INT64_C(8)
#define MIN_ROWS INT64_C(64)

/* One convolution as the tiles see it: the forward's, or the input gradient's. */
typedef struct wino {
    int64_t n, c, h, w;   /* input (dy for the gradient) */
    int64_t o, oh, ow;    /* output channels and size */
    int64_t ph, pw;       /* padding */
    int64_t th, tw;       /* tiles per column and row of one output plane */
    int64_t tiles, block; /* tiles in the batch; tiles per block */
    int64_t tile_blocks;
    int64_t outs, out_blocks; /* output channels per chunk; their blocks */
    int64_t fo, fc;           /* the filter's output and input channels */
    bool gradient;
} wino;

/* Per-thread scratch: U for a chunk's output channels, V for its tiles, M, the filters of
 * one output channel laid out [9][c], and four input rows or two output rows of one row
 * of tiles. */
typedef struct scratch {
    float *u, *v, *m, *taps, *rows;
} scratch;

static wino shaped(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t oh,
                   int64_t ow, int64_t ph, int64_t pw)
{
    wino s = {.n = n, .c = c, .h = h, .w = w, .o = o, .oh = oh, .ow = ow, .ph = ph, .pw = pw};
    s.th = ceil_div(oh, 2);
    s.tw = ceil_div(ow, 2);
    s.tiles = n * s.th * s.tw;
    int64_t fit = BLOCK_FLOATS / (POSITIONS * (c + o));
    fit = fit < MIN_TILES ? MIN_TILES : fit > MAX_TILES ? MAX_TILES : fit;
    s.block = ceil_div(s.tiles, ceil_div(s.tiles, fit));
    s.tile_blocks = ceil_div(s.tiles, s.block);
    int64_t split = s.tile_blocks >= CHUNKS ? 1 : ceil_div(CHUNKS, s.tile_blocks);
    if (split > o / MIN_ROWS)
        split = o / MIN_ROWS > 1 ? o / MIN_ROWS : 1;
    s.outs = ceil_div(o, split);
    s.out_blocks = ceil_div(o, s.outs);
    s.fo = o;
    s.fc = c;
    return s;
}

static wino forward_tiles(const conv_geom *g)
{
    return shaped(g->n, g->c, g->h, g->w, g->o, g->oh, g->ow, g->ph, g->pw);
}

static wino gradient_tiles(const conv_geom *g)
{
    wino s = shaped(g->n, g->o, g->oh, g->ow, g->c, g->h, g->w, 2 - g->ph, 2 - g->pw);
    s.fo = g->o;
    s.fc = g->c;
    s.gradient = true;
    return s;
}

static int64_t row_floats(const wino *s)
{
    return 2 * s->tw + 4; /* a tile row's input columns, or its output columns */
}

static int64_t workspace_floats(const wino *s)
{
    return POSITIONS * (s->outs * s->c + (s->c + s->outs) * s->block) + 9 * s->fc +
           4 * row_floats(s);
}

static scratch carve(const wino *s, float *work, int ith)
{
    scratch r;
    r.u = work + (int64_t)ith * workspace_floats(s);
    r.v = r.u + POSITIONS * s->outs * s->c;
    r.m = r.v + POSITIONS * s->c * s->block;
    r.taps = r.m + POSITIONS * s->outs * s->block;
    r.rows = r.taps + 9 * s->fc;
    return r;
}

size_t pl_conv_winograd_workspace(const conv_geom *g, int nth)
{
    wino f = forward_tiles(g);
    return (size_t)nth * (size_t)workspace_floats(&f) * sizeof(float);
}

size_t pl_conv_winograd_grad_input_workspace(const conv_geom *g, int nth)
{
    wino b = gradient_tiles(g);
    return (size_t)nth * (size_t)workspace_floats(&b) * sizeof(float);
}

/* ---- transforms ----------------------------------------------------------------------- */

/* The transforms below are written out element by element: GCC's -O2 does not unroll
 * small inner loops before vectorising, and these loops must run along vector lanes. */

/* G's rows applied to three values (a column or row of a filter). */
#define G_ROWS(g0, g1, g2, t)                                                               \
    const float t##0 = (g0), t##1 = 0.5f * ((g0) + (g1) + (g2)),                            \
                t##2 = 0.5f * ((g0) - (g1) + (g2)), t##3 = (g2)

/* U [o1 - o0][16][c1 - c0] = G g G^T for the filters g of w [fo][fc][3][3] from output
 * channels [o0, o1) and input channels [c0, c1). Each output channel's filters are laid
 * out [9][c1 - c0] first, so that the transform runs along the input channels. */
PL_VECTOR_CLONES static void filters(const wino *s, const float *restrict w, int64_t o0,
                                     int64_t o1, int64_t c0, int64_t c1, float *restrict taps,
                                     float *restrict u)
{
    int64_t c = c1 - c0;
    for (int64_t oi = o0; oi < o1; oi++) {
        const float *src = w + (oi * s->fc + c0) * 9;
        for (int64_t ci = 0; ci < c; ci++)
            for (int k = 0; k < 9; k++)
                taps[k * c + ci] = src[ci * 9 + k];
        const float *g0 = taps, *g1 = taps + c, *g2 = taps + 2 * c, *g3 = taps + 3 * c;
        const float *g4 = taps + 4 * c, *g5 = taps + 5 * c, *g6 = taps + 6 * c;
        const float *g7 = taps + 7 * c, *g8 = taps + 8 * c;
        float *dst = u + (oi - o0) * POSITIONS * c;
        PL_INDEPENDENT_ITERATIONS
        for (int64_t ci = 0; ci < c; ci++) {
            /* G g, column by column (a filter column j is g[j], g[3 + j], g[6 + j]) */
            G_ROWS(g0[ci], g3[ci], g6[ci], a);
            G_ROWS(g1[ci], g4[ci], g7[ci], b);
            G_ROWS(g2[ci], g5[ci], g8[ci], e);
            /* then G^T along each row i: (a_i, b_i, e_i) */
#define U_ROW(i)                                                                            \
    do {                                                                                    \
        G_ROWS(a##i, b##i, e##i, r);                                                        \
        dst[(4 * (i) + 0) * c + ci] = r0;                                                   \
        dst[(4 * (i) + 1) * c + ci] = r1;                                                   \
        dst[(4 * (i) + 2) * c + ci] = r2;                                                   \
        dst[(4 * (i) + 3) * c + ci] = r3;                                                   \
    } while (0)
            U_ROW(0);
            U_ROW(1);
            U_ROW(2);
            U_ROW(3);
#undef U_ROW
        }
    }
}

/* The tiles [k, k + len) of a block share a sample and a row of tiles, starting at column
 * tx0 of it. */
typedef struct tile_run {
    int64_t k, len, sample, ty, tx0;
} tile_run;

static tile_run first_run(const wino *s, int64_t t0, int64_t count)
{
    int64_t per_sample = s->th * s->tw;
    tile_run r = {.k = 0, .sample = t0 / per_sample, .ty = t0 % per_sample / s->tw,
                  .tx0 = t0 % s->tw};
    r.len = s->tw - r.tx0 < count ? s->tw - r.tx0 : count;
    return r;
}

static bool next_run(const wino *s, int64_t count, tile_run *r)
{
    r->k += r->len;
    if (r->k >= count)
        return false;
    r->tx0 = 0;
    if (++r->ty == s->th) {
        r->ty = 0;
        r->sample++;
    }
    r->len = s->tw < count - r->k ? s->tw : count - r->k;
    return true;
}

/* Input rows y0..y0+3 of plane, columns x0..x0+width-1, into rows [4][width] (zero
 * outside the plane: the padding). */
static void gather_rows(const wino *s, const float *plane, int64_t y0, int64_t x0,
                        int64_t width, float *rows)
{
    int64_t lo = x0 < 0 ? -x0 : 0, hi = s->w - x0 < width ? s->w - x0 : width;
    for (int i = 0; i < 4; i++) {
        float *row = rows + i * width;
        int64_t y = y0 + i;
        if (y < 0 || y >= s->h || hi <= lo) {
            memset(row, 0, (size_t)width * sizeof(float));
            continue;
        }
        memset(row, 0, (size_t)lo * sizeof(float));
        memcpy(row + lo, plane + y * s->w + x0 + lo, (size_t)(hi - lo) * sizeof(float));
        memset(row + hi, 0, (size_t)(width - hi) * sizeof(float));
    }
}

/* B's columns applied to four values of a row of a patch. */
#define B_COLUMNS(p, e)                                                                     \
    const float e##0 = (p)[0] - (p)[2], e##1 = (p)[1] + (p)[2], e##2 = (p)[2] - (p)[1],     \
                e##3 = (p)[1] - (p)[3]

/* V for one run of tiles from its four input rows: out[xi * stride + t]. */
PL_VECTOR_CLONES static void patch_run(const float *restrict rows, int64_t width, int64_t len,
                                       float *restrict out, int64_t stride)
{
    const float *r0 = rows, *r1 = rows + width, *r2 = rows + 2 * width, *r3 = rows + 3 * width;
    PL_INDEPENDENT_ITERATIONS
    for (int64_t t = 0; t < len; t++) {
        B_COLUMNS(r0 + 2 * t, a); /* d B, row by row */
        B_COLUMNS(r1 + 2 * t, b);
        B_COLUMNS(r2 + 2 * t, c);
        B_COLUMNS(r3 + 2 * t, d);
#define V_COLUMN(j)                                                                         \
    do {                                                                                    \
        out[(0 + (j)) * stride + t] = a##j - c##j;                                          \
        out[(4 + (j)) * stride + t] = b##j + c##j;                                          \
        out[(8 + (j)) * stride + t] = c##j - b##j;                                          \
        out[(12 + (j)) * stride + t] = b##j - d##j;                                         \
    } while (0)
        V_COLUMN(0); /* then B^T, column by column */
        V_COLUMN(1);
        V_COLUMN(2);
        V_COLUMN(3);
#undef V_COLUMN
    }
}

/* V [c][16][block] for the block's tiles from t0 of input x. */
static void patches(const wino *s, const float *x, int64_t t0, int64_t count, float *rows,
                    float *v)
{
    int64_t plane = s->h * s->w;
    for (int64_t ci = 0; ci < s->c; ci++) {
        tile_run r = first_run(s, t0, count);
        do {
            int64_t width = 2 * r.len + 2;
            gather_rows(s, x + (r.sample * s->c + ci) * plane, 2 * r.ty - s->ph,
                        2 * r.tx0 - s->pw, width, rows);
            patch_run(rows, width, r.len, v + ci * POSITIONS * s->block + r.k, s->block);
        } while (next_run(s, count, &r));
    }
}

/* One run's two output rows [2][2 len] = A^T M A + add, M at in[xi * stride + t]. */
PL_VECTOR_CLONES static void tile_run_out(const float *restrict in, int64_t stride, int64_t len,
                                          float add, float *restrict rows)
{
    float *y0 = rows, *y1 = rows + 2 * len;
    PL_INDEPENDENT_ITERATIONS
    for (int64_t t = 0; t < len; t++) {
#define AT_M(j)                                                                             \
    const float m0##j = in[(0 + (j)) * stride + t], m1##j = in[(4 + (j)) * stride + t],     \
                m2##j = in[(8 + (j)) * stride + t], m3##j = in[(12 + (j)) * stride + t];    \
    const float p##j = m0##j + m1##j + m2##j, q##j = m1##j - m2##j - m3##j
        AT_M(0); /* A^T M: p is its first row, q its second */
        AT_M(1);
        AT_M(2);
        AT_M(3);
#undef AT_M
        y0[2 * t] = p0 + p1 + p2 + add;
        y0[2 * t + 1] = p1 - p2 - p3 + add;
        y1[2 * t] = q0 + q1 + q2 + add;
        y1[2 * t + 1] = q1 - q2 - q3 + add;
    }
}

/* y's channels [o0, o1) of the block's tiles from t0 from M [o1 - o0][16][block] (+ bias);
 * a tile's row or column past the output's edge is dropped. */
static void tiles_out(const wino *s, const float *m, const float *bias, int64_t o0, int64_t o1,
                      int64_t t0, int64_t count, float *rows, float *y)
{
    int64_t plane = s->oh * s->ow;
    for (int64_t oi = o0; oi < o1; oi++) {
        float add = bias ? bias[oi] : 0.0f;
        tile_run r = first_run(s, t0, count);
        do {
            tile_run_out(m + (oi - o0) * POSITIONS * s->block + r.k, s->block, r.len, add,
                         rows);
            int64_t x0 = 2 * r.tx0, width = 2 * r.len < s->ow - x0 ? 2 * r.len : s->ow - x0;
            float *out = y + (r.sample * s->o + oi) * plane + 2 * r.ty * s->ow + x0;
            for (int i = 0; i < 2 && 2 * r.ty + i < s->oh; i++)
                memcpy(out + i * s->ow, rows + i * 2 * r.len, (size_t)width * sizeof(float));
        } while (next_run(s, count, &r));
    }
}

/* ---- the convolution -------------------------------------------------------------------- */

/* Position xi of the filter's transform for the gradient: axes' positions 0 and 3 swap. */
static int turned(int xi)
{
    static const int swap[4] = {3, 1, 2, 0};
    return swap[xi / 4] * 4 + swap[xi % 4];
}

/* Chunk = (block of output channels, block of tiles), the tile block varying fastest. A
 * forward chunk's U is its rows of the filter's transform; a gradient chunk's is the
 * columns of its (forward input) channels, used transposed. */
static void run(const wino *s, const float *x, const float *w, const float *bias, float *y,
                float *work, int ith, int nth)
{
    int64_t begin, end;
    pl_kernel_share(s->out_blocks * s->tile_blocks, ith, nth, &begin, &end);
    if (begin >= end)
        return;
    scratch r = carve(s, work, ith);
    int64_t have_rows = -1, have_tiles = -1;
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t rb = chunk / s->tile_blocks, tb = chunk % s->tile_blocks;
        int64_t o0 = rb * s->outs, o1 = o0 + s->outs < s->o ? o0 + s->outs : s->o;
        int64_t t0 = tb * s->block, count = t0 + s->block < s->tiles ? s->block : s->tiles - t0;
        if (rb != have_rows) {
            if (s->gradient)
                filters(s, w, 0, s->fo, o0, o1, r.taps, r.u);
            else
                filters(s, w, o0, o1, 0, s->fc, r.taps, r.u);
            have_rows = rb;
        }
        if (tb != have_tiles) {
            patches(s, x, t0, count, r.rows, r.v);
            have_tiles = tb;
        }
        int lda = POSITIONS * (int)(s->gradient ? o1 - o0 : s->c);
        int ldb = POSITIONS * (int)s->block;
        for (int xi = 0; xi < POSITIONS; xi++)
            cblas_sgemm(CblasRowMajor, s->gradient ? CblasTrans : CblasNoTrans, CblasNoTrans,
                        (int)(o1 - o0), (int)count, (int)s->c, 1.0f,
                        r.u + (s->gradient ? turned(xi) * (o1 - o0) : xi * s->c), lda,
                        r.v + xi * s->block, ldb, 0.0f, r.m + xi * s->block, ldb);
        tiles_out(s, r.m, bias, o0, o1, t0, count, r.rows, y);
    }
}

void pl_conv_winograd(const conv_geom *g, const float *x, const float *w, const float *bias,
                      float *y, float *work, int ith, int nth)
{
    wino s = forward_tiles(g);
    run(&s, x, w, bias, y, work, ith, nth);
}

void pl_conv_winograd_grad_input(const conv_geom *g, const float *dy, const float *w,
                                 float *dx, float *work, int ith, int nth)
{
    wino s = gradient_tiles(g);
    run(&s, dy, w, NULL, dx, work, ith, nth);
}
