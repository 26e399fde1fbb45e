/* Activation recomputation (recompute.h): the backward ops are walked in order; each one
 * reading a recomputed value gets its clone, made with the clones it needs in turn, and
 * the clones then move in front of the op that first asked for them. */
#include "recompute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "grow.h"

typedef struct recomputer {
    pl_graph *g;
    const bool *mark;  /* per forward op */
    int n_forward, n_old_ops, n_old_tensors;
    int *clone_of;     /* per tensor of the graph as it came: its clone, or -1 */
    int *anchor;       /* per clone (op index - n_old_ops): the op it goes before */
    int n_clones, anchor_cap;
    int *stack;        /* ops waiting for the clones of their inputs; a path of the DAG */
    bool *is_clone;    /* per op, once reordered */
    pl_error *err;
} recomputer;

bool pl_recompute_allowed(const pl_graph *graph, int o)
{
    return o >= 0 && o < graph->n_forward_ops && !pl_op_info_of(graph->ops[o].kind)->mutates;
}

/* Whether tensor t is a value the backward pass must read from a clone. */
static bool recomputed(const recomputer *rc, int t)
{
    if (t >= rc->n_old_tensors)
        return false;
    int producer = rc->g->tensors[t].producer;
    return producer >= 0 && producer < rc->n_forward && rc->mark[producer] &&
           pl_recompute_allowed(rc->g, producer);
}

static bool oom(recomputer *rc)
{
    pl_error_set(rc->err, PL_ENOMEM, NULL, "out of memory");
    return false;
}

/* A copy of forward op o reading kept values or clones, to go before op `anchor`. */
static bool emit_clone(recomputer *rc, int o, int anchor)
{
    pl_graph *g = rc->g;
    const pl_op op = g->ops[o]; /* adding an op moves the array */
    int *inputs = malloc((size_t)op.n_inputs * sizeof *inputs + 1);
    if (!inputs ||
        !pl_grow(&rc->anchor, &rc->anchor_cap, rc->n_clones + 1, sizeof *rc->anchor, 64)) {
        free(inputs);
        return oom(rc);
    }
    for (int j = 0; j < op.n_inputs; j++)
        inputs[j] = recomputed(rc, op.inputs[j]) ? rc->clone_of[op.inputs[j]] : op.inputs[j];
    char name[PL_MAX_NAME + 16];
    snprintf(name, sizeof name, "%s/recompute", op.name);
    int c = pl_graph_add_op(g, op.kind, name, inputs, op.n_inputs, op.n_outputs, &op.attrs,
                            PL_PHASE_BACKWARD, op.group, rc->err);
    free(inputs);
    if (c < 0)
        return false;
    for (int j = 0; j < op.n_outputs; j++)
        rc->clone_of[op.outputs[j]] = g->ops[c].outputs[j];
    rc->anchor[rc->n_clones++] = anchor;
    return true;
}

/* The clone of value t, made (with the clones it reads) before op `anchor` if need be. */
static int clone_value(recomputer *rc, int t, int anchor)
{
    int n = 0;
    if (rc->clone_of[t] < 0)
        rc->stack[n++] = rc->g->tensors[t].producer;
    while (n > 0) {
        int o = rc->stack[n - 1], missing = -1;
        const pl_op *op = &rc->g->ops[o];
        for (int j = 0; j < op->n_inputs && missing < 0; j++)
            if (recomputed(rc, op->inputs[j]) && rc->clone_of[op->inputs[j]] < 0)
                missing = rc->g->tensors[op->inputs[j]].producer;
        if (missing >= 0) {
            rc->stack[n++] = missing;
            continue;
        }
        n--;
        if (!emit_clone(rc, o, anchor))
            return -1;
    }
    return rc->clone_of[t];
}

/* Every clone in front of its anchor: the ops in their new order, producers renumbered. */
static bool reorder(recomputer *rc)
{
    pl_graph *g = rc->g;
    int n = g->n_ops;
    pl_op *ops = malloc((size_t)n * sizeof *ops);
    int *index = malloc((size_t)n * sizeof *index); /* old -> new */
    rc->is_clone = calloc((size_t)n, sizeof *rc->is_clone);
    if (!ops || !index || !rc->is_clone) {
        free(ops);
        free(index);
        return oom(rc);
    }
    int at = 0, next_clone = 0;
    for (int o = 0; o < rc->n_old_ops; o++) {
        /* clones were made anchor by anchor, so they are in anchor order */
        for (; next_clone < rc->n_clones && rc->anchor[next_clone] == o; next_clone++) {
            rc->is_clone[at] = true;
            index[rc->n_old_ops + next_clone] = at++;
        }
        index[o] = at++;
    }
    for (int o = 0; o < n; o++)
        ops[index[o]] = g->ops[o];
    memcpy(g->ops, ops, (size_t)n * sizeof *ops);
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer >= 0)
            g->tensors[t].producer = index[g->tensors[t].producer];
    free(ops);
    free(index);
    return true;
}

/* A clone computes parameters' gradients only (graph.h: weight_gradient) when none of its
 * outputs reaches an activation's gradient: read by no other backward op that does
 * (autodiff.c's rule, on the flags the other ops have). */
static bool mark_clones(recomputer *rc)
{
    pl_graph *g = rc->g;
    bool *b_input = calloc((size_t)g->n_tensors, sizeof *b_input);
    if (!b_input)
        return oom(rc);
    for (int o = g->n_ops - 1; o >= rc->n_forward; o--) {
        pl_op *op = &g->ops[o];
        bool b = op->phase == PL_PHASE_BACKWARD && !op->weight_gradient;
        if (rc->is_clone[o]) {
            b = false;
            for (int j = 0; j < op->n_outputs; j++)
                b = b || b_input[op->outputs[j]];
            op->weight_gradient = !b;
        }
        for (int j = 0; b && j < op->n_inputs; j++)
            b_input[op->inputs[j]] = true;
    }
    free(b_input);
    return true;
}

pl_status pl_recompute_graph(pl_graph *graph, const bool *recompute, pl_error *err)
{
    recomputer rc = {.g = graph, .mark = recompute, .n_forward = graph->n_forward_ops,
                     .n_old_ops = graph->n_ops, .n_old_tensors = graph->n_tensors, .err = err};
    rc.clone_of = malloc((size_t)graph->n_tensors * sizeof *rc.clone_of + 1);
    rc.stack = malloc((size_t)graph->n_forward_ops * sizeof *rc.stack + 1);
    bool ok = rc.clone_of && rc.stack ? true : oom(&rc);
    for (int t = 0; ok && t < graph->n_tensors; t++)
        rc.clone_of[t] = -1;
    for (int o = rc.n_forward; ok && o < rc.n_old_ops; o++)
        for (int j = 0; ok && j < graph->ops[o].n_inputs; j++) {
            int t = graph->ops[o].inputs[j];
            if (!recomputed(&rc, t))
                continue;
            int clone = clone_value(&rc, t, o);
            ok = clone >= 0;
            if (ok)
                graph->ops[o].inputs[j] = clone;
        }
    if (ok && rc.n_clones > 0)
        ok = reorder(&rc) && mark_clones(&rc);
    free(rc.clone_of);
    free(rc.stack);
    free(rc.anchor);
    free(rc.is_clone);
    if (ok)
        return PL_OK;
    return err && err->status != PL_OK ? err->status : PL_ENOMEM;
}
