/* JSON pointers, typed member access and file parsing with located errors; writing. */
#include "json_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "input_file.h"
#include "graph.h"
#include "hash.h"

void pl_json_reader_init(pl_json_reader *r, pl_error *err)
{
    r->err = err;
    r->path[0] = '\0';
    r->path_len = 0;
}

/* ---- parsing -------------------------------------------------------------------------- */

/* Finds the first byte that is not valid UTF-8 (overlong forms, surrogates and code points
 * above U+10FFFF included); returns its offset or -1. */
static long invalid_utf8_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, min = 0x10000, c &= 0x07;
        } else {
            return (long)i;
        }
        if (i + len > n)
            return (long)i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return (long)i;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return (long)i;
        i += len;
    }
    return -1;
}

static void line_column(const char *data, size_t offset, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < offset; i++) {
        if (data[i] == '\n')
            (*line)++, *column = 1;
        else if (((unsigned char)data[i] & 0xC0) != 0x80)
            (*column)++;
    }
}

pl_status pl_json_check_text(const char *data, size_t size, pl_error *err)
{
    size_t start = 0;
    /* not strchr alone: it finds a NUL byte too, and NULs are no white space */
    while (start < size && data[start] != '\0' && strchr(" \t\r\n", data[start]))
        start++;
    if (start == size)
        return pl_error_set(err, PL_EINPUT, NULL, size ? "the file holds only white space"
                                                       : "the file is empty");
    const char *nul = memchr(data, '\0', size);
    if (nul) { /* valid UTF-8 but no JSON: jansson would call it the end of the file */
        int line, column;
        line_column(data, (size_t)(nul - data), &line, &column);
        return pl_error_set_at(err, PL_EINPUT, line, column, "NUL byte: the file must be "
                               "UTF-8 text");
    }
    long bad = invalid_utf8_at((const unsigned char *)data, size);
    if (bad >= 0) {
        int line, column;
        line_column(data, (size_t)bad, &line, &column);
        return pl_error_set_at(err, PL_EINPUT, line, column, "invalid UTF-8 (byte 0x%02x): "
                               "the file must be UTF-8 text", (unsigned char)data[bad]);
    }
    return PL_OK;
}

json_t *pl_json_parse_buffer(const char *data, size_t size, pl_error *err)
{
    if (pl_json_check_text(data, size, err) != PL_OK)
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        pl_error_set_at(err, PL_EINPUT, jerr.line > 0 ? jerr.line : 1,
                        jerr.column > 0 ? jerr.column : 1, "%s", jerr.text);
    return root;
}

/* Reads `fd` to its end into a buffer of `cap` bytes to start with, growing it (a file
 * that grew while read, or a pipe of unknown size) until more than `max_bytes` came. */
static char *read_to_end(int fd, size_t cap, size_t max_bytes, size_t *size_out,
                         pl_error *err)
{
    char *data = malloc(cap);
    if (!data) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory reading %zu bytes", cap);
        return NULL;
    }
    size_t size = 0;
    bool failed = false;
    for (;;) {
        if (size == cap) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                pl_error_set(err, PL_ENOMEM, NULL, "out of memory reading %zu bytes", cap * 2);
                return NULL;
            }
            data = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, data + size, cap - size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) { /* EISDIR: a folder as standard input is bad input */
            pl_error_set(err, pl_input_errno_status(errno), NULL, "read error: %s",
                         strerror(errno));
            failed = true;
            break;
        }
        if (got == 0)
            break;
        size += (size_t)got;
        if (size > max_bytes) /* /dev/zero piped in is refused, not read forever */
            break;
    }
    if (!failed && size > max_bytes)
        pl_error_set(err, PL_EINPUT, NULL, "the file has more than %zu bytes", max_bytes);
    if (failed || size > max_bytes) {
        free(data);
        return NULL;
    }
    *size_out = size;
    return data;
}

/* "-": standard input, read to its end by the same limit. It is named "<stdin>" in
 * messages. A terminal is refused rather than waited on: `placer validate -` typed
 * without a pipe is a mistake, not a wish to type a model. */
static char *read_stdin(size_t max_bytes, size_t *size, pl_error *err)
{
    if (err && strcmp(err->source, "-") == 0)
        snprintf(err->source, sizeof err->source, "%s", PL_JSON_STDIN_NAME);
    if (isatty(STDIN_FILENO)) {
        pl_error_set(err, PL_EINPUT, NULL, "standard input is a terminal: pipe the file in "
                     "or name it");
        return NULL;
    }
    return read_to_end(STDIN_FILENO, 64 << 10, max_bytes, size, err);
}

