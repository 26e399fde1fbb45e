/* Datasets: Fashion-MNIST against values read with Python's gzip module, malformed idx
 * files, text windows, the synthetic teachers, and every bundled small model filled
 * without a write outside its buffers. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "data_impl.h"
#include "load.h"
#include "suites.h"
#include "test_util.h"

enum { PIXELS = 784, GUARD = 64 };

/* ---- helpers ------------------------------------------------------------------------ */

/* A model written with single quotes, for readability: they become double quotes. */
static pl_graph *load_json(const char *single_quoted)
{
    char *json = strdup(single_quoted);
    for (char *c = json; *c; c++)
        if (*c == '\'')
            *c = '"';
    pl_error err;
    pl_graph *graph = pl_graph_load_buffer(json, strlen(json), "model.json", &err);
    if (!graph)
        fprintf(stderr, "\n    model.json: %s\n", err.text);
    free(json);
    return graph;
}

/* Input buffers for `count` samples, each followed by a guard zone that must stay as it
 * was: a write past a buffer fails the test even without valgrind. */
typedef struct batch {
    int n;
    void **buf;
    size_t *bytes;
} batch;

static batch batch_new(const pl_graph *graph, int count)
{
    batch b = {graph->n_tensors, calloc((size_t)graph->n_tensors, sizeof(void *)),
               calloc((size_t)graph->n_tensors, sizeof(size_t))};
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        if (tensor->kind != PL_TENSOR_INPUT)
            continue;
        b.bytes[t] = (size_t)pl_data_sample_elements(tensor) * 4 * (size_t)count;
        b.buf[t] = malloc(b.bytes[t] + GUARD);
        memset(b.buf[t], 0x5A, b.bytes[t] + GUARD);
    }
    return b;
}

static bool guards_intact(const batch *b)
{
    for (int t = 0; t < b->n; t++)
        for (size_t i = 0; b->buf[t] && i < GUARD; i++)
            if (((unsigned char *)b->buf[t])[b->bytes[t] + i] != 0x5A)
                return false;
    return true;
}

static void batch_free(batch *b)
{
    for (int t = 0; t < b->n; t++)
        free(b->buf[t]);
    free(b->buf);
    free(b->bytes);
}

static bool batches_equal(const batch *a, const batch *b)
{
    for (int t = 0; t < a->n; t++)
        if (a->buf[t] && memcmp(a->buf[t], b->buf[t], a->bytes[t]) != 0)
            return false;
    return true;
}

static const int32_t *ints(const batch *b, const pl_graph *graph, const char *name)
{
    return b->buf[pl_graph_find_tensor(graph, name)];
}

static const float *floats(const batch *b, const pl_graph *graph, const char *name)
{
    return b->buf[pl_graph_find_tensor(graph, name)];
}

static int64_t pixel_sum(const float *image)
{
    int64_t sum = 0;
    for (int p = 0; p < PIXELS; p++)
        sum += lrintf(image[p] * 255.0f);
    return sum;
}

#define ASSERT_OPEN_FAILS(graph, path, source_part, text_part)                              \
    do {                                                                                     \
        pl_error err_;                                                                       \
        pl_dataset *d_ = pl_dataset_open((graph), (path), 1, &err_);                         \
        CU_ASSERT_PTR_NULL(d_);                                                              \
        pl_dataset_free(d_);                                                                 \
        CU_ASSERT_EQUAL(err_.status, PL_EINPUT);                                             \
        if (!strstr(err_.source, (source_part)) || !strstr(err_.text, (text_part)))          \
            fprintf(stderr, "\n    got: %s: %s\n    wanted: %s, %s\n", err_.source,         \
                    err_.text, (source_part), (text_part));                                  \
        CU_ASSERT_PTR_NOT_NULL(strstr(err_.source, (source_part)));                          \
        CU_ASSERT_PTR_NOT_NULL(strstr(err_.text, (text_part)));                              \
    } while (0)

/* ---- Fashion-MNIST: opened once for the suite (decompressing it is the slow part) --- */

static pl_graph *mlp;
static pl_dataset *mnist;

static int suite_init(void)
{
    mlp = pl_test_bundled_graph("small/mlp-small.json");
    pl_error err;
    mnist = mlp ? pl_dataset_open(mlp, NULL, 42, &err) : NULL;
    if (mlp && !mnist)
        fprintf(stderr, "\n    Fashion-MNIST: %s: %s\n", err.source, err.text);
    return 0;
}

static int suite_cleanup(void)
{
    pl_dataset_free(mnist);
    pl_graph_free(mlp);
    return 0;
}

static void test_mnist_sizes(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mnist);
    CU_ASSERT_EQUAL(pl_dataset_kind(mnist), PL_DATA_FASHION_MNIST);
    CU_ASSERT_EQUAL(pl_dataset_size(mnist, PL_SPLIT_TRAIN), 60000);
    CU_ASSERT_EQUAL(pl_dataset_size(mnist, PL_SPLIT_TEST), 10000);
    CU_ASSERT_PTR_NOT_NULL(strstr(pl_dataset_describe(mnist), "Fashion-MNIST"));
}

/* Reference values: Python's gzip module on the same files. */
static void test_mnist_test_split_values(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mnist);
    batch b = batch_new(mlp, 3);
    pl_dataset_fill(mnist, PL_SPLIT_TEST, 0, 0, 3, b.buf);
    const float *image = floats(&b, mlp, "image");
    const int32_t *label = ints(&b, mlp, "label");
    CU_ASSERT_EQUAL(label[0], 9);
    CU_ASSERT_EQUAL(label[1], 2);
    CU_ASSERT_EQUAL(label[2], 1);
    CU_ASSERT_EQUAL(pixel_sum(image), 33456);
    CU_ASSERT_EQUAL(pixel_sum(image + PIXELS), 100994);
    CU_ASSERT_EQUAL(pixel_sum(image + 2 * PIXELS), 51520);
    CU_ASSERT_DOUBLE_EQUAL(image[14 * 28 + 14], 110.0 / 255.0, 1e-6);
    /* the last sample, and one past it wraps to the first */
    pl_dataset_fill(mnist, PL_SPLIT_TEST, 0, 9999, 2, b.buf);
    CU_ASSERT_EQUAL(label[0], 5);
    CU_ASSERT_EQUAL(pixel_sum(image), 24390);
    CU_ASSERT_EQUAL(label[1], 9);
    CU_ASSERT_EQUAL(pixel_sum(image + PIXELS), 33456);
    CU_ASSERT_TRUE(guards_intact(&b));
    batch_free(&b);
}

