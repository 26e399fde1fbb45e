/* placer's entry point: global options and the subcommand table. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/stat.h>

#include "allocator.h"
#include "cli.h"
#include "config.h"
#include "kernels.h"

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
    {"train", pl_cmd_train, "train MODEL.json [OPTIONS] train a model, on one device or placed\n"
                            "         [--plan P [--cluster C]]   by a plan"},
    {"eval", pl_cmd_eval, "eval MODEL.json [OPTIONS]  forward only: the loss and accuracy of\n"
                          "         [--weights W] [--inputs I]  given weights, outputs, gradients"},
    {"run", pl_cmd_run, "run MODEL.json --plan P    measure the step time of a placed model\n"
                        "         [--cluster C] [--trace F] [--timeline F.svg]"},
    {"simulate", pl_cmd_simulate, "simulate MODEL.json        predict the step time of a placed model\n"
                                  "         --plan P [--cluster C] [--measure N] [--timeline F.svg]"},
    {"baseline", pl_cmd_baseline, "baseline MODEL.json        place by a classical algorithm (or all of them)\n"
                                  "         --algo NAME|all [--cluster C] [--seed N] [-o PLAN] [--measure N]"},
    {"pretrain", pl_cmd_pretrain, "pretrain -o POLICY MODEL.json...  pre-train the agent's policy over\n"
                                  "         [--cluster C]... [--rounds N]  models and clusters"},
    {"calibrate", pl_cmd_calibrate, "calibrate [--cluster C]    measure this machine for the simulator"},
    {"cluster", pl_cmd_cluster, "cluster [CLUSTER.json]     check and describe a cluster"},
    {"partition", pl_cmd_partition, "partition INSTANCE.json    place a dnn-partitioning instance (the public\n"
                                    "         [--expert S] [-o S]        benchmark) under its paper's max-load"},
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
           "and the learning agent, measures the best plans and writes PREFIX.graph.dot,\n"
           "PREFIX.plan.json, PREFIX.plan.dot, PREFIX.agent.plan.json, PREFIX.agent.ckpt,\n"
           "PREFIX.report.md and PREFIX.curve.svg (PREFIX: the model file's name without\n"
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
           "\n"
           "A MODEL.json, --cluster C or --plan P given as '-' is read from standard input\n"
           "(one of them per command); -o - writes to standard output.\n"
           "Environment: PLACER_PROFILE (the calibration profile's file), XDG_CACHE_HOME\n"
           "(else its folder: $XDG_CACHE_HOME/placer, else ~/.cache/placer), PLACER_GRAPHS\n"
           "(the models calibration measures), PLACER_MPI_TIMEOUT (under mpirun: how long\n"
           "a message or collective between ranks may be overdue, and a rank silent, before\n"
           "every rank ends: a positive number of seconds such as 5, 5s or 0.5; default 60).\n"
           "Under mpirun a cluster whose devices name ranks runs one process a rank\n"
           "(processes.md).\n"
           "Each command's options: placer COMMAND --help. More in man placer and in\n"
           PLACER_DOCDIR "/: model-format.md, cluster-format.md,\n"
           "plan-format.md, outputs.md, bad-inputs.md and the rest.\n");
}

/* Edits (insertions, deletions, substitutions, swaps of neighbours) between two words,
 * both shorter than 32 bytes (longer ones: a large number). */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= 32 || m >= 32)
        return 99;
    int d[32][32];
    for (size_t i = 0; i <= n; i++)
        for (size_t j = 0; j <= m; j++) {
            if (i == 0 || j == 0) {
                d[i][j] = (int)(i + j);
                continue;
            }
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* A first word that is no command, no existing file and no .json name is a mistyped
 * command rather than a missing model: say so, with the nearest command when one is
 * close. Returns -1 when the word may be a model. */
static int unknown_command(const char *word)
{
    size_t len = strlen(word);
    struct stat st;
    if (word[0] == '-' || (len >= 5 && strcmp(word + len - 5, ".json") == 0) ||
        strchr(word, '/') || stat(word, &st) == 0)
        return -1;
    const char *nearest = NULL;
    int best = 3; /* at most 2 edits, and fewer than half the word */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int d = edit_distance(word, commands[i].name);
        if (d < best && 2 * (size_t)d < len)
            best = d, nearest = commands[i].name;
    }
    if (nearest)
        return pl_cli_usage_error("unknown command '%s' (did you mean %s?)", word, nearest);
    return pl_cli_usage_error("unknown command '%s' (and no such model file)", word);
}

/* Standard output is written through to the end: a full disk or a closed pipe shows as
 * a failure (exit status 1 and a message), not as success with the output lost. As in
 * gnulib's close_stdout, a closed descriptor with nothing to write is no failure. */
static int close_stdout(int status)
{
    bool failed = ferror(stdout) != 0, pending = __fpending(stdout) != 0;
    errno = 0;
    if (fclose(stdout) != 0 && (pending || errno != EBADF))
        failed = true;
    if (!failed)
        return status;
    fprintf(stderr, "placer: cannot write standard output%s%s\n", errno ? ": " : "",
            errno ? strerror(errno) : "");
    return status == PL_EXIT_OK ? PL_EXIT_FAILURE : status;
}

static int run(int argc, char **argv)
{
    if (argc < 2)
        return pl_cli_usage_error("missing MODEL.json or command");
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0) {
        print_help();
        return PL_EXIT_OK;
    }
    if (strcmp(first, "-V") == 0 || strcmp(first, "--version") == 0) {
        printf("placer %s\nkernels: OpenBLAS, %s core\n", PACKAGE_VERSION, pl_blas_core());
        return PL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(first, commands[i].name) == 0) {
            pl_cli_set_command(commands[i].name);
            return commands[i].run(argc - 1, argv + 1);
        }
    int status = unknown_command(first);
    return status >= 0 ? status : pl_cmd_main(argc, argv);
}

int main(int argc, char **argv)
{
    pl_allocator_keep_freed();
    pl_cli_text = stdout;
    int status = pl_cli_start_processes();
    if (status == PL_EXIT_OK)
        status = pl_cli_end_processes(run(argc, argv));
    return close_stdout(status);
}
