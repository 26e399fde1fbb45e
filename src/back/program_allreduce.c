/* The all-reduce of replicas' gradients (program.h, program_impl.h).
 *
 * Buckets. A parameter's gradient has a copy on each device where a replica updates it:
 * its nodes. Gradients with the same nodes are summed together in buckets of about
 * BUCKET_BYTES, in the order they become ready (their last accumulation in the schedule),
 * so that a model of many small parameters pays a link's latency per bucket, not per
 * parameter, and the first buckets overlap the rest of the backward pass. A gradient of
 * BUCKET_BYTES or more is a bucket of its own and is summed where it is; smaller ones are
 * packed into one buffer on each node, and unpacked after.
 *
 * Algorithms. Over nodes whose links are equal, a ring: the bucket is cut into n parts;
 * in step j of the reduce-scatter node i sends part (i - j) mod n to node i + 1, added into
 * node i + 1's own as it arrives (one task on the link, as a collective library reduces
 * while it receives); after n - 1 steps node i holds the whole sum of part (i + 1) mod n,
 * and in n - 1 more steps each passes a finished part on. Every node sends 2(n - 1)/n of the
 * bucket. Over nodes in k groups of g joined by faster links inside a group than between
 * (paced-8's two machines), a hierarchy: a ring reduce-scatter inside each group (g
 * parts), then for each part a ring all-reduce between the groups' holders of it (each
 * sends 2(k - 1)/k of a g-th of the bucket over a slow link, all parts at once over
 * different links), then a ring all-gather inside each group. Otherwise a ring that
 * visits each group's nodes together, so that it crosses slow links only k times.
 *
 * Every range is summed once and then copied, so all copies update with the same bits.
 *
 * Dependencies. The algorithm is written as a sequence of primitives that would be right
 * run one by one; the edges between them (and from the accumulations, to the updates)
 * follow from what each reads and writes, in hazard units: the bucket cut into `fine`
 * ranges per node. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "program_impl.h"

enum { BUCKET_BYTES = 1 << 20 };

/* ---- buckets -------------------------------------------------------------------------- */

/* The update op of a trained parameter's accumulator, or -1 (indexed by
 * pl_plan_allreduces). */
static int update_of(const pl_builder *b, int acc)
{
    return b->update_op[acc];
}

static int copies_of(const pl_builder *b, int t, int *devices)
{
    int n = 0;
    for (int i = b->first_place[t]; i < b->first_place[t + 1]; i++)
        if (b->place_copy[i] >= 0)
            devices[n++] = b->place_device[i];
    return n;
}

static int compare_keys(task_key a, task_key b)
{
    if (a.block != b.block)
        return a.block < b.block ? -1 : 1;
    return a.op != b.op ? (a.op < b.op ? -1 : 1) : (a.sub > b.sub) - (a.sub < b.sub);
}

/* Calls visit(b, context, task, device) for every accumulation task of gradient `acc`
 * (creation index) with the device it accumulates on. */
static void each_accumulation(const pl_builder *b, int acc,
                              void (*visit)(const pl_builder *, void *, int, int),
                              void *context)
{
    for (int i = b->first_accumulation[acc]; i < b->first_accumulation[acc + 1]; i++) {
        int o = b->accumulations[i];
        for (int k = 0; k < b->slices; k++)
            visit(b, context, b->op_task[o] + k, b->parts[pl_replica_of(b, k)]->op_device[o]);
    }
}

static void latest_key(const pl_builder *b, void *context, int task, int device)
{
    (void)device;
    task_key *key = context;
    if (compare_keys(b->keys[task], *key) > 0)
        *key = b->keys[task];
}

static task_key ready_key(const pl_builder *b, int acc)
{
    task_key key = {INT_MIN, 0, 0};
    each_accumulation(b, acc, latest_key, &key);
    return key;
}

typedef struct candidate {
    int acc;
    int n, device[PL_MAX_REPLICAS];
    task_key ready;
} candidate;

/* Same nodes together, then in order of readiness (no state: programs compile on several
 * threads at once). */
