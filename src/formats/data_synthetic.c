/* Synthetic data for any model: inputs drawn from (seed, split, sample index) and labels
 * computed from them by a fixed random "teacher" that a model of the graph's kind can
 * learn, so that training lowers the loss. The teacher does not depend on the seed: the
 * seed picks the samples, not the task.
 *
 * Teachers, by label:
 * - class labels (read by softmax_cross_entropy over C classes): the argmax over c of a
 *   fixed random linear function of the sample's data (f32 values times Gaussian weights,
 *   one weight per channel for images [C,H,W], so that the class rests on channel sums,
 *   plus a Gaussian score per (input, id) for i32 ids, summed over the ids' positions:
 *   linear in their counts, a bag of ids that a sequence classifier can learn whether or
 *   not it sees order); every element of a label with several elements takes the same class;
 * - per-position labels [T] next to i32 tokens [T]: label[t] = argmax over c of
 *   A[tok[t]][c] + B[tok[t-1]][c] (A, B fixed Gaussian), the token and the one before it;
 * - a sequence-to-sequence model (a source its loss sees whole, and a teacher-forcing
 *   input [T] it sees up to t): the target is the source reversed, and the teacher-forcing
 *   input is the target shifted right after a start id 0;
 * - f32 labels (mse): a fixed random linear function of the data, unit variance. */
#include "data_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define TEACHER_KEY UINT64_C(0x7EAC4E25EED5)
#define DATA_KEY UINT64_C(0xDA7A5A3F1E5)
#define MAX_WEIGHTS (INT64_C(1) << 28) /* one teacher's table: 1 GiB of f32 */

typedef enum teacher_kind {
    PENDING, /* a label whose teacher is not chosen yet (only while opening) */
    DRAWN,   /* data: drawn at random */
    DERIVED, /* data: the teacher-forcing input, from its label */
    CLASS,
    PAIRS,
    REVERSE,
    LINEAR
} teacher_kind;

typedef struct synth_input {
    int tensor;
    const char *name;
    pl_dtype dtype;
    int64_t elements; /* per sample */
    int64_t inner;    /* of them, the elements after the batch axis: a sample is
                         elements / inner runs of this many, a batch's width apart */
    int64_t plane;    /* f32 images [C,H,W]: H*W, the values that share a teacher weight */
    int64_t range;    /* i32 data: ids below this; class labels: the classes */
    teacher_kind kind;
    int from;         /* PAIRS: the tokens; REVERSE: the source; DERIVED: the label */
    uint64_t key;     /* the teacher's own randomness */
    float *weights;   /* CLASS [classes][features]; LINEAR [elements][features];
                         PAIRS [2][token ids][classes] */
} synth_input;

typedef struct synth_source {
    int n;
    synth_input *in;
    int64_t features; /* f32 values of the drawn inputs, per sample */
    int64_t terms;    /* features plus the ids of the drawn inputs */
} synth_source;

/* Where one fill writes: the slot of the batch and the batch's size. */
typedef struct synth_slot {
    int slot, count;
} synth_slot;

/* Element `e` of a sample's data in the input's buffer, wherever its batch axis is. */
static size_t place(const synth_input *in, synth_slot at, int64_t e)
{
    int64_t run = e / in->inner;
    return (size_t)((run * at.count + at.slot) * in->inner + e % in->inner);
}

static float *f32_of(const synth_input *in, void *const *inputs)
{
    return inputs[in->tensor];
}

static int32_t *i32_of(const synth_input *in, void *const *inputs)
{
    return inputs[in->tensor];
}

/* ---- drawing the data -------------------------------------------------------------- */

static uint64_t data_key(uint64_t seed, pl_split split, int input)
{
    return pl_rng_mix(seed ^ pl_rng_mix(DATA_KEY + ((uint64_t)split << 32) + (uint64_t)input));
}

static void draw(const pl_dataset *data, pl_split split, int k, int64_t sample, synth_slot at,
                 void *const *inputs)
{
    const synth_input *in = &((const synth_source *)data->source)->in[k];
    uint64_t key = data_key(data->seed, split, k);
    uint64_t counter = (uint64_t)sample * (uint64_t)in->elements;
    if (in->dtype == PL_F32) {
        float *out = f32_of(in, inputs);
        for (int64_t e = 0; e < in->elements; e++)
            out[place(in, at, e)] = (float)pl_rng_normal(key, counter + (uint64_t)e);
    } else {
        int32_t *out = i32_of(in, inputs);
        for (int64_t e = 0; e < in->elements; e++)
            out[place(in, at, e)] =
                (int32_t)(pl_rng_u64(key, counter + (uint64_t)e) % (uint64_t)in->range);
    }
}

/* ---- the teachers ------------------------------------------------------------------ */

