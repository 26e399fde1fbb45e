/* LSTM cell kernels against a double-precision reference (the step and its analytic
 * gradient written out plainly), with and without the h and c state, for hidden sizes
 * that give one and several chunks and batches that give several row blocks; at 1, 3
 * and 7 threads with bitwise equal results; and the gradient of every input against
 * numerical differentiation of lstm_cell. The projected form (gate inputs gx made
 * outside the cell) is checked on the same steps, its gx made from their x, w and b. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns cell_fns = {pl_kernel_lstm_cell, NULL, pl_kernel_lstm_cell_workspace};
static const pl_kernel_fns grad_fns = {pl_kernel_lstm_cell_grad, pl_kernel_lstm_cell_grad_finish,
                                       pl_kernel_lstm_cell_grad_workspace};

typedef struct lstm_case {
    int64_t n, e, h;
    bool state;
    bool numeric; /* small enough for numerical gradients */
} lstm_case;

static const lstm_case cases[] = {
    {3, 4, 5, true, true},
    {2, 3, 4, false, true},
    {1, 2, 3, true, true},
    {3, 5, 70, true, false},   /* one chunk: the four gates in one product */
    {2, 4, 300, true, false},  /* two chunks of hidden units, with state */
    {2, 3, 600, false, false}, /* three chunks, uneven */
    {130, 3, 8, true, false},  /* two forward row blocks */
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The forward's tensors (x, w, b, h, c), its outputs' descriptors and the upstream
 * gradients dh', dc'. */
typedef struct lstm_data {
    int n_in;
    pl_tensor in_t[5], out_t[2];
    void *in[5];
    float *dh_next, *dc_next;
} lstm_data;

static lstm_data make_case(const lstm_case *c, uint64_t seed)
{
    lstm_data d = {.n_in = c->state ? 5 : 3};
    char dims[64];
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)c->n, (long long)c->e);
    d.in_t[0] = pl_kc_tensor(dims, PL_F32, true);
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)(c->e + c->h), (long long)(4 * c->h));
    d.in_t[1] = pl_kc_tensor(dims, PL_F32, false);
    snprintf(dims, sizeof dims, "%lld", (long long)(4 * c->h));
    d.in_t[2] = pl_kc_tensor(dims, PL_F32, false);
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)c->n, (long long)c->h);
    d.in_t[3] = d.in_t[4] = pl_kc_tensor(dims, PL_F32, true);
    pl_attrs at = pl_kc_defaults();
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL, &at, d.n_in, d.in_t, 2, d.out_t));
    for (int i = 0; i < 5; i++)
        d.in[i] = pl_kc_random(&d.in_t[i], seed + (uint64_t)i, -1, 1);
    d.dh_next = pl_kc_random(&d.out_t[0], seed + 10, -1, 1);
    d.dc_next = pl_kc_random(&d.out_t[1], seed + 11, -1, 1);
    return d;
}

static void free_case(lstm_data *d)
{
    for (int i = 0; i < 5; i++)
        free(d->in[i]);
    free(d->dh_next);
    free(d->dc_next);
}

/* Reference results, in double: h', c', the gradients of x, w, b, h, c and of the gates'
 * inputs z. */
typedef struct lstm_reference {
    double *h_next, *c_next, *grad[5], *dz;
} lstm_reference;

