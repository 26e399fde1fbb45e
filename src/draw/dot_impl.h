/* What the two dot drawings (dot.c: a model; dot_plan.c: a placed training graph) share:
 * node ids and attribute setting through cgraph. Private to src/. */
#ifndef PLACER_DOT_IMPL_H
#define PLACER_DOT_IMPL_H

#include <graphviz/cgraph.h>
#include <stdio.h>

#include "error.h"

/* The node "PREFIXNAME" of g (created when missing). Prefixes keep name spaces apart. */
Agnode_t *pl__dot_node(Agraph_t *g, const char *prefix, const char *name);
/* Sets an attribute of a graph, node or edge, declaring it (default "") when new. */
void pl__dot_set(void *object, const char *key, const char *value);
/* Writes g to out and closes it; PL_EIO when writing failed. */
pl_status pl__dot_finish(Agraph_t *g, FILE *out, pl_error *err);

#endif
