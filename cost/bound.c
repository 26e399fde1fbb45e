/* The lower bound on a step (simulate.h): one sample's critical path, and the step's work
 * spread over every device. */
#include <stdlib.h>

#include "graph_build.h"
#include "simulate.h"

/* An op on the device where it runs fastest (free communication). */
static double fastest(const pl_cost_model *m, const pl_cluster *c, const pl_op *op,
                      double flops, double bytes)
{
    double best = -1;
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *device = &c->devices[d];
        double t = pl_cost_op(m, op->kind, device->threads, flops, bytes);
        if (device->flops_per_second > 0 && flops / device->flops_per_second > t)
            t = flops / device->flops_per_second;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

static double op_bytes(const pl_op *op, const pl_tensor *shapes)
{
    double bytes = 0;
    for (int j = 0; j < op->n_inputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->inputs[j]]);
    for (int j = 0; j < op->n_outputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->outputs[j]]);
    return bytes;
}

pl_status pl_step_lower_bound(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                              double *seconds, pl_error *err)
{
    pl_tensor *one = malloc((size_t)g->n_tensors * sizeof *one);
    double *done = calloc((size_t)g->n_ops + 1, sizeof *done);
    int *writer = malloc((size_t)g->n_tensors * sizeof *writer); /* last op to write it */
    pl_status status = one && done && writer ? PL_OK
                                             : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK)
        status = pl_graph_shapes_for_batch(g, 1, one, err);
    double work = 0, path = 0;
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        writer[t] = g->tensors[t].producer;
    for (int o = 0; status == PL_OK && o < g->n_ops; o++) { /* ops are in topological order */
        const pl_op *op = &g->ops[o];
        work += fastest(m, c, op, op->flops, (double)(op->bytes_read + op->bytes_written));
        double flops_one;
        pl_infer_ctx ctx;
        if (!pl_op_infer(g, o, one, &ctx, &flops_one)) {
            status = pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\": %s", op->name, ctx.message);
            break;
        }
        double begin = 0;
        for (int j = 0; j < op->n_inputs; j++) {
            int w = writer[op->inputs[j]];
            if (w >= 0 && done[w] > begin)
                begin = done[w];
        }
        done[o] = begin + fastest(m, c, op, flops_one, op_bytes(op, one));
        if (done[o] > path)
            path = done[o];
        if (pl_op_info_of(op->kind)->mutates) /* its in-place writes: state, parameters */
            for (int j = 0; j < op->n_inputs; j++)
                if (g->tensors[op->inputs[j]].kind != PL_TENSOR_ACTIVATION)
                    writer[op->inputs[j]] = o;
    }
    *seconds = work / c->n_devices > path ? work / c->n_devices : path;
    free(one);
    free(done);
    free(writer);
    return status;
}
