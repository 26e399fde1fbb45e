/* One-device execution of a training graph: buffers, the ops in order, the pool. */
#include "session.h"

#include <cblas.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "big_buffer.h"
#include "graph_build.h"
#include "init.h"
#include "kernels.h"
#include "machine.h"
#include "op_run.h"
#include "pool.h"

struct pl_session {
    const pl_graph *g;
    pl_pool *pool;
    void **base;          /* per tensor: its buffer */
    void **data;          /* per tensor: where this micro-batch's data starts */
    void **stage;         /* per input batched on an axis other than 0: its micro-batch,
                             gathered (elsewhere NULL) */
    pl_tensor *shapes;    /* per tensor: shapes of the current micro-batch size */
    int shapes_batch;     /* the batch `shapes` are for */
    void *work;           /* the largest workspace any op needs */
    size_t work_bytes;
    const pl_tensor **in_t, **out_t; /* per-op scratch, max arity */
    void **in, **out;
};

static void prepare_args(pl_session *s, int o, const pl_step_info *step, pl_kernel_args *args)
{
    const pl_op *op = &s->g->ops[o];
    for (int i = 0; i < op->n_inputs; i++) {
        s->in_t[i] = &s->shapes[op->inputs[i]];
        s->in[i] = s->data[op->inputs[i]];
    }
    for (int i = 0; i < op->n_outputs; i++) {
        s->out_t[i] = &s->shapes[op->outputs[i]];
        s->out[i] = s->data[op->outputs[i]];
    }
    *args = (pl_kernel_args){.op = op, .in_t = s->in_t, .out_t = s->out_t, .in = s->in,
                             .out = s->out, .work = s->work, .ith = 0,
                             .nth = pl_pool_threads(s->pool), .step = step};
}

static void run_op(pl_session *s, int o, const pl_step_info *step)
{
    pl_kernel_args args;
    prepare_args(s, o, step, &args);
    pl_op_run(s->pool, &args);
}

static pl_status use_batch(pl_session *s, int batch, pl_error *err)
{
    if (s->shapes_batch == batch)
        return PL_OK;
    pl_status status = pl_graph_shapes_for_batch(s->g, batch, s->shapes, err);
    s->shapes_batch = status == PL_OK ? batch : 0;
    return status;
}

void pl_session_free(pl_session *s)
{
    if (!s)
        return;
    pl_pool_free(s->pool);
    for (int t = 0; s->base && t < s->g->n_tensors; t++)
        free(s->base[t]);
    for (int t = 0; s->stage && t < s->g->n_tensors; t++)
        free(s->stage[t]);
    free(s->base);
    free(s->stage);
    free(s->data);
    free(s->shapes);
    free(s->work);
    free(s->in_t);
    free(s->out_t);
    free(s->in);
    free(s->out);
    free(s);
}

/* Scratch arrays for the widest op, and the largest workspace at full batch. */
static pl_status plan_ops(pl_session *s, pl_error *err)
{
    const pl_graph *g = s->g;
    int arity = 1;
    for (int o = 0; o < g->n_ops; o++) {
        if (!pl_kernel_of(g->ops[o].kind)->kernel)
            return pl_error_set(err, PL_EINTERNAL, NULL, "op %s has no kernel",
                                pl_op_info_of(g->ops[o].kind)->name);
        if (g->ops[o].n_inputs > arity)
            arity = g->ops[o].n_inputs;
        if (g->ops[o].n_outputs > arity)
            arity = g->ops[o].n_outputs;
    }
    s->in_t = calloc((size_t)arity, sizeof *s->in_t);
    s->out_t = calloc((size_t)arity, sizeof *s->out_t);
    s->in = calloc((size_t)arity, sizeof *s->in);
    s->out = calloc((size_t)arity, sizeof *s->out);
    if (!s->in_t || !s->out_t || !s->in || !s->out)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_step_info step = {.step = 1, .micro_batches = 1, .training = true};
    for (int o = 0; o < g->n_ops; o++) {
        const pl_kernel_fns *fns = pl_kernel_of(g->ops[o].kind);
        if (!fns->workspace)
            continue;
        pl_kernel_args args;
        prepare_args(s, o, &step, &args);
        size_t bytes = fns->workspace(&args);
        if (bytes > s->work_bytes)
            s->work_bytes = bytes;
    }
    if (s->work_bytes && !(s->work = aligned_alloc(64, (s->work_bytes + 63) / 64 * 64)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for a %zu-byte workspace",
                            s->work_bytes);
    return PL_OK;
}

/* Whether the session's buffers, every tensor of the training graph, fit this machine. */
static pl_status fits_machine(const pl_graph *g, pl_error *err)
{
    int64_t bytes = 0;
    for (int t = 0; t < g->n_tensors; t++)
        bytes += (pl_tensor_bytes(&g->tensors[t]) + 63) / 64 * 64;
    char what[320];
    snprintf(what, sizeof what, "model \"%s\" at batch %d (its parameters, activations, "
             "gradients and optimizer state)", g->name, g->batch_size);
    return pl_machine_fits(bytes, what, err);
}

pl_session *pl_session_new(const pl_graph *g, int threads, pl_error *err)
{
    if (fits_machine(g, err) != PL_OK)
        return NULL;
    pl_session *s = calloc(1, sizeof *s);
    if (!s) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    s->g = g;
    pl_blas_setup();
    s->base = calloc((size_t)g->n_tensors, sizeof *s->base);
    s->data = calloc((size_t)g->n_tensors, sizeof *s->data);
    s->shapes = calloc((size_t)g->n_tensors, sizeof *s->shapes);
    s->stage = calloc((size_t)g->n_tensors, sizeof *s->stage);
    if (!s->base || !s->data || !s->shapes || !s->stage) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_session_free(s);
        return NULL;
    }
    memcpy(s->shapes, g->tensors, (size_t)g->n_tensors * sizeof *s->shapes);
    s->shapes_batch = g->batch_size;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        size_t bytes = ((size_t)pl_tensor_bytes(tensor) + 63) / 64 * 64;
        s->base[t] = s->data[t] = pl_big_buffer(bytes);
        if (tensor->kind == PL_TENSOR_INPUT && tensor->batch_axis > 0)
            s->stage[t] = pl_big_buffer(bytes);
        if (!s->base[t] || (tensor->kind == PL_TENSOR_INPUT && tensor->batch_axis > 0 &&
                            !s->stage[t])) {
            pl_error_set(err, PL_ENOMEM, NULL, "out of memory for tensor \"%s\" (%zu bytes)",
                         tensor->name, bytes);
            pl_session_free(s);
            return NULL;
        }
        memset(s->base[t], 0, bytes ? bytes : 64);
        if (tensor->kind == PL_TENSOR_PARAM || tensor->kind == PL_TENSOR_STATE ||
            tensor->kind == PL_TENSOR_CONST)
            pl_tensor_initialize(tensor, s->base[t]);
    }
    /* The pool first: workspaces depend on its thread count. */
    if (!(s->pool = pl_pool_new(threads, err)) || plan_ops(s, err) != PL_OK) {
        pl_session_free(s);
        return NULL;
    }
    return s;
}

