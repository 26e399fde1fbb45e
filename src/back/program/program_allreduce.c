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
 * A sharded optimiser state: the reduce-scatter leaves each node the sum of one part; it
 * updates that part of each parameter (packed: unpacking its sum first, packing the new
 * values after), and the all-gather passes the parameters' parts round instead of sums
 * (packed: unpacked into every node's parameters after).
 *
 * Dependencies. The algorithm is written as a sequence of primitives that would be right
 * run one by one; the edges between them (and from the accumulations, to the updates)
 * follow from what each reads and writes, in hazard units: the bucket cut into `fine`
 * ranges per node (in place and sharded, the parameter too), and for a packed bucket one
 * unit per member, node and side (its gradient's copy, its parameter's). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "program_impl.h"

enum { BUCKET_BYTES = 1 << 20 };

/* ---- buckets -------------------------------------------------------------------------- */

/* The update op of a trained parameter's accumulator, or -1 (indexed by
 * pl_index_accumulations). */
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
    int cap, shard_cap;
    bool ok;
    bool param;                    /* reduces and passes move parameters (the gather) */
    pl_range own[PL_MAX_REPLICAS]; /* after a reduce-scatter: the part each node summed */
} writer;

static void emit(writer *w, int kind, int from, int to, int64_t start, int64_t end, int member,
                 bool param)
{
    pl_builder *b = w->b;
    if (!w->ok || !pl_grow(&b->collective_ops, &w->cap, b->n_collective_ops + 1,
                           sizeof *b->collective_ops, 256)) {
        w->ok = false;
        return;
    }
    b->collective_ops[b->n_collective_ops++] = (pl_collective_op){kind, from, to, start, end,
                                                                  member, param};
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
            emit(w, PL_REDUCE, nodes[i], nodes[(i + 1) % n], s, e, -1, w->param);
        }
    for (int i = 0; scatter && i < n; i++) /* node i now holds the sum of part i + 1 */
        w->own[nodes[i]] = (pl_range){part(start, end, (i + 1) % n, n),
                                      part(start, end, (i + 1) % n + 1, n)};
    for (int j = 0; gather && j < n - 1; j++)
        for (int i = 0; i < n; i++) {
            int p = ((i + 1 - j) % n + n) % n;
            emit(w, PL_PASS, nodes[i], nodes[(i + 1) % n], part(start, end, p, n),
                 part(start, end, p + 1, n), -1, w->param);
        }
}

/* Orders the nodes group by group; a hierarchy when the groups are equal and several,
 * else a ring. Its reduce-scatter, its all-gather, or both. */
static void write_algorithm(writer *w, bool scatter, bool gather)
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
        ring(w, order, q->n, 0, q->elements, scatter, gather);
        return;
    }
    int g = size[0];
    q->fine = g * k;
    for (int c = 0; scatter && c < k; c++) /* inside each group: node order[c * g + i] */
        ring(w, order + c * g, g, 0, q->elements, true, false);
    for (int p = 0; p < g; p++) { /* between groups: the holders of part p */
        int holders[PL_MAX_REPLICAS];
        for (int c = 0; c < k; c++)
            holders[c] = order[c * g + ((p - 1) % g + g) % g];
        ring(w, holders, k, part(0, q->elements, p, g), part(0, q->elements, p + 1, g),
             scatter, gather);
    }
    for (int c = 0; gather && c < k; c++)
        ring(w, order + c * g, g, 0, q->elements, false, true);
}

/* Node `node`'s update of member m covers `shard` of its parameter, and its copies of the
 * optimiser state hold that shard. */
static void set_shard(writer *w, int node, int m, pl_range shard)
{
    pl_builder *b = w->b;
    pl_program *p = b->p;
    if (!w->ok || !pl_grow(&p->shards, &w->shard_cap, p->n_shards + 1, sizeof *p->shards, 64)) {
        w->ok = false;
        return;
    }
    int d = w->bucket->device[node];
    int o = update_of(b, b->members[w->bucket->first_member + m]);
    p->tasks[pl_update_task(b, o, d)].shard = p->n_shards; /* not yet ordered: by creation */
    p->shards[p->n_shards++] = shard;
    const pl_op *op = &b->g->ops[o];
    for (int j = 2; j < op->n_inputs; j++) { /* param, accumulator, then its state */
        int place = pl_place_of(b, op->inputs[j], d);
        if (place < 0 || b->place_copy[place] < 0)
            continue;
        b->place_stored[place] = shard;
        if (b->place_copy[place] > 0) {
            p->copy_range[b->place_copy[place]] = shard;
            p->copy_is_shard[b->place_copy[place]] = true;
        }
    }
}

