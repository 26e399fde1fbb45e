/* Kernel tests: matmul and its two gradients against a double-precision reference (with
 * transposes, broadcast leading axes and shapes large enough to be cut into tiles), the
 * gradients also against central differences, and every result bitwise the same for
 * 1, 3 and 7 threads. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns matmul_fns = {pl_kernel_matmul, NULL, NULL};
static const pl_kernel_fns grad_a_fns = {pl_kernel_matmul_grad_a, NULL, NULL};
static const pl_kernel_fns grad_b_fns = {pl_kernel_matmul_grad_b, NULL, NULL};

/* The floor against the double reference: it keeps float rounding of long sums near zero
 * from counting as errors. */
#define REF_FLOOR 0.1

typedef struct mm_case {
    const char *a, *b;
    bool ta, tb;
} mm_case;

/* Everything one case needs: descriptors, data and the double reference. */
typedef struct mm_data {
    pl_attrs attrs;
    pl_tensor t[3]; /* dy (shaped like y), a, b */
    pl_tensor y;
    float *dy, *a, *b;
    int64_t ny, na, nb;
    double *ref_y, *ref_da, *ref_db;
} mm_data;

/* The matrix index of broadcast operand t for the output's leading index `lead`: the
 * broadcast index over the axes before the last two. */
static int64_t operand_matrix(const pl_tensor *t, const pl_tensor *y, int64_t lead)
{
    pl_tensor t_lead = *t, y_lead = *y;
    t_lead.rank -= 2;
    y_lead.rank -= 2;
    return pl_kc_broadcast_index(&y_lead, &t_lead, lead);
}

/* y = op(a) op(b) and, for the upstream dy, da and db, by the definition in double. */
static void reference(mm_data *d)
{
    const pl_tensor *a = &d->t[1], *b = &d->t[2], *y = &d->y;
    int64_t m = y->dims[y->rank - 2], n = y->dims[y->rank - 1];
    int64_t k = d->attrs.transpose_a ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    int64_t a_cols = a->dims[a->rank - 1], b_cols = b->dims[b->rank - 1];
    int64_t leads = d->ny / (m * n);
    d->ref_y = calloc((size_t)d->ny, sizeof(double));
    d->ref_da = calloc((size_t)d->na, sizeof(double));
    d->ref_db = calloc((size_t)d->nb, sizeof(double));
    for (int64_t l = 0; l < leads; l++) {
        int64_t a0 = operand_matrix(a, y, l) * m * k, b0 = operand_matrix(b, y, l) * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t yi = (l * m + i) * n + j;
                for (int64_t p = 0; p < k; p++) {
                    int64_t ai = a0 + (d->attrs.transpose_a ? p * a_cols + i : i * a_cols + p);
                    int64_t bi = b0 + (d->attrs.transpose_b ? j * b_cols + p : p * b_cols + j);
                    d->ref_y[yi] += (double)d->a[ai] * d->b[bi];
                    d->ref_da[ai] += (double)d->dy[yi] * d->b[bi];
                    d->ref_db[bi] += (double)d->dy[yi] * d->a[ai];
                }
            }
    }
}

static bool mm_setup(const mm_case *c, mm_data *d)
{
    memset(d, 0, sizeof *d);
    pl_attrs_default(&d->attrs);
    d->attrs.transpose_a = c->ta;
    d->attrs.transpose_b = c->tb;
    d->t[1] = pl_kc_tensor(c->a, PL_F32, false);
    d->t[2] = pl_kc_tensor(c->b, PL_F32, false);
    if (!pl_kc_infer(PL_OP_MATMUL, &d->attrs, 2, &d->t[1], 1, &d->y))
        return false;
    d->t[0] = d->y;
    d->ny = pl_tensor_elements(&d->y);
    d->na = pl_tensor_elements(&d->t[1]);
    d->nb = pl_tensor_elements(&d->t[2]);
    d->dy = pl_kc_random(&d->t[0], 11, -1, 1);
    d->a = pl_kc_random(&d->t[1], 12, -1, 1);
    d->b = pl_kc_random(&d->t[2], 13, -1, 1);
    reference(d);
    return true;
}

