/* A placed training graph as GraphViz dot (dot.h: pl_dot_write_plan), built with cgraph.
 *
 * The picture is made of "units": every op when all ops are drawn, else every co-location
 * group (graph.h), drawn as its forward op. A unit sits in the cluster of its device and,
 * when the plan has several stages, in the cluster of its stage inside it. Edges follow
 * the tensors between units: the forward dataflow always (and, with all ops, the backward
 * one), and every tensor that crosses devices whatever it is, since that is what the
 * placement costs. Bytes per step come from the step program's copy tasks (program.h), so
 * they are the ones the executor moves and `placer simulate` counts.
 *
 * A plan that splits ops is drawn as the graph it runs (split_graph.h): each shard of a
 * split op is a box of its own, "NAME/tp{s}", in its device's cluster, and the ops the
 * rewrite inserts for the collectives (gathers, scatters, sums, slices) are boxes beside
 * them, so that the copies between shards are red edges like any other.
 *
 * Units are drawn in boxes (dot_modules.c): one each, or, in a drawing of more units than
 * its limit, one per module within a device and stage (and phase, with every op), inside
 * a cluster of the module's parent. Edges then join boxes and carry every tensor between
 * them, labelled with its bytes per step. */
#include "dot.h"

#include <stdlib.h>
#include <string.h>

#include "dot_impl.h"
#include "program.h"
#include "units.h"

/* Light fills that black text reads on; devices past these get evenly spread hues. */
static const char *const palette[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f",
                                      "#cab2d6", "#ffff99", "#8dd3c7", "#bebada",
                                      "#fccde5", "#ccebc5", "#ffed6f", "#d9d9d9"};
enum { PALETTE_SIZE = sizeof palette / sizeof *palette };

typedef struct edge_record {
    Agrec_t header;   /* cgraph's, first */
    double bytes;     /* carried across devices per step, both directions */
    double dataflow_bytes; /* the forward tensors it carries, per step (module boxes) */
    int first_tensor; /* for the tooltip */
    int n_tensors;
} edge_record;

typedef struct drawing {
    const pl_graph *graph; /* the graph the plan runs: the program's */
    const pl_plan *plan;   /* the plan over it */
    const pl_plan *given;  /* the plan as given, over the model's graph */
    const pl_cluster *cluster;
    const pl_program *program;
    const pl_partitions *parts;
    const double *op_seconds;
    bool all_ops;
    int max_boxes;
    Agraph_t *g;
    int *ordinal;          /* per op: its unit's number, units in op order */
    int n_units;
    pl__dot_groups groups; /* the units' boxes */
    Agnode_t **node;       /* per box */
    double *unit_seconds;  /* per unit (an op index): its ops' summed time */
    double *transfer_bytes; /* per transfer of the partitions: bytes per step */
    int *first_transfer, *next_transfer; /* per tensor: its transfers, as a list */
    int *first_reader, *readers;         /* per tensor: the ops reading it (CSR) */
    int *stamp;            /* per box: the last tensor that reached it, to count once */
    double total_bytes;
    int n_copies;
} drawing;

static int unit_of(const drawing *d, int op)
{
    return d->all_ops ? op : d->graph->ops[op].group;
}

static void device_color(int device, char *buf, size_t cap)
{
    if (device < PALETTE_SIZE)
        snprintf(buf, cap, "%s", palette[device]);
    else /* golden-ratio steps keep neighbouring devices apart */
        snprintf(buf, cap, "%.3f 0.35 1.000", (double)(device - PALETTE_SIZE) * 0.618034 -
                                                  (double)(int)((device - PALETTE_SIZE) *
                                                                0.618034));
}

static const char *format_seconds(double seconds, char *buf, size_t cap)
{
    if (seconds >= 1)
        snprintf(buf, cap, "%.2f s", seconds);
    else if (seconds >= 1e-3)
        snprintf(buf, cap, "%.2f ms", 1e3 * seconds);
    else
        snprintf(buf, cap, "%.0f µs", 1e6 * seconds);
    return buf;
}

/* The tensors' readers, the transfers' bytes and the units' times: everything the drawing
 * needs before it starts. */
