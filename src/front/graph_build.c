/* Appending tensors and ops to a loaded graph, with shapes and costs. */
#include "graph_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pl_op_infer(const pl_graph *g, int o, pl_tensor *tensors, pl_infer_ctx *ctx,
                 double *flops)
{
    const pl_op *op = &g->ops[o];
    const pl_op_info *info = pl_op_info_of(op->kind);
    const pl_tensor *in_small[64], **in = in_small;
    pl_tensor *out[128];
    /* Variadic ops (concat) may have many inputs: use the heap beyond the stack array. */
    if (op->n_inputs > 64 && !(in = malloc((size_t)op->n_inputs * sizeof *in))) {
        *ctx = (pl_infer_ctx){.blame_input = -1, .blame_attr = -1, .blame_output = -1};
        snprintf(ctx->message, sizeof ctx->message, "out of memory");
        return false;
    }
    for (int i = 0; i < op->n_inputs; i++)
        in[i] = &tensors[op->inputs[i]];
    /* Outputs give each sample as many elements of their batch axis as the batched inputs
     * do (pl_tensor.batch_group); reshape, which can change that, sets its own. */
    int group = 1;
    for (int i = 0; i < op->n_inputs; i++)
        if (in[i]->batch_axis != PL_NO_BATCH) {
            group = pl_tensor_batch_group(in[i]);
            break;
        }
    for (int i = 0; i < op->n_outputs; i++) {
        out[i] = &tensors[op->outputs[i]];
        out[i]->batch_group = group;
    }
    *ctx = (pl_infer_ctx){.in = in, .out = out, .n_in = op->n_inputs, .n_out = op->n_outputs,
                          .attrs = &op->attrs, .blame_input = -1, .blame_attr = -1,
                          .blame_output = -1};
    bool ok = info->infer(ctx);
    /* Before any FLOP count: the counts multiply output dims, which only the limits keep
     * from overflowing. */
    for (int i = 0; ok && i < op->n_outputs; i++)
        if (!pl_tensor_within_limits(out[i])) {
            ok = pl_infer_fail(ctx, -1, -1, "the output \"%s\" would exceed the limits (each "
                               "dimension 1 to %lld, at most %lld elements)", out[i]->name,
                               (long long)PL_MAX_DIM, (long long)PL_MAX_ELEMENTS);
            ctx->blame_output = i;
        }
    if (ok && flops)
        *flops = info->flops(ctx);
    if (in != in_small)
        free(in);
    ctx->in = NULL; /* the arrays were local */
    ctx->out = NULL;
    return ok;
}

bool pl_graph_infer_op(pl_graph *g, int o, pl_infer_ctx *ctx)
{
    double flops;
    if (!pl_op_infer(g, o, g->tensors, ctx, &flops))
        return false;
    pl_op *op = &g->ops[o];
    op->flops = flops;
    op->bytes_read = op->bytes_written = op->param_bytes = 0;
    for (int i = 0; i < op->n_inputs; i++) {
        const pl_tensor *t = &g->tensors[op->inputs[i]];
        op->bytes_read += pl_tensor_bytes(t);
        if (t->kind == PL_TENSOR_PARAM)
            op->param_bytes += pl_tensor_bytes(t);
    }
    for (int i = 0; i < op->n_outputs; i++)
        op->bytes_written += pl_tensor_bytes(&g->tensors[op->outputs[i]]);
    return true;
}

/* Batched inputs and constants take the new batch on their batch axis; every op infers
 * again in order. */
static pl_status reshape_for_batch(const pl_graph *g, int batch, pl_tensor *tensors,
                                   pl_error *err)
{
    if (batch < 1)
        return pl_error_set(err, PL_EINPUT, NULL, "the batch must be at least 1, not %d", batch);
    for (int t = 0; t < g->n_tensors; t++)
        if (tensors[t].batch_axis != PL_NO_BATCH && tensors[t].producer < 0) {
            tensors[t].dims[tensors[t].batch_axis] =
                (int64_t)batch * pl_tensor_batch_group(&tensors[t]);
            if (!pl_tensor_within_limits(&tensors[t]))
                return pl_error_set(err, PL_EINPUT, NULL, "with batch %d, \"%s\" would have "
                                    "more than the limit of %lld elements", batch,
                                    tensors[t].name, (long long)PL_MAX_ELEMENTS);
        }
    for (int o = 0; o < g->n_ops; o++) {
        pl_infer_ctx ctx;
        if (!pl_op_infer(g, o, tensors, &ctx, NULL))
            return pl_error_set(err, PL_EINPUT, NULL, "with batch %d, %s \"%s\": %s", batch,
                                pl_op_info_of(g->ops[o].kind)->name, g->ops[o].name,
                                ctx.message);
    }
    return PL_OK;
}

