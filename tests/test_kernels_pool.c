/* Pooling kernels against double-precision references over default and explicit strides,
 * padding (where max pooling must never pick the padding), uneven and overlapping
 * windows, ceil_mode and count_include_pad, adaptive windows; at 1, 3 and 7 threads with
 * bitwise equal results; every gradient against numerical differentiation of its forward
 * op; and output sizes and values against PyTorch's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "rng.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns max_pool_fns = {pl_kernel_max_pool, NULL, NULL};
static const pl_kernel_fns avg_pool_fns = {pl_kernel_avg_pool, NULL, NULL};
static const pl_kernel_fns global_avg_pool_fns = {pl_kernel_global_avg_pool, NULL, NULL};
static const pl_kernel_fns max_pool_grad_fns = {pl_kernel_max_pool_grad, NULL, NULL};
static const pl_kernel_fns avg_pool_grad_fns = {pl_kernel_avg_pool_grad, NULL, NULL};
static const pl_kernel_fns global_avg_pool_grad_fns = {pl_kernel_global_avg_pool_grad, NULL,
                                                       NULL};
static const pl_kernel_fns adaptive_fns = {pl_kernel_adaptive_avg_pool, NULL, NULL};
static const pl_kernel_fns adaptive_grad_fns = {pl_kernel_adaptive_avg_pool_grad, NULL, NULL};

typedef struct pool_case {
    const char *x;
    int64_t kernel[2], stride[2], padding[2];
    bool stride_given;
    int64_t out[2];         /* PyTorch's output size (F.max_pool2d) */
    bool ceil_mode, include_pad;
} pool_case;

static const pool_case cases[] = {
    /* stride defaults to the kernel */
    {"2,3,4,6", {2, 2}, {0, 0}, {0, 0}, false, {2, 3}, false, false},
    /* overlapping, padded */
    {"2,2,5,5", {3, 3}, {1, 1}, {1, 1}, true, {5, 5}, false, false},
    /* uneven */
    {"1,3,7,6", {3, 2}, {2, 1}, {1, 0}, true, {4, 5}, false, false},
    /* padding on one side only */
    {"2,2,6,7", {3, 3}, {2, 2}, {1, 1}, true, {3, 4}, false, false},
    /* gaps between windows */
    {"1,2,7,8", {2, 2}, {3, 3}, {0, 0}, true, {2, 3}, false, false},
    /* one window */
    {"2,2,3,3", {3, 3}, {0, 0}, {0, 0}, false, {1, 1}, false, false},
    /* padding = half the kernel */
    {"1,1,5,4", {4, 3}, {1, 1}, {2, 1}, true, {6, 4}, false, false},
    /* wider than the cached columns */
    {"1,2,3,20", {2, 18}, {1, 1}, {1, 9}, true, {4, 21}, false, false},
    /* ceil_mode: a last window that runs past the padded input */
    {"2,2,6,7", {3, 3}, {2, 2}, {1, 1}, true, {4, 4}, true, true},
    {"1,2,7,8", {2, 2}, {3, 3}, {0, 0}, true, {3, 3}, true, false},
    {"1,2,7,7", {2, 2}, {0, 0}, {0, 0}, false, {4, 4}, true, true},
    {"1,2,6,6", {3, 3}, {2, 2}, {1, 1}, true, {4, 4}, true, true},
    {"1,1,6,7", {3, 2}, {2, 2}, {1, 1}, true, {4, 4}, true, false},
    {"1,2,4,9", {2, 4}, {3, 2}, {1, 2}, true, {2, 6}, true, true},
    /* ceil_mode without a partial window: the one that would start past the input and its
     * left padding is dropped */
    {"2,1,5,5", {3, 3}, {3, 3}, {1, 1}, true, {2, 2}, true, true},
    {"2,2,5,5", {3, 3}, {1, 1}, {1, 1}, true, {5, 5}, false, true}, /* padding counted */
};
#define N_CASES (sizeof cases / sizeof cases[0])

static pl_attrs case_attrs(const pool_case *c)
{
    pl_attrs at = pl_kc_defaults();
    at.given = PL_ATTR_BIT(PL_ATTR_KERNEL) | PL_ATTR_BIT(PL_ATTR_PADDING);
    for (int a = 0; a < 2; a++) {
        at.kernel[a] = c->kernel[a];
        at.padding[a] = c->padding[a];
        if (c->stride_given)
            at.stride[a] = c->stride[a];
    }
    if (c->stride_given)
        at.given |= PL_ATTR_BIT(PL_ATTR_STRIDE);
    at.ceil_mode = c->ceil_mode;
    at.count_include_pad = c->include_pad;
    return at;
}