static pl_status gather(drawing *d, pl_error *err)
{
    const pl_graph *g = d->graph;
    const pl_partitions *parts = d->parts;
    size_t n_ops = (size_t)g->n_ops, n_tensors = (size_t)g->n_tensors;
    int n_reads = 0;
    for (int o = 0; o < g->n_ops; o++)
        n_reads += g->ops[o].n_inputs;
    d->node = calloc(n_ops, sizeof *d->node);
    d->ordinal = malloc(n_ops * sizeof *d->ordinal);
    d->unit_seconds = calloc(n_ops, sizeof *d->unit_seconds);
    d->stamp = malloc(n_ops * sizeof *d->stamp);
    d->transfer_bytes = calloc((size_t)parts->n_transfers + 1, sizeof *d->transfer_bytes);
    d->next_transfer = malloc(((size_t)parts->n_transfers + 1) * sizeof *d->next_transfer);
    d->first_transfer = malloc(n_tensors * sizeof *d->first_transfer);
    d->first_reader = calloc(n_tensors + 1, sizeof *d->first_reader);
    d->readers = malloc(((size_t)n_reads + 1) * sizeof *d->readers);
    if (!d->node || !d->ordinal || !d->unit_seconds || !d->stamp || !d->transfer_bytes ||
        !d->next_transfer ||
        !d->first_transfer || !d->first_reader || !d->readers)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing the plan");

    for (size_t o = 0; o < n_ops; o++)
        d->stamp[o] = -1;
    for (size_t t = 0; t < n_tensors; t++)
        d->first_transfer[t] = -1;
    for (int x = parts->n_transfers - 1; x >= 0; x--) {
        int t = parts->transfers[x].tensor;
        d->next_transfer[x] = d->first_transfer[t];
        d->first_transfer[t] = x;
    }
    for (int i = 0; i < d->program->n_tasks; i++) {
        const pl_task *task = &d->program->tasks[i];
        if (task->kind == PL_TASK_COPY && task->transfer < parts->n_transfers) {
            double bytes = (double)pl_task_bytes(d->program, task);
            d->transfer_bytes[task->transfer] += bytes;
            d->total_bytes += bytes;
            d->n_copies++;
        }
    }
    /* readers by tensor, in op order: counts, prefix sums, then fill */
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            d->first_reader[g->ops[o].inputs[i] + 1]++;
    for (size_t t = 0; t < n_tensors; t++)
        d->first_reader[t + 1] += d->first_reader[t];
    int *cursor = malloc(n_tensors * sizeof *cursor);
    if (!cursor)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing the plan");
    memcpy(cursor, d->first_reader, n_tensors * sizeof *cursor);
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            d->readers[cursor[g->ops[o].inputs[i]]++] = o;
    free(cursor);
    if (d->op_seconds)
        for (int o = 0; o < g->n_ops; o++)
            d->unit_seconds[unit_of(d, o)] += d->op_seconds[o];
    return PL_OK;
}

/* The units' boxes: a unit goes by its forward op's name (a backward op is its forward op's
 * module's), within its device and stage and, with every op drawn, its phase. */
static pl_status group_units(drawing *d, pl_error *err)
{
    const pl_graph *g = d->graph;
    d->n_units = 0;
    for (int o = 0; o < g->n_ops; o++)
        d->ordinal[o] = unit_of(d, o) == o ? d->n_units++ : -1;
    for (int o = 0; o < g->n_ops; o++)
        d->ordinal[o] = d->ordinal[unit_of(d, o)];
    const char **names = malloc(((size_t)d->n_units + 1) * sizeof *names);
    int *containers = malloc(((size_t)d->n_units + 1) * sizeof *containers);
    pl_status status = PL_ENOMEM;
    if (names && containers) {
        for (int o = 0, u = 0; o < g->n_ops; o++) {
            if (unit_of(d, o) != o)
                continue;
            names[u] = g->ops[g->ops[o].group].name;
            containers[u++] = (d->parts->op_device[o] * d->plan->n_stages +
                               d->parts->op_stage[o]) * 3 + (int)g->ops[o].phase;
        }
        /* every op: the backward ops' edges from the forward activations span the drawing
         * and cost dot far more per box (docs/plan-format.md, "Large models"), so half as
         * many boxes */
        int limit = d->all_ops && d->max_boxes > 1 ? d->max_boxes / 2 : d->max_boxes;
        status = pl__dot_group(d->n_units, names, containers, limit, &d->groups, err);
    } else {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing the plan");
    }
    free(names);
    free(containers);
    return status;
}

