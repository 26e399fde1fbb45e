/* Datasets: matching a graph to a source (Fashion-MNIST, text or synthetic), opening it,
 * the per-epoch shuffled order, and pl_dataset_fill's dispatch to the source. */
#include "data_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "input_file.h"

#include "rng.h"

/* ---- graph analysis ---------------------------------------------------------------- */

int64_t pl_data_sample_elements(const pl_tensor *tensor)
{
    pl_batch_layout layout = pl_tensor_batch_layout(tensor);
    return layout.outer * layout.inner;
}

/* Fashion-MNIST and text write each sample whole: they take inputs batched on axis 0. */
static int sample_rank(const pl_tensor *tensor)
{
    return tensor->batch_axis == 0 ? tensor->rank - 1 : -1;
}

static int64_t sample_dim(const pl_tensor *tensor, int a)
{
    return tensor->dims[a + 1];
}

static int64_t smaller(int64_t have, int64_t candidate)
{
    return have == 0 || candidate < have ? candidate : have;
}

/* Only the model's own ops: autodiff's ops also read labels and ids. */
int64_t pl_data_classes(const pl_graph *graph, int label)
{
    int64_t classes = 0;
    for (int o = 0; o < graph->n_forward_ops; o++) {
        const pl_op *op = &graph->ops[o];
        if (op->kind == PL_OP_SOFTMAX_CROSS_ENTROPY && op->inputs[1] == label) {
            const pl_tensor *logits = &graph->tensors[op->inputs[0]];
            classes = smaller(classes, logits->dims[logits->rank - 1]);
        }
    }
    return classes;
}

int64_t pl_data_id_range(const pl_graph *graph, int tensor)
{
    int64_t range = pl_data_classes(graph, tensor);
    for (int o = 0; o < graph->n_forward_ops; o++) {
        const pl_op *op = &graph->ops[o];
        if (op->kind == PL_OP_EMBEDDING && op->inputs[1] == tensor)
            range = smaller(range, graph->tensors[op->inputs[0]].dims[0]);
    }
    return range;
}

static int resolved_axis(int64_t axis, int rank)
{
    return (int)(axis < 0 ? axis + rank : axis);
}

/* The sequence itself, or its embedding: tensors whose axis 1 is the position. */
static bool position_aligned(const pl_graph *graph, int tensor, int data)
{
    if (tensor == data)
        return true;
    int producer = graph->tensors[tensor].producer;
    return producer >= 0 && graph->ops[producer].kind == PL_OP_EMBEDDING &&
           graph->ops[producer].inputs[1] == data;
}

enum { DEP_NONE = -1, DEP_ALL = INT_MAX };

/* A split of the sequence along its positions: piece k depends on its positions only. */
static bool split_positions(const pl_graph *graph, const pl_op *op, int data, int *dep)
{
    const pl_tensor *x = &graph->tensors[op->inputs[0]];
    if (op->kind != PL_OP_SPLIT || resolved_axis(op->attrs.axis, x->rank) != 1 ||
        !position_aligned(graph, op->inputs[0], data))
        return false;
    int64_t offset = 0;
    for (int k = 0; k < op->n_outputs; k++) {
        int64_t width = graph->tensors[op->outputs[k]].dims[1];
        dep[op->outputs[k]] = (int)(offset + width - 1);
        offset += width;
    }
    return true;
}

/* dep[t]: the last position of `data` that tensor t depends on. */
static void propagate_positions(const pl_graph *graph, int data, int *dep)
{
    for (int t = 0; t < graph->n_tensors; t++)
        dep[t] = DEP_NONE;
    dep[data] = DEP_ALL;
    for (int o = 0; o < graph->n_forward_ops; o++) {
        const pl_op *op = &graph->ops[o];
        if (split_positions(graph, op, data, dep))
            continue;
        int last = DEP_NONE;
        for (int i = 0; i < op->n_inputs; i++)
            if (dep[op->inputs[i]] > last)
                last = dep[op->inputs[i]];
        for (int k = 0; k < op->n_outputs; k++)
            dep[op->outputs[k]] = last;
    }
}

