/* The roofline: how long an op takes on hardware placer cannot run (cluster.h:
 * pl_hardware), from its datasheet alone:
 *
 *   max(FLOPs / (peak x efficiency), bytes / memory bandwidth) + launch
 *
 * with the FLOPs and bytes read and written at the micro-batch's shapes, the op kind's
 * efficiency, and the kernel launch overhead of the file. Matrix ops (matmul, the
 * convolutions, transposed or not, lstm_cell and their gradients) run on the matrix
 * units at the peak of the model's math (pl_hardware.math: tf32, bf16, ...); every other
 * op at the fp32 peak. Its error is unknown until it is compared with a measurement on
 * that hardware: a measured time for the op's signature (a profile) takes its place
 * (cost_model.h). Pure functions. */
#ifndef PLACER_ROOFLINE_H
#define PLACER_ROOFLINE_H

#include <stdbool.h>

#include "cluster.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether an op kind runs on the matrix units (at the math's peak). */
bool pl_roofline_matrix_op(pl_op_kind kind);
/* The FLOP/s an op kind attains on the hardware: its peak times its efficiency. */
double pl_roofline_flops_per_second(const pl_hardware *hardware, pl_op_kind kind);
/* Seconds for one kernel of `kind` doing `flops` and moving `bytes`. */
double pl_roofline_seconds(const pl_hardware *hardware, pl_op_kind kind, double flops,
                           double bytes);

#ifdef __cplusplus
}
#endif

#endif
