/* placer dot MODEL.json [--plan PLAN.json [--cluster C] [--all-ops]] [--max-boxes N]
 * [-o FILE]: the model
 * as GraphViz dot or, with a plan, its placed training graph (dot.h). Op times come from
 * the cached calibration profile when one fits; dot never calibrates. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "dot.h"

typedef struct dot_options {
    const char *model, *plan, *cluster, *output;
    bool all_ops;
    long max_boxes;
} dot_options;

/* PL_EXIT_OK, a usage error's status, or -1 after --help. */
static int parse_options(int argc, char **argv, dot_options *o)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"plan", required_argument, NULL, 'p'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"all-ops", no_argument, NULL, 'a'},
                                            {"max-boxes", required_argument, NULL, 'm'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *o = (dot_options){.output = "-", .max_boxes = PL_DOT_MAX_BOXES};
    int c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'p': o->plan = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 'a': o->all_ops = true; break;
        case 'm':
            if (!pl_cli_parse_long(optarg, 0, 1000000000, &o->max_boxes))
                return pl_cli_usage_error("dot: invalid value '%s' for --max-boxes (0 to "
                                          "1000000000)", optarg);
            break;
        case 'h':
            printf("Usage: placer dot MODEL.json [--plan PLAN.json [--cluster C] [--all-ops]]\n"
                   "                  [--max-boxes N] [-o FILE]\n"
                   "Writes the model graph in GraphViz dot to FILE (default: standard output).\n"
                   "With --plan, draws the placed training graph instead: ops coloured by\n"
                   "device, a cluster per device (and per stage), cross-device edges labelled\n"
                   "with their bytes per step, op times from the cached calibration profile\n"
                   "when one fits (dot never calibrates). Each forward op stands for its\n"
                   "backward ops and updates unless --all-ops. A split op is a box per\n"
                   "shard (NAME/tp0, ...) on its device, beside the collectives' ops.\n"
                   "--cluster: the plan's cluster (default: this machine).\n"
                   "\n"
                   "  -o, --output FILE  where to write ('-', the default: standard output)\n"
                   "  --plan FILE        the plan to draw (plan-format.md)\n"
                   "  --cluster FILE     the plan's cluster (cluster-format.md)\n"
                   "  --all-ops          draw every op of the training graph\n"
                   "  --max-boxes N      above N boxes, group ops by module (their dotted or\n"
                   "                     slashed name paths) so that dot stays fast;\n"
                   "                     default %d, 0: op by op whatever the size\n"
                   "A MODEL.json or FILE read of '-' is standard input (one of them).\n"
                   "The formats: " PLACER_DOCDIR "/plan-format.md and beside it.\n"
                   "Render it with: dot -Tsvg FILE > model.svg\n", PL_DOT_MAX_BOXES);
            return -1;
        default:
            return pl_cli_usage_error("dot: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("dot: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("dot: one model at a time ('%s' is extra)", argv[optind + 1]);
    if (!o->plan && (o->cluster || o->all_ops))
        return pl_cli_usage_error("dot: %s draws a plan: give --plan PLAN.json",
                                  o->cluster ? "--cluster" : "--all-ops");
    o->model = argv[optind];
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->plan, "the plan", false},
                                  {o->cluster, "the cluster", false}};
    const pl_cli_file output = {o->output, "the output", false};
    return pl_cli_check_outputs(inputs, 3, &output, 1);
}

int pl_cmd_dot(int argc, char **argv)
{
    dot_options o;
    int status = parse_options(argc, argv, &o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    /* a plan places the training graph */
    pl_cli_setup setup = {.model_path = o.model, .cluster_path = o.cluster, .plan_path = o.plan,
                          .needs = o.plan ? PL_CLI_TRAINING | PL_CLI_PLAN : 0};
    status = pl_cli_setup_load(&setup);
    if (status == PL_EXIT_OK && o.plan) {
        double *op_seconds = pl_cli_cached_op_seconds(setup.graph, setup.cluster, setup.plan);
        status = pl_cli_write_plan_dot(setup.graph, setup.plan, setup.cluster, op_seconds,
                                       o.all_ops, (int)o.max_boxes, o.output);
        free(op_seconds);
    } else if (status == PL_EXIT_OK) {
        status = pl_cli_write_dot(setup.graph, (int)o.max_boxes, o.output);
    }
    pl_cli_setup_release(&setup);
    return status;
}