/* Distinct values in [-1, 1), at least 1/n apart, in shuffled order: a numerical
 * derivative never moves a maximum to another cell. */
static float *distinct_values(const pl_tensor *t, uint64_t seed)
{
    int64_t n = pl_tensor_elements(t);
    float *v = pl_kc_floats(n);
    for (int64_t i = 0; i < n; i++)
        v[i] = -1.0f + 2.0f * (float)i / (float)n;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(pl_rng_u64(seed, (uint64_t)i) % (uint64_t)(i + 1));
        float swap = v[i];
        v[i] = v[j];
        v[j] = swap;
    }
    return v;
}

/* The reference: y of max (first maximum) and average pooling, and dx for a given dy. */
typedef struct pool_reference {
    double *max_y, *avg_y, *max_dx, *avg_dx;
} pool_reference;

static pool_reference reference(const pool_case *c, const pl_tensor *x_t, const float *x,
                                const pl_tensor *y_t, const float *dy)
{
    int64_t planes = x_t->dims[0] * x_t->dims[1], h = x_t->dims[2], w = x_t->dims[3];
    int64_t oh = y_t->dims[2], ow = y_t->dims[3];
    int64_t sh = c->stride_given ? c->stride[0] : c->kernel[0];
    int64_t sw = c->stride_given ? c->stride[1] : c->kernel[1];
    pool_reference r = {
        calloc((size_t)(planes * oh * ow), sizeof(double)),
        calloc((size_t)(planes * oh * ow), sizeof(double)),
        calloc((size_t)(planes * h * w), sizeof(double)),
        calloc((size_t)(planes * h * w), sizeof(double)),
    };
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t yi = (p * oh + oy) * ow + ox, best = -1, count = 0;
                double sum = 0;
                for (int64_t ki = 0; ki < c->kernel[0]; ki++)
                    for (int64_t kj = 0; kj < c->kernel[1]; kj++) {
                        int64_t iy = oy * sh - c->padding[0] + ki;
                        int64_t ix = ox * sw - c->padding[1] + kj;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                            continue;
                        int64_t xi = (p * h + iy) * w + ix;
                        if (best < 0 || x[xi] > x[best])
                            best = xi;
                        sum += x[xi];
                        count++;
                    }
                /* PyTorch's divisor with count_include_pad: the window cut at the padded
                 * input's end, padding included */
                int64_t y0 = oy * sh - c->padding[0], x0 = ox * sw - c->padding[1];
                int64_t y1 = y0 + c->kernel[0], x1 = x0 + c->kernel[1];
                y1 = y1 < h + c->padding[0] ? y1 : h + c->padding[0];
                x1 = x1 < w + c->padding[1] ? x1 : w + c->padding[1];
                if (c->include_pad)
                    count = (y1 - y0) * (x1 - x0);
                r.max_y[yi] = x[best];
                r.avg_y[yi] = sum / (double)count;
                r.max_dx[best] += dy[yi];
                for (int64_t ki = 0; ki < c->kernel[0]; ki++)
                    for (int64_t kj = 0; kj < c->kernel[1]; kj++) {
                        int64_t iy = oy * sh - c->padding[0] + ki;
                        int64_t ix = ox * sw - c->padding[1] + kj;
                        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                            r.avg_dx[(p * h + iy) * w + ix] += dy[yi] / (double)count;
                    }
            }
    return r;
}

static void free_reference(pool_reference *r)
{
    free(r->max_y);
    free(r->avg_y);
    free(r->max_dx);
    free(r->avg_dx);
}

static void expect_close(const char *what, const pool_case *c, double error, double limit)
{
    if (error >= limit)
        fprintf(stderr, "\n    %s on %s: relative error %g\n", what, c->x, error);
    CU_ASSERT_TRUE(error < limit);
}

/* A windowed pooling op, its gradient, and which reference it answers to. */
typedef struct windowed_op {
    pl_op_kind kind;
    const pl_kernel_fns *fns;
    pl_op_kind grad_kind;
    const pl_kernel_fns *grad_fns;
    bool is_max;
} windowed_op;

/* The op and its gradient at every thread count against the reference r, and the
 * gradient against numerical differentiation; frees x, dy and r. */
