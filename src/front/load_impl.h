/* Shared state of the model loader's passes (load.c: the file and its top-level fields;
 * load_nodes.c: nodes and attributes; load_order.c: name resolution, topological order,
 * shapes and costs). Private to the loader. */
#ifndef PLACER_LOAD_IMPL_H
#define PLACER_LOAD_IMPL_H

#include <jansson.h>

#include "graph.h"
#include "json_outline.h"
#include "json_reader.h"
#include "strmap.h"

/* An array member of the root ("inputs", "parameters", "nodes"), read one element at a
 * time: from the parsed document, or from its outline (json_outline.h), each element
 * parsed when taken and dropped after use. The elements' content hash is folded in as
 * they are taken, each once and in order. */
typedef struct pl_load_array {
    const json_t *tree;                    /* the parsed array, or NULL */
    const pl_json_outline_array *outlined; /* else its elements as text */
    size_t n;
    uint64_t hash;
} pl_load_array;

/* A node's input named before the tensor it names: resolved once every node is read. */
typedef struct pl_load_pending {
    int op, slot;
    const char *name; /* in the loader's scratch arena */
} pl_load_pending;

typedef struct loader {
    pl_json_reader r;
    pl_graph *graph;
    pl_strmap tensor_names, op_names;
    int tensor_cap;
    /* Where each tensor was defined: the node and output slot, or -1 and the index in
     * "inputs"/"parameters" for those. */
    int *def_node, *def_slot;
    const pl_json_outline *outline; /* the document's, or NULL when it was parsed whole */
    pl_load_array inputs, parameters, nodes;
    bool unparsed; /* an outlined element did not parse: the document is parsed whole */
    pl_load_pending *pending;
    int n_pending, pending_cap;
    pl_arena scratch;
} loader;

/* load.c: element i of `array` (taken in order, each once), a new reference; NULL when
 * it does not parse (L->unparsed is set: the caller fails at once, no error recorded). */
json_t *pl_load_element(loader *L, pl_load_array *array, size_t i);

/* load_nodes.c */
bool pl_load_nodes(loader *L, const json_t *root);
/* Adds a tensor named by `name_value` (validated and checked for duplicates at the
 * current pointer). Returns its index or -1. */
int pl_load_add_tensor(loader *L, const json_t *name_value, pl_tensor_kind kind, int def_node,
                       int def_slot);

/* load_order.c, in this order: the inputs named before their tensors (the others are
 * found while reading), by name; the ops in topological order (the file's own order kept
 * wherever the dataflow allows), or the cycle that prevents one; then shapes and costs. */
bool pl_load_resolve_inputs(loader *L);
bool pl_load_sort(loader *L);
bool pl_load_infer_shapes(loader *L);

#endif
