/* Training data: where the samples fed to a model's inputs come from.
 *
 * A dataset is matched to a graph by its inputs:
 * - Fashion-MNIST (the idx .gz files of Debian's dataset-fashion-mnist, read with zlib):
 *   one f32 data input of 784 values per sample (shape [784] or [1,28,28]) and one i32
 *   label input of shape []; pixels scaled to [0, 1]; 60,000 training and 10,000 test
 *   samples.
 * - Text: one i32 data input and one i32 label input, both [T] per sample, read through an
 *   embedding whose table has V rows: windows of T characters of a text file, the label
 *   the next character; characters map to ids below V. The file is read whole: a regular
 *   file of at most PL_TEXT_MAX_BYTES.
 * Data paths are read by the input rules of input_file.h: a regular file (or, for
 * Fashion-MNIST, a directory of regular files), never a device or FIFO; every bad path is
 * PL_EINPUT.
 * - Synthetic: any other model. Deterministic samples with a learnable target: data drawn
 *   from the seed and the sample index, labels computed from the data by a fixed random
 *   "teacher", so that training can lower the loss; a fixed train/test split.
 *
 * Sample order: each epoch visits the training split in a permutation drawn from (seed,
 * epoch); the test split in order. Everything is a pure function of (seed, epoch, index):
 * resuming from a checkpoint continues the same sequence.
 *
 * Thread-safety: a dataset is read-only after opening; pl_dataset_fill may be called from
 * several threads at once. */
#ifndef PLACER_DATA_H
#define PLACER_DATA_H

#include <stdint.h>

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_dataset pl_dataset;

#define PL_TEXT_MAX_BYTES (INT64_C(1) << 30) /* 1 GiB: the largest text file read */

typedef enum pl_split { PL_SPLIT_TRAIN, PL_SPLIT_TEST } pl_split;

typedef enum pl_data_kind {
    PL_DATA_FASHION_MNIST,
    PL_DATA_TEXT,
    PL_DATA_SYNTHETIC
} pl_data_kind;

#define PL_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define PL_DEFAULT_TEXT "/usr/share/common-licenses/GPL-3"

/* Opens the data for `graph`. `path` (may be NULL) is a Fashion-MNIST directory, a text
 * file, or "synthetic"; NULL chooses by the graph's inputs: Fashion-MNIST from
 * PL_FASHION_MNIST_DIR for models shaped for it, PL_DEFAULT_TEXT for text models,
 * synthetic otherwise. A missing or malformed file is a PL_EINPUT error naming the file
 * and what is wrong. */
pl_dataset *pl_dataset_open(const pl_graph *graph, const char *path, uint64_t seed,
                            pl_error *err);
void pl_dataset_free(pl_dataset *data);

pl_data_kind pl_dataset_kind(const pl_dataset *data);
const char *pl_dataset_describe(const pl_dataset *data); /* "Fashion-MNIST (...)" */
int64_t pl_dataset_size(const pl_dataset *data, pl_split split);

/* Writes samples [first, first + count) of `split` (in epoch `epoch`'s order for the
 * training split) into the graph's input tensors: inputs[t] is the buffer of tensor t for
 * every input tensor t of the graph (other entries are ignored), laid out as the tensor
 * with its batch dimension equal to `count`. Indices past the end wrap around. */
void pl_dataset_fill(const pl_dataset *data, pl_split split, int64_t epoch, int64_t first,
                     int count, void *const *inputs);

#ifdef __cplusplus
}
#endif

#endif
