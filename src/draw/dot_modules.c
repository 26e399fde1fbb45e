/* Module boxes: what keeps the drawing of a large model small enough for GraphViz.
 *
 * Imported models name their ops by module path ("features.denseblock1.denselayer3.conv1",
 * "layer4.1.conv2"), bundled ones with slashes ("stage1/block2/conv1/bn"). Cut at depth k,
 * a name gives its module: its first k components, or the whole name when it has no more
 * (the op is a box of its own). A drawing of more boxes than its limit takes the deepest
 * k whose modules, counted per container (a device, a stage, a phase), fit the limit: the
 * most detail the limit allows. dot's layout time grows much faster than the boxes do
 * (docs/plan-format.md, "Large models"). */
#include <stdlib.h>
#include <string.h>

#include "dot_impl.h"
#include "strmap.h"

static bool is_separator(char c)
{
    return c == '.' || c == '/';
}

/* The length of name's module at depth k (0: the whole name). */
static size_t module_length(const char *name, int depth)
{
    int seen = 0;
    for (size_t i = 1; name[0] && name[i] && depth > 0; i++) /* a leading one cuts nothing */
        if (is_separator(name[i]) && ++seen == depth)
            return i;
    return strlen(name);
}

static int components(const char *name)
{
    int n = 1;
    for (const char *c = name[0] ? name + 1 : name; *c; c++)
        n += is_separator(*c);
    return n;
}

/* "CONTAINER|MODULE" per unit at depth k, in `text` (room for every unit's key), and the
 * number of distinct keys; box[] gets each unit's key number. -1 when out of memory. */
static int key_units(int n, const char *const *names, const int *containers, int depth,
                     char *text, const char **keys, int *box)
{
    pl_strmap map = {0};
    int count = 0;
    char *at = text;
    for (int u = 0; u < n; u++) {
        int written = snprintf(at, 16, "%d|", containers ? containers[u] : 0);
        size_t length = module_length(names[u], depth);
        memcpy(at + written, names[u], length);
        at[written + (int)length] = '\0';
        keys[u] = at;
        at += written + (int)length + 1;
        int existing;
        if (!pl_strmap_put(&map, keys[u], count, &existing)) {
            pl_strmap_release(&map);
            return -1;
        }
        box[u] = existing >= 0 ? existing : count++;
    }
    pl_strmap_release(&map);
    return count;
}

/* The depth to group at: the deepest whose boxes fit max_boxes, else the fewest boxes
 * (depth 1); 0 when grouping would not lessen them. */
static int choose_depth(int n, const char *const *names, const int *containers, int max_boxes,
                        char *text, const char **keys, int *box)
{
    int deepest = 0;
    for (int u = 0; u < n; u++) {
        int c = components(names[u]) - 1;
        deepest = c > deepest ? c : deepest;
    }
    for (int depth = deepest; depth >= 1; depth--) {
        int count = key_units(n, names, containers, depth, text, keys, box);
        if (count < 0)
            return -1;
        if (count <= max_boxes || (depth == 1 && count < n))
            return depth;
    }
    return 0;
}

pl_status pl__dot_group(int n_units, const char *const *names, const int *containers,
                        int max_boxes, pl__dot_groups *out, pl_error *err)
{
    memset(out, 0, sizeof *out);
    size_t room = 0;
    for (int u = 0; u < n_units; u++)
        room += strlen(names[u]) + 16;
    out->box = malloc(((size_t)n_units + 1) * sizeof *out->box);
    out->text = malloc(room + 1);
    const char **keys = malloc(((size_t)n_units + 1) * sizeof *keys);
    if (!out->box || !out->text || !keys) {
        free(keys);
        pl__dot_groups_release(out);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing modules");
    }
    int depth = 0;
    if (max_boxes > 0 && n_units > max_boxes)
        depth = choose_depth(n_units, names, containers, max_boxes, out->text, keys, out->box);
    if (depth > 0)
        out->n_boxes = key_units(n_units, names, containers, depth, out->text, keys, out->box);
    for (int u = 0; depth == 0 && u < n_units; u++) /* op by op: units that share a name
                                                       (a forward op's) stay apart */
        out->box[u] = u;
    if (depth == 0)
        out->n_boxes = n_units;
    if (depth < 0 || out->n_boxes < 0 ||
        !(out->module = calloc((size_t)out->n_boxes + 1, sizeof *out->module)) ||
        !(out->n_members = calloc((size_t)out->n_boxes + 1, sizeof *out->n_members))) {
        free(keys);
        pl__dot_groups_release(out);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing modules");
    }
    out->depth = depth;
    for (int u = 0; u < n_units; u++) {
        int b = out->box[u];
        if (out->n_members[b]++ == 0) /* the key past its container */
            out->module[b] = depth > 0 ? strchr(keys[u], '|') + 1 : names[u];
    }
    free(keys);
    return PL_OK;
}

size_t pl__dot_parent_length(const char *module)
{
    size_t length = 0;
    for (size_t i = 0; module[i]; i++)
        if (is_separator(module[i]))
            length = i;
    return length;
}

void pl__dot_groups_release(pl__dot_groups *groups)
{
    free(groups->box);
    free(groups->text);
    free(groups->module);
    free(groups->n_members);
    memset(groups, 0, sizeof *groups);
}
