/* Memory-aware list scheduling in the style of Baechi's m-ETF and m-SCT, over groups.
 *
 * Both simulate a schedule of the groups (each group's forward, backward and update time
 * at the full batch, as one task) and place a group where it is scheduled:
 * - etf (earliest task first): of every ready group and every device with room for it,
 *   take the pair that starts earliest, a predecessor elsewhere delaying the start by its
 *   copy;
 * - sct (small communication time): the same, but each group has a favourite child, the
 *   successor it sends the most bytes, and that child's start on its parent's device
 *   counts as earlier by the copy it avoids, so chains of heavy communication stay
 *   together unless another device is faster by more than the copy.
 * Memory: a device is a candidate only while the ledger (baseline_impl.h) has room. */
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

typedef struct list_state {
    const pl_placer *p;
    bool sct;
    int *device;       /* the plan's, filled as groups are scheduled */
    double *finish;
    int *waiting;      /* per group: predecessors not yet scheduled */
    int *ready, n_ready;
    int *favourite_parent; /* sct: the parent whose favourite child it is, or -1 */
    double free_at[PL_MAX_DEVICES];
    pl_ledger ledger;
} list_state;

/* A group's start on a device: when the device is free and every predecessor's output
 * has arrived. A group is one task for its forward, backward and update, so an edge from
 * another device costs its copy twice: the activation on the way forward delays this
 * group's forward, and its gradient on the way back delays the predecessor's backward,
 * both on the path of the step. */
static double start_time(const list_state *s, int group, int dev)
{
    const pl_placer *p = s->p;
    const pl_adjacency *a = p->dataflow;
    double start = s->free_at[dev];
    for (int e = a->producer_first[group]; e < a->producer_first[group + 1]; e++) {
        int from = a->producer[e];
        double arrives = s->finish[from] + 2 * pl_placer_copy_seconds(p, s->device[from], dev,
                                                                      (double)p->edge_bytes[e]);
        if (arrives > start)
            start = arrives;
    }
    return start;
}

/* sct: the copies (forward and back) a favourite child avoids on its parent's device,
 * over the cheapest link out of that device, the least it would cost elsewhere. */
static double favourite_bonus(const list_state *s, int group, int dev)
{
    const pl_placer *p = s->p;
    int parent = s->sct ? s->favourite_parent[group] : -1;
    if (parent < 0 || s->device[parent] != dev)
        return 0;
    const pl_adjacency *a = p->dataflow;
    double bytes = 0;
    for (int e = a->producer_first[group]; e < a->producer_first[group + 1]; e++)
        if (a->producer[e] == parent)
            bytes += (double)p->edge_bytes[e];
    double cheapest = -1;
    for (int other = 0; other < p->n_devices; other++) {
        double copy = other == dev ? -1 : pl_placer_copy_seconds(p, dev, other, bytes);
        if (copy >= 0 && (cheapest < 0 || copy < cheapest))
            cheapest = copy;
    }
    return cheapest > 0 ? 2 * cheapest : 0;
}

static void find_favourites(list_state *s)
{
    const pl_placer *p = s->p;
    const pl_adjacency *dataflow = p->dataflow;
    for (int group = 0; group < p->n_groups; group++)
        s->favourite_parent[group] = -1;
    int64_t *best = calloc((size_t)p->n_groups, sizeof *best); /* the favourite edge's bytes */
    for (int a = 0; best && a < p->n_groups; a++) {
        int child = -1;
        int64_t bytes = 0;
        for (int i = dataflow->consumer_first[a]; i < dataflow->consumer_first[a + 1]; i++) {
            int e = dataflow->consumer_edge[i];
            if (p->edge_bytes[e] > bytes) {
                bytes = p->edge_bytes[e];
                child = dataflow->consumer[i];
            }
        }
        if (child >= 0 && bytes > best[child]) {
            best[child] = bytes;
            s->favourite_parent[child] = a;
        }
    }
    free(best);
}

/* Where a group would finish soonest (sct: less the copy a favourite child avoids):
 * on unequal devices the device free first is often the slowest, and the one that
 * finishes the group first is the one to weigh it against other groups. On equal devices
 * it is the device where it starts first. Its start and end there in *start and *end;
 * -1 when no device has room. */
