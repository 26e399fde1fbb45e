/* placer validate MODEL.json...: load each model, print its summary or its first error. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int pl_cmd_validate(int argc, char **argv)
{
    static const struct option options[] = {{"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int quiet = 0, c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "qh", options, NULL)) != -1) {
        switch (c) {
        case 'q':
            quiet = 1;
            break;
        case 'h':
            printf("Usage: placer validate [-q|--quiet] MODEL.json...\n"
                   "Checks each model and prints its summary (with -q, only errors).\n");
            return PL_EXIT_OK;
        default:
            return pl_cli_usage_error("validate: unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("validate: missing MODEL.json");
    int worst = PL_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        int status;
        pl_graph *graph = pl_cli_load_model(argv[i], &status);
        if (graph && !quiet)
            pl_cli_print_summary(stdout, argv[i], graph);
        pl_graph_free(graph);
        if (status > worst)
            worst = status;
    }
    return worst;
}
