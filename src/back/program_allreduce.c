/* The all-reduce of replicas' gradients (program.h): a ring over a parameter's copies.
 *
 * Copy i sends to copy i + 1 (mod n); each copy's gradient is cut into n chunks. In step j
 * of the reduce-scatter, copy i sends its chunk (i - j) mod n, and copy i + 1 adds it into
 * its own; after n - 1 steps copy i holds the whole sum of chunk (i + 1) mod n. In step j of
 * the all-gather, copy i sends chunk (i + 1 - j) mod n on, and copy i + 1 keeps it. Every
 * copy thus sends 2(n - 1)/n of the gradient, and every chunk's sum is made once and
 * copied, so all copies update with the same bits. */
#include <limits.h>
#include <stdlib.h>

#include "grow.h"
#include "program_impl.h"

static int copies_of(const pl_builder *b, int t)
{
    int n = 0;
    for (int i = b->first_place[t]; i < b->first_place[t + 1]; i++)
        n += b->place_copy[i] >= 0;
    return n;
}

static int ring_device(const pl_builder *b, const pl_ring *ring, int i)
{
    return b->place_device[ring->first_place + (i % ring->n + ring->n) % ring->n];
}

pl_status pl_plan_rings(pl_builder *b, pl_error *err)
{
    const pl_graph *g = b->g;
    int cap = 0;
    b->first_ring_transfer = b->p->n_transfers;
    for (int o = g->n_forward_ops; o < g->n_ops; o++) {
        int t = pl_graph_updated_param(g, o);
        if (g->ops[o].phase != PL_PHASE_UPDATE || t < 0)
            continue;
        int acc = g->ops[o].inputs[1], n = copies_of(b, acc);
        if (n < 2)
            continue;
        if (!pl_grow(&b->rings, &cap, b->n_rings + 1, sizeof *b->rings, 16))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_ring *ring = &b->rings[b->n_rings++];
        *ring = (pl_ring){.accumulator = acc, .update = o, .n = n,
                          .first_place = b->first_place[acc]};
        b->n_ring_tasks += 3 * n * (n - 1);
    }
    /* every copy of a ring a transfer of its own, for its link and its name */
    int n_transfers = b->p->n_transfers + 2 * b->n_ring_tasks / 3;
    pl_transfer *transfers = realloc(b->p->transfers,
                                     ((size_t)n_transfers + 1) * sizeof *transfers);
    if (!transfers)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    b->p->transfers = transfers;
    for (int q = 0; q < b->n_rings; q++) {
        const pl_ring *ring = &b->rings[q];
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < ring->n - 1; j++)
                for (int i = 0; i < ring->n; i++)
                    transfers[b->p->n_transfers++] =
                        (pl_transfer){ring->accumulator, ring_device(b, ring, i),
                                      ring_device(b, ring, i + 1)};
    }
    return PL_OK;
}

static int compare(task_key a, task_key b)
{
    if (a.block != b.block)
        return a.block < b.block ? -1 : 1;
    return a.op != b.op ? (a.op < b.op ? -1 : 1) : (a.sub > b.sub) - (a.sub < b.sub);
}

/* Calls visit(b, context, task, device) for every accumulation task of the ring's gradient
 * (creation index) with the device it accumulates on. */
static void each_accumulation(const pl_builder *b, const pl_ring *ring,
                              void (*visit)(const pl_builder *, void *, int, int),
                              void *context)
{
    int t = pl_graph_updated_param(b->g, ring->update);
    for (int o = b->g->n_forward_ops; o < b->g->n_ops; o++)
        if (b->g->ops[o].phase != PL_PHASE_UPDATE && pl_graph_updated_param(b->g, o) == t)
            for (int k = 0; k < b->slices; k++)
                visit(b, context, b->op_task[o] + k,
                      b->parts[pl_replica_of(b, k)]->op_device[o]);
}

static void latest_key(const pl_builder *b, void *context, int task, int device)
{
    (void)device;
    task_key *key = context;
    if (compare(b->keys[task], *key) > 0)
        *key = b->keys[task];
}

/* Creation indices of a ring's tasks: step j's copy from copy i and the reduce into copy
 * i + 1, then the all-gather's copies. */
static int scatter_copy(const pl_ring *r, int j, int i)
{
    return r->first_task + (j * r->n + (i + r->n) % r->n) * 2;
}

static int scatter_reduce(const pl_ring *r, int j, int i)
{
    return scatter_copy(r, j, i) + 1;
}

static int gather_copy(const pl_ring *r, int j, int i)
{
    return r->first_task + 2 * r->n * (r->n - 1) + j * r->n + (i + r->n) % r->n;
}

/* Its tasks start when the last accumulation before them in the schedule is done: the key
 * of that accumulation, behind it. */
void pl_create_ring_tasks(pl_builder *b)
{
    b->first_ring_task = b->p->n_tasks;
    int x = b->first_ring_transfer;
    for (int q = 0; q < b->n_rings; q++) {
        pl_ring *ring = &b->rings[q];
        task_key key = {INT_MIN, 0, 0};
        each_accumulation(b, ring, latest_key, &key);
        key.op = ring->update;
        ring->first_task = b->p->n_tasks;
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < ring->n - 1; j++)
                for (int i = 0; i < ring->n; i++) {
                    int from = ring_device(b, ring, i), to = ring_device(b, ring, i + 1);
                    key.sub = 1 + b->p->n_tasks - ring->first_task;
                    pl_add_task(b, PL_TASK_COPY, x++, -1, pl_copy_resource(b, from, to), key);
                    if (pass == 0) {
                        key.sub++;
                        pl_add_task(b, PL_TASK_REDUCE, -1, -1, to, key);
                    }
                }
    }
}

