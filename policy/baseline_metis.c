/* The min-cut baseline: a k-way partition of the group graph by METIS (5.1), minimising
 * the bytes cut (an activation forward and its gradient back) with each device's share of
 * compute in proportion to its speed; then groups moved where memory demands it. METIS is
 * deterministic for a given seed, which it takes from ours. */
#include <fcntl.h>
#include <metis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "baseline_impl.h"

enum { TOTAL_EDGE_WEIGHT = 1000000000, TOTAL_VERTEX_WEIGHT = 1000000 };
#define IMBALANCE 1.05f

typedef struct pair {
    int a, b; /* a < b */
    int64_t bytes;
} pair;

static int by_ends(const void *x, const void *y)
{
    const pair *p = x, *q = y;
    return p->a != q->a ? (p->a > q->a) - (p->a < q->a) : (p->b > q->b) - (p->b < q->b);
}

/* The undirected graph METIS reads: one edge per pair of groups that exchange tensors,
 * weighted by their bytes (scaled so that the sum fits idx_t), vertices by mean seconds. */
typedef struct metis_graph {
    idx_t *xadj, *adjncy, *adjwgt, *vwgt, *part;
    real_t *tpwgts;
} metis_graph;

static void metis_graph_free(metis_graph *m)
{
    free(m->xadj);
    free(m->adjncy);
    free(m->adjwgt);
    free(m->vwgt);
    free(m->part);
    free(m->tpwgts);
}

/* Merges the placer's edges into pairs; returns how many, or -1 when out of memory. */
static int merge_pairs(const pl_placer *p, pair **out)
{
    const pl_adjacency *a = p->dataflow;
    pair *pairs = malloc((size_t)(a->n_edges ? a->n_edges : 1) * sizeof *pairs);
    if (!pairs)
        return -1;
    for (int e = 0; e < a->n_edges; e++) /* edges run from lower to higher groups */
        pairs[e] = (pair){a->producer[e], a->edge_consumer[e], 2 * p->edge_bytes[e]};
    qsort(pairs, (size_t)a->n_edges, sizeof *pairs, by_ends);
    int n = 0;
    for (int e = 0; e < a->n_edges; e++) {
        if (n > 0 && pairs[n - 1].a == pairs[e].a && pairs[n - 1].b == pairs[e].b)
            pairs[n - 1].bytes += pairs[e].bytes;
        else
            pairs[n++] = pairs[e];
    }
    *out = pairs;
    return n;
}

static bool build_graph(const pl_placer *p, int parts, metis_graph *m)
{
    int n = p->n_groups;
    pair *pairs = NULL;
    int n_pairs = merge_pairs(p, &pairs);
    if (n_pairs < 0)
        return false;
    m->xadj = calloc((size_t)n + 1, sizeof *m->xadj);
    m->adjncy = malloc((size_t)(2 * n_pairs + 1) * sizeof *m->adjncy);
    m->adjwgt = malloc((size_t)(2 * n_pairs + 1) * sizeof *m->adjwgt);
    m->vwgt = malloc((size_t)n * sizeof *m->vwgt);
    m->part = malloc((size_t)n * sizeof *m->part);
    m->tpwgts = malloc((size_t)p->n_devices * sizeof *m->tpwgts);
    if (!m->xadj || !m->adjncy || !m->adjwgt || !m->vwgt || !m->part ||
        !m->tpwgts) {
        free(pairs);
        return false;
    }
    double bytes = 0, seconds = 0;
    for (int i = 0; i < n_pairs; i++)
        bytes += (double)pairs[i].bytes;
    for (int group = 0; group < n; group++)
        seconds += pl_placer_mean_seconds(p, group);
    double per_byte = bytes > 0 ? TOTAL_EDGE_WEIGHT / bytes : 0;
    double per_second = seconds > 0 ? TOTAL_VERTEX_WEIGHT / seconds : 0;
    for (int i = 0; i < n_pairs; i++) {
        m->xadj[pairs[i].a + 1]++;
        m->xadj[pairs[i].b + 1]++;
    }
    for (int v = 0; v < n; v++)
        m->xadj[v + 1] += m->xadj[v];
    idx_t *fill = m->part; /* scratch until METIS writes the partition */
    for (int v = 0; v < n; v++)
        fill[v] = m->xadj[v];
    for (int i = 0; i < n_pairs; i++) {
        idx_t weight = (idx_t)(per_byte * (double)pairs[i].bytes);
        weight = weight > 0 ? weight : 1;
        m->adjncy[fill[pairs[i].a]] = pairs[i].b;
        m->adjwgt[fill[pairs[i].a]++] = weight;
        m->adjncy[fill[pairs[i].b]] = pairs[i].a;
        m->adjwgt[fill[pairs[i].b]++] = weight;
    }
    for (int v = 0; v < n; v++) {
        idx_t weight = (idx_t)(per_second * pl_placer_mean_seconds(p, v));
        m->vwgt[v] = weight > 0 ? weight : 1;
    }
    double speed = 0; /* each device's share: its speed over the whole model */
    for (int d = 0; d < parts; d++) {
        double total = 0;
        for (int group = 0; group < n; group++)
            total += pl_placer_seconds(p, group, d);
        m->tpwgts[d] = (real_t)(total > 0 ? 1 / total : 1);
        speed += m->tpwgts[d];
    }
    for (int d = 0; d < parts; d++)
        m->tpwgts[d] = (real_t)(m->tpwgts[d] / speed);
    free(pairs);
    return true;
}

