/* Kernel tests: layer_norm and batch_norm (training, evaluation, running averages) against
 * double-precision references at 1, 3 and 7 threads (bitwise equal), and their gradient
 * kernels' three outputs against central differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns layer_norm_fns = {pl_kernel_layer_norm, NULL, NULL};
static const pl_kernel_fns layer_norm_grad_fns = {
    pl_kernel_layer_norm_grad, pl_kernel_layer_norm_grad_finish,
    pl_kernel_layer_norm_grad_workspace};
static const pl_kernel_fns batch_norm_fns = {pl_kernel_batch_norm, NULL, NULL};
static const pl_kernel_fns batch_norm_grad_fns = {pl_kernel_batch_norm_grad, NULL, NULL};

static const pl_step_info training = {.step = 1, .micro_batches = 1, .training = true};
static const pl_step_info evaluation = {.step = 1, .micro_batches = 1, .training = false};

static double max_error(const float *got, const float *want, int64_t n, const char *what)
{
    double e = pl_kc_max_rel_error(got, want, n, 1e-3);
    if (!(e < 1e-4))
        fprintf(stderr, "\n    %s: error %g\n", what, e);
    return e;
}

/* x [N,C,...] -> outer N, channels C, spatial S; x [...,D] -> rows, D. */
typedef struct norm_case {
    const char *x;
    pl_tensor x_t, p_t; /* p: gamma and beta */
    float *x_data, *gamma, *beta;
    int64_t n;
} norm_case;

static void norm_setup(norm_case *c, const char *x, bool batch, uint64_t seed)
{
    c->x = x;
    c->x_t = pl_kc_tensor(x, PL_F32, true);
    char p[24];
    snprintf(p, sizeof p, "%lld",
             (long long)(batch ? c->x_t.dims[1] : c->x_t.dims[c->x_t.rank - 1]));
    c->p_t = pl_kc_tensor(p, PL_F32, false);
    c->n = pl_tensor_elements(&c->x_t);
    c->x_data = pl_kc_random(&c->x_t, seed, -2, 3);
    c->gamma = pl_kc_random(&c->p_t, seed + 1, 0.5, 1.5);
    c->beta = pl_kc_random(&c->p_t, seed + 2, -1, 1);
}

static void norm_free(norm_case *c)
{
    free(c->x_data);
    free(c->gamma);
    free(c->beta);
}

/* ---- layer_norm --------------------------------------------------------------------------- */

static void layer_norm_ref(const norm_case *c, double eps, float *y)
{
    int64_t d = c->p_t.dims[0], rows = c->n / d;
    for (int64_t r = 0; r < rows; r++) {
        const float *x = c->x_data + r * d;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < d; i++)
            mean += x[i];
        mean /= (double)d;
        for (int64_t i = 0; i < d; i++)
            var += (x[i] - mean) * (x[i] - mean);
        var /= (double)d;
        for (int64_t i = 0; i < d; i++)
            y[r * d + i] = (float)((x[i] - mean) / sqrt(var + eps) * c->gamma[i] + c->beta[i]);
    }
}

static const char *const layer_norm_shapes[] = {"3,7", "2,3,33", "4,1", "70,5", "2,40"};

typedef void layer_norm_reference(const norm_case *c, double eps, float *y);

/* layer_norm over `axis` (-1 or the channel axis 1) on each shape against `ref`, then
 * bitwise the same at every thread count. */
static void check_layer_norm(const char *const *shapes, size_t n_shapes, int64_t axis,
                             layer_norm_reference *ref, uint64_t seed)
{
    pl_attrs at = pl_kc_defaults();
    at.eps = 1e-3;
    at.axis = axis;
    for (size_t s = 0; s < n_shapes; s++) {
        norm_case c;
        norm_setup(&c, shapes[s], axis == 1, seed + 10 * s);
        pl_tensor in_t[3] = {c.x_t, c.p_t, c.p_t}, out_t;
        void *in[] = {c.x_data, c.gamma, c.beta};
        float *want = pl_kc_floats(c.n), *first = NULL;
        ref(&c, at.eps, want);
        for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
            float *y = pl_kc_run_fresh(&layer_norm_fns, PL_OP_LAYER_NORM, &at, 3, in_t, in,
                                       &out_t, pl_kc_thread_counts[t], NULL);
            if (t == 0) {
                CU_ASSERT(max_error(y, want, c.n, c.x) < 1e-4);
                first = y;
            } else {
                CU_ASSERT_EQUAL(memcmp(y, first, (size_t)c.n * sizeof *y), 0);
                free(y);
            }
        }
        free(first);
        free(want);
        norm_free(&c);
    }
}

