/* The lower bound on a step (simulate.h): one sample's critical path, the step's work
 * spread over every device, and the heaviest co-location group, which runs on one device.
 *
 * Both terms take each op's time as the simulator would (the measured time of its
 * signature where calibration has one, else the fit; never less than its FLOPs at a paced
 * device's rate), at every micro-batch size a plan may choose, and keep the smallest. So no
 * plan's simulated step can come out below the bound, even where the measured times and
 * the fit disagree. */
#include <stdlib.h>

#include "graph_build.h"
#include "simulate.h"

/* An op at the given shapes on the device where it runs fastest (free communication). */
static double fastest(const pl_cost_model *m, const pl_cluster *c, const pl_op *op,
                      const pl_tensor *shapes, double flops)
{
    double bytes = 0, best = -1;
    for (int j = 0; j < op->n_inputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->inputs[j]]);
    for (int j = 0; j < op->n_outputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->outputs[j]]);
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *device = &c->devices[d];
        double t = pl_cost_lookup(m, pl_op_signature(op, shapes, device->threads));
        if (t < 0)
            t = pl_cost_op(m, op->kind, device->threads, flops, bytes);
        if (device->flops_per_second > 0 && flops / device->flops_per_second > t)
            t = flops / device->flops_per_second;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

/* Per op, over every micro-batch count m dividing the batch: the least time of one sample
 * (`sample`: any micro-batch carries at least one) and of a whole step's share (`step`: m
 * micro-batches, or one run of an update). */
static pl_status least_times(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                             double *sample, double *step, pl_tensor *shapes, pl_error *err)
{
    for (int o = 0; o < g->n_ops; o++)
        sample[o] = step[o] = -1;
    for (int size = 1; size <= g->batch_size; size++) {
        if (g->batch_size % size)
            continue;
        pl_status status = pl_graph_shapes_for_batch(g, size, shapes, err);
        for (int o = 0; status == PL_OK && o < g->n_ops; o++) {
            const pl_op *op = &g->ops[o];
            double flops;
            pl_infer_ctx ctx;
            if (!pl_op_infer(g, o, shapes, &ctx, &flops))
                return pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\": %s", op->name,
                                    ctx.message);
            double t = fastest(m, c, op, shapes, flops);
            double share = op->phase == PL_PHASE_UPDATE ? t : t * (g->batch_size / size);
            if (sample[o] < 0 || t < sample[o])
                sample[o] = t;
            if (step[o] < 0 || share < step[o])
                step[o] = share;
        }
        if (status != PL_OK)
            return status;
    }
    return PL_OK;
}

pl_status pl_step_lower_bound(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                              double *seconds, pl_error *err)
{
    pl_tensor *shapes = malloc((size_t)g->n_tensors * sizeof *shapes);
    double *sample = malloc(4 * ((size_t)g->n_ops + 1) * sizeof *sample);
    int *writer = malloc((size_t)g->n_tensors * sizeof *writer); /* last op to write it */
    pl_status status = shapes && sample && writer
                           ? PL_OK
                           : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    double *step = sample ? sample + g->n_ops + 1 : NULL, *done = step ? step + g->n_ops + 1 : NULL;
    double *group = done ? done + g->n_ops + 1 : NULL; /* per forward op: its group's share */
    if (status == PL_OK)
        status = least_times(g, c, m, sample, step, shapes, err);
    double work = 0, path = 0, heaviest = 0;
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        writer[t] = g->tensors[t].producer;
    for (int o = 0; status == PL_OK && o < g->n_ops; o++)
        group[o] = 0;
    for (int o = 0; status == PL_OK && o < g->n_ops; o++) { /* ops are in topological order */
        const pl_op *op = &g->ops[o];
        work += step[o];
        group[op->group] += step[o];
        if (group[op->group] > heaviest)
            heaviest = group[op->group];
        double begin = 0;
        for (int j = 0; j < op->n_inputs; j++) {
            int w = writer[op->inputs[j]];
            if (w >= 0 && done[w] > begin)
                begin = done[w];
        }
        done[o] = begin + sample[o];
        if (done[o] > path)
            path = done[o];
        if (pl_op_info_of(op->kind)->mutates) /* its in-place writes: state, parameters */
            for (int j = 0; j < op->n_inputs; j++)
                if (g->tensors[op->inputs[j]].kind != PL_TENSOR_ACTIVATION)
                    writer[op->inputs[j]] = o;
    }
    *seconds = work / c->n_devices > path ? work / c->n_devices : path;
    if (heaviest > *seconds)
        *seconds = heaviest;
    free(shapes);
    free(sample);
    free(writer);
    return status;
}
