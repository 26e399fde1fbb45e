/* placer eval MODEL.json: the forward pass only, over batches of data or of a tensor file
 * of inputs, with given weights: the mean loss, a classifier's accuracy, and optionally
 * the tensors that feed the loss (the outputs) and one batch's parameter gradients, as
 * tensor files. What an importer checks a model against its source with; inference
 * semantics (PyTorch's model.eval()) unless --train-mode. Runs on one device. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "cli.h"
#include "data.h"
#include "session.h"
#include "tensor_file.h"

typedef struct eval_options {
    const char *model, *weights, *data, *inputs, *outputs, *gradients;
    long batches, threads;
    bool train_mode;
} eval_options;

static void usage(void)
{
    printf("Usage: placer eval MODEL.json [options]\n"
           "Runs the model forward over batches and prints the mean loss and, for a\n"
           "softmax_cross_entropy loss, the accuracy. Inference semantics by default: batch\n"
           "norm uses its running averages, dropout passes its input (PyTorch's\n"
           "model.eval()). Runs on a single device.\n"
           "\n"
           "  --weights FILE    the parameters and running averages, finite (a tensor\n"
           "                    file, tensor-file.md; default: the model's initialisers)\n"
           "  --data PATH       a Fashion-MNIST directory, a text file, or 'synthetic', as\n"
           "                    placer train takes it: its test split (default: chosen by\n"
           "                    the model's inputs)\n"
           "  --batches N       evaluate N batches (default: the whole batches of the test\n"
           "                    split; past its end the samples wrap around)\n"
           "  --inputs FILE     instead of --data: a tensor file with one tensor per model\n"
           "                    input, named as the input, its batch axis (the first,\n"
           "                    unless the model says otherwise) a multiple of the batch\n"
           "                    size: the batches in order (values as given: a NaN gives\n"
           "                    a NaN loss)\n"
           "  --train-mode      batch statistics and dropout, as a training step computes\n"
           "  --outputs FILE    write the tensors that feed the loss (the logits, say) as a\n"
           "                    tensor file, the batches concatenated along the batch axis\n"
           "  --gradients FILE  run forward and backward (training mode) on the first batch\n"
           "                    and write every trainable parameter's gradient, named as\n"
           "                    the parameter; nothing is updated\n"
           "  --threads N       worker threads (default 1)\n"
           "\n"
           "More: " PLACER_DOCDIR "/training.md.\n");
}

static int parse_options(int argc, char **argv, eval_options *o)
{
    enum { WEIGHTS = 256, DATA, BATCHES, INPUTS, TRAIN_MODE, OUTPUTS, GRADIENTS, THREADS };
    static const struct option options[] = {
        {"weights", required_argument, NULL, WEIGHTS}, {"data", required_argument, NULL, DATA},
        {"batches", required_argument, NULL, BATCHES}, {"inputs", required_argument, NULL, INPUTS},
        {"train-mode", no_argument, NULL, TRAIN_MODE},
        {"outputs", required_argument, NULL, OUTPUTS},
        {"gradients", required_argument, NULL, GRADIENTS},
        {"threads", required_argument, NULL, THREADS}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (eval_options){.threads = 1};
    opterr = 0;
    int c, index = 0;
    while ((c = getopt_long(argc, argv, "h", options, &index)) != -1) {
        bool ok = true;
        switch (c) {
        case WEIGHTS: o->weights = optarg; break;
        case DATA: o->data = optarg; break;
        case INPUTS: o->inputs = optarg; break;
        case OUTPUTS: o->outputs = optarg; break;
        case GRADIENTS: o->gradients = optarg; break;
        case TRAIN_MODE: o->train_mode = true; break;
        case BATCHES: ok = pl_cli_parse_long(optarg, 1, INT_MAX, &o->batches); break;
        case THREADS: ok = pl_cli_parse_long(optarg, 1, 256, &o->threads); break;
        case 'h': usage(); return -1;
        default:
            return pl_cli_usage_error("eval: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
        if (!ok)
            return pl_cli_usage_error("eval: invalid value '%s' for --%s", optarg,
                                      options[index].name);
    }
    if (optind >= argc)
        return pl_cli_usage_error("eval: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("eval: one model at a time ('%s' is extra)", argv[optind + 1]);
    if (o->inputs && (o->data || o->batches))
        return pl_cli_usage_error("eval: --inputs holds the batches: no --data or --batches "
                                  "with it");
    o->model = argv[optind];
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->weights, "the weights", false},
                                  {o->data, "the data", false},
                                  {o->inputs, "the inputs", false}};
    const pl_cli_file outputs[] = {{o->outputs, "the outputs", true},
                                   {o->gradients, "the gradients", true}};
    return pl_cli_check_outputs(inputs, 4, outputs, 2);
}

typedef struct evaluator {
    eval_options o;
    pl_cli_setup setup; /* owns the model */
    pl_graph *g;
    pl_session *s;
    void **buffers;      /* per tensor: the session's buffer (inputs filled here) */
    pl_dataset *data;    /* without --inputs */
    pl_split split;
    pl_tensor_file *in;  /* --inputs */
    int *input_index;    /* per tensor: its tensor in `in`, or -1 */
    long batches;
    pl_named_tensor *outputs; /* the loss's activation inputs, all batches */
    int n_outputs;
} evaluator;

