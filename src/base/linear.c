/* Small dense linear systems (linear.h). */
#include "linear.h"

#include <math.h>

static void swap(double *x, double *y)
{
    double t = *x;
    *x = *y;
    *y = t;
}

bool pl_solve_linear(double *a, double *b, int n, double *x)
{
    for (int col = 0; col < n; col++) {
        int pivot = col;
        for (int r = col + 1; r < n; r++)
            if (fabs(a[r * n + col]) > fabs(a[pivot * n + col]))
                pivot = r;
        if (fabs(a[pivot * n + col]) < 1e-12)
            return false;
        for (int k = 0; k < n; k++)
            swap(&a[col * n + k], &a[pivot * n + k]);
        swap(&b[col], &b[pivot]);
        for (int r = col + 1; r < n; r++) {
            double f = a[r * n + col] / a[col * n + col];
            for (int k = col; k < n; k++)
                a[r * n + k] -= f * a[col * n + k];
            b[r] -= f * b[col];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++)
            s -= a[r * n + k] * x[k];
        x[r] = s / a[r * n + r];
    }
    return true;
}