static double sigmoid(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static lstm_reference reference(const lstm_case *c, const lstm_data *d)
{
    int64_t n = c->n, e = c->e, h = c->h, cols = 4 * h;
    const float *x = d->in[0], *w = d->in[1], *b = d->in[2], *hp = d->in[3], *cp = d->in[4];
    lstm_reference r = {calloc((size_t)(n * h), sizeof(double)),
                        calloc((size_t)(n * h), sizeof(double)), {NULL},
                        calloc((size_t)(n * cols), sizeof(double))};
    for (int i = 0; i < 5; i++)
        r.grad[i] = calloc((size_t)pl_tensor_elements(&d->in_t[i]), sizeof(double));
    double *z = malloc((size_t)cols * sizeof(double)), *dz = malloc((size_t)cols * sizeof(double));
    for (int64_t row = 0; row < n; row++) {
        for (int64_t k = 0; k < cols; k++) {
            z[k] = b[k];
            for (int64_t a = 0; a < e; a++)
                z[k] += (double)x[row * e + a] * w[a * cols + k];
            for (int64_t a = 0; c->state && a < h; a++)
                z[k] += (double)hp[row * h + a] * w[(e + a) * cols + k];
        }
        for (int64_t j = 0; j < h; j++) {
            double gi = sigmoid(z[j]), gf = sigmoid(z[h + j]), gg = tanh(z[2 * h + j]);
            double go = sigmoid(z[3 * h + j]), prev = c->state ? cp[row * h + j] : 0.0;
            double cell = gf * prev + gi * gg, t = tanh(cell);
            int64_t at = row * h + j;
            r.c_next[at] = cell;
            r.h_next[at] = go * t;
            double dcell = d->dc_next[at] + d->dh_next[at] * go * (1 - t * t);
            r.grad[4][at] = dcell * gf;
            dz[j] = dcell * gg * gi * (1 - gi);
            dz[h + j] = dcell * prev * gf * (1 - gf);
            dz[2 * h + j] = dcell * gi * (1 - gg * gg);
            dz[3 * h + j] = d->dh_next[at] * t * go * (1 - go);
        }
        for (int64_t k = 0; k < cols; k++) {
            r.dz[row * cols + k] = dz[k];
            r.grad[2][k] += dz[k];
            for (int64_t a = 0; a < e; a++) {
                r.grad[0][row * e + a] += dz[k] * w[a * cols + k];
                r.grad[1][a * cols + k] += dz[k] * x[row * e + a];
            }
            for (int64_t a = 0; c->state && a < h; a++) {
                r.grad[3][row * h + a] += dz[k] * w[(e + a) * cols + k];
                r.grad[1][(e + a) * cols + k] += dz[k] * hp[row * h + a];
            }
        }
    }
    free(z);
    free(dz);
    return r;
}

static void free_reference(lstm_reference *r)
{
    free(r->h_next);
    free(r->c_next);
    for (int i = 0; i < 5; i++)
        free(r->grad[i]);
    free(r->dz);
}

static void expect_close(const char *what, const lstm_case *c, double error, double limit)
{
    if (error >= limit)
        fprintf(stderr, "\n    %s (n %lld, e %lld, h %lld%s): relative error %g\n", what,
                (long long)c->n, (long long)c->e, (long long)c->h,
                c->state ? ", state" : "", error);
    CU_ASSERT_TRUE(error < limit);
}

static void test_forward(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const lstm_case *c = &cases[i];
        lstm_data d = make_case(c, 100 * i);
        lstm_reference r = reference(c, &d);
        float *out[2];
        pl_attrs at = pl_kc_defaults();
        pl_kc_run_all_threads(&cell_fns, PL_OP_LSTM_CELL, &at, d.n_in, d.in_t, d.in, 2, d.out_t,
                              out, "lstm_cell");
        int64_t n = c->n * c->h;
        expect_close("h'", c, pl_kc_max_rel_error_double(out[0], r.h_next, n, 1e-2), 1e-4);
        expect_close("c'", c, pl_kc_max_rel_error_double(out[1], r.c_next, n, 1e-2), 1e-4);
        free(out[0]);
        free(out[1]);
        free_reference(&r);
        free_case(&d);
    }
}

/* d/d(input wrt) of sum(dh' * h') + sum(dc' * c'), numerically, of the cell with inputs
 * `in` (d's, or their projected form) and d's outputs. */
static float *numeric_grad(const lstm_data *d, int n_in, const pl_tensor *in_t,
                           void *const *in, int wrt)
{
    pl_attrs at = pl_kc_defaults();
    int64_t n = pl_tensor_elements(&in_t[wrt]);
    float *from_h = pl_kc_floats(n), *from_c = pl_kc_floats(n);
    pl_kc_numeric_grad(&cell_fns, PL_OP_LSTM_CELL, &at, n_in, in_t, in, 2, d->out_t, 0,
                       d->dh_next, wrt, 1e-2f, from_h);
    pl_kc_numeric_grad(&cell_fns, PL_OP_LSTM_CELL, &at, n_in, in_t, in, 2, d->out_t, 1,
                       d->dc_next, wrt, 1e-2f, from_c);
    for (int64_t k = 0; k < n; k++)
        from_h[k] += from_c[k];
    free(from_c);
    return from_h;
}

