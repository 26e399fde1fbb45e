/* The dynamic program over ideals (partition_impl.h). An ideal is a set of units closed
 * under predecessors; the difference of two nested ideals is a contiguous set, and every
 * contiguous split is a chain of ideals from the empty set to all units. Ideals are
 * found breadth first, so that each comes after every ideal inside it; the program then
 * grows, from each ideal in turn, every larger ideal by a depth-first walk that adds one
 * unit a step, the set's cost kept incrementally. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "partition_impl.h"

typedef struct ideals {
    int words;                   /* 64-bit words of a unit set */
    long n, cap;
    uint64_t *bits;              /* n sets of `words` words */
    long *edge_start;            /* CSR, built in order: ideal -> (unit, larger ideal) */
    int *edge_unit;
    long *edge_to;
    long n_edges, edge_cap;
    long *slot;                  /* open addressing over ideals, -1 empty */
    long slot_mask;
} ideals;

static uint64_t *set_of(const ideals *s, long id)
{
    return s->bits + (size_t)id * (size_t)s->words;
}

static uint64_t hash_set(const uint64_t *bits, int words)
{
    return pl_hash_bytes(PL_HASH_INIT, bits, (size_t)words * sizeof *bits);
}

static bool grow_arrays(ideals *s)
{
    long cap = s->cap ? 2 * s->cap : 1024;
    uint64_t *bits = realloc(s->bits, (size_t)cap * (size_t)s->words * sizeof *bits);
    if (bits)
        s->bits = bits;
    long *start = realloc(s->edge_start, ((size_t)cap + 1) * sizeof *start);
    if (start)
        s->edge_start = start;
    if (!bits || !start)
        return false;
    s->cap = cap;
    return true;
}

static bool rehash(ideals *s, long slots)
{
    long *slot = malloc((size_t)slots * sizeof *slot);
    if (!slot)
        return false;
    for (long i = 0; i < slots; i++)
        slot[i] = -1;
    for (long id = 0; id < s->n; id++) {
        long at = (long)(hash_set(set_of(s, id), s->words) & (uint64_t)(slots - 1));
        while (slot[at] >= 0)
            at = (at + 1) & (slots - 1);
        slot[at] = id;
    }
    free(s->slot);
    s->slot = slot;
    s->slot_mask = slots - 1;
    return true;
}

/* The id of `set`, added when new; -1 when out of memory. */
static long find_or_add(ideals *s, const uint64_t *set)
{
    size_t bytes = (size_t)s->words * sizeof *set;
    long at = (long)(hash_set(set, s->words) & (uint64_t)s->slot_mask);
    for (; s->slot[at] >= 0; at = (at + 1) & s->slot_mask)
        if (memcmp(set_of(s, s->slot[at]), set, bytes) == 0)
            return s->slot[at];
    if (s->n == s->cap && !grow_arrays(s))
        return -1;
    memcpy(set_of(s, s->n), set, bytes);
    long id = s->n++;
    s->slot[at] = id;
    if (2 * s->n > s->slot_mask && !rehash(s, 2 * (s->slot_mask + 1)))
        return -1;
    return id;
}

static bool add_edge(ideals *s, int unit, long to)
{
    if (s->n_edges == s->edge_cap) {
        long cap = s->edge_cap ? 2 * s->edge_cap : 4096;
        int *units = realloc(s->edge_unit, (size_t)cap * sizeof *units);
        if (units)
            s->edge_unit = units;
        long *tos = realloc(s->edge_to, (size_t)cap * sizeof *tos);
        if (tos)
            s->edge_to = tos;
        if (!units || !tos)
            return false;
        s->edge_cap = cap;
    }
    s->edge_unit[s->n_edges] = unit;
    s->edge_to[s->n_edges++] = to;
    return true;
}

static bool has(const uint64_t *set, int unit)
{
    return set[unit / 64] >> (unit % 64) & 1;
}

/* Every ideal, breadth first from the empty one; false when out of memory or past `max`
 * (s->n then says how far it got). */
static bool enumerate(ideals *s, const pl_partition_graph *g, long max, bool *too_many)
{
    uint64_t *grown = calloc((size_t)s->words, sizeof *grown);
    bool ok = grown && grow_arrays(s) && rehash(s, 1024) && find_or_add(s, grown) == 0;
    for (long id = 0; ok && id < s->n; id++) {
        s->edge_start[id] = s->n_edges;
        for (int u = 0; ok && u < g->n_units; u++) {
            const uint64_t *set = set_of(s, id);
            if (has(set, u))
                continue;
            bool ready = true;
            for (int k = g->pred_start[u]; ready && k < g->pred_start[u + 1]; k++)
                ready = has(set, g->pred[k]);
            if (!ready)
                continue;
            memcpy(grown, set, (size_t)s->words * sizeof *grown);
            grown[u / 64] |= (uint64_t)1 << (u % 64);
            long to = find_or_add(s, grown);
            ok = to >= 0 && add_edge(s, u, to);
            if (s->n > max)
                ok = false, *too_many = true;
        }
    }
    if (ok)
        s->edge_start[s->n] = s->n_edges;
    free(grown);
    return ok;
}