static int by_nodes_then_ready(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    if (a->n != b->n)
        return a->n - b->n;
    int c = memcmp(a->device, b->device, (size_t)a->n * sizeof *a->device);
    return c ? c : compare_keys(a->ready, b->ready);
}

/* ---- algorithms ----------------------------------------------------------------------- */

typedef struct writer {
    pl_builder *b;
    pl_bucket *bucket;
    int cap;
    bool ok;
} writer;

static void emit(writer *w, int kind, int from, int to, int64_t start, int64_t end, int member)
{
    pl_builder *b = w->b;
    if (!w->ok || !pl_grow(&b->collective_ops, &w->cap, b->n_collective_ops + 1,
                           sizeof *b->collective_ops, 256)) {
        w->ok = false;
        return;
    }
    b->collective_ops[b->n_collective_ops++] = (pl_collective_op){kind, from, to, start, end,
                                                                  member};
    w->bucket->n_ops++;
}

/* Part p of `parts` of elements [start, end). */
static int64_t part(int64_t start, int64_t end, int p, int parts)
{
    return start + (end - start) * p / parts;
}

/* A ring over nodes[0 .. n) on [start, end): the reduce-scatter, the all-gather, or both. */
static void ring(writer *w, const int *nodes, int n, int64_t start, int64_t end, bool scatter,
                 bool gather)
{
    for (int j = 0; scatter && j < n - 1; j++)
        for (int i = 0; i < n; i++) {
            int p = ((i - j) % n + n) % n;
            int64_t s = part(start, end, p, n), e = part(start, end, p + 1, n);
            emit(w, PL_REDUCE, nodes[i], nodes[(i + 1) % n], s, e, -1);
        }
    for (int j = 0; gather && j < n - 1; j++)
        for (int i = 0; i < n; i++) {
            int p = ((i + 1 - j) % n + n) % n;
            emit(w, PL_PASS, nodes[i], nodes[(i + 1) % n], part(start, end, p, n),
                 part(start, end, p + 1, n), -1);
        }
}

/* Orders the nodes group by group; a hierarchy when the groups are equal and several,
 * else a ring. */
static void write_algorithm(writer *w)
{
    pl_bucket *q = w->bucket;
    int group[PL_MAX_REPLICAS], order[PL_MAX_REPLICAS], size[PL_MAX_REPLICAS] = {0};
    int k = pl_cluster_groups(w->b->c, q->device, q->n, group), n = 0;
    for (int g = 0; g < k; g++)
        for (int i = 0; i < q->n; i++)
            if (group[i] == g) {
                order[n++] = i;
                size[g]++;
            }
    bool equal = k > 1 && k < q->n;
    for (int g = 1; g < k; g++)
        equal = equal && size[g] == size[0];
    if (!equal) {
        q->fine = q->n;
        ring(w, order, q->n, 0, q->elements, true, true);
        return;
    }
    int g = size[0];
    q->fine = g * k;
    for (int c = 0; c < k; c++) /* inside each group: node order[c * g + i] */
        ring(w, order + c * g, g, 0, q->elements, true, false);
    for (int p = 0; p < g; p++) { /* between groups: the holders of part p */
        int holders[PL_MAX_REPLICAS];
        for (int c = 0; c < k; c++)
            holders[c] = order[c * g + ((p - 1) % g + g) % g];
        ring(w, holders, k, part(0, q->elements, p, g), part(0, q->elements, p + 1, g), true,
             true);
    }
    for (int c = 0; c < k; c++)
        ring(w, order + c * g, g, 0, q->elements, false, true);
}