/* The kernel's outputs dx, dz [, dh, dc] as the gradients of every input x, w, b [, h, c]:
 * dw = [x | h]^T . dz and db = the column sums of dz, in double, as autodiff's ops make
 * them over time steps. */
static void every_input_grad(const lstm_case *c, const lstm_data *d, float *const *got,
                             float *grad[5])
{
    int64_t n = c->n, e = c->e, h = c->h, cols = 4 * h;
    const float *x = d->in[0], *hp = d->in[3], *dz = got[1];
    grad[0] = got[0];
    grad[3] = c->state ? got[2] : NULL;
    grad[4] = c->state ? got[3] : NULL;
    grad[1] = pl_kc_floats((e + h) * cols);
    grad[2] = pl_kc_floats(cols);
    for (int64_t k = 0; k < cols; k++) {
        double db = 0;
        for (int64_t row = 0; row < n; row++)
            db += dz[row * cols + k];
        grad[2][k] = (float)db;
        for (int64_t a = 0; a < e + h; a++) {
            double dw = 0;
            for (int64_t row = 0; a < e + (c->state ? h : 0) && row < n; row++)
                dw += (double)dz[row * cols + k] *
                      (a < e ? x[row * e + a] : hp[row * h + a - e]);
            grad[1][a * cols + k] = (float)dw;
        }
    }
}

static void test_grad(void)
{
    static const char *const names[5] = {"dx", "dw", "db", "dh", "dc"};
    for (size_t i = 0; i < N_CASES; i++) {
        const lstm_case *c = &cases[i];
        lstm_data d = make_case(c, 100 * i);
        lstm_reference r = reference(c, &d);
        /* dh', dc', x, w, b [, h, c] -> dx, dz [, dh, dc] */
        int n_in = d.n_in + 2, n_out = d.n_in - 1;
        pl_tensor g_in[7] = {d.out_t[0], d.out_t[1], d.in_t[0], d.in_t[1], d.in_t[2],
                             d.in_t[3], d.in_t[4]};
        void *g[7] = {d.dh_next, d.dc_next, d.in[0], d.in[1], d.in[2], d.in[3], d.in[4]};
        pl_tensor g_out[4];
        pl_attrs at = pl_kc_defaults();
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL_GRAD, &at, n_in, g_in, n_out, g_out));
        CU_ASSERT_EQUAL(g_out[1].dims[0], c->n);
        CU_ASSERT_EQUAL(g_out[1].dims[1], 4 * c->h);
        float *got[4];
        pl_kc_run_all_threads(&grad_fns, PL_OP_LSTM_CELL_GRAD, &at, n_in, g_in, g, n_out, g_out,
                              got, "lstm_cell_grad");
        expect_close("dz", c, pl_kc_max_rel_error_double(got[1], r.dz, c->n * 4 * c->h, 1e-2),
                     5e-4);
        float *grad[5];
        every_input_grad(c, &d, got, grad);
        for (int o = 0; o < d.n_in; o++) {
            int64_t n = pl_tensor_elements(&d.in_t[o]);
            /* dx and dh sum 4H float products: a few 1e-6 of the floor, not 1e-7 */
            expect_close(names[o], c, pl_kc_max_rel_error_double(grad[o], r.grad[o], n, 1e-2),
                         5e-4);
            if (c->numeric) {
                float *numeric = numeric_grad(&d, d.n_in, d.in_t, d.in, o);
                expect_close(names[o], c, pl_kc_max_rel_error(grad[o], numeric, n, 1e-2), 2e-2);
                free(numeric);
            }
        }
        free(grad[1]);
        free(grad[2]);
        for (int o = 0; o < n_out; o++)
            free(got[o]);
        free_reference(&r);
        free_case(&d);
    }
}

