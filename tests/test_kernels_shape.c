/* Data-movement kernels (concat, split, slice, slice_grad, copy, transpose, embedding)
 * against index-by-index reference implementations, at several thread counts, including
 * more threads than elements; slice_grad also against numerical differentiation of
 * slice. Results must match bitwise: these kernels only move bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

static const pl_kernel_fns concat_fns = {pl_kernel_concat, NULL, NULL};
static const pl_kernel_fns split_fns = {pl_kernel_split, NULL, NULL};
static const pl_kernel_fns slice_fns = {pl_kernel_slice, NULL, NULL};
static const pl_kernel_fns slice_grad_fns = {pl_kernel_slice_grad, NULL, NULL};
static const pl_kernel_fns copy_fns = {pl_kernel_copy, NULL, NULL};
static const pl_kernel_fns transpose_fns = {pl_kernel_transpose, NULL, NULL};
static const pl_kernel_fns embedding_fns = {pl_kernel_embedding, NULL, NULL};

/* Row-major multi-index of flat position i in t. */
static void coords_of(const pl_tensor *t, int64_t i, int64_t *coords)
{
    for (int a = t->rank - 1; a >= 0; a--) {
        coords[a] = i % t->dims[a];
        i /= t->dims[a];
    }
}

static int64_t flat_of(const pl_tensor *t, const int64_t *coords)
{
    int64_t i = 0;
    for (int a = 0; a < t->rank; a++)
        i = i * t->dims[a] + coords[a];
    return i;
}

/* NaN-filled room for t (4-byte elements): kernels must write every element. */
static void *alloc_like(const pl_tensor *t)
{
    return pl_kc_nans(pl_tensor_elements(t));
}

/* Runs the kernel at every thread count and compares each output bitwise with `want`. */
static void check_outputs(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                          int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                          const pl_tensor *out_t, void *const *want)
{
    for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
        void *got[16];
        for (int o = 0; o < n_out; o++)
            got[o] = alloc_like(&out_t[o]);
        pl_kc_run(fns, kind, attrs, n_in, in_t, in, n_out, out_t, got, pl_kc_thread_counts[t],
                  NULL);
        for (int o = 0; o < n_out; o++) {
            size_t bytes = (size_t)pl_tensor_elements(&out_t[o]) * 4;
            bool same = memcmp(got[o], want[o], bytes) == 0;
            if (!same)
                fprintf(stderr, "\n    %s: output %d differs at nth=%d\n",
                        pl_op_info_of(kind)->name, o, pl_kc_thread_counts[t]);
            CU_ASSERT_TRUE(same);
            free(got[o]);
        }
    }
}

/* ---- concat ---------------------------------------------------------------------- */

static void reference_concat(int n_in, const pl_tensor *in_t, void *const *in, int64_t axis,
                             const pl_tensor *y_t, uint32_t *y)
{
    int64_t c[PL_MAX_RANK];
    for (int64_t i = 0; i < pl_tensor_elements(y_t); i++) {
        coords_of(y_t, i, c);
        int k = 0;
        while (c[axis] >= in_t[k].dims[axis])
            c[axis] -= in_t[k++].dims[axis];
        y[i] = ((const uint32_t *)in[k])[flat_of(&in_t[k], c)];
    }
}

static void check_concat(int n_in, const char *const *shapes, pl_dtype dtype, bool batched,
                         int64_t axis)
{
    pl_tensor in_t[8], y_t;
    void *in[8];
    for (int i = 0; i < n_in; i++) {
        in_t[i] = pl_kc_tensor(shapes[i], dtype, batched);
        in[i] = pl_kc_random(&in_t[i], 100 + (uint64_t)i, -1000, 1000);
    }
    pl_attrs at = pl_kc_defaults();
    at.axis = axis;
    at.given = PL_ATTR_BIT(PL_ATTR_AXIS);
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_CONCAT, &at, n_in, in_t, 1, &y_t));
    uint32_t *want = alloc_like(&y_t);
    reference_concat(n_in, in_t, in, axis < 0 ? axis + y_t.rank : axis, &y_t, want);
    void *wants[1] = {want};
    check_outputs(&concat_fns, PL_OP_CONCAT, &at, n_in, in_t, in, 1, &y_t, wants);
    free(want);
    for (int i = 0; i < n_in; i++)
        free(in[i]);
}