/* Output `k` of the linear map of `teacher` (with `outputs` outputs) on the drawn data. */
static double linear_score(const synth_source *s, const synth_input *teacher,
                           int64_t outputs, int64_t k, synth_slot at, void *const *inputs)
{
    const float *w = teacher->weights + k * s->features;
    double score = 0;
    for (int j = 0; j < s->n; j++) {
        const synth_input *in = &s->in[j];
        if (in->kind != DRAWN)
            continue;
        if (in->dtype == PL_F32) {
            const float *x = f32_of(in, inputs);
            for (int64_t e = 0; e < in->elements; e++)
                score += (double)w[e / in->plane] * x[place(in, at, e)];
            w += in->elements;
        } else {
            const int32_t *ids = i32_of(in, inputs);
            uint64_t key = pl_rng_mix(teacher->key ^ (uint64_t)j);
            for (int64_t e = 0; e < in->elements; e++)
                score += pl_rng_normal(key, (uint64_t)ids[place(in, at, e)] *
                                                (uint64_t)outputs + (uint64_t)k);
        }
    }
    return score;
}

static void teach_class(const synth_source *s, const synth_input *label, synth_slot at,
                        void *const *inputs)
{
    int64_t best = 0;
    double best_score = -INFINITY;
    for (int64_t c = 0; c < label->range; c++) {
        double score = linear_score(s, label, label->range, c, at, inputs);
        if (score > best_score) {
            best_score = score;
            best = c;
        }
    }
    int32_t *out = i32_of(label, inputs);
    for (int64_t e = 0; e < label->elements; e++)
        out[place(label, at, e)] = (int32_t)best;
}

static void teach_linear(const synth_source *s, const synth_input *label, synth_slot at,
                         void *const *inputs)
{
    double scale = s->terms > 0 ? 1.0 / sqrt((double)s->terms) : 0.0;
    float *out = f32_of(label, inputs);
    for (int64_t k = 0; k < label->elements; k++)
        out[place(label, at, k)] =
            (float)(scale * linear_score(s, label, label->elements, k, at, inputs));
}

static void teach_pairs(const synth_source *s, const synth_input *label, synth_slot at,
                        void *const *inputs)
{
    const synth_input *tokens = &s->in[label->from];
    int64_t classes = label->range;
    const float *a = label->weights, *b = label->weights + tokens->range * classes;
    const int32_t *tok = i32_of(tokens, inputs);
    int32_t *out = i32_of(label, inputs);
    for (int64_t t = 0; t < label->elements; t++) {
        const float *here = a + tok[place(tokens, at, t)] * classes;
        const float *before = t > 0 ? b + tok[place(tokens, at, t - 1)] * classes : NULL;
        int64_t best = 0;
        float best_score = -INFINITY;
        for (int64_t c = 0; c < classes; c++) {
            float score = here[c] + (before ? before[c] : 0.0f);
            if (score > best_score) {
                best_score = score;
                best = c;
            }
        }
        out[place(label, at, t)] = (int32_t)best;
    }
}

static void teach_reverse(const synth_source *s, const synth_input *label, synth_slot at,
                          void *const *inputs)
{
    const synth_input *source = &s->in[label->from];
    int64_t n = source->elements;
    const int32_t *src = i32_of(source, inputs);
    int32_t *out = i32_of(label, inputs);
    for (int64_t t = 0; t < label->elements; t++)
        out[place(label, at, t)] = src[place(source, at, n - 1 - t % n)];
}

/* The teacher-forcing input: start id 0, then the target shifted right by one. */
static void derive(const synth_source *s, const synth_input *in, synth_slot at,
                   void *const *inputs)
{
    const synth_input *label = &s->in[in->from];
    const int32_t *target = i32_of(label, inputs);
    int32_t *out = i32_of(in, inputs);
    out[place(in, at, 0)] = 0;
    for (int64_t t = 1; t < in->elements; t++)
        out[place(in, at, t)] = target[place(label, at, t - 1)];
}

/* Drawn data first, then the labels computed from it, then what is derived from labels. */
static void fill_synthetic(const pl_dataset *data, pl_split split, int64_t sample, int slot,
                           int count, void *const *inputs)
{
    const synth_source *s = data->source;
    synth_slot at = {slot, count};
    for (int k = 0; k < s->n; k++)
        if (s->in[k].kind == DRAWN)
            draw(data, split, k, sample, at, inputs);
    for (int k = 0; k < s->n; k++) {
        const synth_input *in = &s->in[k];
        switch (in->kind) {
        case CLASS: teach_class(s, in, at, inputs); break;
        case PAIRS: teach_pairs(s, in, at, inputs); break;
        case REVERSE: teach_reverse(s, in, at, inputs); break;
        case LINEAR: teach_linear(s, in, at, inputs); break;
        case PENDING:
        case DRAWN:
        case DERIVED: break;
        }
    }
    for (int k = 0; k < s->n; k++)
        if (s->in[k].kind == DERIVED)
            derive(s, &s->in[k], at, inputs);
}

