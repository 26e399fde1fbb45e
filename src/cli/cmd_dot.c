/* placer dot MODEL.json [-o FILE]: the model as GraphViz dot. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int pl_cmd_dot(int argc, char **argv)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *output = "-";
    int c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'h':
            printf("Usage: placer dot MODEL.json [-o FILE]\n"
                   "Writes the model graph in GraphViz dot to FILE (default: standard output).\n"
                   "Render it with: dot -Tsvg FILE > model.svg\n");
            return PL_EXIT_OK;
        default:
            return pl_cli_usage_error("dot: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("dot: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("dot: one model at a time ('%s' is extra)", argv[optind + 1]);
    int status;
    pl_graph *graph = pl_cli_load_model(argv[optind], &status);
    if (!graph)
        return status;
    status = pl_cli_write_dot(graph, output);
    pl_graph_free(graph);
    return status;
}