static void mm_free(mm_data *d)
{
    free(d->dy);
    free(d->a);
    free(d->b);
    free(d->ref_y);
    free(d->ref_da);
    free(d->ref_db);
}

/* Runs `fns` (output shaped like input `like`) at every thread count: the first result
 * against `want`, the others bitwise against the first. */
static void check_kernel(const mm_data *d, const pl_kernel_fns *fns, pl_op_kind kind,
                         const char *what, const mm_case *c)
{
    bool forward = kind == PL_OP_MATMUL;
    const pl_tensor *in_t = forward ? &d->t[1] : d->t;
    void *in_fwd[] = {d->a, d->b}, *in_grad[] = {d->dy, d->a, d->b};
    void *const *in = forward ? in_fwd : in_grad;
    int n_in = forward ? 2 : 3;
    pl_tensor out_t;
    CU_ASSERT_FATAL(pl_kc_infer(kind, &d->attrs, n_in, in_t, 1, &out_t));
    int64_t n = pl_tensor_elements(&out_t);
    const double *want = kind == PL_OP_MATMUL ? d->ref_y
                         : kind == PL_OP_MATMUL_GRAD_A ? d->ref_da : d->ref_db;
    float *first = malloc((size_t)n * sizeof *first), *got = malloc((size_t)n * sizeof *got);
    for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
        float *out = t == 0 ? first : got;
        memset(out, 0xff, (size_t)n * sizeof *out); /* NaN: every element must be written */
        void *outs[] = {out};
        pl_kc_run(fns, kind, &d->attrs, n_in, in_t, in, 1, &out_t, outs, pl_kc_thread_counts[t],
                  NULL);
        if (t == 0) {
            double e = pl_kc_max_rel_error_double(out, want, n, REF_FLOOR);
            if (e >= 1e-4)
                fprintf(stderr, "\n    %s a=[%s]%s b=[%s]%s: error %g\n", what, c->a,
                        c->ta ? "^T" : "", c->b, c->tb ? "^T" : "", e);
            CU_ASSERT(e < 1e-4);
        } else {
            CU_ASSERT_EQUAL(memcmp(out, first, (size_t)n * sizeof *out), 0);
        }
    }
    free(first);
    free(got);
}

static const mm_case shape_cases[] = {
    {"3,5", "5,4", false, false},
    {"5,3", "5,4", true, false},
    {"3,5", "4,5", false, true},
    {"5,3", "4,5", true, true},
    {"2,3,4,5", "2,3,5,6", false, false}, /* attention scores: [B,H,S,D] . [B,H,D,S] */
    {"2,3,4,5", "2,3,6,5", false, true},
    {"2,1,4,5", "3,5,6", false, false},   /* both broadcast */
    {"2,1,5,4", "1,3,6,5", true, true},
    {"4,5", "2,3,5,6", false, false},     /* one a for every b */
    {"5,4", "2,3,6,5", true, true},
    {"2,7,5", "5,3", false, false},       /* folded: one GEMM over 14 rows */
    {"2,7,5", "1,5,3", false, false},
    {"2,7,5", "3,5", false, true},
    {"2,5,7", "5,3", true, false},        /* a transposed: not folded */
    {"3,1,2,5", "4,5,3", false, false},   /* rank 4 against rank 3 */
    {"1,3", "3,1", false, false},
    {0},
};

/* Large enough to be cut into row tiles, column tiles, and tiles of a reduction (over 1M
 * multiply-adds, rows or columns well over 128). */
static const mm_case tiled_cases[] = {
    {"600,100", "100,40", false, false},
    {"100,600", "40,100", true, true},
    {"40,100", "100,600", false, false},
    {"130,300", "300,36", false, false},  /* a last tile of 2 rows */
    {"300,800", "800,8", false, false},   /* a long inner dimension: OpenBLAS splits it, so
                                             tiles that followed nth would change bits */
    {"3,200,100", "100,60", false, false},
    {"3,200,100", "60,100", false, true},
    {"400,60", "3,60,50", false, false},  /* da sums 3 products per tile */
    {"3,300,60", "3,60,50", false, false},
    {0},
};