/* A replicated plan's line per replica: its devices, in the order its ops first use them;
 * and the all-reduce's bytes per step. Empty for one replica. */
static void replica_lines(const drawing *d, char *buf, size_t cap)
{
    const pl_plan *plan = d->plan;
    const pl_program *p = d->program;
    size_t used = 0;
    buf[0] = '\0';
    if (plan->replicas == 1)
        return;
    double reduced = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind != PL_TASK_OP && d->graph->tensors[p->transfers[t->transfer].tensor].kind ==
                                         PL_TENSOR_STATE &&
            p->transfers[t->transfer].from != p->transfers[t->transfer].to)
            reduced += (double)pl_task_bytes(p, t);
    }
    char bytes[32];
    used += (size_t)snprintf(buf, cap, "\n%d replicas, each a share of the batch; the "
                             "all-reduce of their gradients sends %s per step%s; drawn: replica 0",
                             plan->replicas, pl_units_bytes(reduced, bytes, sizeof bytes),
                             plan->shard_optimizer_state ? ", and each updates a shard of "
                                                           "the optimizer state" : "");
    for (int r = 0; r < plan->replicas && used + 64 < cap; r++) {
        bool seen[PL_MAX_DEVICES] = {false};
        used += (size_t)snprintf(buf + used, cap - used, "\nreplica %d:", r);
        for (int o = 0; o < plan->n_ops && used + 64 < cap; o++) {
            int dev = pl_plan_replica(plan, r)[o];
            if (!seen[dev])
                used += (size_t)snprintf(buf + used, cap - used, " %s",
                                         d->cluster->devices[dev].name);
            seen[dev] = true;
        }
    }
}

/* The graph, its defaults and its title: what was placed where, and what it moves. */
static pl_status open_graph(drawing *d, pl_error *err)
{
    const pl_plan *plan = d->plan;
    d->g = agopen((char *)d->graph->name, Agdirected, NULL);
    if (!d->g)
        return pl_error_set(err, PL_ENOMEM, NULL, "cgraph could not create a graph");
    Agraph_t *g = d->g;
    agattr(g, AGRAPH, "rankdir", "TB");
    agattr(g, AGRAPH, "newrank", "true");
    agattr(g, AGRAPH, "nodesep", "0.2");
    agattr(g, AGRAPH, "ranksep", "0.3");
    agattr(g, AGRAPH, "fontname", "Helvetica");
    agattr(g, AGRAPH, "labelloc", "t");
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "filled,rounded");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontsize", "10");
    agattr(g, AGNODE, "height", "0.3");
    agattr(g, AGNODE, "margin", "0.08,0.03");
    agattr(g, AGEDGE, "color", "gray50");
    agattr(g, AGEDGE, "arrowsize", "0.6");
    agattr(g, AGEDGE, "fontname", "Helvetica");
    agattr(g, AGEDGE, "fontsize", "9");

    int used = 0;
    for (int dev = 0; dev < d->cluster->n_devices; dev++)
        used += pl_program_ops_on(d->program, dev) > 0;
    char title[4096], bytes[32], grouped[256] = "", replicas[2048], split[96];
    replica_lines(d, replicas, sizeof replicas);
    if (d->groups.depth > 0)
        snprintf(grouped, sizeof grouped, "\n%d %s in %d boxes: ops grouped by the first %d "
                 "parts of their names (3-D boxes: modules; edges: bytes per step)",
                 d->n_units, d->all_ops ? "ops" : "forward ops", d->groups.n_boxes,
                 d->groups.depth);
    snprintf(title, sizeof title,
             "%s on %s (%s): %d device%s, %s%d stage%s, %d micro-batch%s, %s\n"
             "cross-device traffic %s per step in %d copies%s%s\n%s%s%s",
             d->graph->name, d->cluster->name,
             plan->provenance.algorithm[0] ? plan->provenance.algorithm : "plan", used,
             used == 1 ? "" : "s", pl_plan_split_text(d->given, split, sizeof split),
             plan->n_stages, plan->n_stages == 1 ? "" : "s",
             plan->micro_batches, plan->micro_batches == 1 ? "" : "es",
             pl_plan_schedule_text(plan),
             pl_units_bytes(d->total_bytes, bytes, sizeof bytes), d->n_copies,
             d->op_seconds ? "; op times per step" : "", replicas,
             d->all_ops ? "every op; dashed: backward, dotted: optimizer update"
                        : "each box: a forward op with its backward ops and updates",
             d->program->split ? "\na split op: a box per shard, NAME/tp0 ...; (collective): "
                                 "an op of the collectives between their layouts" : "",
             grouped);
    pl__dot_set(g, "label", title);
    if (d->groups.depth > 0 || d->n_units > PL_DOT_MAX_BOXES)
        pl__dot_fast_layout(g);
    return PL_OK;
}

