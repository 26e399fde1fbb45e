/* Running one op on a device's pool: its kernel on every thread, then its finish. The
 * session and the executor both call ops this way. */
#ifndef PLACER_OP_RUN_H
#define PLACER_OP_RUN_H

#include "kernels.h"
#include "pool.h"

/* `args` as the kernel contract gives them (ith and nth are set per thread). */
void pl_op_run(pl_pool *pool, const pl_kernel_args *args);

#endif
