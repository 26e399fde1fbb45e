/* Plan files (docs/plan-format.md): reading them against a graph and a cluster, writing
 * them with their partitions for people and tools to read. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "json_reader.h"
#include "plan.h"
#include "strmap.h"

#define PLAN_MAX_BYTES ((size_t)256 << 20)

static bool find_device(pl_json_reader *r, const pl_cluster *cluster, const char *name,
                        int *device)
{
    if ((*device = pl_cluster_find_device(cluster, name)) < 0)
        return pl_json_fail(r, "cluster \"%s\" has no device \"%s\"", cluster->name, name);
    return true;
}

/* "device": every replica's; or "devices": one per replica, in order. */
static bool read_devices(pl_json_reader *r, const json_t *entry, const pl_cluster *cluster,
                         pl_plan *plan, int o)
{
    const char *name = NULL;
    json_t *list;
    if (!pl_json_string(r, entry, "device", false, &name) ||
        !pl_json_member(r, entry, "devices", JSON_ARRAY, false, &list))
        return false;
    if (!name == !list)
        return pl_json_fail(r, "give either \"device\" (every replica's) or \"devices\" (one "
                            "per replica)");
    int d;
    if (name) {
        size_t back = pl_json_push_key(r, "device");
        for (int k = 0; k < plan->replicas; k++)
            if (!find_device(r, cluster, name, &pl_plan_replica(plan, k)[o]))
                return false;
        pl_json_pop(r, back);
        return true;
    }
    size_t back = pl_json_push_key(r, "devices");
    if (json_array_size(list) != (size_t)plan->replicas)
        return pl_json_fail(r, "%zu devices for %d replica%s: one per replica",
                            json_array_size(list), plan->replicas,
                            plan->replicas == 1 ? "" : "s");
    for (int k = 0; k < plan->replicas; k++) {
        size_t at = pl_json_push_index(r, (size_t)k);
        const json_t *item = json_array_get(list, (size_t)k);
        if (!json_is_string(item))
            return pl_json_fail(r, "expected a device name, got %s", pl_json_type_name(item));
        if (!find_device(r, cluster, json_string_value(item), &d))
            return false;
        pl_plan_replica(plan, k)[o] = d;
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    return true;
}

/* A list of device names, one per shard. */
static bool read_shards(pl_json_reader *r, const json_t *list, const pl_cluster *cluster,
                        int k, int *devices)
{
    if (!json_is_array(list))
        return pl_json_fail(r, "expected a list of device names, got %s",
                            pl_json_type_name(list));
    if (json_array_size(list) != (size_t)k)
        return pl_json_fail(r, "%zu devices, where the first replica's split has %d: every "
                            "replica splits the op over as many", json_array_size(list), k);
    for (int s = 0; s < k; s++) {
        size_t at = pl_json_push_index(r, (size_t)s);
        const json_t *item = json_array_get(list, (size_t)s);
        if (!json_is_string(item))
            return pl_json_fail(r, "expected a device name, got %s", pl_json_type_name(item));
        if (!find_device(r, cluster, json_string_value(item), &devices[s]))
            return false;
        for (int t = 0; t < s; t++)
            if (devices[t] == devices[s])
                return pl_json_fail(r, "device \"%s\" holds two shards (%d and %d): each "
                                    "shard of a split op needs a device of its own",
                                    json_string_value(item), t, s);
        pl_json_pop(r, at);
    }
    return true;
}

/* "split": the devices that share the op, every replica's; or one list per replica. */
static bool read_split(pl_json_reader *r, const json_t *list, const pl_cluster *cluster,
                       pl_plan *plan, int o)
{
    size_t back = pl_json_push_key(r, "split");
    const json_t *first = json_array_get(list, 0);
    bool per_replica = json_is_array(first);
    size_t n = json_array_size(list);
    if (per_replica && n != (size_t)plan->replicas)
        return pl_json_fail(r, "%zu lists of devices for %d replica%s: one per replica", n,
                            plan->replicas, plan->replicas == 1 ? "" : "s");
    int k = (int)(per_replica ? json_array_size(first) : n);
    if (k < 1 || k > PL_MAX_SPLIT)
        return pl_json_fail(r, "%d devices: an op is split over 1 to %d", k, PL_MAX_SPLIT);
    int devices[PL_MAX_REPLICAS * PL_MAX_SPLIT];
    for (int rep = 0; rep < plan->replicas; rep++) {
        size_t at = per_replica ? pl_json_push_index(r, (size_t)rep) : 0;
        const json_t *shards = per_replica ? json_array_get(list, (size_t)rep) : list;
        if (!read_shards(r, shards, cluster, k, devices + rep * k))
            return false;
        if (per_replica)
            pl_json_pop(r, at);
    }
    if (pl_plan_split(plan, o, k, devices, r->err) != PL_OK)
        return false;
    pl_json_pop(r, back);
    return true;
}

static bool read_placement(pl_json_reader *r, const json_t *entry, const pl_cluster *cluster,
                           const pl_strmap *ops, pl_plan *plan, bool *placed)
{
    static const char *const fields[] = {"op",    "device",    "devices", "split",
                                         "stage", "recompute", NULL};
    const char *op_name;
    int64_t stage = 0;
    json_t *split, *recompute;
    if (!pl_json_expect_object(r, entry, fields) ||
        !pl_json_string(r, entry, "op", true, &op_name) ||
        !pl_json_integer(r, entry, "stage", false, 0, 1 << 20, &stage) ||
        !pl_json_member(r, entry, "split", JSON_ARRAY, false, &split) ||
        !pl_json_member(r, entry, "recompute", JSON_TRUE, false, &recompute))
        return false;
    int o = pl_strmap_get(ops, op_name);
    if (o < 0) {
        pl_json_push_key(r, "op");
        return pl_json_fail(r, "the model has no op \"%s\"", op_name);
    }
    if (placed[o]) {
        pl_json_push_key(r, "op");
        return pl_json_fail(r, "op \"%s\" is placed twice", op_name);
    }
    if (split && (json_object_get(entry, "device") || json_object_get(entry, "devices")))
        return pl_json_fail(r, "give either \"split\" (the devices that share the op) or "
                            "\"device\" or \"devices\"");
    if (split ? !read_split(r, split, cluster, plan, o)
              : !read_devices(r, entry, cluster, plan, o))
        return false;
    plan->recompute[o] = json_is_true(recompute);
    placed[o] = true;
    plan->stage[o] = (int)stage;
    if (stage + 1 > plan->n_stages)
        plan->n_stages = (int)stage + 1;
    return true;
}

static bool read_provenance(pl_json_reader *r, const json_t *root, pl_provenance *p)
{
    static const char *const fields[] = {"algorithm", "seed", "predicted_seconds",
                                         "measured_seconds", "simulated", NULL};
    json_t *value;
    if (!pl_json_member(r, root, "provenance", JSON_OBJECT, false, &value))
        return false;
    if (!value)
        return true; /* a hand-written plan need not say where it came from */
    size_t back = pl_json_push_key(r, "provenance");
    const char *algorithm = "";
    int64_t seed = 0;
    if (!pl_json_expect_object(r, value, fields) ||
        !pl_json_string(r, value, "algorithm", false, &algorithm) ||
        !pl_json_integer(r, value, "seed", false, 0, INT64_MAX, &seed) ||
        !pl_json_number(r, value, "predicted_seconds", false, 0, 1e9, &p->predicted_seconds) ||
        !pl_json_number(r, value, "measured_seconds", false, 0, 1e9, &p->measured_seconds) ||
        !pl_json_string(r, value, "simulated", false, &(const char *){NULL}))
        return false;
    snprintf(p->algorithm, sizeof p->algorithm, "%s", algorithm);
    p->seed = (uint64_t)seed;
    pl_json_pop(r, back);
    return true;
}

/* The devices the plan was made for against the cluster's, as sets of names: the
 * placement names devices, so their order and the cluster's name do not matter. Both
 * ways, so that the error names the device that differs. */
static bool check_devices(pl_json_reader *r, const json_t *root, const char *made_for,
                          const pl_cluster *cluster)
{
    json_t *devices;
    if (!pl_json_member(r, root, "devices", JSON_ARRAY, false, &devices))
        return false;
    if (!devices)
        return true; /* a hand-written plan: each placement's device is checked */
    size_t back = pl_json_push_key(r, "devices"), n = json_array_size(devices);
    for (size_t i = 0; i < n; i++) {
        size_t at = pl_json_push_index(r, i);
        const json_t *name = json_array_get(devices, i);
        if (!json_is_string(name))
            return pl_json_fail(r, "expected a device name, got %s", pl_json_type_name(name));
        if (pl_cluster_find_device(cluster, json_string_value(name)) < 0)
            return pl_json_fail(r, "cluster \"%s\" has no device \"%s\" (the plan was made "
                                "for cluster \"%s\" of %zu devices)", cluster->name,
                                json_string_value(name), made_for, n);
        pl_json_pop(r, at);
    }
    for (int d = 0; d < cluster->n_devices; d++) {
        size_t i = 0;
        while (i < n && strcmp(json_string_value(json_array_get(devices, i)),
                               cluster->devices[d].name) != 0)
            i++;
        if (i == n)
            return pl_json_fail(r, "the plan was made for cluster \"%s\" of %zu devices, "
                                "without device \"%s\" of cluster \"%s\" (%d devices)",
                                made_for, n, cluster->devices[d].name, cluster->name,
                                cluster->n_devices);
    }
    if (n != (size_t)cluster->n_devices) /* names repeated */
        return pl_json_fail(r, "%zu devices listed, cluster \"%s\" has %d", n,
                            cluster->name, cluster->n_devices);
    pl_json_pop(r, back);
    return true;
}

/* "model" and "model_hash", for the caller to compare (plan.h: file_model). */
static bool read_model(pl_json_reader *r, const json_t *root, pl_plan *plan)
{
    const char *model = "", *hash = NULL;
    if (!pl_json_string(r, root, "model", false, &model) ||
        !pl_json_string(r, root, "model_hash", false, &hash))
        return false;
    snprintf(plan->file_model, sizeof plan->file_model, "%s", model);
    if (!hash)
        return true;
    char *end;
    size_t len = strlen(hash);
    plan->file_model_hash = strtoull(hash, &end, 16);
    if (len == 0 || len > 16 || *end != '\0' || strspn(hash, "0123456789abcdefABCDEF") != len) {
        pl_json_push_key(r, "model_hash");
        return pl_json_fail(r, "expected 16 hexadecimal digits, got \"%s\"", hash);
    }
    return true;
}

/* An optional field of two values, `first` by default; *is_other: whether it is `other`. */
static bool read_either(pl_json_reader *r, const json_t *root, const char *key,
                        const char *first, const char *other, bool *is_other)
{
    const char *value = first;
    if (!pl_json_string(r, root, key, false, &value))
        return false;
    if (strcmp(value, first) != 0 && strcmp(value, other) != 0) {
        pl_json_push_key(r, key);
        return pl_json_fail(r, "unknown %s \"%s\" (known: %s, %s)", key, value, first, other);
    }
    *is_other = strcmp(value, other) == 0;
    return true;
}

static bool read_plan(pl_json_reader *r, const json_t *root, const pl_graph *graph,
                      const pl_cluster *cluster, pl_plan *plan)
{
    static const char *const fields[] = {"format", "version", "model", "model_hash",
                                         "cluster", "devices", "replicas", "micro_batches",
                                         "schedule", "weight_gradients", "optimizer_state",
                                         "placement", "provenance", "partitions", NULL};
    static const char *const since_2[] = {"replicas", "optimizer_state"};
    static const char *const since_3[] = {"split", "recompute"};
    const char *cluster_name;
    bool one_f_one_b, deferred, sharded;
    int64_t micro_batches = 1, replicas = 1, version;
    json_t *placement;
    if (!pl_json_check_header_versions(r, root, "plan", "placer-plan", 1,
                                       PL_PLAN_FORMAT_VERSION, &version))
        return false;
    for (size_t i = 0; version < 2 && i < sizeof since_2 / sizeof *since_2; i++)
        if (json_object_get(root, since_2[i])) {
            pl_json_push_key(r, since_2[i]);
            return pl_json_fail(r, "%s came with format version 2", since_2[i]);
        }
    json_t *entries = json_object_get(root, "placement");
    for (size_t i = 0; version < 3 && i < json_array_size(entries); i++)
        for (size_t k = 0; k < sizeof since_3 / sizeof *since_3; k++)
            if (json_object_get(json_array_get(entries, i), since_3[k])) {
                pl_json_push_key(r, "placement");
                pl_json_push_index(r, i);
                pl_json_push_key(r, since_3[k]);
                return pl_json_fail(r, "%s came with format version 3", since_3[k]);
            }
    if (!pl_json_expect_object(r, root, fields) ||
        !pl_json_string(r, root, "cluster", true, &cluster_name) ||
        !pl_json_integer(r, root, "replicas", false, 1, PL_MAX_REPLICAS, &replicas) ||
        !pl_json_integer(r, root, "micro_batches", false, 1, 1 << 20, &micro_batches) ||
        !read_either(r, root, "schedule", "gpipe", "1f1b", &one_f_one_b) ||
        !read_either(r, root, "weight_gradients", "with-backward", "deferred", &deferred) ||
        !read_either(r, root, "optimizer_state", "replicated", "sharded", &sharded) ||
        !pl_json_member(r, root, "placement", JSON_ARRAY, true, &placement) ||
        !read_provenance(r, root, &plan->provenance) || !read_model(r, root, plan) ||
        !check_devices(r, root, cluster_name, cluster))
        return false;
    plan->schedule = one_f_one_b ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE;
    plan->defer_weight_gradients = deferred;
    plan->shard_optimizer_state = sharded;
    plan->micro_batches = (int)micro_batches;
    plan->n_stages = 0;
    if (pl_plan_set_replicas(plan, (int)replicas, r->err) != PL_OK)
        return false;

    pl_strmap ops = {0};
    bool *placed = calloc((size_t)(plan->n_ops > 0 ? plan->n_ops : 1), sizeof *placed);
    bool ok = placed != NULL;
    for (int o = 0; ok && o < graph->n_forward_ops; o++)
        ok = pl_strmap_put(&ops, graph->ops[o].name, o, NULL);
    if (!ok)
        pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory");
    size_t back = pl_json_push_key(r, "placement");
    for (size_t i = 0; ok && i < json_array_size(placement); i++) {
        size_t at = pl_json_push_index(r, i);
        ok = read_placement(r, json_array_get(placement, i), cluster, &ops, plan, placed);
        pl_json_pop(r, at);
    }
    for (int o = 0; ok && o < plan->n_ops; o++)
        if (!placed[o])
            ok = pl_json_fail(r, "op \"%s\" is not placed (every op of the model is)",
                              graph->ops[o].name);
    pl_json_pop(r, back);
    pl_strmap_release(&ops);
    free(placed);
    return ok;
}

pl_plan *pl_plan_load_file(const char *path, const pl_graph *graph, const pl_cluster *cluster,
                           pl_error *err)
{
    pl_error_init(err, path);
    json_t *root = pl_json_parse_file(path, PLAN_MAX_BYTES, err, NULL);
    if (!root)
        return NULL;
    pl_json_reader r;
    pl_json_reader_init(&r, err);
    pl_plan *plan = pl_plan_new(graph, err);
    bool ok = plan && read_plan(&r, root, graph, cluster, plan) &&
              pl_plan_check(plan, graph, cluster, err) == PL_OK;
    json_decref(root);
    if (!ok) {
        pl_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* Each device's ops, receives and sends; a replica's, tagged with it, when there are
 * several. */
static bool partitions_json(json_t *list, int replica, const pl_partitions *p,
                            const pl_graph *g, const pl_cluster *c)
{
    for (int d = 0; list && d < p->n_devices; d++) {
        if (replica >= 0 && p->first_op[d + 1] == p->first_op[d])
            continue;
        json_t *ops = json_array(), *receives = json_array(), *sends = json_array();
        for (int k = p->first_op[d]; k < p->first_op[d + 1]; k++)
            json_array_append_new(ops, json_string(g->ops[p->ops[k]].name));
        for (int k = 0; k < p->n_transfers; k++) {
            const pl_transfer *t = &p->transfers[k];
            if (t->to == d)
                json_array_append_new(receives, json_pack("{s:s, s:s}", "tensor",
                                                          g->tensors[t->tensor].name, "from",
                                                          c->devices[t->from].name));
            if (t->from == d)
                json_array_append_new(sends, json_pack("{s:s, s:s}", "tensor",
                                                       g->tensors[t->tensor].name, "to",
                                                       c->devices[t->to].name));
        }
        json_t *entry = json_pack("{s:s, s:o, s:o, s:o}", "device", c->devices[d].name, "ops",
                                  ops, "receives", receives, "sends", sends);
        if (entry && replica >= 0)
            json_object_set_new(entry, "replica", json_integer(replica));
        if (json_array_append_new(list, entry) != 0)
            return false;
    }
    return true;
}

/* A split op's devices: one list when every replica's are the same, else one per replica. */
static json_t *split_json(const pl_plan *plan, int o, const pl_cluster *cluster)
{
    bool same = true;
    for (int r = 1; r < plan->replicas; r++)
        for (int s = 0; s < plan->split[o]; s++)
            same = same && pl_plan_shard_device(plan, r, o, s) ==
                               pl_plan_shard_device(plan, 0, o, s);
    json_t *lists = json_array();
    for (int r = 0; r < (same ? 1 : plan->replicas); r++) {
        json_t *devices = json_array();
        for (int s = 0; s < plan->split[o]; s++)
            json_array_append_new(devices, json_string(
                cluster->devices[pl_plan_shard_device(plan, r, o, s)].name));
        json_array_append_new(lists, devices);
    }
    if (!same)
        return lists;
    json_t *one = json_incref(json_array_get(lists, 0));
    json_decref(lists);
    return one;
}

/* "device" when every replica's is the same, else "devices"; "split" for a split op. */
static json_t *placement_json(const pl_plan *plan, const pl_graph *graph,
                              const pl_cluster *cluster)
{
    json_t *placement = json_array();
    for (int o = 0; placement && o < plan->n_ops; o++) {
        bool same = true;
        for (int k = 1; k < plan->replicas; k++)
            same = same && pl_plan_replica(plan, k)[o] == plan->device[o];
        json_t *entry = json_pack("{s:s}", "op", graph->ops[o].name);
        if (plan->split[o] > 1) {
            json_object_set_new(entry, "split", split_json(plan, o, cluster));
        } else if (same) {
            json_object_set_new(entry, "device",
                                json_string(cluster->devices[plan->device[o]].name));
        } else {
            json_t *devices = json_array();
            for (int k = 0; k < plan->replicas; k++)
                json_array_append_new(devices, json_string(
                    cluster->devices[pl_plan_replica(plan, k)[o]].name));
            json_object_set_new(entry, "devices", devices);
        }
        json_object_set_new(entry, "stage", json_integer(plan->stage[o]));
        if (plan->recompute[o])
            json_object_set_new(entry, "recompute", json_true());
        json_array_append_new(placement, entry);
    }
    return placement;
}

/* Every replica's partitions of the graph the plan runs: the training graph, or for a
 * plan that splits ops, the rewritten one (split_graph.h), its shards and collectives. */
static pl_status all_partitions_json(const pl_plan *plan, const pl_graph *graph,
                                     const pl_cluster *cluster, json_t **out, pl_error *err)
{
    pl_split_graph *split = NULL;
    pl_plan *restated = NULL;
    pl_status status = PL_OK;
    if (pl_plan_rewrites_graph(plan) &&
        (status = pl_plan_split_graph(plan, graph, &split, &restated, err)) != PL_OK)
        return status;
    const pl_plan *runs = split ? restated : plan;
    const pl_graph *g = split ? split->graph : graph;
    json_t *partitions = json_array();
    for (int k = 0; status == PL_OK && k < plan->replicas; k++) {
        pl_partitions *parts = pl_partitions_of_replica(runs, k, g, cluster->n_devices, err);
        if (!parts)
            status = err ? err->status : PL_ENOMEM;
        else if (!partitions_json(partitions, plan->replicas > 1 ? k : -1, parts, g, cluster))
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory building the plan");
        pl_partitions_free(parts);
    }
    pl_plan_free(restated);
    pl_split_graph_free(split);
    if (status != PL_OK)
        json_decref(partitions);
    *out = status == PL_OK ? partitions : NULL;
    return status;
}

pl_status pl_plan_write_file(const char *path, const pl_plan *plan, const pl_graph *graph,
                             const pl_cluster *cluster, pl_error *err)
{
    json_t *partitions;
    pl_status status = all_partitions_json(plan, graph, cluster, &partitions, err);
    if (status != PL_OK)
        return status;
    char hash[17];
    snprintf(hash, sizeof hash, "%016" PRIx64, plan->model_hash);
    json_t *placement = placement_json(plan, graph, cluster);
    json_t *devices = json_array(); /* what a reader checks the cluster by */
    for (int d = 0; devices && d < cluster->n_devices; d++)
        json_array_append_new(devices, json_string(cluster->devices[d].name));
    const pl_provenance *p = &plan->provenance;
    json_t *root = json_pack(
        "{s:s, s:i, s:s, s:s, s:s, s:o, s:i, s:i, s:s, s:s, s:s, s:o, s:{s:s, s:I, s:f, s:f}, "
        "s:o}",
        "format", "placer-plan", "version", PL_PLAN_FORMAT_VERSION, "model", graph->name,
        "model_hash", hash, "cluster", cluster->name, "devices", devices, "replicas",
        plan->replicas, "micro_batches", plan->micro_batches, "schedule",
        plan->schedule == PL_SCHEDULE_1F1B ? "1f1b" : "gpipe", "weight_gradients",
        plan->defer_weight_gradients ? "deferred" : "with-backward", "optimizer_state",
        plan->shard_optimizer_state ? "sharded" : "replicated", "placement", placement,
        "provenance", "algorithm", p->algorithm, "seed", (json_int_t)p->seed,
        "predicted_seconds", p->predicted_seconds, "measured_seconds", p->measured_seconds,
        "partitions", partitions);
    if (root && cluster->simulated) { /* what its predicted step rests on */
        char simulated[PL_MAX_NAME + 256];
        snprintf(simulated, sizeof simulated, "this machine cannot run cluster \"%s\": the "
                 "predicted step is the simulator's, from the roofline of its datasheet "
                 "figures (error unknown: not calibrated against this hardware) unless a "
                 "profile measured there gave an op's time", cluster->name);
        json_object_set_new(json_object_get(root, "provenance"), "simulated",
                            json_string(simulated));
    }
    if (!root)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory building the plan");
    status = pl_json_write_file(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER, err);
    json_decref(root);
    return status;
}
