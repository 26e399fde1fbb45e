/* A JSON document's outline: its root object parsed, except for the values of a few array
 * members (a model's "nodes", say), which are left as text with the place of each element
 * found, so that a loader can parse, read and drop one element at a time. A model of a
 * million ops is a tree of gigabytes when parsed whole; its outline is a few offsets per
 * element.
 *
 * The outline is strict where it looks (the root is one object with unique keys, its
 * separators in place, nothing after it) and leaves the rest to the parser: each member
 * value and each element is parsed on its own by jansson, duplicate keys rejected. A
 * document whose outline is made and whose elements all parse is valid JSON. What is not
 * outlined (the root is no object, a key repeats, a separator is missing, a member value
 * does not parse) makes no outline and no error: the caller parses the text whole, and
 * the parser says what is wrong and where (line and column), as it always did. An element
 * that does not parse (NULL from pl_json_outline_element) sends the caller there too.
 *
 * Ownership: the outline borrows the text, which must outlive it, and owns its root and
 * offsets (pl_json_outline_release). Not thread-safe; one outline, one reader. */
#ifndef PLACER_JSON_OUTLINE_H
#define PLACER_JSON_OUTLINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum { PL_JSON_OUTLINE_MAX_ARRAYS = 4 };

/* One member array left as text: element i is text[start[i], start[i + 1] - 1), the last
 * character before the next start being its ',' or the closing ']'. */
typedef struct pl_json_outline_array {
    const char *key;
    size_t n;
    size_t *start; /* n + 1 offsets */
} pl_json_outline_array;

typedef struct pl_json_outline {
    const char *text;
    json_t *root; /* the root object; each outlined member an empty array in it */
    int n_arrays;
    pl_json_outline_array arrays[PL_JSON_OUTLINE_MAX_ARRAYS];
} pl_json_outline;

/* Outlines text[size]: the root's members named in the NULL-terminated `keys` (at most
 * PL_JSON_OUTLINE_MAX_ARRAYS) whose values are arrays are left as text. Returns false,
 * with *outline empty, when the text is not outlined (above) or memory runs out. */
bool pl_json_outline_make(pl_json_outline *outline, const char *text, size_t size,
                          const char *const *keys);

/* The outlined array of member `key`, or NULL when that member was not outlined. */
const pl_json_outline_array *pl_json_outline_find(const pl_json_outline *outline,
                                                  const char *key);

/* Element i of `array`, parsed: a new reference, or NULL when it is not a JSON value by
 * itself (or memory ran out). */
json_t *pl_json_outline_element(const pl_json_outline *outline,
                                const pl_json_outline_array *array, size_t i);

/* Frees the root and the offsets; the outline is empty afterwards. NULL-safe. */
void pl_json_outline_release(pl_json_outline *outline);

#endif
