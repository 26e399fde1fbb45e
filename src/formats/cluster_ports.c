/* Ports (cluster.h, pl_port): which of its ports a device's copies to each other device
 * leave by, read from a cluster file's "ports" (on by default for hardware, whose
 * datasheet figures are per device). */
#include <stdlib.h>

#include "cluster_impl.h"

const char *const pl_port_names[] = {"link", "node port", "network port"};

pl_port pl_cluster_port(const pl_cluster *cluster, int from, int to)
{
    return cluster->ports ? (pl_port)cluster->ports[from * cluster->n_devices + to] : PL_PORT_NONE;
}

/* Node names are one string per node (pl_cluster_read_nodes). */
static bool same_node(const pl_cluster *c, int a, int b)
{
    return c->devices[a].node && c->devices[a].node == c->devices[b].node;
}

bool pl_cluster_read_ports(pl_json_reader *r, const json_t *root, pl_cluster *c, const bool *listed)
{
    json_t *value;
    if (!pl_json_member(r, root, "ports", JSON_TRUE, false, &value))
        return false;
    if (!(value ? json_is_true(value) : c->simulated))
        return true;
    if (c->n_ranks > 1) {
        pl_json_push_key(r, "ports");
        return pl_json_fail(r, "ports and ranks do not mix: a copy between ranks is an MPI "
                               "message, which no port carries");
    }
    int n = c->n_devices;
    c->ports = pl_arena_alloc(&c->arena, (size_t)n * (size_t)n);
    if (!c->ports)
        return false;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            c->ports[a * n + b] = a == b || listed[a * n + b] ? PL_PORT_NONE
                                  : same_node(c, a, b)        ? PL_PORT_NODE
                                                              : PL_PORT_NETWORK;
    return true;
}