/* The logits are the per-position pieces joined on axis 1: piece p, holding positions
 * [offset, offset + width), must not depend on a position after `offset`. */
static pl_data_order logits_order(const pl_graph *graph, int logits, const int *dep)
{
    if (dep[logits] == DEP_NONE)
        return PL_ORDER_UNUSED;
    int producer = graph->tensors[logits].producer;
    if (producer < 0)
        return PL_ORDER_LOOKAHEAD;
    const pl_op *op = &graph->ops[producer];
    if (op->kind != PL_OP_CONCAT ||
        resolved_axis(op->attrs.axis, graph->tensors[logits].rank) != 1)
        return PL_ORDER_LOOKAHEAD;
    int64_t offset = 0;
    for (int i = 0; i < op->n_inputs; i++) {
        int piece = op->inputs[i];
        if (dep[piece] != DEP_NONE && dep[piece] > offset)
            return PL_ORDER_LOOKAHEAD;
        offset += graph->tensors[piece].dims[1];
    }
    return PL_ORDER_CAUSAL;
}

pl_data_order pl_data_order_of(const pl_graph *graph, int data, int label)
{
    int *dep = malloc((size_t)graph->n_tensors * sizeof *dep);
    if (!dep)
        return PL_ORDER_NOMEM;
    propagate_positions(graph, data, dep);
    pl_data_order order = PL_ORDER_UNUSED;
    for (int o = 0; o < graph->n_forward_ops; o++) {
        const pl_op *op = &graph->ops[o];
        if (op->kind != PL_OP_SOFTMAX_CROSS_ENTROPY || op->inputs[1] != label)
            continue;
        pl_data_order here = logits_order(graph, op->inputs[0], dep);
        if (here > order)
            order = here;
    }
    free(dep);
    return order;
}

/* The graph's inputs, at most two: false when it has any other number. */
static bool two_inputs(const pl_graph *graph, int *data, int *label)
{
    int n = 0;
    *data = *label = -1;
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        if (tensor->kind != PL_TENSOR_INPUT)
            continue;
        n++;
        if (tensor->role == PL_ROLE_DATA)
            *data = t;
        else if (tensor->role == PL_ROLE_LABEL)
            *label = t;
    }
    return n == 2 && *data >= 0 && *label >= 0;
}

/* One f32 image of 784 values ([784] or [1,28,28]) and one i32 class label [] over at
 * least the ten Fashion-MNIST classes. */
static bool match_mnist(const pl_graph *graph, pl_data_match *match)
{
    if (!two_inputs(graph, &match->data, &match->label))
        return false;
    const pl_tensor *image = &graph->tensors[match->data];
    const pl_tensor *label = &graph->tensors[match->label];
    int rank = sample_rank(image);
    bool shaped = (rank == 1 && sample_dim(image, 0) == 784) ||
                  (rank == 3 && sample_dim(image, 0) == 1 && sample_dim(image, 1) == 28 &&
                   sample_dim(image, 2) == 28);
    return image->dtype == PL_F32 && shaped && label->dtype == PL_I32 &&
           sample_rank(label) == 0 && pl_data_classes(graph, match->label) >= 10;
}

/* i32 tokens [T] through an embedding and i32 next-token labels [T], in a model that
 * sees at position t no token after t: otherwise the label would be in its input. */
