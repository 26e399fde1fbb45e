/* The model graph as GraphViz dot, built with cgraph so that quoting and escaping are
 * GraphViz's own. Node ids are prefixed ("op:", "in:") because op and tensor names are
 * separate name spaces in the model format. */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "dot_impl.h"

Agnode_t *pl__dot_node(Agraph_t *g, const char *prefix, const char *name)
{
    char id[PL_MAX_NAME + 16];
    snprintf(id, sizeof id, "%s%s", prefix, name);
    return agnode(g, id, 1);
}

void pl__dot_set(void *object, const char *key, const char *value)
{
    agsafeset(object, (char *)key, (char *)value, "");
}

pl_status pl__dot_finish(Agraph_t *g, FILE *out, pl_error *err)
{
    int written = agwrite(g, out);
    agclose(g);
    if (written != 0 || ferror(out))
        return pl_error_set(err, PL_EIO, NULL, "writing the dot file failed");
    return PL_OK;
}

static void append(char *buf, size_t cap, size_t *used, const char *fmt, const char *a,
                   const char *b)
{
    if (*used < cap)
        *used += (size_t)snprintf(buf + *used, cap - *used, fmt, a, b);
}

/* "fc1\nmatmul · w1 [784,256]\n→ [64,256]" */
static void op_label(const pl_graph *g, const pl_op *op, char *buf, size_t cap)
{
    size_t used = 0;
    char shape[96];
    append(buf, cap, &used, "%s\n%s", op->name, pl_op_info_of(op->kind)->name);
    for (int i = 0; i < op->n_inputs; i++) {
        const pl_tensor *t = &g->tensors[op->inputs[i]];
        if (t->kind != PL_TENSOR_PARAM)
            continue;
        pl_shape_format(t, shape, sizeof shape);
        append(buf, cap, &used, " · %s %s", t->name, shape);
    }
    for (int i = 0; i < op->n_outputs; i++) {
        pl_shape_format(&g->tensors[op->outputs[i]], shape, sizeof shape);
        append(buf, cap, &used, "%s%s", i ? ", " : "\n→ ", shape);
    }
}

pl_status pl_dot_write_graph(const pl_graph *graph, FILE *out, pl_error *err)
{
    Agraph_t *g = agopen((char *)graph->name, Agdirected, NULL);
    if (!g)
        return pl_error_set(err, PL_ENOMEM, NULL, "cgraph could not create a graph");
    agattr(g, AGRAPH, "rankdir", "TB");
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "rounded");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontsize", "10");
    agattr(g, AGEDGE, "color", "gray40");
    agattr(g, AGEDGE, "tooltip", "");
    agattr(g, AGRAPH, "label", "");
    pl__dot_set(g, "label", graph->name);

    char label[2048], shape[96];
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        if (tensor->kind != PL_TENSOR_INPUT)
            continue;
        Agnode_t *n = pl__dot_node(g, "in:", tensor->name);
        pl_shape_format(tensor, shape, sizeof shape);
        snprintf(label, sizeof label, "%s\n%s %s", tensor->name, shape,
                 pl_dtype_name(tensor->dtype));
        pl__dot_set(n, "label", label);
        pl__dot_set(n, "shape", "ellipse");
        pl__dot_set(n, "style", "");
    }
    for (int o = 0; o < graph->n_ops; o++) {
        const pl_op *op = &graph->ops[o];
        Agnode_t *n = pl__dot_node(g, "op:", op->name);
        op_label(graph, op, label, sizeof label);
        pl__dot_set(n, "label", label);
        if (op->n_outputs == 1 && op->outputs[0] == graph->loss)
            pl__dot_set(n, "penwidth", "2");
        for (int i = 0; i < op->n_inputs; i++) {
            const pl_tensor *t = &graph->tensors[op->inputs[i]];
            Agnode_t *from;
            if (t->kind == PL_TENSOR_INPUT)
                from = pl__dot_node(g, "in:", t->name);
            else if (t->kind == PL_TENSOR_ACTIVATION)
                from = pl__dot_node(g, "op:", graph->ops[t->producer].name);
            else
                continue; /* parameters are listed in the op's label */
            Agedge_t *e = agedge(g, from, n, NULL, 1);
            pl__dot_set(e, "tooltip", t->name);
        }
    }
    return pl__dot_finish(g, out, err);
}