static void check_against(const windowed_op *op, const pool_case *c, const pl_attrs *at,
                          const pl_tensor *x_t, float *x, const pl_tensor *y_t, float *dy,
                          pool_reference *r)
{
    const char *name = pl_op_info_of(op->kind)->name;
    const char *grad_name = pl_op_info_of(op->grad_kind)->name;
    int64_t ny = pl_tensor_elements(y_t), nx = pl_tensor_elements(x_t);
    void *in[1] = {x};
    float *y, *dx;
    pl_kc_run_all_threads(op->fns, op->kind, at, 1, x_t, in, 1, y_t, &y, name);
    expect_close(name, c,
                 pl_kc_max_rel_error_double(y, op->is_max ? r->max_y : r->avg_y, ny, 1e-2),
                 1e-4);

    pl_tensor g_in[2] = {*y_t, *x_t};
    void *g[2] = {dy, x};
    pl_kc_run_all_threads(op->grad_fns, op->grad_kind, at, 2, g_in, g, 1, x_t, &dx, grad_name);
    expect_close(grad_name, c,
                 pl_kc_max_rel_error_double(dx, op->is_max ? r->max_dx : r->avg_dx, nx, 1e-2),
                 1e-4);

    float *numeric = pl_kc_floats(nx);
    pl_kc_numeric_grad(op->fns, op->kind, at, 1, x_t, in, 1, y_t, 0, dy, 0, 1e-3f, numeric);
    expect_close("numeric gradient", c, pl_kc_max_rel_error(dx, numeric, nx, 1e-2), 2e-2);

    free(numeric);
    free(dx);
    free(y);
    free_reference(r);
    free(x);
    free(dy);
}

/* Forward and gradient of one windowed pooling op for every case. */
static void check_windowed(const windowed_op *op)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const pool_case *c = &cases[i];
        pl_attrs at = case_attrs(c);
        pl_tensor x_t = pl_kc_tensor(c->x, PL_F32, true), y_t;
        CU_ASSERT_FATAL(pl_kc_infer(op->kind, &at, 1, &x_t, 1, &y_t));
        if (y_t.dims[2] != c->out[0] || y_t.dims[3] != c->out[1])
            fprintf(stderr, "\n    %s on %s: output %lldx%lld, PyTorch's %lldx%lld\n",
                    pl_op_info_of(op->kind)->name, c->x, (long long)y_t.dims[2],
                    (long long)y_t.dims[3], (long long)c->out[0], (long long)c->out[1]);
        CU_ASSERT_FATAL(y_t.dims[2] == c->out[0] && y_t.dims[3] == c->out[1]);
        float *x = distinct_values(&x_t, 40 + i), *dy = pl_kc_random(&y_t, 50 + i, -1, 1);
        pool_reference r = reference(c, &x_t, x, &y_t, dy);
        check_against(op, c, &at, &x_t, x, &y_t, dy, &r);
    }
}

static void test_max_pool(void)
{
    const windowed_op max_pool = {PL_OP_MAX_POOL, &max_pool_fns, PL_OP_MAX_POOL_GRAD,
                                  &max_pool_grad_fns, true};
    check_windowed(&max_pool);
}

static void test_avg_pool(void)
{
    const windowed_op avg_pool = {PL_OP_AVG_POOL, &avg_pool_fns, PL_OP_AVG_POOL_GRAD,
                                  &avg_pool_grad_fns, false};
    check_windowed(&avg_pool);
}

/* Negative inputs with padding: a zero from the padding must never win; and of equal
 * maxima the first (row-major) takes the gradient. */
static void test_max_pool_padding_and_ties(void)
{
    pool_case c = {"1,1,2,3", {3, 3}, {1, 1}, {1, 1}, true, {2, 3}, false, false};
    pl_attrs at = case_attrs(&c);
    pl_tensor x_t = pl_kc_tensor(c.x, PL_F32, true), y_t;
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_MAX_POOL, &at, 1, &x_t, 1, &y_t));
    float x[6] = {-5, -2, -2, -3, -4, -2}, y[6], dx[6];
    float dy[6] = {1, 2, 4, 8, 16, 32};
    void *in[1] = {x}, *out[1] = {y};
    pl_kc_run(&max_pool_fns, PL_OP_MAX_POOL, &at, 1, &x_t, in, 1, &y_t, out, 2, NULL);
    const float want_y[6] = {-2, -2, -2, -2, -2, -2};
    CU_ASSERT_EQUAL(memcmp(y, want_y, sizeof y), 0);
    /* every window holds x[1] = -2 and meets it before the other -2s: it takes all */
    pl_tensor g_in[2] = {y_t, x_t};
    void *g[2] = {dy, x}, *g_out[1] = {dx};
    pl_kc_run(&max_pool_grad_fns, PL_OP_MAX_POOL_GRAD, &at, 2, g_in, g, 1, &x_t, g_out, 3, NULL);
    const float want_dx[6] = {0, 63, 0, 0, 0, 0};
    CU_ASSERT_EQUAL(memcmp(dx, want_dx, sizeof dx), 0);
}

