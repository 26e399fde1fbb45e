/* GRU cell kernels against a double-precision reference (PyTorch's equations written out
 * plainly, b_hn inside the reset gate's product), with the hidden side's gate inputs
 * absent, given as the bias alone and given per row, with and without the state h; at 1, 3
 * and 7 threads with bitwise equal results; and the gradient of every input against the
 * reference and against numerical differentiation of gru_cell. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns cell_fns = {pl_kernel_gru_cell, NULL, NULL};
static const pl_kernel_fns grad_fns = {pl_kernel_gru_cell_grad, NULL, NULL};

typedef enum { NO_HIDDEN, BIAS_ONLY, PER_ROW } hidden_kind;

typedef struct gru_case {
    int64_t n, h;
    hidden_kind hidden;
    bool state; /* h given (needs PER_ROW) */
} gru_case;

static const gru_case cases[] = {
    {3, 4, PER_ROW, true},
    {2, 5, PER_ROW, false},
    {4, 3, BIAS_ONLY, false},
    {2, 3, NO_HIDDEN, false},
    {1, 1, PER_ROW, true},
    {9, 7, PER_ROW, true}, /* rows shared unevenly by 3 and 7 threads */
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The forward's tensors (gx [, gh [, h]]), its output's descriptor, the upstream dh'. */
typedef struct gru_data {
    int n_in;
    pl_tensor in_t[3], out_t;
    void *in[3];
    float *dh_next;
} gru_data;

static gru_data make_case(const gru_case *c, uint64_t seed)
{
    gru_data d = {.n_in = c->state ? 3 : c->hidden == NO_HIDDEN ? 1 : 2};
    char dims[64];
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)c->n, (long long)(3 * c->h));
    d.in_t[0] = pl_kc_tensor(dims, PL_F32, true);
    d.in_t[1] = d.in_t[0];
    if (c->hidden == BIAS_ONLY) {
        snprintf(dims, sizeof dims, "%lld", (long long)(3 * c->h));
        d.in_t[1] = pl_kc_tensor(dims, PL_F32, false);
    }
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)c->n, (long long)c->h);
    d.in_t[2] = pl_kc_tensor(dims, PL_F32, true);
    pl_attrs at = pl_kc_defaults();
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_GRU_CELL, &at, d.n_in, d.in_t, 1, &d.out_t));
    for (int i = 0; i < 3; i++)
        d.in[i] = pl_kc_random(&d.in_t[i], seed + (uint64_t)i, -2, 2);
    d.dh_next = pl_kc_random(&d.out_t, seed + 10, -1, 1);
    return d;
}

static void free_case(gru_data *d)
{
    for (int i = 0; i < 3; i++)
        free(d->in[i]);
    free(d->dh_next);
}

/* Reference results, in double: h' and the gradients of gx, gh (per row) and h. */
typedef struct gru_reference {
    double *h_next, *dgx, *dgh, *dh;
} gru_reference;

static double sigmoid(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static gru_reference reference(const gru_case *c, const gru_data *d)
{
    int64_t n = c->n, h = c->h;
    const float *gx = d->in[0], *gh = d->n_in > 1 ? d->in[1] : NULL;
    const float *hp = d->n_in > 2 ? d->in[2] : NULL;
    gru_reference r = {calloc((size_t)(n * h), sizeof(double)),
                       calloc((size_t)(n * 3 * h), sizeof(double)),
                       calloc((size_t)(n * 3 * h), sizeof(double)),
                       calloc((size_t)(n * h), sizeof(double))};
    for (int64_t row = 0; row < n; row++) {
        const float *x = gx + row * 3 * h;
        const float *y = !gh ? NULL : c->hidden == BIAS_ONLY ? gh : gh + row * 3 * h;
        double *dx = r.dgx + row * 3 * h, *dy = r.dgh + row * 3 * h;
        for (int64_t j = 0; j < h; j++) {
            double yr = y ? y[j] : 0, yz = y ? y[h + j] : 0, yn = y ? y[2 * h + j] : 0;
            double rg = sigmoid(x[j] + yr), z = sigmoid(x[h + j] + yz);
            double a = x[2 * h + j] + rg * yn, nn = tanh(a);
            int64_t at = row * h + j;
            double prev = hp ? hp[at] : 0;
            r.h_next[at] = (1 - z) * nn + z * prev;
            double g = d->dh_next[at];
            double da = g * (1 - z) * (1 - nn * nn);
            double dr = da * yn * rg * (1 - rg), dz = g * (prev - nn) * z * (1 - z);
            dx[j] = dy[j] = dr;
            dx[h + j] = dy[h + j] = dz;
            dx[2 * h + j] = da;
            dy[2 * h + j] = da * rg;
            r.dh[at] = g * z;
        }
    }
    return r;
}

static void free_reference(gru_reference *r)
{
    free(r->h_next);
    free(r->dgx);
    free(r->dgh);
    free(r->dh);
}

static void expect_close(const char *what, const gru_case *c, double error, double limit)
{
    if (error >= limit)
        fprintf(stderr, "\n    %s (n %lld, h %lld, hidden %d%s): relative error %g\n", what,
                (long long)c->n, (long long)c->h, (int)c->hidden, c->state ? ", state" : "",
                error);
    CU_ASSERT_TRUE(error < limit);
}

static void test_forward(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const gru_case *c = &cases[i];
        gru_data d = make_case(c, 100 * i);
        gru_reference r = reference(c, &d);
        float *out;
        pl_attrs at = pl_kc_defaults();
        pl_kc_run_all_threads(&cell_fns, PL_OP_GRU_CELL, &at, d.n_in, d.in_t, d.in, 1, &d.out_t,
                              &out, "gru_cell");
        expect_close("h'", c, pl_kc_max_rel_error_double(out, r.h_next, c->n * c->h, 1e-2),
                     1e-5);
        free(out);
        free_reference(&r);
        free_case(&d);
    }
}

