/* Element-wise kernels: NumPy-broadcast arithmetic, activations and their gradients,
 * dropout, and the reductions and broadcasts that autodiff pairs with them (sum_to,
 * broadcast_like, reduce_sum, reduce_mean).
 *
 * Every kernel here is nth-independent: each output element is written by one thread and,
 * for the reductions, summed in the same order whatever the share. Element-wise kernels
 * split the output into contiguous runs; reductions split their output elements, and each
 * element sums its inputs in increasing index order (contiguous runs in eight fixed
 * lanes, so that the compiler can vectorise them without changing the result). */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "kernels_impl.h"
#include "rng.h"

static void my_share(const pl_kernel_args *args, int64_t n, int64_t *begin, int64_t *end)
{
    pl_kernel_share(n, args->ith, args->nth, begin, end);
}

static const float *in_f32(const pl_kernel_args *args, int i)
{
    return args->in[i];
}

static float *out_f32(const pl_kernel_args *args, int i)
{
    return args->out[i];
}

static int64_t out_elements(const pl_kernel_args *args)
{
    return pl_tensor_elements(args->out_t[0]);
}

/* ---- broadcasting walks ------------------------------------------------------------- */

/* The output's axes (size-1 axes dropped, mergeable neighbours merged) with each
 * operand's element stride along them, 0 where it is broadcast. */
typedef struct walk {
    int rank, n_ops;
    int64_t dims[PL_MAX_RANK];
    int64_t stride[3][PL_MAX_RANK];
} walk;

/* Where a walk is: the coordinates of an output element and each operand's offset. */
typedef struct walk_pos {
    int64_t coord[PL_MAX_RANK];
    int64_t off[3];
} walk_pos;

static void operand_strides(const pl_tensor *out, const pl_tensor *t, int64_t *stride)
{
    int offset = out->rank - t->rank;
    int64_t size = 1;
    for (int a = out->rank - 1; a >= 0; a--) {
        int64_t dim = a >= offset ? t->dims[a - offset] : 1;
        stride[a] = dim == 1 ? 0 : size;
        size *= dim;
    }
}

static bool mergeable(const walk *w, int outer, int inner)
{
    for (int k = 0; k < w->n_ops; k++)
        if (w->stride[k][outer] != w->stride[k][inner] * w->dims[inner])
            return false;
    return true;
}

static void walk_init(walk *w, const pl_tensor *out, const pl_tensor *const *ops, int n_ops)
{
    int64_t full[3][PL_MAX_RANK];
    for (int k = 0; k < n_ops; k++)
        operand_strides(out, ops[k], full[k]);
    w->rank = 0;
    w->n_ops = n_ops;
    for (int a = 0; a < out->rank; a++) {
        if (out->dims[a] == 1)
            continue;
        int r = w->rank++;
        w->dims[r] = out->dims[a];
        for (int k = 0; k < n_ops; k++)
            w->stride[k][r] = full[k][a];
        if (r > 0 && mergeable(w, r - 1, r)) {
            w->dims[r - 1] *= w->dims[r];
            for (int k = 0; k < n_ops; k++)
                w->stride[k][r - 1] = w->stride[k][r];
            w->rank--;
        }
    }
    if (w->rank == 0) { /* a single element */
        w->rank = 1;
        w->dims[0] = 1;
        for (int k = 0; k < n_ops; k++)
            w->stride[k][0] = 0;
    }
}

static void walk_offsets(const walk *w, walk_pos *p)
{
    for (int k = 0; k < w->n_ops; k++) {
        p->off[k] = 0;
        for (int a = 0; a < w->rank; a++)
            p->off[k] += p->coord[a] * w->stride[k][a];
    }
}

static void walk_seek(const walk *w, int64_t index, walk_pos *p)
{
    for (int a = w->rank - 1; a >= 0; a--) {
        p->coord[a] = index % w->dims[a];
        index /= w->dims[a];
    }
    walk_offsets(w, p);
}

/* Moves `len` elements along the innermost axis, carrying into the outer ones. */
static void walk_advance(const walk *w, walk_pos *p, int64_t len)
{
    int a = w->rank - 1;
    p->coord[a] += len;
    for (; a > 0 && p->coord[a] == w->dims[a]; a--) {
        p->coord[a] = 0;
        p->coord[a - 1]++;
    }
    walk_offsets(w, p);
}

