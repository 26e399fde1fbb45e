/* Tensor parallelism as a rewrite of the training graph (split_graph.h): the forward pass
 * is built again op by op with split ops as shards and collectives between layouts, then
 * differentiated. */
#include "split_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "graph_build.h"
#include "split_graph_impl.h"
#include "strmap.h"

static bool grow(int **array, int *cap, int need)
{
    if (need <= *cap)
        return true;
    int bigger = *cap ? *cap * 2 : 256;
    while (bigger < need)
        bigger *= 2;
    int *grown = realloc(*array, (size_t)bigger * sizeof *grown);
    if (!grown)
        return false;
    *array = grown;
    *cap = bigger;
    return true;
}

static bool oom(splitter *sp)
{
    pl_error_set(sp->err, PL_ENOMEM, NULL, "out of memory");
    return false;
}

/* ---- building ------------------------------------------------------------------------- */

/* A tensor of the new graph standing for model tensor `origin` (or a part of it). */
static int add_tensor(splitter *sp, const char *name, const pl_tensor *like, int origin)
{
    int t = pl_graph_add_tensor(sp->n, name, like->kind, like);
    if (t < 0 || !grow(&sp->tensor_origin, &sp->tensor_cap, t + 1))
        return oom(sp), -1;
    pl_tensor *nt = &sp->n->tensors[t];
    nt->role = like->role;
    nt->init = like->init;
    nt->frozen = like->frozen;
    sp->tensor_origin[t] = origin;
    return t;
}

/* An op of the new forward pass, computing (part of) model op `origin` on `shard`.
 * Returns the op, or -1. */
static int emit(splitter *sp, pl_op_kind kind, const char *name, const int *inputs, int n_in,
                int n_out, const pl_attrs *attrs, int origin, int shard)
{
    int o = pl_graph_add_op(sp->n, kind, name, inputs, n_in, n_out, attrs, PL_PHASE_FORWARD,
                            sp->n->n_ops, sp->err);
    if (o < 0)
        return -1;
    if (!grow(&sp->op_origin, &sp->origin_cap, o + 1) ||
        !grow(&sp->op_shard, &sp->shard_cap, o + 1) ||
        !grow(&sp->op_collective, &sp->collective_cap, o + 1) ||
        !grow(&sp->tensor_origin, &sp->tensor_cap, sp->n->n_tensors))
        return oom(sp), -1;
    sp->op_origin[o] = origin;
    sp->op_shard[o] = shard;
    sp->op_collective[o] = 1; /* unless the op's own (copy_whole, copy_split) */
    for (int i = 0; i < n_out; i++)
        sp->tensor_origin[sp->n->ops[o].outputs[i]] = -1;
    return o;
}

static int out0(splitter *sp, int o)
{
    return o < 0 ? -1 : sp->n->ops[o].outputs[0];
}

/* The whole of a model tensor that no op produces (an input, parameter, state or
 * constant), made on first use. */
static int source_whole(splitter *sp, int t)
{
    value *v = &sp->val[t];
    if (v->whole < 0)
        v->whole = add_tensor(sp, sp->g->tensors[t].name, &sp->g->tensors[t], t);
    return v->whole;
}

