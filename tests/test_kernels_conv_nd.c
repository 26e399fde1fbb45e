/* Convolutions of one and three spatial axes, and transposed convolutions of one to
 * three, against a direct double-precision reference (every element as the textbook
 * sum), at 1, 3 and 7 threads with bitwise equal results; the gradients against the
 * reference and against numerical differentiation. A transposed convolution is checked
 * as autodiff runs it: its forward and its input and filter gradients are the
 * convolution's input gradient, forward and filter gradient with x and dy exchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns conv_fns = {pl_kernel_conv, NULL, pl_kernel_conv_workspace};
static const pl_kernel_fns grad_input_fns = {pl_kernel_conv_grad_input, NULL,
                                             pl_kernel_conv_grad_input_workspace};
static const pl_kernel_fns grad_filter_fns = {pl_kernel_conv_grad_filter,
                                              pl_kernel_conv_grad_filter_finish,
                                              pl_kernel_conv_grad_filter_workspace};
static const pl_kernel_fns transpose_fns = {
    pl_kernel_conv_transpose, pl_kernel_conv_transpose_finish, pl_kernel_conv_transpose_workspace};

#define REF_FLOOR 1.0 /* as in test_kernels_conv.c */
#define REF_LIMIT 1e-4

/* Per spatial axis count: the forward op, its gradients, the transposed op. */
static const pl_op_kind kinds[4][4] = {
    [1] = {PL_OP_CONV1D, PL_OP_CONV1D_GRAD_INPUT, PL_OP_CONV1D_GRAD_FILTER, PL_OP_CONV_TRANSPOSE1D},
    [2] = {PL_OP_CONV2D, PL_OP_CONV2D_GRAD_INPUT, PL_OP_CONV2D_GRAD_FILTER, PL_OP_CONV_TRANSPOSE2D},
    [3] = {PL_OP_CONV3D, PL_OP_CONV3D_GRAD_INPUT, PL_OP_CONV3D_GRAD_FILTER, PL_OP_CONV_TRANSPOSE3D},
};