/* ---- choosing the teachers --------------------------------------------------------- */

static bool is_sequence(const synth_input *in, const pl_graph *graph)
{
    const pl_tensor *t = &graph->tensors[in->tensor];
    return in->dtype == PL_I32 && t->rank == 2;
}

/* A seq2seq label: a source the loss sees whole and a teacher-forcing input [T] it sees
 * causally, both looked up in embeddings. */
static pl_status find_seq2seq(synth_source *s, const pl_graph *graph, int k, int *source,
                              int *forcing)
{
    *source = *forcing = -1;
    for (int j = 0; j < s->n; j++) {
        synth_input *in = &s->in[j];
        if (in->kind != DRAWN || !is_sequence(in, graph) ||
            pl_data_id_range(graph, in->tensor) == 0)
            continue;
        pl_data_order order = pl_data_order_of(graph, in->tensor, s->in[k].tensor);
        if (order == PL_ORDER_NOMEM)
            return PL_ENOMEM;
        if (order == PL_ORDER_LOOKAHEAD && *source < 0)
            *source = j;
        else if (order == PL_ORDER_CAUSAL && in->elements == s->in[k].elements && *forcing < 0)
            *forcing = j;
    }
    return PL_OK;
}

static int64_t min3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Seq2seq teachers first: they narrow the source's ids, which the others then see. */
static pl_status choose_reverse(synth_source *s, const pl_graph *graph)
{
    for (int k = 0; k < s->n; k++) {
        synth_input *label = &s->in[k];
        if (label->kind != PENDING || !is_sequence(label, graph) ||
            pl_data_classes(graph, label->tensor) == 0)
            continue;
        int source, forcing;
        if (find_seq2seq(s, graph, k, &source, &forcing) != PL_OK)
            return PL_ENOMEM;
        if (source < 0 || forcing < 0)
            continue;
        label->kind = REVERSE;
        label->from = source;
        label->range = pl_data_classes(graph, label->tensor);
        s->in[forcing].kind = DERIVED;
        s->in[forcing].from = k;
        /* Every source id must also be a class and, shifted, a teacher-forcing id. */
        s->in[source].range = min3(s->in[source].range, label->range, s->in[forcing].range);
    }
    return PL_OK;
}

/* Drawn i32 tokens of the label's own shape, if any. */
static int find_tokens(const synth_source *s, const pl_graph *graph, const synth_input *label)
{
    const pl_tensor *l = &graph->tensors[label->tensor];
    for (int j = 0; j < s->n; j++) {
        const pl_tensor *t = &graph->tensors[s->in[j].tensor];
        if (s->in[j].kind == DRAWN && s->in[j].dtype == PL_I32 && t->rank == l->rank &&
            memcmp(t->dims + 1, l->dims + 1, sizeof *t->dims * (size_t)(t->rank - 1)) == 0)
            return j;
    }
    return -1;
}

/* The teacher's fixed Gaussian weights: rows x cols of them. */
static pl_status gaussian_table(synth_input *label, int64_t rows, int64_t cols, pl_error *err)
{
    if (cols > 0 && rows > MAX_WEIGHTS / cols)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "label \"%s\": its synthetic teacher would need %lld x %lld "
                            "weights (at most %lld)",
                            label->name, (long long)rows, (long long)cols,
                            (long long)MAX_WEIGHTS);
    int64_t count = rows * cols;
    label->weights = malloc((size_t)(count > 0 ? count : 1) * sizeof *label->weights);
    if (!label->weights)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for the teacher of \"%s\"",
                            label->name);
    for (int64_t i = 0; i < count; i++)
        label->weights[i] = (float)pl_rng_normal(label->key, (uint64_t)i);
    return PL_OK;
}

static pl_status choose_teacher(synth_source *s, const pl_graph *graph, int k, pl_error *err)
{
    synth_input *label = &s->in[k];
    if (label->dtype == PL_F32) {
        label->kind = LINEAR;
        return gaussian_table(label, label->elements, s->features, err);
    }
    int64_t classes = pl_data_classes(graph, label->tensor);
    int tokens = classes > 0 && is_sequence(label, graph) ? find_tokens(s, graph, label) : -1;
    if (tokens >= 0) {
        label->kind = PAIRS;
        label->from = tokens;
        label->range = classes;
        return gaussian_table(label, 2 * s->in[tokens].range, classes, err);
    }
    /* The classes of the loss; a label no loss reads as classes gets as many as the
     * embeddings that read it allow, else 2. */
    int64_t range = pl_data_id_range(graph, label->tensor);
    label->kind = CLASS;
    label->range = range > 0 ? range : 2;
    return gaussian_table(label, label->range, s->features, err);
}

