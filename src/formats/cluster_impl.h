/* What the cluster reader's files share (cluster.c reads the file, cluster_hardware.c its
 * hardware kinds and nodes, cluster_ports.c its ports). Internal to src/formats. */
#ifndef PLACER_CLUSTER_IMPL_H
#define PLACER_CLUSTER_IMPL_H

#include <stdbool.h>

#include "cluster.h"
#include "json_reader.h"

/* A link's declared figures, an object of `fields` (both optional: native bandwidth, no
 * added latency). */
bool pl_cluster_read_link(pl_json_reader *r, const json_t *value, const char *const *fields,
                          pl_link *link);
const char *pl_cluster_copy_string(pl_cluster *c, const char *text);
/* pl_cluster_find_device among the first `n` devices (the ones read so far). */
int pl_cluster_find_device_in(const pl_cluster *cluster, int n, const char *name);

/* The devices the file's "nodes" make (each node's "devices" count), checked as counts
 * only; `nodes` may be NULL (none). */
bool pl_cluster_count_node_devices(pl_json_reader *r, const json_t *nodes, size_t *count);
/* The file's "hardware" kinds into c->hardware (NULL: none). */
bool pl_cluster_read_hardware(pl_json_reader *r, const json_t *kinds, pl_cluster *c);
/* A device's "hardware" and "node" (both optional): a hardware device takes its memory
 * from its kind unless it gives its own, and may not declare a throughput or cores. The
 * node is checked against the file's nodes by pl_cluster_read_nodes. */
bool pl_cluster_read_device_hardware(pl_json_reader *r, const json_t *device, pl_cluster *c,
                                     pl_device *d);
/* The file's "nodes": their devices made from index `first` on, named "NODE/0", ...;
 * every device's node checked; the links between two devices of one node set to the
 * node's own. Call with the links filled with the default link. */
bool pl_cluster_read_nodes(pl_json_reader *r, const json_t *nodes, pl_cluster *c, int first);
/* The file's "ports" (default: on for hardware) into c->ports, from the pairs `listed`
 * in "links" (n_devices x n_devices), which keep their own. Call once the devices, their
 * ranks and whether the cluster is simulated are known. */
bool pl_cluster_read_ports(pl_json_reader *r, const json_t *root, pl_cluster *c,
                           const bool *listed);

#endif
