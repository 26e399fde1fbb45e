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
 * Reading is in two steps, so that a file is checked against what its caller needs before
 * its data are read. pl_tensor_file_open reads the header alone and checks it whole: the
 * magic line, the header's JSON (errors give its line and column or a JSON pointer:
 * "w.tensors: /tensors/3/shape/1: ..."), unknown fields, names (1 to 255 bytes, no
 * control characters, each once), ranks (0 to PL_MAX_RANK), dimensions, sizes (bytes =
 * elements x 4), alignment, overlaps, every tensor's end against the file's length, bytes
 * after the last tensor and the padding; it allocates nothing a tensor declares, so its
 * time and memory follow the header's length. The caller then matches names, dtypes and
 * shapes against the index and reads only the tensors it wants with pl_tensor_file_load,
 * which checks each one's checksum ("tensor \"fc1/w\": the checksum ..."). Errors are
 * PL_EINPUT with the file as their source. pl_tensor_file_read does both for every tensor.
 *
 * Values are not checked: the format holds any float. pl_named_tensor_check_finite is
 * for readers whose values must be numbers (weights, policies).
 *
 * Ownership: a pl_tensor_file owns its names, its data and, once opened, the open file
 * (closed by pl_tensor_file_free; pl_tensor_file_free(NULL) is a no-op). Different files
 * may be used on different threads; one file, one thread at a time. */
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
    pl_named_tensor *tensors; /* in the file's order; data NULL until loaded */
    struct pl_tensor_file_source *source; /* private: the open file, where each tensor is */
} pl_tensor_file;

/* The index, checked (above); no tensor's data read. NULL with the first problem in `err`
 * (its source the path). */
pl_tensor_file *pl_tensor_file_open(const char *path, pl_error *err);
/* Reads tensor `k` of an opened file into tensors[k].data (a no-op once read), its
 * checksum checked; the first problem in `err` (its source the file's path when `err`
 * holds none yet), and data stays NULL. */
pl_status pl_tensor_file_load(pl_tensor_file *file, int k, pl_error *err);
/* The whole file: opened and every tensor loaded. */
pl_tensor_file *pl_tensor_file_read(const char *path, pl_error *err);
/* PL_OK when a loaded tensor holds no NaN or infinity (i32 always); else PL_EINPUT with
 * "tensor \"NAME\": value 12 is nan (expected a finite number)", the first such value. */
pl_status pl_named_tensor_check_finite(const pl_named_tensor *tensor, pl_error *err);
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