/* The updates of a sharded bucket: each node's part of every member (packed: its sums
 * unpacked before, the new values packed after). */
static void write_shards(writer *w)
{
    pl_bucket *q = w->bucket;
    const pl_builder *b = w->b;
    bool packed = q->n_members > 1;
    q->updates_at = b->n_collective_ops - q->first_op;
    for (int i = 0; i < q->n; i++)
        for (int m = 0; m < q->n_members; m++) {
            int64_t at = b->member_start[q->first_member + m];
            int64_t size = pl_tensor_elements(&b->g->tensors[b->members[q->first_member + m]]);
            int64_t lo = w->own[i].start > at ? w->own[i].start : at;
            int64_t hi = w->own[i].end < at + size ? w->own[i].end : at + size;
            if (hi < lo)
                lo = hi = at;
            if (packed && lo < hi)
                emit(w, PL_UNPACK, i, i, lo, hi, m, false);
            set_shard(w, i, m, (pl_range){lo - at, hi - at});
            if (packed && lo < hi)
                emit(w, PL_PACK, i, i, lo, hi, m, true);
        }
}

/* Packs (or unpacks) every member on every node; after a sharded gather, the parameters'
 * parts each node did not update. */
static void write_packing(writer *w, int kind, bool param)
{
    pl_bucket *q = w->bucket;
    const pl_builder *b = w->b;
    for (int m = 0; q->n_members > 1 && m < q->n_members; m++) {
        int64_t at = b->member_start[q->first_member + m];
        int64_t end = at + pl_tensor_elements(&b->g->tensors[b->members[q->first_member + m]]);
        for (int i = 0; i < q->n; i++) {
            if (!param) {
                emit(w, kind, i, i, at, end, m, false);
                continue;
            }
            int64_t own_start = w->own[i].start, own_end = w->own[i].end;
            if (own_start > at)
                emit(w, kind, i, i, at, own_start < end ? own_start : end, m, true);
            if (own_end < end)
                emit(w, kind, i, i, own_end > at ? own_end : at, end, m, true);
        }
    }
}

/* A bucket's primitives: packs, the algorithm (sharded: the updates inside), unpacks. */
static void write_bucket(writer *w)
{
    pl_bucket *q = w->bucket;
    q->first_op = w->b->n_collective_ops;
    write_packing(w, PL_PACK, false);
    if (!q->sharded) {
        write_algorithm(w, true, true);
        write_packing(w, PL_UNPACK, false);
        return;
    }
    write_algorithm(w, true, false);
    write_shards(w);
    w->param = true;
    write_algorithm(w, false, true);
    write_packing(w, PL_UNPACK, true);
    w->param = false;
}

/* Each accumulator's update op and accumulation ops, in one pass over the ops; the
 * buckets themselves need the tasks' keys (pl_create_allreduce_tasks). */
