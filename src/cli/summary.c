/* The human-readable summary of a model that `placer validate` prints. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *human_count(double n, const char *unit, char *buf, size_t cap)
{
    static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
    int p = 0;
    while (n >= 1000 && p < 5)
        n /= 1000, p++;
    snprintf(buf, cap, p ? "%.2f %s%s" : "%.0f %s%s", n, prefixes[p], unit);
    return buf;
}

void pl_cli_print_summary(FILE *out, const char *path, const pl_graph *graph)
{
    pl_graph_stats s;
    pl_graph_stats_compute(graph, &s);
    char a[64], b[64];
    fprintf(out, "%s: valid model \"%s\"\n", path, graph->name);
    if (graph->description[0])
        fprintf(out, "  %s\n", graph->description);
    fprintf(out, "  batch size        %d\n", graph->batch_size);
    fprintf(out, "  ops               %d (", graph->n_ops);
    /* op kinds, most frequent first */
    int shown[PL_OP_COUNT] = {0}, listed = 0;
    for (;;) {
        int best = -1;
        for (int k = 0; k < PL_OP_COUNT; k++)
            if (!shown[k] && s.op_count[k] > 0 && (best < 0 || s.op_count[k] > s.op_count[best]))
                best = k;
        if (best < 0)
            break;
        shown[best] = 1;
        fprintf(out, "%s%s %d", listed++ ? ", " : "", pl_op_info_of(best)->name,
                s.op_count[best]);
    }
    fprintf(out, ")\n");
    fprintf(out, "  inputs            %d tensors, %s per step\n", s.n_inputs,
            pl_units_bytes((double)s.input_bytes, a, sizeof a));
    fprintf(out, "  parameters        %d tensors, %s values, %s\n", s.n_params,
            human_count((double)s.param_count, "", b, sizeof b),
            pl_units_bytes((double)s.param_bytes, a, sizeof a));
    fprintf(out, "  activations       %d tensors, %s per step\n", s.n_activations,
            pl_units_bytes((double)s.activation_bytes, a, sizeof a));
    fprintf(out, "  forward FLOPs     %s per step\n", human_count(s.flops, "FLOP", a, sizeof a));
    const pl_tensor *loss = &graph->tensors[graph->loss];
    fprintf(out, "  loss              \"%s\" (%s)\n", loss->name,
            pl_op_info_of(graph->ops[loss->producer].kind)->name);
    const pl_optimizer *o = &graph->optimizer;
    if (o->kind == PL_OPT_SGD)
        fprintf(out, "  optimizer         sgd (lr %g, momentum %g, weight decay %g)\n", o->lr,
                o->momentum, o->weight_decay);
    else
        fprintf(out, "  optimizer         adam (lr %g, betas %g/%g, eps %g, weight decay %g)\n",
                o->lr, o->beta1, o->beta2, o->eps, o->weight_decay);
    char reason[PL_MAX_NAME + 256];
    if (pl_graph_whole_step_reason(graph, reason, sizeof reason))
        fprintf(out, "  micro-batches     one per step: %s\n", reason);
}
