/* Matrix products on OpenBLAS: matmul and the gradients of its two operands.
 *
 * All three reduce to one problem: for every matrix index o of the output, C[o] is the sum
 * over a set of forward leading indices of op(X) . op(Y), one cblas_sgemm each. Where the
 * leading axes of a broadcast operand can be folded into a matrix axis (a [B,S,K] times
 * b [K,N]) the problem becomes one large GEMM instead.
 *
 * Threads share "units": an output matrix, or a row or column tile of it. The tiling is a
 * function of the shapes only, never of nth, because OpenBLAS does not give bitwise equal
 * results for a row computed in calls of different shapes (its small-matrix and edge
 * kernels sum in other orders). With tiles fixed, every output element comes from the same
 * sgemm calls in the same order for any nth, so all three kernels are nth-independent,
 * the gradient reductions over broadcast axes included (one unit owns each output tile
 * and adds its contributions in increasing leading index). */
#include <cblas.h>

#include "kernels.h"

/* Each sgemm call packs the operand it is not tiled along once more, a cost that grows as
 * tiles shrink (docs/training.md): tiles stay large and few, and 12 units divide evenly
 * among 1, 2, 3, 4 or 6 threads. */
enum {
    MAX_LEAD = PL_MAX_RANK - 2,
    TILE_ALIGN = 16, /* tile edges on the sgemm micro-kernels' multiples */
    MIN_TILE_EDGE = 256,
    MAX_UNITS = 12,
};
/* Multiply-adds worth one sgemm call of their own (some 20 microseconds). */
#define MIN_UNIT_MACS 1048576.0

/* One operand of the product: the stored matrix, how sgemm reads it, and its offset step
 * (in elements) along each forward leading axis, 0 where it is broadcast. */
typedef struct operand {
    const float *data;
    CBLAS_TRANSPOSE trans;
    int64_t ld;
    int64_t step[MAX_LEAD];
} operand;

/* C[o] (rows x cols, row-major, ld cols) = sum over the reduced leading axes of
 * op(X) (rows x inner) . op(Y) (inner x cols). */
typedef struct gemm_problem {
    operand x, y;
    float *c;
    int64_t c_step[MAX_LEAD]; /* 0 on reduced axes */
    int64_t rows, cols, inner;
    int lead_rank;
    int64_t lead[MAX_LEAD];   /* the forward's leading dims */
    bool reduced[MAX_LEAD];   /* summed into one output matrix */
    int64_t outputs, terms;   /* output matrices; products summed into each */
    int64_t row_tile, col_tile, row_tiles, col_tiles;
} gemm_problem;

static int64_t matrix_count(const pl_tensor *t)
{
    int64_t count = 1;
    for (int a = 0; a < t->rank - 2; a++)
        count *= t->dims[a];
    return count;
}

static int64_t last_dim(const pl_tensor *t)
{
    return t->dims[t->rank - 1];
}

/* Offset steps of tensor t's matrices along the forward leading axes `lead` (t's leading
 * axes aligned at the right, missing or size-1 axes broadcast). Sets reduced[a] where t is
 * broadcast over a forward axis longer than 1, if `reduced` is given. */
static void lead_steps(const pl_tensor *t, int lead_rank, const int64_t *lead, int64_t *step,
                       bool *reduced)
{
    int t_lead = t->rank - 2, offset = lead_rank - t_lead;
    int64_t size = t->dims[t->rank - 2] * t->dims[t->rank - 1];
    for (int a = lead_rank - 1; a >= 0; a--) {
        int64_t dim = a >= offset ? t->dims[a - offset] : 1;
        step[a] = dim == 1 ? 0 : size;
        if (reduced)
            reduced[a] = dim == 1 && lead[a] > 1;
        size *= dim;
    }
}

/* The forward's leading axes: those of dy (shaped like y). */
static void set_lead(gemm_problem *p, const pl_tensor *y)
{
    p->lead_rank = y->rank - 2;
    for (int a = 0; a < p->lead_rank; a++)
        p->lead[a] = y->dims[a];
}

/* A problem whose leading axes were folded into a matrix axis: one product. */
static void set_folded(gemm_problem *p)
{
    p->lead_rank = 0;
}

static void count_units(gemm_problem *p)
{
    p->outputs = p->terms = 1;
    for (int a = 0; a < p->lead_rank; a++) {
        if (p->reduced[a])
            p->terms *= p->lead[a];
        else
            p->outputs *= p->lead[a];
    }
}

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

