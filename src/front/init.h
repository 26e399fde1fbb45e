/* Initial values of parameters, states and constants from their initialiser: a pure
 * function of the initialiser, the shape and the element index (rng.h), so every run and
 * every placement starts from the same numbers. */
#ifndef PLACER_INIT_H
#define PLACER_INIT_H

#include "graph.h"

/* Fills `data` (pl_tensor_elements(t) floats, or int32_t for an i32 tensor, whose
 * initialisers are zeros, ones, constant and values). Thread-safe. */
void pl_tensor_initialize(const pl_tensor *t, void *data);

/* Element `i` of a tensor as an element of the whole tensor it is a shard of (graph.h:
 * pl_init's shard fields); `i` itself for a whole tensor. */
int64_t pl_shard_whole_index(const pl_tensor *t, int64_t i);

/* Fan-in and fan-out as docs/model-format.md defines them. */
void pl_tensor_fans(const pl_tensor *t, double *fan_in, double *fan_out);

#endif