/* Length of the run starting at p that stays on one innermost row and within `left`. */
static int64_t walk_run(const walk *w, const walk_pos *p, int64_t left)
{
    int64_t row = w->dims[w->rank - 1] - p->coord[w->rank - 1];
    return row < left ? row : left;
}

/* This thread's share [*begin, *end) of the output, with the walk over the first n_ops
 * inputs positioned at its start; false when the share is empty. */
static bool walk_share(const pl_kernel_args *args, int n_ops, walk *w, walk_pos *p,
                       int64_t *begin, int64_t *end)
{
    walk_init(w, args->out_t[0], args->in_t, n_ops);
    my_share(args, out_elements(args), begin, end);
    if (*begin >= *end)
        return false;
    walk_seek(w, *begin, p);
    return true;
}

/* ---- add, sub, mul, div ---------------------------------------------------------------------- */

typedef enum binary_op {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV,
    OP_EQUAL, OP_NOT_EQUAL, OP_LESS, OP_LESS_EQUAL, OP_GREATER, OP_GREATER_EQUAL
} binary_op;

/* One run of y = a op b with element strides sa and sb (0: broadcast). The common stride
 * pairs get loops of their own so that they vectorise. */
#define BINARY_RUN(EXPR)                                                                   \
    do {                                                                                   \
        if (sa == 1 && sb == 1) {                                                          \
            for (int64_t i = 0; i < n; i++) {                                              \
                float av = a[i], bv = b[i];                                                \
                y[i] = EXPR;                                                               \
            }                                                                              \
        } else if (sa == 1 && sb == 0) {                                                   \
            const float bv = b[0];                                                         \
            for (int64_t i = 0; i < n; i++) {                                              \
                float av = a[i];                                                           \
                y[i] = EXPR;                                                               \
            }                                                                              \
        } else if (sa == 0 && sb == 1) {                                                   \
            const float av = a[0];                                                         \
            for (int64_t i = 0; i < n; i++) {                                              \
                float bv = b[i];                                                           \
                y[i] = EXPR;                                                               \
            }                                                                              \
        } else {                                                                           \
            for (int64_t i = 0; i < n; i++) {                                              \
                float av = a[i * sa], bv = b[i * sb];                                      \
                y[i] = EXPR;                                                               \
            }                                                                              \
        }                                                                                  \
    } while (0)

PL_VECTOR_CLONES static void binary_run(binary_op op, float *y, const float *a, int64_t sa,
                                        const float *b, int64_t sb, int64_t n)
{
    switch (op) {
    case OP_ADD:
        BINARY_RUN(av + bv);
        break;
    case OP_SUB:
        BINARY_RUN(av - bv);
        break;
    case OP_MUL:
        BINARY_RUN(av * bv);
        break;
    case OP_DIV:
        BINARY_RUN(av / bv);
        break;
    case OP_EQUAL:
        BINARY_RUN(av == bv ? 1.0f : 0.0f);
        break;
    case OP_NOT_EQUAL:
        BINARY_RUN(av != bv ? 1.0f : 0.0f);
        break;
    case OP_LESS:
        BINARY_RUN(av < bv ? 1.0f : 0.0f);
        break;
    case OP_LESS_EQUAL:
        BINARY_RUN(av <= bv ? 1.0f : 0.0f);
        break;
    case OP_GREATER:
        BINARY_RUN(av > bv ? 1.0f : 0.0f);
        break;
    case OP_GREATER_EQUAL:
        BINARY_RUN(av >= bv ? 1.0f : 0.0f);
        break;
    }
}

static void binary_kernel(const pl_kernel_args *args, binary_op op)
{
    const float *a = in_f32(args, 0), *b = in_f32(args, 1);
    float *y = out_f32(args, 0);
    walk w;
    walk_pos p;
    int64_t begin, end;
    if (!walk_share(args, 2, &w, &p, &begin, &end))
        return;
    int inner = w.rank - 1;
    for (int64_t i = begin; i < end;) {
        int64_t len = walk_run(&w, &p, end - i);
        binary_run(op, y + i, a + p.off[0], w.stride[0][inner], b + p.off[1],
                   w.stride[1][inner], len);
        i += len;
        if (i < end)
            walk_advance(&w, &p, len);
    }
}