static int best_device(const list_state *s, int group, double *start, double *end)
{
    const pl_placer *p = s->p;
    int where = -1;
    double where_key = 0;
    for (int d = 0; d < p->n_devices; d++) {
        if (!pl_ledger_fits(&s->ledger, p, s->device, group, d))
            continue;
        double begins = start_time(s, group, d);
        double ends = begins + pl_placer_seconds(p, group, d);
        double key = ends - favourite_bonus(s, group, d);
        if (where < 0 || key < where_key || (key == where_key && begins < *start)) {
            where = d;
            where_key = key;
            *start = begins;
            *end = ends;
        }
    }
    return where;
}

/* Schedules the ready group that starts earliest (by the algorithm's measure) on the
 * device where it finishes soonest. */
static pl_status schedule_next(list_state *s, pl_error *err)
{
    const pl_placer *p = s->p;
    int pick = -1, where = -1;
    double pick_key = 0, pick_end = 0;
    for (int r = 0; r < s->n_ready; r++) {
        int group = s->ready[r];
        double start = 0, end = 0;
        int d = best_device(s, group, &start, &end);
        if (d < 0)
            continue;
        double key = start - favourite_bonus(s, group, d);
        if (pick < 0 || key < pick_key || (key == pick_key && end < pick_end) ||
            (key == pick_key && end == pick_end && group < s->ready[pick])) {
            pick = r;
            where = d;
            pick_key = key;
            pick_end = end;
        }
    }
    if (pick < 0)
        return pl_error_set(err, PL_ENOFIT, NULL, "%s: no device has room left for op \"%s\"",
                            s->sct ? "sct" : "etf", p->graph->ops[s->ready[0]].name);
    int group = s->ready[pick];
    s->ready[pick] = s->ready[--s->n_ready];
    pl_ledger_add(&s->ledger, p, s->device, group, where);
    s->device[group] = where;
    s->finish[group] = pick_end;
    s->free_at[where] = pick_end;
    const pl_adjacency *a = p->dataflow;
    for (int i = a->consumer_first[group]; i < a->consumer_first[group + 1]; i++) {
        int child = a->consumer[i];
        if (--s->waiting[child] == 0)
            s->ready[s->n_ready++] = child;
    }
    return PL_OK;
}

static pl_status list_schedule(const pl_placer *p, pl_plan *plan, bool sct, pl_error *err)
{
    size_t n = (size_t)p->n_groups;
    list_state s = {.p = p, .sct = sct, .device = plan->device,
                    .finish = calloc(n, sizeof(double)), .waiting = calloc(n, sizeof(int)),
                    .ready = malloc(n * sizeof(int)), .favourite_parent = malloc(n * sizeof(int))};
    pl_status status = s.finish && s.waiting && s.ready && s.favourite_parent
                           ? PL_OK : pl_placer_no_memory(err);
    if (status == PL_OK) {
        for (int group = 0; group < p->n_groups; group++) {
            s.waiting[group] = pl_adjacency_n_producers(p->dataflow, group);
            plan->device[group] = -1;
            if (s.waiting[group] == 0)
                s.ready[s.n_ready++] = group;
        }
        find_favourites(&s);
    }
    for (int done = 0; status == PL_OK && done < p->n_groups; done++)
        status = schedule_next(&s, err);
    free(s.finish);
    free(s.waiting);
    free(s.ready);
    free(s.favourite_parent);
    return status;
}

/* The list schedule, or everything on the single device that runs the model fastest when
 * that simulates faster. The schedule times each group as one task at the full batch; on
 * small models, where the executor's fixed cost per task and per copy outweighs the
 * groups, its spread over devices can lose to one device, which no list schedule should. */
static pl_status list_or_single(const pl_placer *p, pl_plan *plan, bool sct, pl_error *err)
{
    pl_status status = list_schedule(p, plan, sct, err);
    if (status != PL_OK)
        return status;
    pl_plan *single = pl_placer_new_plan(p, err);
    if (!single)
        return err ? err->status : PL_ENOMEM;
    double scheduled = -1, alone = -1;
    if (pl_place_single(p, single, NULL) == PL_OK && /* no device holds it: the schedule */
        memcmp(plan->device, single->device, (size_t)p->n_groups * sizeof *plan->device)) {
        status = pl_placer_simulate(p, plan, &scheduled, NULL, err);
        if (status == PL_OK)
            status = pl_placer_simulate(p, single, &alone, NULL, err);
    }
    if (status == PL_OK && alone >= 0 && (scheduled < 0 || alone < scheduled))
        memcpy(plan->device, single->device, (size_t)p->n_groups * sizeof *plan->device);
    pl_plan_free(single);
    return status;
}

pl_status pl_place_etf(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    return list_or_single(p, plan, false, err);
}

pl_status pl_place_sct(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    return list_or_single(p, plan, true, err);
}