/* METIS prints some of its failures on standard output itself ("***Cannot bisect a graph
 * with 0 vertices!", when a device's share is tiny) and has no option that stops it; the
 * library never prints. So standard output points at /dev/null around the call: flushed
 * before, METIS's own buffered text flushed into /dev/null after, then restored. The
 * descriptor is the process's: `quiet_lock` orders the calls that swap it (placements may
 * run on several threads), and the caller's other threads must not write to standard
 * output meanwhile, which holds in placer (only the CLI writes there, from the thread
 * that asks for the placement). When /dev/null cannot be opened, METIS runs as it is. */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;

static int stdout_off(void)
{
    pthread_mutex_lock(&quiet_lock);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0 && dup2(null, STDOUT_FILENO) >= 0) {
        close(null);
        return saved;
    }
    if (saved >= 0)
        close(saved);
    if (null >= 0)
        close(null);
    return -1;
}

static void stdout_on(int saved)
{
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    pthread_mutex_unlock(&quiet_lock);
}

pl_status pl_place_metis(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    /* METIS needs a few vertices per part (it prints and fails on graphs too small to
     * bisect): at most one part per two groups, on the first devices. */
    int parts_used = p->n_devices < p->n_groups / 2 ? p->n_devices : p->n_groups / 2;
    if (parts_used <= 1) {
        for (int o = 0; o < p->n_groups; o++)
            plan->device[o] = 0;
        return PL_OK;
    }
    metis_graph m = {0};
    if (!build_graph(p, parts_used, &m)) {
        metis_graph_free(&m);
        return pl_placer_no_memory(err);
    }
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = (idx_t)(p->seed & 0x7fffffff);
    options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
    options[METIS_OPTION_NUMBERING] = 0;
    idx_t vertices = p->n_groups, constraints = 1, parts = parts_used, cut = 0;
    real_t imbalance = IMBALANCE;
    int saved = stdout_off();
    int result = METIS_PartGraphKway(&vertices, &constraints, m.xadj, m.adjncy, m.vwgt, NULL,
                                     m.adjwgt, &parts, m.tpwgts, &imbalance, options, &cut,
                                     m.part);
    stdout_on(saved);
    pl_status status = PL_OK;
    if (result == METIS_ERROR_MEMORY)
        status = pl_placer_no_memory(err);
    else if (result != METIS_OK)
        status = pl_error_set(err, PL_EINTERNAL, NULL, "metis: METIS_PartGraphKway failed (%d)",
                              result);
    for (int o = 0; status == PL_OK && o < p->n_groups; o++)
        plan->device[o] = (int)m.part[o];
    if (status == PL_OK)
        pl_placer_rebalance(p, plan->device); /* pl_placer_finish reports what still fails */
    metis_graph_free(&m);
    return status;
}
