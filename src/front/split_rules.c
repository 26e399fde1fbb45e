/* How a split op's shards run (split_graph.h): per op kind, the layouts its inputs are
 * read in and the layout of its output, from the layouts its inputs come in. */
#include "split_graph_impl.h"

int pl_split_free_axis(const pl_tensor *t, int k, int except)
{
    for (int a = 0; a < t->rank; a++)
        if (a != t->batch_axis && a != except && t->dims[a] % k == 0 && t->dims[a] >= k)
            return a;
    return -1;
}

static bool in_group(const splitter *sp, int o, int t, int kind)
{
    const value *v = &sp->val[t];
    return v->kind == kind && v->group == sp->group[o] && v->k == sp->split[o];
}

static bool divides(const pl_tensor *t, int axis, int k)
{
    return axis >= 0 && axis < t->rank && axis != t->batch_axis && t->dims[axis] % k == 0;
}

static bool is_stored(const pl_tensor *t)
{
    return t->producer < 0 && t->kind != PL_TENSOR_INPUT;
}

static int resolve(int64_t axis, int rank)
{
    return (int)(axis < 0 ? axis + rank : axis);
}

/* Every input split along the output's `axis` where it has that axis at full size
 * (broadcasting inputs are read whole). */
static bool follow(const splitter *sp, const pl_op *op, int axis, rule *r)
{
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    if (!divides(out, axis, sp->split[op - sp->g->ops]))
        return false;
    for (int i = 0; i < op->n_inputs; i++) {
        const pl_tensor *x = &sp->g->tensors[op->inputs[i]];
        int a = axis - (out->rank - x->rank);
        bool full = a >= 0 && x->dims[a] == out->dims[axis];
        r->in[i] = full ? IN_SPLIT : IN_WHOLE;
        r->in_axis[i] = a;
    }
    r->out = SPLIT;
    r->out_axis = axis;
    return true;
}

/* The output axis a split input of an element-wise op maps to, or -1. */
static int split_input_axis(const splitter *sp, const pl_op *op, int except)
{
    int o = (int)(op - sp->g->ops);
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    for (int i = 0; i < op->n_inputs; i++) {
        int t = op->inputs[i];
        if (!in_group(sp, o, t, SPLIT))
            continue;
        int a = sp->val[t].axis + out->rank - sp->g->tensors[t].rank;
        if (a != except)
            return a;
    }
    return -1;
}

static bool rule_elementwise(const splitter *sp, const pl_op *op, int except, rule *r)
{
    int o = (int)(op - sp->g->ops), k = sp->split[o];
    int axis = split_input_axis(sp, op, except);
    if (axis >= 0 && follow(sp, op, axis, r))
        return true;
    return follow(sp, op, pl_split_free_axis(&sp->g->tensors[op->outputs[0]], k, except), r);
}

/* Sums keep partial values partial: all partial, or one partial (its shape the output's)
 * and a whole value added on shard 0 only. */
static bool rule_partial_sum(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), partial = 0;
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    for (int i = 0; i < op->n_inputs; i++) {
        bool p = in_group(sp, o, op->inputs[i], PARTIAL);
        partial += p;
        r->in[i] = p ? IN_PARTIAL : IN_FIRST;
        if (p && !pl_tensor_has_dims(&sp->g->tensors[op->inputs[i]], out->rank, out->dims))
            return false;
    }
    if (partial == 0 || (op->kind == PL_OP_SUB && r->in[0] != IN_PARTIAL))
        return false;
    r->out = PARTIAL;
    return true;
}

/* Products and quotients by a whole value are linear in a partial one. */
static bool rule_partial_scale(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops);
    bool p0 = in_group(sp, o, op->inputs[0], PARTIAL), p1 = in_group(sp, o, op->inputs[1], PARTIAL);
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    int p = p0 ? 0 : 1;
    if (p0 == p1 || (op->kind == PL_OP_DIV && !p0) ||
        !pl_tensor_has_dims(&sp->g->tensors[op->inputs[p]], out->rank, out->dims))
        return false;
    r->in[p] = IN_PARTIAL;
    r->in[1 - p] = IN_WHOLE;
    r->out = PARTIAL;
    return true;
}