static void test_layer_norm(void)
{
    check_layer_norm(layer_norm_shapes, sizeof layer_norm_shapes / sizeof *layer_norm_shapes,
                     -1, layer_norm_ref, 0);
}

/* The gradient kernel's outputs for (x, gamma, beta) against central differences of the
 * forward kernel, then bitwise the same at every thread count. */
static void check_norm_gradient(const pl_kernel_fns *fwd, const pl_kernel_fns *grad,
                                pl_op_kind kind, pl_op_kind grad_kind, const pl_attrs *at,
                                norm_case *c)
{
    pl_tensor in_t[3] = {c->x_t, c->p_t, c->p_t}, out_t;
    void *in[] = {c->x_data, c->gamma, c->beta};
    CU_ASSERT_FATAL(pl_kc_infer(kind, at, 3, in_t, 1, &out_t));
    float *dy = pl_kc_random(&c->x_t, 99, -1, 1);
    pl_tensor grad_in_t[3] = {c->x_t, c->x_t, c->p_t}, grad_out_t[3];
    void *grad_in[] = {dy, c->x_data, c->gamma};
    float *first[3];
    pl_kc_run_fresh_outputs(grad, grad_kind, at, 3, grad_in_t, grad_in, 3, grad_out_t, first, 1,
                            NULL);
    static const char *const names[] = {"dx", "dgamma", "dbeta"};
    for (int wrt = 0; wrt < 3; wrt++) {
        int64_t n = pl_tensor_elements(&in_t[wrt]);
        float *numeric = pl_kc_floats(n);
        pl_kc_numeric_grad(fwd, kind, at, 3, in_t, in, 1, &out_t, 0, dy, wrt, 1e-3f, numeric);
        double e = pl_kc_max_rel_error(first[wrt], numeric, n, 1e-2);
        if (!(e < 2e-2))
            fprintf(stderr, "\n    %s [%s] %s: gradient error %g\n",
                    pl_op_info_of(kind)->name, c->x, names[wrt], e);
        CU_ASSERT(e < 2e-2);
        free(numeric);
    }
    for (int t = 1; t < PL_KC_THREAD_COUNTS; t++) {
        float *got[3];
        pl_kc_run_fresh_outputs(grad, grad_kind, at, 3, grad_in_t, grad_in, 3, grad_out_t, got,
                                pl_kc_thread_counts[t], NULL);
        for (int o = 0; o < 3; o++) {
            CU_ASSERT_EQUAL(memcmp(got[o], first[o],
                                   (size_t)pl_tensor_elements(&grad_out_t[o]) * sizeof(float)),
                            0);
            free(got[o]);
        }
    }
    for (int o = 0; o < 3; o++)
        free(first[o]);
    free(dy);
}

static void check_layer_norm_gradient(const char *const *shapes, size_t n_shapes,
                                      int64_t axis, uint64_t seed)
{
    pl_attrs at = pl_kc_defaults();
    at.eps = 1e-3;
    at.axis = axis;
    for (size_t s = 0; s < n_shapes; s++) {
        norm_case c;
        norm_setup(&c, shapes[s], axis == 1, seed + s);
        check_norm_gradient(&layer_norm_fns, &layer_norm_grad_fns, PL_OP_LAYER_NORM,
                            PL_OP_LAYER_NORM_GRAD, &at, &c);
        norm_free(&c);
    }
}

static void test_layer_norm_gradient(void)
{
    check_layer_norm_gradient(layer_norm_shapes,
                              sizeof layer_norm_shapes / sizeof *layer_norm_shapes, -1, 20);
}

static void channel_view(const pl_tensor *x, int64_t *n, int64_t *c, int64_t *s)
{
    *n = x->dims[0];
    *c = x->dims[1];
    *s = 1;
    for (int a = 2; a < x->rank; a++)
        *s *= x->dims[a];
}

/* ---- layer_norm over the channel axis ------------------------------------------------------ */

/* Each (sample, position)'s C values normalised, as torchvision's LayerNorm2d does. */
static void layer_norm_channels_ref(const norm_case *c, double eps, float *y)
{
    int64_t n, ch, s;
    channel_view(&c->x_t, &n, &ch, &s);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < s; j++) {
            const float *x = c->x_data + i * ch * s + j;
            double mean = 0, var = 0;
            for (int64_t k = 0; k < ch; k++)
                mean += x[k * s];
            mean /= (double)ch;
            for (int64_t k = 0; k < ch; k++)
                var += (x[k * s] - mean) * (x[k * s] - mean);
            var /= (double)ch;
            for (int64_t k = 0; k < ch; k++)
                y[i * ch * s + k * s + j] =
                    (float)((x[k * s] - mean) / sqrt(var + eps) * c->gamma[k] + c->beta[k]);
        }
}

