/* Hardware kinds and nodes in a cluster file (docs/cluster-format.md, version 2): devices
 * placer cannot run, described by the figures of their datasheet, and nodes (machines of
 * several devices joined by their own links), so that a file of 32 GPUs lists neither
 * every device nor every pair. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cluster_impl.h"
#include "graph.h"

const char *const pl_math_names[PL_MATH_COUNT + 1] = {"fp32", "tf32", "bf16", "fp16", NULL};

/* A kernel launch and its synchronisation on a GPU: a few microseconds. */
#define DEFAULT_LAUNCH_SECONDS 5e-6

static bool read_peaks(pl_json_reader *r, const json_t *kind, pl_hardware *hw)
{
    json_t *peaks;
    if (!pl_json_member(r, kind, "peak_flops_per_second", JSON_OBJECT, true, &peaks))
        return false;
    size_t back = pl_json_push_key(r, "peak_flops_per_second");
    if (!pl_json_expect_object(r, peaks, pl_math_names))
        return false;
    for (int m = 0; m < PL_MATH_COUNT; m++)
        if (!pl_json_number(r, peaks, pl_math_names[m], m == PL_MATH_FP32, 1, 1e18,
                            &hw->peak[m]))
            return false;
    pl_json_pop(r, back);
    const char *math = "fp32";
    if (!pl_json_string(r, kind, "math", false, &math))
        return false;
    int m = 0;
    while (m < PL_MATH_COUNT && strcmp(pl_math_names[m], math) != 0)
        m++;
    back = pl_json_push_key(r, "math");
    if (m == PL_MATH_COUNT)
        return pl_json_fail(r, "unknown number format \"%s\" (fp32, tf32, bf16 or fp16)", math);
    if (!(hw->peak[m] > 0))
        return pl_json_fail(r, "the math runs at %s, and \"peak_flops_per_second\" gives no "
                            "%s peak", math, math);
    pl_json_pop(r, back);
    hw->math = (pl_math)m;
    return true;
}

/* An internal op not given its own efficiency takes its forward op's ("matmul_grad_a":
 * "matmul"), when that is given. */
static int forward_of(pl_op_kind kind, const bool *given)
{
    const char *name = pl_op_info_of(kind)->name, *grad = strstr(name, "_grad");
    if (kind < PL_OP_FIRST_INTERNAL || !grad)
        return -1;
    for (int k = 0; k < PL_OP_FIRST_INTERNAL; k++) {
        const char *forward = pl_op_info_of((pl_op_kind)k)->name;
        if (given[k] && strlen(forward) == (size_t)(grad - name) &&
            strncmp(forward, name, (size_t)(grad - name)) == 0)
            return k;
    }
    return -1;
}

/* "efficiency": {"matmul": 0.7, "default": 0.5}: the share of the peak an op kind
 * attains; absent: 1. */
static bool read_efficiency(pl_json_reader *r, const json_t *kind, pl_hardware *hw)
{
    json_t *efficiency;
    if (!pl_json_member(r, kind, "efficiency", JSON_OBJECT, false, &efficiency))
        return false;
    double fallback = 1;
    bool given[PL_OP_COUNT] = {false};
    size_t back = pl_json_push_key(r, "efficiency");
    const char *key;
    json_t *value;
    json_object_foreach(efficiency, key, value) {
        pl_op_kind op = pl_op_from_name(key);
        if (op == PL_OP_COUNT && strcmp(key, "default") != 0) {
            pl_json_push_key(r, key);
            return pl_json_fail(r, "unknown op kind \"%s\" (an op kind, or \"default\")", key);
        }
        double share;
        if (!pl_json_number(r, efficiency, key, true, 1e-6, 1, &share))
            return false;
        if (op == PL_OP_COUNT) {
            fallback = share;
        } else {
            hw->efficiency[op] = share;
            given[op] = true;
        }
    }
    pl_json_pop(r, back);
    for (int k = 0; k < PL_OP_COUNT; k++) {
        int forward = given[k] ? -1 : forward_of((pl_op_kind)k, given);
        if (!given[k])
            hw->efficiency[k] = forward >= 0 ? hw->efficiency[forward] : fallback;
    }
    return true;
}