/* Tiles from the shapes alone (see the top comment): when there are fewer output matrices
 * than the work deserves units, cut each along its longer side, into at most one piece
 * per MIN_TILE_EDGE and a count that threads share evenly. */
static void plan_tiles(gemm_problem *p)
{
    static const int64_t even_pieces[] = {12, 8, 6, 4, 2};
    count_units(p);
    double macs = (double)p->outputs * (double)p->terms * (double)p->rows * (double)p->cols *
                  (double)p->inner;
    double want = macs / MIN_UNIT_MACS;
    if (want > MAX_UNITS)
        want = MAX_UNITS;
    p->row_tile = p->rows;
    p->col_tile = p->cols;
    int64_t *side = p->rows >= p->cols ? &p->rows : &p->cols;
    int64_t *tile = side == &p->rows ? &p->row_tile : &p->col_tile;
    int64_t most = (int64_t)(want / (double)p->outputs + 0.999);
    if (most > *side / MIN_TILE_EDGE)
        most = *side / MIN_TILE_EDGE;
    for (size_t i = 0; i < sizeof even_pieces / sizeof *even_pieces; i++)
        if (even_pieces[i] <= most) {
            *tile = round_up((*side + even_pieces[i] - 1) / even_pieces[i], TILE_ALIGN);
            break;
        }
    p->row_tiles = (p->rows + p->row_tile - 1) / p->row_tile;
    p->col_tiles = (p->cols + p->col_tile - 1) / p->col_tile;
}

/* Row-major coordinates of `index` over the forward axes selected by `reduced == want`. */
static void unravel(const gemm_problem *p, int64_t index, bool want, int64_t *coord)
{
    for (int a = p->lead_rank - 1; a >= 0; a--) {
        if (p->reduced[a] != want)
            continue;
        coord[a] = index % p->lead[a];
        index /= p->lead[a];
    }
}

static int64_t offset_of(const int64_t *step, const int64_t *coord, int lead_rank)
{
    int64_t off = 0;
    for (int a = 0; a < lead_rank; a++)
        off += coord[a] * step[a];
    return off;
}

/* Element offset of op(M)'s row r (for X) or column c (for Y) of the stored matrix. */
static int64_t row_start(const operand *m, int64_t r)
{
    return m->trans == CblasNoTrans ? r * m->ld : r;
}

static int64_t col_start(const operand *m, int64_t c)
{
    return m->trans == CblasNoTrans ? c : c * m->ld;
}

static void run_unit(const gemm_problem *p, int64_t unit)
{
    int64_t tiles = p->row_tiles * p->col_tiles;
    int64_t o = unit / tiles, tile = unit % tiles;
    int64_t r0 = tile / p->col_tiles * p->row_tile, c0 = tile % p->col_tiles * p->col_tile;
    int64_t rows = p->rows - r0 < p->row_tile ? p->rows - r0 : p->row_tile;
    int64_t cols = p->cols - c0 < p->col_tile ? p->cols - c0 : p->col_tile;
    int64_t coord[MAX_LEAD] = {0};
    unravel(p, o, false, coord);
    float *c = p->c + offset_of(p->c_step, coord, p->lead_rank) + r0 * p->cols + c0;
    for (int64_t t = 0; t < p->terms; t++) {
        unravel(p, t, true, coord);
        const float *x = p->x.data + offset_of(p->x.step, coord, p->lead_rank) +
                         row_start(&p->x, r0);
        const float *y = p->y.data + offset_of(p->y.step, coord, p->lead_rank) +
                         col_start(&p->y, c0);
        cblas_sgemm(CblasRowMajor, p->x.trans, p->y.trans, (int)rows, (int)cols,
                    (int)p->inner, 1.0f, x, (int)p->x.ld, y, (int)p->y.ld, t ? 1.0f : 0.0f,
                    c, (int)p->cols);
    }
}

static void run_share(gemm_problem *p, const pl_kernel_args *args)
{
    plan_tiles(p);
    int64_t begin, end;
    pl_kernel_share(p->outputs * p->row_tiles * p->col_tiles, args->ith, args->nth, &begin,
                    &end);
    for (int64_t u = begin; u < end; u++)
        run_unit(p, u);
}

