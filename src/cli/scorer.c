/* Accuracy of a classifier, for placer train and placer eval: the loss is softmax
 * cross-entropy, its inputs the logits and the labels. */
#include "cli.h"

pl_cli_scorer pl_cli_find_scorer(const pl_graph *g)
{
    pl_cli_scorer sc = {-1, -1, 0, 0};
    const pl_tensor *loss = &g->tensors[g->loss];
    if (loss->producer < 0 || g->ops[loss->producer].kind != PL_OP_SOFTMAX_CROSS_ENTROPY)
        return sc;
    const pl_op *op = &g->ops[loss->producer];
    sc.logits = op->inputs[0];
    sc.labels = op->inputs[1];
    const pl_tensor *logits = &g->tensors[sc.logits], *labels = &g->tensors[sc.labels];
    sc.classes = logits->dims[logits->rank - 1];
    sc.positions_per_sample = pl_tensor_elements(labels) / g->batch_size;
    return sc;
}

int64_t pl_cli_count_correct(const pl_cli_scorer *sc, const float *logits,
                             const int32_t *labels, int64_t samples)
{
    int64_t correct = 0, n = samples * sc->positions_per_sample;
    for (int64_t i = 0; i < n; i++) {
        const float *row = logits + i * sc->classes;
        int64_t best = 0;
        for (int64_t c = 1; c < sc->classes; c++)
            if (row[c] > row[best])
                best = c;
        correct += best == labels[i];
    }
    return correct;
}
