/* Splits in the paper's output format: reading an expert's, writing placer's. */
#include <math.h>
#include <stdlib.h>

#include "json_reader.h"
#include "partition_impl.h"

#define SPLIT_MAX_BYTES ((size_t)64 << 20)

pl_partition_split *pl_partition_split_new(const pl_partition_instance *inst, pl_error *err)
{
    pl_partition_split *split = calloc(1, sizeof *split);
    if (split)
        split->device = malloc(((size_t)inst->n_nodes + 1) * sizeof *split->device);
    if (split && split->device) {
        split->n_nodes = inst->n_nodes;
        for (int v = 0; v < inst->n_nodes; v++)
            split->device[v] = -1;
        return split;
    }
    pl_partition_split_free(split);
    pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    return NULL;
}

void pl_partition_split_free(pl_partition_split *split)
{
    if (!split)
        return;
    free(split->device);
    free(split);
}

/* One device's {"load": ..., "nodes": [ids]}: its nodes go to `device`. */
static bool read_device(pl_json_reader *r, const json_t *value,
                        const pl_partition_instance *inst, int device, int *placed)
{
    static const char *const allowed[] = {"load", "nodes", NULL};
    json_t *nodes;
    if (!pl_json_expect_object(r, value, allowed) ||
        !pl_json_member(r, value, "nodes", JSON_ARRAY, true, &nodes))
        return false;
    size_t at = pl_json_push_key(r, "nodes");
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(nodes); i++) {
        size_t at_node = pl_json_push_index(r, i);
        json_t *id = json_array_get(nodes, i);
        int v = json_is_integer(id) ? pl_partition_node_index(inst, json_integer_value(id)) : -1;
        if (!json_is_integer(id))
            ok = pl_json_fail(r, "expected a node id (an integer), not %s",
                              pl_json_type_name(id));
        else if (v < 0)
            ok = pl_json_fail(r, "the instance has no node %lld",
                              (long long)json_integer_value(id));
        else if (placed[v] >= 0)
            ok = pl_json_fail(r, "node %lld is listed twice", (long long)json_integer_value(id));
        else if (device == PL_PARTITION_CPU && inst->n_cpus == 0)
            ok = pl_json_fail(r, "node %lld is on the CPU, and the instance has none "
                                 "(maxCPUs 0)",
                              (long long)json_integer_value(id));
        else
            placed[v] = device;
        pl_json_pop(r, at_node);
    }
    pl_json_pop(r, at);
    return ok;
}

static bool read_devices(pl_json_reader *r, const json_t *root, const char *key, int first,
                         int most, const pl_partition_instance *inst, int *placed)
{
    json_t *array;
    if (!pl_json_member(r, root, key, JSON_ARRAY, true, &array))
        return false;
    size_t at = pl_json_push_key(r, key);
    bool ok = true;
    if (json_array_size(array) > (size_t)most && first > 0)
        ok = pl_json_fail(r, "%zu accelerators, and the instance has %d (maxFPGAs)",
                          json_array_size(array), most);
    for (size_t i = 0; ok && i < json_array_size(array); i++) {
        size_t at_device = pl_json_push_index(r, i);
        ok = read_device(r, json_array_get(array, i), inst, first ? first + (int)i : 0, placed);
        pl_json_pop(r, at_device);
    }
    pl_json_pop(r, at);
    return ok;
}

/* Nodes no list names take their colour class's device, as a forward split covers the
 * backward nodes of a training graph. */
static pl_status extend_by_colour(const pl_partition_instance *inst, int *device,
                                  pl_error *err)
{
    int *class_device = malloc(((size_t)inst->n_colours + 1) * sizeof *class_device);
    if (!class_device)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int c = 0; c < inst->n_colours; c++)
        class_device[c] = -1;
    for (int v = 0; v < inst->n_nodes; v++)
        if (device[v] >= 0 && class_device[inst->nodes[v].colour] < 0)
            class_device[inst->nodes[v].colour] = device[v];
    pl_status status = PL_OK;
    for (int v = 0; v < inst->n_nodes && !status; v++) {
        if (device[v] >= 0)
            continue;
        device[v] = class_device[inst->nodes[v].colour];
        if (device[v] < 0)
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "node %lld is in no device's list, nor is any node of its "
                                  "colour class",
                                  (long long)inst->nodes[v].id);
    }
    free(class_device);
    return status;
}

pl_partition_split *pl_partition_split_load(const char *path,
                                            const pl_partition_instance *inst, pl_error *err)
{
    pl_error_init(err, path);
    json_t *root = pl_json_parse_file(path, SPLIT_MAX_BYTES, err, NULL);
    if (!root)
        return NULL;
    pl_partition_split *split = pl_partition_split_new(inst, err);
    pl_json_reader r;
    pl_json_reader_init(&r, err);
    static const char *const allowed[] = {"maxLoad", "fpgas", "cpus", NULL};
    bool ok = split && pl_json_expect_object(&r, root, allowed) &&
              read_devices(&r, root, "fpgas", 1, inst->n_accelerators, inst, split->device) &&
              read_devices(&r, root, "cpus", 0, 0, inst, split->device) &&
              extend_by_colour(inst, split->device, err) == PL_OK &&
              pl_partition_check(inst, split, err) == PL_OK;
    json_decref(root);
    if (ok)
        return split;
    pl_partition_split_free(split);
    return NULL;
}

static json_t *device_json(const pl_partition_instance *inst, const pl_partition_split *split,
                           int device, double load)
{
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < inst->n_nodes; i++) {
        int v = inst->by_id[i].node; /* ids in ascending order */
        if (split->device[v] == device &&
            json_array_append_new(nodes, json_integer(inst->nodes[v].id)) != 0) {
            json_decref(nodes);
            return NULL;
        }
    }
    return nodes ? json_pack("{s:f, s:o}", "load", load, "nodes", nodes) : NULL;
}

pl_status pl_partition_split_write(const char *path, const pl_partition_instance *inst,
                                   const pl_partition_split *split, pl_error *err)
{
    int n_devices = inst->n_accelerators + 1;
    double *loads = calloc((size_t)n_devices, sizeof *loads);
    int *used = calloc((size_t)n_devices, sizeof *used);
    double max_load = loads && used ? pl_partition_max_load(inst, split, loads) : NAN;
    json_t *accelerators = json_array(), *cpus = json_array();
    bool ok = !isnan(max_load) && accelerators && cpus;
    for (int v = 0; ok && v < inst->n_nodes; v++)
        used[split->device[v]] = 1;
    for (int d = 1; ok && d < n_devices; d++)
        if (used[d])
            ok = json_array_append_new(accelerators, device_json(inst, split, d, loads[d])) == 0;
    if (ok && inst->n_cpus > 0)
        ok = json_array_append_new(cpus, device_json(inst, split, PL_PARTITION_CPU,
                                                     loads[PL_PARTITION_CPU])) == 0;
    json_t *root = ok ? json_pack("{s:f, s:O, s:O}", "maxLoad", max_load, "fpgas", accelerators,
                                  "cpus", cpus)
                      : NULL;
    free(loads), free(used);
    json_decref(accelerators), json_decref(cpus);
    if (!root)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = pl_json_write_file(path, root, JSON_INDENT(2) | JSON_REAL_PRECISION(17), err);
    json_decref(root);
    return status;
}