/* F.avg_pool2d of 0..24 in a 5x5 map, kernel 3, stride 3, padding 1, ceil_mode: the last
 * window starts in the input's last row and runs past the padding, which counts with
 * count_include_pad (window 2x2 of padded cells) but is never counted beyond it. */
static void test_avg_pool_pytorch_values(void)
{
    pool_case c = {"1,1,5,5", {3, 3}, {3, 3}, {1, 1}, true, {2, 2}, true, false};
    pl_tensor x_t = pl_kc_tensor(c.x, PL_F32, true), y_t;
    float x[25];
    for (int i = 0; i < 25; i++)
        x[i] = (float)i;
    static const double want[2][4] = {{3.0, 5.5, 15.5, 18.0},
                                      {12.0 / 9, 33.0 / 9, 93.0 / 9, 72.0 / 4}};
    for (int include = 0; include < 2; include++) {
        c.include_pad = include;
        pl_attrs at = case_attrs(&c);
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_AVG_POOL, &at, 1, &x_t, 1, &y_t));
        CU_ASSERT_FATAL(pl_tensor_elements(&y_t) == 4);
        void *in[1] = {x};
        float *y = pl_kc_run_fresh(&avg_pool_fns, PL_OP_AVG_POOL, &at, 1, &x_t, in, &y_t, 2,
                                   NULL);
        expect_close("avg_pool: PyTorch's values", &c,
                     pl_kc_max_rel_error_double(y, want[include], 4, 1e-3), 1e-6);
        free(y);
    }
}

/* A pooling op without windows of its own attributes (global, adaptive) and its gradient:
 * at every thread count against the references want_y and want_dx (of dy), and the
 * gradient against numerical differentiation. */
typedef struct plain_pool {
    pl_op_kind kind;
    const pl_kernel_fns *fns;
    pl_op_kind grad_kind;
    const pl_kernel_fns *grad_fns;
} plain_pool;

static void check_plain_pool(const plain_pool *op, const pl_attrs *at, const pl_tensor *x_t,
                             float *x, const pl_tensor *y_t, float *dy, const double *want_y,
                             const double *want_dx, const char *shape)
{
    const char *name = pl_op_info_of(op->kind)->name;
    const char *grad_name = pl_op_info_of(op->grad_kind)->name;
    pool_case c = {shape, {0, 0}, {0, 0}, {0, 0}, false, {0, 0}, false, false};
    int64_t ny = pl_tensor_elements(y_t), nx = pl_tensor_elements(x_t);
    void *in[1] = {x};
    float *y, *dx;
    pl_kc_run_all_threads(op->fns, op->kind, at, 1, x_t, in, 1, y_t, &y, name);
    expect_close(name, &c, pl_kc_max_rel_error_double(y, want_y, ny, 1e-3), 1e-5);
    pl_tensor g_in[2] = {*y_t, *x_t};
    void *g[2] = {dy, x};
    pl_kc_run_all_threads(op->grad_fns, op->grad_kind, at, 2, g_in, g, 1, x_t, &dx, grad_name);
    expect_close(grad_name, &c, pl_kc_max_rel_error_double(dx, want_dx, nx, 1e-3), 1e-5);
    float *numeric = pl_kc_floats(nx);
    pl_kc_numeric_grad(op->fns, op->kind, at, 1, x_t, in, 1, y_t, 0, dy, 0, 1e-2f, numeric);
    expect_close("numeric gradient", &c, pl_kc_max_rel_error(dx, numeric, nx, 1e-2), 2e-2);
    free(numeric);
    free(dx);
    free(y);
}

static void test_global_avg_pool(void)
{
    const char *shapes[] = {"2,3,4,5", "1,1,1,1", "3,2,7,3"};
    for (int s = 0; s < 3; s++) {
        pl_attrs at = pl_kc_defaults();
        pl_tensor x_t = pl_kc_tensor(shapes[s], PL_F32, true), y_t;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_GLOBAL_AVG_POOL, &at, 1, &x_t, 1, &y_t));
        float *x = pl_kc_random(&x_t, 60 + (uint64_t)s, -1, 1);
        float *dy = pl_kc_random(&y_t, 70 + (uint64_t)s, -1, 1);
        int64_t planes = y_t.dims[0] * y_t.dims[1], size = x_t.dims[2] * x_t.dims[3];
        int64_t nx = planes * size;
        double *want_y = calloc((size_t)planes, sizeof(double));
        double *want_dx = calloc((size_t)nx, sizeof(double));
        for (int64_t p = 0; p < planes; p++)
            for (int64_t i = 0; i < size; i++) {
                want_y[p] += x[p * size + i] / (double)size;
                want_dx[p * size + i] = dy[p] / (double)size;
            }
        const plain_pool global = {PL_OP_GLOBAL_AVG_POOL, &global_avg_pool_fns,
                                   PL_OP_GLOBAL_AVG_POOL_GRAD, &global_avg_pool_grad_fns};
        check_plain_pool(&global, &at, &x_t, x, &y_t, dy, want_y, want_dx, shapes[s]);
        free(want_y);
        free(want_dx);
        free(x);
        free(dy);
    }
}

