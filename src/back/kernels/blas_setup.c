/* OpenBLAS as the kernels want it: one thread (parallelism is the worker pools'), and on a
 * CPU with AVX-512 its AVX-512 kernels. Debian 12's OpenBLAS (0.3.21) predates AVX-512 on
 * AMD processors and runs its AVX2 (Haswell) kernels there; where the CPU has what its
 * SkylakeX kernels need and the user has not chosen another core (OPENBLAS_CORETYPE), the
 * library's own dynamic dispatch is asked again with that core named. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* OpenBLAS writes the core it chose into OPENBLAS_CORETYPE itself: a value naming another
 * core is the user's choice, and stands. */
static void choose_core(void)
{
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || !avx512_kernels_fit())
        return;
    const char *core = openblas_get_corename(), *asked = getenv("OPENBLAS_CORETYPE");
    if (!core || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0))
        return; /* already an AVX-512 core, or one OpenBLAS chose for a reason of its own */
    if (asked && strcasecmp(asked, core) != 0)
        return;
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