static operand make_operand(const pl_tensor *t, const void *data, CBLAS_TRANSPOSE trans,
                            const gemm_problem *p)
{
    operand m = {.data = data, .trans = trans, .ld = last_dim(t)};
    if (p->lead_rank > 0)
        lead_steps(t, p->lead_rank, p->lead, m.step, NULL);
    return m;
}

static CBLAS_TRANSPOSE flag(bool transposed)
{
    return transposed ? CblasTrans : CblasNoTrans;
}

/* y = op(a) . op(b). Folded into one GEMM over every row of a when b is one matrix. */
PL_KERNEL(matmul)
{
    const pl_attrs *at = &args->op->attrs;
    const pl_tensor *a = args->in_t[0], *b = args->in_t[1], *y = args->out_t[0];
    gemm_problem p = {.c = args->out[0], .rows = y->dims[y->rank - 2], .cols = last_dim(y)};
    p.inner = at->transpose_a ? a->dims[a->rank - 2] : last_dim(a);
    if (!at->transpose_a && matrix_count(b) == 1) {
        set_folded(&p);
        p.rows = pl_tensor_elements(a) / p.inner;
    } else {
        set_lead(&p, y);
        lead_steps(y, p.lead_rank, p.lead, p.c_step, NULL);
    }
    p.x = make_operand(a, args->in[0], flag(at->transpose_a), &p);
    p.y = make_operand(b, args->in[1], flag(at->transpose_b), &p);
    run_share(&p, args);
}

/* da = dy . op(b)^T (transpose_a: op(b) . dy^T), summed over the axes where a was
 * broadcast; folded over every row of a when b is one matrix. */
PL_KERNEL(matmul_grad_a)
{
    const pl_attrs *at = &args->op->attrs;
    const pl_tensor *dy = args->in_t[0], *a = args->in_t[1], *b = args->in_t[2];
    gemm_problem p = {.c = args->out[0], .inner = last_dim(dy)};
    if (!at->transpose_a && matrix_count(b) == 1) {
        set_folded(&p);
    } else {
        set_lead(&p, dy);
        lead_steps(a, p.lead_rank, p.lead, p.c_step, p.reduced);
    }
    if (!at->transpose_a) { /* da [m,k] = dy [m,n] . op(b)^T [n,k] */
        p.rows = p.lead_rank ? a->dims[a->rank - 2] : pl_tensor_elements(a) / last_dim(a);
        p.cols = last_dim(a);
        p.x = make_operand(dy, args->in[0], CblasNoTrans, &p);
        p.y = make_operand(b, args->in[2], flag(!at->transpose_b), &p);
    } else { /* da [k,m] = op(b) [k,n] . dy^T [n,m] */
        p.rows = a->dims[a->rank - 2];
        p.cols = last_dim(a);
        p.x = make_operand(b, args->in[2], flag(at->transpose_b), &p);
        p.y = make_operand(dy, args->in[0], CblasTrans, &p);
    }
    run_share(&p, args);
}

/* db = op(a)^T . dy (transpose_b: dy^T . op(a)), summed over the axes where b was
 * broadcast; when b is one matrix and a is not transposed, one GEMM whose inner
 * dimension runs over every row of a. */
PL_KERNEL(matmul_grad_b)
{
    const pl_attrs *at = &args->op->attrs;
    const pl_tensor *dy = args->in_t[0], *a = args->in_t[1], *b = args->in_t[2];
    gemm_problem p = {.c = args->out[0], .rows = b->dims[b->rank - 2], .cols = last_dim(b)};
    if (!at->transpose_a && matrix_count(b) == 1) {
        set_folded(&p);
        p.inner = pl_tensor_elements(a) / last_dim(a);
    } else {
        set_lead(&p, dy);
        lead_steps(b, p.lead_rank, p.lead, p.c_step, p.reduced);
        p.inner = dy->dims[dy->rank - 2];
    }
    if (!at->transpose_b) { /* db [k,n] = op(a)^T [k,m] . dy [m,n] */
        p.x = make_operand(a, args->in[1], flag(!at->transpose_a), &p);
        p.y = make_operand(dy, args->in[0], CblasNoTrans, &p);
    } else { /* db [n,k] = dy^T [n,m] . op(a) [m,k] */
        p.x = make_operand(dy, args->in[0], CblasTrans, &p);
        p.y = make_operand(a, args->in[1], flag(at->transpose_a), &p);
    }
    run_share(&p, args);
}