/* ---- --inputs: one tensor per model input, whole batches ------------------------------ */

static pl_status match_input(evaluator *e, int k, int64_t *batches, pl_error *err)
{
    const pl_graph *g = e->g;
    const pl_named_tensor *f = &e->in->tensors[k];
    int t = pl_graph_find_tensor(g, f->name);
    if (t < 0 || g->tensors[t].kind != PL_TENSOR_INPUT)
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" is not an input of model "
                            "\"%s\"", f->name, g->name);
    const pl_tensor *m = &g->tensors[t];
    int axis = m->batch_axis;
    char want[160];
    pl_shape_format(m, want, sizeof want);
    bool same = f->rank == m->rank && f->dims[axis] > 0 && f->dims[axis] % g->batch_size == 0;
    for (int i = 0; same && i < m->rank; i++)
        same = i == axis || f->dims[i] == m->dims[i];
    if (f->dtype != m->dtype)
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" is %s; the model's input is "
                            "%s", f->name, pl_dtype_name(f->dtype), pl_dtype_name(m->dtype));
    if (!same) {
        char have[160], whole[200];
        pl_named_tensor_format_shape(f, have, sizeof have);
        int used = 0;
        for (int i = 0; i < m->rank; i++)
            used += snprintf(whole + used, sizeof whole - (size_t)used, "%s%s%lld",
                             i ? "," : "[", i == axis ? "k*" : "", (long long)m->dims[i]);
        snprintf(whole + used, sizeof whole - (size_t)used, "]");
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" has shape %s; the model's "
                            "input is %s, so it must be %s (k batches, k >= 1)", f->name,
                            have, want, whole);
    }
    int64_t k_batches = f->dims[axis] / g->batch_size;
    if (*batches && k_batches != *batches)
        return pl_error_set(err, PL_EINPUT, NULL, "tensor \"%s\" holds %lld batches, another "
                            "input %lld", f->name, (long long)k_batches, (long long)*batches);
    *batches = k_batches;
    e->input_index[t] = k;
    return PL_OK;
}

static int open_inputs(evaluator *e)
{
    pl_error err;
    /* the index first: a file that is not this model's is refused before its data are read */
    if (!(e->in = pl_tensor_file_open(e->o.inputs, &err)))
        return pl_cli_report(&err);
    e->input_index = malloc(((size_t)e->g->n_tensors + 1) * sizeof *e->input_index);
    if (!e->input_index)
        return pl_cli_error("out of memory"), PL_EXIT_FAILURE;
    for (int t = 0; t < e->g->n_tensors; t++)
        e->input_index[t] = -1;
    int64_t batches = 0;
    pl_status status = PL_OK;
    for (int k = 0; status == PL_OK && k < e->in->n; k++)
        status = match_input(e, k, &batches, &err);
    for (int t = 0; status == PL_OK && t < e->g->n_tensors; t++)
        if (e->g->tensors[t].kind == PL_TENSOR_INPUT && e->input_index[t] < 0)
            status = pl_error_set(&err, PL_EINPUT, NULL, "the model's input \"%s\" is not in "
                                  "the file", e->g->tensors[t].name);
    for (int t = 0; status == PL_OK && t < e->g->n_tensors; t++)
        if (e->input_index[t] >= 0)
            status = pl_tensor_file_load(e->in, e->input_index[t], &err);
    if (status != PL_OK)
        return pl_cli_report(&err);
    e->batches = (long)batches;
    return PL_EXIT_OK;
}

/* Tensor t of the model over all the batches: k times its batch on its batch axis. */
static pl_tensor all_batches(const evaluator *e, int t)
{
    pl_tensor whole = e->g->tensors[t];
    whole.dims[whole.batch_axis] *= e->batches;
    return whole;
}

