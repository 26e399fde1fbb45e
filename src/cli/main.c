/* placer's entry point: global options and the subcommand table. */
#include <stdio.h>
#include <string.h>

#include "allocator.h"
#include "cli.h"
#include "config.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis;
} command;

static const command commands[] = {
    {"validate", pl_cmd_validate, "validate MODEL.json...     check models, print summaries\n"
                                  "         [--cluster C --plan P]     and check a plan for one"},
    {"dot", pl_cmd_dot, "dot MODEL.json [-o FILE]   draw a model as GraphViz dot, or with\n"
                        "         [--plan P [--cluster C]    a plan its placement (devices,\n"
                        "         [--all-ops]]               stages, bytes across devices)"},
    {"train", pl_cmd_train, "train MODEL.json [OPTIONS] train a model on one device"},
    {"run", pl_cmd_run, "run MODEL.json --plan P    measure the step time of a placed model\n"
                        "         [--cluster C] [--trace F]"},
    {"simulate", pl_cmd_simulate, "simulate MODEL.json        predict the step time of a placed model\n"
                                  "         --plan P [--cluster C] [--measure N]"},
    {"baseline", pl_cmd_baseline, "baseline MODEL.json        place by a classical algorithm (or all of them)\n"
                                  "         --algo NAME|all [--cluster C] [--seed N] [-o PLAN] [--measure N]"},
    {"calibrate", pl_cmd_calibrate, "calibrate [--cluster C]    measure this machine for the simulator"},
    {"cluster", pl_cmd_cluster, "cluster [CLUSTER.json]     check and describe a cluster"},
};

static void print_help(void)
{
    printf("Usage: placer [-o PREFIX] MODEL.json\n"
           "       placer COMMAND [ARGS]\n"
           "\n"
           "placer finds where each operation of a neural-network training graph should run,\n"
           "measures it on its own multithreaded executor, and trains with the plan.\n"
           "\n"
           "The main job, placer MODEL.json [--cluster C] [--budget SECONDS] [--seed N],\n"
           "loads and validates the model, prints its summary, runs the baseline placers\n"
           "and the learning agent, measures the best plans and writes PREFIX.plan.json,\n"
           "PREFIX.plan.dot and PREFIX.report.md (PREFIX: the model file's name without\n"
           ".json, in the current directory; -o PREFIX). placer MODEL.json --help: its\n"
           "options.\n"
           "\n"
           "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("  placer %s\n", commands[i].synopsis);
    printf("\n"
           "Options:\n"
           "  -h, --help     show this help and exit\n"
           "  -V, --version  show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (an output not written), 2 bad input or usage\n"
           "(an output that cannot be written among them, found before any work), 3 a plan\n"
           "that does not fit a device's memory, 130 interrupted (Ctrl-C, SIGTERM or SIGHUP,\n"
           "what was done so far written).\n"
           "The model format is described in docs/model-format.md.\n");
}

int main(int argc, char **argv)
{
    pl_allocator_keep_freed();
    if (argc < 2)
        return pl_cli_usage_error("missing MODEL.json or command");
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0) {
        print_help();
        return PL_EXIT_OK;
    }
    if (strcmp(first, "-V") == 0 || strcmp(first, "--version") == 0) {
        printf("placer %s\n", PACKAGE_VERSION);
        return PL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(first, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    return pl_cmd_main(argc, argv);
}