/* A bucket's primitives: packs, the algorithm, unpacks. */
static void write_bucket(writer *w)
{
    pl_bucket *q = w->bucket;
    const pl_graph *g = w->b->g;
    q->first_op = w->b->n_collective_ops;
    bool packed = q->n_members > 1;
    int64_t at = 0;
    for (int m = 0; packed && m < q->n_members; m++) {
        int64_t size = pl_tensor_elements(&g->tensors[w->b->members[q->first_member + m]]);
        for (int i = 0; i < q->n; i++)
            emit(w, PL_PACK, i, i, at, at + size, m);
        at += size;
    }
    write_algorithm(w);
    at = 0;
    for (int m = 0; packed && m < q->n_members; m++) {
        int64_t size = pl_tensor_elements(&g->tensors[w->b->members[q->first_member + m]]);
        for (int i = 0; i < q->n; i++)
            emit(w, PL_UNPACK, i, i, at, at + size, m);
        at += size;
    }
}

/* Each accumulator's update op and accumulation ops, in one pass over the ops; the
 * buckets themselves need the tasks' keys (pl_create_allreduce_tasks). */
pl_status pl_plan_allreduces(pl_builder *b, pl_error *err)
{
    const pl_graph *g = b->g;
    size_t n = (size_t)g->n_tensors;
    b->first_collective_transfer = b->p->n_transfers;
    b->update_op = malloc((n + 1) * sizeof *b->update_op);
    b->first_accumulation = calloc(n + 2, sizeof *b->first_accumulation);
    b->accumulations = malloc(((size_t)g->n_ops + 1) * sizeof *b->accumulations);
    if (!b->update_op || !b->first_accumulation || !b->accumulations)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (size_t t = 0; t < n; t++)
        b->update_op[t] = -1;
    for (int pass = 0; pass < 2; pass++) { /* counts, then the ops, by accumulator */
        for (int o = g->n_forward_ops; o < g->n_ops; o++) {
            const pl_op *op = &g->ops[o];
            if (pl_graph_updated_param(g, o) < 0 || op->n_inputs < 2)
                continue;
            int acc = op->phase == PL_PHASE_UPDATE ? op->inputs[1] : op->inputs[0];
            if (op->phase == PL_PHASE_UPDATE)
                b->update_op[acc] = o;
            else if (pass == 0)
                b->first_accumulation[acc + 2]++;
            else
                b->accumulations[b->first_accumulation[acc + 1]++] = o;
        }
        for (size_t t = 0; pass == 0 && t < n; t++)
            b->first_accumulation[t + 2] += b->first_accumulation[t + 1];
    }
    return PL_OK;
}

/* Groups the trained gradients with several copies into buckets and writes their
 * algorithms. */
static bool make_buckets(pl_builder *b)
{
    const pl_graph *g = b->g;
    candidate *all = malloc(((size_t)g->n_tensors + 1) * sizeof *all);
    int n = 0;
    b->members = malloc(((size_t)g->n_tensors + 1) * sizeof *b->members);
    b->buckets = malloc(((size_t)g->n_tensors + 1) * sizeof *b->buckets);
    bool ok = all && b->members && b->buckets;
    for (int t = 0; ok && t < g->n_tensors; t++) {
        candidate *c = &all[n];
        if (update_of(b, t) < 0 || (c->n = copies_of(b, t, c->device)) < 2)
            continue;
        c->acc = t;
        c->ready = ready_key(b, t);
        n++;
    }
    if (ok)
        qsort(all, (size_t)n, sizeof *all, by_nodes_then_ready);
    writer w = {b, NULL, 0, ok};
    for (int i = 0; w.ok && i < n;) {
        const candidate *first = &all[i];
        pl_bucket *q = &b->buckets[b->n_buckets++];
        *q = (pl_bucket){.n = first->n, .first_member = i};
        memcpy(q->device, first->device, sizeof q->device);
        int64_t bytes = 0;
        do {
            const candidate *c = &all[i];
            b->members[i++] = c->acc;
            q->n_members++;
            q->elements += pl_tensor_elements(&g->tensors[c->acc]);
            bytes = q->elements * (int64_t)sizeof(float);
        } while (i < n && bytes < BUCKET_BYTES &&
                 pl_tensor_bytes(&g->tensors[all[i].acc]) < BUCKET_BYTES && all[i].n == q->n &&
                 !memcmp(all[i].device, q->device, (size_t)q->n * sizeof(int)));
        w.bucket = q;
        write_bucket(&w);
    }
    free(all);
    return w.ok;
}