/* Batch b of the inputs into the session. */
static void fill_batch(evaluator *e, long b)
{
    const pl_graph *g = e->g;
    if (!e->in) {
        pl_dataset_fill(e->data, e->split, 0, (int64_t)b * g->batch_size, g->batch_size,
                        e->buffers);
        return;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (e->input_index[t] < 0)
            continue;
        pl_tensor whole = all_batches(e, t);
        pl_batch_gather(&whole, e->in->tensors[e->input_index[t]].data,
                        (int64_t)b * g->batch_size, g->batch_size, e->buffers[t]);
    }
}

/* ---- the outputs: what feeds the loss, all batches along the batch axis (axis 0 for an
 * unbatched one, batch after batch) ------------------------------------------------------ */

static int prepare_outputs(evaluator *e)
{
    const pl_graph *g = e->g;
    const pl_op *loss = g->tensors[g->loss].producer >= 0 ? &g->ops[g->tensors[g->loss].producer]
                                                          : NULL;
    e->outputs = calloc(loss ? (size_t)loss->n_inputs + 1 : 1, sizeof *e->outputs);
    if (!e->outputs)
        return pl_cli_error("out of memory"), PL_EXIT_FAILURE;
    for (int i = 0; loss && i < loss->n_inputs; i++) {
        const pl_tensor *t = &g->tensors[loss->inputs[i]];
        bool seen = false; /* a tensor read twice by the loss (mse(x, x)) is written once */
        for (int k = 0; k < e->n_outputs; k++)
            seen |= strcmp(e->outputs[k].name, t->name) == 0;
        if (t->kind != PL_TENSOR_ACTIVATION || pl_tensor_bytes(t) == 0 || seen)
            continue;
        pl_named_tensor *out = &e->outputs[e->n_outputs++];
        *out = (pl_named_tensor){.name = t->name, .dtype = t->dtype, .rank = t->rank ? t->rank : 1};
        memcpy(out->dims, t->dims, sizeof t->dims);
        if (!t->rank)
            out->dims[0] = 1;
        out->dims[t->batch_axis > 0 ? t->batch_axis : 0] *= e->batches;
        if (!(out->data = malloc((size_t)pl_tensor_bytes(t) * (size_t)e->batches)))
            return pl_cli_error("out of memory for the outputs"), PL_EXIT_FAILURE;
    }
    return PL_EXIT_OK;
}

static void keep_outputs(evaluator *e, long b)
{
    for (int k = 0; k < e->n_outputs; k++) {
        int t = pl_graph_find_tensor(e->g, e->outputs[k].name);
        const pl_tensor *one = &e->g->tensors[t];
        size_t bytes = (size_t)pl_tensor_bytes(one);
        if (one->batch_axis == PL_NO_BATCH) {
            memcpy((char *)e->outputs[k].data + bytes * (size_t)b, e->buffers[t], bytes);
            continue;
        }
        pl_tensor whole = all_batches(e, t);
        pl_batch_scatter(&whole, e->outputs[k].data, (int64_t)b * e->g->batch_size,
                         e->g->batch_size, e->buffers[t]);
    }
}

/* ---- the passes ------------------------------------------------------------------------- */

static int evaluate(evaluator *e)
{
    const pl_graph *g = e->g;
    pl_cli_scorer sc = pl_cli_find_scorer(g);
    double total = 0;
    int64_t correct = 0;
    pl_error err;
    pl_error_init(&err, e->o.model);
    for (long b = 0; b < e->batches && !pl_cli_interrupted; b++) {
        fill_batch(e, b);
        float loss;
        if (pl_session_forward(e->s, e->o.train_mode, &loss, &err) != PL_OK)
            return pl_cli_report(&err);
        total += loss;
        if (sc.logits >= 0)
            correct += pl_cli_count_correct(&sc, e->buffers[sc.logits], e->buffers[sc.labels],
                                            g->batch_size);
        if (e->o.outputs)
            keep_outputs(e, b);
    }
    if (pl_cli_interrupted) {
        fprintf(stderr, "placer: eval: interrupted; nothing written\n");
        return PL_EXIT_INTERRUPTED;
    }
    fprintf(pl_cli_text, "loss %.6f", total / (double)e->batches);
    if (sc.logits >= 0)
        fprintf(pl_cli_text, "  accuracy %.4f",
                (double)correct / (double)(e->batches * g->batch_size * sc.positions_per_sample));
    fprintf(pl_cli_text, "\n");
    if (!e->o.outputs)
        return PL_EXIT_OK;
    pl_error_init(&err, e->o.outputs);
    if (pl_tensor_file_write(e->o.outputs, e->outputs, e->n_outputs, &err) != PL_OK)
        return pl_cli_report(&err);
    fprintf(pl_cli_text, "outputs: %s (%d tensor%s)\n", e->o.outputs, e->n_outputs,
            e->n_outputs == 1 ? "" : "s");
    return PL_EXIT_OK;
}

