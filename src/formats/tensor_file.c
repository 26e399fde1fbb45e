/* Tensor files (tensor_file.h): the header line through the JSON reader, the data with
 * zlib's CRC-32; every check done before a tensor is handed out. */
#include "tensor_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "atomic_file.h"
#include "big_buffer.h"
#include "binary_reader.h"
#include "input_file.h"
#include "json_reader.h"
#include "strmap.h"

static const char *const dtype_names[] = {[PL_F32] = "f32", [PL_I32] = "i32"};

int64_t pl_named_tensor_elements(const pl_named_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

void pl_named_tensor_format_shape(const pl_named_tensor *t, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->rank && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? "," : "",
                                 (long long)t->dims[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

int pl_tensor_file_find(const pl_tensor_file *file, const char *name)
{
    for (int k = 0; k < file->n; k++)
        if (strcmp(file->tensors[k].name, name) == 0)
            return k;
    return -1;
}

/* The format stores little-endian values; a big-endian host swaps each 4-byte word. */
static void to_little_endian(void *data, int64_t words)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint32_t *w = data;
    for (int64_t i = 0; i < words; i++)
        w[i] = __builtin_bswap32(w[i]);
#else
    (void)data, (void)words;
#endif
}

/* zlib's crc32 takes at most UINT_MAX bytes a call. */
static uint32_t checksum(const void *data, uint64_t bytes)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    const unsigned char *p = data;
    while (bytes > 0) {
        uInt chunk = bytes > (1u << 30) ? (1u << 30) : (uInt)bytes;
        crc = crc32(crc, p, chunk);
        p += chunk;
        bytes -= chunk;
    }
    return (uint32_t)crc;
}

static uint64_t align_up(uint64_t n)
{
    return (n + PL_TENSOR_FILE_ALIGN - 1) / PL_TENSOR_FILE_ALIGN * PL_TENSOR_FILE_ALIGN;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* A tensor of the index: where its data are and what they must sum to. */
typedef struct entry {
    uint64_t offset, bytes;
    uint32_t crc;
    int index; /* in the file's order */
} entry;

/* What an open file keeps for pl_tensor_file_load. */
struct pl_tensor_file_source {
    FILE *fp;
    char *path;         /* the errors' source */
    uint64_t data_start;
    entry *entries;     /* by index in the file's order */
};

typedef struct reader {
    pl_binary_reader bin; /* the file and the first problem */
    int64_t size;   /* the file's */
    uint64_t data_start;
    pl_json_reader json;
    pl_tensor_file *file;
    entry *entries;
} reader;

/* The magic line, then the header line (without its newline) into a new string. */
static char *read_header_line(reader *r, size_t *length)
{
    char magic[sizeof PL_TENSOR_FILE_MAGIC - 1];
    if (fread(magic, 1, sizeof magic, r->bin.fp) != sizeof magic ||
        memcmp(magic, PL_TENSOR_FILE_MAGIC, sizeof magic) != 0)
        return pl_binary_fail(&r->bin, "not a placer tensor file (it must start with the line "
                       "\"placer-tensors\")"), NULL;
    size_t cap = 4096, used = 0;
    char *line = malloc(cap);
    for (;;) {
        if (!line)
            return pl_binary_fail(&r->bin, "out of memory"), NULL;
        if (used == cap) {
            char *more = cap >= (size_t)PL_TENSOR_FILE_MAX_HEADER ? NULL : realloc(line, cap * 2);
            if (!more) {
                free(line);
                return pl_binary_fail(&r->bin, "the header line is longer than %lld bytes",
                            (long long)PL_TENSOR_FILE_MAX_HEADER), NULL;
            }
            line = more;
            cap *= 2;
        }
        int c = getc(r->bin.fp);
        if (c == EOF) {
            free(line);
            return pl_binary_fail(&r->bin, "truncated (reading the header line: no newline ends it)"), NULL;
        }
        if (c == '\n')
            break;
        line[used++] = (char)c;
    }
    *length = used;
    r->data_start = align_up(sizeof magic + used + 1);
    return line;
}

static bool read_dtype(reader *r, const json_t *item, pl_dtype *dtype)
{
    const char *name;
    if (!pl_json_string(&r->json, item, "dtype", true, &name))
        return false;
    for (int d = 0; d < 2; d++)
        if (strcmp(name, dtype_names[d]) == 0)
            return *dtype = (pl_dtype)d, true;
    pl_json_push_key(&r->json, "dtype");
    return pl_json_fail(&r->json, "unknown dtype \"%s\" (known: f32, i32)", name);
}

static bool read_shape(reader *r, const json_t *item, pl_named_tensor *t)
{
    json_t *shape;
    if (!pl_json_member(&r->json, item, "shape", JSON_ARRAY, true, &shape))
        return false;
    size_t back = pl_json_push_key(&r->json, "shape");
    if (json_array_size(shape) > PL_MAX_RANK)
        return pl_json_fail(&r->json, "rank %zu (at most %d)", json_array_size(shape),
                            PL_MAX_RANK);
    t->rank = (int)json_array_size(shape);
    int64_t elements = 1;
    for (int i = 0; i < t->rank; i++) {
        json_t *dim = json_array_get(shape, (size_t)i);
        size_t at = pl_json_push_index(&r->json, (size_t)i);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0 ||
            json_integer_value(dim) > PL_MAX_DIM)
            return pl_json_fail(&r->json, "expected a dimension (an integer 0 to %lld)",
                                (long long)PL_MAX_DIM);
        t->dims[i] = json_integer_value(dim);
        if (t->dims[i] && elements > PL_MAX_ELEMENTS / t->dims[i])
            return pl_json_fail(&r->json, "more than %lld elements",
                                (long long)PL_MAX_ELEMENTS);
        elements *= t->dims[i];
        pl_json_pop(&r->json, at);
    }
    pl_json_pop(&r->json, back);
    return true;
}

/* One element of "tensors": its fields, checked against each other and the file. */
static bool read_entry(reader *r, const json_t *item, int k, pl_strmap *names)
{
    static const char *const fields[] = {"name", "dtype", "shape", "offset", "bytes",
                                         "crc32", NULL};
    pl_named_tensor *t = &r->file->tensors[k];
    entry *e = &r->entries[k];
    json_t *name;
    int64_t offset, bytes, crc;
    if (!pl_json_expect_object(&r->json, item, fields) ||
        !pl_json_member(&r->json, item, "name", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(&r->json, "name");
    if (!pl_json_check_name(&r->json, name, "tensor"))
        return false;
    if (!(t->name = strdup(json_string_value(name))))
        return pl_json_fail(&r->json, "out of memory");
    int existing;
    if (!pl_strmap_put(names, t->name, k, &existing))
        return pl_json_fail(&r->json, "out of memory");
    if (existing >= 0)
        return pl_json_fail(&r->json, "tensor \"%s\" is given twice (first at /tensors/%d)",
                            t->name, existing);
    pl_json_pop(&r->json, back);
    if (!read_dtype(r, item, &t->dtype) || !read_shape(r, item, t) ||
        !pl_json_integer(&r->json, item, "offset", true, 0, INT64_MAX, &offset) ||
        !pl_json_integer(&r->json, item, "bytes", true, 0, INT64_MAX, &bytes) ||
        !pl_json_integer(&r->json, item, "crc32", true, 0, UINT32_MAX, &crc))
        return false;
    *e = (entry){(uint64_t)offset, (uint64_t)bytes, (uint32_t)crc, k};
    if (bytes != pl_named_tensor_elements(t) * 4) {
        pl_json_push_key(&r->json, "bytes");
        return pl_json_fail(&r->json, "%lld bytes for %lld elements of 4 bytes", (long long)bytes,
                            (long long)pl_named_tensor_elements(t));
    }
    if (offset % PL_TENSOR_FILE_ALIGN != 0) {
        pl_json_push_key(&r->json, "offset");
        return pl_json_fail(&r->json, "offset %lld is not a multiple of %d", (long long)offset,
                            PL_TENSOR_FILE_ALIGN);
    }
    if ((uint64_t)offset > (uint64_t)r->size || (uint64_t)bytes > (uint64_t)r->size ||
        r->data_start + (uint64_t)offset + (uint64_t)bytes > (uint64_t)r->size)
        return pl_binary_fail(&r->bin, "truncated: tensor \"%s\" ends at byte %llu of a %lld-byte file", t->name,
                    (unsigned long long)(r->data_start + (uint64_t)offset + (uint64_t)bytes),
                    (long long)r->size);
    return true;
}

static bool read_index(reader *r, const json_t *root)
{
    static const char *const fields[] = {"format", "version", "tensors", NULL};
    json_t *tensors;
    if (!pl_json_check_header(&r->json, root, "tensor file header", "placer-tensors",
                              PL_TENSOR_FILE_VERSION) ||
        !pl_json_expect_object(&r->json, root, fields) ||
        !pl_json_member(&r->json, root, "tensors", JSON_ARRAY, true, &tensors))
        return false;
    size_t back = pl_json_push_key(&r->json, "tensors");
    size_t n = json_array_size(tensors);
    if (n > PL_TENSOR_FILE_MAX_TENSORS)
        return pl_json_fail(&r->json, "%zu tensors (at most %d)", n, PL_TENSOR_FILE_MAX_TENSORS);
    r->file->tensors = calloc(n + 1, sizeof *r->file->tensors);
    r->entries = calloc(n + 1, sizeof *r->entries);
    if (!r->file->tensors || !r->entries)
        return pl_binary_fail(&r->bin, "out of memory");
    pl_strmap names = {0};
    bool ok = true;
    for (size_t k = 0; ok && k < n; k++) {
        size_t at = pl_json_push_index(&r->json, k);
        r->file->n = (int)k + 1; /* so that what is read is freed */
        ok = read_entry(r, json_array_get(tensors, k), (int)k, &names);
        pl_json_pop(&r->json, at);
    }
    pl_strmap_release(&names);
    pl_json_pop(&r->json, back);
    return ok;
}

static int by_offset(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : x->index - y->index;
}

/* The index in file order: no tensor overlaps another, nothing after the last. */
static bool check_layout(reader *r)
{
    int n = r->file->n;
    entry *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    if (!sorted)
        return pl_binary_fail(&r->bin, "out of memory");
    memcpy(sorted, r->entries, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_offset);
    uint64_t at = r->data_start;
    for (int k = 0; k < n && r->bin.ok; k++) {
        const entry *e = &sorted[k];
        if (r->data_start + e->offset < at)
            pl_binary_fail(&r->bin, "tensor \"%s\" (offset %llu) overlaps tensor \"%s\"",
                           r->file->tensors[e->index].name, (unsigned long long)e->offset,
                           r->file->tensors[sorted[k - 1].index].name);
        at = r->data_start + e->offset + e->bytes;
    }
    free(sorted);
    if (r->bin.ok && (uint64_t)r->size > at)
        return pl_binary_fail(&r->bin, "%llu byte(s) after the last tensor's data",
                    (unsigned long long)((uint64_t)r->size - at));
    return r->bin.ok;
}

/* The bytes between the header line and the data: zeros, and all there. */
static bool check_padding(reader *r)
{
    uint64_t at = r->data_start, header_end = (uint64_t)ftello(r->bin.fp);
    for (uint64_t pos = header_end; pos < at && pos < (uint64_t)r->size; pos++)
        if (getc(r->bin.fp) != 0)
            return pl_binary_fail(&r->bin, "byte %llu, between the header and the data, is not zero",
                        (unsigned long long)pos);
    if ((uint64_t)r->size < at)
        return pl_binary_fail(&r->bin, "truncated (reading the padding before the data)");
    return true;
}

void pl_tensor_file_free(pl_tensor_file *file)
{
    if (!file)
        return;
    for (int k = 0; k < file->n; k++) {
        free((char *)file->tensors[k].name);
        free(file->tensors[k].data);
    }
    if (file->source) {
        if (file->source->fp)
            fclose(file->source->fp);
        free(file->source->path);
        free(file->source->entries);
        free(file->source);
    }
    free(file->tensors);
    free(file);
}

pl_tensor_file *pl_tensor_file_open(const char *path, pl_error *err)
{
    pl_error_init(err, path);
    reader r = {.bin = {.err = err, .ok = true}};
    int fd = pl_input_open_or_fail(path, &r.size, err);
    if (fd < 0)
        return NULL;
    if (!(r.bin.fp = fdopen(fd, "rb"))) {
        close(fd);
        pl_error_set(err, PL_EIO, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    pl_json_reader_init(&r.json, err);
    r.file = calloc(1, sizeof *r.file);
    struct pl_tensor_file_source *source = calloc(1, sizeof *source);
    char *copy = strdup(path);
    size_t length = 0;
    char *line = r.file && source && copy ? read_header_line(&r, &length)
                                          : (pl_binary_fail(&r.bin, "out of memory"), NULL);
    json_t *root = line ? pl_json_parse_buffer(line, length, err) : NULL;
    if (line && !root && err && err->line > 0)
        err->line += 1; /* the header is the file's second line */
    free(line);
    bool ok = root && read_index(&r, root) && check_layout(&r) && check_padding(&r);
    json_decref(root);
    if (ok) {
        *source = (struct pl_tensor_file_source){r.bin.fp, copy, r.data_start, r.entries};
        r.file->source = source;
        return r.file;
    }
    fclose(r.bin.fp);
    free(r.entries);
    free(copy);
    free(source);
    pl_tensor_file_free(r.file);
    return NULL;
}

pl_status pl_tensor_file_load(pl_tensor_file *file, int k, pl_error *err)
{
    pl_named_tensor *t = &file->tensors[k];
    if (t->data)
        return PL_OK;
    const struct pl_tensor_file_source *source = file->source;
    const entry *e = &source->entries[k];
    if (err && err->status == PL_OK)
        pl_error_init(err, source->path);
    /* the index was checked against the file's length: e->bytes are there to read */
    if (!(t->data = pl_big_buffer(e->bytes)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory (tensor \"%s\")", t->name);
    pl_status status = PL_OK;
    if (fseeko(source->fp, (off_t)(source->data_start + e->offset), SEEK_SET) != 0)
        status = pl_error_set(err, PL_EIO, NULL, "cannot read tensor \"%s\": %s", t->name,
                              strerror(errno));
    else if (fread(t->data, 1, e->bytes, source->fp) != e->bytes)
        status = pl_error_set(err, PL_EINPUT, NULL, "truncated (reading tensor \"%s\")",
                              t->name);
    uint32_t crc = status == PL_OK ? checksum(t->data, e->bytes) : 0;
    if (status == PL_OK && crc != e->crc)
        status = pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\": the checksum of its data is "
                              "%u, the header says %u (the file is damaged)", t->name, crc,
                              e->crc);
    if (status != PL_OK) {
        free(t->data);
        t->data = NULL;
        return status;
    }
    to_little_endian(t->data, (int64_t)(e->bytes / 4));
    return PL_OK;
}

pl_tensor_file *pl_tensor_file_read(const char *path, pl_error *err)
{
    pl_tensor_file *file = pl_tensor_file_open(path, err);
    for (int k = 0; file && k < file->n; k++)
        if (pl_tensor_file_load(file, k, err) != PL_OK) {
            pl_tensor_file_free(file);
            return NULL;
        }
    return file;
}

pl_status pl_named_tensor_check_finite(const pl_named_tensor *t, pl_error *err)
{
    const float *values = t->data;
    int64_t n = t->dtype == PL_F32 ? pl_named_tensor_elements(t) : 0; /* i32: any value */
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(values[i]))
            return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\": value %lld is %g "
                                "(expected a finite number)", t->name, (long long)i,
                                (double)values[i]);
    return PL_OK;
}

/* ---- writing ---------------------------------------------------------------------------- */

static pl_status check_tensors(const pl_named_tensor *tensors, int n, pl_error *err)
{
    if (n < 0 || n > PL_TENSOR_FILE_MAX_TENSORS)
        return pl_error_set(err, PL_EINPUT, NULL, "%d tensors (0 to %d)", n,
                            PL_TENSOR_FILE_MAX_TENSORS);
    pl_strmap names = {0};
    pl_status status = PL_OK;
    for (int k = 0; k < n && status == PL_OK; k++) {
        const pl_named_tensor *t = &tensors[k];
        size_t len = t->name ? strlen(t->name) : 0;
        int existing;
        if (len == 0 || len > PL_MAX_NAME)
            status = pl_error_set(err, PL_EINPUT, NULL, "tensor %d: a name of %zu bytes "
                                  "(1 to %d)", k, len, PL_MAX_NAME);
        else if (t->rank < 0 || t->rank > PL_MAX_RANK || (t->dtype != PL_F32 && t->dtype != PL_I32))
            status = pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\": rank %d or dtype out "
                                  "of range", t->name, t->rank);
        else if (!pl_strmap_put(&names, t->name, k, &existing))
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        else if (existing >= 0)
            status = pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" is given twice", t->name);
    }
    pl_strmap_release(&names);
    return status;
}

/* The header line's JSON: the index, offsets laid out from 0 in the given order. */
static char *header_text(const pl_named_tensor *tensors, int n)
{
    json_t *list = json_array();
    json_t *root = json_pack("{s:s, s:i, s:o}", "format", "placer-tensors", "version",
                             PL_TENSOR_FILE_VERSION, "tensors", list);
    uint64_t offset = 0;
    for (int k = 0; root && k < n; k++) {
        const pl_named_tensor *t = &tensors[k];
        json_t *shape = json_array();
        for (int i = 0; shape && i < t->rank; i++)
            json_array_append_new(shape, json_integer(t->dims[i]));
        uint64_t bytes = (uint64_t)pl_named_tensor_elements(t) * 4;
        json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:I, s:I, s:I}", "name", t->name,
                                              "dtype", dtype_names[t->dtype], "shape", shape,
                                              "offset", (json_int_t)offset, "bytes",
                                              (json_int_t)bytes, "crc32",
                                              (json_int_t)checksum(t->data, bytes)));
        offset = align_up(offset + bytes);
    }
    char *text = root ? json_dumps(root, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(root);
    return text;
}

