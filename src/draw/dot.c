/* The model graph as GraphViz dot, built with cgraph so that quoting and escaping are
 * GraphViz's own. Node ids are prefixed ("op:", "in:") because op and tensor names are
 * separate name spaces in the model format. */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "dot_impl.h"
#include "units.h"

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

void *pl__dot_edge_record(Agraph_t *g, Agnode_t *tail, Agnode_t *head, const char *name,
                          size_t size, Agedge_t **edge, bool *created)
{
    *edge = agedge(g, tail, head, NULL, 0);
    *created = !*edge;
    if (*edge)
        return aggetrec(*edge, (char *)name, 0);
    *edge = agedge(g, tail, head, NULL, 1);
    return *edge ? agbindrec(*edge, (char *)name, (unsigned int)size, false) : NULL;
}

void pl__dot_fast_layout(Agraph_t *g)
{
    pl__dot_set(g, "nslimit", "1");
    pl__dot_set(g, "remincross", "false");
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

/* Grouped by module (dot.h), the edges between two boxes are one, labelled with the bytes
 * per step of the tensors it carries, each counted once. */
typedef struct module_edge {
    Agrec_t header; /* cgraph's, first */
    double bytes;
    int last_tensor;
    int n_tensors;
} module_edge;

typedef struct graph_drawing {
    const pl_graph *graph;
    Agraph_t *g;
    pl__dot_groups groups; /* per op */
    Agnode_t **node;       /* per box */
} graph_drawing;

/* The cluster of a path's parent module, or g when it has none. */
static Agraph_t *parent_cluster(Agraph_t *g, const char *path)
{
    size_t parent = pl__dot_parent_length(path);
    if (parent == 0)
        return g;
    char id[PL_MAX_NAME + 32];
    snprintf(id, sizeof id, "cluster_module:%.*s", (int)parent, path);
    Agraph_t *cluster = agsubg(g, id, 0);
    if (!cluster) {
        cluster = agsubg(g, id, 1);
        pl__dot_set(cluster, "label", id + strlen("cluster_module:"));
        pl__dot_set(cluster, "style", "rounded");
        pl__dot_set(cluster, "color", "gray75");
    }
    return cluster;
}

/* Op o's box: its own ("op:NAME"), or its module's ("module:PATH", with "/backward" or
 * "/update" for a training graph's other phases). */
static Agnode_t *box_of(graph_drawing *d, int o)
{
    static const char *const phases[] = {"", "/backward", "/update"};
    int box = d->groups.box[o];
    if (d->node[box])
        return d->node[box];
    const pl_op *op = &d->graph->ops[o];
    char label[2048];
    Agnode_t *n;
    if (d->groups.n_members[box] == 1) {
        n = pl__dot_node(d->groups.depth > 0 ? parent_cluster(d->g, op->name) : d->g, "op:",
                         op->name);
        op_label(d->graph, op, label, sizeof label);
    } else {
        const char *module = d->groups.module[box];
        char id[PL_MAX_NAME + 32];
        snprintf(id, sizeof id, "module:%s%s", module, phases[op->phase]);
        n = agnode(parent_cluster(d->g, module), id, 1);
        snprintf(label, sizeof label, "%s\n%d ops%s", module, d->groups.n_members[box],
                 phases[op->phase][0] ? phases[op->phase] : "");
        pl__dot_set(n, "shape", "box3d");
    }
    pl__dot_set(n, "label", label);
    if (op->n_outputs == 1 && op->outputs[0] == d->graph->loss)
        pl__dot_set(n, "penwidth", "2");
    return d->node[box] = n;
}

/* Tensor t from `from` to `to`: an edge per use op by op; one per pair of boxes grouped. */
static pl_status connect(graph_drawing *d, Agnode_t *from, Agnode_t *to, int t, pl_error *err)
{
    const pl_tensor *tensor = &d->graph->tensors[t];
    if (d->groups.depth == 0) {
        pl__dot_set(agedge(d->g, from, to, NULL, 1), "tooltip", tensor->name);
        return PL_OK;
    }
    if (from == to)
        return PL_OK;
    Agedge_t *e;
    bool created;
    module_edge *rec = pl__dot_edge_record(d->g, from, to, "pl_dot_module", sizeof *rec, &e,
                                           &created);
    if (!rec)
        return pl_error_set(err, PL_ENOMEM, NULL, "cgraph could not add an edge");
    if (created) {
        rec->last_tensor = -1;
        pl__dot_set(e, "tooltip", tensor->name);
    }
    if (rec->last_tensor != t) {
        rec->last_tensor = t;
        rec->bytes += (double)pl_tensor_bytes(tensor);
        rec->n_tensors++;
    }
    return PL_OK;
}

static void label_module_edges(graph_drawing *d)
{
    for (Agnode_t *n = agfstnode(d->g); n; n = agnxtnode(d->g, n))
        for (Agedge_t *e = agfstout(d->g, n); e; e = agnxtout(d->g, e)) {
            module_edge *rec = (module_edge *)aggetrec(e, "pl_dot_module", 0);
            char text[PL_MAX_NAME + 64];
            if (!rec)
                continue;
            pl__dot_set(e, "label", pl_units_bytes(rec->bytes, text, sizeof text));
            if (rec->n_tensors > 1) {
                snprintf(text, sizeof text, "%s and %d more", agget(e, "tooltip"),
                         rec->n_tensors - 1);
                pl__dot_set(e, "tooltip", text);
            }
        }
}

static pl_status draw_ops(graph_drawing *d, pl_error *err)
{
    const pl_graph *graph = d->graph;
    pl_status status = PL_OK;
    for (int o = 0; o < graph->n_ops && status == PL_OK; o++) {
        const pl_op *op = &graph->ops[o];
        Agnode_t *n = box_of(d, o);
        for (int i = 0; i < op->n_inputs && status == PL_OK; i++) {
            int t = op->inputs[i];
            const pl_tensor *tensor = &graph->tensors[t];
            if (tensor->kind == PL_TENSOR_INPUT)
                status = connect(d, pl__dot_node(d->g, "in:", tensor->name), n, t, err);
            else if (tensor->kind == PL_TENSOR_ACTIVATION)
                status = connect(d, box_of(d, tensor->producer), n, t, err);
            /* parameters are listed in the op's label */
        }
    }
    return status;
}

pl_status pl_dot_write_graph(const pl_graph *graph, int max_boxes, FILE *out, pl_error *err)
{
    graph_drawing d = {.graph = graph};
    const char **names = malloc(((size_t)graph->n_ops + 1) * sizeof *names);
    int *phases = malloc(((size_t)graph->n_ops + 1) * sizeof *phases);
    pl_status status = names && phases ? PL_OK
                                       : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int o = 0; status == PL_OK && o < graph->n_ops; o++) {
        names[o] = graph->ops[graph->ops[o].group].name;
        phases[o] = (int)graph->ops[o].phase;
    }
    if (status == PL_OK)
        status = pl__dot_group(graph->n_ops, names, phases, max_boxes, &d.groups, err);
    free(names);
    free(phases);
    if (status == PL_OK && !(d.node = calloc((size_t)d.groups.n_boxes + 1, sizeof *d.node)))
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK && !(d.g = agopen((char *)graph->name, Agdirected, NULL)))
        status = pl_error_set(err, PL_ENOMEM, NULL, "cgraph could not create a graph");
    if (status != PL_OK) {
        pl__dot_groups_release(&d.groups);
        free(d.node);
        return status;
    }
    Agraph_t *g = d.g;
    agattr(g, AGRAPH, "rankdir", "TB");
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "rounded");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontsize", "10");
    agattr(g, AGEDGE, "color", "gray40");
    agattr(g, AGEDGE, "tooltip", "");
    agattr(g, AGEDGE, "fontname", "Helvetica");
    agattr(g, AGEDGE, "fontsize", "9");
    agattr(g, AGRAPH, "label", "");
    char label[2048], shape[96];
    if (d.groups.depth > 0)
        snprintf(label, sizeof label, "%s\n%d ops in %d boxes: ops grouped by the first %d "
                 "parts of their names (3-D boxes: modules; edges: bytes per step)",
                 graph->name, graph->n_ops, d.groups.n_boxes, d.groups.depth);
    pl__dot_set(g, "label", d.groups.depth > 0 ? label : graph->name);
    if (d.groups.depth > 0 || graph->n_ops > PL_DOT_MAX_BOXES)
        pl__dot_fast_layout(g);

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
    status = draw_ops(&d, err);
    if (status == PL_OK)
        label_module_edges(&d);
    pl__dot_groups_release(&d.groups);
    free(d.node);
    if (status != PL_OK) {
        agclose(g);
        return status;
    }
    return pl__dot_finish(g, out, err);
}
