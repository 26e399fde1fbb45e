/* What the two dot drawings (dot.c: a model; dot_plan.c: a placed training graph) share:
 * node ids and attribute setting through cgraph. Private to src/. */
#ifndef PLACER_DOT_IMPL_H
#define PLACER_DOT_IMPL_H

#include <graphviz/cgraph.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* The node "PREFIXNAME" of g (created when missing). Prefixes keep name spaces apart. */
Agnode_t *pl__dot_node(Agraph_t *g, const char *prefix, const char *name);
/* Sets an attribute of a graph, node or edge, declaring it (default "") when new. */
void pl__dot_set(void *object, const char *key, const char *value);
/* The edge tail -> head of g with its record `name` of `size` bytes (zeroed when new,
 * *created then true), created when missing: the drawings merge what one edge carries.
 * NULL when out of memory. */
void *pl__dot_edge_record(Agraph_t *g, Agnode_t *tail, Agnode_t *head, const char *name,
                          size_t size, Agedge_t **edge, bool *created);
/* Layout settings that keep dot fast on a large drawing (more than PL_DOT_MAX_BOXES units
 * drawn op by op, or any drawn in module boxes): one round of network simplex placing
 * the boxes across (nslimit=1) and no second crossing minimisation per cluster
 * (remincross=false), the two that paid (docs/plan-format.md, "Large models"); smaller
 * drawings keep dot's defaults, which place their boxes better. */
void pl__dot_fast_layout(Agraph_t *g);
/* Writes g to out and closes it; PL_EIO when writing failed. */
pl_status pl__dot_finish(Agraph_t *g, FILE *out, pl_error *err);

/* Units (ops or co-location groups) grouped into boxes by module (dot_modules.c). With
 * more units than max_boxes (> 0), units of one container (any number the caller gives:
 * a device and stage, a phase) and one module share a box; else each unit is its own. */
typedef struct pl__dot_groups {
    int depth;      /* path components a module keeps; 0: one box per unit */
    int n_boxes;
    int *box;       /* per unit: its box, numbered in the order of their first units */
    const char **module; /* per box: its module's path (in text), or at depth 0 its unit's
                            name as given (borrowed) */
    int *n_members; /* per box: its units */
    char *text;     /* owns the paths */
} pl__dot_groups;

/* Groups n_units units by the names given (a unit's op name, or its forward op's) within
 * their containers (NULL: one). PL_ENOMEM, else out is filled; release it. */
pl_status pl__dot_group(int n_units, const char *const *names, const int *containers,
                        int max_boxes, pl__dot_groups *out, pl_error *err);
void pl__dot_groups_release(pl__dot_groups *groups);
/* The length of a module path's parent ("features.denseblock1" of
 * "features.denseblock1.denselayer3"); 0 at the top. */
size_t pl__dot_parent_length(const char *module);

#endif