static void release(ideals *s)
{
    free(s->bits), free(s->edge_start), free(s->edge_unit), free(s->edge_to), free(s->slot);
}

/* From ideal `from`, every larger ideal reached by adding units: offered to the table
 * unless the set already costs more than `bound` everywhere. `seen` marks what this walk
 * has visited; `stack` holds ideal, next edge and the unit that led there. */
typedef struct walk {
    const ideals *ideals;
    pl_partition_segment *segment;
    pl_partition_table *table;
    long *seen;
    long *stack_ideal, *stack_edge;
    int *stack_unit;
} walk;

static void grow_from(walk *w, long from, double bound)
{
    const ideals *s = w->ideals;
    int top = 0;
    w->stack_ideal[0] = from, w->stack_edge[0] = s->edge_start[from], w->stack_unit[0] = -1;
    top = 1;
    while (top > 0) {
        long id = w->stack_ideal[top - 1];
        long e = w->stack_edge[top - 1];
        if (e < s->edge_start[id + 1]) {
            w->stack_edge[top - 1] = e + 1;
            long to = s->edge_to[e];
            if (w->seen[to] == from)
                continue;
            w->seen[to] = from;
            pl_partition_segment_add(w->segment, s->edge_unit[e]);
            pl_partition_table_offer(w->table, from, to,
                                     pl_partition_segment_accelerator(w->segment),
                                     pl_partition_segment_cpu(w->segment));
            w->stack_ideal[top] = to;
            w->stack_unit[top] = s->edge_unit[e];
            /* a set past the bound is not grown further: its edges are skipped */
            w->stack_edge[top] = pl_partition_segment_beyond(w->segment, bound)
                                     ? s->edge_start[to + 1]
                                     : s->edge_start[to];
            top++;
        } else {
            if (w->stack_unit[top - 1] >= 0)
                pl_partition_segment_remove(w->segment, w->stack_unit[top - 1]);
            top--;
        }
    }
}

typedef struct placing {
    const pl_partition_graph *graph;
    const ideals *ideals;
    int *device;
} placing;

static void place_difference(long from, long to, int device, void *ctx)
{
    const placing *p = ctx;
    const pl_partition_graph *g = p->graph;
    const uint64_t *inner = set_of(p->ideals, from), *outer = set_of(p->ideals, to);
    for (int u = 0; u < g->n_units; u++)
        if (has(outer, u) && !has(inner, u))
            for (int k = g->unit_start[u]; k < g->unit_start[u + 1]; k++)
                p->device[g->unit_node[k]] = device;
}

static double run(const pl_partition_graph *g, const ideals *s, double bound, int *device,
                  pl_error *err)
{
    const pl_partition_instance *inst = g->instance;
    pl_partition_table table;
    pl_partition_segment segment;
    if (pl_partition_table_init(&table, inst->n_accelerators, inst->n_cpus > 0, s->n, err))
        return NAN;
    if (pl_partition_segment_init(&segment, g, err)) {
        pl_partition_table_release(&table);
        return NAN;
    }
    size_t depth = (size_t)g->n_units + 2;
    walk w = {s, &segment, &table, malloc((size_t)s->n * sizeof(long)),
              malloc(depth * sizeof(long)), malloc(depth * sizeof(long)),
              malloc(depth * sizeof(int))};
    double best = NAN;
    if (w.seen && w.stack_ideal && w.stack_edge && w.stack_unit) {
        for (long id = 0; id < s->n; id++)
            w.seen[id] = -1;
        for (long id = 0; id < s->n; id++) {
            pl_partition_table_settle(&table, id);
            if (pl_partition_table_value(&table, id) < bound)
                grow_from(&w, id, bound);
        }
        best = pl_partition_table_value(&table, s->n - 1); /* the last: every unit */
        if (best < bound) {
            placing p = {g, s, device};
            pl_partition_table_walk(&table, s->n - 1, place_difference, &p);
        } else {
            best = HUGE_VAL;
        }
    } else {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    free(w.seen), free(w.stack_ideal), free(w.stack_edge), free(w.stack_unit);
    pl_partition_segment_release(&segment);
    pl_partition_table_release(&table);
    return best;
}

double pl_partition_ideal_dp(const pl_partition_graph *g, long max_ideals, double bound,
                             int *device, long *n_ideals, pl_error *err)
{
    ideals s = {.words = (g->n_units + 63) / 64};
    if (s.words == 0)
        s.words = 1;
    bool too_many = false;
    double best;
    if (!enumerate(&s, g, max_ideals, &too_many))
        best = too_many ? -1 : (pl_error_set(err, PL_ENOMEM, NULL, "out of memory"), NAN);
    else
        best = run(g, &s, bound, device, err);
    *n_ideals = s.n;
    release(&s);
    return best;
}