/* ---- adaptive_avg_pool ---------------------------------------------------------------- */

/* The sizes of t's spatial axes as three, leading axes of size 1. */
static void volume_of(const pl_tensor *t, int64_t size[3])
{
    for (int a = 0; a < 3; a++) {
        int i = a - (3 - (t->rank - 2));
        size[a] = i < 0 ? 1 : t->dims[2 + i];
    }
}

/* PyTorch's windows along one axis, each cell counted as a real (floor and ceil of
 * i*in/out). */
static void adaptive_axis(int64_t i, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    *lo = (int64_t)floor((double)i * in / out);
    *hi = (int64_t)ceil((double)(i + 1) * in / out);
}

/* adaptive_avg_pool of 1 to 3 spatial axes: y and dx (of dy). */
static void adaptive_reference(const pl_tensor *x_t, const float *x, const pl_tensor *y_t,
                               const float *dy, double *y, double *dx)
{
    int64_t in[3], out[3];
    volume_of(x_t, in);
    volume_of(y_t, out);
    int64_t planes = x_t->dims[0] * x_t->dims[1], in_size = in[0] * in[1] * in[2];
    int64_t out_size = out[0] * out[1] * out[2];
    memset(dx, 0, (size_t)(planes * in_size) * sizeof *dx);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < out_size; o++) {
            int64_t at[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
            int64_t lo[3], hi[3];
            for (int a = 0; a < 3; a++)
                adaptive_axis(at[a], in[a], out[a], &lo[a], &hi[a]);
            double sum = 0, cells = (double)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
            for (int pass = 0; pass < 2; pass++)
                for (int64_t i = lo[0]; i < hi[0]; i++)
                    for (int64_t j = lo[1]; j < hi[1]; j++)
                        for (int64_t k = lo[2]; k < hi[2]; k++) {
                            int64_t xi = p * in_size + (i * in[1] + j) * in[2] + k;
                            if (pass == 0)
                                sum += x[xi];
                            else
                                dx[xi] += dy[p * out_size + o] / cells;
                        }
            y[p * out_size + o] = sum / cells;
        }
}

static pl_attrs adaptive_attrs_nd(const int64_t *out, int spatial)
{
    pl_attrs at = pl_kc_defaults();
    at.given = PL_ATTR_BIT(PL_ATTR_OUTPUT_SIZE);
    memcpy(at.output_size, out, (size_t)spatial * sizeof *out);
    return at;
}

static void test_adaptive_avg_pool(void)
{
    static const pl_op_kind kinds[] = {PL_OP_ADAPTIVE_AVG_POOL1D, PL_OP_ADAPTIVE_AVG_POOL,
                                       PL_OP_ADAPTIVE_AVG_POOL3D};
    static const struct {
        const char *x;
        int64_t out[3];
    } shapes[] = {
        {"2,3,8,8", {4, 4}},  /* even windows */
        {"1,2,7,5", {3, 2}},  /* uneven: overlapping windows */
        {"2,2,1,1", {7, 7}},  /* vgg's 7x7 from a 1x1 map */
        {"1,3,3,2", {5, 4}},  /* larger than the input: cells repeat */
        {"1,1,6,9", {6, 1}},  /* identity along one axis, a full row along the other */
        {"2,3,10", {5}},      /* one axis: even, uneven, one window */
        {"1,2,7", {3}},
        {"2,2,9", {1}},
        {"1,2,4,6,6", {2, 3, 3}}, /* three axes: even, one window, uneven */
        {"2,1,3,4,5", {1, 1, 1}},
        {"1,2,3,5,4", {2, 2, 3}},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_tensor x_t = pl_kc_tensor(shapes[s].x, PL_F32, true), y_t;
        int spatial = x_t.rank - 2;
        pl_attrs at = adaptive_attrs_nd(shapes[s].out, spatial);
        pl_op_kind kind = kinds[spatial - 1];
        CU_ASSERT_FATAL(pl_kc_infer(kind, &at, 1, &x_t, 1, &y_t));
        for (int a = 0; a < spatial; a++)
            CU_ASSERT(y_t.dims[2 + a] == shapes[s].out[a]);
        int64_t ny = pl_tensor_elements(&y_t), nx = pl_tensor_elements(&x_t);
        float *x = pl_kc_random(&x_t, 80 + s, -1, 1), *dy = pl_kc_random(&y_t, 90 + s, -1, 1);
        double *want_y = calloc((size_t)ny, sizeof *want_y);
        double *want_dx = calloc((size_t)nx, sizeof *want_dx);
        adaptive_reference(&x_t, x, &y_t, dy, want_y, want_dx);
        const plain_pool adaptive = {kind, &adaptive_fns, PL_OP_ADAPTIVE_AVG_POOL_GRAD,
                                     &adaptive_grad_fns};
        check_plain_pool(&adaptive, &at, &x_t, x, &y_t, dy, want_y, want_dx, shapes[s].x);
        free(want_y);
        free(want_dx);
        free(x);
        free(dy);
    }
}

