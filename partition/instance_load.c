/* Reading a dnn-partitioning instance file into a pl_partition_instance, every error with
 * the JSON pointer of the value at fault. */
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "partition_impl.h"

#define INSTANCE_MAX_BYTES ((size_t)256 << 20)
#define INSTANCE_MAX_NODES 1000000
#define INSTANCE_MAX_EDGES 10000000
/* The dynamic program's table grows with the accelerators times the positions. */
#define INSTANCE_MAX_ACCELERATORS 64
#define INSTANCE_MAX_CPUS 1024
/* Two out-edges of one node whose costs differ by more than this are an error: the
 * format charges a node's output once, whatever its consumers. */
#define COST_TOLERANCE 1e-6

/* A flag written as true/false or 0/1. */
static bool read_flag(pl_json_reader *r, const json_t *object, const char *key, bool *out)
{
    json_t *value = json_object_get(object, key);
    if (value && json_is_boolean(value)) {
        *out = json_is_true(value);
        return true;
    }
    int64_t flag;
    if (!pl_json_integer(r, object, key, true, 0, 1, &flag))
        return false;
    *out = flag != 0;
    return true;
}

static bool read_node(pl_json_reader *r, const json_t *value, pl_partition_node *node,
                      int64_t *colour_class, bool *has_colour)
{
    static const char *const allowed[] = {"id", "supportedOnFpga", "cpuLatency", "fpgaLatency",
                                          "isBackwardNode", "colorClass", "size", "name",
                                          "layerId", NULL};
    json_t *colour;
    if (!pl_json_expect_object(r, value, allowed) ||
        !pl_json_integer(r, value, "id", true, INT64_MIN, INT64_MAX, &node->id) ||
        !read_flag(r, value, "supportedOnFpga", &node->accelerator_ok) ||
        !pl_json_number(r, value, "cpuLatency", true, 0, 1e300, &node->cpu_latency) ||
        !pl_json_number(r, value, "fpgaLatency", true, 0, 1e300, &node->accelerator_latency) ||
        !read_flag(r, value, "isBackwardNode", &node->backward) ||
        !pl_json_number(r, value, "size", false, 0, 1e300, &node->size) ||
        !pl_json_member(r, value, "colorClass", JSON_INTEGER, false, &colour))
        return false;
    *has_colour = colour != NULL;
    *colour_class = colour ? json_integer_value(colour) : 0;
    return true;
}

/* (key, node) pairs sorted by key: finding a node by id, numbering colour classes. */
static int compare_keyed(const void *a, const void *b)
{
    const pl_partition_keyed *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key ? 1 : x->node - y->node;
}

/* Colour classes numbered 0.. in the order of their values; a node without one gets a
 * class of its own after them. */
static void number_colours(pl_partition_instance *inst, pl_partition_keyed *given,
                           int n_given, const bool *has_colour)
{
    qsort(given, (size_t)n_given, sizeof *given, compare_keyed);
    int classes = 0;
    for (int i = 0; i < n_given; i++) {
        if (i > 0 && given[i].key != given[i - 1].key)
            classes++;
        inst->nodes[given[i].node].colour = classes;
    }
    classes += n_given > 0;
    for (int v = 0; v < inst->n_nodes; v++)
        if (!has_colour[v])
            inst->nodes[v].colour = classes++;
    inst->n_colours = classes;
}

static bool read_nodes(pl_json_reader *r, const json_t *array, pl_partition_instance *inst)
{
    size_t n = json_array_size(array);
    if (n == 0 || n > INSTANCE_MAX_NODES)
        return pl_json_fail(r, "expected 1 to %d nodes, not %zu", INSTANCE_MAX_NODES, n);
    inst->n_nodes = (int)n;
    inst->nodes = calloc(n, sizeof *inst->nodes);
    inst->by_id = calloc(n, sizeof *inst->by_id);
    pl_partition_keyed *colours = calloc(n, sizeof *colours);
    bool *has_colour = calloc(n, sizeof *has_colour);
    bool ok = inst->nodes && inst->by_id && colours && has_colour;
    if (!ok)
        pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory");
    int n_given = 0;
    for (size_t i = 0; ok && i < n; i++) {
        size_t at = pl_json_push_index(r, i);
        int64_t colour = 0;
        ok = read_node(r, json_array_get(array, i), &inst->nodes[i], &colour, &has_colour[i]);
        if (has_colour[i])
            colours[n_given++] = (pl_partition_keyed){colour, (int)i};
        inst->by_id[i] = (pl_partition_keyed){inst->nodes[i].id, (int)i};
        pl_json_pop(r, at);
    }
    if (ok) {
        number_colours(inst, colours, n_given, has_colour);
        qsort(inst->by_id, n, sizeof *inst->by_id, compare_keyed);
        for (size_t i = 1; ok && i < n; i++)
            if (inst->by_id[i].key == inst->by_id[i - 1].key) {
                size_t at = pl_json_push_index(r, (size_t)inst->by_id[i].node);
                ok = pl_json_fail(r, "node id %lld is also node %d's",
                                  (long long)inst->by_id[i].key, inst->by_id[i - 1].node);
                pl_json_pop(r, at);
            }
    }
    free(colours);
    free(has_colour);
    return ok;
}