/* One training step's gradients on the first batch, written; no update runs. */
static int write_gradients(evaluator *e)
{
    const pl_graph *g = e->g;
    pl_error err;
    pl_error_init(&err, e->o.model);
    fill_batch(e, 0);
    float loss;
    if (pl_session_gradients(e->s, 1, 1, &loss, &err) != PL_OK)
        return pl_cli_report(&err);
    pl_named_tensor *list = calloc((size_t)g->n_tensors + 1, sizeof *list);
    if (!list)
        return pl_cli_error("out of memory"), PL_EXIT_FAILURE;
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        int grad = g->tensors[t].kind == PL_TENSOR_PARAM ? pl_autodiff_gradient_of(g, t) : -1;
        if (grad < 0)
            continue;
        list[n] = (pl_named_tensor){.name = g->tensors[t].name, .dtype = PL_F32,
                                    .rank = g->tensors[t].rank, .data = e->buffers[grad]};
        memcpy(list[n].dims, g->tensors[t].dims, sizeof list[n].dims);
        n++;
    }
    pl_error_init(&err, e->o.gradients);
    pl_status status = pl_tensor_file_write(e->o.gradients, list, n, &err);
    free(list);
    if (status != PL_OK)
        return pl_cli_report(&err);
    fprintf(pl_cli_text,
            "gradients: %s (%d parameter%s; loss %.6f on the first batch, training mode)\n",
            e->o.gradients, n, n == 1 ? "" : "s", (double)loss);
    return PL_EXIT_OK;
}

static int open_data(evaluator *e)
{
    pl_error err;
    pl_error_init(&err, e->o.model);
    if (!(e->data = pl_dataset_open(e->g, e->o.data, 1, &err)))
        return pl_cli_report(&err);
    e->split = pl_dataset_size(e->data, PL_SPLIT_TEST) > 0 ? PL_SPLIT_TEST : PL_SPLIT_TRAIN;
    int64_t whole = pl_dataset_size(e->data, e->split) / e->g->batch_size;
    e->batches = e->o.batches ? e->o.batches : whole > 0 ? (long)whole : 1;
    return PL_EXIT_OK;
}

static int set_up(evaluator *e)
{
    e->setup = (pl_cli_setup){.model_path = e->o.model, .needs = PL_CLI_TRAINING};
    int status = pl_cli_setup_load(&e->setup);
    if (status != PL_EXIT_OK)
        return status;
    e->g = e->setup.graph;
    pl_error err;
    pl_error_init(&err, e->o.model);
    if (!(e->s = pl_session_new(e->g, (int)e->o.threads, &err)))
        return pl_cli_report(&err);
    if (!(e->buffers = calloc((size_t)e->g->n_tensors + 1, sizeof *e->buffers)))
        return pl_cli_error("out of memory"), PL_EXIT_FAILURE;
    for (int t = 0; t < e->g->n_tensors; t++)
        e->buffers[t] = pl_session_data(e->s, t);
    if (e->o.weights &&
        (status = pl_cli_weights(e->o.weights, false, e->g, e->s, NULL)) != PL_EXIT_OK)
        return status;
    status = e->o.inputs ? open_inputs(e) : open_data(e);
    if (status == PL_EXIT_OK && e->o.outputs)
        status = prepare_outputs(e);
    if (status == PL_EXIT_OK)
        fprintf(pl_cli_text, "eval %s: %ld batch%s of %d, %s mode, weights: %s, inputs: %s\n",
                e->g->name, e->batches, e->batches == 1 ? "" : "es", e->g->batch_size,
                e->o.train_mode ? "training" : "inference",
                e->o.weights ? e->o.weights : "the model's initialisers",
                e->in ? e->o.inputs : pl_dataset_describe(e->data));
    return status;
}

int pl_cmd_eval(int argc, char **argv)
{
    evaluator e = {0};
    int status = parse_options(argc, argv, &e.o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    status = set_up(&e);
    pl_cli_catch_interrupt(true);
    if (status == PL_EXIT_OK)
        status = evaluate(&e);
    if (status == PL_EXIT_OK && e.o.gradients)
        status = write_gradients(&e);
    pl_cli_catch_interrupt(false);
    for (int k = 0; k < e.n_outputs; k++)
        free(e.outputs[k].data);
    free(e.outputs);
    free(e.input_index);
    pl_tensor_file_free(e.in);
    pl_dataset_free(e.data);
    free(e.buffers);
    pl_session_free(e.s);
    pl_cli_setup_release(&e.setup);
    return status;
}