/* One box per device in its colour, with its op count and time, in a row on top. */
static void draw_legend(drawing *d)
{
    Agraph_t *legend = agsubg(d->g, "cluster_legend", 1);
    Agraph_t *row = agsubg(legend, "legend_row", 1);
    pl__dot_set(legend, "label", "devices");
    pl__dot_set(legend, "style", "rounded");
    pl__dot_set(legend, "color", "gray70");
    pl__dot_set(row, "rank", "same");
    Agnode_t *previous = NULL;
    for (int dev = 0; dev < d->cluster->n_devices; dev++) {
        int n_ops = d->parts->first_op[dev + 1] - d->parts->first_op[dev];
        int every = pl_program_ops_on(d->program, dev); /* every replica's */
        double seconds = 0;
        for (int i = d->parts->first_op[dev]; d->op_seconds && i < d->parts->first_op[dev + 1];
             i++)
            seconds += d->op_seconds[d->parts->ops[i]];
        char label[PL_MAX_NAME + 64], time[32], color[32];
        if (n_ops == 0 && every > 0)
            snprintf(label, sizeof label, "%s\n%d training op%s\nof other replicas",
                     d->cluster->devices[dev].name, every, every == 1 ? "" : "s");
        else if (n_ops == 0)
            snprintf(label, sizeof label, "%s\nno ops", d->cluster->devices[dev].name);
        else
            snprintf(label, sizeof label, "%s\n%d training op%s%s%s", d->cluster->devices[dev].name,
                     n_ops, n_ops == 1 ? "" : "s", d->op_seconds ? " · " : "",
                     d->op_seconds ? format_seconds(seconds, time, sizeof time) : "");
        Agnode_t *n = pl__dot_node(row, "legend:", d->cluster->devices[dev].name);
        device_color(dev, color, sizeof color);
        pl__dot_set(n, "label", label);
        pl__dot_set(n, "fillcolor", n_ops ? color : "white");
        if (n_ops == 0 && every == 0)
            pl__dot_set(n, "style", "rounded,dashed");
        if (previous) /* keeps the devices in their order */
            pl__dot_set(agedge(d->g, previous, n, NULL, 1), "style", "invis");
        previous = n;
    }
}

/* The key to the edges, beside the devices: what solid, dashed and red mean. Its nodes
 * are plain text (no box), its edges drawn as the plan's are. */