/* ---- tasks ---------------------------------------------------------------------------- */

/* The tasks, after every other: a copy for each pass, pack and unpack, a reduce for each
 * reduce, each with a transfer of its own (for its link and its name). Their key is the
 * bucket's last accumulation's, behind it. */
bool pl_create_allreduce_tasks(pl_builder *b)
{
    b->first_collective_task = b->p->n_tasks;
    if (!make_buckets(b))
        return false;
    int n_transfers = b->p->n_transfers + b->n_collective_ops;
    pl_transfer *transfers = realloc(b->p->transfers,
                                     ((size_t)n_transfers + 1) * sizeof *transfers);
    if (!transfers)
        return false;
    b->p->transfers = transfers;
    for (int q = 0; q < b->n_buckets; q++) {
        pl_bucket *bucket = &b->buckets[q];
        task_key key = {INT_MIN, 0, 0};
        for (int m = 0; m < bucket->n_members; m++) {
            int acc = b->members[bucket->first_member + m];
            task_key ready = ready_key(b, acc);
            if (compare_keys(ready, key) > 0)
                key = ready;
            int update = update_of(b, acc);
            key.op = update > key.op ? update : key.op;
        }
        bucket->first_task = b->p->n_tasks;
        for (int i = 0; i < bucket->n_ops; i++) {
            const pl_collective_op *op = &b->collective_ops[bucket->first_op + i];
            int from = bucket->device[op->from], to = bucket->device[op->to];
            key.sub = 1 + i;
            int member = op->member >= 0 ? op->member : 0;
            b->p->transfers[b->p->n_transfers] =
                (pl_transfer){b->members[bucket->first_member + member], from, to};
            if (!pl_add_task(b, op->kind == PL_REDUCE ? PL_TASK_REDUCE : PL_TASK_COPY,
                             b->p->n_transfers++, -1, pl_copy_resource(b, from, to), key))
                return false;
        }
    }
    return true;
}

/* ---- dependencies ---------------------------------------------------------------------- */

/* A primitive's units: what it reads (the source), what it writes; each a range of units
 * (count 0: none). */
typedef struct units {
    int read_first, read_count, write_first, write_count;
} units;

static int fine_of(const pl_bucket *q, int64_t element)
{
    for (int c = 0; c < q->fine; c++)
        if (element < part(0, q->elements, c + 1, q->fine))
            return c;
    return q->fine - 1;
}

/* The units of node i's elements [start, end). */
static void range_units(const pl_bucket *q, int node, int64_t start, int64_t end, int *first,
                        int *count)
{
    if (end <= start) {
        *first = *count = 0;
        return;
    }
    int lo = fine_of(q, start), hi = fine_of(q, end - 1);
    *first = q->first_unit + node * q->fine + lo;
    *count = hi - lo + 1;
}

static units units_of(const pl_bucket *q, const pl_collective_op *op)
{
    units u = {0};
    switch (op->kind) {
    case PL_REDUCE: /* it reads its own range too: a write after the last write anyway */
    case PL_PASS:
        range_units(q, op->from, op->start, op->end, &u.read_first, &u.read_count);
        range_units(q, op->to, op->start, op->end, &u.write_first, &u.write_count);
        break;
    case PL_PACK:
        range_units(q, op->to, op->start, op->end, &u.write_first, &u.write_count);
        break;
    default: /* PL_UNPACK */
        range_units(q, op->from, op->start, op->end, &u.read_first, &u.read_count);
        break;
    }
    return u;
}

typedef struct order_state {
    const pl_builder *b;
    pl_edges *edges;
    int *last_writer;   /* per unit: a task (creation index), -1 none, -2 the accumulations */
    int **readers;      /* per unit: tasks that read it since */
    int *n_readers, *readers_cap;
    int task;           /* the one being added */
    int node_device;    /* for the accumulations' visitor */
    bool ok;
} order_state;

