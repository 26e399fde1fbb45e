/* Small dense linear systems: the normal equations of the cost model's least-squares fits
 * (cost/cost_model.c, cost/calibrate_delays.c). */
#ifndef PLACER_LINEAR_H
#define PLACER_LINEAR_H

#include <stdbool.h>

/* Solves a x = b for x, a being n x n in row-major order, by elimination with partial
 * pivoting; a and b are overwritten. False when a is singular (a pivot under 1e-12). */
bool pl_solve_linear(double *a, double *b, int n, double *x);

#endif