/* Training graphs keep the forward's activated gates as a third output and hand them to
 * the gradient: the forward writes them (checked against the reference's cell state), and
 * the gradient from them is the gradient that recomputes them. */
static void test_saved_gates(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const lstm_case *c = &cases[i];
        lstm_data d = make_case(c, 100 * i + 5);
        pl_attrs at = pl_kc_defaults();
        pl_tensor out_t[3];
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL, &at, d.n_in, d.in_t, 3, out_t));
        CU_ASSERT_EQUAL(out_t[2].dims[1], 4 * c->h);
        float *out[3];
        pl_kc_run_all_threads(&cell_fns, PL_OP_LSTM_CELL, &at, d.n_in, d.in_t, d.in, 3, out_t,
                              out, "lstm_cell with gates");
        /* c' = f * c + i * g from the kept gates */
        const float *kept = out[2], *c_prev = d.n_in == 5 ? d.in[4] : NULL;
        double worst = 0;
        for (int64_t r = 0; r < c->n; r++)
            for (int64_t j = 0; j < c->h; j++) {
                const float *row = kept + r * 4 * c->h;
                double cell = (double)row[j] * row[2 * c->h + j] +
                              (c_prev ? (double)row[c->h + j] * c_prev[r * c->h + j] : 0.0);
                double error = fabs(cell - out[1][r * c->h + j]);
                worst = error > worst ? error : worst;
            }
        expect_close("kept gates", c, worst, 1e-5);

        int n_in = d.n_in + 2, n_out = d.n_in - 1;
        pl_tensor g_in[8] = {d.out_t[0], d.out_t[1], d.in_t[0], d.in_t[1], d.in_t[2],
                             d.in_t[3], d.in_t[4]};
        void *g[8] = {d.dh_next, d.dc_next, d.in[0], d.in[1], d.in[2], d.in[3], d.in[4]};
        g_in[n_in] = out_t[2];
        g[n_in] = out[2];
        pl_tensor g_out[4], s_out[4];
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL_GRAD, &at, n_in, g_in, n_out, g_out));
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL_GRAD, &at, n_in + 1, g_in, n_out, s_out));
        float *recomputed[4], *saved[4];
        pl_kc_run_all_threads(&grad_fns, PL_OP_LSTM_CELL_GRAD, &at, n_in, g_in, g, n_out, g_out,
                              recomputed, "lstm_cell_grad");
        pl_kc_run_all_threads(&grad_fns, PL_OP_LSTM_CELL_GRAD, &at, n_in + 1, g_in, g, n_out,
                              s_out, saved, "lstm_cell_grad with gates");
        for (int o = 0; o < n_out; o++) {
            int64_t n = pl_tensor_elements(&g_out[o]);
            expect_close("gradient from kept gates", c,
                         pl_kc_max_rel_error(saved[o], recomputed[o], n, 1e-2), 1e-5);
            free(recomputed[o]);
            free(saved[o]);
        }
        for (int k = 0; k < 3; k++)
            free(out[k]);
        free_case(&d);
    }
}

/* ---- the projected form ---------------------------------------------------------------- */

/* lstm_cell's projected inputs gx [, w_hh, h, c] for the step of a case's x, w, b [, h, c]:
 * gx = x.w[:E] + b (in double, rounded) and w_hh = w[E:], so that the reference's results
 * are the projected cell's. */
typedef struct projected_data {
    int n_in;
    pl_tensor in_t[4];
    void *in[4]; /* gx and w_hh its own; h and c the case's */
} projected_data;