static void test_concat(void)
{
    const char *channels[] = {"2,3,4,5", "2,1,4,5", "2,5,4,5"};
    check_concat(3, channels, PL_F32, true, 1);
    const char *last[] = {"3,2,1", "3,2,4", "3,2,2"};
    check_concat(3, last, PL_F32, true, -1);
    const char *rows[] = {"1,3", "4,3"}; /* unbatched: axis 0 is allowed */
    check_concat(2, rows, PL_F32, false, 0);
    const char *ids[] = {"2,3", "2,7"};
    check_concat(2, ids, PL_I32, true, 1);
    const char *one[] = {"5,3"};
    check_concat(1, one, PL_F32, true, 1);
}

/* ---- split ----------------------------------------------------------------------- */

static void check_split(const char *shape, int64_t axis, int n_out, const int64_t *sizes)
{
    pl_tensor x_t = pl_kc_tensor(shape, PL_F32, true), y_t[8];
    void *x = pl_kc_random(&x_t, 7, -1, 1);
    pl_attrs at = pl_kc_defaults();
    at.axis = axis;
    at.given = PL_ATTR_BIT(PL_ATTR_AXIS);
    if (sizes) {
        at.sizes = (pl_int_list){n_out, sizes};
        at.given |= PL_ATTR_BIT(PL_ATTR_SIZES);
    }
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_SPLIT, &at, 1, &x_t, n_out, y_t));
    /* The reference: concatenating the expected pieces gives x back, so cut x by index. */
    int64_t a = axis < 0 ? axis + x_t.rank : axis;
    void *want[8];
    int64_t c[PL_MAX_RANK], offset = 0;
    for (int o = 0; o < n_out; o++) {
        uint32_t *w = alloc_like(&y_t[o]);
        for (int64_t i = 0; i < pl_tensor_elements(&y_t[o]); i++) {
            coords_of(&y_t[o], i, c);
            c[a] += offset;
            w[i] = ((const uint32_t *)x)[flat_of(&x_t, c)];
        }
        offset += y_t[o].dims[a];
        want[o] = w;
    }
    void *in[1] = {x};
    check_outputs(&split_fns, PL_OP_SPLIT, &at, 1, &x_t, in, n_out, y_t, want);
    for (int o = 0; o < n_out; o++)
        free(want[o]);
    free(x);
}

static void test_split(void)
{
    check_split("2,6,3", 1, 3, NULL);
    static const int64_t sizes[] = {1, 4, 2};
    check_split("3,2,7", -1, 3, sizes);
    static const int64_t two[] = {5, 1};
    check_split("2,6", 1, 2, two);
    check_split("4,5", 1, 1, NULL);
}

/* ---- slice and slice_grad ---------------------------------------------------------- */

static pl_attrs slice_attrs(int64_t axis, int64_t start, int64_t end)
{
    pl_attrs at = pl_kc_defaults();
    at.axis = axis;
    at.start = start;
    at.end = end;
    at.given = PL_ATTR_BIT(PL_ATTR_AXIS) | PL_ATTR_BIT(PL_ATTR_START) | PL_ATTR_BIT(PL_ATTR_END);
    return at;
}

static void check_slice(const char *shape, int64_t axis, int64_t start, int64_t end)
{
    pl_tensor x_t = pl_kc_tensor(shape, PL_F32, true), y_t;
    float *x = pl_kc_random(&x_t, 11, -1, 1);
    pl_attrs at = slice_attrs(axis, start, end);
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_SLICE, &at, 1, &x_t, 1, &y_t));
    int64_t a = axis < 0 ? axis + x_t.rank : axis, c[PL_MAX_RANK];
    float *want = alloc_like(&y_t);
    for (int64_t i = 0; i < pl_tensor_elements(&y_t); i++) {
        coords_of(&y_t, i, c);
        c[a] += start;
        want[i] = x[flat_of(&x_t, c)];
    }
    void *in[1] = {x}, *wants[1] = {want};
    check_outputs(&slice_fns, PL_OP_SLICE, &at, 1, &x_t, in, 1, &y_t, wants);
    free(want);
    free(x);
}

