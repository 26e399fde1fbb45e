/* Cluster files and the local machine. */
#include "cluster.h"
#include "cluster_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"

#define CLUSTER_MAX_BYTES ((size_t)16 << 20)

static pl_cluster *new_cluster(int n_devices, pl_error *err)
{
    pl_cluster *c = calloc(1, sizeof *c);
    if (c) {
        c->n_devices = n_devices;
        c->n_ranks = 1;
        c->devices = pl_arena_alloc(&c->arena, (size_t)n_devices * sizeof *c->devices);
        c->links = pl_arena_alloc(&c->arena, (size_t)n_devices * (size_t)n_devices *
                                                 sizeof *c->links);
        if (c->devices && c->links)
            return c;
        pl_cluster_free(c);
    }
    pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    return NULL;
}

void pl_cluster_free(pl_cluster *cluster)
{
    if (!cluster)
        return;
    pl_arena_release(&cluster->arena);
    free(cluster);
}

const pl_link *pl_cluster_link(const pl_cluster *cluster, int from, int to)
{
    return &cluster->links[from * cluster->n_devices + to];
}

pl_cluster *pl_cluster_subset(const pl_cluster *cluster, const int *devices, int n,
                              pl_error *err)
{
    pl_cluster *c = new_cluster(n, err);
    if (!c)
        return NULL;
    c->name = cluster->name;
    c->description = cluster->description;
    for (int i = 0; i < n; i++) {
        c->devices[i] = cluster->devices[devices[i]];
        for (int j = 0; j < n; j++)
            c->links[i * n + j] = *pl_cluster_link(cluster, devices[i], devices[j]);
        c->paced = c->paced || c->devices[i].flops_per_second > 0;
        c->simulated = c->simulated || c->devices[i].hardware;
    }
    for (int i = 0; i < n * n; i++)
        c->paced = c->paced || c->links[i].bytes_per_second > 0;
    c->paced = c->paced && !c->simulated; /* hardware is simulated, never paced */
    if (cluster->ports && !(c->ports = pl_arena_alloc(&c->arena, (size_t)n * (size_t)n))) {
        pl_cluster_free(c);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (int i = 0; c->ports && i < n * n; i++)
        c->ports[i] = (unsigned char)pl_cluster_port(cluster, devices[i / n], devices[i % n]);
    c->n_ranks = cluster->n_ranks;
    c->n_hardware = cluster->n_hardware;
    c->hardware = cluster->hardware;
    return c; /* names, cores and hardware point into `cluster`, which must outlive it */
}

static bool faster(const pl_cluster *c, int a, int b, double slowest)
{
    double bw = pl_cluster_link(c, a, b)->bytes_per_second;
    return bw <= 0 || bw > slowest;
}

int pl_cluster_groups(const pl_cluster *c, const int *devices, int n, int *group)
{
    double slowest = -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double bw = pl_cluster_link(c, devices[i], devices[j])->bytes_per_second;
            if (i != j && bw > 0 && (slowest < 0 || bw < slowest))
                slowest = bw;
        }
    for (int i = 0; i < n; i++)
        group[i] = -1;
    int groups = 0;
    for (int i = 0; i < n; i++) {
        if (group[i] >= 0)
            continue;
        group[i] = groups;
        for (bool grew = true; grew;) { /* the closure of faster links */
            grew = false;
            for (int j = 0; j < n; j++)
                for (int k = 0; k < n && group[j] < 0; k++)
                    if (group[k] == groups && faster(c, devices[j], devices[k], slowest)) {
                        group[j] = groups;
                        grew = true;
                    }
        }
        groups++;
    }
    bool all_equal = groups == n; /* no link faster than another: one group */
    for (int i = 0; all_equal && i < n; i++)
        group[i] = 0;
    return all_equal && n > 0 ? 1 : groups;
}

int pl_cluster_find_device(const pl_cluster *cluster, const char *name)
{
    return pl_cluster_find_device_in(cluster, cluster->n_devices, name);
}

int pl_cluster_find_device_in(const pl_cluster *cluster, int n, const char *name)
{
    for (int d = 0; d < n; d++)
        if (strcmp(cluster->devices[d].name, name) == 0)
            return d;
    return -1;
}

const char *pl_cluster_copy_string(pl_cluster *c, const char *text)
{
    return pl_arena_strndup(&c->arena, text, strlen(text));
}

