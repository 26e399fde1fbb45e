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

/* Whether k shards can share `axis` of t, in `groups` (part_size): each group's part of
 * an axis of several groups equal, a plain axis any way with none empty. */
static bool shares(const pl_tensor *t, int axis, int k, int groups)
{
    if (groups > 1)
        return divides(t, axis, k * groups);
    return axis >= 0 && axis < t->rank && axis != t->batch_axis && t->dims[axis] >= k;
}

/* Whether value t comes split along `axis` in op o's group (in `groups`). */
static bool split_along(const splitter *sp, int o, int t, int axis, int groups)
{
    return in_group(sp, o, t, SPLIT) && sp->val[t].axis == axis &&
           groups_of(sp->val[t].groups) == groups;
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
static bool follow(const splitter *sp, const pl_op *op, int axis, int groups, rule *r)
{
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    if (!shares(out, axis, sp->split[op - sp->g->ops], groups))
        return false;
    for (int i = 0; i < op->n_inputs; i++) {
        const pl_tensor *x = &sp->g->tensors[op->inputs[i]];
        int a = axis - (out->rank - x->rank);
        bool full = a >= 0 && x->dims[a] == out->dims[axis];
        r->in[i] = full ? IN_SPLIT : IN_WHOLE;
        r->in_axis[i] = a;
        r->in_groups[i] = groups;
    }
    r->out = SPLIT;
    r->out_axis = axis;
    r->out_groups = groups;
    return true;
}

/* The output axis a split input of an element-wise op maps to, or -1; *groups its
 * groups. */
static int split_input_axis(const splitter *sp, const pl_op *op, int except, int *groups)
{
    int o = (int)(op - sp->g->ops);
    const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
    for (int i = 0; i < op->n_inputs; i++) {
        int t = op->inputs[i];
        if (!in_group(sp, o, t, SPLIT))
            continue;
        int a = sp->val[t].axis + out->rank - sp->g->tensors[t].rank;
        *groups = groups_of(sp->val[t].groups);
        if (a != except)
            return a;
    }
    return -1;
}

static bool rule_elementwise(const splitter *sp, const pl_op *op, int except, rule *r)
{
    int o = (int)(op - sp->g->ops), k = sp->split[o], groups = 1;
    int axis = split_input_axis(sp, op, except, &groups);
    if (axis >= 0 && follow(sp, op, axis, groups, r))
        return true;
    return follow(sp, op, pl_split_free_axis(&sp->g->tensors[op->outputs[0]], k, except), 1, r);
}

/* How many equal parts a product's output is cut into along its last axis right after
 * (through element-wise ops of its shape, a bias): a fused query, key and value; 1 when it
 * is not, or when k shards cannot share each part. */
static int fused_parts(const splitter *sp, int t, int k)
{
    const pl_tensor *y = &sp->g->tensors[t];
    for (int depth = 0; depth < 4; depth++) {
        int c = sp->consumer[t];
        if (c < 0)
            return 1;
        const pl_op *op = &sp->g->ops[c];
        if (op->kind == PL_OP_SPLIT) {
            int n = op->n_outputs, axis = resolve(op->attrs.axis, y->rank);
            bool equal = !(op->attrs.given & PL_ATTR_BIT(PL_ATTR_SIZES));
            return equal && axis == y->rank - 1 && n > 1 && y->dims[axis] % (n * k) == 0 ? n : 1;
        }
        const pl_tensor *out = &sp->g->tensors[op->outputs[0]];
        bool elementwise = op->kind == PL_OP_ADD || op->kind == PL_OP_SUB ||
                           op->kind == PL_OP_MUL || op->kind == PL_OP_SCALE;
        if (!elementwise || op->n_outputs != 1 || !pl_tensor_has_dims(out, y->rank, y->dims))
            return 1;
        t = op->outputs[0];
    }
    return 1;
}

/* A split along an axis of n equal groups ends at the op that cuts the groups apart; a
 * split along another axis goes on into every part. */
static bool rule_split(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), t = op->inputs[0];
    const pl_tensor *x = &sp->g->tensors[t];
    int axis = resolve(op->attrs.axis, x->rank), n = op->n_outputs;
    if (!in_group(sp, o, t, SPLIT) || (op->attrs.given & PL_ATTR_BIT(PL_ATTR_SIZES)))
        return false;
    const value *v = &sp->val[t];
    int groups = groups_of(v->groups);
    r->in[0] = IN_SPLIT, r->in_axis[0] = v->axis, r->in_groups[0] = groups;
    r->out = SPLIT, r->out_axis = v->axis;
    if (v->axis == axis) {
        r->out_groups = 1;
        return groups == n;
    }
    r->out_groups = groups;
    return true;
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
        if (split_along(sp, o, a, a_k, 1)) {
            r->in[0] = IN_SPLIT, r->in_axis[0] = a_k, r->in_axis[1] = b_k, r->out = PARTIAL;
            return true;
        }
        int parts = fused_parts(sp, op->outputs[0], k); /* each part's columns shared */
        r->in[0] = IN_WHOLE, r->in_axis[1] = b_n, r->out_axis = out->rank - 1;
        r->in_groups[1] = r->out_groups = parts;
        return shares(B, b_n, k, parts);
    }
    /* Two activations: a shared leading axis (heads), a's rows, b's columns, or the
     * inner dimension (a partial product). */
    if (A->rank == B->rank && A->rank == out->rank) {
        for (int x = 0; x < A->rank - 2; x++)
            if (split_along(sp, o, a, x, 1) || split_along(sp, o, b, x, 1)) {
                r->in[0] = A->dims[x] == out->dims[x] ? IN_SPLIT : IN_WHOLE;
                r->in[1] = B->dims[x] == out->dims[x] ? IN_SPLIT : IN_WHOLE;
                r->in_axis[0] = r->in_axis[1] = r->out_axis = x;
                return shares(out, x, k, 1);
            }
        if (split_along(sp, o, a, a_m, 1)) {
            r->in[0] = IN_SPLIT, r->in_axis[0] = a_m, r->in[1] = IN_WHOLE;
            r->out_axis = out->rank - 2;
            return shares(out, r->out_axis, k, 1);
        }
        if (split_along(sp, o, b, b_n, 1)) {
            r->in[1] = IN_SPLIT, r->in_axis[1] = b_n, r->in[0] = IN_WHOLE;
            r->out_axis = out->rank - 1;
            return shares(out, r->out_axis, k, 1);
        }
        if (split_along(sp, o, a, a_k, 1) && split_along(sp, o, b, b_k, 1)) {
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
    if (split_along(sp, o, op->inputs[0], 1, 1)) {
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->in_axis[1] = 1, r->in[2] = IN_FIRST;
        r->out = PARTIAL;
        return true;
    }
    (void)x;
    r->in[0] = IN_WHOLE;
    return shares(w, 0, k, 1);
}

/* A reshape carries a split to the result's axis with as many elements before it, when
 * the shards' share of it is whole and equal (an uneven part need not map onto the
 * result's axis). */
static bool rule_reshape(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), t = op->inputs[0];
    const pl_tensor *x = &sp->g->tensors[t], *y = &sp->g->tensors[op->outputs[0]];
    if (!in_group(sp, o, t, SPLIT) || groups_of(sp->val[t].groups) > 1 ||
        !divides(x, sp->val[t].axis, sp->split[o]))
        return false;
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
    if (shares(table, 0, k, 1)) {
        r->in_axis[0] = 0, r->out = PARTIAL;
        r->table_rows = table->dims[0];
        return true;
    }
    r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = out->rank - 1;
    return shares(table, 1, k, 1);
}