char *pl_json_read_file(const char *path, size_t max_bytes, size_t *size_out, pl_error *err)
{
    if (strcmp(path, "-") == 0)
        return read_stdin(max_bytes, size_out, err);
    int64_t file_size;
    int fd = pl_input_open_or_fail(path, &file_size, err);
    if (fd < 0)
        return NULL;
    if ((uint64_t)file_size > max_bytes) {
        close(fd);
        pl_error_set(err, PL_EINPUT, NULL, "the file has %lld bytes; the limit is %zu",
                     (long long)file_size, max_bytes);
        return NULL;
    }
    char *data = read_to_end(fd, (size_t)file_size + 1, max_bytes, size_out, err);
    close(fd);
    return data;
}

json_t *pl_json_parse_file(const char *path, size_t max_bytes, pl_error *err,
                           uint64_t *content_hash)
{
    size_t size;
    char *data = pl_json_read_file(path, max_bytes, &size, err);
    json_t *root = data ? pl_json_parse_buffer(data, size, err) : NULL;
    if (root && content_hash)
        *content_hash = pl_hash_bytes(PL_HASH_INIT, data, size);
    free(data);
    return root;
}

/* The end of the string that opens at data[i] (its closing quote), or size. */
static size_t string_end(const char *data, size_t size, size_t i)
{
    for (i++; i < size && data[i] != '"'; i++)
        if (data[i] == '\\')
            i++;
    return i;
}

size_t pl_json_count_member_elements(const char *data, size_t size, const char *key,
                                     size_t limit)
{
    size_t depth = 0, key_len = strlen(key), count = 0, array_depth = 0;
    size_t last_string = 0, last_string_len = 0;
    bool keyed = false;     /* a ':' after the key at depth 1: its value comes next */
    bool in_array = false;  /* inside the member's array */
    bool want_value = false; /* in the array, before an element */
    for (size_t i = 0; i < size && count <= limit; i++) {
        char c = data[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        bool element = in_array && depth == array_depth && want_value && c != ']';
        if (element) {
            count++;
            want_value = false;
        }
        if (c == '"') {
            size_t end = string_end(data, size, i);
            last_string = i + 1;
            last_string_len = end - i - 1;
            i = end;
        } else if (c == ':' && depth == 1) {
            keyed = !in_array && last_string_len == key_len &&
                    memcmp(data + last_string, key, key_len) == 0;
            continue;
        } else if (c == '[' && depth == 1 && keyed) {
            in_array = want_value = true;
            array_depth = ++depth;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (in_array && depth == array_depth)
                return count; /* the array's end */
            depth -= depth > 0;
        } else if (c == ',' && in_array && depth == array_depth) {
            want_value = true;
        }
        keyed = false;
    }
    return count;
}

/* ---- pointers and failures ------------------------------------------------------------- */

size_t pl_json_push_key(pl_json_reader *r, const char *key)
{
    size_t len = r->path_len, cap = sizeof r->path;
    if (len + 1 < cap)
        r->path[len++] = '/';
    for (const char *c = key; *c && len + 2 < cap; c++) {
        if (*c == '~' || *c == '/') { /* RFC 6901 escapes */
            r->path[len++] = '~';
            r->path[len++] = *c == '~' ? '0' : '1';
        } else {
            r->path[len++] = *c;
        }
    }
    r->path[len] = '\0';
    size_t before = r->path_len;
    r->path_len = len;
    return before;
}

size_t pl_json_push_index(pl_json_reader *r, size_t index)
{
    /* By hand: snprintf was a tenth of the loader's own time on large graphs. */
    char key[24], *p = key + sizeof key;
    *--p = '\0';
    do
        *--p = (char)('0' + index % 10);
    while ((index /= 10) > 0);
    return pl_json_push_key(r, p);
}

void pl_json_pop(pl_json_reader *r, size_t len)
{
    r->path_len = len;
    r->path[len] = '\0';
}

bool pl_json_fail(pl_json_reader *r, const char *fmt, ...)
{
    if (r->err && r->err->status == PL_OK) {
        char text[PL_ERROR_TEXT_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        /* The document itself has the empty pointer: then no pointer is shown. */
        pl_error_set(r->err, PL_EINPUT, r->path, "%s", text);
    }
    return false;
}

const char *pl_json_type_name(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "something else";
}

static const char *expected_name(json_type type)
{
    switch (type) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "true or false";
    case JSON_NULL: return "null";
    }
    return "something else";
}

static bool has_type(const json_t *value, json_type type)
{
    switch (type) {
    case JSON_REAL: return json_is_number(value);
    case JSON_TRUE:
    case JSON_FALSE: return json_is_boolean(value);
    default: return json_typeof(value) == type;
    }
}

/* ---- members ----------------------------------------------------------------------------- */

bool pl_json_expect_object(pl_json_reader *r, const json_t *value,
                           const char *const *allowed)
{
    if (!json_is_object(value))
        return pl_json_fail(r, "expected an object, found %s", pl_json_type_name(value));
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)value, key, member) {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) {
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a && used < sizeof list; a++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                         a == allowed ? "" : ", ", *a);
            size_t back = pl_json_push_key(r, key);
            pl_json_fail(r, "unknown field \"%s\" (expected: %s)", key, list);
            pl_json_pop(r, back);
            return false;
        }
    }
    return true;
}

