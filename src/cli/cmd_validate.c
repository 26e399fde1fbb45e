/* placer validate MODEL.json... [--cluster C --plan P]: load each model, print its
 * summary or its first error; with a plan, check it against the model's training graph
 * and the cluster and summarise the step it compiles to: ops and receives per device, and
 * for a plan that splits ops, the splits and the collectives the rewrite inserts. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "autodiff.h"
#include "cli.h"
#include "cluster.h"
#include "plan.h"
#include "program.h"

/* Per device: its training ops and the replicas it serves. */
static void describe_replicas(const pl_plan *plan, const pl_program *p,
                              const pl_cluster *cluster)
{
    for (int d = 0; d < cluster->n_devices; d++) {
        char list[256] = "";
        size_t used = 0;
        for (int r = 0; r < plan->replicas; r++)
            if (pl_plan_ops_on(plan, r, d) > 0 && used + 8 < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                         used ? ", " : "", r);
        printf("  %-12s %5d ops  replicas: %s\n", cluster->devices[d].name,
               pl_program_ops_on(p, d), used ? list : "none");
    }
}

/* Per device: its training ops, and what it receives (replica 0's partitions). */
static void describe_devices(const pl_plan *plan, const pl_program *p,
                             const pl_cluster *cluster)
{
    const pl_partitions *parts = p->partitions;
    for (int d = 0; d < cluster->n_devices; d++) {
        int64_t bytes = 0;
        int received = 0;
        for (int k = 0; k < parts->n_transfers; k++)
            if (parts->transfers[k].to == d) {
                bytes += pl_tensor_bytes(&p->graph->tensors[parts->transfers[k].tensor]);
                received++;
            }
        printf("  %-12s %5d ops  receives %4d tensors, %.1f KiB per micro-batch step\n",
               cluster->devices[d].name, parts->first_op[d + 1] - parts->first_op[d],
               received, (double)bytes / 1024 / plan->micro_batches);
    }
}

/* Whether ops o and q are split over the same devices (replica 0's, in order). */
static bool same_devices(const pl_plan *plan, int o, int q)
{
    bool same = plan->split[o] == plan->split[q];
    for (int s = 0; same && s < plan->split[o]; s++)
        same = pl_plan_shard_device(plan, 0, o, s) == pl_plan_shard_device(plan, 0, q, s);
    return same;
}

/* A line per set of devices: the ops split over it (replica 0's devices). */
static void describe_splits(const pl_plan *plan, const pl_graph *model,
                            const pl_cluster *cluster)
{
    enum { SHOWN = 8 }; /* names per line before "and N more" */
    bool *listed = calloc((size_t)plan->n_ops + 1, sizeof *listed);
    for (int o = 0; listed && o < plan->n_ops; o++) {
        if (plan->split[o] == 1 || listed[o])
            continue;
        printf("  split over");
        for (int s = 0; s < plan->split[o]; s++)
            printf("%s %s", s ? "," : "",
                   cluster->devices[pl_plan_shard_device(plan, 0, o, s)].name);
        if (plan->replicas > 1)
            printf(" in replica 0");
        int count = 0;
        for (int q = o; q < plan->n_ops; q++)
            if (!listed[q] && same_devices(plan, o, q)) {
                listed[q] = true;
                if (count++ < SHOWN)
                    printf("%s %s", count > 1 ? "," : ":", model->ops[q].name);
            }
        if (count > SHOWN)
            printf(" and %d more", count - SHOWN);
        printf("\n");
    }
    free(listed);
}

/* What the rewrite made of the split ops: those that run whole all the same, and the ops
 * it inserted for the collectives, by kind. */
static void describe_rewrite(const pl_plan *plan, const pl_program *p)
{
    const pl_split_graph *split = p->split;
    const pl_graph *g = p->graph;
    int inserted = 0, by_kind[PL_OP_COUNT] = {0}, whole = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        if (pl_split_graph_collective(split, o)) {
            inserted++;
            by_kind[g->ops[o].kind]++;
        } else if (split->op_shard[o] < 0 && plan->split[split->op_origin[o]] > 1) {
            printf("%s %s", whole++ ? "," : "  runs whole on its first device (its kind or "
                   "sizes do not split):", g->ops[o].name);
        }
    }
    if (whole)
        printf("\n");
    printf("  collectives: %d op%s inserted in the forward pass", inserted,
           inserted == 1 ? "" : "s");
    for (int k = 0, listed = 0; k < PL_OP_COUNT; k++)
        if (by_kind[k])
            printf("%s%s %d", listed++ ? ", " : " (", pl_op_info_of((pl_op_kind)k)->name,
                   by_kind[k]);
    printf("%s, their gradients in the backward; %d training ops in all, %d in the model\n",
           inserted ? ")" : "", g->n_ops, p->model->n_ops);
    for (int o = 0; o < g->n_forward_ops; o++)
        if (g->ops[o].kind == PL_OP_LSE_CROSS_ENTROPY)
            printf("  loss \"%s\" by vocabulary shards: one log-sum-exp and one label logit "
                   "per position cross devices, not the logits\n",
                   p->model->ops[split->op_origin[o]].name);
}

