/* Graph IR helpers: sizes, look-ups, totals, freeing. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pl_graph_free(pl_graph *graph)
{
    if (!graph)
        return;
    free(graph->tensors);
    free(graph->ops);
    pl_arena_release(&graph->arena);
    free(graph);
}

int64_t pl_tensor_elements(const pl_tensor *tensor)
{
    int64_t n = 1;
    for (int a = 0; a < tensor->rank; a++)
        n *= tensor->dims[a];
    return n;
}

bool pl_tensor_within_limits(const pl_tensor *tensor)
{
    int64_t count = 1;
    for (int a = 0; a < tensor->rank; a++) {
        int64_t d = tensor->dims[a];
        if (d < 1 || d > PL_MAX_DIM || count > PL_MAX_ELEMENTS / d)
            return false;
        count *= d;
    }
    return true;
}

bool pl_tensor_has_dims(const pl_tensor *t, int rank, const int64_t *dims)
{
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            return false;
    return true;
}

int64_t pl_tensor_bytes(const pl_tensor *tensor)
{
    return pl_tensor_elements(tensor) * 4; /* f32 and i32 alike */
}

int pl_tensor_batch_group(const pl_tensor *tensor)
{
    return tensor->batch_group > 1 ? tensor->batch_group : 1;
}

pl_batch_layout pl_tensor_batch_layout(const pl_tensor *tensor)
{
    pl_batch_layout layout = {1, 1, 1, 1};
    for (int a = 0; a < tensor->rank; a++) {
        int64_t *part = a < tensor->batch_axis    ? &layout.outer
                        : a == tensor->batch_axis ? &layout.batch
                                                  : &layout.inner;
        *part *= tensor->dims[a];
    }
    if (tensor->batch_axis != PL_NO_BATCH) {
        layout.group = pl_tensor_batch_group(tensor);
        layout.batch /= layout.group;
        layout.inner *= layout.group;
    }
    return layout;
}

/* Moves samples [first, first + count) between `whole` and `part`, one run per outer index. */
static void batch_copy(const pl_tensor *tensor, char *whole, int64_t first, int64_t count,
                       char *part, bool to_part)
{
    pl_batch_layout l = pl_tensor_batch_layout(tensor);
    size_t run = (size_t)(count * l.inner) * 4;
    for (int64_t o = 0; o < l.outer; o++) {
        char *w = whole + (size_t)((o * l.batch + first) * l.inner) * 4;
        char *p = part + (size_t)o * run;
        memcpy(to_part ? p : w, to_part ? w : p, run);
    }
}

void pl_batch_gather(const pl_tensor *tensor, const void *whole, int64_t first, int64_t count,
                     void *part)
{
    batch_copy(tensor, (char *)whole, first, count, part, true);
}

void pl_batch_scatter(const pl_tensor *tensor, void *whole, int64_t first, int64_t count,
                      const void *part)
{
    batch_copy(tensor, whole, first, count, (char *)part, false);
}

const char *pl_dtype_name(pl_dtype dtype)
{
    return dtype == PL_I32 ? "i32" : "f32";
}

int pl_graph_find_tensor(const pl_graph *graph, const char *name)
{
    for (int t = 0; t < graph->n_tensors; t++)
        if (strcmp(graph->tensors[t].name, name) == 0)
            return t;
    return -1;
}

int pl_graph_find_op(const pl_graph *graph, const char *name)
{
    for (int o = 0; o < graph->n_ops; o++)
        if (strcmp(graph->ops[o].name, name) == 0)
            return o;
    return -1;
}

int pl_graph_updated_param(const pl_graph *graph, int op)
{
    const pl_op *o = &graph->ops[op];
    if (o->kind == PL_OP_ACCUMULATE || o->kind == PL_OP_SCATTER_ACCUMULATE)
        return graph->tensors[o->inputs[0]].param;
    for (int i = 0; o->phase == PL_PHASE_UPDATE && i < o->n_inputs; i++)
        if (graph->tensors[o->inputs[i]].kind == PL_TENSOR_PARAM)
            return o->inputs[i];
    return -1;
}

int pl_graph_whole_step_op(const pl_graph *graph)
{
    if (graph->batch_statistics != PL_BATCH_STATISTICS_PER_STEP)
        return -1;
    for (int o = 0; o < graph->n_forward_ops; o++)
        if (pl_op_info_of(graph->ops[o].kind)->batch_statistics)
            return o;
    return -1;
}

bool pl_graph_allows_micro_batches(const pl_graph *graph, int micro_batches)
{
    return micro_batches >= 1 && graph->batch_size % micro_batches == 0 &&
           (micro_batches == 1 || pl_graph_whole_step_op(graph) < 0);
}

bool pl_graph_whole_step_reason(const pl_graph *graph, char *buf, int cap)
{
    int o = pl_graph_whole_step_op(graph);
    if (o < 0)
        return false;
    snprintf(buf, (size_t)cap, "%s \"%s\" computes statistics over the whole step's batch "
             "(the model's \"batch_statistics\" is \"per_step\"; \"per_micro_batch\" "
             "would allow micro-batches)", pl_op_info_of(graph->ops[o].kind)->name,
             graph->ops[o].name);
    return true;
}

void pl_graph_stats_compute(const pl_graph *graph, pl_graph_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        int64_t bytes = pl_tensor_bytes(tensor);
        switch (tensor->kind) {
        case PL_TENSOR_INPUT:
            stats->n_inputs++;
            stats->input_bytes += bytes;
            break;
        case PL_TENSOR_PARAM:
            stats->n_params++;
            stats->param_count += pl_tensor_elements(tensor);
            stats->param_bytes += bytes;
            break;
        case PL_TENSOR_ACTIVATION:
            stats->n_activations++;
            stats->activation_bytes += bytes;
            break;
        case PL_TENSOR_STATE:
        case PL_TENSOR_CONST:
            stats->state_bytes += bytes;
            break;
        }
    }
    for (int o = 0; o < graph->n_ops; o++) {
        stats->flops += graph->ops[o].flops;
        stats->op_count[graph->ops[o].kind]++;
    }
}

void pl_shape_format(const pl_tensor *tensor, char *buf, int cap)
{
    int used = snprintf(buf, (size_t)cap, "[");
    for (int a = 0; a < tensor->rank && used < cap; a++)
        used += snprintf(buf + used, (size_t)(cap - used), "%s%lld", a ? "," : "",
                         (long long)tensor->dims[a]);
    if (used < cap)
        snprintf(buf + used, (size_t)(cap - used), "]");
}

void pl_shard_copy(const pl_tensor *shard, void *whole, void *part, bool to_whole)
{
    const pl_init *init = &shard->init;
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < init->shard_axis; a++)
        outer *= shard->dims[a];
    for (int a = init->shard_axis + 1; a < shard->rank; a++)
        inner *= shard->dims[a];
    int64_t groups = init->shard_groups > 1 ? init->shard_groups : 1;
    int64_t per = shard->dims[init->shard_axis] / groups, stride = init->shard_whole / groups;
    size_t run = (size_t)(per * inner) * 4;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t g = 0; g < groups; g++) {
            int64_t at = o * init->shard_whole + g * stride + init->shard_start;
            char *w = (char *)whole + (size_t)(at * inner) * 4;
            char *s = (char *)part + (size_t)(o * groups + g) * run;
            if (to_whole)
                memcpy(w, s, run);
            else
                memcpy(s, w, run);
        }
}
