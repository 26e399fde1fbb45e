/* OpenBLAS as the kernels want it: one thread (parallelism is the worker pools'), and on a
 * CPU with AVX-512 its AVX-512 kernels. Debian 12's OpenBLAS (0.3.21) runs its AVX2
 * (Haswell or Zen) kernels on some AMD processors that have AVX-512; where the CPU has what
 * its SkylakeX kernels need and the user has not named a core (OPENBLAS_CORETYPE), the
 * library's own dynamic dispatch is asked again with that core named. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels.h"

/* OpenBLAS's dynamic-dispatch entry points, present in its DYNAMIC_ARCH builds (Debian's):
 * weak, so that another build links and keeps its core. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static bool avx512_kernels_fit(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

static void choose_core(void)
{
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || !avx512_kernels_fit())
        return;
    const char *core = openblas_get_corename();
    if (!core || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0))
        return; /* already an AVX-512 core, or one OpenBLAS chose for a reason of its own */
    const char *asked = getenv("OPENBLAS_CORETYPE");
    if (asked && *asked)
        return; /* the user's choice, which OpenBLAS followed */
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
}

void pl_blas_setup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_core);
    openblas_set_num_threads(1);
}

const char *pl_blas_core(void)
{
    pl_blas_setup();
    return openblas_get_corename();
}
