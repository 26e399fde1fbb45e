/* Training checkpoints: every parameter and state tensor of a session plus where training
 * stood, so that a resumed run continues exactly as an uninterrupted one would.
 *
 * Format (little-endian, as the machine writes it): "PLACERCK", u32 version 1, u64 model
 * hash, i64 step, i64 epoch, i64 position, u64 seed, u32 tensor count, then per tensor
 * u32 name length, the name, u64 element count, the floats. Written atomically.
 *
 * Reading checks everything before changing anything: the format version, the model hash
 * (pl_graph.hash), the step (0 to PL_CHECKPOINT_MAX_STEP), the epoch (0 to the step: an
 * epoch takes a step at least), the position (not negative; the caller checks it against
 * its data set), the file long enough for the model's records before room is made for
 * them, every parameter and optimiser state present exactly once at its size with finite
 * values (f32 ones), and nothing after the last. Errors name the file as their source, the
 * problem in the text (one line). */
#ifndef PLACER_CHECKPOINT_H
#define PLACER_CHECKPOINT_H

#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_CHECKPOINT_VERSION = 1 };
#define PL_CHECKPOINT_MAX_STEP (INT64_C(1) << 48)

typedef struct pl_train_position {
    int64_t step;     /* steps done */
    int64_t epoch;    /* current epoch, from 0 */
    int64_t position; /* samples of the current epoch done */
    uint64_t seed;
} pl_train_position;

pl_status pl_checkpoint_write(const char *path, const pl_graph *graph, pl_session *session,
                              const pl_train_position *where, pl_error *err);
pl_status pl_checkpoint_read(const char *path, const pl_graph *graph, pl_session *session,
                             pl_train_position *where, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
