/* Weights files: a training graph's parameters and running averages as a tensor file. */
#include "weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_file.h"

/* Per tensor: whether it is a weight (one pass over the ops). */
static bool *weight_flags(const pl_graph *g)
{
    bool *weight = calloc((size_t)g->n_tensors + 1, sizeof *weight);
    for (int t = 0; weight && t < g->n_tensors; t++)
        weight[t] = g->tensors[t].kind == PL_TENSOR_PARAM;
    for (int o = 0; weight && o < g->n_forward_ops; o++)
        if (g->ops[o].kind == PL_OP_BATCH_NORM && g->ops[o].n_inputs == 5)
            weight[g->ops[o].inputs[3]] = weight[g->ops[o].inputs[4]] = true;
    return weight;
}

static const char *what_weight(const pl_tensor *t)
{
    return t->kind == PL_TENSOR_PARAM ? "parameter" : "running average";
}

/* The file's tensor `k` against the graph: a weight of it, of its dtype and shape. */
static pl_status match(const pl_tensor_file *file, int k, const pl_graph *g, const bool *weight,
                       int *index, pl_error *err)
{
    const pl_named_tensor *f = &file->tensors[k];
    int t = pl_graph_find_tensor(g, f->name);
    if (t < 0 || !weight[t])
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" is not a parameter or "
                            "running average of model \"%s\"", f->name, g->name);
    const pl_tensor *m = &g->tensors[t];
    if (f->dtype != m->dtype)
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" is %s in the file, %s in "
                            "the model", f->name, pl_dtype_name(f->dtype),
                            pl_dtype_name(m->dtype));
    if (!pl_tensor_has_dims(m, f->rank, f->dims)) {
        char have[160], want[160];
        pl_named_tensor_format_shape(f, have, sizeof have);
        pl_shape_format(m, want, sizeof want);
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" has shape %s in the file, "
                            "%s in the model", f->name, have, want);
    }
    index[t] = k;
    return PL_OK;
}

/* Reads the matched weights' data, each finite: only then are the buffers written. */
static pl_status load_matched(pl_tensor_file *file, const pl_graph *g, const bool *weight,
                              const int *index, pl_error *err)
{
    pl_status status = PL_OK;
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        if (weight[t] && (status = pl_tensor_file_load(file, index[t], err)) == PL_OK)
            status = pl_named_tensor_check_finite(&file->tensors[index[t]], err);
    return status;
}

pl_status pl_weights_load(const char *path, const pl_graph *g, void *const *buffers,
                          pl_error *err)
{
    /* the index first: a file that is not this model's is refused before its data are read */
    pl_tensor_file *file = pl_tensor_file_open(path, err);
    if (!file)
        return err && err->status != PL_OK ? err->status : PL_EINPUT;
    bool *weight = weight_flags(g);
    int *index = malloc(((size_t)g->n_tensors + 1) * sizeof *index);
    pl_status status = weight && index ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL,
                                                              "out of memory");
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        index[t] = -1;
    for (int k = 0; status == PL_OK && k < file->n; k++)
        status = match(file, k, g, weight, index, err);
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        if (weight[t] && index[t] < 0)
            status = pl_error_set(err, PL_EINPUT, NULL, "the model's %s \"%s\" is not in the "
                                  "file", what_weight(&g->tensors[t]), g->tensors[t].name);
    if (status == PL_OK)
        status = load_matched(file, g, weight, index, err);
    /* only a file that matches whole changes the buffers */
    for (int t = 0; status == PL_OK && t < g->n_tensors; t++)
        if (weight[t])
            memcpy(buffers[t], file->tensors[index[t]].data,
                   (size_t)pl_tensor_bytes(&g->tensors[t]));
    free(index);
    free(weight);
    pl_tensor_file_free(file);
    return status;
}

pl_status pl_weights_save(const char *path, const pl_graph *g, void *const *buffers,
                          pl_error *err)
{
    bool *weight = weight_flags(g);
    pl_named_tensor *list = calloc((size_t)g->n_tensors + 1, sizeof *list);
    if (!weight || !list) {
        free(weight);
        free(list);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *m = &g->tensors[t];
        if (!weight[t])
            continue;
        list[n] = (pl_named_tensor){.name = m->name, .dtype = m->dtype, .rank = m->rank,
                                    .data = buffers[t]};
        memcpy(list[n].dims, m->dims, sizeof m->dims);
        n++;
    }
    pl_status status = pl_tensor_file_write(path, list, n, err);
    free(list);
    free(weight);
    return status;
}