static void draw_edge_key(drawing *d)
{
    static const struct {
        const char *style, *color, *width, *what;
    } kinds[] = {
        {"solid", "gray50", "1", "solid: dataflow"},
        {"dashed", "gray50", "1", "dashed: not forward dataflow\n(a gradient, a shared parameter)"},
        {"solid", "firebrick", "2.5", "red: crosses devices\n(a copy; its bytes per step)"},
    };
    Agraph_t *key = agsubg(d->g, "cluster_edge_key", 1);
    pl__dot_set(key, "label", "edges");
    pl__dot_set(key, "style", "rounded");
    pl__dot_set(key, "color", "gray70");
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        char name[16];
        snprintf(name, sizeof name, "%zu", k);
        Agnode_t *from = pl__dot_node(key, "key-from:", name);
        Agnode_t *to = pl__dot_node(key, "key-to:", name);
        pl__dot_set(from, "label", "");
        pl__dot_set(from, "shape", "point");
        pl__dot_set(from, "style", "invis");
        pl__dot_set(to, "label", kinds[k].what);
        pl__dot_set(to, "shape", "plaintext");
        pl__dot_set(to, "style", "");
        Agedge_t *e = agedge(d->g, from, to, NULL, 1);
        pl__dot_set(e, "style", kinds[k].style);
        pl__dot_set(e, "color", kinds[k].color);
        pl__dot_set(e, "penwidth", kinds[k].width);
        pl__dot_set(to, "fontsize", "9");
    }
}

/* The cluster a unit is drawn in: its device's, or its stage's inside that. */
static Agraph_t *container(drawing *d, int unit)
{
    int dev = d->parts->op_device[unit];
    const char *name = d->cluster->devices[dev].name;
    char id[PL_MAX_NAME + 64];
    snprintf(id, sizeof id, "cluster_device:%s", name);
    Agraph_t *device = agsubg(d->g, id, 0);
    if (!device) {
        char color[32];
        device = agsubg(d->g, id, 1);
        device_color(dev, color, sizeof color);
        pl__dot_set(device, "label", name);
        pl__dot_set(device, "style", "rounded");
        pl__dot_set(device, "color", color);
        pl__dot_set(device, "penwidth", "3");
    }
    if (d->plan->n_stages <= 1)
        return device;
    snprintf(id, sizeof id, "cluster_device:%s/stage:%d", name, d->parts->op_stage[unit]);
    Agraph_t *stage = agsubg(device, id, 0);
    if (!stage) {
        char label[32];
        stage = agsubg(device, id, 1);
        snprintf(label, sizeof label, "stage %d", d->parts->op_stage[unit]);
        pl__dot_set(stage, "label", label);
        pl__dot_set(stage, "style", "dashed,rounded");
        pl__dot_set(stage, "color", "gray60");
    }
    return stage;
}

/* The cluster of a module box's parent module inside the box's container, or the
 * container itself when the module has no parent. */
static Agraph_t *module_container(drawing *d, int unit, const char *module)
{
    Agraph_t *outer = container(d, unit);
    size_t parent = pl__dot_parent_length(module);
    if (parent == 0)
        return outer;
    char id[2 * PL_MAX_NAME + 96], label[PL_MAX_NAME + 1];
    snprintf(label, sizeof label, "%.*s", (int)parent, module);
    snprintf(id, sizeof id, "%s/module:%s", agnameof(outer), label);
    Agraph_t *cluster = agsubg(outer, id, 0);
    if (!cluster) {
        cluster = agsubg(outer, id, 1);
        pl__dot_set(cluster, "label", label);
        pl__dot_set(cluster, "style", "rounded");
        pl__dot_set(cluster, "color", "gray75");
    }
    return cluster;
}

/* A box of several units: "module:PATH@DEVICE[/stage:S][/backward|/update]", labelled
 * with its path, unit count and time. */
static Agnode_t *module_box(drawing *d, int o, int box, double seconds)
{
    static const char *const phases[] = {"", "/backward", "/update"};
    const pl_op *op = &d->graph->ops[o];
    const char *module = d->groups.module[box];
    int n = d->groups.n_members[box];
    char id[2 * PL_MAX_NAME + 96], stage[32] = "", label[PL_MAX_NAME + 96], time[32];
    if (d->plan->n_stages > 1)
        snprintf(stage, sizeof stage, "/stage:%d", d->parts->op_stage[o]);
    snprintf(id, sizeof id, "module:%s@%s%s%s", module,
             d->cluster->devices[d->parts->op_device[o]].name, stage, phases[op->phase]);
    snprintf(label, sizeof label, "%s\n%d %s%s%s%s", module, n,
             d->all_ops ? "ops" : "forward ops", op->phase == PL_PHASE_FORWARD ? ""
             : op->phase == PL_PHASE_BACKWARD ? " (backward)" : " (updates)",
             d->op_seconds ? " · " : "",
             d->op_seconds ? format_seconds(seconds, time, sizeof time) : "");
    Agnode_t *node = agnode(module_container(d, o, module), id, 1);
    pl__dot_set(node, "label", label);
    pl__dot_set(node, "shape", "box3d");
    return node;
}