static pl_status match_text(const pl_graph *graph, pl_data_match *match, bool *matched)
{
    *matched = false;
    if (!two_inputs(graph, &match->data, &match->label))
        return PL_OK;
    const pl_tensor *tokens = &graph->tensors[match->data];
    const pl_tensor *targets = &graph->tensors[match->label];
    if (tokens->dtype != PL_I32 || targets->dtype != PL_I32 || sample_rank(tokens) != 1 ||
        sample_rank(targets) != 1 || sample_dim(tokens, 0) != sample_dim(targets, 0))
        return PL_OK;
    int64_t rows = 0;
    for (int o = 0; o < graph->n_forward_ops; o++)
        if (graph->ops[o].kind == PL_OP_EMBEDDING && graph->ops[o].inputs[1] == match->data)
            rows = smaller(rows, graph->tensors[graph->ops[o].inputs[0]].dims[0]);
    int64_t classes = pl_data_classes(graph, match->label);
    if (rows == 0 || classes == 0)
        return PL_OK;
    pl_data_order order = pl_data_order_of(graph, match->data, match->label);
    if (order == PL_ORDER_NOMEM)
        return PL_ENOMEM;
    match->steps = sample_dim(tokens, 0);
    match->vocab = rows < classes ? rows : classes;
    *matched = order == PL_ORDER_CAUSAL;
    return PL_OK;
}

/* ---- the shuffled order ------------------------------------------------------------ */

/* A balanced Feistel network over [0, 2^(2*half)), walked until it lands below n (at most
 * four tries on average, since 2^(2*half) < 4n): a bijection of [0, n). */
int64_t pl_data_shuffle(uint64_t seed, int64_t epoch, int64_t index, int64_t n)
{
    if (n <= 1)
        return 0;
    int half = 1;
    while (half < 31 && (INT64_C(1) << (2 * half)) < n)
        half++;
    uint64_t mask = (UINT64_C(1) << half) - 1;
    uint64_t key = pl_rng_mix(seed ^ pl_rng_mix((uint64_t)epoch ^ UINT64_C(0x5EED0F0E90C4)));
    uint64_t x = (uint64_t)index;
    do {
        uint64_t left = x >> half, right = x & mask;
        for (uint64_t round = 0; round < 6; round++) {
            uint64_t next = left ^ (pl_rng_u64(key + round, right) & mask);
            left = right;
            right = next;
        }
        x = (left << half) | right;
    } while (x >= (uint64_t)n);
    return (int64_t)x;
}

/* ---- errors ------------------------------------------------------------------------ */

pl_status pl_data_open_file(const char *path, int *fd, int64_t *size, pl_error *err)
{
    pl_status status = PL_OK;
    char why[256];
    if ((*fd = pl_input_open(path, size, &status, why, sizeof why)) < 0)
        return pl_data_fail(err, status, path, "%s", why);
    return PL_OK;
}

pl_status pl_data_fail(pl_error *err, pl_status status, const char *file, const char *fmt,
                       ...)
{
    if (!err || err->status != PL_OK)
        return status;
    char text[PL_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(err->source, sizeof err->source, "%s", file ? file : "");
    return pl_error_set(err, status, NULL, "%s", text);
}

/* ---- opening ----------------------------------------------------------------------- */

static const char *const mnist_shape_text =
    "one f32 data input of [784] or [1,28,28] and one i32 label [] read by "
    "softmax_cross_entropy over at least 10 classes";
static const char *const text_shape_text =
    "one i32 data input [T] read by an embedding and one i32 label [T] read by "
    "softmax_cross_entropy, in a model that sees at position t no token after t (an "
    "unrolled recurrent model)";

static pl_status open_directory(pl_dataset *data, const pl_graph *graph, const char *dir,
                                pl_error *err)
{
    pl_data_match match;
    if (!match_mnist(graph, &match))
        return pl_data_fail(err, PL_EINPUT, dir,
                            "is a directory, read as Fashion-MNIST, but model \"%s\" does "
                            "not take Fashion-MNIST: that needs %s",
                            graph->name, mnist_shape_text);
    return pl_data_open_mnist(data, &match, dir, err);
}

static pl_status open_file(pl_dataset *data, const pl_graph *graph, const char *path,
                           pl_error *err)
{
    pl_data_match match;
    bool matched;
    if (match_text(graph, &match, &matched) != PL_OK)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory matching the data to \"%s\"",
                            graph->name);
    if (!matched)
        return pl_data_fail(err, PL_EINPUT, path,
                            "is a file, read as text, but model \"%s\" does not take text: "
                            "that needs %s",
                            graph->name, text_shape_text);
    return pl_data_open_text(data, &match, path, err);
}