PL_KERNEL(add)
{
    binary_kernel(args, OP_ADD);
}

PL_KERNEL(sub)
{
    binary_kernel(args, OP_SUB);
}

PL_KERNEL(mul)
{
    binary_kernel(args, OP_MUL);
}

PL_KERNEL(div)
{
    binary_kernel(args, OP_DIV);
}

/* Comparisons: 1 where the relation holds, else 0. */
PL_KERNEL(equal)
{
    binary_kernel(args, OP_EQUAL);
}

PL_KERNEL(not_equal)
{
    binary_kernel(args, OP_NOT_EQUAL);
}

PL_KERNEL(less)
{
    binary_kernel(args, OP_LESS);
}

PL_KERNEL(less_equal)
{
    binary_kernel(args, OP_LESS_EQUAL);
}

PL_KERNEL(greater)
{
    binary_kernel(args, OP_GREATER);
}

PL_KERNEL(greater_equal)
{
    binary_kernel(args, OP_GREATER_EQUAL);
}

/* ---- where -------------------------------------------------------------------------------- */

/* y = cond != 0 ? a : b, the three broadcast over y. */
PL_KERNEL(where)
{
    const float *cond = in_f32(args, 0), *a = in_f32(args, 1), *b = in_f32(args, 2);
    float *y = out_f32(args, 0);
    walk w;
    walk_pos p;
    int64_t begin, end;
    if (!walk_share(args, 3, &w, &p, &begin, &end))
        return;
    int inner = w.rank - 1;
    int64_t sc = w.stride[0][inner], sa = w.stride[1][inner], sb = w.stride[2][inner];
    for (int64_t i = begin; i < end;) {
        int64_t len = walk_run(&w, &p, end - i);
        const float *c = cond + p.off[0], *ar = a + p.off[1], *br = b + p.off[2];
        for (int64_t j = 0; j < len; j++)
            y[i + j] = c[j * sc] != 0.0f ? ar[j * sa] : br[j * sb];
        i += len;
        if (i < end)
            walk_advance(&w, &p, len);
    }
}

/* dy [y's shape], cond -> da = dy where cond != 0, db = dy elsewhere (0 in the other). */
PL_KERNEL(where_grad)
{
    const float *dy = in_f32(args, 0), *cond = in_f32(args, 1);
    float *da = out_f32(args, 0), *db = out_f32(args, 1);
    walk w;
    walk_pos p;
    int64_t begin, end;
    if (!walk_share(args, 2, &w, &p, &begin, &end))
        return;
    int64_t sc = w.stride[1][w.rank - 1];
    for (int64_t i = begin; i < end;) {
        int64_t len = walk_run(&w, &p, end - i);
        const float *c = cond + p.off[1];
        for (int64_t j = 0; j < len; j++) {
            bool take = c[j * sc] != 0.0f;
            da[i + j] = take ? dy[i + j] : 0.0f;
            db[i + j] = take ? 0.0f : dy[i + j];
        }
        i += len;
        if (i < end)
            walk_advance(&w, &p, len);
    }
}

/* ---- activations ------------------------------------------------------------------------ */

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

/* Applies EXPR (of x) to this thread's share of input 0. */
#define UNARY_KERNEL(EXPR)                                                                 \
    do {                                                                                   \
        const float *in = in_f32(args, 0);                                                 \
        float *out = out_f32(args, 0);                                                     \
        int64_t begin, end;                                                                \
        my_share(args, out_elements(args), &begin, &end);                                  \
        for (int64_t i = begin; i < end; i++) {                                            \
            float x = in[i];                                                               \
            out[i] = EXPR;                                                                 \
        }                                                                                  \
    } while (0)

/* Applies EXPR (of dy and v, input 1) to this thread's share. */
#define GRAD_KERNEL(EXPR)                                                                  \
    do {                                                                                   \
        const float *dys = in_f32(args, 0), *vs = in_f32(args, 1);                         \
        float *out = out_f32(args, 0);                                                     \
        int64_t begin, end;                                                                \
        my_share(args, out_elements(args), &begin, &end);                                  \
        for (int64_t i = begin; i < end; i++) {                                            \
            float dy = dys[i], v = vs[i];                                                  \
            out[i] = EXPR;                                                                 \
        }                                                                                  \
    } while (0)