/* One op's own box, as in a drawing op by op. */
static Agnode_t *op_box(drawing *d, int o, double seconds)
{
    const pl_op *op = &d->graph->ops[o];
    char label[PL_MAX_NAME + 96], time[32];
    bool collective = d->program->split && o < d->graph->n_forward_ops &&
                      pl_split_graph_collective(d->program->split, o);
    snprintf(label, sizeof label, "%s\n%s%s%s%s", op->name, pl_op_info_of(op->kind)->name,
             collective ? " (collective)" : "",
             d->op_seconds ? " · " : "",
             d->op_seconds ? format_seconds(seconds, time, sizeof time) : "");
    Agraph_t *where = d->groups.depth > 0 ? module_container(d, o, op->name) : container(d, o);
    Agnode_t *node = pl__dot_node(where, "op:", op->name);
    pl__dot_set(node, "label", label);
    return node;
}

static pl_status draw_units(drawing *d, pl_error *err)
{
    const pl_graph *g = d->graph;
    double *seconds = calloc((size_t)d->groups.n_boxes + 1, sizeof *seconds);
    if (!seconds)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory drawing the plan");
    for (int o = 0; o < g->n_ops; o++)
        if (unit_of(d, o) == o)
            seconds[d->groups.box[d->ordinal[o]]] += d->unit_seconds[o];
    for (int o = 0; o < g->n_ops; o++) {
        int box = d->groups.box[d->ordinal[o]];
        if (unit_of(d, o) != o || d->node[box])
            continue;
        const pl_op *op = &g->ops[o];
        Agnode_t *n = d->groups.n_members[box] > 1 ? module_box(d, o, box, seconds[box])
                                                     : op_box(d, o, seconds[box]);
        char color[32];
        device_color(d->parts->op_device[o], color, sizeof color);
        pl__dot_set(n, "fillcolor", color);
        if (op->phase == PL_PHASE_BACKWARD)
            pl__dot_set(n, "style", "filled,rounded,dashed");
        else if (op->phase == PL_PHASE_UPDATE)
            pl__dot_set(n, "style", "filled,rounded,dotted");
        d->node[box] = n;
    }
    free(seconds);
    return PL_OK;
}

/* The bytes per step of tensor t's copy to `device`, or 0. */
static double transfer_bytes(const drawing *d, int t, int device)
{
    for (int x = d->first_transfer[t]; x >= 0; x = d->next_transfer[x])
        if (d->parts->transfers[x].to == device)
            return d->transfer_bytes[x];
    return 0;
}

/* Every tensor's way from the box it comes from to the boxes reading it. */
static pl_status draw_edges(drawing *d, pl_error *err)
{
    const pl_graph *g = d->graph;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        int begin = d->first_reader[t], end = d->first_reader[t + 1];
        if (tensor->kind == PL_TENSOR_INPUT || tensor->kind == PL_TENSOR_CONST || begin == end)
            continue;
        /* parameters and state live with their first reader's group (plan.h) */
        int source = tensor->producer >= 0 ? tensor->producer : d->readers[begin];
        int from = d->groups.box[d->ordinal[source]], home = d->parts->tensor_device[t];
        for (int r = begin; r < end; r++) {
            int reader = d->readers[r], to = d->groups.box[d->ordinal[reader]];
            bool crossing = home >= 0 && home != d->parts->op_device[reader];
            bool dataflow = tensor->producer >= 0 &&
                            (d->all_ops || (reader < g->n_forward_ops &&
                                            tensor->producer < g->n_forward_ops));
            if (from == to || (!dataflow && !crossing))
                continue;
            Agnode_t *tail = d->node[from < to ? from : to], *head = d->node[from < to ? to : from];
            Agedge_t *e;
            bool created;
            edge_record *rec = pl__dot_edge_record(d->g, tail, head, "pl_dot_plan", sizeof *rec,
                                                   &e, &created);
            if (!rec)
                return pl_error_set(err, PL_ENOMEM, NULL, "cgraph could not add an edge");
            if (created) {
                rec->first_tensor = t;
                pl__dot_set(e, "style", "dashed");
            }
            if (dataflow)
                pl__dot_set(e, "style", "solid");
            if (d->stamp[to] == t)
                continue; /* this box has it already */
            d->stamp[to] = t;
            rec->n_tensors++;
            if (dataflow)
                rec->dataflow_bytes += (double)pl_tensor_bytes(tensor);
            if (crossing)
                rec->bytes += transfer_bytes(d, t, d->parts->op_device[reader]);
        }
    }
    return PL_OK;
}

