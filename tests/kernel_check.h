/* Helpers for kernel tests: tensors from shape strings, seeded random data, running a
 * kernel as the executor would (every thread's share, then finish), comparing results,
 * and numerical gradients by central differences. The pl_kc_run_fresh*,
 * pl_kc_run_all_threads and pl_kc_check_* helpers make CUnit assertions. */
#ifndef PLACER_TESTS_KERNEL_CHECK_H
#define PLACER_TESTS_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* The pl_kernel_fns of pl_kernel_<name> alone (no finish, no workspace). */
#define PL_KC_FNS(name) ((pl_kernel_fns){pl_kernel_##name, NULL, NULL})

/* The thread counts every kernel is run at (1, 3, 7): results must be bitwise equal. */
#define PL_KC_THREAD_COUNTS 3
extern const int pl_kc_thread_counts[PL_KC_THREAD_COUNTS];

/* The attributes pl_attrs_default gives. */
pl_attrs pl_kc_defaults(void);
/* Uninitialised room for n floats (at least one, so n = 0 needs no case). Free with free(). */
float *pl_kc_floats(int64_t n);
/* As pl_kc_floats, every bit set (NaN), so an element a kernel leaves unwritten shows. */
float *pl_kc_nans(int64_t n);

/* A descriptor from "4,3" ("" for a scalar), f32 unless dtype says otherwise. */
pl_tensor pl_kc_tensor(const char *dims, pl_dtype dtype, bool batched);
/* New buffer of the tensor's size, uniform in [lo, hi) from `seed` (f32) or integers in
 * [lo, hi) (i32). Free with free(). */
void *pl_kc_random(const pl_tensor *t, uint64_t seed, double lo, double hi);
/* Output descriptors from the op table's shape inference; false (and a message on
 * stderr) when inference fails. */
bool pl_kc_infer(pl_op_kind kind, const pl_attrs *attrs, int n_in, const pl_tensor *in_t,
                 int n_out, pl_tensor *out_t);
/* Runs the kernel with `nth` threads' shares called in turn (then finish), with a
 * workspace of the size it asks for. `step` may be NULL (training step 1, one
 * micro-batch). */
void pl_kc_run(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs, int n_in,
               const pl_tensor *in_t, void *const *in, int n_out, const pl_tensor *out_t,
               void *const *out, int nth, const pl_step_info *step);
/* Shapes n_out outputs by inference (a fatal assertion), gives each a new pl_kc_nans
 * buffer in out[] and runs pl_kc_run into them. Free the buffers with free(). */
void pl_kc_run_fresh_outputs(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                             int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                             pl_tensor *out_t, float **out, int nth, const pl_step_info *step);
/* pl_kc_run_fresh_outputs for a one-output kernel: returns the new buffer. */
float *pl_kc_run_fresh(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                       int n_in, const pl_tensor *in_t, void *const *in, pl_tensor *out_t,
                       int nth, const pl_step_info *step);
/* Runs into new pl_kc_nans buffers (shaped by out_t) at every pl_kc_thread_counts, asserting
 * each output of each later run bitwise equal to the first run's, which are returned in
 * first[] (free with free()). `what` names the kernel in a failure message. */
void pl_kc_run_all_threads(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                           int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                           const pl_tensor *out_t, float **first, const char *what);
/* Largest |a-b| / (|b| + floor) over n floats. */
double pl_kc_max_rel_error(const float *a, const float *b, int64_t n, double floor);
/* pl_kc_max_rel_error against a double reference rounded to float. */
double pl_kc_max_rel_error_double(const float *got, const double *want, int64_t n,
                                  double floor);
/* Flat index into t of element i of `out` when t broadcasts to out (aligned at the last
 * axis, size-1 and missing axes repeated). */
int64_t pl_kc_broadcast_index(const pl_tensor *out, const pl_tensor *t, int64_t i);
/* A one-output kernel (pl_kc_run_fresh) at every pl_kc_thread_counts: asserts the first
 * result within relative error 1e-5 of `want` (`floor` as in pl_kc_max_rel_error) and each
 * later one bitwise equal to it. `step` may be NULL; `what` names the check on failure. */
void pl_kc_check_op(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs, int n_in,
                    const pl_tensor *in_t, void *const *in, const float *want, double floor,
                    const pl_step_info *step, const char *what);
/* d/d(input `wrt`) of L = sum(r * output `out_index`), by central differences of step
 * `eps`, into grad (the size of input `wrt`). Inputs are restored afterwards. */
void pl_kc_numeric_grad(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                        int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                        const pl_tensor *out_t, int out_index, const float *r, int wrt,
                        float eps, float *grad);
/* Asserts `got`, a gradient kernel's output for input `wrt` of the one-output forward
 * kernel `fwd`, within relative error 2e-2 (floor 1e-2) of `sign` times
 * pl_kc_numeric_grad of sum(r * forward) at eps 1e-3. */
void pl_kc_check_gradient(const pl_kernel_fns *fwd, pl_op_kind kind, const pl_attrs *attrs,
                          int n_in, const pl_tensor *in_t, void *const *in, int wrt,
                          const float *got, const float *r, float sign, const char *what);

#endif