static const conv_case plain_cases[] = {
    {"2,3,9", "4,3,3", {1}, {1}, {1}, {0}, 1, true, true},
    {"2,4,11", "6,2,3", {2}, {2}, {2}, {0}, 2, true, true},
    {"3,4,7", "4,1,5", {1}, {2}, {1}, {0}, 4, false, true},      /* depthwise */
    {"2,4,6", "5,4,1", {1}, {0}, {1}, {0}, 1, true, true},       /* direct */
    {"2,8,300", "16,8,7", {2}, {3}, {1}, {0}, 1, true, false},   /* many chunks */
    {"2,16,600", "16,16,5", {1}, {2}, {2}, {0}, 1, true, false}, /* flat filter gradient */
    {"2,2,4,5,5", "3,2,3,3,3", {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 1, true, true},
    {"2,4,5,6,7", "4,2,2,3,3", {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, {0}, 2, true, true},
    {"1,3,3,4,4", "3,1,3,3,3", {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 3, false, true},
    {"2,3,3,4,5", "2,3,1,1,1", {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0}, 1, true, true},
    {"1,3,1,6,6", "4,3,1,3,3", {2, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 1, true, true},
    {"2,16,6,10,10", "16,16,3,3,3", {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 1, true, false},
};
static const conv_case transposed_cases[] = {
    {"2,3,5", "3,4,3", {2}, {1}, {1}, {1}, 1, true, true},
    {"2,4,6", "4,3,4", {3}, {0}, {2}, {2}, 2, true, true},
    {"2,3,4,5", "3,2,3,3", {2, 2}, {1, 1}, {1, 1}, {1, 0}, 1, true, true},
    {"2,4,3,3", "4,3,2,2", {2, 2}, {0, 0}, {1, 1}, {0, 0}, 2, false, true},
    {"1,4,5,4", "4,1,3,3", {1, 2}, {1, 1}, {2, 1}, {0, 1}, 4, true, true},     /* depthwise */
    {"4,16,8,8", "16,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, true, false}, /* Winograd */
    {"2,8,8,8", "8,4,2,2", {2, 2}, {0, 0}, {1, 1}, {0, 0}, 1, true, false},
    {"2,2,3,3,4", "2,3,3,3,3", {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 0}, 1, true, true},
    {"1,4,2,3,3", "4,1,2,2,2", {1, 2, 2}, {0, 1, 0}, {1, 1, 2}, {0, 1, 1}, 2, true, true},
};
#define COUNT(a) (sizeof a / sizeof a[0])

static conv_data make_case(const conv_case *c, bool transposed, uint64_t seed)
{
    pl_tensor x = pl_kc_tensor(c->x, PL_F32, true);
    return conv_case_make(c, kinds[x.rank - 2][transposed ? 3 : 0], transposed, seed);
}

/* Runs a one-output kernel at every thread count and holds its output to the reference;
 * returns the output (free with free()). */
static float *run_against(const pl_kernel_fns *fns, pl_op_kind kind, const conv_data *d, int n_in,
                          const pl_tensor *in_t, void *const *in, const pl_tensor *out_t,
                          const double *want, const char *what, const conv_case *c)
{
    float *got;
    pl_kc_run_all_threads(fns, kind, &d->at, n_in, in_t, in, 1, out_t, &got, what);
    conv_case_report(what, c,
                     pl_kc_max_rel_error_double(got, want, pl_tensor_elements(out_t), REF_FLOOR),
                     REF_LIMIT);
    return got;
}

/* The gradient of sum(dy * op(...)) with respect to input `wrt`, numerically. */
static float *numeric_grad(conv_data *d, pl_op_kind kind, const pl_kernel_fns *fns, int wrt)
{
    void *in[3] = {d->x, d->w, d->b};
    float *g = pl_kc_floats(pl_tensor_elements(&d->in_t[wrt]));
    pl_kc_numeric_grad(fns, kind, &d->at, d->n_in, d->in_t, in, 1, &d->y_t, 0, d->dy, wrt, 1e-2f,
                       g);
    return g;
}

static void check_numeric(conv_data *d, const conv_case *c, pl_op_kind kind,
                          const pl_kernel_fns *fns, int wrt, const float *got, const char *what)
{
    if (!c->numeric)
        return;
    float *numeric = numeric_grad(d, kind, fns, wrt);
    conv_case_report(
        what, c, pl_kc_max_rel_error(got, numeric, pl_tensor_elements(&d->in_t[wrt]), 1e-2), 2e-2);
    free(numeric);
}

static void test_convolution(void)
{
    for (size_t i = 0; i < COUNT(plain_cases); i++) {
        const conv_case *c = &plain_cases[i];
        conv_data d = make_case(c, false, 10 * i);
        const pl_op_kind *k = kinds[d.spatial];
        conv_reference r = conv_reference_compute(&d.in_t[0], d.x, &d.in_t[1], d.w, &d.y_t, d.dy,
                                                  &d.at, d.n_in == 3 ? d.b : NULL);
        void *in[3] = {d.x, d.w, d.b};
        float *y = run_against(&conv_fns, k[0], &d, d.n_in, d.in_t, in, &d.y_t, r.y, "forward", c);
        pl_tensor g_in[3] = {d.y_t, d.in_t[0], d.in_t[1]}, g_out[2];
        void *grad_in[3] = {d.dy, d.x, d.w};
        float *dx = run_against(&grad_input_fns, k[1], &d, 3, g_in, grad_in, &d.in_t[0], r.dx,
                                "grad_input", c);
        check_numeric(&d, c, k[0], &conv_fns, 0, dx, "grad_input vs numeric");
        int n_out = c->bias ? 2 : 1;
        CU_ASSERT_FATAL(pl_kc_infer(k[2], &d.at, 3, g_in, n_out, g_out));
        float *got[2];
        pl_kc_run_all_threads(&grad_filter_fns, k[2], &d.at, 3, g_in, grad_in, n_out, g_out, got,
                              "conv_grad_filter");
        conv_case_report(
            "grad_filter dw", c,
            pl_kc_max_rel_error_double(got[0], r.dw, pl_tensor_elements(&d.in_t[1]), REF_FLOOR),
            REF_LIMIT);
        check_numeric(&d, c, k[0], &conv_fns, 1, got[0], "grad_filter dw vs numeric");
        if (n_out == 2) {
            conv_case_report("grad_filter db", c,
                             pl_kc_max_rel_error_double(got[1], r.db, d.y_t.dims[1], REF_FLOOR),
                             REF_LIMIT);
            check_numeric(&d, c, k[0], &conv_fns, 2, got[1], "grad_filter db vs numeric");
            free(got[1]);
        }
        free(got[0]);
        free(dx);
        free(y);
        conv_reference_free(&r);
        conv_case_free(&d);
    }
}

/* The transposed convolution's forward, and its gradients as autodiff computes them:
 * dx = conv(dy, w), dw = conv_grad_filter with x as the convolution's output gradient
 * and dy as its input, db = dy summed per channel. */
static void test_transposed(void)
{
    for (size_t i = 0; i < COUNT(transposed_cases); i++) {
        const conv_case *c = &transposed_cases[i];
        conv_data d = make_case(c, true, 10 * i);
        const pl_op_kind *k = kinds[d.spatial];
        /* The convolution that maps y back to x: its input y, its output x; its input
         * gradient of x is y without the bias. */
        conv_reference r = conv_reference_compute(&d.y_t, d.dy, &d.in_t[1], d.w, &d.in_t[0], d.x,
                                                  &d.at, NULL);
        if (d.n_in == 3)
            conv_reference_add_bias(r.dx, &d.y_t, d.b);
        void *in[3] = {d.x, d.w, d.b};
        float *y = run_against(&transpose_fns, k[3], &d, d.n_in, d.in_t, in, &d.y_t, r.dx,
                               "transposed forward", c);
        pl_tensor conv_in[2] = {d.y_t, d.in_t[1]};
        void *dx_in[2] = {d.dy, d.w};
        float *dx = run_against(&conv_fns, k[0], &d, 2, conv_in, dx_in, &d.in_t[0], r.y,
                                "transposed dx", c);
        check_numeric(&d, c, k[3], &transpose_fns, 0, dx, "transposed dx vs numeric");
        pl_tensor g_in[3] = {d.in_t[0], d.y_t, d.in_t[1]};
        void *dw_in[3] = {d.x, d.dy, d.w};
        float *dw = run_against(&grad_filter_fns, k[2], &d, 3, g_in, dw_in, &d.in_t[1], r.dw,
                                "transposed dw", c);
        check_numeric(&d, c, k[3], &transpose_fns, 1, dw, "transposed dw vs numeric");
        free(dw);
        free(dx);
        free(y);
        conv_reference_free(&r);
        conv_case_free(&d);
    }
}

/* PyTorch's output sizes: ConvTranspose2d(k=3, stride=2, padding=1, output_padding=1)
 * doubles 5 to 10; Conv3d(k=3, stride=2, padding=1, dilation=2) maps 9 to 4; and a
 * hand-computed 1-D case checks the reference itself. */
static void test_known_values(void)
{
    conv_case up = {"1,1,5,5", "1,1,3,3", {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, false, false};
    conv_data d = make_case(&up, true, 1);
    CU_ASSERT_EQUAL(d.y_t.dims[2], 10);
    CU_ASSERT_EQUAL(d.y_t.dims[3], 10);
    conv_case_free(&d);
    conv_case down = {"1,1,9,9,9", "1,1,3,3,3", {2, 2, 2}, {1, 1, 1}, {2, 2, 2},
                      {0},         1,           false,     false};
    d = make_case(&down, false, 1);
    CU_ASSERT_EQUAL(d.y_t.dims[2], 4);
    conv_case_free(&d);
    /* [0 1 2 3] transposed by [1 10] at stride 2: 0 0 1 10 2 20 3 30 */
    conv_case line = {"1,1,4", "1,1,2", {2}, {0}, {1}, {0}, 1, false, false};
    d = make_case(&line, true, 1);
    for (int i = 0; i < 4; i++)
        d.x[i] = (float)i;
    d.w[0] = 1;
    d.w[1] = 10;
    float y[8];
    void *in[2] = {d.x, d.w}, *out[1] = {y};
    pl_kc_run(&transpose_fns, PL_OP_CONV_TRANSPOSE1D, &d.at, 2, d.in_t, in, 1, &d.y_t, out, 2,
              NULL);
    const float want[8] = {0, 0, 1, 10, 2, 20, 3, 30};
    CU_ASSERT_EQUAL(memcmp(y, want, sizeof want), 0);
    conv_case_free(&d);
}

void pl_register_kernels_conv_nd_tests(void)
{
    static const pl_test_case tests[] = {
        {"known values", test_known_values},
        {"conv1d and conv3d", test_convolution},
        {"conv_transpose1d to 3d", test_transposed},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-conv-nd", tests);
}
