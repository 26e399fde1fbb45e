/* Initial values of parameters, states and constants from their initialiser: a pure
 * function of the initialiser, the shape and the element index (rng.h), so every run and
 * every placement starts from the same numbers. */
#ifndef PLACER_INIT_H
#define PLACER_INIT_H

#include "graph.h"

/* Fills `data` (pl_tensor_elements(t) floats, or int32_t for an i32 tensor, whose
 * initialisers are zeros, ones, constant and values). Thread-safe. */
void pl_tensor_initialize(const pl_tensor *t, void *data);

/* Fan-in and fan-out as docs/model-format.md defines them. */
void pl_tensor_fans(const pl_tensor *t, double *fan_in, double *fan_out);

#endif
