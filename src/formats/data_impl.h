/* Private to the data module: the dataset record its three sources share, the graph
 * analysis that matches a model to a source, and the helpers every source uses. */
#ifndef PLACER_DATA_IMPL_H
#define PLACER_DATA_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "data.h"

enum { PL_DATA_DESCRIBE_MAX = 512 };

/* Writes sample `sample` of `split` into slot `slot` of the input buffers, which hold
 * `count` samples (a sample is contiguous only where the batch is axis 0). */
typedef void pl_data_fill_fn(const pl_dataset *data, pl_split split, int64_t sample, int slot,
                             int count, void *const *inputs);

struct pl_dataset {
    pl_data_kind kind;
    uint64_t seed;
    int64_t size[2]; /* samples per split, indexed by pl_split */
    char describe[PL_DATA_DESCRIBE_MAX];
    pl_data_fill_fn *fill;
    void (*release)(void *source);
    void *source; /* the kind's own state */
};

/* What the matching found in a graph for Fashion-MNIST and text: the data and label input
 * tensors; for text also the window length and the number of ids (the embedding's rows,
 * bounded by the classes of the loss). */
typedef struct pl_data_match {
    int data, label;
    int64_t steps;
    int64_t vocab;
} pl_data_match;

/* ---- graph analysis (data.c) ------------------------------------------------------- */

/* Elements of one sample of a batched input (its shape without the batch). */
int64_t pl_data_sample_elements(const pl_tensor *tensor);

/* The classes of a label: the last dimension of the logits of the softmax_cross_entropy
 * that reads it (the smallest, if several do), or 0 when none does. */
int64_t pl_data_classes(const pl_graph *graph, int label);

/* How many ids an i32 tensor may hold: the fewest rows among the embedding tables that
 * look it up and the fewest classes among the losses that read it as labels; 0 when
 * neither reads it. */
int64_t pl_data_id_range(const pl_graph *graph, int tensor);

/* Whether the loss on `label` [T] can see, at position t, positions of the i32 sequence
 * `data` after t. Position t sees position s of `data` only through a `split` on axis 1
 * of the sequence (or of its embedding) whose pieces reach the logits of the loss through
 * a `concat` on axis 1: an unrolled recurrent model. Everything else sees the whole
 * sequence at every position. */
typedef enum pl_data_order {
    PL_ORDER_UNUSED,    /* the loss does not depend on `data` */
    PL_ORDER_CAUSAL,    /* position t sees positions <= t only */
    PL_ORDER_LOOKAHEAD, /* some position sees a later one */
    PL_ORDER_NOMEM
} pl_data_order;
pl_data_order pl_data_order_of(const pl_graph *graph, int data, int label);

/* Records a problem with `file` (the error's source) unless one is recorded already. */
pl_status pl_data_fail(pl_error *err, pl_status status, const char *file, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
/* Opens a data file by the input rules (input_file.h): its descriptor in *fd (the caller
 * closes it) and its size, or the error recorded by pl_data_fail. */
pl_status pl_data_open_file(const char *path, int *fd, int64_t *size, pl_error *err);

/* Position `index` of the permutation of [0, n) drawn from (seed, epoch): a pure function,
 * so no permutation is ever stored and any thread can compute any position. */
int64_t pl_data_shuffle(uint64_t seed, int64_t epoch, int64_t index, int64_t n);

/* ---- the sources: each fills in `data` (size, describe, fill, release, source) ------ */

/* Fashion-MNIST from the directory `dir` (data_mnist.c). */
pl_status pl_data_open_mnist(pl_dataset *data, const pl_data_match *match, const char *dir,
                             pl_error *err);

/* Windows of the text file `path` (data_text.c). */
pl_status pl_data_open_text(pl_dataset *data, const pl_data_match *match, const char *path,
                            pl_error *err);
/* The alphabet: the id below `vocab` of a byte of text. */
int pl_data_char_id(unsigned char byte, int64_t vocab);
enum { PL_TEXT_ALPHABET = 96 }; /* symbols with an id of their own when vocab >= 96 */

/* Synthetic samples and their teachers (data_synthetic.c). */
pl_status pl_data_open_synthetic(pl_dataset *data, const pl_graph *graph, pl_error *err);
enum { PL_SYNTHETIC_TRAIN = 16384, PL_SYNTHETIC_TEST = 2048 };

#endif
