/* Tensor files ("placer tensors", docs/tensor-file.md): named tensors with their shapes,
 * dtypes (f32, i32) and a CRC-32 each, for weights (`placer train --weights`,
 * `--save-weights`), inputs and outputs of `placer eval`, and the importers
 * (tools/importers/placer_tensors.py reads and writes the same files).
 *
 * Layout: the line "placer-tensors\n"; a JSON header on one line (the format, its version
 * and the index: name, dtype, shape, offset, bytes, crc32 per tensor, in the file's
 * order); zero bytes up to the next multiple of 64, where the data start; each tensor's
 * little-endian values at its offset from there (a multiple of 64).
 *
 * Reading checks everything before returning anything: the magic line, the header's JSON
 * (errors give its line and column or a JSON pointer: "w.tensors: /tensors/3/shape/1:
 * ..."), unknown fields, names (1 to 255 bytes, no control characters, each once), ranks
 * (0 to PL_MAX_RANK), dimensions, sizes (bytes = elements x 4), alignment, overlaps,
 * truncation, bytes after the last tensor and every checksum ("tensor \"fc1/w\": the
 * checksum ..."); errors are PL_EINPUT with the file as their source.
 *
 * Ownership: a pl_tensor_file owns its names and data; pl_tensor_file_free(NULL) is a
 * no-op. Thread-safe (no shared state). */
#ifndef PLACER_TENSOR_FILE_H
#define PLACER_TENSOR_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PL_TENSOR_FILE_VERSION = 1,
    PL_TENSOR_FILE_ALIGN = 64,           /* data start and every offset */
    PL_TENSOR_FILE_MAX_TENSORS = 1000000,
};
#define PL_TENSOR_FILE_MAGIC "placer-tensors\n"
#define PL_TENSOR_FILE_MAX_HEADER (INT64_C(64) << 20) /* bytes of the JSON line */

typedef struct pl_named_tensor {
    const char *name;
    pl_dtype dtype;
    int rank;
    int64_t dims[PL_MAX_RANK];
    void *data; /* elements x 4 bytes in the host's layout (float or int32_t) */
} pl_named_tensor;

typedef struct pl_tensor_file {
    int n;
    pl_named_tensor *tensors; /* in the file's order */
} pl_tensor_file;

/* The whole file, checked; NULL with the first problem in `err` (its source the path). */
pl_tensor_file *pl_tensor_file_read(const char *path, pl_error *err);
void pl_tensor_file_free(pl_tensor_file *file);
/* Index of the tensor called `name`, or -1. */
int pl_tensor_file_find(const pl_tensor_file *file, const char *name);
int64_t pl_named_tensor_elements(const pl_named_tensor *tensor);
/* Writes "[64,784]" (at most cap bytes, always terminated). */
void pl_named_tensor_format_shape(const pl_named_tensor *tensor, char *buf, size_t cap);

/* Writes `n` tensors, in this order, atomically (atomic_file.h: the umask's mode).
 * PL_EINPUT when two share a name or a name, rank or size is out of the format's limits;
 * PL_EIO when writing fails. */
pl_status pl_tensor_file_write(const char *path, const pl_named_tensor *tensors, int n,
                               pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
