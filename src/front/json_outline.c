/* Outlining a JSON document (json_outline.h): one pass over the root object, which
 * parses each member value by itself and, for the members asked for, only finds where
 * each element of the array begins and ends. */
#include "json_outline.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

enum { DECODE_FLAGS = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES };

static size_t skip_space(const char *text, size_t size, size_t i)
{
    while (i < size && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    return i;
}

/* Just past the string that opens at text[i], or size when it is not closed. */
static size_t after_string(const char *text, size_t size, size_t i)
{
    for (i++; i < size; i++) {
        if (text[i] == '\\')
            i++;
        else if (text[i] == '"')
            return i + 1;
    }
    return size;
}

/* Just past the value that starts at text[i], by its brackets and strings (the parser
 * checks the rest): a string, a nested value, or a scalar up to the next separator. */
static size_t after_value(const char *text, size_t size, size_t i)
{
    size_t depth = 0;
    while (i < size) {
        char c = text[i];
        if (c == '"') {
            i = after_string(text, size, i);
            if (depth == 0)
                return i;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return i; /* a scalar's end: the enclosing object's */
            if (--depth == 0)
                return i + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' ||
                                  c == '\r')) {
            return i;
        }
        i++;
    }
    return size;
}

/* The array that opens at text[i]: each element's start recorded; returns just past its
 * closing ']', or 0 when the text ends first or memory runs out. */
static size_t find_elements(const char *text, size_t size, size_t i,
                            pl_json_outline_array *array)
{
    int cap = 0, n = 0;
    size_t depth = 0, *start = NULL;
    i = skip_space(text, size, i + 1);
    if (i < size && text[i] == ']') { /* no elements: start[0] alone */
        start = malloc(sizeof *start);
        if (!start)
            return 0;
        start[0] = i + 1;
        array->start = start;
        array->n = 0;
        return i + 1;
    }
    for (bool element_begins = true; i < size; i++) {
        if (element_begins) {
            if (!pl_grow(&start, &cap, n + 2, sizeof *start, 1024)) {
                free(start);
                return 0;
            }
            start[n++] = i;
            element_begins = false;
        }
        char c = text[i];
        if (c == '"') {
            i = after_string(text, size, i) - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        } else if (c == '}') { /* closes nothing this array opened */
            break;
        } else if (c == ']') {
            start[n] = i + 1;
            array->start = start;
            array->n = (size_t)n;
            return i + 1;
        } else if (c == ',' && depth == 0) {
            element_begins = true;
        }
    }
    free(start);
    return 0;
}

static bool outlined_key(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (strcmp(*keys, key) == 0)
            return true;
    return false;
}

/* The member that starts at text[i] (its key), added to the outline; returns just past
 * its value, or 0 when it is not outlined. */
static size_t add_member(pl_json_outline *o, const char *text, size_t size, size_t i,
                         const char *const *keys)
{
    if (i >= size || text[i] != '"')
        return 0;
    size_t key_end = after_string(text, size, i);
    json_t *key = json_loadb(text + i, key_end - i, DECODE_FLAGS, NULL);
    const char *name = json_string_value(key);
    size_t at = skip_space(text, size, key_end);
    bool ok = name && !json_object_get(o->root, name) && at < size && text[at] == ':';
    at = ok ? skip_space(text, size, at + 1) : 0;
    json_t *value = NULL;
    if (ok && at < size && text[at] == '[' && outlined_key(keys, name) &&
        o->n_arrays < PL_JSON_OUTLINE_MAX_ARRAYS) {
        pl_json_outline_array *array = &o->arrays[o->n_arrays];
        at = find_elements(text, size, at, array);
        array->key = at ? strdup(name) : NULL;
        ok = array->key != NULL;
        if (ok)
            o->n_arrays++;
        else
            free(array->start);
        value = ok ? json_array() : NULL;
    } else if (ok) {
        size_t end = after_value(text, size, at);
        value = json_loadb(text + at, end - at, DECODE_FLAGS, NULL);
        at = end;
    }
    ok = value && json_object_set_new(o->root, name, value) == 0;
    json_decref(key);
    return ok ? at : 0;
}

/* The root object's members, one after another; false when it is not outlined. */
static bool add_members(pl_json_outline *o, const char *text, size_t size,
                        const char *const *keys)
{
    size_t i = skip_space(text, size, 0);
    if (i >= size || text[i] != '{')
        return false;
    i = skip_space(text, size, i + 1);
    if (i < size && text[i] == '}')
        return skip_space(text, size, i + 1) == size;
    for (;;) {
        i = add_member(o, text, size, i, keys);
        if (i == 0)
            return false;
        i = skip_space(text, size, i);
        if (i < size && text[i] == '}')
            return skip_space(text, size, i + 1) == size;
        if (i >= size || text[i] != ',')
            return false;
        i = skip_space(text, size, i + 1);
    }
}

bool pl_json_outline_make(pl_json_outline *outline, const char *text, size_t size,
                          const char *const *keys)
{
    *outline = (pl_json_outline){.text = text, .root = json_object()};
    if (outline->root && add_members(outline, text, size, keys))
        return true;
    pl_json_outline_release(outline);
    return false;
}

const pl_json_outline_array *pl_json_outline_find(const pl_json_outline *outline,
                                                  const char *key)
{
    for (int a = 0; a < outline->n_arrays; a++)
        if (strcmp(outline->arrays[a].key, key) == 0)
            return &outline->arrays[a];
    return NULL;
}

json_t *pl_json_outline_element(const pl_json_outline *outline,
                                const pl_json_outline_array *array, size_t i)
{
    size_t from = array->start[i], to = array->start[i + 1] - 1;
    return json_loadb(outline->text + from, to - from, DECODE_FLAGS, NULL);
}

void pl_json_outline_release(pl_json_outline *outline)
{
    if (!outline)
        return;
    json_decref(outline->root);
    for (int a = 0; a < outline->n_arrays; a++) {
        free((char *)outline->arrays[a].key);
        free(outline->arrays[a].start);
    }
    *outline = (pl_json_outline){0};
}