/* gelu(x) = x/2 (1 + tanh(u)) = x * sigmoid(2u), u = c (x + a x^3): the sigmoid form keeps
 * its relative precision where 1 + tanh(u) cancels (x well below 0). */
static inline float gelu(float x)
{
    return x * pl_sigmoidf(2.0f * GELU_C * (x + GELU_A * x * x * x));
}

/* d/dx: s + 2 x s (1 - s) u', with s = sigmoid(2u). */
static inline float gelu_derivative(float x)
{
    float s = pl_sigmoidf(2.0f * GELU_C * (x + GELU_A * x * x * x));
    return s + 2.0f * x * s * (1.0f - s) * GELU_C * (1.0f + 3.0f * GELU_A * x * x);
}

/* The exact gelu, x * Phi(x) = x/2 erfc(-x/sqrt(2)): erfc keeps the relative precision
 * that 1 + erf(x/sqrt(2)) loses for x well below 0. */
static inline float gelu_exact(float x)
{
    return 0.5f * x * pl_erfcf(-x * (float)M_SQRT1_2);
}

/* d/dx: Phi(x) + x phi(x). */
static inline float gelu_exact_derivative(float x)
{
    const float inv_sqrt_2pi = 0.3989422804014327f;
    return 0.5f * pl_erfcf(-x * (float)M_SQRT1_2) + x * inv_sqrt_2pi * pl_expf(-0.5f * x * x);
}

static inline float sigmoid(float x)
{
    return pl_sigmoidf(x);
}

/* The hard activations, in PyTorch's order of operations (the same float roundings), and
 * their gradients with PyTorch's values at the kinks. */
static inline float clamp(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x; /* NaN passes through */
}

static inline float hardsigmoid(float x)
{
    return clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
}

static inline float hardswish(float x)
{
    return x * clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
}

static inline float hardswish_grad(float dy, float x)
{
    return x < -3.0f ? 0.0f : x <= 3.0f ? dy * (x / 3.0f + 0.5f) : dy;
}

PL_VECTOR_CLONES PL_KERNEL(scale)
{
    const float factor = (float)args->op->attrs.factor;
    UNARY_KERNEL(factor * x);
}

PL_VECTOR_CLONES PL_KERNEL(relu)
{
    UNARY_KERNEL(x > 0.0f ? x : 0.0f);
}

PL_VECTOR_CLONES PL_KERNEL(gelu)
{
    if (args->op->attrs.approximate == PL_GELU_EXACT)
        UNARY_KERNEL(gelu_exact(x));
    else
        UNARY_KERNEL(gelu(x));
}

PL_VECTOR_CLONES PL_KERNEL(tanh)
{
    UNARY_KERNEL(pl_tanhf(x));
}

PL_VECTOR_CLONES PL_KERNEL(sigmoid)
{
    UNARY_KERNEL(sigmoid(x));
}

PL_VECTOR_CLONES PL_KERNEL(clamp)
{
    const float lo = (float)args->op->attrs.clamp_min, hi = (float)args->op->attrs.clamp_max;
    UNARY_KERNEL(clamp(x, lo, hi));
}

PL_VECTOR_CLONES PL_KERNEL(hardsigmoid)
{
    UNARY_KERNEL(hardsigmoid(x));
}

PL_VECTOR_CLONES PL_KERNEL(hardswish)
{
    UNARY_KERNEL(hardswish(x));
}

PL_KERNEL(erf)
{
    UNARY_KERNEL(erff(x));
}

PL_VECTOR_CLONES PL_KERNEL(relu_grad)
{
    GRAD_KERNEL(v > 0.0f ? dy : 0.0f);
}

PL_VECTOR_CLONES PL_KERNEL(gelu_grad)
{
    if (args->op->attrs.approximate == PL_GELU_EXACT)
        GRAD_KERNEL(dy * gelu_exact_derivative(v));
    else
        GRAD_KERNEL(dy * gelu_derivative(v));
}

PL_VECTOR_CLONES PL_KERNEL(tanh_grad)
{
    GRAD_KERNEL(dy * (1.0f - v * v));
}