pl_status pl_index_accumulations(pl_builder *b, pl_error *err)
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
    b->member_start = malloc(((size_t)g->n_tensors + 1) * sizeof *b->member_start);
    b->buckets = malloc(((size_t)g->n_tensors + 1) * sizeof *b->buckets);
    bool ok = all && b->members && b->member_start && b->buckets;
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
    writer w = {b, NULL, 0, 0, ok, false, {{0, 0}}};
    for (int i = 0; w.ok && i < n;) {
        const candidate *first = &all[i];
        pl_bucket *q = &b->buckets[b->n_buckets++];
        *q = (pl_bucket){.n = first->n, .first_member = i,
                         .sharded = b->plan->shard_optimizer_state};
        memcpy(q->device, first->device, sizeof q->device);
        int64_t bytes = 0;
        do {
            const candidate *c = &all[i];
            b->member_start[i] = q->elements;
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

/* A bucket's hazard units: the bucket's elements (a gradient in place, or the packed
 * buffer) in `fine` ranges per node; in place and sharded, the parameter's likewise; packed,
 * one unit per member, node and side (the member's gradient copy, its parameter copy). */
static int unit_count(const pl_bucket *q)
{
    int n = q->n * q->fine;
    return q->n_members > 1 ? n + 2 * q->n_members * q->n : q->sharded ? 2 * n : n;
}

static int member_unit(const pl_bucket *q, bool param, int m, int node)
{
    return q->first_unit + q->n * q->fine + ((param ? q->n_members : 0) + m) * q->n + node;
}

/* Whether an op's range is of the parameter in place (not of the packed buffer). */
static bool on_param(const pl_bucket *q, const pl_collective_op *op)
{
    return op->param && q->n_members == 1;
}

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

/* The units of node i's elements [start, end), of the bucket or of the parameter. */
static void range_units(const pl_bucket *q, bool param, int node, int64_t start, int64_t end,
                        int *first, int *count)
{
    if (end <= start) {
        *first = *count = 0;
        return;
    }
    int lo = fine_of(q, start), hi = fine_of(q, end - 1);
    *first = q->first_unit + (param ? q->n * q->fine : 0) + node * q->fine + lo;
    *count = hi - lo + 1;
}

static units units_of(const pl_bucket *q, const pl_collective_op *op)
{
    units u = {0};
    bool param = on_param(q, op);
    switch (op->kind) {
    case PL_REDUCE: /* it reads its own range too: a write after the last write anyway */
    case PL_PASS:
        range_units(q, param, op->from, op->start, op->end, &u.read_first, &u.read_count);
        range_units(q, param, op->to, op->start, op->end, &u.write_first, &u.write_count);
        break;
    case PL_PACK:
        range_units(q, false, op->to, op->start, op->end, &u.write_first, &u.write_count);
        break;
    default: /* PL_UNPACK */
        range_units(q, false, op->from, op->start, op->end, &u.read_first, &u.read_count);
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

static int member_update(const pl_builder *b, const pl_bucket *q, int m, int node)
{
    return pl_update_task(b, update_of(b, b->members[q->first_member + m]), q->device[node]);
}

/* A bucket in place: each node's update after everything that reads or writes its
 * gradient, and (sharded) its parameter. */
static void in_place_updates(order_state *s, const pl_bucket *q)
{
    for (int i = 0; i < q->n; i++) {
        s->task = member_update(s->b, q, 0, i);
        for (int c = 0; c < q->fine; c++) {
            touch(s, q, q->first_unit + i * q->fine + c, true);
            if (q->sharded)
                touch(s, q, q->first_unit + (q->n + i) * q->fine + c, true);
        }
    }
}

/* The edges of one bucket: the primitives in order, each after what it needs; the
 * updates after everything that reads or writes their copy. */
static bool bucket_edges(const pl_builder *b, const pl_bucket *q, pl_edges *edges)
{
    int n_units = unit_count(q);
    bool packed = q->n_members > 1;
    order_state s = {b, edges, malloc((size_t)n_units * sizeof(int)),
                     calloc((size_t)n_units, sizeof(int *)), calloc((size_t)n_units, sizeof(int)),
                     calloc((size_t)n_units, sizeof(int)), 0, 0, true};
    s.ok = s.last_writer && s.readers && s.n_readers && s.readers_cap;
    for (int u = 0; s.ok && u < n_units; u++) /* a gradient summed where it is was written */
        s.last_writer[u] = packed || u >= q->n * q->fine ? -1 : -2;
    for (int i = 0; s.ok && i < q->n_ops; i++) {
        const pl_collective_op *op = &b->collective_ops[q->first_op + i];
        if (q->sharded && !packed && i == q->updates_at)
            in_place_updates(&s, q);
        units u = units_of(q, op);
        s.task = q->first_task + i;
        bool member_side = op->kind == PL_PACK || op->kind == PL_UNPACK;
        int update = member_side ? member_update(b, q, op->member, op->from) : -1;
        if (op->kind == PL_PACK && !op->param) { /* the update zeroes what it packs */
            after_accumulations(&s, q, op->from, op->member);
            add_edge(&s, s.task, update);
        }
        if (member_side && op->param) /* the updated values, or over them */
            add_edge(&s, update, s.task);
        for (int k = 0; k < u.read_count; k++)
            touch(&s, q, u.read_first + k, false);
        for (int k = 0; k < u.write_count; k++)
            touch(&s, q, u.write_first + k, true);
        if (op->kind == PL_UNPACK && !op->param)
            add_edge(&s, s.task, update);
    }
    if (s.ok && !q->sharded && !packed)
        in_place_updates(&s, q);
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

/* Member m's gradient (or parameter) tensor. */
static int member_tensor(const pl_builder *b, const pl_bucket *q, int m, bool param)
{
    int acc = b->members[q->first_member + m];
    return param ? b->g->ops[update_of(b, acc)].inputs[0] : acc;
}

/* Node i's copy of tensor t, elements [start, end). */
static pl_buffer copy_range(const pl_builder *b, const pl_bucket *q, int node, int t,
                            int64_t start, int64_t end)
{
    int place = pl_place_of(b, t, q->device[node]);
    return (pl_buffer){.tensor = t, .device = -1, .copy = b->place_copy[place],
                       .offset = start * (int64_t)sizeof(float),
                       .bytes = (end - start) * (int64_t)sizeof(float)};
}

/* The buffer of node i's elements [start, end) of a bucket: the gradient's (or sharded
 * parameter's) copy itself when it is alone, else the packed buffer in the node's arena. */
static pl_buffer range_buffer(const pl_builder *b, const pl_bucket *q, int node, int64_t start,
                              int64_t end, bool param)
{
    if (q->n_members == 1)
        return copy_range(b, q, node, member_tensor(b, q, 0, param), start, end);
    return (pl_buffer){.tensor = b->members[q->first_member], .device = q->device[node],
                       .offset = q->storage[node] + start * (int64_t)sizeof(float),
                       .bytes = (end - start) * (int64_t)sizeof(float)};
}

static void set_units(pl_builder *b, int buffer, int first, int count)
{
    b->unit_first[buffer] = first;
    b->unit_count[buffer] = count;
}

/* The whole copies a bucket works on get its units: in place, all of a node's; packed,
 * the member's. */
static void whole_copy_units(pl_builder *b, const pl_bucket *q, const int *base)
{
    for (int i = 0; i < q->n; i++)
        for (int m = 0; m < q->n_members; m++)
            for (int side = 0; side < 2; side++) {
                int t = member_tensor(b, q, m, side);
                int whole = base[pl_place_of(b, t, q->device[i])];
                if (q->n_members > 1)
                    set_units(b, whole, member_unit(q, side, m, i), 1);
                else if (side == 0 || q->sharded)
                    set_units(b, whole, q->first_unit + (side * q->n + i) * q->fine, q->fine);
            }
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
        b->n_units += unit_count(bucket);
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
            bool param = on_param(bucket, op);
            p->buffers[src] = range_buffer(b, bucket, op->from, op->start, op->end, param);
            p->buffers[dst] = range_buffer(b, bucket, op->to, op->start, op->end, param);
            set_units(b, src, u.read_first, u.read_count);
            set_units(b, dst, u.write_first, u.write_count);
            if (op->kind == PL_PACK || op->kind == PL_UNPACK) { /* the member's own copy */
                int64_t at = b->member_start[bucket->first_member + op->member];
                int own = op->kind == PL_PACK ? src : dst;
                p->buffers[own] = copy_range(b, bucket, op->from,
                                             member_tensor(b, bucket, op->member, op->param),
                                             op->start - at, op->end - at);
                set_units(b, own, member_unit(bucket, op->param, op->member, op->from), 1);
            }
            b->collective_refs[2 * (bucket->first_op + i)] = src;
            b->collective_refs[2 * (bucket->first_op + i) + 1] = dst;
        }
        whole_copy_units(b, bucket, base);
    }
    return true;
}