/* F.adaptive_avg_pool2d of 0..19 in a 4x5 map to 3x2, and of 0..5 in a 2x3 map to 3x4;
 * the gradients of their sums. */
static void test_adaptive_avg_pool_pytorch_values(void)
{
    static const struct {
        const char *x;
        int64_t out[2];
        double y[12], dx[20];
    } known[] = {
        {"1,1,4,5", {3, 2}, {3.5, 5.5, 8.5, 10.5, 13.5, 15.5},
         {1. / 6, 1. / 6, 1. / 3, 1. / 6, 1. / 6, 1. / 3, 1. / 3, 2. / 3, 1. / 3, 1. / 3,
          1. / 3, 1. / 3, 2. / 3, 1. / 3, 1. / 3, 1. / 6, 1. / 6, 1. / 3, 1. / 6, 1. / 6}},
        {"1,1,2,3", {3, 4}, {0, 0.5, 1.5, 2, 1.5, 2, 3, 3.5, 3, 3.5, 4.5, 5},
         {2.25, 1.5, 2.25, 2.25, 1.5, 2.25}},
    };
    for (size_t k = 0; k < 2; k++) {
        pl_attrs at = adaptive_attrs_nd(known[k].out, 2);
        pl_tensor x_t = pl_kc_tensor(known[k].x, PL_F32, true), y_t;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_ADAPTIVE_AVG_POOL, &at, 1, &x_t, 1, &y_t));
        int64_t ny = pl_tensor_elements(&y_t), nx = pl_tensor_elements(&x_t);
        float x[20], ones[12];
        for (int i = 0; i < 20; i++)
            x[i] = (float)i;
        for (int i = 0; i < 12; i++)
            ones[i] = 1;
        void *in[1] = {x};
        float *y = pl_kc_run_fresh(&adaptive_fns, PL_OP_ADAPTIVE_AVG_POOL, &at, 1, &x_t, in,
                                   &y_t, 3, NULL);
        pl_tensor g_in[2] = {y_t, x_t}, dx_t;
        void *g[2] = {ones, x};
        float *dx = pl_kc_run_fresh(&adaptive_grad_fns, PL_OP_ADAPTIVE_AVG_POOL_GRAD, &at, 2,
                                    g_in, g, &dx_t, 3, NULL);
        pool_case c = {known[k].x, {0, 0}, {0, 0}, {0, 0}, false, {0, 0}, false, false};
        expect_close("adaptive_avg_pool: PyTorch's values", &c,
                     pl_kc_max_rel_error_double(y, known[k].y, ny, 1e-3), 1e-6);
        expect_close("adaptive_avg_pool_grad: PyTorch's values", &c,
                     pl_kc_max_rel_error_double(dx, known[k].dx, nx, 1e-3), 1e-6);
        free(y);
        free(dx);
    }
}

/* ---- one and three spatial axes ------------------------------------------------------ */

/* A pooling case of 1 or 3 spatial axes (`spatial` values of each array; stride 0: the
 * kernel), with PyTorch's output size (F.max_pool1d, F.max_pool3d). */
typedef struct nd_case {
    int spatial;
    const char *x;
    int64_t kernel[3], stride[3], padding[3], out[3];
    bool ceil_mode, include_pad;
} nd_case;