/* A parameter or state stored split along `axis` (in `groups`): part s of each shard. */
static bool store_split(splitter *sp, int t, int axis, int groups, int group, int k)
{
    value *v = &sp->val[t];
    const pl_tensor *whole = &sp->g->tensors[t];
    for (int s = 0; s < k; s++) {
        char name[PL_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s/tp%d", whole->name, s);
        pl_tensor part = *whole;
        int64_t per_group = whole->dims[axis] / groups;
        part.dims[axis] = groups * part_size(per_group, k, s);
        part.init.shard_axis = axis;
        part.init.shard_groups = groups;
        part.init.shard_start = part_start(per_group, k, s);
        part.init.shard_whole = whole->dims[axis];
        if ((v->part[s] = add_tensor(sp, name, &part, t)) < 0)
            return false;
    }
    v->kind = SPLIT;
    v->axis = axis;
    v->groups = groups;
    v->group = group;
    v->k = k;
    return true;
}

/* Concatenates `parts` along `axis` on (origin, shard). */
static int concat(splitter *sp, const char *what, const int *parts, int k, int axis, int origin,
                  int shard)
{
    char name[PL_MAX_NAME + 32];
    if (shard < 0)
        snprintf(name, sizeof name, "%s/gather", what);
    else
        snprintf(name, sizeof name, "%s/gather@%d", what, shard);
    pl_attrs attrs;
    pl_attrs_default(&attrs);
    attrs.axis = axis;
    return out0(sp, emit(sp, PL_OP_CONCAT, name, parts, k, 1, &attrs, origin, shard));
}

/* A sum of `parts` in order, on (origin, shard). */
static int add_up(splitter *sp, const char *what, const int *parts, int k, int origin, int shard)
{
    int sum = parts[0];
    for (int i = 1; i < k && sum >= 0; i++) {
        char name[PL_MAX_NAME + 32];
        snprintf(name, sizeof name, "%s/sum%d@%d", what, i, shard < 0 ? 0 : shard);
        int inputs[2] = {sum, parts[i]};
        sum = out0(sp, emit(sp, PL_OP_ADD, name, inputs, 2, 1, NULL, origin, shard));
    }
    return sum;
}

/* The reduce-scatter of a partial value along `axis`: each shard splits its part, and
 * shard j adds up the parts j of every shard. */
static bool scatter(splitter *sp, int t, int axis)
{
    value *v = &sp->val[t];
    if (v->scatter_axis == axis)
        return true;
    int producer = sp->g->tensors[t].producer, k = v->k;
    const char *what = sp->g->tensors[t].name;
    int chunk[PL_MAX_SPLIT][PL_MAX_SPLIT]; /* [shard][part] */
    pl_attrs attrs;
    pl_attrs_default(&attrs);
    attrs.axis = axis;
    int64_t n = sp->g->tensors[t].dims[axis];
    if (n % k != 0) { /* uneven parts: as split values hold them */
        int64_t *sizes = pl_arena_alloc(&sp->n->arena, (size_t)k * sizeof *sizes);
        if (!sizes)
            return oom(sp);
        for (int s = 0; s < k; s++)
            sizes[s] = part_size(n, k, s);
        attrs.sizes.v = sizes;
        attrs.sizes.n = k;
        attrs.given |= PL_ATTR_BIT(PL_ATTR_SIZES);
    }
    for (int s = 0; s < k; s++) {
        char name[PL_MAX_NAME + 32];
        snprintf(name, sizeof name, "%s/scatter@%d", what, s);
        int o = emit(sp, PL_OP_SPLIT, name, &v->part[s], 1, k, &attrs, producer, s);
        if (o < 0)
            return false;
        for (int j = 0; j < k; j++)
            chunk[s][j] = sp->n->ops[o].outputs[j];
    }
    for (int j = 0; j < k; j++) {
        int column[PL_MAX_SPLIT];
        for (int s = 0; s < k; s++) /* its own part first: the others arrive */
            column[s] = chunk[(j + s) % k][j];
        if ((v->sum[j] = add_up(sp, what, column, k, producer, j)) < 0)
            return false;
    }
    v->scatter_axis = axis;
    return true;
}

/* A value split in groups made whole on (consumer, shard): each shard's part cut into
 * its groups, and the pieces concatenated group by group. */
static int ungroup(splitter *sp, int t, int consumer, int shard)
{
    const value *v = &sp->val[t];
    int groups = v->groups, k = v->k, piece[PL_MAX_SPLIT * PL_MAX_SPLIT];
    const char *what = sp->g->tensors[t].name;
    pl_attrs attrs;
    pl_attrs_default(&attrs);
    attrs.axis = v->axis;
    if (groups * k > PL_MAX_SPLIT * PL_MAX_SPLIT)
        return pl_error_set(sp->err, PL_EINPUT, NULL, "\"%s\": %d groups over %d shards", what,
                            groups, k),
               -1;
    for (int s = 0; s < k; s++) {
        char name[PL_MAX_NAME + 32];
        snprintf(name, sizeof name, "%s/groups@%d", what, s);
        int o = emit(sp, PL_OP_SPLIT, name, &v->part[s], 1, groups, &attrs, consumer, s);
        if (o < 0)
            return -1;
        for (int g = 0; g < groups; g++)
            piece[g * k + s] = sp->n->ops[o].outputs[g];
    }
    return concat(sp, what, piece, groups * k, v->axis, consumer, shard);
}

/* Model tensor t whole, for model op `consumer` running whole (shard -1) or on shard s of
 * a split op (then a copy of its own when t is split or partial in its group). */
static int whole_of(splitter *sp, int t, int consumer, int s)
{
    value *v = &sp->val[t];
    if (sp->g->tensors[t].producer < 0 && v->kind == WHOLE)
        return source_whole(sp, t);
    if (v->kind == WHOLE)
        return v->whole;
    if (consumer < 0) /* the loss: where it is computed */
        consumer = sp->g->tensors[t].producer;
    bool local = s >= 0 && sp->group[consumer] == v->group;
    int stage = sp->stage ? sp->stage[consumer] : 0;
    if (local && v->local[s] >= 0 && v->local_stage[s] <= stage)
        return v->local[s];
    if (!local && v->whole >= 0 && v->whole_stage <= stage)
        return v->whole;
    const pl_tensor *shape = &sp->g->tensors[t];
    int made, at = local ? s : -1;
    if (v->kind == SPLIT && groups_of(v->groups) > 1) {
        made = ungroup(sp, t, consumer, at);
    } else if (v->kind == SPLIT) {
        made = concat(sp, shape->name, v->part, v->k, v->axis, consumer, at);
    } else {
        int axis = pl_split_free_axis(shape, v->k, -1);
        if (axis < 0) /* sizes that do not split: every part to one place */
            made = add_up(sp, shape->name, v->part, v->k, consumer, at);
        else
            made = scatter(sp, t, axis) ? concat(sp, shape->name, v->sum, v->k, axis, consumer, at)
                                        : -1;
    }
    if (local)
        v->local[s] = made, v->local_stage[s] = stage;
    else
        v->whole = made, v->whole_stage = stage;
    return made;
}

/* Part s of model tensor t split along `axis` (in `groups`) over the k shards of
 * `consumer`'s group. */
static int part_of(splitter *sp, int t, int axis, int groups, int consumer, int s)
{
    value *v = &sp->val[t];
    int k = sp->split[consumer], group = sp->group[consumer];
    const pl_tensor *shape = &sp->g->tensors[t];
    bool stored = shape->kind == PL_TENSOR_PARAM || shape->kind == PL_TENSOR_STATE;
    if (v->kind == WHOLE && v->whole < 0 && stored && shape->producer < 0 &&
        !store_split(sp, t, axis, groups, group, k))
        return -1;
    if (v->kind == SPLIT && v->group == group && v->axis == axis && v->k == k &&
        groups_of(v->groups) == groups)
        return v->part[s];
    if (v->kind == PARTIAL && v->group == group && v->k == k && groups == 1)
        return scatter(sp, t, axis) ? v->sum[s] : -1;
    int whole = whole_of(sp, t, consumer, s);
    if (whole < 0)
        return -1;
    int piece[PL_MAX_SPLIT]; /* part s of each group */
    int64_t per_group = shape->dims[axis] / groups;
    for (int g = 0; g < groups; g++) {
        char name[PL_MAX_NAME + 32];
        snprintf(name, sizeof name, "%s/slice@%d", shape->name, s);
        pl_attrs attrs;
        pl_attrs_default(&attrs);
        attrs.axis = axis;
        attrs.start = per_group * g + part_start(per_group, k, s);
        attrs.end = attrs.start + part_size(per_group, k, s);
        if ((piece[g] = out0(sp, emit(sp, PL_OP_SLICE, name, &whole, 1, 1, &attrs, consumer, s))) <
            0)
            return -1;
    }
    return groups == 1 ? piece[0] : concat(sp, shape->name, piece, groups, axis, consumer, s);
}

/* ---- ops ------------------------------------------------------------------------------ */

static bool copy_whole(splitter *sp, int o)
{
    const pl_op *op = &sp->g->ops[o];
    int inputs[64], *in = op->n_inputs <= 64 ? inputs : malloc((size_t)op->n_inputs * sizeof *in);
    if (!in)
        return oom(sp);
    bool ok = true;
    for (int i = 0; ok && i < op->n_inputs; i++)
        ok = (in[i] = whole_of(sp, op->inputs[i], o, -1)) >= 0;
    int made = ok ? emit(sp, op->kind, op->name, in, op->n_inputs, op->n_outputs, &op->attrs, o, -1)
                  : -1;
    if (in != inputs)
        free(in);
    if (made < 0)
        return false;
    sp->op_collective[made] = 0;
    for (int i = 0; i < op->n_outputs; i++) { /* the model's names for whole values */
        pl_tensor *t = &sp->n->tensors[sp->n->ops[made].outputs[i]];
        t->name = sp->g->tensors[op->outputs[i]].name;
        sp->val[op->outputs[i]].whole = sp->n->ops[made].outputs[i];
    }
    return true;
}

static bool copy_split(splitter *sp, int o, const rule *r)
{
    const pl_op *op = &sp->g->ops[o];
    int k = sp->split[o], y = op->outputs[0];
    for (int s = 0; s < k; s++) {
        int in[8], n_in = 0;
        bool skip = false; /* a bias added on shard 0 only: the part passes on */
        for (int i = 0; i < op->n_inputs; i++) {
            int t = op->inputs[i], got;
            switch (r->in[i]) {
            case IN_SPLIT:
                got = part_of(sp, t, r->in_axis[i], groups_of(r->in_groups[i]), o, s);
                break;
            case IN_PARTIAL: got = sp->val[t].part[s]; break;
            case IN_FIRST:
                if (s > 0) {
                    skip = op->kind == PL_OP_ADD || op->kind == PL_OP_SUB;
                    continue;
                }
                got = whole_of(sp, t, o, s);
                break;
            default: got = whole_of(sp, t, o, s); break;
            }
            if (got < 0)
                return false;
            in[n_in++] = got;
        }
        if (skip) {
            sp->val[y].part[s] = in[0];
            continue;
        }
        pl_attrs attrs = op->attrs;
        if (r->groups_divided)
            attrs.groups = r->groups_divided;
        if (r->table_rows)
            attrs.start = op->attrs.start + part_start(r->table_rows, k, s);
        if (r->dropout) {
            attrs.axis = r->out_axis;
            attrs.end = sp->g->tensors[y].dims[r->out_axis];
            attrs.start = part_start(attrs.end, k, s);
        }
        int64_t *shape = NULL;
        if (r->reshape_axis >= 0 && op->kind == PL_OP_RESHAPE) {
            /* The shape leaves the batch axis out. */
            const pl_tensor *out = &sp->g->tensors[y];
            int skip_batch = out->batch_axis != PL_NO_BATCH;
            int at = r->reshape_axis - (skip_batch && out->batch_axis < r->reshape_axis);
            if (!(shape = pl_arena_alloc(&sp->n->arena,
                                         (size_t)(attrs.shape.n + 1) * sizeof *shape)))
                return oom(sp);
            memcpy(shape, attrs.shape.v, (size_t)attrs.shape.n * sizeof *shape);
            shape[at] /= k;
            attrs.shape.v = shape;
        }
        char name[PL_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s/tp%d", op->name, s);
        int made = emit(sp, op->kind, name, in, n_in, op->n_outputs, &attrs, o, s);
        if (made < 0)
            return false;
        sp->op_collective[made] = 0;
        for (int j = 0; j < op->n_outputs; j++) /* several: the parts of a split op */
            sp->val[op->outputs[j]].part[s] = sp->n->ops[made].outputs[j];
    }
    for (int j = 0; j < op->n_outputs; j++) {
        value *v = &sp->val[op->outputs[j]];
        v->kind = r->out;
        v->axis = r->out_axis;
        v->groups = groups_of(r->out_groups);
        v->group = sp->group[o];
        v->k = k;
    }
    return true;
}

/* An op of the model's own computation (not a collective) on `shard`: its first output. */
static int compute(splitter *sp, pl_op_kind kind, const char *name, const int *inputs, int n_in,
                   const pl_attrs *attrs, int origin, int shard)
{
    int o = emit(sp, kind, name, inputs, n_in, 1, attrs, origin, shard);
    if (o >= 0)
        sp->op_collective[o] = 0;
    return out0(sp, o);
}

/* Softmax cross-entropy over logits split along their classes (Megatron-LM's
 * vocabulary-parallel cross-entropy): each shard gives the log-sum-exp of its classes and
 * the logit of the labels among them, one value per position; shard 0 gathers the
 * log-sum-exps, sums the logits and makes the loss. The logits never cross devices, nor
 * do their gradients in the backward pass that differentiation builds from these ops. */
static bool vocab_loss(splitter *sp, int o)
{
    const pl_op *op = &sp->g->ops[o];
    const pl_tensor *logits = &sp->g->tensors[op->inputs[0]];
    int k = sp->split[o], class_axis = logits->rank - 1, lse[PL_MAX_SPLIT], picked[PL_MAX_SPLIT];
    int64_t classes = logits->dims[class_axis];
    char name[PL_MAX_NAME + 32];
    pl_attrs attrs;
    pl_attrs_default(&attrs);
    for (int s = 0; s < k; s++) {
        int part = sp->val[op->inputs[0]].part[s], labels = whole_of(sp, op->inputs[1], o, s);
        int pick_in[2] = {part, labels};
        attrs.start = part_start(classes, k, s);
        snprintf(name, sizeof name, "%s/lse/tp%d", op->name, s);
        lse[s] = labels < 0 ? -1 : compute(sp, PL_OP_LOGSUMEXP, name, &part, 1, NULL, o, s);
        snprintf(name, sizeof name, "%s/pick/tp%d", op->name, s);
        picked[s] = lse[s] < 0 ? -1 : compute(sp, PL_OP_PICK, name, pick_in, 2, &attrs, o, s);
        if (picked[s] < 0)
            return false;
    }
    snprintf(name, sizeof name, "%s/lse", op->name);
    int gathered = concat(sp, name, lse, k, class_axis, o, 0);
    snprintf(name, sizeof name, "%s/pick", op->name);
    int target = add_up(sp, name, picked, k, o, 0);
    snprintf(name, sizeof name, "%s/lse", op->name);
    int whole_lse = gathered < 0 || target < 0
                        ? -1
                        : compute(sp, PL_OP_LOGSUMEXP, name, &gathered, 1, NULL, o, 0);
    int loss_in[3] = {whole_lse, target, whole_of(sp, op->inputs[1], o, 0)};
    attrs.start = 0;
    attrs.end = classes;
    int loss = whole_lse < 0 ? -1
                             : compute(sp, PL_OP_LSE_CROSS_ENTROPY, op->name, loss_in, 3, &attrs,
                                       o, 0);
    if (loss < 0)
        return false;
    sp->n->tensors[loss].name = sp->g->tensors[op->outputs[0]].name;
    sp->val[op->outputs[0]].whole = loss;
    return true;
}

/* ---- the whole graph ------------------------------------------------------------------ */

static pl_graph *new_graph(const pl_graph *g)
{
    pl_graph *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->name = g->name;
    n->description = g->description;
    n->batch_size = g->batch_size;
    n->optimizer = g->optimizer;
    n->batch_statistics = g->batch_statistics;
    n->hash = g->hash;
    n->loss = -1;
    return n;
}

/* The model's tensor behind each state and constant that differentiation made: a shard's
 * gradient and moments are the whole parameter's, by name after the parameter's. */
static bool trace_training_tensors(splitter *sp, int first_new)
{
    pl_strmap names = {0};
    bool ok = true;
    for (int t = 0; ok && t < sp->g->n_tensors; t++)
        if (sp->g->tensors[t].producer < 0)
            ok = pl_strmap_put(&names, sp->g->tensors[t].name, t, NULL);
    if (ok)
        ok = grow(&sp->tensor_origin, &sp->tensor_cap, sp->n->n_tensors);
    for (int t = first_new; ok && t < sp->n->n_tensors; t++) {
        pl_tensor *nt = &sp->n->tensors[t];
        sp->tensor_origin[t] = -1;
        if (nt->producer >= 0)
            continue;
        char name[2 * PL_MAX_NAME + 32];
        snprintf(name, sizeof name, "%s", nt->name);
        if (nt->param >= 0) { /* PARAM/tpS/SUFFIX -> PARAM/SUFFIX */
            int p = nt->param, whole = sp->tensor_origin[p];
            const char *suffix = nt->name + strlen(sp->n->tensors[p].name);
            if (whole >= 0)
                snprintf(name, sizeof name, "%s%s", sp->g->tensors[whole].name, suffix);
            nt->init.shard_axis = sp->n->tensors[p].init.shard_axis;
            nt->init.shard_groups = sp->n->tensors[p].init.shard_groups;
            nt->init.shard_start = sp->n->tensors[p].init.shard_start;
            nt->init.shard_whole = sp->n->tensors[p].init.shard_whole;
        }
        sp->tensor_origin[t] = pl_strmap_get(&names, name);
    }
    pl_strmap_release(&names);
    return ok || oom(sp);
}

static bool rewrite(splitter *sp)
{
    const pl_graph *g = sp->g;
    for (int t = 0; t < g->n_tensors; t++) {
        value *v = &sp->val[t];
        *v = (value){.kind = WHOLE, .groups = 1, .whole = -1, .scatter_axis = -1};
        for (int s = 0; s < PL_MAX_SPLIT; s++)
            v->local[s] = -1;
        sp->consumer[t] = -1;
    }
    for (int o = 0; o < g->n_forward_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            int *c = &sp->consumer[g->ops[o].inputs[i]];
            *c = *c == -1 || *c == o ? o : -2;
        }
    for (int o = 0; o < g->n_forward_ops; o++) {
        rule r;
        bool split = pl_split_rule_for(sp, o, &r) &&
                     pl_split_rule_fits(sp, &g->ops[o], &r, sp->split[o]);
        bool made = pl_split_vocab_loss(sp, o) ? vocab_loss(sp, o)
                    : split                    ? copy_split(sp, o, &r)
                                               : copy_whole(sp, o);
        if (!made)
            return false;
    }
    int loss = whole_of(sp, g->loss, -1, -1);
    if (loss < 0)
        return false;
    for (int t = 0; t < g->n_tensors; t++) /* the activations the model would name */
        if (g->tensors[t].producer >= 0 && sp->val[t].whole >= 0)
            sp->tensor_origin[sp->val[t].whole] = t;
    sp->n->loss = loss;
    sp->n->n_forward_ops = sp->n->n_ops;
    int first_new = sp->n->n_tensors;
    if (pl_autodiff_build(sp->n, sp->err) != PL_OK)
        return false;
    return trace_training_tensors(sp, first_new);
}

pl_split_graph *pl_split_graph_new(const pl_graph *graph, const int *split, const int *group,
                                   const int *stage, pl_error *err)
{
    pl_split_graph *out = calloc(1, sizeof *out);
    splitter sp = {.g = graph, .split = split, .group = group, .stage = stage, .err = err};
    sp.val = malloc((size_t)(graph->n_tensors > 0 ? graph->n_tensors : 1) * sizeof *sp.val);
    sp.consumer = malloc((size_t)(graph->n_tensors > 0 ? graph->n_tensors : 1) *
                         sizeof *sp.consumer);
    sp.n = new_graph(graph);
    bool ok = out && sp.val && sp.consumer && sp.n;
    for (int o = 0; ok && o < graph->n_forward_ops; o++)
        if (split[o] < 1 || split[o] > PL_MAX_SPLIT)
            ok = pl_error_set(err, PL_EINPUT, NULL,
                              "op \"%s\" is split over %d devices: 1 to "
                              "%d allowed",
                              graph->ops[o].name, split[o], PL_MAX_SPLIT) == PL_OK;
    if (!out || !sp.val || !sp.consumer || !sp.n)
        ok = oom(&sp);
    if (ok)
        ok = rewrite(&sp);
    free(sp.val);
    free(sp.consumer);
    if (!ok) {
        pl_graph_free(sp.n);
        free(sp.op_origin);
        free(sp.op_shard);
        free(sp.op_collective);
        free(sp.tensor_origin);
        free(out);
        return NULL;
    }
    *out = (pl_split_graph){.graph = sp.n,
                            .op_origin = sp.op_origin,
                            .op_shard = sp.op_shard,
                            .op_collective = sp.op_collective,
                            .tensor_origin = sp.tensor_origin};
    return out;
}

void pl_split_graph_free(pl_split_graph *split)
{
    if (!split)
        return;
    pl_graph_free(split->graph);
    free(split->op_origin);
    free(split->op_shard);
    free(split->op_collective);
    free(split->tensor_origin);
    free(split);
}

bool pl_split_graph_collective(const pl_split_graph *split, int o)
{
    return split->op_collective[o] != 0;
}