typedef struct ring_edges {
    const pl_ring *ring;
    pl_edges *edges;
    bool ok;
} ring_edges;

static bool edge(const pl_builder *b, pl_edges *edges, int from, int to)
{
    return pl_edges_add(edges, b->position[from], b->position[to]);
}

/* An accumulation into copy i comes before the ring's first tasks that read or write it. */
static void before_ring(const pl_builder *b, void *context, int task, int device)
{
    ring_edges *e = context;
    for (int i = 0; i < e->ring->n && e->ok; i++)
        if (ring_device(b, e->ring, i) == device)
            e->ok = edge(b, e->edges, task, scatter_copy(e->ring, 0, i)) &&
                    edge(b, e->edges, task, scatter_reduce(e->ring, 0, i - 1));
}

bool pl_ring_edges(const pl_builder *b, pl_edges *edges)
{
    for (int q = 0; q < b->n_rings; q++) {
        const pl_ring *r = &b->rings[q];
        ring_edges e = {r, edges, true};
        each_accumulation(b, r, before_ring, &e);
        int n = r->n;
        for (int i = 0; e.ok && i < n; i++) {
            for (int j = 0; e.ok && j < n - 1; j++) {
                e.ok = edge(b, edges, scatter_copy(r, j, i), scatter_reduce(r, j, i));
                if (j > 0)
                    e.ok = e.ok &&
                           edge(b, edges, scatter_reduce(r, j - 1, i - 1), scatter_copy(r, j, i)) &&
                           edge(b, edges, scatter_reduce(r, j - 1, i), scatter_reduce(r, j, i)) &&
                           edge(b, edges, scatter_reduce(r, j - 1, i), scatter_copy(r, j, i)) &&
                           edge(b, edges, gather_copy(r, j - 1, i - 1), gather_copy(r, j, i));
            }
            int update = pl_update_task(b, r->update, ring_device(b, r, i)); /* unsorted yet */
            e.ok = e.ok && edge(b, edges, scatter_reduce(r, n - 2, i - 1), gather_copy(r, 0, i)) &&
                   edge(b, edges, scatter_reduce(r, n - 2, i - 1), update);
            for (int j = 0; e.ok && j < n - 1; j++)
                e.ok = edge(b, edges, gather_copy(r, j, i - 1), update);
        }
        if (!e.ok)
            return false;
    }
    return true;
}

int pl_ring_buffer_count(const pl_builder *b)
{
    int count = 0;
    for (int q = 0; q < b->n_rings; q++)
        count += b->rings[q].n * (b->rings[q].n + 1);
    return count;
}

/* Chunk c of n of a gradient of `elements`: elements [c * elements / n, ...). */
static int64_t chunk_start(int64_t elements, int c, int n)
{
    return elements * c / n;
}

bool pl_ring_buffers(pl_builder *b, int first)
{
    pl_program *p = b->p;
    if (!(b->ring_refs = malloc(2 * (size_t)b->n_ring_tasks * sizeof *b->ring_refs + 1)))
        return false;
    for (int q = 0; q < b->n_rings; q++) {
        pl_ring *r = &b->rings[q];
        int n = r->n;
        int64_t elements = pl_tensor_elements(&b->g->tensors[r->accumulator]);
        int64_t largest = (elements + n - 1) / n * (int64_t)sizeof(float);
        r->first_chunk = first;
        for (int i = 0; i < n; i++) {
            int place = r->first_place + i, copy = b->place_copy[place];
            for (int c = 0; c < n; c++) {
                int64_t start = chunk_start(elements, c, n);
                p->buffers[first++] = (pl_buffer){
                    .tensor = r->accumulator, .device = -1, .copy = copy,
                    .offset = start * (int64_t)sizeof(float),
                    .bytes = (chunk_start(elements, c + 1, n) - start) * (int64_t)sizeof(float)};
            }
        }
        for (int i = 0; i < n; i++) {
            int d = b->place_device[r->first_place + i];
            p->buffers[first++] = (pl_buffer){.tensor = r->accumulator, .device = d,
                                              .offset = p->memory[d].arena, .bytes = largest};
            p->memory[d].arena += (largest + 63) / 64 * 64;
        }
        int *refs = b->ring_refs + 2 * (r->first_task - b->first_ring_task);
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < n - 1; j++)
                for (int i = 0; i < n; i++) {
                    int next = (i + 1) % n, receive = r->first_chunk + n * n + next;
                    int c = ((pass == 0 ? i - j : i + 1 - j) % n + n) % n;
                    int mine = r->first_chunk + i * n + c, theirs = r->first_chunk + next * n + c;
                    if (pass == 0) { /* the copy into the receiving buffer, then its reduce */
                        *refs++ = mine;
                        *refs++ = receive;
                        *refs++ = receive;
                        *refs++ = theirs;
                    } else {
                        *refs++ = mine;
                        *refs++ = theirs;
                    }
                }
    }
    return true;
}
