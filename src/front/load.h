/* The model loader: a placer model file (docs/model-format.md) into a validated graph IR.
 *
 * Contract: on success returns a new graph the caller frees with pl_graph_free; every
 * tensor has its shape, every op its costs, ops are in topological order. On failure
 * returns NULL and records the first problem in `err` (may be NULL): syntax errors with
 * line and column, everything else with a JSON pointer. Bad input never crashes and
 * nothing is allocated from a size before that size is checked against the limits in
 * graph.h. Re-entrant: no global state. */
#ifndef PLACER_LOAD_H
#define PLACER_LOAD_H

#include <stddef.h>

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_MODEL_FORMAT_VERSION = 1 };
#define PL_MODEL_MAX_BYTES ((size_t)1 << 30) /* 1 GiB */

pl_graph *pl_graph_load_file(const char *path, pl_error *err);
/* The same from memory; `source` names it in errors. */
pl_graph *pl_graph_load_buffer(const char *data, size_t size, const char *source,
                               pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