PL_VECTOR_CLONES PL_KERNEL(sigmoid_grad)
{
    GRAD_KERNEL(dy * v * (1.0f - v));
}

/* Zero at the bounds themselves, as PyTorch's hardtanh and relu6. */
PL_VECTOR_CLONES PL_KERNEL(clamp_grad)
{
    const float lo = (float)args->op->attrs.clamp_min, hi = (float)args->op->attrs.clamp_max;
    GRAD_KERNEL(v > lo && v < hi ? dy : 0.0f);
}

PL_VECTOR_CLONES PL_KERNEL(hardsigmoid_grad)
{
    GRAD_KERNEL(v > -3.0f && v < 3.0f ? dy / 6.0f : 0.0f);
}

PL_VECTOR_CLONES PL_KERNEL(hardswish_grad)
{
    GRAD_KERNEL(hardswish_grad(dy, v));
}

PL_VECTOR_CLONES PL_KERNEL(erf_grad)
{
    const float two_over_sqrt_pi = 1.1283791670955126f;
    GRAD_KERNEL(dy * two_over_sqrt_pi * pl_expf(-v * v));
}

/* ---- exp, log, sqrt, rsqrt, abs, pow: IEEE's values outside the domain (NaN below 0 for
 * log and sqrt, inf at the poles), as PyTorch gives, and its gradient formulas. */

/* exp(x) as exp(x/2)^2: pl_expf clamps its argument to the normal range; the square then
 * overflows to inf and underflows through the subnormals to 0, as exp does. */
static inline float exp_ieee(float x)
{
    float half = pl_expf(0.5f * x);
    return half * half;
}

PL_VECTOR_CLONES PL_KERNEL(exp)
{
    UNARY_KERNEL(exp_ieee(x));
}

PL_KERNEL(log)
{
    UNARY_KERNEL(logf(x));
}

PL_VECTOR_CLONES PL_KERNEL(sqrt)
{
    UNARY_KERNEL(sqrtf(x));
}

PL_VECTOR_CLONES PL_KERNEL(rsqrt)
{
    UNARY_KERNEL(1.0f / sqrtf(x));
}

PL_VECTOR_CLONES PL_KERNEL(abs)
{
    UNARY_KERNEL(fabsf(x));
}

PL_KERNEL(pow)
{
    const float p = (float)args->op->attrs.exponent;
    UNARY_KERNEL(powf(x, p));
}

PL_VECTOR_CLONES PL_KERNEL(sqrt_grad)
{
    GRAD_KERNEL(dy / (2.0f * v));
}

PL_VECTOR_CLONES PL_KERNEL(rsqrt_grad)
{
    GRAD_KERNEL(-0.5f * dy * (v * v * v));
}

/* sign(x), 0 at 0, as PyTorch's sgn */
PL_VECTOR_CLONES PL_KERNEL(abs_grad)
{
    GRAD_KERNEL(dy * (float)((v > 0.0f) - (v < 0.0f)));
}

/* PyTorch's pow_backward: 0 for the exponent 0 (x^0 is constant even at x = 0). */
PL_KERNEL(pow_grad)
{
    const float p = (float)args->op->attrs.exponent;
    GRAD_KERNEL(dy * (p == 0.0f ? 0.0f : p * powf(v, p - 1.0f)));
}

/* silu(x) = x sigmoid(x), as x / (1 + exp(-x)) like PyTorch's. */
static inline float silu(float x)
{
    return x / (1.0f + pl_expf(-x));
}

/* d/dx: s (1 + x (1 - s)), s = sigmoid(x). */
static inline float silu_derivative(float x)
{
    float s = pl_sigmoidf(x);
    return s * (1.0f + x * (1.0f - s));
}

PL_VECTOR_CLONES PL_KERNEL(silu)
{
    UNARY_KERNEL(silu(x));
}

PL_VECTOR_CLONES PL_KERNEL(silu_grad)
{
    GRAD_KERNEL(dy * silu_derivative(v));
}

PL_KERNEL(logical_not)
{
    UNARY_KERNEL(x == 0.0f ? 1.0f : 0.0f);
}

PL_KERNEL(zeros_like)
{
    int64_t begin, end;
    my_share(args, out_elements(args), &begin, &end);
    if (end > begin)
        memset(out_f32(args, 0) + begin, 0, (size_t)(end - begin) * sizeof(float));
}

