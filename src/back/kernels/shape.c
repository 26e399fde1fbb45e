/* Data-movement kernels: concat, split, slice and its gradient, copy (reshape, flatten,
 * reshape_like), transpose and embedding lookup.
 *
 * Every element is 4 bytes whatever its dtype (f32 or i32), so these kernels move
 * uint32_t and never interpret values. Each output element is written by exactly one
 * thread with a plain copy, so every result is bitwise independent of nth. */
#include <string.h>

#include "kernels.h"

typedef uint32_t elem; /* one f32 or i32 element, moved as bits */

static int64_t resolve_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* Product of dims[from, to). */
static int64_t dims_product(const pl_tensor *t, int from, int to)
{
    int64_t n = 1;
    for (int a = from; a < to; a++)
        n *= t->dims[a];
    return n;
}

/* A tensor seen as [outer, dims[axis], inner] around one axis. */
typedef struct axis_view {
    int64_t outer, inner;
} axis_view;

static axis_view view_around(const pl_tensor *t, int64_t axis)
{
    return (axis_view){dims_product(t, 0, (int)axis), dims_product(t, (int)axis + 1, t->rank)};
}

/* This thread's share of a rows x width block moved between two row-major matrices of
 * leading dimensions dst_ld and src_ld (in elements); a NULL src zero-fills. The block's
 * elements are shared evenly, so a single long row is split too. */
static void move_block_share(elem *dst, int64_t dst_ld, const elem *src, int64_t src_ld,
                             int64_t rows, int64_t width, int ith, int nth)
{
    if (rows <= 0 || width <= 0)
        return;
    int64_t pos, end;
    pl_kernel_share(rows * width, ith, nth, &pos, &end);
    while (pos < end) {
        int64_t row = pos / width, col = pos % width;
        int64_t count = width - col < end - pos ? width - col : end - pos;
        elem *d = dst + row * dst_ld + col;
        if (src)
            memcpy(d, src + row * src_ld + col, (size_t)count * sizeof(elem));
        else
            memset(d, 0, (size_t)count * sizeof(elem));
        pos += count;
    }
}

/* concat(x1..xn) -> y along axis: input i fills columns [offset_i, offset_i + width_i)
 * of y seen as [outer, row]. Each input's block is shared across all threads. */
PL_KERNEL(concat)
{
    const pl_tensor *y_t = args->out_t[0];
    int64_t axis = resolve_axis(args->op->attrs.axis, y_t->rank);
    axis_view v = view_around(y_t, axis);
    int64_t row = y_t->dims[axis] * v.inner, offset = 0;
    elem *y = args->out[0];
    for (int i = 0; i < args->op->n_inputs; i++) {
        int64_t width = args->in_t[i]->dims[axis] * v.inner;
        move_block_share(y + offset, row, args->in[i], width, v.outer, width, args->ith,
                         args->nth);
        offset += width;
    }
}

/* split(x) -> y1..yn along axis: the mirror of concat. */
PL_KERNEL(split)
{
    const pl_tensor *x_t = args->in_t[0];
    int64_t axis = resolve_axis(args->op->attrs.axis, x_t->rank);
    axis_view v = view_around(x_t, axis);
    int64_t row = x_t->dims[axis] * v.inner, offset = 0;
    const elem *x = args->in[0];
    for (int i = 0; i < args->op->n_outputs; i++) {
        int64_t width = args->out_t[i]->dims[axis] * v.inner;
        move_block_share(args->out[i], width, x + offset, row, v.outer, width, args->ith,
                         args->nth);
        offset += width;
    }
}

/* slice(x) -> x[..., start:end, ...] along axis. */
PL_KERNEL(slice)
{
    const pl_tensor *x_t = args->in_t[0];
    const pl_attrs *at = &args->op->attrs;
    int64_t axis = resolve_axis(at->axis, x_t->rank);
    axis_view v = view_around(x_t, axis);
    int64_t row = x_t->dims[axis] * v.inner, width = (at->end - at->start) * v.inner;
    const elem *x = args->in[0];
    move_block_share(args->out[0], width, x + at->start * v.inner, row, v.outer, width,
                     args->ith, args->nth);
}