/* The kinds of op the rewrite splits, by how. */
typedef enum family {
    NOT_SPLIT,
    PRODUCT,     /* matmul */
    SUM,         /* add, sub: partial stays partial */
    SCALING,     /* mul, div: partial stays partial by a whole factor */
    SCALE,       /* scale */
    ELEMENTWISE, /* one value per element */
    NORMALISING, /* softmax, log_softmax: along their axis */
    LAYER_NORM,
    BATCH_NORM,
    POOL,        /* per channel */
    CONV,
    EMBEDDING,
    RESHAPE,
    TRANSPOSE,
    CUT,         /* split */
    DROPOUT,     /* element-wise, its shards told where they are */
    LOSS,        /* softmax cross-entropy: from logits split by classes (split_graph.c) */
} family;

static family family_of(pl_op_kind kind)
{
    static const struct {
        pl_op_kind kind;
        family family;
    } families[] = {
        {PL_OP_MATMUL, PRODUCT},
        {PL_OP_ADD, SUM},
        {PL_OP_SUB, SUM},
        {PL_OP_MUL, SCALING},
        {PL_OP_DIV, SCALING},
        {PL_OP_SCALE, SCALE},
        {PL_OP_RELU, ELEMENTWISE},
        {PL_OP_GELU, ELEMENTWISE},
        {PL_OP_TANH, ELEMENTWISE},
        {PL_OP_SIGMOID, ELEMENTWISE},
        {PL_OP_CLAMP, ELEMENTWISE},
        {PL_OP_HARDSIGMOID, ELEMENTWISE},
        {PL_OP_HARDSWISH, ELEMENTWISE},
        {PL_OP_ERF, ELEMENTWISE},
        {PL_OP_EXP, ELEMENTWISE},
        {PL_OP_LOG, ELEMENTWISE},
        {PL_OP_SQRT, ELEMENTWISE},
        {PL_OP_RSQRT, ELEMENTWISE},
        {PL_OP_ABS, ELEMENTWISE},
        {PL_OP_POW, ELEMENTWISE},
        {PL_OP_SILU, ELEMENTWISE},
        {PL_OP_WHERE, ELEMENTWISE},
        {PL_OP_SOFTMAX, NORMALISING},
        {PL_OP_LOG_SOFTMAX, NORMALISING},
        {PL_OP_LAYER_NORM, LAYER_NORM},
        {PL_OP_BATCH_NORM, BATCH_NORM},
        {PL_OP_MAX_POOL, POOL},
        {PL_OP_AVG_POOL, POOL},
        {PL_OP_GLOBAL_AVG_POOL, POOL},
        {PL_OP_ADAPTIVE_AVG_POOL, POOL},
        {PL_OP_MAX_POOL1D, POOL},
        {PL_OP_MAX_POOL3D, POOL},
        {PL_OP_AVG_POOL1D, POOL},
        {PL_OP_AVG_POOL3D, POOL},
        {PL_OP_ADAPTIVE_AVG_POOL1D, POOL},
        {PL_OP_ADAPTIVE_AVG_POOL3D, POOL},
        {PL_OP_CONV1D, CONV},
        {PL_OP_CONV2D, CONV},
        {PL_OP_CONV3D, CONV},
        {PL_OP_EMBEDDING, EMBEDDING},
        {PL_OP_RESHAPE, RESHAPE},
        {PL_OP_FLATTEN, RESHAPE},
        {PL_OP_TRANSPOSE, TRANSPOSE},
        {PL_OP_SPLIT, CUT},
        {PL_OP_DROPOUT, DROPOUT},
        {PL_OP_SOFTMAX_CROSS_ENTROPY, LOSS},
    };
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (families[i].kind == kind)
            return families[i].family;
    return NOT_SPLIT;
}