/* ---- dropout -------------------------------------------------------------------------- */

/* The counter of element i's keep decision in modes row and batch: its row's position in
 * the whole step's batch axis (a micro-batch of `rows` follows micro_batch times as many),
 * or one draw for the whole step. A row is a sample, or one of a sample's `group` rows
 * where the batch is merged with the axes after it (PyTorch draws per row of axis 0). */
static int64_t shared_keep_counter(const pl_kernel_args *args, pl_batch_layout layout,
                                   int64_t i)
{
    if (args->op->attrs.mode == PL_DROPOUT_BATCH)
        return 0;
    int64_t rows = layout.batch * layout.group, row_size = layout.inner / layout.group;
    return args->step->micro_batch * rows + (i / row_size) % rows;
}

/* A shard of a split dropout (split_graph.h): its attributes axis, start and end say
 * that its elements are [start, start + its size) of that axis of a tensor whose axis has
 * `end` elements. Each element draws as that tensor's would: element by element, by its
 * place there. */
static void dropout_shard(const pl_kernel_args *args, int64_t begin, int64_t end)
{
    const pl_attrs *at = &args->op->attrs;
    const float *x = in_f32(args, 0);
    float *y = out_f32(args, 0);
    pl_tensor whole = *args->out_t[0];
    int axis = (int)at->axis;
    int64_t inner = 1, part = whole.dims[axis];
    for (int a = axis + 1; a < whole.rank; a++)
        inner *= whole.dims[a];
    whole.dims[axis] = at->end;
    const pl_batch_layout layout = pl_tensor_batch_layout(&whole);
    const int64_t m = args->step->micro_batches > 1 ? args->step->micro_batches : 1;
    const int64_t run = pl_tensor_elements(&whole) / layout.outer, whole_run = run * m;
    const float keep_scale = (float)(1.0 / (1.0 - at->rate));
    for (int64_t i = begin; i < end; i++) {
        int64_t j = (i / (part * inner) * at->end + at->start + i / inner % part) * inner +
                    i % inner;
        int64_t o = j / run, counter = at->mode == PL_DROPOUT_ELEMENT
                                           ? o * whole_run + args->step->micro_batch * run +
                                                 j - o * run
                                           : shared_keep_counter(args, layout, j);
        y[i] = pl_rng_keep((uint64_t)at->seed, args->step->step, counter, (float)at->rate)
                   ? x[i] * keep_scale
                   : 0.0f;
    }
}

/* y = mask * x / (1 - rate); the mask is a pure function of (seed, step, position in the
 * whole step's batch), so the gradient redraws it instead of storing it. The micro-batch
 * holds `outer` runs of its samples (one unless the batch is after axis 0), each run a
 * block of the whole step's run, `micro_batches` times as long. */
PL_VECTOR_CLONES static void dropout_apply(const pl_kernel_args *args)
{
    const pl_attrs *at = &args->op->attrs;
    const float *x = in_f32(args, 0);
    float *y = out_f32(args, 0);
    int64_t n = out_elements(args), begin, end;
    my_share(args, n, &begin, &end);
    if (!args->step->training) {
        if (end > begin)
            memcpy(y + begin, x + begin, (size_t)(end - begin) * sizeof *y);
        return;
    }
    if (at->end > 0) {
        dropout_shard(args, begin, end);
        return;
    }
    const float rate = (float)at->rate, keep_scale = (float)(1.0 / (1.0 - at->rate));
    const uint64_t seed = (uint64_t)at->seed;
    const int64_t step = args->step->step, m = args->step->micro_batches > 1
                                                   ? args->step->micro_batches : 1;
    const pl_batch_layout layout = pl_tensor_batch_layout(args->out_t[0]);
    if (at->mode != PL_DROPOUT_ELEMENT) {
        /* one draw for each run of elements that share it: a row's (shared_keep_counter) */
        int64_t share = at->mode == PL_DROPOUT_BATCH ? n : layout.inner / layout.group;
        for (int64_t i = begin; i < end;) {
            int64_t stop = (i / share + 1) * share < end ? (i / share + 1) * share : end;
            if (pl_rng_keep(seed, step, shared_keep_counter(args, layout, i), rate))
                for (; i < stop; i++)
                    y[i] = x[i] * keep_scale;
            else
                for (; i < stop; i++)
                    y[i] = 0.0f;
        }
        return;
    }
    const int64_t run = n / layout.outer, whole_run = run * m;
    for (int64_t i = begin; i < end;) {
        int64_t o = i / run, stop = (o + 1) * run < end ? (o + 1) * run : end;
        int64_t shift = o * whole_run + args->step->micro_batch * run - o * run;
        for (; i < stop; i++)
            y[i] = pl_rng_keep(seed, step, shift + i, rate) ? x[i] * keep_scale : 0.0f;
    }
}