/* Every input with its dtype and size; data ids below what reads them (an i32 input that
 * no embedding reads gets 0, the one id every table has). */
static pl_status collect_inputs(synth_source *s, const pl_graph *graph, pl_error *err)
{
    for (int t = 0; t < graph->n_tensors; t++)
        s->n += graph->tensors[t].kind == PL_TENSOR_INPUT;
    s->in = calloc((size_t)(s->n > 0 ? s->n : 1), sizeof *s->in);
    if (!s->in)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for synthetic data");
    int k = 0;
    for (int t = 0; t < graph->n_tensors; t++) {
        const pl_tensor *tensor = &graph->tensors[t];
        if (tensor->kind != PL_TENSOR_INPUT)
            continue;
        synth_input *in = &s->in[k];
        in->tensor = t;
        in->name = tensor->name;
        in->dtype = tensor->dtype;
        in->elements = pl_data_sample_elements(tensor);
        in->inner = pl_tensor_batch_layout(tensor).inner;
        /* An image's teacher weighs each channel's sum, not single pixels: what a
         * convolutional network with global pooling can learn. */
        in->plane = tensor->rank == 4 ? tensor->dims[2] * tensor->dims[3] : 1;
        in->kind = tensor->role == PL_ROLE_LABEL ? PENDING : DRAWN;
        in->from = -1;
        in->key = pl_rng_mix(TEACHER_KEY ^ pl_rng_mix((uint64_t)k));
        if (in->dtype == PL_I32 && tensor->role == PL_ROLE_DATA) {
            int64_t range = pl_data_id_range(graph, t);
            in->range = range > 0 ? range : 1;
        }
        k++;
    }
    return PL_OK;
}

static void count_features(synth_source *s)
{
    for (int j = 0; j < s->n; j++) {
        if (s->in[j].kind != DRAWN)
            continue;
        if (s->in[j].dtype == PL_F32)
            s->features += s->in[j].elements;
        s->terms += s->in[j].elements;
    }
}

/* ---- the source -------------------------------------------------------------------- */

static void release_synthetic(void *source)
{
    synth_source *s = source;
    if (!s)
        return;
    for (int k = 0; k < s->n; k++)
        free(s->in[k].weights);
    free(s->in);
    free(s);
}

static const char *teacher_text(teacher_kind kind)
{
    switch (kind) {
    case CLASS: return "argmax of a random linear map of the data";
    case PAIRS: return "random function of each token and the one before";
    case REVERSE: return "the source reversed";
    case LINEAR: return "random linear map of the data";
    case PENDING:
    case DRAWN:
    case DERIVED: break;
    }
    return "";
}

static void describe(pl_dataset *data, const synth_source *s)
{
    int len = snprintf(data->describe, sizeof data->describe,
                       "synthetic (seed %llu: %lld training, %lld test samples",
                       (unsigned long long)data->seed, (long long)data->size[PL_SPLIT_TRAIN],
                       (long long)data->size[PL_SPLIT_TEST]);
    for (int k = 0; k < s->n && len > 0 && (size_t)len < sizeof data->describe; k++)
        if (s->in[k].kind != DRAWN && s->in[k].kind != DERIVED)
            len += snprintf(data->describe + len, sizeof data->describe - (size_t)len,
                            "; %s: %s", s->in[k].name, teacher_text(s->in[k].kind));
    if (len > 0 && (size_t)len < sizeof data->describe)
        snprintf(data->describe + len, sizeof data->describe - (size_t)len, ")");
}

pl_status pl_data_open_synthetic(pl_dataset *data, const pl_graph *graph, pl_error *err)
{
    synth_source *s = calloc(1, sizeof *s);
    if (!s)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for synthetic data");
    data->kind = PL_DATA_SYNTHETIC;
    data->source = s;
    data->release = release_synthetic;
    data->fill = fill_synthetic;
    data->size[PL_SPLIT_TRAIN] = PL_SYNTHETIC_TRAIN;
    data->size[PL_SPLIT_TEST] = PL_SYNTHETIC_TEST;
    pl_status status = collect_inputs(s, graph, err);
    if (status == PL_OK && choose_reverse(s, graph) != PL_OK)
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory matching the data");
    if (status != PL_OK)
        return status;
    count_features(s);
    for (int k = 0; k < s->n && status == PL_OK; k++)
        if (s->in[k].kind == PENDING)
            status = choose_teacher(s, graph, k, err);
    if (status == PL_OK)
        describe(data, s);
    return status;
}
