/* One LSTM step and its gradient.
 *
 * lstm_cell(x [N,E], w [E+H,4H], b [4H] [, h [N,H], c [N,H]]) -> h', c' with
 * z = x.w[:E] + h.w[E:] + b, gate column blocks i, f, g, o of width H, and
 * c' = sigmoid(f)*c + sigmoid(i)*tanh(g), h' = sigmoid(o)*tanh(c'). Absent h and c are 0.
 * The projected form lstm_cell(gx [N,4H] [, w [H,4H], h, c]) starts z from gx's rows, the
 * input side and both biases made for a whole sequence by one matmul, as PyTorch does:
 * z = gx + h.w. It is the same computation with E = 0 and a bias per row, and the
 * gradient's dz is then gx's gradient.
 *
 * Threads share "chunks" of hidden units: a chunk owns hidden units [j0, j1) and so the
 * four gate column blocks [qH + j0, qH + j1) of z, computed by cblas_sgemm into the
 * thread's workspace as [N, 4, width]. Chunks are fixed by the shapes, never by nth
 * (OpenBLAS does not promise equal bits for an element computed in calls of different
 * shapes), so both kernels are bitwise nth-independent.
 *
 * The gradient takes (or recomputes) the chunk's gates, turns them into dz in place and
 * writes its columns of dz out: the weight and bias gradients are left to autodiff, which
 * sums x.dz and h.dz over several time steps in one product (autodiff_lstm.c). dx and dh
 * sum over all 4H columns, so each chunk writes its partial dz.w^T to its own slot of
 * the workspace and `finish` adds the slots in chunk order. The forward also cuts the
 * batch into fixed row blocks; the gradient keeps whole rows of its columns. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "kernels_impl.h"

#define MIN_CHUNK_UNITS INT64_C(256)/* narrower sgemm calls cost more than they share */
#define MAX_CHUNKS INT64_C(16)
#define FORWARD_ROWS INT64_C(128)   /* batch rows per forward chunk */

typedef struct lstm_geom {
    int64_t n, e, h;          /* batch, input width (0 when projected), hidden width */
    bool state;               /* h and c given */
    bool projected;           /* z starts from gx's rows, not from the bias */
    int64_t unit, chunks;     /* hidden units per chunk; chunks over the hidden units */
} lstm_geom;

/* The cell's inputs in either form; NULL where it has none. */
typedef struct lstm_inputs {
    const float *x, *w, *h, *c;
    const float *start; /* z's start: the bias [4H] for every row, or gx [N,4H] */
} lstm_inputs;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* From the descriptors of the cell's inputs; `state`: whether h and c are given. */
static lstm_geom geometry(const pl_tensor *const *in_t, bool projected, bool state)
{
    lstm_geom g = {.n = in_t[0]->dims[0], .state = state, .projected = projected};
    if (projected) {
        g.h = in_t[0]->dims[1] / 4;
    } else {
        g.e = in_t[0]->dims[1];
        g.h = in_t[2]->dims[0] / 4;
    }
    int64_t chunks = ceil_div(g.h, MIN_CHUNK_UNITS);
    if (chunks > MAX_CHUNKS)
        chunks = MAX_CHUNKS;
    g.unit = ceil_div(g.h, chunks);
    g.chunks = ceil_div(g.h, g.unit);
    return g;
}

static lstm_inputs cell_inputs(const lstm_geom *g, void *const *in)
{
    if (g->projected)
        return (lstm_inputs){.start = in[0], .w = g->state ? in[1] : NULL,
                             .h = g->state ? in[2] : NULL, .c = g->state ? in[3] : NULL};
    return (lstm_inputs){.x = in[0], .w = in[1], .start = in[2], .h = g->state ? in[3] : NULL,
                         .c = g->state ? in[4] : NULL};
}

static inline float sigmoid(float v)
{
    return pl_sigmoidf(v);
}

/* Whether the gate product's left operand is x and h joined into a buffer. */
static bool joins(const lstm_geom *g)
{
    return g->state && g->e > 0;
}

/* Rows [r0, r1) of [x | h] (K = E + H columns), the left operand of every gate product:
 * x itself when there is no state (K = E), h itself when projected (K = H; K = 0 without
 * state: NULL), else joined into `joined`. */
