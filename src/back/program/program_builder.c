/* The program compiler's building blocks (program_impl.h), which its other files build
 * on: tasks added and looked up, the resource a copy runs on, edge lists. */
#include <stdlib.h>

#include "graph_build.h"
#include "grow.h"
#include "program_impl.h"

/* ---- tasks ------------------------------------------------------------------------------- */

int pl_update_task(const pl_builder *b, int o, int device)
{
    int t = pl_graph_updated_param(b->g, o);
    if (t < 0)
        return b->position[b->op_task[o]];
    for (int i = b->first_place[t]; i < b->first_place[t + 1]; i++)
        if (b->place_copy[i] >= 0 && b->place_device[i] == device)
            return b->position[b->op_task[o] + i - b->first_place[t]];
    return -1;
}

bool pl_add_task(pl_builder *b, pl_task_kind kind, int index, int k, int resource,
                 task_key key)
{
    int n = b->p->n_tasks + 1, cap = b->task_cap, keys = cap, positions = cap, origins = cap;
    if (n > cap && !(pl_grow(&b->p->tasks, &cap, n, sizeof *b->p->tasks, 1024) &&
                     pl_grow(&b->keys, &keys, n, sizeof *b->keys, 1024) &&
                     pl_grow(&b->position, &positions, n, sizeof *b->position, 1024) &&
                     pl_grow(&b->origin, &origins, n, sizeof *b->origin, 1024)))
        return false;
    b->task_cap = cap;
    b->position[b->p->n_tasks] = b->p->n_tasks;
    pl_task *task = &b->p->tasks[b->p->n_tasks];
    *task = (pl_task){.kind = kind, .op = kind == PL_TASK_OP ? index : -1,
                      .transfer = kind != PL_TASK_OP ? index : -1, .micro_batch = k,
                      .resource = resource, .shard = -1};
    b->keys[b->p->n_tasks++] = key;
    return true;
}

/* The link from `from` to `to`, or the port they share with other destinations: one
 * resource, created at its first use with every pair it carries. */
static int link_resource(pl_builder *b, int from, int to)
{
    int n = b->p->n_devices, *row = &b->link_index[from * n];
    if (row[to] < 0) {
        pl_port port = pl_cluster_port(b->c, from, to);
        for (int e = 0; e < n; e++)
            if (e == to || (port != PL_PORT_NONE && pl_cluster_port(b->c, from, e) == port))
                row[e] = b->p->n_links;
        b->p->links[b->p->n_links++] = (pl_link_use){from, to, port};
    }
    return n + row[to];
}

/* A copy over a native link is a memcpy, which a core does: it runs on its source
 * device's thread, right after the task producing what it carries (hot in that core's
 * cache). A thread of its own would only compete with the devices for the cores and add
 * a wake-up to every transfer. A declared (paced) link or port has its own thread; a copy
 * within a device, the device's. */
int pl_copy_resource(pl_builder *b, int from, int to)
{
    if (from == to) /* an all-reduce's packing */
        return from;
    const pl_link *link = pl_cluster_link(b->c, from, to);
    if (link->bytes_per_second <= 0 && link->latency_seconds <= 0)
        return from;
    return link_resource(b, from, to);
}

/* ---- edges ------------------------------------------------------------------------------- */

bool pl_edges_add(pl_edges *e, int from, int to)
{
    int from_cap = e->cap, to_cap = e->cap;
    bool room = pl_grow(&e->from, &from_cap, e->n + 1, sizeof *e->from, 256) &&
                pl_grow(&e->to, &to_cap, e->n + 1, sizeof *e->to, 256);
    e->cap = from_cap < to_cap ? from_cap : to_cap; /* what both arrays hold */
    if (!room)
        return false;
    e->from[e->n] = from;
    e->to[e->n++] = to;
    return true;
}

bool pl_edges_csr(const pl_edges *e, int n_tasks, int **first, int **succ)
{
    *first = calloc((size_t)n_tasks + 2, sizeof **first);
    *succ = malloc((size_t)e->n * sizeof **succ + 1);
    if (!*first || !*succ) {
        free(*first);
        free(*succ);
        *first = *succ = NULL;
        return false;
    }
    for (int i = 0; i < e->n; i++)
        (*first)[e->from[i] + 2]++;
    for (int i = 0; i < n_tasks; i++)
        (*first)[i + 2] += (*first)[i + 1];
    for (int i = 0; i < e->n; i++) /* stable: successors in the order they were added */
        (*succ)[(*first)[e->from[i] + 1]++] = e->to[i];
    return true;
}

void pl_edges_free(pl_edges *e)
{
    free(e->from);
    free(e->to);
    *e = (pl_edges){0};
}