/* ---- reading a file ------------------------------------------------------------------ */

bool pl_cluster_read_link(pl_json_reader *r, const json_t *value, const char *const *fields,
                      pl_link *link)
{
    double bandwidth = 0, latency = 0;
    if (!pl_json_expect_object(r, value, fields) ||
        !pl_json_number(r, value, "bytes_per_second", false, 1, 1e15, &bandwidth) ||
        !pl_json_number(r, value, "latency_seconds", false, 0, 10, &latency))
        return false;
    *link = (pl_link){bandwidth, latency};
    return true;
}

static bool read_cores(pl_json_reader *r, const json_t *device, pl_cluster *c, pl_device *d)
{
    json_t *cores;
    if (!pl_json_member(r, device, "cores", JSON_ARRAY, false, &cores))
        return false;
    if (!cores)
        return true; /* not pinned */
    size_t back = pl_json_push_key(r, "cores"), n = json_array_size(cores);
    if (n == 0 || n > 1024)
        return pl_json_fail(r, "give 1 to 1024 cores, or leave \"cores\" out");
    int *list = pl_arena_alloc(&c->arena, n * sizeof *list);
    if (!list)
        return pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory"), false;
    for (size_t i = 0; i < n; i++) {
        json_t *core = json_array_get(cores, i);
        size_t at = pl_json_push_index(r, i);
        if (!json_is_integer(core))
            return pl_json_fail(r, "a core is a number from 0 to 4095, found %s",
                                pl_json_type_name(core));
        /* an integer out of range is shown as such: its type is not what is wrong */
        if (json_integer_value(core) < 0 || json_integer_value(core) > 4095)
            return pl_json_fail(r, "core %" JSON_INTEGER_FORMAT " is out of range [0, 4095]",
                                json_integer_value(core));
        list[i] = (int)json_integer_value(core);
        for (size_t j = 0; j < i; j++)
            if (list[j] == list[i])
                return pl_json_fail(r, "core %d is listed twice", list[i]);
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    d->n_cores = (int)n;
    d->cores = list;
    return true;
}

static bool read_device(pl_json_reader *r, const json_t *value, pl_cluster *c, int index)
{
    static const char *const fields[] = {"name", "threads", "memory_bytes", "cores",
                                         "flops_per_second", "rank", "hardware", "node",
                                         NULL};
    pl_device *d = &c->devices[index];
    json_t *name;
    int64_t threads = 1, memory = 0, rank = -1;
    double flops = 0;
    if (!pl_json_expect_object(r, value, fields) ||
        !pl_json_member(r, value, "name", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(r, "name");
    if (!pl_json_check_name(r, name, "device"))
        return false;
    for (int other = 0; other < index; other++)
        if (strcmp(c->devices[other].name, json_string_value(name)) == 0)
            return pl_json_fail(r, "device \"%s\" is defined twice: also at /devices/%d",
                                json_string_value(name), other);
    pl_json_pop(r, back);
    if (!pl_json_integer(r, value, "threads", false, 1, PL_MAX_DEVICE_THREADS, &threads) ||
        !pl_json_integer(r, value, "memory_bytes", !json_object_get(value, "hardware"), 1,
                         INT64_MAX, &memory) ||
        !pl_json_number(r, value, "flops_per_second", false, 1, 1e18, &flops) ||
        !pl_json_integer(r, value, "rank", false, 0, PL_MAX_DEVICES - 1, &rank) ||
        !read_cores(r, value, c, d))
        return false;
    d->memory_bytes = memory;
    if (!pl_cluster_read_device_hardware(r, value, c, d))
        return false;
    d->rank = (int)rank; /* -1 until check_ranks */
    d->name = pl_cluster_copy_string(c, json_string_value(name));
    d->threads = (int)threads;
    d->flops_per_second = flops;
    c->paced |= flops > 0;
    return d->name != NULL || (pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory"), false);
}

/* Either every device names its rank or none does (one process); the ranks used are
 * 0 .. n_ranks - 1, each holding a device. */
static bool check_ranks(pl_json_reader *r, pl_cluster *c)
{
    int n_ranks = 0, first_ranked = -1, first_unranked = -1;
    for (int d = 0; d < c->n_devices; d++) {
        int rank = c->devices[d].rank;
        if (rank < 0 && first_unranked < 0)
            first_unranked = d;
        if (rank >= 0 && first_ranked < 0)
            first_ranked = d;
        if (rank + 1 > n_ranks)
            n_ranks = rank + 1;
    }
    if (first_ranked < 0) {
        for (int d = 0; d < c->n_devices; d++)
            c->devices[d].rank = 0;
        return true;
    }
    if (first_unranked >= 0) {
        size_t back = pl_json_push_key(r, "devices");
        pl_json_push_index(r, (size_t)first_unranked);
        pl_json_fail(r, "missing field \"rank\": device \"%s\" names one, so every device "
                     "must", c->devices[first_ranked].name);
        pl_json_pop(r, back);
        return false;
    }
    for (int rank = 0; rank < n_ranks; rank++) {
        bool held = false;
        for (int d = 0; d < c->n_devices && !held; d++)
            held = c->devices[d].rank == rank;
        if (!held) {
            size_t back = pl_json_push_key(r, "devices");
            pl_json_fail(r, "rank %d holds no device: ranks are numbered from 0 without "
                         "gaps (the highest is %d)", rank, n_ranks - 1);
            pl_json_pop(r, back);
            return false;
        }
    }
    c->n_ranks = n_ranks;
    return true;
}

/* One pair's declared link, both directions. */
static bool read_pair(pl_json_reader *r, const json_t *value, pl_cluster *c, bool *seen)
{
    static const char *const fields[] = {"devices", "bytes_per_second", "latency_seconds",
                                         NULL};
    json_t *pair;
    pl_link link;
    if (!pl_cluster_read_link(r, value, fields, &link) ||
        !pl_json_member(r, value, "devices", JSON_ARRAY, true, &pair))
        return false;
    size_t back = pl_json_push_key(r, "devices");
    if (json_array_size(pair) != 2)
        return pl_json_fail(r, "a link joins 2 devices, not %zu", json_array_size(pair));
    int ends[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *end = json_array_get(pair, i);
        size_t at = pl_json_push_index(r, i);
        if (!json_is_string(end))
            return pl_json_fail(r, "expected a device name, found %s", pl_json_type_name(end));
        if ((ends[i] = pl_cluster_find_device(c, json_string_value(end))) < 0)
            return pl_json_fail(r, "device \"%s\" is not defined", json_string_value(end));
        pl_json_pop(r, at);
    }
    if (ends[0] == ends[1])
        return pl_json_fail(r, "a link joins two different devices");
    int n = c->n_devices;
    if (seen[ends[0] * n + ends[1]])
        return pl_json_fail(r, "the link between \"%s\" and \"%s\" is given twice",
                            c->devices[ends[0]].name, c->devices[ends[1]].name);
    pl_json_pop(r, back);
    seen[ends[0] * n + ends[1]] = seen[ends[1] * n + ends[0]] = true;
    c->links[ends[0] * n + ends[1]] = c->links[ends[1] * n + ends[0]] = link;
    return true;
}

/* Version 2's fields: in a version 1 file they are refused by name. */
static bool check_version(pl_json_reader *r, const json_t *root, int64_t version)
{
    static const char *const added[] = {"hardware", "nodes", "ports"};
    for (size_t i = 0; version < 2 && i < sizeof added / sizeof *added; i++)
        if (json_object_get(root, added[i])) {
            pl_json_push_key(r, added[i]);
            return pl_json_fail(r, "\"%s\" needs format version 2 (this file says 1)",
                                added[i]);
        }
    return true;
}

/* Hardware placer cannot run is planned without calibrating this machine: a device it
 * can run would have no costs beside it. Every device is hardware, or none. */
static bool check_all_hardware(pl_json_reader *r, const pl_cluster *c)
{
    int hardware = -1, runnable = -1;
    for (int d = 0; d < c->n_devices; d++)
        *(c->devices[d].hardware ? &hardware : &runnable) = d;
    if (hardware < 0 || runnable < 0)
        return true;
    size_t back = pl_json_push_key(r, "devices");
    pl_json_push_index(r, (size_t)runnable);
    pl_json_fail(r, "device \"%s\" names no \"hardware\", but \"%s\" is hardware placer "
                 "cannot run: a cluster is all hardware or none", c->devices[runnable].name,
                 c->devices[hardware].name);
    pl_json_pop(r, back);
    return false;
}

/* A default link is needed when some two devices share no node. */
static bool needs_default_link(const pl_cluster *c)
{
    for (int d = 1; d < c->n_devices; d++)
        if (!c->devices[d].node || !c->devices[0].node ||
            strcmp(c->devices[d].node, c->devices[0].node) != 0)
            return true;
    return false;
}

static pl_cluster *read_cluster(pl_json_reader *r, const json_t *root)
{
    static const char *const fields[] = {"format", "version", "name", "description",
                                         "devices", "default_link", "links", "hardware",
                                         "nodes", "ports", NULL};
    static const char *const link_fields[] = {"bytes_per_second", "latency_seconds", NULL};
    const char *name, *description = "";
    json_t *devices, *default_link, *links, *hardware, *nodes;
    int64_t version;
    size_t from_nodes;
    if (!pl_json_check_header_versions(r, root, "cluster", "placer-cluster", 1,
                                       PL_CLUSTER_FORMAT_VERSION, &version))
        return NULL;
    if (!pl_json_expect_object(r, root, fields) || !check_version(r, root, version) ||
        !pl_json_string(r, root, "name", true, &name) ||
        !pl_json_string(r, root, "description", false, &description) ||
        !pl_json_member(r, root, "hardware", JSON_ARRAY, false, &hardware) ||
        !pl_json_member(r, root, "nodes", JSON_ARRAY, false, &nodes) ||
        !pl_json_member(r, root, "devices", JSON_ARRAY, !nodes, &devices) ||
        !pl_json_member(r, root, "default_link", JSON_OBJECT, false, &default_link) ||
        !pl_json_member(r, root, "links", JSON_ARRAY, false, &links) ||
        !pl_cluster_count_node_devices(r, nodes, &from_nodes))
        return NULL;
    size_t listed = json_array_size(devices), n = listed + from_nodes;
    if (n == 0 || n > PL_MAX_DEVICES) {
        pl_json_push_key(r, devices ? "devices" : "nodes");
        return pl_json_fail(r, "a cluster has 1 to %d devices, not %zu", PL_MAX_DEVICES, n),
               NULL;
    }
    pl_cluster *c = new_cluster((int)n, r->err);
    bool *seen = c ? calloc(n * n, sizeof *seen) : NULL;
    bool ok = c && seen && (c->name = pl_cluster_copy_string(c, name)) &&
              (c->description = pl_cluster_copy_string(c, description)) &&
              pl_cluster_read_hardware(r, hardware, c);
    size_t back = pl_json_push_key(r, "devices");
    for (size_t i = 0; ok && i < listed; i++) {
        size_t at = pl_json_push_index(r, i);
        ok = read_device(r, json_array_get(devices, i), c, (int)i);
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    pl_link fallback = {0, 0};
    if (ok && default_link) {
        back = pl_json_push_key(r, "default_link");
        ok = pl_cluster_read_link(r, default_link, link_fields, &fallback);
        pl_json_pop(r, back);
    }
    for (size_t i = 0; ok && i < n * n; i++)
        c->links[i] = fallback;
    ok = ok && pl_cluster_read_nodes(r, nodes, c, (int)listed) && check_all_hardware(r, c) &&
         check_ranks(r, c);
    if (ok && !default_link && needs_default_link(c))
        ok = pl_json_fail(r, "missing field \"default_link\" (a cluster of several devices "
                          "not all in one node needs one)");
    back = pl_json_push_key(r, "links");
    for (size_t i = 0; ok && links && i < json_array_size(links); i++) {
        size_t at = pl_json_push_index(r, i);
        ok = read_pair(r, json_array_get(links, i), c, seen);
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    for (size_t i = 0; ok && i < n * n; i++)
        c->paced |= c->links[i].bytes_per_second > 0;
    for (size_t d = 0; ok && d < n; d++)
        c->simulated |= c->devices[d].hardware != NULL;
    c->paced = c->paced && !c->simulated; /* hardware is simulated, never paced */
    ok = ok && pl_cluster_read_ports(r, root, c, seen);
    free(seen);
    if (!ok) {
        if (c && (!r->err || r->err->status == PL_OK))
            pl_error_set(r->err, PL_ENOMEM, NULL, "out of memory");
        pl_cluster_free(c);
        return NULL;
    }
    return c;
}

/* Reads the cluster of a parsed document and lets the document go. */
static pl_cluster *from_root(json_t *root, pl_error *err)
{
    if (!root)
        return NULL;
    pl_json_reader r;
    pl_json_reader_init(&r, err);
    pl_cluster *c = read_cluster(&r, root);
    json_decref(root);
    return c;
}

pl_cluster *pl_cluster_load_buffer(const char *data, size_t size, const char *source,
                                   pl_error *err)
{
    pl_error_init(err, source);
    return from_root(pl_json_parse_buffer(data, size, err), err);
}

pl_cluster *pl_cluster_load_file(const char *path, pl_error *err)
{
    pl_error_init(err, path);
    return from_root(pl_json_parse_file(path, CLUSTER_MAX_BYTES, err, NULL), err);
}

/* A hardware device's figures: what its ops and memory cost (its kind's name too). */
static uint64_t hash_hardware(uint64_t hash, const pl_hardware *hw)
{
    double figures[3] = {hw->memory_bytes_per_second, hw->launch_seconds, (double)hw->math};
    hash = pl_hash_bytes(hash, hw->kind, strlen(hw->kind) + 1);
    hash = pl_hash_bytes(hash, hw->peak, sizeof hw->peak);
    hash = pl_hash_bytes(hash, figures, sizeof figures);
    return pl_hash_bytes(hash, hw->efficiency, sizeof hw->efficiency);
}

uint64_t pl_cluster_hash(const pl_cluster *c)
{
    uint64_t hash = pl_hash_bytes(PL_HASH_INIT, &c->n_devices, sizeof c->n_devices);
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *device = &c->devices[d];
        int64_t numbers[3] = {device->threads, device->memory_bytes, device->n_cores};
        hash = pl_hash_bytes(hash, device->name, strlen(device->name) + 1);
        hash = pl_hash_bytes(hash, numbers, sizeof numbers);
        hash = pl_hash_bytes(hash, &device->flops_per_second, sizeof(double));
        if (device->n_cores)
            hash = pl_hash_bytes(hash, device->cores, (size_t)device->n_cores * sizeof(int));
        if (device->hardware)
            hash = hash_hardware(hash, device->hardware);
    }
    for (int i = 0; i < c->n_devices * c->n_devices; i++) {
        double link[2] = {c->links[i].bytes_per_second, c->links[i].latency_seconds};
        hash = pl_hash_bytes(hash, link, sizeof link);
    }
    if (c->ports) /* a cluster without ports hashes as before they were */
        hash = pl_hash_bytes(hash, c->ports, (size_t)c->n_devices * (size_t)c->n_devices);
    return hash;
}

/* ---- the local machine ---------------------------------------------------------------- */

pl_cluster *pl_cluster_local(pl_error *err)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES),
         page = sysconf(_SC_PAGESIZE);
    if (cores < 1)
        cores = 1;
    if (cores > PL_MAX_DEVICES)
        cores = PL_MAX_DEVICES;
    int64_t memory = pages > 0 && page > 0 ? (int64_t)pages * page : INT64_C(1) << 30;
    pl_cluster *c = new_cluster((int)cores, err);
    if (!c)
        return NULL;
    c->name = pl_cluster_copy_string(c, "local");
    c->description = pl_cluster_copy_string(c, "this machine: one native device per online core");
    int *core_ids = pl_arena_alloc(&c->arena, (size_t)cores * sizeof *core_ids);
    for (int d = 0; d < cores; d++) {
        char name[32];
        snprintf(name, sizeof name, "cpu%d", d);
        if (core_ids)
            core_ids[d] = d;
        c->devices[d] = (pl_device){.name = pl_cluster_copy_string(c, name), .threads = 1,
                                    .memory_bytes = memory / cores, .n_cores = core_ids ? 1 : 0,
                                    .cores = core_ids ? &core_ids[d] : NULL};
        if (!c->devices[d].name) {
            pl_cluster_free(c);
            pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
            return NULL;
        }
    }
    return c;
}

/* Only a native device owning its cores polls: one sharing cores with others (paced
 * devices, several per core) would take their time. */
bool pl_device_polls(const pl_device *device)
{
    return device->n_cores > 0 && device->flops_per_second <= 0;
}

int pl_machine_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 1;
}
