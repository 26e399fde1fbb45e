/* Reading a JSON document with errors that point at the offending value; writing one.
 *
 * Every loader of a placer file (model, cluster, plan) walks its jansson tree through a
 * pl_json_reader, which keeps the JSON pointer of where it is and records the first error
 * as "FILE: /pointer: message". Helpers return false after recording an error, so loaders
 * read as a chain of checks. Not thread-safe; one reader per document. */
#ifndef PLACER_JSON_READER_H
#define PLACER_JSON_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef struct pl_json_reader {
    pl_error *err; /* may be NULL */
    char path[PL_ERROR_PATH_MAX];
    size_t path_len;
} pl_json_reader;

void pl_json_reader_init(pl_json_reader *r, pl_error *err);

/* Reads a whole file into memory and parses it (UTF-8 checked, duplicate keys rejected).
 * Syntax errors carry line and column. Returns a new reference, or NULL. `max_bytes`
 * bounds the file size. */
json_t *pl_json_parse_file(const char *path, size_t max_bytes, pl_error *err,
                           uint64_t *content_hash);
/* The reading half of pl_json_parse_file: the file's bytes (malloc'ed, *size of them), or
 * NULL with the error recorded. The path "-" is standard input (not a terminal), read to
 * its end by the same limit and named PL_JSON_STDIN_NAME in the error's source when the
 * caller named it "-": so that every JSON input (model, cluster, plan) can be piped in.
 * Standard input is read once; a second reading finds it at its end (empty). */
#define PL_JSON_STDIN_NAME "<stdin>"
char *pl_json_read_file(const char *path, size_t max_bytes, size_t *size, pl_error *err);
/* The number of elements of the array that is the root object's member `key`, counted by a
 * scan of the raw text (strings skipped) that stops once it passes `limit`: so that a
 * count limit is enforced before the parser builds a tree in proportion to the file.
 * Only a bound: text that is not JSON, or a member that is no array, counts what it
 * counts (0 for none) and the parser reports it. */
size_t pl_json_count_member_elements(const char *data, size_t size, const char *key,
                                     size_t limit);
json_t *pl_json_parse_buffer(const char *data, size_t size, pl_error *err);
/* The checks pl_json_parse_buffer makes before parsing: the text is not empty or white
 * space alone, and is UTF-8 without NUL bytes. PL_OK, or the error recorded with its line
 * and column. */
pl_status pl_json_check_text(const char *data, size_t size, pl_error *err);

/* Moving the pointer: push returns the length to pop back to. */
size_t pl_json_push_key(pl_json_reader *r, const char *key);
size_t pl_json_push_index(pl_json_reader *r, size_t index);
void pl_json_pop(pl_json_reader *r, size_t len);

/* Records a PL_EINPUT error at the current pointer; returns false. */
bool pl_json_fail(pl_json_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "an object", "a string", ... for messages. */
const char *pl_json_type_name(const json_t *value);

/* `value` must be an object whose keys are all among the NULL-terminated `allowed`. */
bool pl_json_expect_object(pl_json_reader *r, const json_t *value,
                           const char *const *allowed);

/* Member access: on success *out is the member (borrowed) or NULL when optional and
 * absent. The error for a missing member points at the object; for a wrong type, at the
 * member. */
bool pl_json_member(pl_json_reader *r, const json_t *object, const char *key, json_type type,
                    bool required, json_t **out);

/* Typed members, pushing the member's key for their own checks. */
bool pl_json_string(pl_json_reader *r, const json_t *object, const char *key, bool required,
                    const char **out);
bool pl_json_integer(pl_json_reader *r, const json_t *object, const char *key, bool required,
                     int64_t min, int64_t max, int64_t *out);
bool pl_json_number(pl_json_reader *r, const json_t *object, const char *key, bool required,
                    double min, double max, double *out);

/* The head of every placer file: `root` is an object whose "format" is `format` and whose
 * "version" is `version`, checked before its other fields so that a newer file says so.
 * `what` names the object in messages ("model", "cluster", "plan"). */
bool pl_json_check_header(pl_json_reader *r, const json_t *root, const char *what,
                          const char *format, int64_t version);
/* The same for a format read in versions oldest..newest; the file's in *version (NULL
 * allowed). */
bool pl_json_check_header_versions(pl_json_reader *r, const json_t *root, const char *what,
                                   const char *format, int64_t oldest, int64_t newest,
                                   int64_t *version);

/* A name: 1 to 255 bytes, no control characters. `value` is the string at the current
 * pointer. */
bool pl_json_check_name(pl_json_reader *r, const json_t *value, const char *what);

/* Writes `root` to `path` atomically (atomic_file.h) with jansson's dump `flags`. */
pl_status pl_json_write_file(const char *path, const json_t *root, size_t flags,
                             pl_error *err);

#endif