static projected_data make_projected(const lstm_case *c, const lstm_data *d)
{
    int64_t n = c->n, e = c->e, h = c->h, cols = 4 * h;
    const float *x = d->in[0], *w = d->in[1], *b = d->in[2];
    projected_data p = {.n_in = c->state ? 4 : 1};
    char dims[64];
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)n, (long long)cols);
    p.in_t[0] = pl_kc_tensor(dims, PL_F32, true);
    snprintf(dims, sizeof dims, "%lld,%lld", (long long)h, (long long)cols);
    p.in_t[1] = pl_kc_tensor(dims, PL_F32, false);
    p.in_t[2] = d->in_t[3];
    p.in_t[3] = d->in_t[4];
    float *gx = pl_kc_floats(n * cols), *w_hh = pl_kc_floats(h * cols);
    for (int64_t row = 0; row < n; row++)
        for (int64_t k = 0; k < cols; k++) {
            double z = b[k];
            for (int64_t a = 0; a < e; a++)
                z += (double)x[row * e + a] * w[a * cols + k];
            gx[row * cols + k] = (float)z;
        }
    memcpy(w_hh, w + e * cols, (size_t)(h * cols) * sizeof(float));
    p.in[0] = gx;
    p.in[1] = w_hh;
    p.in[2] = d->in[3];
    p.in[3] = d->in[4];
    return p;
}

static void free_projected(projected_data *p)
{
    free(p->in[0]);
    free(p->in[1]);
}

static void test_projected_forward(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const lstm_case *c = &cases[i];
        lstm_data d = make_case(c, 100 * i);
        lstm_reference r = reference(c, &d);
        projected_data p = make_projected(c, &d);
        pl_attrs at = pl_kc_defaults();
        pl_tensor out_t[2];
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL, &at, p.n_in, p.in_t, 2, out_t));
        float *out[2];
        pl_kc_run_all_threads(&cell_fns, PL_OP_LSTM_CELL, &at, p.n_in, p.in_t, p.in, 2, out_t,
                              out, "projected lstm_cell");
        int64_t n = c->n * c->h;
        expect_close("projected h'", c, pl_kc_max_rel_error_double(out[0], r.h_next, n, 1e-2),
                     1e-4);
        expect_close("projected c'", c, pl_kc_max_rel_error_double(out[1], r.c_next, n, 1e-2),
                     1e-4);
        free(out[0]);
        free(out[1]);
        free_projected(&p);
        free_reference(&r);
        free_case(&d);
    }
}

/* dw_hh = h^T . dz, as autodiff's products make it over time steps. */
static float *recurrent_weight_grad(const lstm_case *c, const float *h_prev, const float *dz)
{
    int64_t cols = 4 * c->h;
    float *dw = pl_kc_floats(c->h * cols);
    for (int64_t a = 0; a < c->h; a++)
        for (int64_t k = 0; k < cols; k++) {
            double sum = 0;
            for (int64_t row = 0; row < c->n; row++)
                sum += (double)h_prev[row * c->h + a] * dz[row * cols + k];
            dw[a * cols + k] = (float)sum;
        }
    return dw;
}

/* The gradient's outputs dz [, dh, dc] as the gradients of gx [, w_hh, h, c] against
 * numerical differentiation of the projected cell. */
static void check_projected_numeric(const lstm_case *c, lstm_data *d, projected_data *p,
                                    float *const *got)
{
    static const char *const names[4] = {"numeric dgx", "numeric dw_hh", "numeric dh",
                                         "numeric dc"};
    float *dw = c->state ? recurrent_weight_grad(c, d->in[3], got[0]) : NULL;
    const float *grad[4] = {got[0], dw, c->state ? got[1] : NULL, c->state ? got[2] : NULL};
    for (int o = 0; o < p->n_in; o++) {
        float *numeric = numeric_grad(d, p->n_in, p->in_t, p->in, o);
        int64_t n = pl_tensor_elements(&p->in_t[o]);
        expect_close(names[o], c, pl_kc_max_rel_error(grad[o], numeric, n, 1e-2), 2e-2);
        free(numeric);
    }
    free(dw);
}

/* dh', dc', gx [, w_hh, h, c] [, gates] -> dz [, dh, dc], with the forward's kept gates
 * and recomputing them: against the reference, whose step is the same (dz is gx's
 * gradient; dw_hh = h^T.dz is the reference's w[E:] gradient), and numerically. */
