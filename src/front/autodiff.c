/* The autodiff driver: which tensors need gradients, the loss seed, walking the forward
 * ops backwards through their rules, accumulating parameter gradients, the updates. */
#include "autodiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff_impl.h"
#include "graph_build.h"

int pl_ad_grad(const pl_autodiff *ad, int t)
{
    return t < ad->n_model_tensors ? ad->grad[t] : -1;
}

bool pl_ad_needs(const pl_autodiff *ad, int t)
{
    return t < ad->n_model_tensors && ad->needs[t];
}

int pl_ad_output(const pl_autodiff *ad, int first_output, int k)
{
    return ad->g->tensors[first_output].producer >= 0
               ? ad->g->ops[ad->g->tensors[first_output].producer].outputs[k]
               : -1;
}

static int add_op(pl_autodiff *ad, pl_op_kind kind, const int *inputs, int n_inputs,
                  int n_outputs, const pl_attrs *attrs, pl_phase phase, int group)
{
    char name[PL_MAX_NAME + 64];
    snprintf(name, sizeof name, "%s/%s#%d", ad->g->ops[ad->op].name,
             pl_op_info_of(kind)->name, ad->emitted++);
    return pl_graph_add_op(ad->g, kind, name, inputs, n_inputs, n_outputs, attrs, phase,
                           group, ad->err);
}

int pl_ad_emit(pl_autodiff *ad, pl_op_kind kind, const int *inputs, int n_inputs,
               int n_outputs, const pl_attrs *attrs)
{
    pl_attrs forward = ad->g->ops[ad->op].attrs;
    int o = add_op(ad, kind, inputs, n_inputs, n_outputs, attrs ? attrs : &forward,
                   PL_PHASE_BACKWARD, ad->g->ops[ad->op].group);
    return o < 0 ? -1 : n_outputs ? ad->g->ops[o].outputs[0] : 0;
}

int pl_ad_grad_or_zeros(pl_autodiff *ad, int t)
{
    int grad = pl_ad_grad(ad, t);
    return grad >= 0 ? grad : pl_ad_emit(ad, PL_OP_ZEROS_LIKE, &t, 1, 1, NULL);
}

/* The parameter's accumulator, created on first use. */
static int accumulator_of(pl_autodiff *ad, int param)
{
    if (ad->accumulator[param] >= 0)
        return ad->accumulator[param];
    char name[PL_MAX_NAME + 8];
    snprintf(name, sizeof name, "%s/grad", ad->g->tensors[param].name);
    pl_tensor shape = ad->g->tensors[param];
    int acc = pl_graph_add_tensor(ad->g, name, PL_TENSOR_STATE, &shape);
    if (acc < 0) {
        pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory");
        return -1;
    }
    ad->g->tensors[acc].init = (pl_init){.kind = PL_INIT_ZEROS};
    ad->g->tensors[acc].param = param;
    ad->accumulator[param] = acc;
    return acc;
}

bool pl_ad_contribute(pl_autodiff *ad, int t, int gradient)
{
    if (gradient < 0)
        return false;
    pl_tensor_kind kind = ad->g->tensors[t].kind;
    if ((kind != PL_TENSOR_PARAM && kind != PL_TENSOR_ACTIVATION) || ad->g->tensors[t].frozen)
        return true; /* data, labels, constants, frozen parameters: nothing to learn */
    if (!pl_tensor_has_dims(&ad->g->tensors[gradient], ad->g->tensors[t].rank,
                            ad->g->tensors[t].dims)) {
        int pair[2] = {gradient, t};
        if ((gradient = pl_ad_emit(ad, PL_OP_SUM_TO, pair, 2, 1, NULL)) < 0)
            return false;
    }
    if (kind == PL_TENSOR_PARAM) {
        int acc = accumulator_of(ad, t);
        int pair[2] = {acc, gradient};
        return acc >= 0 && add_op(ad, PL_OP_ACCUMULATE, pair, 2, 0, NULL, PL_PHASE_BACKWARD,
                                  ad->home[t]) >= 0;
    }
    if (ad->grad[t] < 0) {
        ad->grad[t] = gradient;
        return true;
    }
    int pair[2] = {ad->grad[t], gradient};
    return (ad->grad[t] = pl_ad_emit(ad, PL_OP_ADD, pair, 2, 1, NULL)) >= 0;
}

