/* One LSTM step and its gradient.
 *
 * lstm_cell(x [N,E], w [E+H,4H], b [4H] [, h [N,H], c [N,H]]) -> h', c' with
 * z = x.w[:E] + h.w[E:] + b, gate column blocks i, f, g, o of width H, and
 * c' = sigmoid(f)*c + sigmoid(i)*tanh(g), h' = sigmoid(o)*tanh(c'). Absent h and c are 0.
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
    int64_t n, e, h;          /* batch, input width, hidden width */
    bool state;               /* h and c given */
    int64_t unit, chunks;     /* hidden units per chunk; chunks over the hidden units */
} lstm_geom;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* From the descriptors of x and b; `state`: whether h and c are given. */
static lstm_geom geometry(const pl_tensor *x, const pl_tensor *b, bool state)
{
    lstm_geom g = {.n = x->dims[0], .e = x->dims[1], .h = b->dims[0] / 4, .state = state};
    int64_t chunks = ceil_div(g.h, MIN_CHUNK_UNITS);
    if (chunks > MAX_CHUNKS)
        chunks = MAX_CHUNKS;
    g.unit = ceil_div(g.h, chunks);
    g.chunks = ceil_div(g.h, g.unit);
    return g;
}

static inline float sigmoid(float v)
{
    return pl_sigmoidf(v);
}

/* Rows [r0, r1) of [x | h] (K = E + H columns), the left operand of every gate product:
 * x itself when there is no state (K = E), else joined into `joined`. */
static const float *joined_inputs(const lstm_geom *g, const float *x, const float *h,
                                  int64_t r0, int64_t r1, float *joined)
{
    if (!g->state)
        return x + r0 * g->e;
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
 * z (ld 4*width): the bias, plus [x | h].w, one sgemm per gate column block. */
static void gate_inputs(const lstm_geom *g, const float *xh, int64_t rows, const float *w,
                        const float *b, int64_t j0, int64_t width, float *z)
{
    int64_t ld = 4 * width, k = inner_width(g);
    for (int64_t r = 0; r < rows; r++)
        for (int q = 0; q < 4; q++)
            memcpy(z + r * ld + q * width, b + q * g->h + j0, (size_t)width * sizeof(float));
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
    return geometry(args->in_t[0], args->in_t[2], args->op->n_inputs == 5);
}

/* Per thread: z for one chunk, then its rows of [x | h]. */
static int64_t forward_buffer(const lstm_geom *g)
{
    int64_t rows = g->n < FORWARD_ROWS ? g->n : FORWARD_ROWS;
    return rows * (4 * g->unit + (g->state ? g->e + g->h : 0));
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
    const float *x = args->in[0], *w = args->in[1], *b = args->in[2];
    const float *h = g.state ? args->in[3] : NULL, *c = g.state ? args->in[4] : NULL;
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
        const float *xh = joined_inputs(&g, x, h, r0, r1, joined);
        gate_inputs(&g, xh, r1 - r0, w, b, j0, width, z);
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

/* Inputs dh', dc', x, w, b [, h, c] [, gates]; outputs dx, dz [, dh, dc]. */
static lstm_geom grad_geometry(const pl_kernel_args *args)
{
    return geometry(args->in_t[2], args->in_t[4], args->op->n_inputs >= 7);
}

/* The forward pass's activated gates, when given (an even input count): else NULL. */
static const float *saved_gates(const pl_kernel_args *args)
{
    int n = args->op->n_inputs;
    return n % 2 == 0 ? args->in[n - 1] : NULL;
}

/* Workspace: every chunk's partial [dx | dh] (N x K), then per thread z for one chunk
 * and the rows of [x | h]. */
static int64_t grad_buffer(const lstm_geom *g)
{
    return g->n * (4 * g->unit + (g->state ? g->e + g->h : 0));
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
    const float *dh_next = args->in[0], *dc_next = args->in[1], *x = args->in[2];
    const float *w = args->in[3], *b = args->in[4];
    const float *h = g.state ? args->in[5] : NULL, *c = g.state ? args->in[6] : NULL;
    const float *kept = saved_gates(args);
    float *dz = args->out[1], *dc = g.state ? args->out[3] : NULL;
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
                xh = joined_inputs(&g, x, h, 0, g.n, joined);
            gate_inputs(&g, xh, g.n, w, b, j0, width, z);
        }
        gate_grads(&g, dh_next, dc_next, c, z, kept != NULL, j0, width, dc);
        write_gate_grads(&g, z, j0, width, dz);
        /* partial [dx | dh] = dz . w[:, this chunk's columns]^T, gate by gate */
        float *partial = partials + chunk * g.n * k;
        int blocks = width == g.h ? 1 : 4; /* all units: one product over the 4H columns */
        int64_t inner = width == g.h ? 4 * width : width;
        for (int q = 0; q < blocks; q++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.n, (int)k, (int)inner,
                        1.0f, z + q * width, (int)(4 * width), w + q * g.h + j0, (int)cols,
                        q ? 1.0f : 0.0f, partial, (int)k);
    }
}

/* dx and dh: the chunks' partial products added in chunk order. */
PL_FINISH(lstm_cell_grad)
{
    lstm_geom g = grad_geometry(args);
    int64_t pw = inner_width(&g);
    const float *partials = args->work;
    float *dx = args->out[0], *dh = g.state ? args->out[2] : NULL;
    for (int64_t r = 0; r < g.n; r++) {
        float *dx_row = dx + r * g.e, *dh_row = dh ? dh + r * g.h : NULL;
        const float *first = partials + r * pw;
        memcpy(dx_row, first, (size_t)g.e * sizeof(float));
        if (dh_row)
            memcpy(dh_row, first + g.e, (size_t)g.h * sizeof(float));
        for (int64_t chunk = 1; chunk < g.chunks; chunk++) {
            const float *p = partials + (chunk * g.n + r) * pw;
            for (int64_t k = 0; k < g.e; k++)
                dx_row[k] += p[k];
            if (dh_row)
                for (int64_t k = 0; k < g.h; k++)
                    dh_row[k] += p[g.e + k];
        }
    }
}