static void test_projected_grad(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const lstm_case *c = &cases[i];
        lstm_data d = make_case(c, 100 * i + 3);
        lstm_reference r = reference(c, &d);
        projected_data p = make_projected(c, &d);
        pl_attrs at = pl_kc_defaults();
        pl_tensor out_t[3];
        float *fwd[3];
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL, &at, p.n_in, p.in_t, 3, out_t));
        pl_kc_run_all_threads(&cell_fns, PL_OP_LSTM_CELL, &at, p.n_in, p.in_t, p.in, 3, out_t,
                              fwd, "projected lstm_cell with gates");
        int n_in = p.n_in + 2, n_out = c->state ? 3 : 1;
        pl_tensor g_in[7] = {out_t[0], out_t[1], p.in_t[0], p.in_t[1], p.in_t[2], p.in_t[3]};
        void *g[7] = {d.dh_next, d.dc_next, p.in[0], p.in[1], p.in[2], p.in[3]};
        g_in[n_in] = out_t[2];
        g[n_in] = fwd[2];
        for (int kept = 0; kept < 2; kept++) {
            pl_tensor g_out[3];
            CU_ASSERT_FATAL(pl_kc_infer(PL_OP_LSTM_CELL_GRAD, &at, n_in + kept, g_in, n_out,
                                        g_out));
            float *got[3];
            pl_kc_run_all_threads(&grad_fns, PL_OP_LSTM_CELL_GRAD, &at, n_in + kept, g_in, g,
                                  n_out, g_out, got, "projected lstm_cell_grad");
            int64_t n = c->n * c->h;
            expect_close("projected dz", c,
                         pl_kc_max_rel_error_double(got[0], r.dz, 4 * n, 1e-2), 5e-4);
            if (c->state) {
                expect_close("projected dh", c,
                             pl_kc_max_rel_error_double(got[1], r.grad[3], n, 1e-2), 5e-4);
                expect_close("projected dc", c,
                             pl_kc_max_rel_error_double(got[2], r.grad[4], n, 1e-2), 5e-4);
                float *dw = recurrent_weight_grad(c, d.in[3], got[0]);
                expect_close("projected dw_hh", c,
                             pl_kc_max_rel_error_double(dw, r.grad[1] + c->e * 4 * c->h,
                                                        4 * c->h * c->h, 1e-2), 5e-4);
                free(dw);
            }
            if (c->numeric && !kept)
                check_projected_numeric(c, &d, &p, got);
            for (int o = 0; o < n_out; o++)
                free(got[o]);
        }
        for (int k = 0; k < 3; k++)
            free(fwd[k]);
        free_projected(&p);
        free_reference(&r);
        free_case(&d);
    }
}

/* A check of the reference itself: with w = 0 and b = 0 every gate is sigmoid(0) = 1/2
 * or tanh(0) = 0, so c' = c/2 and h' = tanh(c/2)/2. */
static void test_known_values(void)
{
    lstm_case c = {2, 2, 3, true, false};
    lstm_data d = make_case(&c, 7);
    memset(d.in[1], 0, (size_t)pl_tensor_elements(&d.in_t[1]) * sizeof(float));
    memset(d.in[2], 0, (size_t)pl_tensor_elements(&d.in_t[2]) * sizeof(float));
    float h_next[6], c_next[6];
    void *out[2] = {h_next, c_next};
    pl_attrs at = pl_kc_defaults();
    pl_kc_run(&cell_fns, PL_OP_LSTM_CELL, &at, 5, d.in_t, d.in, 2, d.out_t, out,
              2, NULL);
    lstm_reference r = reference(&c, &d);
    for (int k = 0; k < 6; k++) {
        float want_c = ((const float *)d.in[4])[k] / 2, want_h = tanhf(want_c) / 2;
        CU_ASSERT_DOUBLE_EQUAL(c_next[k], want_c, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(h_next[k], want_h, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(r.c_next[k], want_c, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(r.h_next[k], want_h, 1e-6);
    }
    free_reference(&r);
    free_case(&d);
}

void pl_register_kernels_lstm_tests(void)
{
    static const pl_test_case tests[] = {
        {"known values", test_known_values},
        {"lstm_cell", test_forward},
        {"lstm_cell_grad", test_grad},
        {"the gates kept by the forward pass", test_saved_gates},
        {"projected lstm_cell", test_projected_forward},
        {"projected lstm_cell_grad", test_projected_grad},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-lstm", tests);
}