static bool rule_matmul(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), k = sp->split[o];
    int ta = op->attrs.transpose_a, tb = op->attrs.transpose_b;
    int a = op->inputs[0], b = op->inputs[1];
    const pl_tensor *A = &sp->g->tensors[a], *B = &sp->g->tensors[b];
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    int a_k = ta ? A->rank - 2 : A->rank - 1, a_m = ta ? A->rank - 1 : A->rank - 2;
    int b_k = tb ? B->rank - 1 : B->rank - 2, b_n = tb ? B->rank - 2 : B->rank - 1;
    r->out = SPLIT;
    if (is_stored(B) && B->rank == 2) { /* a layer's weight: rows, else columns */
        r->in[1] = IN_SPLIT;
        if (in_group(sp, o, a, SPLIT) && sp->val[a].axis == a_k) {
            r->in[0] = IN_SPLIT, r->in_axis[0] = a_k, r->in_axis[1] = b_k, r->out = PARTIAL;
            return true;
        }
        r->in[0] = IN_WHOLE, r->in_axis[1] = b_n, r->out_axis = out->rank - 1;
        return divides(B, b_n, k);
    }
    /* Two activations: a shared leading axis (heads), a's rows, b's columns, or the
     * inner dimension (a partial product). */
    if (A->rank == B->rank && A->rank == out->rank) {
        for (int x = 0; x < A->rank - 2; x++)
            if ((in_group(sp, o, a, SPLIT) && sp->val[a].axis == x) ||
                (in_group(sp, o, b, SPLIT) && sp->val[b].axis == x)) {
                r->in[0] = A->dims[x] == out->dims[x] ? IN_SPLIT : IN_WHOLE;
                r->in[1] = B->dims[x] == out->dims[x] ? IN_SPLIT : IN_WHOLE;
                r->in_axis[0] = r->in_axis[1] = r->out_axis = x;
                return divides(out, x, k);
            }
        if (in_group(sp, o, a, SPLIT) && sp->val[a].axis == a_m) {
            r->in[0] = IN_SPLIT, r->in_axis[0] = a_m, r->in[1] = IN_WHOLE;
            r->out_axis = out->rank - 2;
            return divides(out, r->out_axis, k);
        }
        if (in_group(sp, o, b, SPLIT) && sp->val[b].axis == b_n) {
            r->in[1] = IN_SPLIT, r->in_axis[1] = b_n, r->in[0] = IN_WHOLE;
            r->out_axis = out->rank - 1;
            return divides(out, r->out_axis, k);
        }
        if (in_group(sp, o, a, SPLIT) && sp->val[a].axis == a_k && in_group(sp, o, b, SPLIT) &&
            sp->val[b].axis == b_k) {
            r->in[0] = r->in[1] = IN_SPLIT, r->in_axis[0] = a_k, r->in_axis[1] = b_k;
            r->out = PARTIAL;
            return true;
        }
    }
    return false;
}

static bool rule_conv(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), k = sp->split[o];
    const pl_tensor *x = &sp->g->tensors[op->inputs[0]], *w = &sp->g->tensors[op->inputs[1]];
    int64_t groups = op->attrs.groups;
    if (!is_stored(w))
        return false;
    r->in[1] = r->in[2] = IN_SPLIT;
    r->in_axis[1] = r->in_axis[2] = 0;
    r->out = SPLIT, r->out_axis = 1;
    if (groups > 1) { /* grouped and depthwise: whole groups to each shard */
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->groups_divided = groups / k;
        return groups % k == 0;
    }
    if (in_group(sp, o, op->inputs[0], SPLIT) && sp->val[op->inputs[0]].axis == 1) {
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->in_axis[1] = 1, r->in[2] = IN_FIRST;
        r->out = PARTIAL;
        return true;
    }
    (void)x;
    r->in[0] = IN_WHOLE;
    return divides(w, 0, k);
}