static void set_single_thread_blas(void)
{
    openblas_set_num_threads(1); /* as the executor runs it */
}

static void run_cases(const mm_case *cases, pl_op_kind kind)
{
    set_single_thread_blas();
    for (const mm_case *c = cases; c->a; c++) {
        mm_data d;
        CU_ASSERT_FATAL(mm_setup(c, &d));
        if (kind == PL_OP_MATMUL)
            check_kernel(&d, &matmul_fns, kind, "matmul", c);
        else if (kind == PL_OP_MATMUL_GRAD_A)
            check_kernel(&d, &grad_a_fns, kind, "matmul_grad_a", c);
        else
            check_kernel(&d, &grad_b_fns, kind, "matmul_grad_b", c);
        mm_free(&d);
    }
}

static void test_matmul(void)
{
    run_cases(shape_cases, PL_OP_MATMUL);
    run_cases(tiled_cases, PL_OP_MATMUL);
}

static void test_grad_a(void)
{
    run_cases(shape_cases, PL_OP_MATMUL_GRAD_A);
    run_cases(tiled_cases, PL_OP_MATMUL_GRAD_A);
}

static void test_grad_b(void)
{
    run_cases(shape_cases, PL_OP_MATMUL_GRAD_B);
    run_cases(tiled_cases, PL_OP_MATMUL_GRAD_B);
}

/* Both gradient kernels against central differences of the forward kernel. */
static void test_numeric_gradients(void)
{
    set_single_thread_blas();
    for (const mm_case *c = shape_cases; c->a; c++) {
        mm_data d;
        CU_ASSERT_FATAL(mm_setup(c, &d));
        void *in[] = {d.a, d.b}, *grad_in[] = {d.dy, d.a, d.b};
        for (int wrt = 0; wrt < 2; wrt++) {
            int64_t n = wrt == 0 ? d.na : d.nb;
            float *numeric = malloc((size_t)n * sizeof *numeric);
            float *got = malloc((size_t)n * sizeof *got);
            pl_kc_numeric_grad(&matmul_fns, PL_OP_MATMUL, &d.attrs, 2, &d.t[1], in, 1, &d.y,
                               0, d.dy, wrt, 1e-2f, numeric);
            void *out[] = {got};
            pl_kc_run(wrt == 0 ? &grad_a_fns : &grad_b_fns,
                      wrt == 0 ? PL_OP_MATMUL_GRAD_A : PL_OP_MATMUL_GRAD_B, &d.attrs, 3, d.t,
                      grad_in, 1, &d.t[1 + wrt], out, 2, NULL);
            CU_ASSERT(pl_kc_max_rel_error(got, numeric, n, 1e-2) < 2e-2);
            free(numeric);
            free(got);
        }
        mm_free(&d);
    }
}

/* The test of the tests: a wrong product must be caught. */
static void test_reference_catches_errors(void)
{
    set_single_thread_blas();
    mm_data d;
    const mm_case c = {"3,5", "5,4", false, false};
    CU_ASSERT_FATAL(mm_setup(&c, &d));
    float y[12];
    void *in[] = {d.a, d.b}, *out[] = {y};
    pl_kc_run(&matmul_fns, PL_OP_MATMUL, &d.attrs, 2, &d.t[1], in, 1, &d.y, out, 1, NULL);
    CU_ASSERT(pl_kc_max_rel_error_double(y, d.ref_y, 12, REF_FLOOR) < 1e-4);
    y[7] += 0.01f;
    CU_ASSERT(pl_kc_max_rel_error_double(y, d.ref_y, 12, REF_FLOOR) > 1e-3);
    mm_free(&d);
}

void pl_register_kernels_dense_tests(void)
{
    static const pl_test_case cases[] = {
        {"matmul", test_matmul},
        {"matmul_grad_a", test_grad_a},
        {"matmul_grad_b", test_grad_b},
        {"numeric gradients", test_numeric_gradients},
        {"reference catches errors", test_reference_catches_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-dense", cases);
}