static void add_edge(order_state *s, int from, int to)
{
    s->ok = s->ok && pl_edges_add(s->edges, from, to);
}

static void from_accumulation(const pl_builder *b, void *context, int task, int device)
{
    (void)b;
    order_state *s = context;
    if (device == s->node_device)
        add_edge(s, task, s->task);
}

/* Task s->task after node `node`'s accumulations of the bucket's gradients. */
static void after_accumulations(order_state *s, const pl_bucket *q, int node, int member)
{
    s->node_device = q->device[node];
    for (int m = 0; m < q->n_members; m++)
        if (member < 0 || m == member)
            each_accumulation(s->b, s->b->members[q->first_member + m], from_accumulation, s);
}

static void touch(order_state *s, const pl_bucket *q, int unit, bool writes)
{
    int u = unit - q->first_unit;
    if (s->last_writer[u] == -2) {
        after_accumulations(s, q, u / q->fine, -1);
    } else if (s->last_writer[u] >= 0) {
        add_edge(s, s->last_writer[u], s->task);
    }
    if (!writes) {
        int cap = s->readers_cap[u];
        s->ok = s->ok && pl_grow(&s->readers[u], &cap, s->n_readers[u] + 1, sizeof(int), 8);
        s->readers_cap[u] = cap;
        if (s->ok)
            s->readers[u][s->n_readers[u]++] = s->task;
        return;
    }
    for (int r = 0; r < s->n_readers[u]; r++)
        add_edge(s, s->readers[u][r], s->task);
    s->n_readers[u] = 0;
    s->last_writer[u] = s->task;
}

/* The edges of one bucket: the primitives in order, each after what it needs; the
 * updates after everything that reads or writes their copy. */
static bool bucket_edges(const pl_builder *b, const pl_bucket *q, pl_edges *edges)
{
    int n_units = q->n * q->fine;
    bool packed = q->n_members > 1;
    order_state s = {b, edges, malloc((size_t)n_units * sizeof(int)),
                     calloc((size_t)n_units, sizeof(int *)), calloc((size_t)n_units, sizeof(int)),
                     calloc((size_t)n_units, sizeof(int)), 0, 0, true};
    s.ok = s.last_writer && s.readers && s.n_readers && s.readers_cap;
    for (int u = 0; s.ok && u < n_units; u++) /* a gradient summed where it is was written */
        s.last_writer[u] = packed ? -1 : -2;
    for (int i = 0; s.ok && i < q->n_ops; i++) {
        const pl_collective_op *op = &b->collective_ops[q->first_op + i];
        units u = units_of(q, op);
        s.task = q->first_task + i;
        if (op->kind == PL_PACK)
            after_accumulations(&s, q, op->from, op->member);
        for (int k = 0; k < u.read_count; k++)
            touch(&s, q, u.read_first + k, false);
        for (int k = 0; k < u.write_count; k++)
            touch(&s, q, u.write_first + k, true);
        if (op->kind == PL_UNPACK) {
            int acc = b->members[q->first_member + op->member];
            add_edge(&s, s.task, pl_update_task(b, update_of(b, acc), q->device[op->from]));
        }
    }
    for (int i = 0; s.ok && !packed && i < q->n; i++) { /* in place: the update reads all */
        s.task = pl_update_task(b, update_of(b, b->members[q->first_member]), q->device[i]);
        for (int c = 0; c < q->fine; c++)
            touch(&s, q, q->first_unit + i * q->fine + c, true);
    }
    for (int u = 0; s.readers && u < n_units; u++)
        free(s.readers[u]);
    free(s.last_writer);
    free(s.readers);
    free(s.n_readers);
    free(s.readers_cap);
    return s.ok;
}

bool pl_allreduce_edges(const pl_builder *b, pl_edges *edges)
{
    for (int q = 0; q < b->n_buckets; q++) /* units numbered from 0: laid out later */
        if (!bucket_edges(b, &b->buckets[q], edges))
            return false;
    return true;
}