bool pl_ad_contribute_rows(pl_autodiff *ad, int table, int dy, int ids, int64_t start)
{
    if (ad->g->tensors[table].frozen)
        return true; /* a frozen table: nothing to learn */
    if (ad->g->tensors[table].kind != PL_TENSOR_PARAM) {
        pl_error_set(ad->err, PL_EINPUT, NULL, "embedding \"%s\": the table \"%s\" must be "
                     "a parameter to be trained", ad->g->ops[ad->op].name,
                     ad->g->tensors[table].name);
        return false;
    }
    int acc = accumulator_of(ad, table);
    int inputs[3] = {acc, dy, ids};
    pl_attrs rows;
    pl_attrs_default(&rows);
    rows.start = start;
    return acc >= 0 && add_op(ad, PL_OP_SCATTER_ACCUMULATE, inputs, 3, 0, &rows,
                              PL_PHASE_BACKWARD, ad->home[table]) >= 0;
}

/* ---- the passes ----------------------------------------------------------------------- */

static void mark_needs_and_homes(pl_autodiff *ad)
{
    pl_graph *g = ad->g;
    for (int t = 0; t < g->n_tensors; t++)
        ad->needs[t] = g->tensors[t].kind == PL_TENSOR_PARAM && !g->tensors[t].frozen;
    for (int o = 0; o < g->n_forward_ops; o++) {
        const pl_op *op = &g->ops[o];
        bool any = false;
        for (int i = 0; i < op->n_inputs; i++) {
            int t = op->inputs[i];
            any |= ad->needs[t];
            if (g->tensors[t].kind == PL_TENSOR_PARAM && ad->home[t] < 0)
                ad->home[t] = op->group;
        }
        if (any && pl_op_info_of(op->kind)->backward)
            for (int i = 0; i < op->n_outputs; i++)
                ad->needs[op->outputs[i]] = true;
    }
}

/* Batch norm keeps running averages as state, updated by its forward kernel. */
static bool add_running_averages(pl_autodiff *ad)
{
    pl_graph *g = ad->g;
    for (int o = 0; o < g->n_forward_ops; o++) {
        if (g->ops[o].kind != PL_OP_BATCH_NORM || g->ops[o].n_inputs != 3)
            continue;
        int *inputs = pl_arena_alloc(&g->arena, 5 * sizeof *inputs);
        if (!inputs)
            return pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory"), false;
        memcpy(inputs, g->ops[o].inputs, 3 * sizeof *inputs);
        for (int k = 0; k < 2; k++) {
            char name[PL_MAX_NAME + 16];
            snprintf(name, sizeof name, "%s/running_%s", g->ops[o].name, k ? "var" : "mean");
            pl_tensor shape = g->tensors[inputs[1]]; /* gamma: [C] */
            int t = pl_graph_add_tensor(g, name, PL_TENSOR_STATE, &shape);
            if (t < 0)
                return pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory"), false;
            g->tensors[t].init = (pl_init){.kind = k ? PL_INIT_ONES : PL_INIT_ZEROS};
            inputs[3 + k] = t;
        }
        g->ops[o].inputs = inputs;
        g->ops[o].n_inputs = 5;
    }
    return true;
}

/* LSTM cells keep their activated gates as a third output, so that the gradient reads
 * them instead of recomputing the gate product. */