PL_KERNEL(dropout)
{
    dropout_apply(args);
}

PL_KERNEL(dropout_grad)
{
    dropout_apply(args);
}

/* ---- reductions ------------------------------------------------------------------------- */

/* x's axes with size-1 axes dropped and neighbours of the same kind merged, each reduced
 * or kept; the output holds the kept axes in order. */
typedef struct reduce_plan {
    int rank;
    int64_t dims[PL_MAX_RANK];
    int64_t stride[PL_MAX_RANK]; /* of x */
    bool reduced[PL_MAX_RANK];
    int64_t out_count, reduce_count;
} reduce_plan;

static void plan_reduce(reduce_plan *p, const pl_tensor *x, const bool *reduced)
{
    p->rank = 0;
    p->out_count = p->reduce_count = 1;
    for (int a = 0; a < x->rank; a++) {
        int64_t dim = x->dims[a];
        if (reduced[a])
            p->reduce_count *= dim;
        else
            p->out_count *= dim;
        if (dim == 1)
            continue;
        if (p->rank > 0 && p->reduced[p->rank - 1] == reduced[a]) {
            p->dims[p->rank - 1] *= dim;
            continue;
        }
        p->dims[p->rank] = dim;
        p->reduced[p->rank++] = reduced[a];
    }
    int64_t size = 1;
    for (int a = p->rank - 1; a >= 0; a--) {
        p->stride[a] = size;
        size *= p->dims[a];
    }
}

/* x offset of coordinates `index` over the axes with reduced == want, up to axis `stop`. */
static int64_t plan_offset(const reduce_plan *p, int64_t index, bool want, int stop)
{
    int64_t off = 0;
    for (int a = stop - 1; a >= 0; a--) {
        if (p->reduced[a] != want)
            continue;
        off += index % p->dims[a] * p->stride[a];
        index /= p->dims[a];
    }
    return off;
}

/* Innermost axis reduced: each output element sums contiguous runs. */
PL_VECTOR_CLONES static void reduce_inner_runs(const reduce_plan *p, const float *x, float *y,
                                               int64_t begin, int64_t end, float scale)
{
    int inner = p->rank - 1;
    int64_t run = p->dims[inner], outer_terms = p->reduce_count / run;
    for (int64_t o = begin; o < end; o++) {
        const float *base = x + plan_offset(p, o, false, inner);
        float sum = 0.0f;
        for (int64_t t = 0; t < outer_terms; t++)
            sum += pl_sum_run(base + plan_offset(p, t, true, inner), run);
        y[o] = sum * scale;
    }
}

/* Innermost axis kept: each segment of an output row adds whole input rows into itself,
 * in increasing order of the reduced index. */
PL_VECTOR_CLONES static void reduce_outer_rows(const reduce_plan *p, const float *x, float *y,
                                               int64_t begin, int64_t end, float scale)
{
    int inner = p->rank - 1;
    int64_t width = p->dims[inner];
    for (int64_t o = begin; o < end;) {
        int64_t row = o / width, c0 = o % width;
        int64_t c1 = width < c0 + (end - o) ? width : c0 + (end - o);
        const float *base = x + plan_offset(p, row, false, inner) + c0;
        float *seg = y + o;
        int64_t len = c1 - c0;
        for (int64_t t = 0; t < p->reduce_count; t++) {
            const float *src = base + plan_offset(p, t, true, inner);
            if (t == 0)
                memcpy(seg, src, (size_t)len * sizeof *seg);
            else
                for (int64_t c = 0; c < len; c++)
                    seg[c] += src[c];
        }
        if (scale != 1.0f)
            for (int64_t c = 0; c < len; c++)
                seg[c] *= scale;
        o += len;
    }
}

