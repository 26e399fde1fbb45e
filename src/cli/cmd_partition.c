/* placer partition INSTANCE.json [--expert SPLIT.json] [-o SPLIT.json] [--max-ideals N]:
 * places a dnn-partitioning instance under that paper's max-load objective (partition.h)
 * and prints the max-loads beside the bound and an expert's split. */
#include <getopt.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "partition.h"

typedef struct partition_options {
    const char *instance, *expert, *output;
    long max_ideals;
} partition_options;

static void print_help(void)
{
    printf("Usage: placer partition INSTANCE.json [--expert SPLIT.json] [-o SPLIT.json]\n"
           "                        [--max-ideals N]\n"
           "Places a profiled graph of the dnn-partitioning benchmark (the NeurIPS 2020 paper\n"
           "\"Efficient Algorithms for Device Placement of DNN Graph Operators\") on its\n"
           "accelerators and CPU, minimising the paper's max-load: the busiest device's\n"
           "latencies plus, on an accelerator, the transfers in and out of it. Prints the\n"
           "lower bound, the expert split's max-load (--expert), the best contiguous split\n"
           "of placer's dynamic program and the local search's refinement of it. These are\n"
           "simulated under the paper's objective: nothing runs.\n"
           "\n"
           "  --expert FILE    a split to compare with, in the paper's output format; a split\n"
           "                   of the forward nodes covers the backward ones by colour class\n"
           "  -o, --output FILE  write the refined split there, in the same format\n"
           "  --max-ideals N   the dynamic program over ideals gives way to linear orders\n"
           "                   past N ideals (default 20000)\n"
           "INSTANCE.json or FILE read of '-' is standard input (one of them).\n"
           "The format and the benchmark: " PLACER_DOCDIR "/public-benchmark.md.\n");
}

/* PL_EXIT_OK, a usage error's status, or -1 after --help. */
static int parse_options(int argc, char **argv, partition_options *o)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"expert", required_argument, NULL, 'e'},
                                            {"max-ideals", required_argument, NULL, 'm'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *o = (partition_options){0};
    int c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'e': o->expert = optarg; break;
        case 'm':
            if (!pl_cli_parse_long(optarg, 1, 100000000, &o->max_ideals))
                return pl_cli_usage_error("partition: invalid value '%s' for --max-ideals (1 "
                                          "to 100000000)", optarg);
            break;
        case 'h': print_help(); return -1;
        default:
            return pl_cli_usage_error("partition: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("partition: missing INSTANCE.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("partition: one instance at a time ('%s' is extra)",
                                  argv[optind + 1]);
    o->instance = argv[optind];
    const pl_cli_file inputs[] = {{o->instance, "the instance", false},
                                  {o->expert, "the expert split", false}};
    const pl_cli_file output = {o->output, "the split", false};
    return pl_cli_check_outputs(inputs, 2, &output, o->output ? 1 : 0);
}

static void print_load(const char *what, double load, double bound, const char *note)
{
    fprintf(pl_cli_text, "  %-10s %16.9f  %6.3f x bound%s%s\n", what, load,
            bound > 0 ? load / bound : 0, note[0] ? "  " : "", note);
}

int pl_cmd_partition(int argc, char **argv)
{
    partition_options o;
    int status = parse_options(argc, argv, &o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    pl_error err;
    pl_partition_instance *inst = pl_partition_instance_load(o.instance, &err);
    if (!inst)
        return pl_cli_report(&err);
    pl_partition_split *expert = NULL, *split = NULL;
    if (o.expert && !(expert = pl_partition_split_load(o.expert, inst, &err))) {
        pl_partition_instance_free(inst);
        return pl_cli_report(&err);
    }
    double bound = pl_partition_bound(inst);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pl_partition_result result;
    pl_status solved = pl_partition_solve(inst, o.max_ideals, &split, &result, &err);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (solved) {
        status = pl_cli_report(&err);
    } else {
        fprintf(pl_cli_text,
                "%s: %d nodes, %d edges, %d accelerator%s and %s (simulated under the paper's "
                "objective)\n",
                pl_cli_input_name(o.instance), inst->n_nodes, inst->n_edges,
                inst->n_accelerators, inst->n_accelerators == 1 ? "" : "s",
                inst->n_cpus > 0 ? "a CPU" : "no CPU");
        char note[128];
        print_load("bound", bound, bound, "");
        if (expert)
            print_load("expert", pl_partition_max_load(inst, expert, NULL), bound, "");
        if (result.ideals)
            snprintf(note, sizeof note, "over %ld ideals", result.n_ideals);
        else if (!result.orders)
            snprintf(note, sizeof note, "a greedy split (too many units for the program)");
        else if (result.n_ideals >= 0)
            snprintf(note, sizeof note, "over linear orders (more than %ld ideals)",
                     result.n_ideals - 1);
        else
            snprintf(note, sizeof note, "over linear orders (too many units for ideals)");
        print_load("placer DP", result.dp_max_load, bound, note);
        snprintf(note, sizeof note, "in %.3f s",
                 (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec));
        print_load("refined", result.refined_max_load, bound, note);
        if (o.output && pl_partition_split_write(o.output, inst, split, &err) != PL_OK)
            status = pl_cli_report(&err);
    }
    pl_partition_split_free(expert);
    pl_partition_split_free(split);
    pl_partition_instance_free(inst);
    return status;
}