/* gh's gradient as its input's: dgh itself, or summed over the rows for the bias alone. */
static float *hidden_grad(const gru_case *c, const float *dgh)
{
    if (c->hidden == PER_ROW)
        return NULL;
    float *sum = pl_kc_floats(3 * c->h);
    for (int64_t k = 0; k < 3 * c->h; k++) {
        double s = 0;
        for (int64_t row = 0; row < c->n; row++)
            s += dgh[row * 3 * c->h + k];
        sum[k] = (float)s;
    }
    return sum;
}

static void test_grad(void)
{
    static const char *const names[3] = {"dgx", "dgh", "dh"};
    for (size_t i = 0; i < N_CASES; i++) {
        const gru_case *c = &cases[i];
        gru_data d = make_case(c, 100 * i + 3);
        gru_reference r = reference(c, &d);
        /* dh', gx [, gh [, h]] -> dgx [, dgh [, dh]] */
        int n_in = d.n_in + 1, n_out = d.n_in;
        pl_tensor g_in[4] = {d.out_t, d.in_t[0], d.in_t[1], d.in_t[2]};
        void *g[4] = {d.dh_next, d.in[0], d.in[1], d.in[2]};
        pl_tensor g_out[3];
        pl_attrs at = pl_kc_defaults();
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_GRU_CELL_GRAD, &at, n_in, g_in, n_out, g_out));
        float *got[3];
        pl_kc_run_all_threads(&grad_fns, PL_OP_GRU_CELL_GRAD, &at, n_in, g_in, g, n_out, g_out,
                              got, "gru_cell_grad");
        const double *want[3] = {r.dgx, r.dgh, r.dh};
        for (int o = 0; o < n_out; o++) {
            expect_close(names[o], c, pl_kc_max_rel_error_double(
                got[o], want[o], pl_tensor_elements(&g_out[o]), 1e-2), 1e-5);
            float *summed = o == 1 ? hidden_grad(c, got[1]) : NULL;
            pl_kc_check_gradient(&cell_fns, PL_OP_GRU_CELL, &at, d.n_in, d.in_t, d.in, o,
                                 summed ? summed : got[o], d.dh_next, 1, names[o]);
            free(summed);
            free(got[o]);
        }
        free_reference(&r);
        free_case(&d);
    }
}

/* A check of the reference itself: with gx = gh = 0, r = z = 1/2 and n = tanh(0) = 0, so
 * h' = h/2. */
static void test_known_values(void)
{
    gru_case c = {2, 3, PER_ROW, true};
    gru_data d = make_case(&c, 7);
    memset(d.in[0], 0, (size_t)pl_tensor_elements(&d.in_t[0]) * sizeof(float));
    memset(d.in[1], 0, (size_t)pl_tensor_elements(&d.in_t[1]) * sizeof(float));
    float h_next[6];
    void *out[1] = {h_next};
    pl_attrs at = pl_kc_defaults();
    pl_kc_run(&cell_fns, PL_OP_GRU_CELL, &at, 3, d.in_t, d.in, 1, &d.out_t, out, 2, NULL);
    gru_reference r = reference(&c, &d);
    for (int k = 0; k < 6; k++) {
        float want = ((const float *)d.in[2])[k] / 2;
        CU_ASSERT_DOUBLE_EQUAL(h_next[k], want, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(r.h_next[k], want, 1e-6);
    }
    free_reference(&r);
    free_case(&d);
}

/* Shapes the op refuses: gate inputs not 3H wide, a hidden side of the wrong rows, a state
 * of the wrong width. */
static void test_bad_shapes(void)
{
    pl_tensor in[3] = {pl_kc_tensor("2,7", PL_F32, true)}, out;
    pl_attrs at = pl_kc_defaults();
    CU_ASSERT_FALSE(pl_kc_infer(PL_OP_GRU_CELL, &at, 1, in, 1, &out));
    in[0] = pl_kc_tensor("2,6", PL_F32, true);
    in[1] = pl_kc_tensor("3,6", PL_F32, true);
    CU_ASSERT_FALSE(pl_kc_infer(PL_OP_GRU_CELL, &at, 2, in, 1, &out));
    in[1] = pl_kc_tensor("6", PL_F32, false);
    CU_ASSERT_TRUE(pl_kc_infer(PL_OP_GRU_CELL, &at, 2, in, 1, &out));
    in[1] = pl_kc_tensor("2,6", PL_F32, true);
    in[2] = pl_kc_tensor("2,3", PL_F32, true);
    CU_ASSERT_FALSE(pl_kc_infer(PL_OP_GRU_CELL, &at, 3, in, 1, &out));
}

void pl_register_kernels_gru_tests(void)
{
    static const pl_test_case tests[] = {
        {"known values", test_known_values},
        {"shapes refused", test_bad_shapes},
        {"gru_cell", test_forward},
        {"gru_cell_grad", test_grad},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-gru", tests);
}