/* Positions per sample below, at and across the kernel's 64-position units; 3,5,1,1 has
 * one position, the row layout. */
static const char *const channel_shapes[] = {"2,3,4,5", "1,8,70", "3,5,1,1", "2,4,9,9",
                                             "2,7,130"};

static void test_layer_norm_channels(void)
{
    check_layer_norm(channel_shapes, sizeof channel_shapes / sizeof *channel_shapes, 1,
                     layer_norm_channels_ref, 30);
}

static void test_layer_norm_channels_gradient(void)
{
    check_layer_norm_gradient(channel_shapes, sizeof channel_shapes / sizeof *channel_shapes, 1,
                              40);
}

/* ---- batch_norm ----------------------------------------------------------------------------- */

/* Batch mean and biased variance per channel, in double. */
static void batch_stats_ref(const norm_case *c, double *mean, double *var)
{
    int64_t n, ch, s;
    channel_view(&c->x_t, &n, &ch, &s);
    for (int64_t k = 0; k < ch; k++) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < s; j++)
                sum += c->x_data[(i * ch + k) * s + j];
        mean[k] = sum / (double)(n * s);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < s; j++) {
                double d = c->x_data[(i * ch + k) * s + j] - mean[k];
                sq += d * d;
            }
        var[k] = sq / (double)(n * s);
    }
}

static void batch_norm_ref(const norm_case *c, const double *mean, const double *var,
                           double eps, float *y)
{
    int64_t n, ch, s;
    channel_view(&c->x_t, &n, &ch, &s);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < ch; k++)
            for (int64_t j = 0; j < s; j++) {
                int64_t at = (i * ch + k) * s + j;
                y[at] = (float)((c->x_data[at] - mean[k]) / sqrt(var[k] + eps) * c->gamma[k] +
                                c->beta[k]);
            }
}

/* Planes of one position, of a few (below SMALL_PLANE, 16: summed as one run a block), and
 * larger; a block of 64 channels and a second. */
static const char *const batch_norm_shapes[] = {"4,3", "2,3,4,5", "3,70,2", "1,2,3,3",
                                                "5,70", "2,65,3,5", "3,4,4,4"};

/* Every mode: training with and without running averages (checking their update),
 * evaluation with them (normalising by them) and without (batch statistics). */
static void test_batch_norm(void)
{
    pl_attrs at = pl_kc_defaults();
    at.eps = 1e-3;
    at.momentum = 0.8;
    for (size_t s = 0; s < sizeof batch_norm_shapes / sizeof *batch_norm_shapes; s++) {
        norm_case c;
        norm_setup(&c, batch_norm_shapes[s], true, 30 + 10 * s);
        int64_t ch = c.p_t.dims[0], count = c.n / ch;
        pl_tensor state_t = c.p_t;
        state_t.kind = PL_TENSOR_STATE;
        pl_tensor in_t[5] = {c.x_t, c.p_t, c.p_t, state_t, state_t}, out_t;
        double *mean = calloc((size_t)ch, sizeof *mean), *var = calloc((size_t)ch, sizeof *var);
        float *run_mean0 = pl_kc_random(&c.p_t, 7, -1, 1), *run_var0 = pl_kc_random(&c.p_t, 8, 0.5, 2);
        float *run_mean = pl_kc_floats(ch), *run_var = pl_kc_floats(ch), *want = pl_kc_floats(c.n);
        float *want_mean = pl_kc_floats(ch), *want_var = pl_kc_floats(ch);
        void *in[] = {c.x_data, c.gamma, c.beta, run_mean, run_var};
        for (int mode = 0; mode < 4; mode++) {
            bool with_running = mode & 1, train = !(mode & 2);
            int n_in = with_running ? 5 : 3;
            batch_stats_ref(&c, mean, var);
            for (int64_t k = 0; k < ch; k++) {
                double unbiased = count > 1 ? var[k] * count / (count - 1) : var[k];
                want_mean[k] = (float)(0.8 * run_mean0[k] + 0.2 * mean[k]);
                want_var[k] = (float)(0.8 * run_var0[k] + 0.2 * unbiased);
                if (with_running && !train) {
                    mean[k] = run_mean0[k];
                    var[k] = run_var0[k];
                }
            }
            batch_norm_ref(&c, mean, var, at.eps, want);
            float *first = NULL;
            for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
                memcpy(run_mean, run_mean0, (size_t)ch * sizeof *run_mean);
                memcpy(run_var, run_var0, (size_t)ch * sizeof *run_var);
                float *y = pl_kc_run_fresh(&batch_norm_fns, PL_OP_BATCH_NORM, &at, n_in, in_t, in,
                                           &out_t, pl_kc_thread_counts[t],
                                           train ? &training : &evaluation);
                const float *mean_now = with_running && train ? want_mean : run_mean0;
                const float *var_now = with_running && train ? want_var : run_var0;
                CU_ASSERT(max_error(run_mean, mean_now, ch, "running mean") < 1e-5);
                CU_ASSERT(max_error(run_var, var_now, ch, "running variance") < 1e-5);
                if (t == 0) {
                    CU_ASSERT(max_error(y, want, c.n, c.x) < 1e-4);
                    first = y;
                } else {
                    CU_ASSERT_EQUAL(memcmp(y, first, (size_t)c.n * sizeof *y), 0);
                    free(y);
                }
            }
            free(first);
        }
        free(mean);
        free(var);
        free(run_mean0);
        free(run_var0);
        free(run_mean);
        free(run_var);
        free(want);
        free(want_mean);
        free(want_var);
        norm_free(&c);
    }
}

