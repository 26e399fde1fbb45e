/* A training session on one device: the buffers of a training graph, a worker pool, and
 * the steps that run it. (The multi-device executor places the same graph across
 * several such pools.)
 *
 * Contract: pl_session_new allocates every tensor once (for the full batch), gives
 * parameters, states and constants their initial values, and starts the pool; nothing
 * is allocated per step. A step runs the forward and backward ops once per micro-batch
 * (each on its slice of the batch), then the updates once. Not thread-safe: one caller
 * drives a session. */
#ifndef PLACER_SESSION_H
#define PLACER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_session pl_session;

/* `graph` is a training graph (autodiff.h), borrowed for the session's life. */
pl_session *pl_session_new(const pl_graph *graph, int threads, pl_error *err);
void pl_session_free(pl_session *session);

/* The buffer of tensor t, laid out for the full batch: fill inputs here before a step,
 * read outputs after one (activations hold the last micro-batch), read and write
 * parameters and states for checkpoints. */
void *pl_session_data(pl_session *session, int t);

/* One training step of `micro_batches` (dividing the batch) micro-batches: gradients,
 * then updates. `step` counts from 1 (Adam's bias correction, dropout masks). *loss gets
 * the mean of the micro-batches' losses. PL_EINPUT when the batch does not divide or the model
 * keeps its steps whole (graph.h: pl_graph_allows_micro_batches). */
pl_status pl_session_train_step(pl_session *session, int64_t step, int micro_batches,
                                float *loss, pl_error *err);

/* The two halves of a step. pl_session_gradients runs the forward and backward ops of
 * every micro-batch, adding the parameter gradients into their accumulators;
 * pl_session_update applies them (and clears the accumulators). */
pl_status pl_session_gradients(pl_session *session, int64_t step, int micro_batches,
                               float *loss, pl_error *err);
void pl_session_update(pl_session *session, int64_t step, int micro_batches);

/* The forward ops only, on the whole batch, in training mode (as a step computes the
 * loss) or evaluation mode (no dropout; batch norm on its running averages). */
pl_status pl_session_forward(pl_session *session, bool training, float *loss,
                             pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