int pl_partition_node_index(const pl_partition_instance *instance, int64_t id)
{
    pl_partition_keyed key = {id, -1};
    size_t lo = 0, hi = (size_t)instance->n_nodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_keyed(&instance->by_id[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (size_t)instance->n_nodes && instance->by_id[lo].key == id
               ? instance->by_id[lo].node
               : -1;
}

/* One edge's end: a node id the instance has. */
static bool read_end(pl_json_reader *r, const json_t *edge, const char *key,
                     const pl_partition_instance *inst, int *node)
{
    int64_t id;
    if (!pl_json_integer(r, edge, key, true, INT64_MIN, INT64_MAX, &id))
        return false;
    *node = pl_partition_node_index(inst, id);
    if (*node >= 0)
        return true;
    size_t at = pl_json_push_key(r, key);
    pl_json_fail(r, "no node has id %lld", (long long)id);
    pl_json_pop(r, at);
    return false;
}

static bool read_edge(pl_json_reader *r, const json_t *edge, pl_partition_instance *inst,
                      bool *has_cost, int e)
{
    static const char *const allowed[] = {"sourceId", "destId", "cost", "size", NULL};
    int source, dest;
    double cost;
    if (!pl_json_expect_object(r, edge, allowed) ||
        !read_end(r, edge, "sourceId", inst, &source) ||
        !read_end(r, edge, "destId", inst, &dest) ||
        !pl_json_number(r, edge, "cost", true, 0, 1e300, &cost))
        return false;
    if (source == dest)
        return pl_json_fail(r, "an edge from node %lld to itself",
                            (long long)inst->nodes[source].id);
    pl_partition_node *from = &inst->nodes[source];
    if (has_cost[source] && (cost > from->output_cost + COST_TOLERANCE ||
                             cost < from->output_cost - COST_TOLERANCE)) {
        size_t at = pl_json_push_key(r, "cost");
        pl_json_fail(r, "node %lld's out-edges cost %.17g elsewhere: a node's output costs "
                        "the same whoever consumes it",
                     (long long)from->id, from->output_cost);
        pl_json_pop(r, at);
        return false;
    }
    has_cost[source] = true;
    from->output_cost = cost;
    inst->edge_source[e] = source;
    inst->edge_dest[e] = dest;
    return true;
}

static bool read_edges(pl_json_reader *r, const json_t *array, pl_partition_instance *inst)
{
    size_t n = json_array_size(array);
    if (n > INSTANCE_MAX_EDGES)
        return pl_json_fail(r, "expected at most %d edges, not %zu", INSTANCE_MAX_EDGES, n);
    inst->n_edges = (int)n;
    inst->edge_source = calloc(n + 1, sizeof *inst->edge_source);
    inst->edge_dest = calloc(n + 1, sizeof *inst->edge_dest);
    bool *has_cost = calloc((size_t)inst->n_nodes, sizeof *has_cost);
    bool ok = inst->edge_source && inst->edge_dest && has_cost;
    if (!ok)
        pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        size_t at = pl_json_push_index(r, i);
        ok = read_edge(r, json_array_get(array, i), inst, has_cost, (int)i);
        pl_json_pop(r, at);
    }
    free(has_cost);
    return ok;
}

static bool read_instance(pl_json_reader *r, const json_t *root, pl_partition_instance *inst)
{
    static const char *const allowed[] = {"maxSizePerFPGA", "maxFPGAs", "maxCPUs", "nodes",
                                          "edges", NULL};
    int64_t accelerators, cpus;
    json_t *nodes, *edges;
    if (!pl_json_expect_object(r, root, allowed) ||
        !pl_json_number(r, root, "maxSizePerFPGA", true, 0, 1e300, &inst->max_size) ||
        !pl_json_integer(r, root, "maxFPGAs", true, 0, INSTANCE_MAX_ACCELERATORS, &accelerators) ||
        !pl_json_integer(r, root, "maxCPUs", true, 0, INSTANCE_MAX_CPUS, &cpus) ||
        !pl_json_member(r, root, "nodes", JSON_ARRAY, true, &nodes) ||
        !pl_json_member(r, root, "edges", JSON_ARRAY, true, &edges))
        return false;
    inst->n_accelerators = (int)accelerators;
    inst->n_cpus = (int)cpus;
    if (accelerators + cpus == 0)
        return pl_json_fail(r, "maxFPGAs and maxCPUs are both 0: no device to place on");
    size_t at = pl_json_push_key(r, "nodes");
    bool ok = read_nodes(r, nodes, inst);
    pl_json_pop(r, at);
    if (!ok)
        return false;
    at = pl_json_push_key(r, "edges");
    ok = read_edges(r, edges, inst);
    pl_json_pop(r, at);
    if (!ok)
        return false;
    int on_cycle = pl_partition_find_cycle(inst);
    if (on_cycle >= 0) {
        at = pl_json_push_key(r, "edges");
        pl_json_fail(r, "the graph has a cycle through node %lld",
                     (long long)inst->nodes[on_cycle].id);
        pl_json_pop(r, at);
        return false;
    }
    return true;
}

pl_partition_instance *pl_partition_instance_load(const char *path, pl_error *err)
{
    pl_error_init(err, path);
    json_t *root = pl_json_parse_file(path, INSTANCE_MAX_BYTES, err, NULL);
    if (!root)
        return NULL;
    pl_partition_instance *inst = calloc(1, sizeof *inst);
    pl_json_reader reader;
    pl_json_reader_init(&reader, err);
    bool ok = inst ? read_instance(&reader, root, inst)
                   : (pl_error_set(err, PL_ENOMEM, NULL, "out of memory"), false);
    json_decref(root);
    if (ok)
        return inst;
    pl_partition_instance_free(inst);
    return NULL;
}

void pl_partition_instance_free(pl_partition_instance *instance)
{
    if (!instance)
        return;
    free(instance->nodes);
    free(instance->by_id);
    free(instance->edge_source);
    free(instance->edge_dest);
    free(instance);
}
