/* Holding a plan to one device: losses and parameters after the same steps. */
#ifndef PLACER_TEST_TRAINING_CHECK_H
#define PLACER_TEST_TRAINING_CHECK_H

#include <stdbool.h>

#include "cluster.h"
#include "data.h"
#include "graph.h"
#include "plan.h"

/* `steps` losses on one device with m micro-batches, and its parameters and optimiser
 * state after them (when `params` is not NULL: per tensor, a copy of its values). */
void pl_test_one_device(const pl_graph *g, const pl_dataset *data, int m, int steps, float *losses,
                        float **params);
/* To 1e-5: relative from 1 up, absolute below. */
bool pl_test_close_to(float got, float want);
/* Runs `plan` for `steps` steps on a fresh executor and compares its losses with `want`
 * and, where params[t] is not NULL, tensor t after them with params[t]. */
void pl_test_check_plan(const pl_graph *g, const pl_cluster *c, const pl_dataset *data,
                        const pl_plan *plan, int steps, const float *want, float **params,
                        const char *what);

#endif