static const float *joined_inputs(const lstm_geom *g, const float *x, const float *h,
                                  int64_t r0, int64_t r1, float *joined)
{
    if (!g->state)
        return x ? x + r0 * g->e : NULL;
    if (!joins(g))
        return h + r0 * g->h;
    int64_t k = g->e + g->h;
    for (int64_t r = r0; r < r1; r++) {
        memcpy(joined + (r - r0) * k, x + r * g->e, (size_t)g->e * sizeof(float));
        memcpy(joined + (r - r0) * k + g->e, h + r * g->h, (size_t)g->h * sizeof(float));
    }
    return joined;
}

/* Columns of [x | h]: the rows of w that take part. */
static int64_t inner_width(const lstm_geom *g)
{
    return g->e + (g->state ? g->h : 0);
}

/* z[r, q, j] for `rows` rows of [x | h] (`xh`) and hidden units [j0, j0 + width) into
 * z (ld 4*width): the bias or the rows of gx (`start`, from the first of the rows), plus
 * [x | h].w, one sgemm per gate column block. */
static void gate_inputs(const lstm_geom *g, const float *xh, int64_t rows, const float *w,
                        const float *start, int64_t j0, int64_t width, float *z)
{
    int64_t ld = 4 * width, k = inner_width(g), step = g->projected ? 4 * g->h : 0;
    for (int64_t r = 0; r < rows; r++)
        for (int q = 0; q < 4; q++)
            memcpy(z + r * ld + q * width, start + r * step + q * g->h + j0,
                   (size_t)width * sizeof(float));
    if (k == 0) /* projected without state: z is gx */
        return;
    /* A chunk of every unit has the four gate blocks side by side, as w does: one call. */
    int blocks = width == g->h ? 1 : 4;
    int64_t n = width == g->h ? 4 * width : width;
    for (int q = 0; q < blocks; q++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)n, (int)k,
                    1.0f, xh, (int)k, w + q * g->h + j0, (int)(4 * g->h), 1.0f, z + q * width,
                    (int)ld);
}

/* Activated gates of one hidden unit, from its row of z. */
typedef struct gates {
    float i, f, g, o;
} gates;

/* Inlined so that the loops over units around it vectorise. */
static inline __attribute__((always_inline)) gates activate(const float *z_row, int64_t j,
                                                            int64_t width)
{
    return (gates){sigmoid(z_row[j]), sigmoid(z_row[width + j]), pl_tanhf(z_row[2 * width + j]),
                   sigmoid(z_row[3 * width + j])};
}

/* ---- lstm_cell ------------------------------------------------------------------------ */

static lstm_geom forward_geometry(const pl_kernel_args *args)
{
    int n = args->op->n_inputs;
    return geometry(args->in_t, pl_lstm_cell_projected(n), n >= 4);
}

/* Per thread: z for one chunk, then its rows of [x | h]. */
static int64_t forward_buffer(const lstm_geom *g)
{
    int64_t rows = g->n < FORWARD_ROWS ? g->n : FORWARD_ROWS;
    return rows * (4 * g->unit + (joins(g) ? g->e + g->h : 0));
}

/* The rows of z's start from row r0 on: the bias is every row's. */
static const float *start_rows(const lstm_geom *g, const float *start, int64_t r0)
{
    return g->projected ? start + r0 * 4 * g->h : start;
}

PL_WORKSPACE(lstm_cell)
{
    lstm_geom g = forward_geometry(args);
    return (size_t)args->nth * (size_t)forward_buffer(&g) * sizeof(float);
}