static void test_mnist_first_training_sample(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mnist);
    int64_t position = 0;
    while (position < 60000 && pl_data_shuffle(42, 3, position, 60000) != 0)
        position++;
    CU_ASSERT_FATAL(position < 60000);
    batch b = batch_new(mlp, 1);
    pl_dataset_fill(mnist, PL_SPLIT_TRAIN, 3, position, 1, b.buf);
    const float *image = floats(&b, mlp, "image");
    CU_ASSERT_EQUAL(ints(&b, mlp, "label")[0], 9);
    CU_ASSERT_EQUAL(pixel_sum(image), 76247);
    CU_ASSERT_DOUBLE_EQUAL(image[14 * 28 + 14], 217.0 / 255.0, 1e-6);
    batch_free(&b);
}

/* One epoch through pl_dataset_fill visits every training sample once, with its own
 * label: the totals match Python's over the file. */
static void test_mnist_epoch_visits_all(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mnist);
    enum { CHUNK = 600 };
    batch b = batch_new(mlp, CHUNK);
    const float *image = floats(&b, mlp, "image");
    const int32_t *label = ints(&b, mlp, "label");
    int64_t total = 0, weighted = 0, counts[10] = {0};
    float low = 1, high = 0;
    for (int64_t first = 0; first < 60000; first += CHUNK) {
        pl_dataset_fill(mnist, PL_SPLIT_TRAIN, 7, first, CHUNK, b.buf);
        for (int i = 0; i < CHUNK; i++) {
            int64_t sum = pixel_sum(image + (size_t)i * PIXELS);
            total += sum;
            weighted += sum * label[i];
            counts[label[i] >= 0 && label[i] < 10 ? label[i] : 0]++;
        }
        for (int p = 0; p < CHUNK * PIXELS; p++) {
            low = image[p] < low ? image[p] : low;
            high = image[p] > high ? image[p] : high;
        }
    }
    CU_ASSERT_EQUAL(total, INT64_C(3431114169));
    CU_ASSERT_EQUAL(weighted, INT64_C(15212046275));
    for (int c = 0; c < 10; c++)
        CU_ASSERT_EQUAL(counts[c], 6000);
    CU_ASSERT_EQUAL(low, 0.0f);
    CU_ASSERT_EQUAL(high, 1.0f);
    CU_ASSERT_TRUE(guards_intact(&b));
    batch_free(&b);
}

static void test_shuffle(void)
{
    enum { N = 60000 };
    unsigned char *seen = calloc(N, 1);
    int64_t same_as_next_epoch = 0, same_other_seed = 0;
    bool in_range = true, repeatable = true;
    for (int64_t i = 0; i < N; i++) {
        int64_t s = pl_data_shuffle(42, 0, i, N);
        in_range &= s >= 0 && s < N;
        if (s >= 0 && s < N)
            seen[s]++;
        same_as_next_epoch += s == pl_data_shuffle(42, 1, i, N);
        same_other_seed += s == pl_data_shuffle(43, 0, i, N);
        repeatable &= s == pl_data_shuffle(42, 0, i, N);
    }
    CU_ASSERT_TRUE(in_range);
    CU_ASSERT_TRUE(repeatable);
    int64_t once = 0;
    for (int64_t s = 0; s < N; s++)
        once += seen[s] == 1;
    CU_ASSERT_EQUAL(once, N);
    CU_ASSERT_TRUE(same_as_next_epoch < 100); /* about 1 expected */
    CU_ASSERT_TRUE(same_other_seed < 100);
    /* not close to the identity either */
    int64_t fixed = 0;
    for (int64_t i = 0; i < N; i++)
        fixed += pl_data_shuffle(42, 0, i, N) == i;
    CU_ASSERT_TRUE(fixed < 100);
    /* small domains are permutations too */
    for (int64_t n = 1; n <= 40; n++) {
        unsigned char hit[40] = {0};
        for (int64_t i = 0; i < n; i++)
            hit[pl_data_shuffle(5, 2, i, n)]++;
        for (int64_t s = 0; s < n; s++)
            CU_ASSERT_EQUAL(hit[s], 1);
    }
    free(seen);
}

/* ---- malformed idx files ----------------------------------------------------------- */

static void write_gz(const char *dir, const char *name, const unsigned char *bytes, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile gz = gzopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gz);
    if (n)
        CU_ASSERT_EQUAL(gzwrite(gz, bytes, (unsigned)n), (int)n);
    gzclose(gz);
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* An idx images file: the header says `count` images of rows x cols, and `present`
 * images follow (pixel i of the file is i % 251). */
static void write_images(const char *dir, const char *name, uint32_t magic, uint32_t count,
                         uint32_t rows, uint32_t cols, size_t present)
{
    size_t n = 16 + present * rows * cols;
    unsigned char *bytes = malloc(n);
    put32(bytes, magic);
    put32(bytes + 4, count);
    put32(bytes + 8, rows);
    put32(bytes + 12, cols);
    for (size_t i = 16; i < n; i++)
        bytes[i] = (unsigned char)((i - 16) % 251);
    write_gz(dir, name, bytes, n);
    free(bytes);
}

/* Labels 0, 1, 2, ... (mod 10), the last one replaced by `last` when it is >= 0. */
static void write_labels(const char *dir, const char *name, uint32_t magic, uint32_t count,
                         size_t present, int last)
{
    unsigned char bytes[64];
    put32(bytes, magic);
    put32(bytes + 4, count);
    for (size_t i = 0; i < present; i++)
        bytes[8 + i] = (unsigned char)(i % 10);
    if (last >= 0 && present > 0)
        bytes[8 + present - 1] = (unsigned char)last;
    write_gz(dir, name, bytes, 8 + present);
}

static void write_valid_set(const char *dir)
{
    write_images(dir, "train-images-idx3-ubyte.gz", 0x803, 3, 28, 28, 3);
    write_labels(dir, "train-labels-idx1-ubyte.gz", 0x801, 3, 3, -1);
    write_images(dir, "t10k-images-idx3-ubyte.gz", 0x803, 2, 28, 28, 2);
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 0x801, 2, 2, -1);
}

static void write_raw(const char *dir, const char *name, const char *text, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(text, 1, n, f);
    fclose(f);
}

/* A valid gzip file cut in the middle of its compressed stream. */
static void write_cut_gz(const char *dir, const char *name)
{
    write_images(dir, name, 0x803, 3, 28, 28, 3);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_raw(dir, name, (const char *)buf, n / 2);
}

