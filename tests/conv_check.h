/* The convolution kernel tests' cases (test_kernels_conv.c, test_kernels_conv_nd.c): a
 * convolution's or transposed convolution's attributes and random tensors, and the
 * textbook convolution in double that the kernels are held to. */
#ifndef PLACER_CONV_CHECK_H
#define PLACER_CONV_CHECK_H

#include "kernel_check.h"

/* x and w as the op takes them (transposed: w is [C, O/groups, ...]); one attribute value
 * per spatial axis of x. */
typedef struct conv_case {
    const char *x, *w;
    int64_t stride[3], padding[3], dilation[3], output_padding[3], groups;
    bool bias;
    bool numeric; /* small enough for numerical gradients */
} conv_case;

/* A case's tensors: x, w, bias, the forward output y and an upstream gradient dy. */
typedef struct conv_data {
    int spatial;
    pl_attrs at;
    pl_tensor in_t[3], y_t;
    int n_in;
    float *x, *w, *b, *dy;
} conv_data;

/* The case's tensors, y shaped by `kind`'s inference (a fatal assertion), uniform values
 * in [-1, 1) from `seed`. Free with conv_case_free. */
conv_data conv_case_make(const conv_case *c, pl_op_kind kind, bool transposed, uint64_t seed);
void conv_case_free(conv_data *d);
/* Asserts error < limit, naming the case on stderr when it is not. */
void conv_case_report(const char *what, const conv_case *c, double error, double limit);

/* A convolution of 1 to 3 spatial axes and its gradients by the definition, in double:
 * y = conv(x, w) (+ bias when not NULL), and of sum(dy * y): dx, dw and db (dy summed
 * per channel). Free with conv_reference_free. */
typedef struct conv_reference {
    double *y, *dx, *dw, *db;
} conv_reference;

conv_reference conv_reference_compute(const pl_tensor *x_t, const float *x, const pl_tensor *w_t,
                                      const float *w, const pl_tensor *y_t, const float *dy,
                                      const pl_attrs *at, const float *bias);
/* y += bias per channel (axis 1 of t). */
void conv_reference_add_bias(double *y, const pl_tensor *t, const float *bias);
void conv_reference_free(conv_reference *r);

#endif