/* Cross-device edges: heavier, red, labelled with their bytes; tooltips name tensors. */
static void label_edges(drawing *d)
{
    for (Agnode_t *n = agfstnode(d->g); n; n = agnxtnode(d->g, n))
        for (Agedge_t *e = agfstout(d->g, n); e; e = agnxtout(d->g, e)) {
            edge_record *rec = (edge_record *)aggetrec(e, "pl_dot_plan", 0);
            if (!rec)
                continue; /* the legend's */
            char text[PL_MAX_NAME + 64];
            const char *first = d->graph->tensors[rec->first_tensor].name;
            if (rec->n_tensors > 1)
                snprintf(text, sizeof text, "%s and %d more", first, rec->n_tensors - 1);
            else
                snprintf(text, sizeof text, "%s", first);
            pl__dot_set(e, "tooltip", text);
            if (rec->bytes <= 0 && d->groups.depth > 0 && rec->dataflow_bytes > 0)
                pl__dot_set(e, "label", pl_units_bytes(rec->dataflow_bytes, text, sizeof text));
            if (rec->bytes <= 0)
                continue;
            pl__dot_set(e, "label", pl_units_bytes(rec->bytes, text, sizeof text));
            pl__dot_set(e, "color", "firebrick");
            pl__dot_set(e, "fontcolor", "firebrick");
            pl__dot_set(e, "penwidth", "2.5");
        }
}

pl_status pl_dot_write_plan(const pl_graph *graph, const pl_plan *plan,
                            const pl_cluster *cluster, const double *op_seconds, bool all_ops,
                            int max_boxes, FILE *out, pl_error *err)
{
    if (graph->n_ops == graph->n_forward_ops)
        return pl_error_set(err, PL_EINPUT, NULL, "drawing a plan needs the training graph "
                            "(pl_autodiff_build)");
    pl_error own;
    if (!err) { /* the program's status is needed below */
        pl_error_init(&own, NULL);
        err = &own;
    }
    drawing d = {.graph = graph, .plan = plan, .given = plan, .cluster = cluster,
                 .op_seconds = op_seconds, .all_ops = all_ops, .max_boxes = max_boxes};
    pl_program *program = pl_program_new(graph, cluster, plan, err);
    if (!program)
        return err->status;
    d.program = program;
    if (program->split) {
        d.graph = program->graph;
        d.plan = program->split_plan;
    }
    d.parts = program->partitions;
    pl_status status = gather(&d, err);
    if (status == PL_OK)
        status = group_units(&d, err);
    if (status == PL_OK)
        status = open_graph(&d, err);
    if (status == PL_OK) {
        draw_legend(&d);
        draw_edge_key(&d);
        status = draw_units(&d, err);
    }
    if (status == PL_OK)
        status = draw_edges(&d, err);
    if (status == PL_OK) {
        label_edges(&d);
        status = pl__dot_finish(d.g, out, err);
    } else if (d.g) {
        agclose(d.g);
    }
    pl__dot_groups_release(&d.groups);
    free(d.node);
    free(d.ordinal);
    free(d.unit_seconds);
    free(d.stamp);
    free(d.transfer_bytes);
    free(d.next_transfer);
    free(d.first_transfer);
    free(d.first_reader);
    free(d.readers);
    pl_program_free(program);
    return status;
}