static pl_status open_path(pl_dataset *data, const pl_graph *graph, const char *path,
                           pl_error *err)
{
    if (strcmp(path, "synthetic") == 0)
        return pl_data_open_synthetic(data, graph, err);
    struct stat st;
    if (stat(path, &st) != 0)
        return pl_data_fail(err, pl_input_errno_status(errno), path, "%s (expected a "
                            "Fashion-MNIST directory, a text file or \"synthetic\")",
                            strerror(errno));
    if (S_ISDIR(st.st_mode))
        return open_directory(data, graph, path, err);
    if (!S_ISREG(st.st_mode))
        return pl_data_fail(err, PL_EINPUT, path, "is not a regular file (a device, FIFO or "
                            "socket; expected a Fashion-MNIST directory, a text file or "
                            "\"synthetic\")");
    return open_file(data, graph, path, err);
}

/* No path: whatever the graph is shaped for, from the default places. */
static pl_status open_default(pl_dataset *data, const pl_graph *graph, pl_error *err)
{
    pl_data_match match;
    if (match_mnist(graph, &match)) {
        struct stat st;
        if (stat(PL_FASHION_MNIST_DIR, &st) != 0 || !S_ISDIR(st.st_mode))
            return pl_data_fail(err, PL_EINPUT, PL_FASHION_MNIST_DIR,
                                "Fashion-MNIST is not installed here (Debian package "
                                "dataset-fashion-mnist; tools/setup installs it)");
        return pl_data_open_mnist(data, &match, PL_FASHION_MNIST_DIR, err);
    }
    bool matched;
    if (match_text(graph, &match, &matched) != PL_OK)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory matching the data to \"%s\"",
                            graph->name);
    if (matched)
        return pl_data_open_text(data, &match, PL_DEFAULT_TEXT, err);
    return pl_data_open_synthetic(data, graph, err);
}

pl_dataset *pl_dataset_open(const pl_graph *graph, const char *path, uint64_t seed,
                            pl_error *err)
{
    pl_error_init(err, path);
    if (!graph) {
        pl_error_set(err, PL_EINTERNAL, NULL, "pl_dataset_open: no graph");
        return NULL;
    }
    pl_dataset *data = calloc(1, sizeof *data);
    if (!data) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory opening the data");
        return NULL;
    }
    data->seed = seed;
    pl_status status = path ? open_path(data, graph, path, err)
                            : open_default(data, graph, err);
    if (status != PL_OK) {
        pl_dataset_free(data);
        return NULL;
    }
    return data;
}

void pl_dataset_free(pl_dataset *data)
{
    if (!data)
        return;
    if (data->release)
        data->release(data->source);
    free(data);
}

pl_data_kind pl_dataset_kind(const pl_dataset *data)
{
    return data->kind;
}

const char *pl_dataset_describe(const pl_dataset *data)
{
    return data->describe;
}

int64_t pl_dataset_size(const pl_dataset *data, pl_split split)
{
    return data->size[split == PL_SPLIT_TEST];
}

/* ---- filling ----------------------------------------------------------------------- */

static int64_t wrap(int64_t index, int64_t n)
{
    int64_t r = index % n;
    return r < 0 ? r + n : r;
}

void pl_dataset_fill(const pl_dataset *data, pl_split split, int64_t epoch, int64_t first,
                     int count, void *const *inputs)
{
    bool test = split == PL_SPLIT_TEST;
    int64_t n = data->size[test];
    if (n <= 0)
        return;
    for (int slot = 0; slot < count; slot++) {
        int64_t position = wrap(first + slot, n);
        int64_t sample = test ? position : pl_data_shuffle(data->seed, epoch, position, n);
        data->fill(data, split, sample, slot, count, inputs);
    }
}