/* Chunks: (block of FORWARD_ROWS rows, block of hidden units). */
PL_VECTOR_CLONES PL_KERNEL(lstm_cell)
{
    lstm_geom g = forward_geometry(args);
    lstm_inputs in = cell_inputs(&g, args->in);
    const float *c = in.c;
    float *h_out = args->out[0], *c_out = args->out[1];
    float *kept = args->op->n_outputs == 3 ? args->out[2] : NULL;
    int64_t max_rows = g.n < FORWARD_ROWS ? g.n : FORWARD_ROWS;
    int64_t row_blocks = ceil_div(g.n, max_rows);
    float *z = (float *)args->work + (int64_t)args->ith * forward_buffer(&g);
    float *joined = z + max_rows * 4 * g.unit;
    int64_t begin, end;
    pl_kernel_share(row_blocks * g.chunks, args->ith, args->nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t r0 = chunk / g.chunks * max_rows, r1 = r0 + max_rows < g.n ? r0 + max_rows : g.n;
        int64_t j0 = chunk % g.chunks * g.unit;
        int64_t width = j0 + g.unit < g.h ? g.unit : g.h - j0;
        const float *xh = joined_inputs(&g, in.x, in.h, r0, r1, joined);
        gate_inputs(&g, xh, r1 - r0, in.w, start_rows(&g, in.start, r0), j0, width, z);
        for (int64_t r = r0; r < r1; r++) {
            const float *z_row = z + (r - r0) * 4 * width;
            for (int64_t j = 0; j < width; j++) {
                gates a = activate(z_row, j, width);
                int64_t at = r * g.h + j0 + j;
                float cell = a.i * a.g + (c ? a.f * c[at] : 0.0f);
                c_out[at] = cell;
                h_out[at] = a.o * pl_tanhf(cell);
            }
            if (kept) { /* the activated gates, for the gradient: i f g o blocks of H */
                float *row = kept + r * 4 * g.h + j0;
                for (int64_t j = 0; j < width; j++) {
                    gates a = activate(z_row, j, width);
                    row[j] = a.i;
                    row[g.h + j] = a.f;
                    row[2 * g.h + j] = a.g;
                    row[3 * g.h + j] = a.o;
                }
            }
        }
    }
}

/* ---- lstm_cell_grad -------------------------------------------------------------------- */

/* Inputs dh', dc', x, w, b [, h, c] [, gates]; outputs dx, dz [, dh, dc]. Projected:
 * inputs dh', dc', gx [, w, h, c] [, gates]; outputs dz [, dh, dc]. */
static lstm_geom grad_geometry(const pl_kernel_args *args)
{
    int n = args->op->n_outputs;
    return geometry(args->in_t + 2, pl_lstm_cell_grad_projected(n), n >= 3);
}

/* The forward pass's activated gates, when given (the input after the cell's): else NULL. */
static const float *saved_gates(const pl_kernel_args *args)
{
    int n = args->op->n_inputs;
    return n > 2 + pl_lstm_cell_grad_cell_inputs(args->op->n_outputs) ? args->in[n - 1] : NULL;
}

/* The index of output dz; dh and dc follow it. */
static int dz_output(const lstm_geom *g)
{
    return g->projected ? 0 : 1;
}

/* Workspace: every chunk's partial [dx | dh] (N x K), then per thread z for one chunk
 * and the rows of [x | h]. */
static int64_t grad_buffer(const lstm_geom *g)
{
    return g->n * (4 * g->unit + (joins(g) ? g->e + g->h : 0));
}

PL_WORKSPACE(lstm_cell_grad)
{
    lstm_geom g = grad_geometry(args);
    int64_t partials = g.chunks * g.n * inner_width(&g);
    return (size_t)(partials + (int64_t)args->nth * grad_buffer(&g)) * sizeof(float);
}

/* dz in place of z (rows of [4, width]) for hidden units [j0, j0 + width); dc (when the
 * cell has state) written directly, since each unit's dc is its own. */
PL_VECTOR_CLONES static void gate_grads(const lstm_geom *g, const float *dh_next,
                                        const float *dc_next, const float *c, float *z,
                                        bool activated, int64_t j0, int64_t width, float *dc)
{
    for (int64_t r = 0; r < g->n; r++) {
        float *z_row = z + r * 4 * width;
        for (int64_t j = 0; j < width; j++) {
            gates a = activated ? (gates){z_row[j], z_row[width + j], z_row[2 * width + j],
                                          z_row[3 * width + j]}
                                : activate(z_row, j, width);
            int64_t at = r * g->h + j0 + j;
            float c_prev = c ? c[at] : 0.0f;
            float t = pl_tanhf(a.f * c_prev + a.i * a.g);
            float dcell = dc_next[at] + dh_next[at] * a.o * (1.0f - t * t);
            if (dc)
                dc[at] = dcell * a.f;
            z_row[j] = dcell * a.g * a.i * (1.0f - a.i);
            z_row[width + j] = dcell * c_prev * a.f * (1.0f - a.f);
            z_row[2 * width + j] = dcell * a.i * (1.0f - a.g * a.g);
            z_row[3 * width + j] = dh_next[at] * t * a.o * (1.0f - a.o);
        }
    }
}