/* A valid gzip file with bytes flipped inside its compressed stream. */
static void write_corrupt_gz(const char *dir, const char *name)
{
    write_images(dir, name, 0x803, 3, 28, 28, 3);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (size_t i = 30; i < 60 && i < n; i++)
        buf[i] ^= 0x55;
    write_raw(dir, name, (const char *)buf, n);
}

static void remove_set(const char *dir)
{
    static const char *const names[] = {"train-images-idx3-ubyte.gz",
                                        "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte.gz",
                                        "t10k-labels-idx1-ubyte.gz"};
    char path[512];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
}

static void test_mnist_small_valid_files(void)
{
    pl_graph *graph = pl_test_bundled_graph("small/cnn-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    char dir[] = "/tmp/placer-data-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    write_valid_set(dir);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, dir, 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TRAIN), 3);
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TEST), 2);
    batch b = batch_new(graph, 2);
    pl_dataset_fill(data, PL_SPLIT_TEST, 0, 0, 2, b.buf);
    const float *image = floats(&b, graph, "image");
    CU_ASSERT_EQUAL(ints(&b, graph, "label")[1], 1);
    CU_ASSERT_DOUBLE_EQUAL(image[PIXELS + 5], (double)((PIXELS + 5) % 251) / 255.0, 1e-6);
    CU_ASSERT_TRUE(guards_intact(&b));
    batch_free(&b);
    pl_dataset_free(data);
    remove_set(dir);
    rmdir(dir);
    pl_graph_free(graph);
}

static void test_mnist_malformed(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(mlp);
    char dir[] = "/tmp/placer-data-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char missing[64];
    snprintf(missing, sizeof missing, "%s/nowhere", dir);
    ASSERT_OPEN_FAILS(mlp, missing, "nowhere", "No such file or directory");
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "cannot open");

    write_valid_set(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 0x801, 3, 28, 28, 3);
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "bad magic number 0x00000801");
    write_valid_set(dir);
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 0x803, 2, 2, -1);
    ASSERT_OPEN_FAILS(mlp, dir, "t10k-labels-idx1-ubyte.gz", "bad magic number 0x00000803");

    write_valid_set(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 0x803, 3, 27, 28, 3);
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "27x28");

    write_valid_set(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 0x803, 3, 28, 28, 2);
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "truncated");
    /* a header announcing a million images over two: room is made as the data arrive */
    write_valid_set(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 0x803, 1000000, 28, 28, 2);
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz",
                      "truncated: the pixel data has 1568 of its 784000000 bytes");
    write_valid_set(dir);
    write_raw(dir, "train-labels-idx1-ubyte.gz", "", 0);
    ASSERT_OPEN_FAILS(mlp, dir, "train-labels-idx1-ubyte.gz", "");
    write_valid_set(dir);
    write_cut_gz(dir, "train-images-idx3-ubyte.gz");
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "truncated");

    write_valid_set(dir);
    write_corrupt_gz(dir, "train-images-idx3-ubyte.gz");
    ASSERT_OPEN_FAILS(mlp, dir, "train-images-idx3-ubyte.gz", "corrupt gzip data (");

    write_valid_set(dir);
    static const char not_gzip[] = "these are not the images you are looking for";
    write_raw(dir, "t10k-images-idx3-ubyte.gz", not_gzip, sizeof not_gzip);
    ASSERT_OPEN_FAILS(mlp, dir, "t10k-images-idx3-ubyte.gz", "not a gzip file");

    write_valid_set(dir);
    write_labels(dir, "train-labels-idx1-ubyte.gz", 0x801, 2, 2, -1);
    ASSERT_OPEN_FAILS(mlp, dir, "train-labels-idx1-ubyte.gz", "holds 2 labels but");
    write_valid_set(dir);
    write_labels(dir, "train-labels-idx1-ubyte.gz", 0x801, 3, 4, -1);
    ASSERT_OPEN_FAILS(mlp, dir, "train-labels-idx1-ubyte.gz", "more data than the header");
    write_valid_set(dir);
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 0x801, 2, 2, 10);
    ASSERT_OPEN_FAILS(mlp, dir, "t10k-labels-idx1-ubyte.gz", "label 10 of sample 1");

    /* the error names the file in its formatted form too */
    write_valid_set(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 0x1234, 3, 28, 28, 3);
    pl_error err;
    CU_ASSERT_PTR_NULL(pl_dataset_open(mlp, dir, 1, &err));
    char line[2048];
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "/train-images-idx3-ubyte.gz: bad magic number"));

    remove_set(dir);
    CU_ASSERT_EQUAL(rmdir(dir), 0);
}

/* ---- text -------------------------------------------------------------------------- */

static const char sample_text[] =
    "It was the best of times,\tit was the worst of times;\r\n"
    "it was the age of wisdom (1859) ~ caf\xc3\xa9 #42!\n";

static void write_text(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(text, 1, n, f);
    fclose(f);
}

static void test_text_alphabet(void)
{
    int seen[PL_TEXT_ALPHABET] = {0};
    for (int c = 0; c < 256; c++) {
        bool symbol = c == '\n' || (c >= ' ' && c <= '~');
        int id = pl_data_char_id((unsigned char)c, 96);
        CU_ASSERT_TRUE(id >= 0 && id < 96);
        if (symbol && id >= 0 && id < 96)
            seen[id]++;
    }
    for (int id = 0; id < PL_TEXT_ALPHABET; id++)
        CU_ASSERT_EQUAL(seen[id], 1); /* newline and printable ASCII: one id each */
    CU_ASSERT_EQUAL(pl_data_char_id('\t', 96), pl_data_char_id(' ', 96));
    CU_ASSERT_EQUAL(pl_data_char_id('\n', 96), 0);
    CU_ASSERT_EQUAL(pl_data_char_id(' ', 96), 1);
    CU_ASSERT_EQUAL(pl_data_char_id(0xC3, 200), 96); /* its own "other" id when there is room */
    for (int c = 0; c < 256; c++) {
        CU_ASSERT_TRUE(pl_data_char_id((unsigned char)c, 20) < 20);
        CU_ASSERT_EQUAL(pl_data_char_id((unsigned char)c, 1), 0);
    }
    CU_ASSERT_NOT_EQUAL(pl_data_char_id('e', 20), pl_data_char_id('t', 20));
}

