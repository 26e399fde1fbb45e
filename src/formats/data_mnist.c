/* Fashion-MNIST: the four idx .gz files of a directory, decompressed once at open (zlib)
 * into bytes in memory, so that filling a batch is a scaled copy. Every check names the
 * file and what is wrong with it: a dataset file is the user's to fix. */
#include "data_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "input_file.h"

enum {
    IDX_IMAGES_MAGIC = 0x00000803, /* unsigned bytes, 3 dimensions */
    IDX_LABELS_MAGIC = 0x00000801, /* unsigned bytes, 1 dimension */
    SIDE = 28,
    PIXELS = SIDE * SIDE,
    CLASSES = 10,
    MAX_SAMPLES = 1000000, /* far above any Fashion-MNIST split (60,000); the data are
                              made room for as they arrive, not as a header announces */
    PATH_CAP = 4096,
};

typedef struct mnist_split {
    int64_t count;
    unsigned char *images; /* count * PIXELS */
    unsigned char *labels; /* count */
} mnist_split;

typedef struct mnist_source {
    int image, label; /* tensor indices */
    mnist_split split[2];
} mnist_source;

static const char *const split_files[2][2] = {
    {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"},
    {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"},
};

/* ---- reading one idx file ---------------------------------------------------------- */

/* An open idx file: its path for messages and the zlib stream. */
typedef struct idx_file {
    const char *path;
    gzFile gz;
} idx_file;

static pl_status open_idx(idx_file *f, const char *path, pl_error *err)
{
    f->path = path;
    int fd;
    int64_t size;
    pl_status status = pl_data_open_file(path, &fd, &size, err);
    if (status != PL_OK)
        return status;
    f->gz = gzdopen(fd, "rb");
    if (!f->gz) {
        close(fd);
        return pl_data_fail(err, PL_ENOMEM, path, "out of memory opening the file");
    }
    gzbuffer(f->gz, 1 << 17);
    return PL_OK;
}

/* zlib's message, without the "PATH: " it puts in front (the error names the file). */
static const char *gz_message(const idx_file *f, int *code)
{
    const char *message = gzerror(f->gz, code);
    size_t n = strlen(f->path);
    if (strncmp(message, f->path, n) == 0 && strncmp(message + n, ": ", 2) == 0)
        message += n + 2;
    return message;
}

/* Reads into buf[0..room) until it is full or the data end, adding what came to *done. */
static pl_status read_some(idx_file *f, unsigned char *buf, size_t room, size_t *done,
                           const char *what, pl_error *err)
{
    size_t filled = 0;
    while (filled < room) {
        size_t chunk = room - filled < (1u << 30) ? room - filled : (1u << 30);
        int got = gzread(f->gz, buf + filled, (unsigned)chunk);
        if (got < 0) {
            int code;
            const char *message = gz_message(f, &code);
            if (code == Z_ERRNO)
                return pl_data_fail(err, PL_EIO, f->path, "read error: %s", strerror(errno));
            if (code == Z_BUF_ERROR)
                return pl_data_fail(err, PL_EINPUT, f->path,
                                    "truncated: the gzip data ends inside %s", what);
            return pl_data_fail(err, PL_EINPUT, f->path, "corrupt gzip data (%s)", message);
        }
        if (got == 0)
            break;
        filled += (size_t)got;
    }
    *done += filled;
    return PL_OK;
}

/* After reading `done` of the `size` bytes of `what`: a gzip file, and all there. */
static pl_status check_whole(idx_file *f, size_t done, size_t size, const char *what,
                             pl_error *err)
{
    if (gzdirect(f->gz))
        return pl_data_fail(err, PL_EINPUT, f->path,
                            "not a gzip file (expected a gzip-compressed idx file)");
    if (done < size)
        return pl_data_fail(err, PL_EINPUT, f->path,
                            "truncated: %s has %zu of its %zu bytes", what, done, size);
    return PL_OK;
}

/* Reads exactly `size` bytes of `what`; a short read is a truncated or corrupt file. */
static pl_status read_idx(idx_file *f, void *buf, size_t size, const char *what,
                          pl_error *err)
{
    size_t done = 0;
    pl_status status = read_some(f, buf, size, &done, what, err);
    return status == PL_OK ? check_whole(f, done, size, what, err) : status;
}

/* `size` bytes of `what` into a new buffer (*to), made room for as they arrive: a header
 * that announces more than the file holds costs no more memory than the file's data. */
static pl_status read_idx_new(idx_file *f, unsigned char **to, size_t size, const char *what,
                              pl_error *err)
{
    size_t cap = size < ((size_t)1 << 24) ? size : ((size_t)1 << 24), done = 0;
    unsigned char *buf = malloc(cap ? cap : 1);
    pl_status status = buf ? PL_OK : pl_data_fail(err, PL_ENOMEM, f->path,
                                                  "out of memory reading %s", what);
    while (status == PL_OK && done < size) {
        if (done == cap) {
            size_t more = cap * 2 < size ? cap * 2 : size;
            unsigned char *grown = realloc(buf, more);
            if (!grown) {
                status = pl_data_fail(err, PL_ENOMEM, f->path, "out of memory reading %s",
                                      what);
                break;
            }
            buf = grown, cap = more;
        }
        size_t before = done;
        status = read_some(f, buf + done, cap - done, &done, what, err);
        if (status == PL_OK && done == before)
            break;
    }
    if (status == PL_OK)
        status = check_whole(f, done, size, what, err);
    if (status != PL_OK) {
        free(buf);
        buf = NULL;
    }
    *to = buf;
    return status;
}

/* Nothing may follow the data the header announced. */
static pl_status expect_end(idx_file *f, pl_error *err)
{
    unsigned char extra;
    int got = gzread(f->gz, &extra, 1);
    if (got < 0) {
        int code;
        const char *message = gz_message(f, &code);
        return pl_data_fail(err, PL_EINPUT, f->path, "corrupt gzip data (%s)", message);
    }
    if (got > 0)
        return pl_data_fail(err, PL_EINPUT, f->path,
                            "more data than the header announces (a wrong count?)");
    return PL_OK;
}

static uint32_t big_endian(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static pl_status check_magic(const idx_file *f, uint32_t magic, uint32_t expected,
                             const char *kind, pl_error *err)
{
    if (magic == expected)
        return PL_OK;
    return pl_data_fail(err, PL_EINPUT, f->path,
                        "bad magic number 0x%08x (an idx %s file starts with 0x%08x)",
                        (unsigned)magic, kind, (unsigned)expected);
}

static pl_status check_count(const idx_file *f, uint32_t count, pl_error *err)
{
    if (count >= 1 && count <= MAX_SAMPLES)
        return PL_OK;
    return pl_data_fail(err, PL_EINPUT, f->path, "implausible sample count %u (expected 1 to %d)",
                        (unsigned)count, MAX_SAMPLES);
}

/* The images file: magic, count, 28, 28, then count * 784 pixels. */
static pl_status read_images(const char *path, mnist_split *split, pl_error *err)
{
    idx_file f;
    pl_status status = open_idx(&f, path, err);
    if (status != PL_OK)
        return status;
    unsigned char header[16];
    status = read_idx(&f, header, sizeof header, "the 16-byte header", err);
    if (status == PL_OK)
        status = check_magic(&f, big_endian(header), IDX_IMAGES_MAGIC, "image", err);
    if (status == PL_OK)
        status = check_count(&f, big_endian(header + 4), err);
    if (status == PL_OK && (big_endian(header + 8) != SIDE || big_endian(header + 12) != SIDE))
        status = pl_data_fail(err, PL_EINPUT, path, "images are %ux%u, expected %dx%d",
                              (unsigned)big_endian(header + 8),
                              (unsigned)big_endian(header + 12), SIDE, SIDE);
    if (status == PL_OK) {
        split->count = big_endian(header + 4);
        status = read_idx_new(&f, &split->images, (size_t)split->count * PIXELS,
                              "the pixel data", err);
    }
    if (status == PL_OK)
        status = expect_end(&f, err);
    gzclose(f.gz);
    return status;
}

static pl_status check_labels(const char *path, const mnist_split *split, pl_error *err)
{
    for (int64_t i = 0; i < split->count; i++)
        if (split->labels[i] >= CLASSES)
            return pl_data_fail(err, PL_EINPUT, path,
                                "label %d of sample %lld is not a class (0 to %d)",
                                split->labels[i], (long long)i, CLASSES - 1);
    return PL_OK;
}

/* The labels file: magic, count (the images' count), then count labels below 10. */
static pl_status read_labels(const char *path, const char *images_path, mnist_split *split,
                             pl_error *err)
{
    idx_file f;
    pl_status status = open_idx(&f, path, err);
    if (status != PL_OK)
        return status;
    unsigned char header[8];
    status = read_idx(&f, header, sizeof header, "the 8-byte header", err);
    if (status == PL_OK)
        status = check_magic(&f, big_endian(header), IDX_LABELS_MAGIC, "label", err);
    if (status == PL_OK && big_endian(header + 4) != split->count)
        status = pl_data_fail(err, PL_EINPUT, path, "holds %u labels but %s holds %lld images",
                              (unsigned)big_endian(header + 4), images_path,
                              (long long)split->count);
    if (status == PL_OK)
        status = read_idx_new(&f, &split->labels, (size_t)split->count, "the label data", err);
    if (status == PL_OK)
        status = expect_end(&f, err);
    if (status == PL_OK)
        status = check_labels(path, split, err);
    gzclose(f.gz);
    return status;
}

static pl_status read_split(const char *dir, int which, mnist_split *split, pl_error *err)
{
    char images[PATH_CAP], labels[PATH_CAP];
    const char *slash = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
    if (snprintf(images, sizeof images, "%s%s%s", dir, slash, split_files[which][0]) >=
            (int)sizeof images ||
        snprintf(labels, sizeof labels, "%s%s%s", dir, slash, split_files[which][1]) >=
            (int)sizeof labels)
        return pl_data_fail(err, PL_EINPUT, dir, "the directory name is too long");
    pl_status status = read_images(images, split, err);
    if (status == PL_OK)
        status = read_labels(labels, images, split, err);
    return status;
}

/* ---- the source -------------------------------------------------------------------- */

static void release_mnist(void *source)
{
    mnist_source *m = source;
    if (!m)
        return;
    for (int s = 0; s < 2; s++) {
        free(m->split[s].images);
        free(m->split[s].labels);
    }
    free(m);
}

static void fill_mnist(const pl_dataset *data, pl_split split, int64_t sample, int slot,
                       int count, void *const *inputs)
{
    const mnist_source *m = data->source;
    const mnist_split *s = &m->split[split == PL_SPLIT_TEST];
    const unsigned char *pixels = s->images + (size_t)sample * PIXELS;
    float *image = (float *)inputs[m->image] + (size_t)slot * PIXELS;
    for (int p = 0; p < PIXELS; p++)
        image[p] = (float)pixels[p] * (1.0f / 255.0f);
    ((int32_t *)inputs[m->label])[slot] = s->labels[sample];
}

pl_status pl_data_open_mnist(pl_dataset *data, const pl_data_match *match, const char *dir,
                             pl_error *err)
{
    mnist_source *m = calloc(1, sizeof *m);
    if (!m)
        return pl_data_fail(err, PL_ENOMEM, dir, "out of memory");
    m->image = match->data;
    m->label = match->label;
    data->kind = PL_DATA_FASHION_MNIST;
    data->source = m;
    data->release = release_mnist;
    data->fill = fill_mnist;
    for (int s = 0; s < 2; s++) {
        pl_status status = read_split(dir, s, &m->split[s], err);
        if (status != PL_OK)
            return status;
        data->size[s] = m->split[s].count;
    }
    snprintf(data->describe, sizeof data->describe,
             "Fashion-MNIST (%s: %lld training, %lld test images)", dir,
             (long long)data->size[PL_SPLIT_TRAIN], (long long)data->size[PL_SPLIT_TEST]);
    return PL_OK;
}