void *pl_session_data(pl_session *s, int t)
{
    return s->base[t];
}

/* Points batched inputs at micro-batch `k` of `m`: in place where the batch is axis 0,
 * else gathered along the batch axis. */
static void select_micro_batch(pl_session *s, int k, int m)
{
    for (int t = 0; t < s->g->n_tensors; t++) {
        const pl_tensor *full = &s->g->tensors[t];
        if (full->kind != PL_TENSOR_INPUT || full->batch_axis == PL_NO_BATCH)
            continue;
        if (full->batch_axis == 0 || m == 1) {
            s->data[t] = (char *)s->base[t] + (size_t)(pl_tensor_bytes(full) / m) * (size_t)k;
            continue;
        }
        int64_t samples = pl_tensor_batch_layout(full).batch / m;
        pl_batch_gather(full, s->base[t], samples * k, samples, s->stage[t]);
        s->data[t] = s->stage[t];
    }
}

pl_status pl_session_gradients(pl_session *s, int64_t step, int micro_batches, float *loss,
                               pl_error *err)
{
    const pl_graph *g = s->g;
    if (micro_batches < 1 || g->batch_size % micro_batches != 0)
        return pl_error_set(err, PL_EINPUT, NULL, "%d micro-batches do not divide the batch "
                            "of %d", micro_batches, g->batch_size);
    char reason[PL_MAX_NAME + 256];
    if (micro_batches > 1 && pl_graph_whole_step_reason(g, reason, sizeof reason))
        return pl_error_set(err, PL_EINPUT, NULL, "%d micro-batches, but %s", micro_batches,
                            reason);
    pl_status status = use_batch(s, g->batch_size / micro_batches, err);
    if (status != PL_OK)
        return status;
    pl_step_info info = {.step = step, .micro_batches = micro_batches, .training = true};
    double total = 0;
    for (int k = 0; k < micro_batches; k++) {
        info.micro_batch = k;
        select_micro_batch(s, k, micro_batches);
        for (int o = 0; o < g->n_ops; o++)
            if (g->ops[o].phase != PL_PHASE_UPDATE)
                run_op(s, o, &info);
        total += *(const float *)s->data[g->loss];
    }
    select_micro_batch(s, 0, 1);
    *loss = (float)(total / micro_batches);
    return PL_OK;
}

void pl_session_update(pl_session *s, int64_t step, int micro_batches)
{
    pl_step_info info = {.step = step, .micro_batches = micro_batches, .training = true};
    for (int o = 0; o < s->g->n_ops; o++)
        if (s->g->ops[o].phase == PL_PHASE_UPDATE)
            run_op(s, o, &info);
}

pl_status pl_session_train_step(pl_session *s, int64_t step, int micro_batches, float *loss,
                                pl_error *err)
{
    pl_status status = pl_session_gradients(s, step, micro_batches, loss, err);
    if (status == PL_OK)
        pl_session_update(s, step, micro_batches);
    return status;
}

pl_status pl_session_forward(pl_session *s, bool training, float *loss, pl_error *err)
{
    const pl_graph *g = s->g;
    pl_status status = use_batch(s, g->batch_size, err);
    if (status != PL_OK)
        return status;
    pl_step_info info = {.step = 1, .micro_batches = 1, .training = training};
    select_micro_batch(s, 0, 1);
    for (int o = 0; o < g->n_forward_ops; o++)
        run_op(s, o, &info);
    *loss = *(const float *)s->data[g->loss];
    return PL_OK;
}