pl_status pl_graph_shapes_for_batch(const pl_graph *g, int batch, pl_tensor *tensors,
                                    pl_error *err)
{
    memcpy(tensors, g->tensors, (size_t)g->n_tensors * sizeof *tensors);
    return reshape_for_batch(g, batch, tensors, err);
}

pl_status pl_graph_set_batch(pl_graph *g, int batch, pl_error *err)
{
    pl_status status = reshape_for_batch(g, batch, g->tensors, err);
    if (status != PL_OK)
        return status;
    for (int o = 0; o < g->n_ops; o++) {
        pl_infer_ctx ctx;
        pl_graph_infer_op(g, o, &ctx); /* costs; the shapes were accepted above */
    }
    g->batch_size = batch;
    return PL_OK;
}

static bool reserve(void **array, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int bigger = *cap ? *cap : 64;
    while (bigger < need)
        bigger *= 2;
    void *grown = realloc(*array, (size_t)bigger * size);
    if (!grown)
        return false;
    *array = grown;
    *cap = bigger;
    return true;
}

int pl_graph_add_tensor(pl_graph *g, const char *name, pl_tensor_kind kind,
                        const pl_tensor *shape)
{
    if (!reserve((void **)&g->tensors, &g->tensor_cap, g->n_tensors + 1, sizeof *g->tensors))
        return -1;
    const char *copy = pl_arena_strndup(&g->arena, name, strlen(name));
    if (!copy)
        return -1;
    pl_tensor *t = &g->tensors[g->n_tensors];
    *t = (pl_tensor){.name = copy, .kind = kind, .dtype = shape->dtype, .rank = shape->rank,
                     .batch_axis = shape->batch_axis, .batch_group = shape->batch_group,
                     .producer = -1, .param = -1};
    memcpy(t->dims, shape->dims, sizeof t->dims);
    return g->n_tensors++;
}

int pl_graph_add_op(pl_graph *g, pl_op_kind kind, const char *name, const int *inputs,
                    int n_inputs, int n_outputs, const pl_attrs *attrs, pl_phase phase,
                    int group, pl_error *err)
{
    if (!reserve((void **)&g->ops, &g->op_cap, g->n_ops + 1, sizeof *g->ops))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory"), -1;
    int o = g->n_ops;
    pl_op *op = &g->ops[o];
    *op = (pl_op){.kind = kind, .n_inputs = n_inputs, .n_outputs = n_outputs,
                  .source_index = -1, .phase = phase, .group = group};
    if (attrs)
        op->attrs = *attrs;
    else
        pl_attrs_default(&op->attrs);
    op->name = pl_arena_strndup(&g->arena, name, strlen(name));
    op->inputs = pl_arena_alloc(&g->arena, (size_t)(n_inputs + 1) * sizeof *op->inputs);
    op->outputs = pl_arena_alloc(&g->arena, (size_t)(n_outputs + 1) * sizeof *op->outputs);
    if (!op->name || !op->inputs || !op->outputs)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory"), -1;
    memcpy(op->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
    g->n_ops++;
    for (int i = 0; i < n_outputs; i++) {
        char out_name[PL_MAX_NAME + 16];
        snprintf(out_name, sizeof out_name, "%s:%d", name, i);
        pl_tensor placeholder = {.dtype = PL_F32, .batch_axis = PL_NO_BATCH};
        int t = pl_graph_add_tensor(g, out_name, PL_TENSOR_ACTIVATION, &placeholder);
        if (t < 0)
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory"), -1;
        g->tensors[t].producer = o;
        g->ops[o].outputs[i] = t;
    }
    pl_infer_ctx ctx;
    if (!pl_graph_infer_op(g, o, &ctx))
        return pl_error_set(err, PL_EINTERNAL, NULL, "building %s \"%s\": %s",
                            pl_op_info_of(kind)->name, name, ctx.message), -1;
    return o;
}
