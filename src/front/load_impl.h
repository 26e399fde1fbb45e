/* Shared state of the model loader's passes (load.c: the file and its top-level fields;
 * load_nodes.c: nodes and attributes; load_order.c: name resolution, topological order,
 * shapes and costs). Private to the loader. */
#ifndef PLACER_LOAD_IMPL_H
#define PLACER_LOAD_IMPL_H

#include <jansson.h>

#include "graph.h"
#include "json_reader.h"
#include "strmap.h"

typedef struct loader {
    pl_json_reader r;
    pl_graph *graph;
    pl_strmap tensor_names, op_names;
    int tensor_cap;
    /* Where each tensor was defined: the node and output slot, or -1 and the index in
     * "inputs"/"parameters" for those. */
    int *def_node, *def_slot;
    const json_t *nodes; /* the "nodes" array: ops keep their source_index into it */
    /* Node inputs are resolved after every output is known: their JSON names. */
    const json_t **input_names;
} loader;

/* load_nodes.c */
bool pl_load_nodes(loader *L, const json_t *nodes);
/* Adds a tensor named by `name_value` (validated and checked for duplicates at the
 * current pointer). Returns its index or -1. */
int pl_load_add_tensor(loader *L, const json_t *name_value, pl_tensor_kind kind, int def_node,
                       int def_slot);

/* load_order.c, in this order: each input's tensor, found by name; the ops in
 * topological order (the file's own order kept wherever the dataflow allows), or the
 * cycle that prevents one; then shapes and costs. */
bool pl_load_resolve_inputs(loader *L);
bool pl_load_sort(loader *L);
bool pl_load_infer_shapes(loader *L);

#endif