static void test_slice(void)
{
    check_slice("2,8", 1, 0, 1);
    check_slice("2,8,3", 1, 3, 7);
    check_slice("3,4,5", -1, 2, 5);
    check_slice("1,5,1,3", 2, 0, 1);
}

/* slice_grad against an index reference and against the numerical gradient of slice. */
static void check_slice_grad(const char *shape, int64_t axis, int64_t start, int64_t end)
{
    pl_tensor x_t = pl_kc_tensor(shape, PL_F32, true), y_t;
    pl_attrs at = slice_attrs(axis, start, end);
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_SLICE, &at, 1, &x_t, 1, &y_t));
    float *x = pl_kc_random(&x_t, 3, -1, 1), *dy = pl_kc_random(&y_t, 4, -1, 1);
    int64_t a = axis < 0 ? axis + x_t.rank : axis, c[PL_MAX_RANK];
    int64_t n = pl_tensor_elements(&x_t);
    float *want = alloc_like(&x_t);
    for (int64_t i = 0; i < n; i++) {
        coords_of(&x_t, i, c);
        bool inside = c[a] >= start && c[a] < end;
        c[a] -= start;
        want[i] = inside ? dy[flat_of(&y_t, c)] : 0.0f;
    }
    pl_tensor g_in[2] = {y_t, x_t};
    void *g[2] = {dy, x}, *wants[1] = {want};
    check_outputs(&slice_grad_fns, PL_OP_SLICE_GRAD, &at, 2, g_in, g, 1, &x_t, wants);

    float *numeric = malloc((size_t)n * sizeof(float));
    void *in[1] = {x};
    pl_kc_numeric_grad(&slice_fns, PL_OP_SLICE, &at, 1, &x_t, in, 1, &y_t, 0, dy, 0, 1e-2f,
                       numeric);
    CU_ASSERT_TRUE(pl_kc_max_rel_error(want, numeric, n, 1e-2) < 2e-2);
    free(numeric);
    free(want);
    free(x);
    free(dy);
}

static void test_slice_grad(void)
{
    check_slice_grad("2,6", 1, 2, 4);
    check_slice_grad("2,5,3", 1, 0, 5);
    check_slice_grad("3,4,5", -1, 4, 5);
    check_slice_grad("2,3,4", 2, 0, 1);
}

/* ---- copy ------------------------------------------------------------------------ */

static void test_copy(void)
{
    static const int64_t shape[] = {3, 5};
    pl_attrs at = pl_kc_defaults();
    at.shape = (pl_int_list){2, shape};
    at.given = PL_ATTR_BIT(PL_ATTR_SHAPE);
    pl_tensor x_t = pl_kc_tensor("2,5,3", PL_F32, true), y_t;
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_RESHAPE, &at, 1, &x_t, 1, &y_t));
    CU_ASSERT_EQUAL(y_t.rank, 3);
    void *x = pl_kc_random(&x_t, 5, -1, 1);
    void *in[1] = {x}, *wants[1] = {x};
    check_outputs(&copy_fns, PL_OP_RESHAPE, &at, 1, &x_t, in, 1, &y_t, wants);
    free(x);

    pl_tensor ids_t = pl_kc_tensor("2,2", PL_I32, true), flat_t;
    pl_attrs none = pl_kc_defaults();
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_FLATTEN, &none, 1, &ids_t, 1, &flat_t));
    void *ids = pl_kc_random(&ids_t, 6, -50, 50);
    void *id_in[1] = {ids}, *id_want[1] = {ids};
    check_outputs(&copy_fns, PL_OP_FLATTEN, &none, 1, &ids_t, id_in, 1, &flat_t, id_want);
    free(ids);
}

/* ---- transpose --------------------------------------------------------------------- */

