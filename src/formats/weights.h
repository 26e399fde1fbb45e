/* A training graph's weights as a tensor file (tensor_file.h, docs/tensor-file.md): every
 * parameter, trainable or not, and every batch-norm running average (NODE/running_mean,
 * NODE/running_var, as autodiff.h names them), in the graph's order. What the importers
 * write, `placer train --weights` and `placer run --weights` read, and
 * `placer train --save-weights` writes.
 *
 * Loading checks everything before writing any buffer: the file's index first (each weight
 * of the graph present in the file, no tensor the graph does not have, and each one's
 * dtype and shape equal to the graph's), before any data are read, so that a file that is
 * not the graph's costs only its header; then each weight's data, its checksum and every
 * value finite. Errors (PL_EINPUT) name the tensor, with the file as their source.
 *
 * `buffers[t]` is the buffer of tensor t (a session's or an executor's host buffer,
 * laid out as the tensor); only weights' entries are read. Thread-safe (no shared
 * state). */
#ifndef PLACER_WEIGHTS_H
#define PLACER_WEIGHTS_H

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

pl_status pl_weights_load(const char *path, const pl_graph *graph, void *const *buffers,
                          pl_error *err);
pl_status pl_weights_save(const char *path, const pl_graph *graph, void *const *buffers,
                          pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