/* A reshape carries a split to the result's axis with as many elements before it, when
 * the shards' share of it is whole. */
static bool rule_reshape(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), t = op->inputs[0];
    if (!in_group(sp, o, t, SPLIT))
        return false;
    const pl_tensor *x = &sp->g->tensors[t], *y = &sp->g->tensors[op->outputs[0]];
    int64_t before = 1, at = 1;
    for (int a = 0; a < sp->val[t].axis; a++)
        before *= x->dims[a];
    for (int b = 0; b < y->rank; b++) {
        if (at == before && divides(y, b, sp->split[o]) && y->dims[b] > 1) {
            r->in[0] = IN_SPLIT, r->in_axis[0] = sp->val[t].axis;
            r->out = SPLIT, r->out_axis = b, r->reshape_axis = b;
            return true;
        }
        at *= y->dims[b];
    }
    return false;
}

static bool rule_embedding(const splitter *sp, const pl_op *op, rule *r)
{
    int k = sp->split[op - sp->g->ops];
    const pl_tensor *table = &sp->g->tensors[op->inputs[0]];
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    if (!is_stored(table))
        return false;
    r->in[0] = IN_SPLIT, r->in[1] = IN_WHOLE;
    if (divides(table, 0, k)) {
        r->in_axis[0] = 0, r->out = PARTIAL;
        r->rows_per_shard = table->dims[0] / k;
        return true;
    }
    r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = out->rank - 1;
    return divides(table, 1, k);
}

bool pl_split_rule_for(const splitter *sp, int o, rule *r)
{
    const pl_op *op = &sp->g->ops[o];
    const pl_tensor *out = op->n_outputs == 1 ? &sp->g->tensors[op->outputs[0]] : NULL;
    int k = sp->split[o];
    *r = (rule){.reshape_axis = -1};
    if (!out || k < 2 || op->n_inputs > 8)
        return false;
    switch (op->kind) {
    case PL_OP_MATMUL: return rule_matmul(sp, op, r);
    case PL_OP_ADD:
    case PL_OP_SUB: return rule_elementwise(sp, op, -1, r) || rule_partial_sum(sp, op, r);
    case PL_OP_MUL:
    case PL_OP_DIV: return rule_partial_scale(sp, op, r) || rule_elementwise(sp, op, -1, r);
    case PL_OP_SCALE:
        if (in_group(sp, o, op->inputs[0], PARTIAL)) {
            r->in[0] = IN_PARTIAL, r->out = PARTIAL;
            return true;
        }
        return rule_elementwise(sp, op, -1, r);
    case PL_OP_RELU:
    case PL_OP_GELU:
    case PL_OP_TANH:
    case PL_OP_SIGMOID:
    case PL_OP_CLAMP:
    case PL_OP_HARDSIGMOID:
    case PL_OP_HARDSWISH:
    case PL_OP_ERF:
    case PL_OP_EXP:
    case PL_OP_LOG:
    case PL_OP_SQRT:
    case PL_OP_RSQRT:
    case PL_OP_ABS:
    case PL_OP_POW:
    case PL_OP_SILU:
    case PL_OP_WHERE: return rule_elementwise(sp, op, -1, r);
    case PL_OP_SOFTMAX:
    case PL_OP_LOG_SOFTMAX: return rule_elementwise(sp, op, resolve(op->attrs.axis, out->rank), r);
    case PL_OP_LAYER_NORM: /* its scale and shift are along the axis it normalises */
        if (!rule_elementwise(sp, op, resolve(op->attrs.axis, out->rank), r))
            return false;
        for (int i = 1; i < op->n_inputs; i++)
            r->in[i] = IN_WHOLE;
        return true;
    case PL_OP_BATCH_NORM:
        for (int i = 1; i < op->n_inputs; i++)
            r->in[i] = IN_SPLIT, r->in_axis[i] = 0;
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = 1;
        return divides(out, 1, k);
    case PL_OP_MAX_POOL:
    case PL_OP_AVG_POOL:
    case PL_OP_GLOBAL_AVG_POOL:
    case PL_OP_ADAPTIVE_AVG_POOL:
    case PL_OP_MAX_POOL1D:
    case PL_OP_MAX_POOL3D:
    case PL_OP_AVG_POOL1D:
    case PL_OP_AVG_POOL3D:
    case PL_OP_ADAPTIVE_AVG_POOL1D:
    case PL_OP_ADAPTIVE_AVG_POOL3D:
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = 1;
        return divides(out, 1, k);
    case PL_OP_CONV1D:
    case PL_OP_CONV2D:
    case PL_OP_CONV3D: return rule_conv(sp, op, r);
    case PL_OP_EMBEDDING: /* by vocabulary rows (partial: each shard's rows or zeros),
                             else by columns */
        return rule_embedding(sp, op, r);
    case PL_OP_RESHAPE:
    case PL_OP_FLATTEN: return rule_reshape(sp, op, r);
    case PL_OP_TRANSPOSE: {
        int t = op->inputs[0];
        if (!in_group(sp, o, t, SPLIT))
            return false;
        for (int a = 0; a < op->attrs.perm.n; a++)
            if (op->attrs.perm.v[a] == sp->val[t].axis)
                r->out_axis = a;
        r->in[0] = IN_SPLIT, r->in_axis[0] = sp->val[t].axis, r->out = SPLIT;
        return true;
    }
    default: return false;
    }
}