/* y = scale * (x summed over the `reduced` axes), this thread's share of y. */
static void reduce_kernel(const pl_kernel_args *args, const bool *reduced, bool mean)
{
    reduce_plan p;
    plan_reduce(&p, args->in_t[0], reduced);
    const float *x = in_f32(args, 0);
    float *y = out_f32(args, 0);
    float scale = mean ? (float)(1.0 / (double)p.reduce_count) : 1.0f;
    int64_t begin, end;
    my_share(args, p.out_count, &begin, &end);
    if (begin >= end)
        return;
    if (p.rank == 0 || p.reduce_count == 1) { /* nothing to sum */
        for (int64_t o = begin; o < end; o++)
            y[o] = x[o] * scale;
    } else if (p.reduced[p.rank - 1]) {
        reduce_inner_runs(&p, x, y, begin, end, scale);
    } else {
        reduce_outer_rows(&p, x, y, begin, end, scale);
    }
}

/* The axes listed in attrs.axes (negative from the end) of a rank-`rank` tensor. */
static void listed_axes(const pl_attrs *at, int rank, bool *reduced)
{
    for (int a = 0; a < PL_MAX_RANK; a++)
        reduced[a] = false;
    for (int i = 0; i < at->axes.n; i++) {
        int64_t a = at->axes.v[i] < 0 ? at->axes.v[i] + rank : at->axes.v[i];
        if (a >= 0 && a < rank)
            reduced[a] = true;
    }
}

PL_KERNEL(reduce_sum)
{
    bool reduced[PL_MAX_RANK];
    listed_axes(&args->op->attrs, args->in_t[0]->rank, reduced);
    reduce_kernel(args, reduced, false);
}

PL_KERNEL(reduce_mean)
{
    bool reduced[PL_MAX_RANK];
    listed_axes(&args->op->attrs, args->in_t[0]->rank, reduced);
    reduce_kernel(args, reduced, true);
}

/* x summed over the axes where `like` (aligned at the last axis) has size 1 or none. */
PL_KERNEL(sum_to)
{
    const pl_tensor *x = args->in_t[0], *like = args->in_t[1];
    bool reduced[PL_MAX_RANK];
    int offset = x->rank - like->rank;
    for (int a = 0; a < x->rank; a++)
        reduced[a] = a < offset || (like->dims[a - offset] == 1 && x->dims[a] != 1);
    reduce_kernel(args, reduced, false);
}

/* dx = factor * dy repeated over the axes `axes` of x that the forward reduction removed
 * (or kept as 1): a broadcasting walk over x's shape with dy's strides. */
PL_KERNEL(broadcast_like)
{
    const pl_tensor *dy_t = args->in_t[0], *x = args->out_t[0];
    bool reduced[PL_MAX_RANK];
    listed_axes(&args->op->attrs, x->rank, reduced);
    /* dy with x's rank: the reduced axes as 1, the others as in x. */
    pl_tensor dy_full = *dy_t;
    dy_full.rank = x->rank;
    for (int a = 0; a < x->rank; a++)
        dy_full.dims[a] = reduced[a] ? 1 : x->dims[a];
    const pl_tensor *ops[] = {&dy_full};
    walk w;
    walk_init(&w, x, ops, 1);
    const float *dy = in_f32(args, 0);
    float *dx = out_f32(args, 0);
    const float factor = (float)args->op->attrs.factor;
    int64_t begin, end;
    my_share(args, out_elements(args), &begin, &end);
    if (begin >= end)
        return;
    walk_pos p;
    walk_seek(&w, begin, &p);
    int64_t stride = w.stride[0][w.rank - 1];
    for (int64_t i = begin; i < end;) {
        int64_t len = walk_run(&w, &p, end - i);
        const float *src = dy + p.off[0];
        float *dst = dx + i;
        if (stride == 0) {
            const float v = factor * src[0];
            for (int64_t j = 0; j < len; j++)
                dst[j] = v;
        } else {
            for (int64_t j = 0; j < len; j++)
                dst[j] = factor * src[j];
        }
        i += len;
        if (i < end)
            walk_advance(&w, &p, len);
    }
}