static void check_transpose(const char *shape, bool batched, int rank, const int64_t *perm)
{
    pl_tensor x_t = pl_kc_tensor(shape, PL_F32, batched), y_t;
    pl_attrs at = pl_kc_defaults();
    at.perm = (pl_int_list){rank, perm};
    at.given = PL_ATTR_BIT(PL_ATTR_PERM);
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_TRANSPOSE, &at, 1, &x_t, 1, &y_t));
    float *x = pl_kc_random(&x_t, 9, -1, 1), *want = alloc_like(&y_t);
    int64_t cy[PL_MAX_RANK], cx[PL_MAX_RANK];
    for (int64_t i = 0; i < pl_tensor_elements(&y_t); i++) {
        coords_of(&y_t, i, cy);
        for (int a = 0; a < rank; a++)
            cx[perm[a]] = cy[a];
        want[i] = x[flat_of(&x_t, cx)];
    }
    void *in[1] = {x}, *wants[1] = {want};
    check_outputs(&transpose_fns, PL_OP_TRANSPOSE, &at, 1, &x_t, in, 1, &y_t, wants);
    free(want);
    free(x);
}

static void test_transpose(void)
{
    static const int64_t heads[] = {0, 2, 1, 3};
    check_transpose("2,3,4,5", true, 4, heads);
    static const int64_t rotate[] = {0, 3, 1, 2};
    check_transpose("2,3,4,5", true, 4, rotate);
    static const int64_t swap[] = {1, 0};
    check_transpose("3,7", false, 2, swap);
    static const int64_t cycle[] = {2, 0, 1};
    check_transpose("3,1,5", false, 3, cycle);
    static const int64_t same[] = {0, 1, 2};
    check_transpose("2,3,2", true, 3, same);
    static const int64_t one[] = {0};
    check_transpose("5", true, 1, one);
    static const int64_t six[] = {0, 5, 2, 4, 1, 3};
    check_transpose("2,1,3,2,3,2", true, 6, six);
}

/* ---- embedding --------------------------------------------------------------------- */

static void check_embedding(const char *table_shape, const char *ids_shape)
{
    pl_tensor in_t[2] = {pl_kc_tensor(table_shape, PL_F32, false),
                         pl_kc_tensor(ids_shape, PL_I32, true)};
    pl_tensor y_t;
    pl_attrs none = pl_kc_defaults();
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_EMBEDDING, &none, 2, in_t, 1, &y_t));
    int64_t vocab = in_t[0].dims[0], width = in_t[0].dims[1];
    float *table = pl_kc_random(&in_t[0], 1, -1, 1);
    /* ids from -2 to vocab + 1: some out of range on both sides */
    int32_t *ids = pl_kc_random(&in_t[1], 2, -2, (double)vocab + 2);
    int64_t n_ids = pl_tensor_elements(&in_t[1]);
    float *want = alloc_like(&y_t);
    for (int64_t i = 0; i < n_ids; i++)
        for (int64_t d = 0; d < width; d++)
            want[i * width + d] =
                ids[i] >= 0 && ids[i] < vocab ? table[ids[i] * width + d] : 0.0f;
    void *in[2] = {table, ids}, *wants[1] = {want};
    check_outputs(&embedding_fns, PL_OP_EMBEDDING, &none, 2, in_t, in, 1, &y_t, wants);
    free(want);
    free(table);
    free(ids);
}

static void test_embedding(void)
{
    check_embedding("7,3", "4,5");
    check_embedding("5,1", "2");
    check_embedding("3,4", "2,3,2");
}

/* The reference helpers themselves: a wrong expectation must fail the comparison. */
static void test_detects_difference(void)
{
    pl_tensor x_t = pl_kc_tensor("2,4", PL_F32, true), y_t;
    pl_attrs at = slice_attrs(1, 1, 3);
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_SLICE, &at, 1, &x_t, 1, &y_t));
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[4];
    void *in[1] = {x}, *out[1] = {y};
    pl_kc_run(&slice_fns, PL_OP_SLICE, &at, 1, &x_t, in, 1, &y_t, out, 2, NULL);
    const float want[4] = {1, 2, 5, 6}, wrong[4] = {1, 2, 5, 7};
    CU_ASSERT_EQUAL(memcmp(y, want, sizeof y), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(y, wrong, sizeof y), 0);
}

void pl_register_kernels_shape_tests(void)
{
    static const pl_test_case cases[] = {
        {"concat", test_concat},
        {"split", test_split},
        {"slice", test_slice},
        {"slice_grad", test_slice_grad},
        {"copy", test_copy},
        {"transpose", test_transpose},
        {"embedding", test_embedding},
        {"detects a difference", test_detects_difference},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-shape", cases);
}