static void test_text_windows(void)
{
    pl_graph *graph = pl_test_bundled_graph("small/lstm_lm-small.json"); /* T = 6, V = 96 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    char path[] = "/tmp/placer-text-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    size_t n = sizeof sample_text - 1;
    write_text(path, sample_text, n);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, path, 9, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_kind(data), PL_DATA_TEXT);
    int64_t windows = (int64_t)(n - 1) / 6;
    int64_t train = pl_dataset_size(data, PL_SPLIT_TRAIN);
    int64_t test = pl_dataset_size(data, PL_SPLIT_TEST);
    CU_ASSERT_EQUAL(test, windows / 10);
    CU_ASSERT_EQUAL(train + test, windows);

    batch b = batch_new(graph, (int)train);
    pl_dataset_fill(data, PL_SPLIT_TRAIN, 4, 0, (int)train, b.buf);
    const int32_t *tokens = ints(&b, graph, "tokens"), *targets = ints(&b, graph, "targets");
    int visits[64] = {0};
    for (int64_t i = 0; i < train; i++) {
        /* which window: the one whose characters these are */
        for (int64_t k = 0; k < train; k++) {
            bool match = true;
            for (int t = 0; t < 6; t++)
                match &= tokens[i * 6 + t] ==
                             pl_data_char_id((unsigned char)sample_text[k * 6 + t], 96) &&
                         targets[i * 6 + t] ==
                             pl_data_char_id((unsigned char)sample_text[k * 6 + t + 1], 96);
            if (match) {
                visits[k]++;
                break;
            }
        }
        for (int t = 0; t < 6; t++)
            CU_ASSERT_TRUE(tokens[i * 6 + t] >= 0 && tokens[i * 6 + t] < 96);
    }
    for (int64_t k = 0; k < train; k++)
        CU_ASSERT_EQUAL(visits[k], 1);
    CU_ASSERT_TRUE(guards_intact(&b));

    /* the test split: the last windows, in order */
    pl_dataset_fill(data, PL_SPLIT_TEST, 0, 0, 1, b.buf);
    for (int t = 0; t < 6; t++) {
        CU_ASSERT_EQUAL(tokens[t], pl_data_char_id((unsigned char)sample_text[train * 6 + t], 96));
        CU_ASSERT_EQUAL(targets[t],
                        pl_data_char_id((unsigned char)sample_text[train * 6 + t + 1], 96));
    }
    batch_free(&b);
    pl_dataset_free(data);

    /* T + 1 characters are one window, lent to both splits; T are an error */
    write_text(path, "abcdefg", 7);
    data = pl_dataset_open(graph, path, 9, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TRAIN), 1);
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TEST), 1);
    b = batch_new(graph, 1);
    pl_dataset_fill(data, PL_SPLIT_TEST, 0, 0, 1, b.buf);
    CU_ASSERT_EQUAL(ints(&b, graph, "targets")[5], pl_data_char_id('g', 96));
    batch_free(&b);
    pl_dataset_free(data);
    write_text(path, "abcdef", 6);
    ASSERT_OPEN_FAILS(graph, path, path, "too short: 6 characters");
    write_text(path, "", 0);
    ASSERT_OPEN_FAILS(graph, path, path, "too short: 0 characters");
    unlink(path);
    ASSERT_OPEN_FAILS(graph, path, path, "No such file or directory");
    pl_graph_free(graph);
}

/* A causal text model with 20 ids: embedding, split into 3 steps, a projection per step,
 * concat. `order` lists the steps in the order the logits join them. */
static pl_graph *tiny_text_model(const char *order)
{
    char json[4096];
    snprintf(json, sizeof json,
             "{'format': 'placer-model', 'version': 1, 'name': 'tiny-lm', 'batch_size': 2,"
             " 'inputs': [{'name': 'tok', 'shape': [3], 'dtype': 'i32', 'role': 'data'},"
             "  {'name': 'next', 'shape': [3], 'dtype': 'i32', 'role': 'label'}],"
             " 'parameters': [{'name': 'table', 'shape': [20, 4],"
             "   'init': {'kind': 'uniform', 'low': -0.1, 'high': 0.1, 'seed': 1}},"
             "  {'name': 'w', 'shape': [4, 20], 'init': {'kind': 'glorot_uniform', 'seed': 2}}],"
             " 'nodes': ["
             "  {'name': 'e', 'op': 'embedding', 'inputs': ['table', 'tok'], 'outputs': ['e']},"
             "  {'name': 's', 'op': 'split', 'inputs': ['e'], 'outputs': ['s0', 's1', 's2'],"
             "   'attrs': {'axis': 1}},"
             "  {'name': 'p0', 'op': 'matmul', 'inputs': ['s0', 'w'], 'outputs': ['p0']},"
             "  {'name': 'p1', 'op': 'matmul', 'inputs': ['s1', 'w'], 'outputs': ['p1']},"
             "  {'name': 'p2', 'op': 'matmul', 'inputs': ['s2', 'w'], 'outputs': ['p2']},"
             "  {'name': 'logits', 'op': 'concat', 'inputs': [%s], 'outputs': ['logits'],"
             "   'attrs': {'axis': -2}},"
             "  {'name': 'loss', 'op': 'softmax_cross_entropy', 'inputs': ['logits', 'next'],"
             "   'outputs': ['loss']}],"
             " 'loss': 'loss', 'optimizer': {'kind': 'sgd', 'lr': 0.1}}",
             order);
    return load_json(json);
}