bool pl_json_member(pl_json_reader *r, const json_t *object, const char *key, json_type type,
                    bool required, json_t **out)
{
    json_t *value = json_object_get(object, key);
    *out = NULL;
    if (!value) {
        if (required)
            return pl_json_fail(r, "missing field \"%s\"", key);
        return true;
    }
    if (!has_type(value, type)) {
        size_t back = pl_json_push_key(r, key);
        pl_json_fail(r, "expected %s, found %s", expected_name(type), pl_json_type_name(value));
        pl_json_pop(r, back);
        return false;
    }
    *out = value;
    return true;
}

bool pl_json_string(pl_json_reader *r, const json_t *object, const char *key, bool required,
                    const char **out)
{
    json_t *value;
    if (!pl_json_member(r, object, key, JSON_STRING, required, &value))
        return false;
    if (value)
        *out = json_string_value(value);
    return true;
}

bool pl_json_integer(pl_json_reader *r, const json_t *object, const char *key, bool required,
                     int64_t min, int64_t max, int64_t *out)
{
    json_t *value;
    if (!pl_json_member(r, object, key, JSON_INTEGER, required, &value))
        return false;
    if (!value)
        return true;
    json_int_t v = json_integer_value(value);
    if (v < min || v > max) {
        size_t back = pl_json_push_key(r, key);
        pl_json_fail(r, "%lld is out of range [%lld, %lld]", (long long)v, (long long)min,
                     (long long)max);
        pl_json_pop(r, back);
        return false;
    }
    *out = v;
    return true;
}

bool pl_json_number(pl_json_reader *r, const json_t *object, const char *key, bool required,
                    double min, double max, double *out)
{
    json_t *value;
    if (!pl_json_member(r, object, key, JSON_REAL, required, &value))
        return false;
    if (!value)
        return true;
    double v = json_number_value(value);
    if (!(v >= min && v <= max)) {
        size_t back = pl_json_push_key(r, key);
        pl_json_fail(r, "%g is out of range [%g, %g]", v, min, max);
        pl_json_pop(r, back);
        return false;
    }
    *out = v;
    return true;
}

bool pl_json_check_name(pl_json_reader *r, const json_t *value, const char *what)
{
    if (!json_is_string(value))
        return pl_json_fail(r, "expected %s name (a string), found %s", what,
                            pl_json_type_name(value));
    const char *name = json_string_value(value);
    size_t len = json_string_length(value);
    if (len == 0)
        return pl_json_fail(r, "the %s name is empty", what);
    if (len > PL_MAX_NAME)
        return pl_json_fail(r, "the %s name has %zu bytes; the limit is %d", what, len,
                            PL_MAX_NAME);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return pl_json_fail(r, "the %s name contains a control character (byte %zu)",
                                what, i);
    return true;
}

bool pl_json_check_header(pl_json_reader *r, const json_t *root, const char *what,
                          const char *format, int64_t version)
{
    return pl_json_check_header_versions(r, root, what, format, version, version, NULL);
}

bool pl_json_check_header_versions(pl_json_reader *r, const json_t *root, const char *what,
                                   const char *format, int64_t oldest, int64_t newest,
                                   int64_t *version)
{
    if (!json_is_object(root))
        return pl_json_fail(r, "expected the %s object, found %s", what,
                            pl_json_type_name(root));
    const char *found;
    int64_t found_version;
    if (!pl_json_string(r, root, "format", true, &found))
        return false;
    if (strcmp(found, format) != 0) {
        pl_json_push_key(r, "format");
        return pl_json_fail(r, "this is a \"%s\" file, not a \"%s\"", found, format);
    }
    if (!pl_json_integer(r, root, "version", true, INT64_MIN, INT64_MAX, &found_version))
        return false;
    if (found_version < oldest || found_version > newest) {
        char reads[64];
        if (oldest == newest)
            snprintf(reads, sizeof reads, "version %lld", (long long)newest);
        else
            snprintf(reads, sizeof reads, "versions %lld to %lld", (long long)oldest,
                     (long long)newest);
        pl_json_push_key(r, "version");
        return pl_json_fail(r, "format version %lld, made by %s placer (this one reads %s)",
                            (long long)found_version,
                            found_version < oldest ? "an older" : "a newer", reads);
    }
    if (version)
        *version = found_version;
    return true;
}

pl_status pl_json_write_file(const char *path, const json_t *root, size_t flags,
                             pl_error *err)
{
    pl_atomic_file file;
    pl_status status = pl_atomic_open(&file, path, err);
    if (status != PL_OK)
        return status;
    if (json_dumpf(root, file.fp, flags) != 0 || fputc('\n', file.fp) == EOF) {
        pl_atomic_abort(&file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write %s", path);
    }
    return pl_atomic_commit(&file, err);
}