/* Whether every input a rule splits divides among the shards. */
bool pl_split_rule_fits(const splitter *sp, const pl_op *op, const rule *r, int k)
{
    for (int i = 0; i < op->n_inputs; i++)
        if (r->in[i] == IN_SPLIT && !divides(&sp->g->tensors[op->inputs[i]], r->in_axis[i], k))
            return false;
    return true;
}

bool pl_split_graph_splits(pl_op_kind kind)
{
    switch (kind) {
    case PL_OP_MATMUL: case PL_OP_ADD: case PL_OP_SUB: case PL_OP_MUL: case PL_OP_DIV:
    case PL_OP_SCALE: case PL_OP_RELU: case PL_OP_GELU: case PL_OP_TANH: case PL_OP_SIGMOID:
    case PL_OP_CLAMP: case PL_OP_HARDSIGMOID: case PL_OP_HARDSWISH: case PL_OP_ERF:
    case PL_OP_EXP: case PL_OP_LOG: case PL_OP_SQRT: case PL_OP_RSQRT: case PL_OP_ABS:
    case PL_OP_POW: case PL_OP_SILU: case PL_OP_WHERE: case PL_OP_SOFTMAX:
    case PL_OP_LOG_SOFTMAX: case PL_OP_LAYER_NORM: case PL_OP_BATCH_NORM:
    case PL_OP_MAX_POOL: case PL_OP_AVG_POOL: case PL_OP_GLOBAL_AVG_POOL:
    case PL_OP_ADAPTIVE_AVG_POOL: case PL_OP_MAX_POOL1D: case PL_OP_MAX_POOL3D:
    case PL_OP_AVG_POOL1D: case PL_OP_AVG_POOL3D: case PL_OP_ADAPTIVE_AVG_POOL1D:
    case PL_OP_ADAPTIVE_AVG_POOL3D: case PL_OP_CONV1D: case PL_OP_CONV2D: case PL_OP_CONV3D:
    case PL_OP_EMBEDDING: case PL_OP_RESHAPE: case PL_OP_FLATTEN: case PL_OP_TRANSPOSE:
        return true;
    default:
        return false;
    }
}