/* slice_grad(dy, x) -> dx: dy in [start, end) along axis, zeros before and after. */
PL_KERNEL(slice_grad)
{
    const pl_tensor *x_t = args->in_t[1];
    const pl_attrs *at = &args->op->attrs;
    int64_t axis = resolve_axis(at->axis, x_t->rank);
    axis_view v = view_around(x_t, axis);
    int64_t row = x_t->dims[axis] * v.inner;
    int64_t lo = at->start * v.inner, hi = at->end * v.inner;
    elem *dx = args->out[0];
    move_block_share(dx, row, NULL, 0, v.outer, lo, args->ith, args->nth);
    move_block_share(dx + lo, row, args->in[0], hi - lo, v.outer, hi - lo, args->ith,
                     args->nth);
    move_block_share(dx + hi, row, NULL, 0, v.outer, row - hi, args->ith, args->nth);
}

/* reshape, flatten, reshape_like: the bytes do not change, only the descriptor. */
PL_KERNEL(copy)
{
    int64_t n = pl_tensor_elements(args->out_t[0]);
    const elem *x = args->in[0];
    elem *y = args->out[0];
    if (x == y) /* an executor may alias a reshape's output to its input */
        return;
    move_block_share(y, n, x, n, 1, n, args->ith, args->nth);
}

/* transpose(x) -> y with y.dims[a] = x.dims[perm[a]]. Threads share y's rows (every axis
 * but the last); a row is one memcpy when perm keeps the last axis last (as the
 * attention layouts [B,S,H,D] <-> [B,H,S,D] do), otherwise a strided gather. */
PL_KERNEL(transpose)
{
    const pl_tensor *x_t = args->in_t[0], *y_t = args->out_t[0];
    const int64_t *perm = args->op->attrs.perm.v;
    int rank = y_t->rank;
    const elem *x = args->in[0];
    elem *y = args->out[0];
    if (rank == 0) {
        if (args->ith == 0)
            y[0] = x[0];
        return;
    }
    int64_t x_stride[PL_MAX_RANK], src_stride[PL_MAX_RANK];
    x_stride[rank - 1] = 1;
    for (int a = rank - 2; a >= 0; a--)
        x_stride[a] = x_stride[a + 1] * x_t->dims[a + 1];
    for (int a = 0; a < rank; a++)
        src_stride[a] = x_stride[perm[a]];
    int64_t width = y_t->dims[rank - 1], inner_stride = src_stride[rank - 1];
    int64_t rows = width ? pl_tensor_elements(y_t) / width : 0;
    int64_t begin, end;
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    if (begin >= end)
        return;
    /* The multi-index of row `begin` over y's leading axes, then an odometer. */
    int64_t index[PL_MAX_RANK] = {0}, src = 0;
    for (int a = rank - 2; a >= 0; a--) {
        int64_t stride_rows = dims_product(y_t, a + 1, rank - 1);
        index[a] = begin / stride_rows % y_t->dims[a];
        src += index[a] * src_stride[a];
    }
    for (int64_t row = begin; row < end; row++) {
        elem *d = y + row * width;
        const elem *s = x + src;
        if (inner_stride == 1)
            memcpy(d, s, (size_t)width * sizeof(elem));
        else
            for (int64_t j = 0; j < width; j++)
                d[j] = s[j * inner_stride];
        for (int a = rank - 2; a >= 0; a--) {
            src += src_stride[a];
            if (++index[a] < y_t->dims[a])
                break;
            src -= index[a] * src_stride[a];
            index[a] = 0;
        }
    }
}

/* embedding(table [V,D], ids [...]) -> [..., D]: row lookups shared by ids, the table's
 * first row being id `start`; an id outside [start, start + V) gives a zero row (a
 * shard of a table split by rows, or a bad id, never read out of bounds). */
PL_KERNEL(embedding)
{
    const pl_tensor *table_t = args->in_t[0];
    int64_t vocab = table_t->dims[0], width = table_t->dims[1], start = args->op->attrs.start;
    const float *table = args->in[0];
    const int32_t *ids = args->in[1];
    float *y = args->out[0];
    int64_t begin, end;
    pl_kernel_share(pl_tensor_elements(args->in_t[1]), args->ith, args->nth, &begin, &end);
    for (int64_t i = begin; i < end; i++) {
        float *row = y + i * width;
        int64_t id = ids[i] - start;
        if (id >= 0 && id < vocab)
            memcpy(row, table + id * width, (size_t)width * sizeof(float));
        else
            memset(row, 0, (size_t)width * sizeof(float));
    }
}