/* The chunk's columns of dz, from z's layout [N, 4, width] to dz's [N, 4H]. */
static void write_gate_grads(const lstm_geom *g, const float *z, int64_t j0, int64_t width,
                             float *dz)
{
    for (int64_t r = 0; r < g->n; r++)
        for (int q = 0; q < 4; q++)
            memcpy(dz + r * 4 * g->h + q * g->h + j0, z + r * 4 * width + q * width,
                   (size_t)width * sizeof(float));
}

PL_VECTOR_CLONES PL_KERNEL(lstm_cell_grad)
{
    lstm_geom g = grad_geometry(args);
    lstm_inputs in = cell_inputs(&g, args->in + 2);
    const float *dh_next = args->in[0], *dc_next = args->in[1];
    const float *kept = saved_gates(args);
    float *dz = args->out[dz_output(&g)], *dc = g.state ? args->out[dz_output(&g) + 2] : NULL;
    int64_t k = inner_width(&g), cols = 4 * g.h;
    float *partials = args->work;
    float *z = partials + g.chunks * g.n * k + (int64_t)args->ith * grad_buffer(&g);
    float *joined = z + g.n * 4 * g.unit;
    const float *xh = NULL; /* joined once per thread, on its first recomputing chunk */
    int64_t begin, end;
    pl_kernel_share(g.chunks, args->ith, args->nth, &begin, &end);
    for (int64_t chunk = begin; chunk < end; chunk++) {
        int64_t j0 = chunk * g.unit, width = j0 + g.unit < g.h ? g.unit : g.h - j0;
        if (kept) { /* the chunk's columns of the saved gates, in z's layout */
            for (int64_t r = 0; r < g.n; r++)
                for (int q = 0; q < 4; q++)
                    memcpy(z + r * 4 * width + q * width, kept + r * cols + q * g.h + j0,
                           (size_t)width * sizeof(float));
        } else {
            if (!xh)
                xh = joined_inputs(&g, in.x, in.h, 0, g.n, joined);
            gate_inputs(&g, xh, g.n, in.w, in.start, j0, width, z);
        }
        gate_grads(&g, dh_next, dc_next, in.c, z, kept != NULL, j0, width, dc);
        write_gate_grads(&g, z, j0, width, dz);
        if (k == 0) /* projected without state: nothing reads w */
            continue;
        /* partial [dx | dh] = dz . w[:, this chunk's columns]^T, gate by gate */
        float *partial = partials + chunk * g.n * k;
        int blocks = width == g.h ? 1 : 4; /* all units: one product over the 4H columns */
        int64_t inner = width == g.h ? 4 * width : width;
        for (int q = 0; q < blocks; q++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.n, (int)k, (int)inner,
                        1.0f, z + q * width, (int)(4 * width), in.w + q * g.h + j0, (int)cols,
                        q ? 1.0f : 0.0f, partial, (int)k);
    }
}

/* dx and dh (whichever the form has): the chunks' partial products added in chunk order. */
PL_FINISH(lstm_cell_grad)
{
    lstm_geom g = grad_geometry(args);
    int64_t pw = inner_width(&g);
    const float *partials = args->work;
    float *dx = g.projected ? NULL : args->out[0];
    float *dh = g.state ? args->out[dz_output(&g) + 1] : NULL;
    for (int64_t r = 0; r < g.n && pw > 0; r++) {
        float *dx_row = dx ? dx + r * g.e : NULL, *dh_row = dh ? dh + r * g.h : NULL;
        const float *first = partials + r * pw;
        if (dx_row)
            memcpy(dx_row, first, (size_t)g.e * sizeof(float));
        if (dh_row)
            memcpy(dh_row, first + g.e, (size_t)g.h * sizeof(float));
        for (int64_t chunk = 1; chunk < g.chunks; chunk++) {
            const float *p = partials + (chunk * g.n + r) * pw;
            for (int64_t k = 0; dx_row && k < g.e; k++)
                dx_row[k] += p[k];
            if (dh_row)
                for (int64_t k = 0; k < g.h; k++)
                    dh_row[k] += p[g.e + k];
        }
    }
}
