/* The roofline (roofline.h). */
#include "roofline.h"

bool pl_roofline_matrix_op(pl_op_kind kind)
{
    switch (kind) {
    case PL_OP_MATMUL:
    case PL_OP_MATMUL_GRAD_A:
    case PL_OP_MATMUL_GRAD_B:
    case PL_OP_CONV2D:
    case PL_OP_CONV2D_GRAD_INPUT:
    case PL_OP_CONV2D_GRAD_FILTER:
    case PL_OP_LSTM_CELL:
    case PL_OP_LSTM_CELL_GRAD:
    case PL_OP_CONV1D:
    case PL_OP_CONV3D:
    case PL_OP_CONV_TRANSPOSE1D:
    case PL_OP_CONV_TRANSPOSE2D:
    case PL_OP_CONV_TRANSPOSE3D:
    case PL_OP_CONV1D_GRAD_INPUT:
    case PL_OP_CONV1D_GRAD_FILTER:
    case PL_OP_CONV3D_GRAD_INPUT:
    case PL_OP_CONV3D_GRAD_FILTER:
        return true;
    default:
        return false;
    }
}

double pl_roofline_flops_per_second(const pl_hardware *hw, pl_op_kind kind)
{
    double peak = hw->peak[pl_roofline_matrix_op(kind) ? hw->math : PL_MATH_FP32];
    return peak * hw->efficiency[kind];
}

double pl_roofline_seconds(const pl_hardware *hw, pl_op_kind kind, double flops,
                           double bytes)
{
    double compute = flops / pl_roofline_flops_per_second(hw, kind);
    double memory = bytes / hw->memory_bytes_per_second;
    return (compute > memory ? compute : memory) + hw->launch_seconds;
}
