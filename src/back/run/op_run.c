/* One op on a pool (op_run.h). */
#include "op_run.h"

typedef struct op_call {
    void (*kernel)(const pl_kernel_args *args);
    const pl_kernel_args *args;
} op_call;

static void run_share(void *context, int ith, int nth)
{
    const op_call *call = context;
    pl_kernel_args args = *call->args;
    args.ith = ith;
    args.nth = nth;
    call->kernel(&args);
}

void pl_op_run(pl_pool *pool, const pl_kernel_args *args)
{
    const pl_kernel_fns *fns = pl_kernel_of(args->op->kind);
    op_call call = {fns->kernel, args};
    pl_pool_run(pool, run_share, &call);
    if (fns->finish)
        fns->finish(args);
}
