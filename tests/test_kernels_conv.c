/* Convolution kernels against a direct double-precision reference (every output as the
 * textbook sum), over strides, padding, dilation, groups, 1x1 filters, shapes large
 * enough to cut into several chunks, and small outputs with several samples' columns side
 * by side; at 1, 3 and 7 threads with bitwise equal results; and both gradients against
 * numerical differentiation of conv2d. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns conv2d_fns = {pl_kernel_conv, NULL, pl_kernel_conv_workspace};
static const pl_kernel_fns grad_input_fns = {pl_kernel_conv_grad_input, NULL,
                                             pl_kernel_conv_grad_input_workspace};
static const pl_kernel_fns grad_filter_fns = {pl_kernel_conv_grad_filter,
                                              pl_kernel_conv_grad_filter_finish,
                                              pl_kernel_conv_grad_filter_workspace};

/* Against the double reference: float sums of up to a few hundred products drift by
 * ~1e-5 absolute (more with OpenBLAS's generic kernels, as under valgrind), so small
 * values are compared against a floor of 1; a wrong term costs O(1). */
#define REF_FLOOR 1.0
#define REF_LIMIT 1e-4

static const conv_case cases[] = {
    {"2,3,5,6", "4,3,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, true},
    {"2,2,7,5", "3,2,3,2", {2, 1}, {1, 0}, {1, 1}, {0}, 1, false, true},
    {"2,2,7,7", "3,2,2,3", {2, 2}, {1, 1}, {1, 1}, {0}, 1, true, true}, /* right padding */
    {"1,2,7,8", "2,2,3,3", {1, 2}, {2, 1}, {2, 1}, {0}, 1, true, true},
    {"2,4,5,5", "6,2,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 2, true, true},
    {"2,4,9,8", "4,2,3,2", {2, 2}, {2, 1}, {2, 3}, {0}, 2, true, true},    /* all at once */
    {"2,4,3,5", "5,4,1,1", {1, 1}, {0, 0}, {1, 1}, {0}, 1, true, true},    /* direct 1x1 */
    {"2,4,3,3", "6,2,1,1", {1, 1}, {0, 0}, {1, 1}, {0}, 2, false, true},   /* direct, grouped */
    {"2,3,5,5", "4,3,1,1", {2, 2}, {0, 0}, {1, 1}, {0}, 1, true, true},    /* 1x1 strided */
    {"1,3,4,4", "3,1,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 3, true, true},    /* depthwise */
    {"2,4,7,6", "4,1,3,3", {2, 2}, {1, 1}, {1, 1}, {0}, 4, false, true},   /* depthwise, strided */
    {"2,3,9,9", "3,1,5,5", {2, 1}, {2, 2}, {1, 1}, {0}, 3, true, true},    /* depthwise 5x5 */
    {"1,2,8,7", "2,1,3,3", {1, 1}, {2, 2}, {2, 2}, {0}, 2, true, true},    /* depthwise dilated */
    {"2,3,5,4", "3,1,3,3", {1, 1}, {3, 2}, {1, 1}, {0}, 3, true, true},    /* depthwise, wide pad */
    {"1,2,66,70", "2,1,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 2, true, false}, /* depthwise, plane
                                                                          past the flat size */
    {"3,16,20,18", "16,1,3,3", {2, 2}, {1, 1}, {1, 1}, {0}, 16, true, false}, /* many planes */
    {"1,1,4,4", "2,1,4,4", {1, 1}, {2, 2}, {1, 1}, {0}, 1, true, true},       /* filter = input */
    {"2,2,6,6", "40,2,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},     /* output blocks */
    {"1,26,20,30", "5,26,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},  /* many chunks */
    {"2,8,23,25", "8,2,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 4, false, false},
    {"1,4,40,40", "4,4,1,1", {1, 1}, {0, 0}, {1, 1}, {0}, 1, false, false}, /* direct, blocks */
    {"7,72,4,4", "8,18,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 4, true, false}, /* sample blocks 3,3,1 */
    /* Winograd F(2x2, 3x3) (at least 48 tiles): odd sizes, no padding, padding 2, padding
     * per axis, and tile blocks that cross samples */
    {"3,16,9,9", "20,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    {"4,16,10,9", "16,16,3,3", {1, 1}, {0, 0}, {1, 1}, {0}, 1, false, false},
    {"3,24,5,8", "16,24,3,3", {1, 1}, {2, 2}, {1, 1}, {0}, 1, true, false},
    {"5,16,6,7", "17,16,3,3", {1, 1}, {0, 2}, {1, 1}, {0}, 1, false, false},
    {"3,16,40,39", "16,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    /* Winograd with output channels split over chunks: forward, then input gradient */
    {"3,16,8,8", "130,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    {"3,130,8,8", "16,130,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, false, false},
    /* the filter gradient on flat volumes (512 output positions or more): dilated with
     * padding per axis, grouped, one sample in channel blocks, positions in two bands */
    {"2,16,24,23", "17,16,3,2", {1, 1}, {2, 1}, {2, 3}, {0}, 1, true, false},
    {"2,32,24,24", "32,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 2, true, false},
    {"1,64,24,24", "16,64,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, false, false},
    {"1,16,190,190", "16,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, false, false},
    /* samples side by side (conv_batched.c; fewer than 64 output positions, or 512 for
     * the filter gradient; fewer than 8 for 1x1 filters at stride 1): output rows and
     * input channels in parts, a ragged last part; two sample blocks (two copies of dw); a
     * 1x1 filter; Winograd's forward beside a batched filter gradient of uneven sample
     * blocks; grouped and strided */
    {"20,40,2,2", "130,40,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    {"40,8,5,5", "12,8,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    {"6,12,2,2", "70,12,1,1", {1, 1}, {0, 0}, {1, 1}, {0}, 1, false, false},
    {"9,16,9,9", "20,16,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 1, true, false},
    {"5,16,6,6", "24,4,3,3", {2, 2}, {1, 1}, {1, 1}, {0}, 4, true, false},
    /* depthwise on small planes (conv_depthwise_small.c; fewer than 256 output positions):
     * 1x1 planes of more channels than a block, 2x2 strided, a 7x7 filter wider than its
     * plane; and on planes past that size, flat and strided */
    {"3,70,1,1", "70,1,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 70, true, false},
    {"2,130,4,4", "130,1,3,3", {2, 2}, {1, 1}, {1, 1}, {0}, 130, false, false},
    {"2,8,3,3", "8,1,7,7", {1, 1}, {3, 3}, {1, 1}, {0}, 8, true, false},
    {"2,6,17,17", "6,1,3,3", {1, 1}, {1, 1}, {1, 1}, {0}, 6, true, false},
    {"2,5,33,32", "5,1,3,3", {2, 2}, {1, 1}, {1, 1}, {0}, 5, false, false},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static conv_data make_case(const conv_case *c, uint64_t seed)
{
    return conv_case_make(c, PL_OP_CONV2D, false, seed);
}

static conv_reference reference(const conv_data *d)
{
    return conv_reference_compute(&d->in_t[0], d->x, &d->in_t[1], d->w, &d->y_t, d->dy, &d->at,
                                  d->n_in == 3 ? d->b : NULL);
}

static void test_forward(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        conv_data d = make_case(&cases[i], 10 * i);
        conv_reference r = reference(&d);
        void *in[3] = {d.x, d.w, d.b};
        float *y;
        pl_kc_run_all_threads(&conv2d_fns, PL_OP_CONV2D, &d.at, d.n_in, d.in_t, in, 1, &d.y_t, &y,
                              "conv2d");
        conv_case_report("conv2d", &cases[i],
                         pl_kc_max_rel_error_double(y, r.y, pl_tensor_elements(&d.y_t), REF_FLOOR),
                         REF_LIMIT);
        free(y);
        conv_reference_free(&r);
        conv_case_free(&d);
    }
}

/* The gradient of sum(dy * conv2d(...)) with respect to forward input `wrt`. */
static float *numeric_grad(conv_data *d, int wrt)
{
    void *in[3] = {d->x, d->w, d->b};
    float *g = pl_kc_floats(pl_tensor_elements(&d->in_t[wrt]));
    pl_kc_numeric_grad(&conv2d_fns, PL_OP_CONV2D, &d->at, d->n_in, d->in_t, in, 1, &d->y_t, 0,
                       d->dy, wrt, 1e-2f, g);
    return g;
}

static void test_grad_input(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        conv_data d = make_case(&cases[i], 10 * i);
        conv_reference r = reference(&d);
        pl_tensor g_in[3] = {d.y_t, d.in_t[0], d.in_t[1]};
        void *in[3] = {d.dy, d.x, d.w};
        float *dx;
        pl_kc_run_all_threads(&grad_input_fns, PL_OP_CONV2D_GRAD_INPUT, &d.at, 3, g_in, in, 1,
                              &d.in_t[0], &dx, "conv2d_grad_input");
        int64_t n = pl_tensor_elements(&d.in_t[0]);
        conv_case_report("conv2d_grad_input", &cases[i],
                         pl_kc_max_rel_error_double(dx, r.dx, n, REF_FLOOR), REF_LIMIT);
        if (cases[i].numeric) {
            float *numeric = numeric_grad(&d, 0);
            conv_case_report("conv2d_grad_input vs numeric", &cases[i],
                             pl_kc_max_rel_error(dx, numeric, n, 1e-2), 2e-2);
            free(numeric);
        }
        free(dx);
        conv_reference_free(&r);
        conv_case_free(&d);
    }
}

static void test_grad_filter(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        conv_data d = make_case(&cases[i], 10 * i);
        conv_reference r = reference(&d);
        pl_tensor g_in[3] = {d.y_t, d.in_t[0], d.in_t[1]}, g_out[2];
        int n_out = cases[i].bias ? 2 : 1;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_CONV2D_GRAD_FILTER, &d.at, 3, g_in, n_out, g_out));
        void *in[3] = {d.dy, d.x, d.w};
        float *got[2];
        pl_kc_run_all_threads(&grad_filter_fns, PL_OP_CONV2D_GRAD_FILTER, &d.at, 3, g_in, in, n_out,
                              g_out, got, "conv2d_grad_filter");
        int64_t nw = pl_tensor_elements(&d.in_t[1]), nb = d.in_t[1].dims[0];
        conv_case_report("conv2d_grad_filter dw", &cases[i],
                         pl_kc_max_rel_error_double(got[0], r.dw, nw, REF_FLOOR), REF_LIMIT);
        if (n_out == 2)
            conv_case_report("conv2d_grad_filter db", &cases[i],
                             pl_kc_max_rel_error_double(got[1], r.db, nb, REF_FLOOR), REF_LIMIT);
        if (cases[i].numeric) {
            float *numeric = numeric_grad(&d, 1);
            conv_case_report("conv2d_grad_filter dw vs numeric", &cases[i],
                             pl_kc_max_rel_error(got[0], numeric, nw, 1e-2), 2e-2);
            free(numeric);
            if (n_out == 2) {
                numeric = numeric_grad(&d, 2);
                conv_case_report("conv2d_grad_filter db vs numeric", &cases[i],
                                 pl_kc_max_rel_error(got[1], numeric, nb, 1e-2), 2e-2);
                free(numeric);
            }
        }
        for (int o = 0; o < n_out; o++)
            free(got[o]);
        conv_reference_free(&r);
        conv_case_free(&d);
    }
}

/* A hand-computed case, so that the reference itself is checked: a 2x2 filter of ones
 * over a 3x3 ramp sums each window. */
static void test_known_values(void)
{
    conv_case c = {"1,1,3,3", "1,1,2,2", {1, 1}, {0, 0}, {1, 1}, {0}, 1, false, false};
    conv_data d = make_case(&c, 1);
    for (int i = 0; i < 9; i++)
        d.x[i] = (float)i;
    for (int i = 0; i < 4; i++)
        d.w[i] = 1.0f;
    float y[4];
    void *in[2] = {d.x, d.w}, *out[1] = {y};
    pl_kc_run(&conv2d_fns, PL_OP_CONV2D, &d.at, 2, d.in_t, in, 1, &d.y_t, out, 2, NULL);
    const float want[4] = {8, 12, 20, 24};
    CU_ASSERT_EQUAL(memcmp(y, want, sizeof want), 0);
    conv_reference r = reference(&d);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_DOUBLE_EQUAL(r.y[i], want[i], 0);
    conv_reference_free(&r);
    conv_case_free(&d);
}

void pl_register_kernels_conv_tests(void)
{
    static const pl_test_case tests[] = {
        {"known values", test_known_values},
        {"conv2d", test_forward},
        {"conv2d_grad_input", test_grad_input},
        {"conv2d_grad_filter", test_grad_filter},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-conv", tests);
}
