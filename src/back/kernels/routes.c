/* Which route a kernel takes at an op's shapes (kernels.h), for the cost model's fits: each
 * kind's own predicates decide, in the file that runs it. */
#include "kernels.h"
#include "kernels_impl.h"

const char *const pl_kernel_route_names[PL_KERNEL_ROUTES + 1] = {
    "im2col", "small_outputs", "winograd", "flat", "depthwise", "depthwise_small",
    "planes", "small_planes", NULL};

pl_kernel_route pl_kernel_route_of(const pl_op *op, const pl_tensor *shapes)
{
    switch (op->kind) {
    case PL_OP_CONV1D:
    case PL_OP_CONV2D:
    case PL_OP_CONV3D:
    case PL_OP_CONV_TRANSPOSE1D:
    case PL_OP_CONV_TRANSPOSE2D:
    case PL_OP_CONV_TRANSPOSE3D:
    case PL_OP_CONV1D_GRAD_INPUT:
    case PL_OP_CONV2D_GRAD_INPUT:
    case PL_OP_CONV3D_GRAD_INPUT:
    case PL_OP_CONV1D_GRAD_FILTER:
    case PL_OP_CONV2D_GRAD_FILTER:
    case PL_OP_CONV3D_GRAD_FILTER:
        return pl_conv_route(op, shapes);
    case PL_OP_BATCH_NORM: /* x, gamma, beta */
        return pl_batch_norm_route(&shapes[op->inputs[0]]);
    case PL_OP_BATCH_NORM_GRAD: /* dy, x, gamma */
        return pl_batch_norm_route(&shapes[op->inputs[1]]);
    default:
        return PL_ROUTE_ONE;
    }
}