static const nd_case nd_cases[] = {
    {1, "2,3,9", {3}, {2}, {1}, {5}, false, false},
    {1, "1,2,10", {4}, {3}, {2}, {4}, true, true},
    {1, "2,2,7", {2}, {0}, {0}, {4}, true, false},
    {1, "1,3,12", {5}, {1}, {2}, {12}, false, true},
    {3, "1,2,4,5,6", {2, 3, 3}, {1, 2, 2}, {1, 1, 1}, {5, 3, 3}, false, false},
    {3, "2,1,5,4,6", {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {3, 3, 4}, true, true},
    {3, "1,2,4,4,4", {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {2, 2, 2}, false, false},
    {3, "1,2,3,7,7", {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {3, 4, 4}, true, false}, /* S3D's */
    {3, "1,1,5,5,5", {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {5, 5, 5}, false, true},
};

static pl_attrs nd_attrs(const nd_case *c)
{
    pl_attrs at = pl_kc_defaults();
    at.given = PL_ATTR_BIT(PL_ATTR_KERNEL) | PL_ATTR_BIT(PL_ATTR_PADDING);
    for (int a = 0; a < c->spatial; a++) {
        at.kernel[a] = c->kernel[a];
        at.padding[a] = c->padding[a];
        if (c->stride[0])
            at.stride[a] = c->stride[a];
    }
    if (c->stride[0])
        at.given |= PL_ATTR_BIT(PL_ATTR_STRIDE);
    at.ceil_mode = c->ceil_mode;
    at.count_include_pad = c->include_pad;
    return at;
}

/* One axis of the reference's windows, in three-axis form (leading axes of size 1). */
typedef struct nd_axis {
    int64_t size, out, kernel, stride, pad;
} nd_axis;

static void nd_axes(const nd_case *c, const pl_tensor *x_t, const pl_tensor *y_t,
                    nd_axis axes[3])
{
    int lead = 3 - c->spatial;
    for (int a = 0; a < 3; a++) {
        int i = a - lead;
        axes[a] = i < 0 ? (nd_axis){1, 1, 1, 1, 0}
                        : (nd_axis){x_t->dims[2 + i], y_t->dims[2 + i], c->kernel[i],
                                    c->stride[0] ? c->stride[i] : c->kernel[i], c->padding[i]};
    }
}

/* The reference of one output: its window's cells inside the input, in row-major order,
 * into cells[] (their count returned), and avg_pool's divisor. */
static int64_t nd_window(const nd_axis axes[3], const int64_t o[3], bool include_pad,
                         int64_t *cells, int64_t *divisor)
{
    int64_t lo[3], n = 0;
    *divisor = 1;
    for (int a = 0; a < 3; a++) {
        lo[a] = o[a] * axes[a].stride - axes[a].pad;
        int64_t hi = lo[a] + axes[a].kernel, padded_hi = axes[a].size + axes[a].pad;
        int64_t inside = (hi < axes[a].size ? hi : axes[a].size) - (lo[a] > 0 ? lo[a] : 0);
        *divisor *= include_pad ? (hi < padded_hi ? hi : padded_hi) - lo[a] : inside;
    }
    for (int64_t i = lo[0]; i < lo[0] + axes[0].kernel; i++)
        for (int64_t j = lo[1]; j < lo[1] + axes[1].kernel; j++)
            for (int64_t k = lo[2]; k < lo[2] + axes[2].kernel; k++)
                if (i >= 0 && i < axes[0].size && j >= 0 && j < axes[1].size && k >= 0 &&
                    k < axes[2].size)
                    cells[n++] = (i * axes[1].size + j) * axes[2].size + k;
    return n;
}

static pool_reference nd_reference(const nd_case *c, const pl_tensor *x_t, const float *x,
                                   const pl_tensor *y_t, const float *dy)
{
    nd_axis axes[3];
    nd_axes(c, x_t, y_t, axes);
    int64_t planes = x_t->dims[0] * x_t->dims[1];
    int64_t in_size = axes[0].size * axes[1].size * axes[2].size;
    int64_t out_size = axes[0].out * axes[1].out * axes[2].out;
    int64_t nx = planes * in_size, ny = planes * out_size;
    pool_reference r = {calloc((size_t)ny, sizeof(double)), calloc((size_t)ny, sizeof(double)),
                        calloc((size_t)nx, sizeof(double)), calloc((size_t)nx, sizeof(double))};
    int64_t *cells = malloc((size_t)(axes[0].kernel * axes[1].kernel * axes[2].kernel) *
                            sizeof *cells);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < out_size; o++) {
            int64_t at[3] = {o / (axes[1].out * axes[2].out), o / axes[2].out % axes[1].out,
                             o % axes[2].out};
            int64_t divisor, n = nd_window(axes, at, c->include_pad, cells, &divisor);
            int64_t yi = p * out_size + o, best = p * in_size + cells[0];
            double sum = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t xi = p * in_size + cells[i];
                best = x[xi] > x[best] ? xi : best;
                sum += x[xi];
            }
            r.max_y[yi] = x[best];
            r.avg_y[yi] = sum / (double)divisor;
            r.max_dx[best] += dy[yi];
            for (int64_t i = 0; i < n; i++)
                r.avg_dx[p * in_size + cells[i]] += dy[yi] / (double)divisor;
        }
    free(cells);
    return r;
}

/* max_pool1d/3d or avg_pool1d/3d on every case of that many axes. */
static void check_nd(const windowed_op *op, int spatial)
{
    for (size_t i = 0; i < sizeof nd_cases / sizeof *nd_cases; i++) {
        const nd_case *c = &nd_cases[i];
        if (c->spatial != spatial)
            continue;
        pl_attrs at = nd_attrs(c);
        pl_tensor x_t = pl_kc_tensor(c->x, PL_F32, true), y_t;
        CU_ASSERT_FATAL(pl_kc_infer(op->kind, &at, 1, &x_t, 1, &y_t));
        CU_ASSERT_FATAL(y_t.rank == 2 + spatial);
        for (int a = 0; a < spatial; a++)
            CU_ASSERT_FATAL(y_t.dims[2 + a] == c->out[a]);
        float *x = distinct_values(&x_t, 140 + i), *dy = pl_kc_random(&y_t, 150 + i, -1, 1);
        pool_reference r = nd_reference(c, &x_t, x, &y_t, dy);
        pool_case named = {c->x, {0, 0}, {0, 0}, {0, 0}, false, {0, 0}, false, false};
        check_against(op, &named, &at, &x_t, x, &y_t, dy, &r);
    }
}

static void test_pool_1d_3d(void)
{
    static const windowed_op ops[] = {
        {PL_OP_MAX_POOL1D, &max_pool_fns, PL_OP_MAX_POOL_GRAD, &max_pool_grad_fns, true},
        {PL_OP_AVG_POOL1D, &avg_pool_fns, PL_OP_AVG_POOL_GRAD, &avg_pool_grad_fns, false},
        {PL_OP_MAX_POOL3D, &max_pool_fns, PL_OP_MAX_POOL_GRAD, &max_pool_grad_fns, true},
        {PL_OP_AVG_POOL3D, &avg_pool_fns, PL_OP_AVG_POOL_GRAD, &avg_pool_grad_fns, false},
    };
    for (int i = 0; i < 4; i++)
        check_nd(&ops[i], i < 2 ? 1 : 3);
}

/* F.avg_pool3d of 0..26 in a 3x3x3 volume, kernel 3, stride 2, padding 1, ceil_mode:
 * eight windows, without and with count_include_pad (27 cells each). */
static void test_avg_pool3d_pytorch_values(void)
{
    nd_case c = {3, "1,1,3,3,3", {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {2, 2, 2}, true, false};
    static const double sums[8] = {52, 60, 76, 84, 124, 132, 148, 156};
    pl_tensor x_t = pl_kc_tensor(c.x, PL_F32, true), y_t;
    float x[27];
    for (int i = 0; i < 27; i++)
        x[i] = (float)i;
    for (int include = 0; include < 2; include++) {
        c.include_pad = include;
        pl_attrs at = nd_attrs(&c);
        double want[8];
        for (int i = 0; i < 8; i++)
            want[i] = sums[i] / (include ? 27.0 : 8.0);
        void *in[1] = {x};
        float *y = pl_kc_run_fresh(&avg_pool_fns, PL_OP_AVG_POOL3D, &at, 1, &x_t, in, &y_t, 2,
                                   NULL);
        CU_ASSERT_FATAL(pl_tensor_elements(&y_t) == 8);
        pool_case named = {c.x, {0, 0}, {0, 0}, {0, 0}, false, {0, 0}, false, false};
        expect_close("avg_pool3d: PyTorch's values", &named,
                     pl_kc_max_rel_error_double(y, want, 8, 1e-3), 1e-6);
        free(y);
    }
}

void pl_register_kernels_pool_tests(void)
{
    static const pl_test_case tests[] = {
        {"max_pool and max_pool_grad", test_max_pool},
        {"avg_pool and avg_pool_grad", test_avg_pool},
        {"max_pool padding and ties", test_max_pool_padding_and_ties},
        {"avg_pool ceil_mode and count_include_pad: PyTorch's values",
         test_avg_pool_pytorch_values},
        {"global_avg_pool and its gradient", test_global_avg_pool},
        {"adaptive_avg_pool of 1 to 3 axes and its gradient", test_adaptive_avg_pool},
        {"adaptive_avg_pool: PyTorch's values", test_adaptive_avg_pool_pytorch_values},
        {"max_pool and avg_pool of one and three spatial axes", test_pool_1d_3d},
        {"avg_pool3d ceil_mode and count_include_pad: PyTorch's values",
         test_avg_pool3d_pytorch_values},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-pool", tests);
}