static void test_batch_norm_gradient(void)
{
    pl_attrs at = pl_kc_defaults();
    at.eps = 1e-3;
    for (size_t s = 0; s < sizeof batch_norm_shapes / sizeof *batch_norm_shapes; s++) {
        norm_case c;
        norm_setup(&c, batch_norm_shapes[s], true, 40 + s);
        check_norm_gradient(&batch_norm_fns, &batch_norm_grad_fns, PL_OP_BATCH_NORM,
                            PL_OP_BATCH_NORM_GRAD, &at, &c);
        norm_free(&c);
    }
}

/* A large mean against a small spread: statistics about the mean keep their precision. */
static void test_batch_norm_offset(void)
{
    static const char *const shapes[] = {"8,2,6,6", "8,2,2,2"}; /* large and small planes */
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_attrs at = pl_kc_defaults();
        norm_case c;
        norm_setup(&c, shapes[s], true, 50);
        for (int64_t i = 0; i < c.n; i++)
            c.x_data[i] = 1000.0f + c.x_data[i] * 0.01f;
        pl_tensor in_t[3] = {c.x_t, c.p_t, c.p_t}, out_t;
        void *in[] = {c.x_data, c.gamma, c.beta};
        double mean[2], var[2];
        batch_stats_ref(&c, mean, var);
        float *want = pl_kc_floats(c.n);
        batch_norm_ref(&c, mean, var, at.eps, want);
        float *y = pl_kc_run_fresh(&batch_norm_fns, PL_OP_BATCH_NORM, &at, 3, in_t, in, &out_t,
                                   2, NULL);
        CU_ASSERT(max_error(y, want, c.n, "batch_norm offset") < 1e-4);
        free(y);
        free(want);
        norm_free(&c);
    }
}

/* The test of the tests: a result wrong by 1e-3 in one element fails the check. */
static void test_checks_catch_errors(void)
{
    pl_attrs at = pl_kc_defaults();
    norm_case c;
    norm_setup(&c, "3,7", false, 60);
    pl_tensor in_t[3] = {c.x_t, c.p_t, c.p_t}, out_t;
    void *in[] = {c.x_data, c.gamma, c.beta};
    float *want = pl_kc_floats(c.n);
    layer_norm_ref(&c, at.eps, want);
    float *y = pl_kc_run_fresh(&layer_norm_fns, PL_OP_LAYER_NORM, &at, 3, in_t, in, &out_t, 1,
                               NULL);
    CU_ASSERT(pl_kc_max_rel_error(y, want, c.n, 1e-3) < 1e-4);
    want[4] += 1e-3f * (1.0f + fabsf(want[4]));
    CU_ASSERT(pl_kc_max_rel_error(y, want, c.n, 1e-3) > 1e-4);
    free(y);
    free(want);
    norm_free(&c);
}

void pl_register_kernels_norm_tests(void)
{
    static const pl_test_case cases[] = {
        {"layer_norm", test_layer_norm},
        {"layer_norm gradient", test_layer_norm_gradient},
        {"layer_norm over the channel axis", test_layer_norm_channels},
        {"layer_norm over the channel axis: gradient", test_layer_norm_channels_gradient},
        {"batch_norm", test_batch_norm},
        {"batch_norm gradient", test_batch_norm_gradient},
        {"batch_norm with a large mean", test_batch_norm_offset},
        {"checks catch errors", test_checks_catch_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-norm", cases);
}