static void describe_plan(const char *plan_path, const pl_plan *plan, const pl_program *p,
                          const pl_cluster *cluster)
{
    char replicas[64], split[96];
    printf("%s: valid plan for \"%s\" on cluster \"%s\": %s%s%d stage%s, %d micro-batch%s, "
           "%s\n", pl_cli_input_name(plan_path), p->model->name, cluster->name,
           pl_plan_replicas_text(plan, replicas, sizeof replicas),
           pl_plan_split_text(plan, split, sizeof split), plan->n_stages,
           plan->n_stages == 1 ? "" : "s", plan->micro_batches,
           plan->micro_batches == 1 ? "" : "es", pl_plan_schedule_text(plan));
    bool splits = false; /* split ops, not only recomputation */
    for (int o = 0; o < plan->n_ops; o++)
        splits = splits || plan->split[o] > 1;
    if (p->split && splits) {
        describe_splits(plan, p->model, cluster);
        describe_rewrite(plan, p);
    }
    if (plan->replicas > 1)
        describe_replicas(plan, p, cluster);
    else
        describe_devices(plan, p, cluster);
}

/* The plan checked against the model and the cluster, and compiled into the step it runs
 * (for a plan that splits ops, the rewritten graph's), which the summary describes. */
static int check_plan(const char *model, pl_graph *graph, const char *cluster_path,
                      const char *plan_path, int quiet)
{
    pl_error err;
    model = pl_cli_input_name(model);
    pl_error_init(&err, model);
    pl_cluster *cluster = cluster_path ? pl_cluster_load_file(cluster_path, &err)
                                       : pl_cluster_local(&err);
    pl_plan *plan = NULL;
    pl_program *program = NULL;
    int status = PL_EXIT_OK;
    if (!cluster || (pl_error_init(&err, plan_path),
                     !(plan = pl_plan_load_file(plan_path, graph, cluster, &err))) ||
        (pl_error_init(&err, model), pl_autodiff_build(graph, &err) != PL_OK) ||
        (pl_error_init(&err, plan_path),
         !(program = pl_program_new(graph, cluster, plan, &err)))) {
        status = pl_cli_report(&err);
    } else {
        pl_cli_warn_plan_model(plan_path, plan, graph);
    }
    if (status == PL_EXIT_OK && !quiet)
        describe_plan(plan_path, plan, program, cluster);
    pl_program_free(program);
    pl_plan_free(plan);
    pl_cluster_free(cluster);
    return status;
}

/* Standard input read once: at most one model, --cluster or --plan is "-". */
static int check_inputs(int n_models, char **models, const char *cluster, const char *plan)
{
    const pl_cli_file given[] = {{cluster, "the cluster", false}, {plan, "the plan", false}};
    pl_cli_file *inputs = calloc((size_t)n_models + 2, sizeof *inputs);
    if (!inputs)
        return PL_EXIT_FAILURE;
    for (int i = 0; i < n_models; i++)
        inputs[i] = (pl_cli_file){models[i], "the model", false};
    inputs[n_models] = given[0];
    inputs[n_models + 1] = given[1];
    int status = pl_cli_check_inputs(inputs, (size_t)n_models + 2);
    free(inputs);
    return status;
}

int pl_cmd_validate(int argc, char **argv)
{
    static const struct option options[] = {{"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"plan", required_argument, NULL, 'p'},
                                            {NULL, 0, NULL, 0}};
    const char *cluster = NULL, *plan = NULL;
    int quiet = 0, c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "qh", options, NULL)) != -1) {
        switch (c) {
        case 'q':
            quiet = 1;
            break;
        case 'c':
            cluster = optarg;
            break;
        case 'p':
            plan = optarg;
            break;
        case 'h':
            printf("Usage: placer validate [-q|--quiet] MODEL.json... [--cluster C --plan P]\n"
                   "Checks each model and prints its summary (with -q, only errors). With\n"
                   "--plan, also checks the plan against the model and the cluster (default:\n"
                   "the local machine) and summarises its partitions: for a plan that splits\n"
                   "ops, the graph it runs (its shards and the collectives' ops).\n"
                   "\n"
                   "  -q, --quiet      print only errors\n"
                   "  --plan FILE      a plan for the one model (plan-format.md)\n"
                   "  --cluster FILE   the plan's cluster (cluster-format.md)\n"
                   "A MODEL.json or FILE of '-' is read from standard input (one of them).\n"
                   "The formats: " PLACER_DOCDIR "/model-format.md and beside it.\n");
            return PL_EXIT_OK;
        default:
            return pl_cli_usage_error("validate: unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("validate: missing MODEL.json");
    if (cluster && !plan)
        return pl_cli_usage_error("validate: --cluster goes with --plan");
    if (plan && optind + 1 < argc)
        return pl_cli_usage_error("validate: one model with --plan");
    int checked = check_inputs(argc - optind, argv + optind, cluster, plan);
    if (checked != PL_EXIT_OK)
        return checked;
    int worst = PL_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        int status;
        pl_graph *graph = pl_cli_load_model(argv[i], &status);
        if (graph && !quiet)
            pl_cli_print_summary(stdout, pl_cli_input_name(argv[i]), graph);
        if (graph && plan)
            status = check_plan(argv[i], graph, cluster, plan, quiet);
        pl_graph_free(graph);
        if (status > worst)
            worst = status;
    }
    return worst;
}