static bool keep_lstm_gates(pl_autodiff *ad)
{
    pl_graph *g = ad->g;
    for (int o = 0; o < g->n_forward_ops; o++) {
        if (g->ops[o].kind != PL_OP_LSTM_CELL || g->ops[o].n_outputs != 2)
            continue;
        int *outputs = pl_arena_alloc(&g->arena, 3 * sizeof *outputs);
        char name[PL_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s/gates", g->ops[o].name);
        pl_tensor placeholder = {.dtype = PL_F32, .batch_axis = PL_NO_BATCH};
        int t = outputs ? pl_graph_add_tensor(g, name, PL_TENSOR_ACTIVATION, &placeholder) : -1;
        if (t < 0)
            return pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory"), false;
        memcpy(outputs, g->ops[o].outputs, 2 * sizeof *outputs);
        outputs[2] = t;
        g->tensors[t].producer = o;
        g->ops[o].outputs = outputs;
        g->ops[o].n_outputs = 3;
        pl_infer_ctx ctx;
        if (!pl_graph_infer_op(g, o, &ctx))
            return pl_error_set(ad->err, PL_EINTERNAL, NULL, "lstm_cell \"%s\": %s",
                                g->ops[o].name, ctx.message), false;
    }
    return true;
}

static int new_state(pl_autodiff *ad, int param, const char *suffix)
{
    char name[PL_MAX_NAME + 16];
    snprintf(name, sizeof name, "%s/%s", ad->g->tensors[param].name, suffix);
    pl_tensor shape = ad->g->tensors[param];
    int t = pl_graph_add_tensor(ad->g, name, PL_TENSOR_STATE, &shape);
    if (t < 0) {
        pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory");
        return -1;
    }
    ad->g->tensors[t].init = (pl_init){.kind = PL_INIT_ZEROS};
    ad->g->tensors[t].param = param;
    return t;
}

static bool add_updates(pl_autodiff *ad, int n_params_scan)
{
    pl_graph *g = ad->g;
    const pl_optimizer *opt = &g->optimizer;
    pl_attrs attrs;
    pl_attrs_default(&attrs);
    attrs.lr = opt->lr;
    attrs.momentum = opt->momentum;
    attrs.weight_decay = opt->weight_decay;
    attrs.beta1 = opt->beta1;
    attrs.beta2 = opt->beta2;
    attrs.eps = opt->eps;
    for (int p = 0; p < n_params_scan; p++) {
        if (ad->accumulator[p] < 0)
            continue;
        ad->op = ad->home[p];
        int inputs[4] = {p, ad->accumulator[p], -1, -1}, n = 2;
        pl_op_kind kind = PL_OP_SGD_UPDATE;
        if (opt->kind == PL_OPT_ADAM) {
            kind = PL_OP_ADAM_UPDATE;
            inputs[2] = new_state(ad, p, "adam_m");
            inputs[3] = new_state(ad, p, "adam_v");
            n = 4;
        } else if (opt->momentum > 0) {
            inputs[2] = new_state(ad, p, "velocity");
            n = 3;
        }
        for (int i = 2; i < n; i++)
            if (inputs[i] < 0)
                return false;
        if (add_op(ad, kind, inputs, n, 0, &attrs, PL_PHASE_UPDATE, ad->home[p]) < 0)
            return false;
    }
    return true;
}

/* Zero-bubble pipelines (Qi et al. 2023) split the backward pass into B, the gradients of
 * activations, which the previous stage waits for, and W, the gradients of parameters,
 * which only the optimizer's update waits for. A backward op is B when one of its outputs
 * is an activation's gradient or feeds a B op; the rest are W. */
static bool mark_weight_gradients(pl_autodiff *ad, int n_model_tensors)
{
    pl_graph *g = ad->g;
    bool *b_input = calloc((size_t)g->n_tensors, sizeof *b_input); /* read by a B op */
    if (!b_input) {
        pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory");
        return false;
    }
    for (int t = 0; t < n_model_tensors; t++)
        if (ad->grad[t] >= 0 && g->tensors[t].kind == PL_TENSOR_ACTIVATION)
            b_input[ad->grad[t]] = true;
    for (int o = g->n_ops - 1; o >= g->n_forward_ops; o--) {
        pl_op *op = &g->ops[o];
        bool b = false;
        for (int j = 0; j < op->n_outputs; j++)
            b = b || b_input[op->outputs[j]];
        op->weight_gradient = op->phase == PL_PHASE_BACKWARD && !b;
        if (b)
            for (int j = 0; j < op->n_inputs; j++)
                b_input[op->inputs[j]] = true;
    }
    free(b_input);
    return true;
}

pl_status pl_autodiff_build(pl_graph *g, pl_error *err)
{
    int n = g->n_tensors;
    pl_autodiff ad = {.g = g, .err = err, .n_model_tensors = n};
    ad.grad = malloc((size_t)n * sizeof *ad.grad);
    ad.needs = calloc((size_t)n, sizeof *ad.needs);
    ad.home = malloc((size_t)n * sizeof *ad.home);
    ad.accumulator = malloc((size_t)n * sizeof *ad.accumulator);
    bool ok = ad.grad && ad.needs && ad.home && ad.accumulator;
    if (!ok)
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int t = 0; ok && t < n; t++)
        ad.grad[t] = ad.home[t] = ad.accumulator[t] = -1;
    if (ok) {
        mark_needs_and_homes(&ad);
        ok = add_running_averages(&ad) && keep_lstm_gates(&ad);
    }
    if (ok && !ad.needs[g->loss]) {
        pl_error_set(err, PL_EINPUT, NULL, "the loss \"%s\" does not depend on any trainable "
                     "parameter",
                     g->tensors[g->loss].name);
        ok = false;
    }
    if (ok) {
        pl_tensor scalar = g->tensors[g->loss];
        int seed = pl_graph_add_tensor(g, "loss/seed", PL_TENSOR_CONST, &scalar);
        if ((ok = seed >= 0)) {
            g->tensors[seed].init = (pl_init){.kind = PL_INIT_ONES};
            ad.grad[g->loss] = seed;
        } else {
            pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
    }
    for (int o = g->n_forward_ops - 1; ok && o >= 0; o--) {
        if (!(ok = pl_ad_flush_lstm(&ad, o)))
            break;
        const pl_op *op = &g->ops[o];
        bool (*rule)(pl_autodiff *, int) = pl_op_info_of(op->kind)->backward;
        bool has_grad = false, wanted = false;
        for (int i = 0; i < op->n_outputs; i++)
            has_grad |= pl_ad_grad(&ad, op->outputs[i]) >= 0;
        for (int i = 0; i < op->n_inputs; i++) /* batch norm's running averages are new */
            wanted |= pl_ad_needs(&ad, op->inputs[i]);
        if (!rule || !has_grad || !wanted)
            continue;
        ad.op = o;
        ok = rule(&ad, o);
    }
    if (ok)
        ok = pl_ad_finish_lstm(&ad);
    if (ok)
        ok = mark_weight_gradients(&ad, n);
    if (ok)
        ok = add_updates(&ad, n);
    free(ad.grad);
    free(ad.needs);
    free(ad.home);
    free(ad.accumulator);
    free(ad.lstm_blocks);
    if (ok)
        return PL_OK;
    /* The rule that failed said why; keep its status (bad input or out of memory). */
    pl_status status = err && err->status != PL_OK ? err->status : PL_EINTERNAL;
    pl_error_set(err, PL_EINTERNAL, NULL, "automatic differentiation failed");
    return status;
}

int pl_autodiff_gradient_of(const pl_graph *graph, int param)
{
    for (int o = graph->n_forward_ops; o < graph->n_ops; o++) {
        const pl_op *op = &graph->ops[o];
        if ((op->kind == PL_OP_SGD_UPDATE || op->kind == PL_OP_ADAM_UPDATE) &&
            op->inputs[0] == param)
            return op->inputs[1];
    }
    return -1;
}