static bool rule_transpose(const splitter *sp, const pl_op *op, rule *r)
{
    int o = (int)(op - sp->g->ops), t = op->inputs[0];
    if (!in_group(sp, o, t, SPLIT))
        return false;
    for (int a = 0; a < op->attrs.perm.n; a++)
        if (op->attrs.perm.v[a] == sp->val[t].axis)
            r->out_axis = a;
    r->in[0] = IN_SPLIT, r->in_axis[0] = sp->val[t].axis, r->out = SPLIT;
    r->in_groups[0] = r->out_groups = groups_of(sp->val[t].groups);
    return true;
}

bool pl_split_vocab_loss(const splitter *sp, int o)
{
    const pl_op *op = &sp->g->ops[o];
    int logits = op->inputs[0];
    return family_of(op->kind) == LOSS && sp->split[o] > 1 &&
           split_along(sp, o, logits, sp->g->tensors[logits].rank - 1, 1);
}

bool pl_split_rule_for(const splitter *sp, int o, rule *r)
{
    const pl_op *op = &sp->g->ops[o];
    const pl_tensor *out = op->n_outputs == 1 ? &sp->g->tensors[op->outputs[0]] : NULL;
    int k = sp->split[o];
    family f = family_of(op->kind);
    *r = (rule){.reshape_axis = -1};
    if (k < 2 || op->n_inputs > 8 || (!out && f != CUT))
        return false;
    switch (f) {
    case PRODUCT: return rule_matmul(sp, op, r);
    case SUM: return rule_elementwise(sp, op, -1, r) || rule_partial_sum(sp, op, r);
    case SCALING: return rule_partial_scale(sp, op, r) || rule_elementwise(sp, op, -1, r);
    case SCALE:
        if (in_group(sp, o, op->inputs[0], PARTIAL)) {
            r->in[0] = IN_PARTIAL, r->out = PARTIAL;
            return true;
        }
        return rule_elementwise(sp, op, -1, r);
    case ELEMENTWISE: return rule_elementwise(sp, op, -1, r);
    case NORMALISING: return rule_elementwise(sp, op, resolve(op->attrs.axis, out->rank), r);
    case LAYER_NORM: /* its scale and shift are along the axis it normalises */
        if (!rule_elementwise(sp, op, resolve(op->attrs.axis, out->rank), r))
            return false;
        for (int i = 1; i < op->n_inputs; i++)
            r->in[i] = IN_WHOLE;
        return true;
    case BATCH_NORM:
        for (int i = 1; i < op->n_inputs; i++)
            r->in[i] = IN_SPLIT, r->in_axis[i] = 0;
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = 1;
        return shares(out, 1, k, 1);
    case POOL:
        r->in[0] = IN_SPLIT, r->in_axis[0] = 1, r->out = SPLIT, r->out_axis = 1;
        return shares(out, 1, k, 1);
    case CONV: return rule_conv(sp, op, r);
    case EMBEDDING: return rule_embedding(sp, op, r);
    case RESHAPE: return rule_reshape(sp, op, r);
    case TRANSPOSE: return rule_transpose(sp, op, r);
    case CUT: return rule_split(sp, op, r);
    case DROPOUT: /* each shard draws its elements' keep decisions as the whole would */
        r->dropout = true;
        return rule_elementwise(sp, op, -1, r) && groups_of(r->out_groups) == 1;
    case LOSS: return false; /* no shards of its own kind: pl_split_vocab_loss */
    default: return false;
    }
}

bool pl_split_rule_fits(const splitter *sp, const pl_op *op, const rule *r, int k)
{
    for (int i = 0; i < op->n_inputs; i++)
        if (r->in[i] == IN_SPLIT && !shares(&sp->g->tensors[op->inputs[i]], r->in_axis[i], k,
                                            groups_of(r->in_groups[i])))
            return false;
    return true;
}

bool pl_split_graph_splits(pl_op_kind kind)
{
    return family_of(kind) != NOT_SPLIT;
}