static void write_zeros(FILE *f, uint64_t n)
{
    static const char zeros[PL_TENSOR_FILE_ALIGN];
    fwrite(zeros, 1, (size_t)n, f);
}

/* Little-endian whatever the host: big-endian hosts write a swapped copy. */
static void write_values(FILE *f, const void *data, uint64_t bytes)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint32_t word;
    for (uint64_t i = 0; i < bytes; i += 4) {
        memcpy(&word, (const char *)data + i, 4);
        word = __builtin_bswap32(word);
        fwrite(&word, 4, 1, f);
    }
#else
    fwrite(data, 1, (size_t)bytes, f);
#endif
}

pl_status pl_tensor_file_write(const char *path, const pl_named_tensor *tensors, int n,
                               pl_error *err)
{
    pl_status status = check_tensors(tensors, n, err);
    if (status != PL_OK)
        return status;
    char *header = header_text(tensors, n);
    if (!header)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_atomic_file file;
    if ((status = pl_atomic_open(&file, path, err)) != PL_OK) {
        free(header);
        return status;
    }
    FILE *f = file.fp;
    uint64_t at = strlen(PL_TENSOR_FILE_MAGIC) + strlen(header) + 1;
    fputs(PL_TENSOR_FILE_MAGIC, f);
    fputs(header, f);
    fputc('\n', f);
    free(header);
    write_zeros(f, align_up(at) - at);
    uint64_t offset = 0;
    for (int k = 0; k < n; k++) {
        uint64_t bytes = (uint64_t)pl_named_tensor_elements(&tensors[k]) * 4;
        write_values(f, tensors[k].data, bytes);
        offset += bytes;
        if (k + 1 < n) { /* the next tensor starts aligned; the last one ends the file */
            write_zeros(f, align_up(offset) - offset);
            offset = align_up(offset);
        }
    }
    if (ferror(f)) {
        pl_atomic_abort(&file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write: %s", strerror(errno));
    }
    return pl_atomic_commit(&file, err);
}