static void test_text_needs_a_causal_model(void)
{
    pl_graph *causal = tiny_text_model("\"p0\", \"p1\", \"p2\"");
    pl_graph *ahead = tiny_text_model("\"p2\", \"p1\", \"p0\"");
    pl_graph *transformer = pl_test_bundled_graph("small/transformer-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(causal);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ahead);
    CU_ASSERT_PTR_NOT_NULL_FATAL(transformer);
    char path[] = "/tmp/placer-text-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    write_text(path, sample_text, sizeof sample_text - 1);

    pl_error err;
    pl_dataset *data = pl_dataset_open(causal, path, 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_kind(data), PL_DATA_TEXT);
    batch b = batch_new(causal, 8);
    pl_dataset_fill(data, PL_SPLIT_TRAIN, 0, 0, 8, b.buf);
    for (int i = 0; i < 8 * 3; i++) {
        CU_ASSERT_TRUE(ints(&b, causal, "tok")[i] >= 0 && ints(&b, causal, "tok")[i] < 20);
        CU_ASSERT_TRUE(ints(&b, causal, "next")[i] >= 0 && ints(&b, causal, "next")[i] < 20);
    }
    CU_ASSERT_TRUE(guards_intact(&b));
    batch_free(&b);
    pl_dataset_free(data);

    CU_ASSERT_EQUAL(pl_data_order_of(causal, pl_graph_find_tensor(causal, "tok"),
                                     pl_graph_find_tensor(causal, "next")),
                    PL_ORDER_CAUSAL);
    CU_ASSERT_EQUAL(pl_data_order_of(ahead, pl_graph_find_tensor(ahead, "tok"),
                                     pl_graph_find_tensor(ahead, "next")),
                    PL_ORDER_LOOKAHEAD);
    ASSERT_OPEN_FAILS(ahead, path, path, "does not take text");
    ASSERT_OPEN_FAILS(transformer, path, path, "does not take text");
    ASSERT_OPEN_FAILS(mlp, path, path, "does not take text");
    char dir[] = "/tmp/placer-data-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    ASSERT_OPEN_FAILS(causal, dir, dir, "does not take Fashion-MNIST");
    rmdir(dir);
    unlink(path);
    pl_graph_free(causal);
    pl_graph_free(ahead);
    pl_graph_free(transformer);
}

/* ---- synthetic --------------------------------------------------------------------- */

static void fill_batch(const pl_dataset *data, pl_split split, int64_t epoch, int64_t first,
                       int count, batch *b)
{
    pl_dataset_fill(data, split, epoch, first, count, b->buf);
}

static void test_synthetic_deterministic(void)
{
    static const char *const models[] = {
        "small/inception-small.json", "small/recommender-small.json", "small/seq2seq-small.json",
        "small/transformer-small.json", "small/moe-small.json", "small/mlp-small.json"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        pl_graph *graph = pl_test_bundled_graph(models[m]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
        pl_error err;
        pl_dataset *a = pl_dataset_open(graph, "synthetic", 5, &err);
        pl_dataset *same = pl_dataset_open(graph, "synthetic", 5, &err);
        pl_dataset *other = pl_dataset_open(graph, "synthetic", 6, &err);
        CU_ASSERT_FATAL(a && same && other);
        CU_ASSERT_EQUAL(pl_dataset_kind(a), PL_DATA_SYNTHETIC);
        CU_ASSERT_EQUAL(pl_dataset_size(a, PL_SPLIT_TRAIN), PL_SYNTHETIC_TRAIN);
        CU_ASSERT_EQUAL(pl_dataset_size(a, PL_SPLIT_TEST), PL_SYNTHETIC_TEST);
        batch x = batch_new(graph, 8), y = batch_new(graph, 8);
        fill_batch(a, PL_SPLIT_TRAIN, 2, 100, 8, &x);
        fill_batch(same, PL_SPLIT_TRAIN, 2, 100, 8, &y);
        CU_ASSERT_TRUE(batches_equal(&x, &y));
        fill_batch(other, PL_SPLIT_TRAIN, 2, 100, 8, &y);
        CU_ASSERT_FALSE(batches_equal(&x, &y));
        fill_batch(a, PL_SPLIT_TRAIN, 3, 100, 8, &y);
        CU_ASSERT_FALSE(batches_equal(&x, &y));
        fill_batch(a, PL_SPLIT_TEST, 0, 0, 8, &x);
        fill_batch(a, PL_SPLIT_TEST, 9, PL_SYNTHETIC_TEST, 8, &y); /* wraps; no shuffle */
        CU_ASSERT_TRUE(batches_equal(&x, &y));
        fill_batch(a, PL_SPLIT_TRAIN, 0, 0, 8, &y); /* the test split is not the training one */
        CU_ASSERT_FALSE(batches_equal(&x, &y));
        CU_ASSERT_TRUE(guards_intact(&x) && guards_intact(&y));
        batch_free(&x);
        batch_free(&y);
        pl_dataset_free(a);
        pl_dataset_free(same);
        pl_dataset_free(other);
        pl_graph_free(graph);
    }
}

/* Tokens [T] with the batch on axis 1, [T,N], as a sequence-first model reads them, and its
 * batch-first twin [N,T]: the same samples, each in its column. */
static void test_synthetic_batch_axis(void)
{
    static const char *const model =
        "{'format': 'placer-model', 'version': 1, 'name': 'bag', 'batch_size': 4,"
        " 'inputs': [{'name': 'tokens', 'shape': [5], 'dtype': 'i32', 'role': 'data'%s},"
        "            {'name': 'y', 'shape': [], 'dtype': 'i32', 'role': 'label'}],"
        " 'parameters': [{'name': 'table', 'shape': [7, 3], 'init': {'kind': 'zeros'}}],"
        " 'nodes': [{'name': 'e', 'op': 'embedding', 'inputs': ['table', 'tokens'],"
        "            'outputs': ['h']},"
        "           {'name': 'bag', 'op': 'reduce_mean', 'inputs': ['h'], 'outputs': ['logits'],"
        "            'attrs': {'axes': [%d]}},"
        "           {'name': 'xent', 'op': 'softmax_cross_entropy', 'inputs': ['logits', 'y'],"
        "            'outputs': ['loss']}],"
        " 'loss': 'loss', 'optimizer': {'kind': 'sgd', 'lr': 0.1}}";
    char first[1400], second[1400];
    snprintf(first, sizeof first, model, ", 'batch_axis': 1", 0);
    snprintf(second, sizeof second, model, "", 1);
    pl_graph *seq = load_json(first), *twin = load_json(second);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seq);
    CU_ASSERT_PTR_NOT_NULL_FATAL(twin);
    int tokens = pl_graph_find_tensor(seq, "tokens"), y = pl_graph_find_tensor(seq, "y");
    CU_ASSERT_EQUAL(seq->tensors[tokens].batch_axis, 1);
    CU_ASSERT_EQUAL(seq->tensors[tokens].dims[1], 4);
    pl_dataset *a = pl_dataset_open(seq, "synthetic", 5, NULL);
    pl_dataset *b = pl_dataset_open(twin, "synthetic", 5, NULL);
    CU_ASSERT_FATAL(a && b);
    batch x = batch_new(seq, 4), z = batch_new(twin, 4);
    fill_batch(a, PL_SPLIT_TRAIN, 1, 40, 4, &x);
    fill_batch(b, PL_SPLIT_TRAIN, 1, 40, 4, &z);
    const int32_t *columns = x.buf[tokens], *rows = z.buf[tokens];
    int differ = 0;
    for (int n = 0; n < 4; n++)
        for (int t = 0; t < 5; t++)
            differ += columns[t * 4 + n] != rows[n * 5 + t];
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT_EQUAL(memcmp(x.buf[y], z.buf[y], 4 * sizeof(int32_t)), 0);
    CU_ASSERT_TRUE(guards_intact(&x) && guards_intact(&z));
    batch_free(&x);
    batch_free(&z);
    pl_dataset_free(a);
    pl_dataset_free(b);
    pl_graph_free(seq);
    pl_graph_free(twin);
}

/* Class labels take several classes, none most of the time. */
static void check_class_spread(const int32_t *labels, int n, int64_t classes)
{
    int counts[16] = {0}, distinct = 0, most = 0;
    for (int i = 0; i < n; i++) {
        CU_ASSERT_TRUE(labels[i] >= 0 && labels[i] < classes);
        if (labels[i] >= 0 && labels[i] < 16)
            counts[labels[i]]++;
    }
    for (int c = 0; c < 16; c++) {
        distinct += counts[c] > 0;
        most = counts[c] > most ? counts[c] : most;
    }
    CU_ASSERT_TRUE(distinct >= (classes < 5 ? classes : 5));
    CU_ASSERT_TRUE(most < n * 3 / 4);
}

/* The teacher is linear: classifying test samples by the nearest class mean of the
 * training data beats chance by far. */
static void check_learnable_class(const char *model, const char *data_name)
{
    enum { TRAIN = 2048, TEST = 512 };
    pl_graph *graph = pl_test_bundled_graph(model);
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, "synthetic", 3, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    int64_t d = pl_data_sample_elements(&graph->tensors[pl_graph_find_tensor(graph, data_name)]);
    double *mean = calloc(10 * (size_t)d, sizeof *mean);
    batch b = batch_new(graph, TRAIN);
    fill_batch(data, PL_SPLIT_TRAIN, 0, 0, TRAIN, &b);
    const float *x = floats(&b, graph, data_name);
    const int32_t *y = ints(&b, graph, "label");
    check_class_spread(y, TRAIN, 10);
    for (int i = 0; i < TRAIN; i++)
        for (int64_t f = 0; f < d; f++)
            mean[y[i] * d + f] += x[i * d + f];
    fill_batch(data, PL_SPLIT_TEST, 0, 0, TEST, &b);
    int right = 0;
    for (int i = 0; i < TEST; i++) {
        int best = 0;
        double best_score = -INFINITY;
        for (int c = 0; c < 10; c++) {
            double score = 0;
            for (int64_t f = 0; f < d; f++)
                score += mean[c * d + f] * x[i * d + f];
            if (score > best_score) {
                best_score = score;
                best = c;
            }
        }
        right += best == y[i];
    }
    CU_ASSERT_TRUE(right > TEST * 3 / 10); /* chance: a tenth */
    if (right <= TEST * 3 / 10)
        fprintf(stderr, "\n    %s: %d of %d right\n", model, right, TEST);
    batch_free(&b);
    free(mean);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

static void test_synthetic_class_teacher(void)
{
    check_learnable_class("small/moe-small.json", "features");
    check_learnable_class("small/mlp-small.json", "image");
    pl_graph *graph = pl_test_bundled_graph("small/recommender-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 3, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    batch b = batch_new(graph, 512);
    fill_batch(data, PL_SPLIT_TRAIN, 0, 0, 512, &b);
    check_class_spread(ints(&b, graph, "click"), 512, 2);
    static const int rows[8] = {100, 50, 20, 10, 8, 6, 5, 3};
    for (int f = 0; f < 8; f++) {
        char name[16];
        snprintf(name, sizeof name, "sparse%d", f);
        const int32_t *ids = ints(&b, graph, name);
        int top = 0;
        for (int i = 0; i < 512; i++) {
            CU_ASSERT_TRUE(ids[i] >= 0 && ids[i] < rows[f]);
            top = ids[i] > top ? ids[i] : top;
        }
        CU_ASSERT_EQUAL(top, rows[f] - 1); /* the whole table is used */
    }
    batch_free(&b);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

/* Per-position labels: the same (token, previous token) always gives the same label. */
static void test_synthetic_token_teacher(void)
{
    pl_graph *graph = pl_test_bundled_graph("small/transformer-small.json"); /* T 8, V 50 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 3, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_kind(data), PL_DATA_SYNTHETIC);
    enum { N = 1024, T = 8, V = 50 };
    batch b = batch_new(graph, N);
    fill_batch(data, PL_SPLIT_TRAIN, 0, 0, N, &b);
    const int32_t *tok = ints(&b, graph, "tokens"), *lab = ints(&b, graph, "targets");
    int *table = malloc((V + 1) * V * sizeof *table);
    for (int i = 0; i < (V + 1) * V; i++)
        table[i] = -1;
    bool consistent = true, in_range = true;
    int classes_seen[V] = {0};
    for (int i = 0; i < N * T; i++) {
        in_range &= tok[i] >= 0 && tok[i] < V && lab[i] >= 0 && lab[i] < V;
        if (!in_range)
            break;
        int before = i % T ? tok[i - 1] : V;
        int *entry = &table[before * V + tok[i]];
        consistent &= *entry < 0 || *entry == lab[i];
        *entry = lab[i];
        classes_seen[lab[i]] = 1;
    }
    CU_ASSERT_TRUE(in_range);
    CU_ASSERT_TRUE(consistent);
    int distinct = 0;
    for (int c = 0; c < V; c++)
        distinct += classes_seen[c];
    CU_ASSERT_TRUE(distinct >= 10);
    /* and the previous token matters: the same token after different ones differs */
    bool depends = false;
    for (int t = 0; t < V && !depends; t++)
        for (int p = 1; p < V && !depends; p++)
            depends = table[p * V + t] >= 0 && table[0 * V + t] >= 0 &&
                      table[p * V + t] != table[0 * V + t];
    CU_ASSERT_TRUE(depends);
    free(table);
    batch_free(&b);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

static void test_synthetic_seq2seq(void)
{
    /* source 5, target 4, vocab 32 */
    pl_graph *graph = pl_test_bundled_graph("small/seq2seq-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 11, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_PTR_NOT_NULL(strstr(pl_dataset_describe(data), "reversed"));
    enum { N = 64 };
    batch b = batch_new(graph, N);
    fill_batch(data, PL_SPLIT_TEST, 0, 0, N, &b);
    const int32_t *src = ints(&b, graph, "source"), *in = ints(&b, graph, "target_in"),
                  *out = ints(&b, graph, "target_out");
    int distinct_first = 0, seen[32] = {0};
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < 5; t++)
            CU_ASSERT_TRUE(src[i * 5 + t] >= 0 && src[i * 5 + t] < 32);
        for (int t = 0; t < 4; t++)
            CU_ASSERT_EQUAL(out[i * 4 + t], src[i * 5 + 4 - t]);
        CU_ASSERT_EQUAL(in[i * 4], 0);
        for (int t = 1; t < 4; t++)
            CU_ASSERT_EQUAL(in[i * 4 + t], out[i * 4 + t - 1]);
        if (out[i * 4] >= 0 && out[i * 4] < 32 && !seen[out[i * 4]]++)
            distinct_first++;
    }
    CU_ASSERT_TRUE(distinct_first >= 10);
    CU_ASSERT_TRUE(guards_intact(&b));
    batch_free(&b);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

/* A tiny seq2seq whose vocabularies differ: source ids 40, target ids and classes 12.
 * The decoder sees the source as a whole (its mean embedding) at every step. */
static void test_synthetic_seq2seq_vocabularies(void)
{
    static const char json[] =
        "{'format': 'placer-model', 'version': 1, 'name': 'tiny-s2s', 'batch_size': 2,"
        " 'inputs': [{'name': 'src', 'shape': [3], 'dtype': 'i32', 'role': 'data'},"
        "  {'name': 'tin', 'shape': [2], 'dtype': 'i32', 'role': 'data'},"
        "  {'name': 'tout', 'shape': [2], 'dtype': 'i32', 'role': 'label'}],"
        " 'parameters': [{'name': 'se', 'shape': [40, 4], 'init': {'kind': 'zeros'}},"
        "  {'name': 'te', 'shape': [12, 4], 'init': {'kind': 'zeros'}},"
        "  {'name': 'w', 'shape': [4, 12], 'init': {'kind': 'zeros'}}],"
        " 'nodes': ["
        "  {'name': 'enc', 'op': 'embedding', 'inputs': ['se', 'src'], 'outputs': ['enc']},"
        "  {'name': 'mean', 'op': 'reduce_mean', 'inputs': ['enc'], 'outputs': ['mean'],"
        "   'attrs': {'axes': [1], 'keepdims': true}},"
        "  {'name': 'dec', 'op': 'embedding', 'inputs': ['te', 'tin'], 'outputs': ['dec']},"
        "  {'name': 'steps', 'op': 'split', 'inputs': ['dec'], 'outputs': ['d0', 'd1'],"
        "   'attrs': {'axis': 1}},"
        "  {'name': 'h0', 'op': 'add', 'inputs': ['d0', 'mean'], 'outputs': ['h0']},"
        "  {'name': 'h1', 'op': 'add', 'inputs': ['d1', 'mean'], 'outputs': ['h1']},"
        "  {'name': 'o0', 'op': 'matmul', 'inputs': ['h0', 'w'], 'outputs': ['o0']},"
        "  {'name': 'o1', 'op': 'matmul', 'inputs': ['h1', 'w'], 'outputs': ['o1']},"
        "  {'name': 'logits', 'op': 'concat', 'inputs': ['o0', 'o1'], 'outputs': ['logits'],"
        "   'attrs': {'axis': 1}},"
        "  {'name': 'loss', 'op': 'softmax_cross_entropy', 'inputs': ['logits', 'tout'],"
        "   'outputs': ['loss']}],"
        " 'loss': 'loss', 'optimizer': {'kind': 'sgd', 'lr': 0.1}}";
    pl_graph *graph = load_json(json);
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_PTR_NOT_NULL(strstr(pl_dataset_describe(data), "tout: the source reversed"));
    enum { N = 256 };
    batch b = batch_new(graph, N);
    fill_batch(data, PL_SPLIT_TRAIN, 0, 0, N, &b);
    const int32_t *src = ints(&b, graph, "src"), *tin = ints(&b, graph, "tin"),
                  *tout = ints(&b, graph, "tout");
    int top = 0;
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < 3; t++) {
            CU_ASSERT_TRUE(src[i * 3 + t] >= 0 && src[i * 3 + t] < 12);
            top = src[i * 3 + t] > top ? src[i * 3 + t] : top;
        }
        CU_ASSERT_EQUAL(tout[i * 2], src[i * 3 + 2]);
        CU_ASSERT_EQUAL(tout[i * 2 + 1], src[i * 3 + 1]);
        CU_ASSERT_EQUAL(tin[i * 2], 0);
        CU_ASSERT_EQUAL(tin[i * 2 + 1], tout[i * 2]);
    }
    CU_ASSERT_EQUAL(top, 11);
    batch_free(&b);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

/* Solves the normal equations of y = W x by least squares; returns the worst residual. */
static double linear_residual(const float *x, const float *y, int n, int dx, int dy)
{
    double a[6][7];
    double worst = 0;
    for (int k = 0; k < dy; k++) {
        for (int r = 0; r < dx; r++) {
            for (int c = 0; c < dx; c++) {
                a[r][c] = 0;
                for (int i = 0; i < n; i++)
                    a[r][c] += (double)x[i * dx + r] * x[i * dx + c];
            }
            a[r][dx] = 0;
            for (int i = 0; i < n; i++)
                a[r][dx] += (double)x[i * dx + r] * y[i * dy + k];
        }
        for (int p = 0; p < dx; p++)
            for (int r = p + 1; r < dx; r++) {
                double f = a[r][p] / a[p][p];
                for (int c = p; c <= dx; c++)
                    a[r][c] -= f * a[p][c];
            }
        double w[6];
        for (int p = dx - 1; p >= 0; p--) {
            double s = a[p][dx];
            for (int c = p + 1; c < dx; c++)
                s -= a[p][c] * w[c];
            w[p] = s / a[p][p];
        }
        for (int i = 0; i < n; i++) {
            double pred = 0;
            for (int c = 0; c < dx; c++)
                pred += w[c] * x[i * dx + c];
            worst = fmax(worst, fabs(pred - y[i * dy + k]));
        }
    }
    return worst;
}

static void test_synthetic_mse_teacher(void)
{
    static const char json[] =
        "{'format': 'placer-model', 'version': 1, 'name': 'regress', 'batch_size': 4,"
        " 'inputs': [{'name': 'x', 'shape': [6], 'dtype': 'f32', 'role': 'data'},"
        "  {'name': 'y', 'shape': [3], 'dtype': 'f32', 'role': 'label'}],"
        " 'parameters': [{'name': 'w', 'shape': [6, 3], 'init': {'kind': 'zeros'}}],"
        " 'nodes': [{'name': 'fc', 'op': 'matmul', 'inputs': ['x', 'w'], 'outputs': ['p']},"
        "  {'name': 'loss', 'op': 'mse', 'inputs': ['p', 'y'], 'outputs': ['loss']}],"
        " 'loss': 'loss', 'optimizer': {'kind': 'sgd', 'lr': 0.1}}";
    pl_graph *graph = load_json(json);
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 2, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(pl_dataset_kind(data), PL_DATA_SYNTHETIC);
    enum { N = 256 };
    batch b = batch_new(graph, N);
    fill_batch(data, PL_SPLIT_TRAIN, 0, 0, N, &b);
    const float *x = floats(&b, graph, "x"), *y = floats(&b, graph, "y");
    double var = 0, xmean = 0, xvar = 0;
    for (int i = 0; i < N * 3; i++)
        var += (double)y[i] * y[i];
    for (int i = 0; i < N * 6; i++) {
        xmean += x[i];
        xvar += (double)x[i] * x[i];
    }
    CU_ASSERT_TRUE(var / (N * 3) > 0.3 && var / (N * 3) < 3); /* about unit variance */
    CU_ASSERT_TRUE(fabs(xmean / (N * 6)) < 0.1);              /* standard normal data */
    CU_ASSERT_TRUE(fabs(xvar / (N * 6) - 1) < 0.15);
    CU_ASSERT_TRUE(linear_residual(x, y, N, 6, 3) < 1e-4);
    batch_free(&b);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

/* ---- every bundled small model ----------------------------------------------------- */

/* Every i32 input holds ids its readers accept. */
static void check_id_ranges(const pl_graph *graph, const batch *b, int count)
{
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        if (tensor->kind != PL_TENSOR_INPUT || tensor->dtype != PL_I32)
            continue;
        int64_t range = pl_data_id_range(graph, t);
        CU_ASSERT_TRUE(range > 0);
        const int32_t *v = b->buf[t];
        int64_t n = pl_data_sample_elements(tensor) * count;
        for (int64_t i = 0; i < n; i++)
            if (v[i] < 0 || v[i] >= range) {
                CU_FAIL("id out of range");
                fprintf(stderr, "\n    %s: %s[%lld] = %d, not below %lld\n", graph->name,
                        tensor->name, (long long)i, v[i], (long long)range);
                break;
            }
    }
}

static void test_every_small_model(void)
{
    static const struct {
        const char *name;
        pl_data_kind kind;
    } models[] = {
        {"small/mlp-small.json", PL_DATA_FASHION_MNIST},
        {"small/cnn-small.json", PL_DATA_FASHION_MNIST},
        {"small/lstm_lm-small.json", PL_DATA_TEXT},
        {"small/inception-small.json", PL_DATA_SYNTHETIC},
        {"small/resnet-small.json", PL_DATA_SYNTHETIC},
        {"small/seq2seq-small.json", PL_DATA_SYNTHETIC},
        {"small/transformer-small.json", PL_DATA_SYNTHETIC},
        {"small/recommender-small.json", PL_DATA_SYNTHETIC},
        {"small/moe-small.json", PL_DATA_SYNTHETIC},
    };
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        pl_graph *graph = pl_test_bundled_graph(models[m].name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
        for (int synthetic = 0; synthetic < 2; synthetic++) {
            pl_error err;
            pl_dataset *data = pl_dataset_open(graph, synthetic ? "synthetic" : NULL, 1, &err);
            if (!data)
                fprintf(stderr, "\n    %s: %s: %s\n", models[m].name, err.source, err.text);
            CU_ASSERT_PTR_NOT_NULL_FATAL(data);
            CU_ASSERT_EQUAL(pl_dataset_kind(data),
                            synthetic ? PL_DATA_SYNTHETIC : models[m].kind);
            int count = 2 * graph->batch_size + 1;
            batch b = batch_new(graph, count);
            for (int split = 0; split < 2; split++) {
                int64_t size = pl_dataset_size(data, (pl_split)split);
                CU_ASSERT_TRUE(size > 0);
                /* across the end of the split: indices wrap */
                pl_dataset_fill(data, (pl_split)split, 1, size - 3, count, b.buf);
                CU_ASSERT_TRUE(guards_intact(&b));
                check_id_ranges(graph, &b, count);
            }
            batch_free(&b);
            pl_dataset_free(data);
        }
        pl_graph_free(graph);
    }
}

static void test_default_text(void)
{
    pl_graph *graph = pl_test_bundled_graph("small/lstm_lm-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(graph);
    pl_error err;
    pl_dataset *data = pl_dataset_open(graph, NULL, 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_PTR_NOT_NULL(strstr(pl_dataset_describe(data), PL_DEFAULT_TEXT));
    /* GPL-3: 35149 bytes, windows of 6 characters */
    int64_t windows = (35149 - 1) / 6;
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TEST), windows / 10);
    CU_ASSERT_EQUAL(pl_dataset_size(data, PL_SPLIT_TRAIN), windows - windows / 10);
    pl_dataset_free(data);
    pl_graph_free(graph);
}

void pl_register_data_tests(void)
{
    static const pl_test_case cases[] = {
        {"Fashion-MNIST sizes", test_mnist_sizes},
        {"Fashion-MNIST test split against Python", test_mnist_test_split_values},
        {"Fashion-MNIST first training sample", test_mnist_first_training_sample},
        {"Fashion-MNIST epoch visits every sample once", test_mnist_epoch_visits_all},
        {"shuffle is a permutation per epoch", test_shuffle},
        {"idx reader on tiny valid files", test_mnist_small_valid_files},
        {"malformed idx files", test_mnist_malformed},
        {"text alphabet", test_text_alphabet},
        {"text windows and next-character labels", test_text_windows},
        {"text needs a causal model", test_text_needs_a_causal_model},
        {"default text", test_default_text},
        {"synthetic is deterministic", test_synthetic_deterministic},
        {"synthetic samples along the batch axis", test_synthetic_batch_axis},
        {"synthetic class teacher is learnable", test_synthetic_class_teacher},
        {"synthetic token-pair teacher", test_synthetic_token_teacher},
        {"synthetic seq2seq reverses", test_synthetic_seq2seq},
        {"synthetic seq2seq with two vocabularies", test_synthetic_seq2seq_vocabularies},
        {"synthetic mse teacher is linear", test_synthetic_mse_teacher},
        {"every small model fills its inputs", test_every_small_model},
        {NULL, NULL},
    };
    CU_pSuite suite = CU_add_suite("data", suite_init, suite_cleanup);
    if (!suite) {
        fprintf(stderr, "cannot add suite data\n");
        exit(1);
    }
    for (const pl_test_case *c = cases; c->name; c++)
        if (!CU_add_test(suite, c->name, c->run)) {
            fprintf(stderr, "cannot add test %s\n", c->name);
            exit(1);
        }
}