/* ---- buffers --------------------------------------------------------------------------- */

int pl_allreduce_buffer_count(const pl_builder *b)
{
    return 2 * b->n_collective_ops;
}

/* The buffer of node i's elements [start, end) of a bucket: the gradient's copy itself
 * when it is alone, else the packed buffer in the node's arena. */
static pl_buffer range_buffer(const pl_builder *b, const pl_bucket *q, int node, int64_t start,
                              int64_t end)
{
    int acc = b->members[q->first_member];
    int64_t bytes = (end - start) * (int64_t)sizeof(float);
    if (q->n_members > 1)
        return (pl_buffer){.tensor = acc, .device = q->device[node],
                           .offset = q->storage[node] + start * (int64_t)sizeof(float),
                           .bytes = bytes};
    int place = pl_place_of(b, acc, q->device[node]);
    return (pl_buffer){.tensor = acc, .device = -1, .copy = b->place_copy[place],
                       .offset = start * (int64_t)sizeof(float), .bytes = bytes};
}

static void set_units(pl_builder *b, int buffer, int first, int count)
{
    b->unit_first[buffer] = first;
    b->unit_count[buffer] = count;
}

bool pl_allreduce_buffers(pl_builder *b, int first, const int *base)
{
    pl_program *p = b->p;
    b->collective_refs = malloc(2 * (size_t)b->n_collective_ops * sizeof(int) + 1);
    b->unit_first = calloc((size_t)p->n_buffers + 1, sizeof(int));
    b->unit_count = calloc((size_t)p->n_buffers + 1, sizeof(int));
    if (!b->collective_refs || !b->unit_first || !b->unit_count)
        return false;
    b->n_units = 0;
    for (int q = 0; q < b->n_buckets; q++) {
        pl_bucket *bucket = &b->buckets[q];
        bucket->first_unit = b->n_units;
        b->n_units += bucket->n * bucket->fine;
        if (!(bucket->storage = calloc((size_t)bucket->n, sizeof(int64_t))))
            return false;
        for (int i = 0; bucket->n_members > 1 && i < bucket->n; i++) { /* the packed bucket */
            pl_device_memory *mem = &p->memory[bucket->device[i]];
            bucket->storage[i] = mem->arena;
            mem->arena += (bucket->elements * (int64_t)sizeof(float) + 63) / 64 * 64;
        }
        for (int i = 0; i < bucket->n_ops; i++) {
            const pl_collective_op *op = &b->collective_ops[bucket->first_op + i];
            int src = first + 2 * (bucket->first_op + i), dst = src + 1;
            units u = units_of(bucket, op);
            int from = src, into = dst;
            if (op->kind == PL_PACK || op->kind == PL_UNPACK) { /* the gradient's own buffer */
                int acc = b->members[bucket->first_member + op->member];
                int whole = base[pl_place_of(b, acc, bucket->device[op->from])];
                pl_buffer packed = range_buffer(b, bucket, op->from, op->start, op->end);
                p->buffers[src] = p->buffers[dst] = packed;
                from = op->kind == PL_PACK ? whole : src;
                into = op->kind == PL_PACK ? dst : whole;
            } else {
                p->buffers[src] = range_buffer(b, bucket, op->from, op->start, op->end);
                p->buffers[dst] = range_buffer(b, bucket, op->to, op->start, op->end);
            }
            if (from == src)
                set_units(b, src, u.read_first, u.read_count);
            if (into == dst)
                set_units(b, dst, u.write_first, u.write_count);
            b->collective_refs[2 * (bucket->first_op + i)] = from;
            b->collective_refs[2 * (bucket->first_op + i) + 1] = into;
        }
        if (bucket->n_members == 1) /* the gradient's whole copies: all their units */
            for (int i = 0; i < bucket->n; i++) {
                int whole = base[pl_place_of(b, b->members[bucket->first_member],
                                             bucket->device[i])];
                set_units(b, whole, bucket->first_unit + i * bucket->fine, bucket->fine);
            }
    }
    return true;
}
