/* Helpers for kernel tests: tensors from shape strings, seeded random data, running a
 * kernel as the executor would (every thread's share, then finish), comparing results,
 * and numerical gradients by central differences. */
#ifndef PLACER_TESTS_KERNEL_CHECK_H
#define PLACER_TESTS_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

typedef struct pl_kernel_fns {
    void (*kernel)(const pl_kernel_args *args);
    void (*finish)(const pl_kernel_args *args);
    size_t (*workspace)(const pl_kernel_args *args);
} pl_kernel_fns;

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
/* Largest |a-b| / (|b| + floor) over n floats. */
double pl_kc_max_rel_error(const float *a, const float *b, int64_t n, double floor);
/* d/d(input `wrt`) of L = sum(r * output `out_index`), by central differences of step
 * `eps`, into grad (the size of input `wrt`). Inputs are restored afterwards. */
void pl_kc_numeric_grad(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                        int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                        const pl_tensor *out_t, int out_index, const float *r, int wrt,
                        float eps, float *grad);

#endif