static bool read_kind(pl_json_reader *r, const json_t *value, pl_cluster *c, int index)
{
    static const char *const fields[] = {"kind", "peak_flops_per_second", "math",
                                         "memory_bytes", "memory_bytes_per_second",
                                         "launch_seconds", "efficiency", NULL};
    pl_hardware *hw = &c->hardware[index];
    json_t *name;
    int64_t memory = 0;
    hw->launch_seconds = DEFAULT_LAUNCH_SECONDS;
    if (!pl_json_expect_object(r, value, fields) ||
        !pl_json_member(r, value, "kind", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(r, "kind");
    if (!pl_json_check_name(r, name, "hardware kind"))
        return false;
    for (int other = 0; other < index; other++)
        if (strcmp(c->hardware[other].kind, json_string_value(name)) == 0)
            return pl_json_fail(r, "hardware kind \"%s\" is defined twice: also at "
                                "/hardware/%d", json_string_value(name), other);
    pl_json_pop(r, back);
    if (!read_peaks(r, value, hw) ||
        !pl_json_integer(r, value, "memory_bytes", true, 1, INT64_MAX, &memory) ||
        !pl_json_number(r, value, "memory_bytes_per_second", true, 1, 1e16,
                        &hw->memory_bytes_per_second) ||
        !pl_json_number(r, value, "launch_seconds", false, 0, 1, &hw->launch_seconds) ||
        !read_efficiency(r, value, hw))
        return false;
    /* a kind's memory is its devices' budget: kept beside it for them */
    hw->memory_bytes = memory;
    return (hw->kind = pl_cluster_copy_string(c, json_string_value(name))) != NULL;
}

bool pl_cluster_read_hardware(pl_json_reader *r, const json_t *kinds, pl_cluster *c)
{
    if (!kinds)
        return true;
    size_t n = json_array_size(kinds), back = pl_json_push_key(r, "hardware");
    if (n == 0 || n > PL_MAX_DEVICES)
        return pl_json_fail(r, "give 1 to %d hardware kinds, or leave \"hardware\" out",
                            PL_MAX_DEVICES);
    if (!(c->hardware = pl_arena_alloc(&c->arena, n * sizeof *c->hardware)))
        return false;
    memset(c->hardware, 0, n * sizeof *c->hardware);
    c->n_hardware = (int)n;
    for (size_t i = 0; i < n; i++) {
        size_t at = pl_json_push_index(r, i);
        if (!read_kind(r, json_array_get(kinds, i), c, (int)i))
            return false;
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    return true;
}

static const pl_hardware *find_kind(const pl_cluster *c, const char *kind)
{
    for (int k = 0; k < c->n_hardware; k++)
        if (strcmp(c->hardware[k].kind, kind) == 0)
            return &c->hardware[k];
    return NULL;
}

/* The member `key` names a hardware kind of the file. */
static bool read_kind_name(pl_json_reader *r, const json_t *object, const char *key,
                           const pl_cluster *c, const pl_hardware **out)
{
    const char *kind = NULL;
    if (!pl_json_string(r, object, key, false, &kind))
        return false;
    *out = NULL;
    if (!kind)
        return true;
    if (!(*out = find_kind(c, kind))) {
        size_t back = pl_json_push_key(r, key);
        pl_json_fail(r, "hardware kind \"%s\" is not defined in \"hardware\"", kind);
        pl_json_pop(r, back);
        return false;
    }
    return true;
}

bool pl_cluster_read_device_hardware(pl_json_reader *r, const json_t *device, pl_cluster *c,
                                     pl_device *d)
{
    const char *node = NULL;
    if (!read_kind_name(r, device, "hardware", c, &d->hardware) ||
        !pl_json_string(r, device, "node", false, &node))
        return false;
    if (node && !(d->node = pl_cluster_copy_string(c, node)))
        return false;
    if (!d->hardware)
        return true;
    static const char *const runnable_only[] = {"flops_per_second", "cores", "threads", "rank",
                                                NULL};
    for (int i = 0; runnable_only[i]; i++)
        if (json_object_get(device, runnable_only[i])) {
            size_t back = pl_json_push_key(r, runnable_only[i]);
            pl_json_fail(r, "a hardware device (\"%s\") is not run here: it has no \"%s\"",
                         d->hardware->kind, runnable_only[i]);
            pl_json_pop(r, back);
            return false;
        }
    if (!json_object_get(device, "memory_bytes"))
        d->memory_bytes = d->hardware->memory_bytes;
    return true;
}

bool pl_cluster_count_node_devices(pl_json_reader *r, const json_t *nodes, size_t *count)
{
    *count = 0;
    size_t back = pl_json_push_key(r, "nodes");
    if (nodes && (json_array_size(nodes) == 0 || json_array_size(nodes) > PL_MAX_DEVICES))
        return pl_json_fail(r, "give 1 to %d nodes, or leave \"nodes\" out", PL_MAX_DEVICES);
    for (size_t i = 0; nodes && i < json_array_size(nodes); i++) {
        json_t *node = json_array_get(nodes, i);
        size_t at = pl_json_push_index(r, i);
        int64_t devices = 0;
        if (!json_is_object(node))
            return pl_json_fail(r, "expected a node (an object), found %s",
                                pl_json_type_name(node));
        if (!pl_json_integer(r, node, "devices", false, 1, PL_MAX_DEVICES, &devices))
            return false;
        *count += (size_t)devices;
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    return true;
}

static int find_node(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Node `index`: its name (names[index]), its link, and the devices it makes (from
 * c->devices[*next]). */
static bool read_node(pl_json_reader *r, const json_t *node, pl_cluster *c, int *next,
                      const char **names, int index, pl_link *link)
{
    const char **name = &names[index];
    static const char *const fields[] = {"name", "hardware", "devices", "link", NULL};
    static const char *const link_fields[] = {"bytes_per_second", "latency_seconds", NULL};
    json_t *name_value, *link_value;
    const pl_hardware *hw;
    int64_t devices = 0;
    if (!pl_json_expect_object(r, node, fields) ||
        !pl_json_member(r, node, "name", JSON_STRING, true, &name_value) ||
        !read_kind_name(r, node, "hardware", c, &hw) ||
        !pl_json_integer(r, node, "devices", false, 1, PL_MAX_DEVICES, &devices) ||
        !pl_json_member(r, node, "link", JSON_OBJECT, true, &link_value))
        return false;
    size_t back = pl_json_push_key(r, "name");
    if (!pl_json_check_name(r, name_value, "node"))
        return false;
    if (find_node(names, index, json_string_value(name_value)) >= 0)
        return pl_json_fail(r, "node \"%s\" is defined twice", json_string_value(name_value));
    pl_json_pop(r, back);
    if (!hw != !devices)
        return pl_json_fail(r, "a node makes its devices from \"hardware\" and \"devices\" "
                            "together; give both, or neither and name the node in devices");
    back = pl_json_push_key(r, "link");
    if (!pl_cluster_read_link(r, link_value, link_fields, link))
        return false;
    pl_json_pop(r, back);
    if (!(*name = pl_cluster_copy_string(c, json_string_value(name_value))))
        return false;
    for (int i = 0; i < devices; i++) {
        char device_name[PL_MAX_NAME + 32];
        snprintf(device_name, sizeof device_name, "%s/%d", *name, i);
        if (strlen(device_name) > PL_MAX_NAME) {
            pl_json_push_key(r, "name");
            return pl_json_fail(r, "the node's devices' names (\"%s\") would pass the "
                                "limit of %d bytes", device_name, PL_MAX_NAME);
        }
        if (pl_cluster_find_device_in(c, *next, device_name) >= 0) {
            pl_json_push_key(r, "name");
            return pl_json_fail(r, "node \"%s\" makes device \"%s\", which is defined "
                                "already", *name, device_name);
        }
        c->devices[*next] = (pl_device){.name = pl_cluster_copy_string(c, device_name),
                                        .threads = 1, .memory_bytes = hw->memory_bytes,
                                        .hardware = hw, .node = *name, .rank = -1};
        if (!c->devices[(*next)++].name)
            return false;
    }
    return true;
}

bool pl_cluster_read_nodes(pl_json_reader *r, const json_t *nodes, pl_cluster *c, int first)
{
    size_t n = json_array_size(nodes); /* 0 when NULL */
    const char **names = calloc(n + 1, sizeof *names);
    pl_link *links = calloc(n + 1, sizeof *links);
    bool ok = names && links;
    size_t back = pl_json_push_key(r, "nodes");
    int next = first;
    for (size_t i = 0; ok && i < n; i++) {
        size_t at = pl_json_push_index(r, i);
        ok = read_node(r, json_array_get(nodes, i), c, &next, names, (int)i, &links[i]);
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    int *node = ok ? calloc((size_t)c->n_devices, sizeof *node) : NULL;
    ok = ok && node;
    for (int d = 0; ok && d < c->n_devices; d++) {
        const char *name = c->devices[d].node;
        if (name && (node[d] = find_node(names, (int)n, name)) < 0) {
            back = pl_json_push_key(r, "devices");
            pl_json_push_index(r, (size_t)d);
            pl_json_push_key(r, "node");
            ok = pl_json_fail(r, "node \"%s\" is not defined in \"nodes\"", name);
            pl_json_pop(r, back);
        }
        if (name && ok)
            c->devices[d].node = names[node[d]]; /* one string per node */
    }
    for (int a = 0; ok && a < c->n_devices; a++)
        for (int b = 0; b < c->n_devices; b++)
            if (a != b && c->devices[a].node && c->devices[b].node && node[a] == node[b])
                c->links[a * c->n_devices + b] = links[node[a]];
    free(node);
    free(names);
    free(links);
    return ok;
}

pl_cluster *pl_cluster_replay(const pl_cluster *hw, double slowdown, pl_error *err)
{
    int all[PL_MAX_DEVICES];
    for (int d = 0; d < hw->n_devices; d++)
        all[d] = d;
    pl_cluster *c = pl_cluster_subset(hw, all, hw->n_devices, err);
    if (!c)
        return NULL;
    for (int d = 0; d < c->n_devices; d++) {
        pl_device *device = &c->devices[d];
        const pl_hardware *kind = device->hardware;
        if (kind)
            device->flops_per_second =
                kind->peak[kind->math] * kind->efficiency[PL_OP_MATMUL] / slowdown;
        device->hardware = NULL;
        device->threads = 1;
    }
    for (int i = 0; i < c->n_devices * c->n_devices; i++) {
        c->links[i].bytes_per_second /= slowdown;
        c->links[i].latency_seconds *= slowdown;
    }
    c->n_hardware = 0;
    c->hardware = NULL;
    c->simulated = false;
    c->paced = true;
    return c;
}
