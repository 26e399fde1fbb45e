/* placer [-o PREFIX] MODEL.json: the main job. For now it does what exists: load and
 * validate the model, print its summary, draw it. Placement search joins here. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "graphs/mlp.json" -> "mlp": the file name without directory and ".json". */
static char *default_prefix(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    char *prefix = malloc(len + 1);
    if (prefix) {
        memcpy(prefix, base, len);
        prefix[len] = '\0';
    }
    return prefix;
}

int pl_cmd_main(int argc, char **argv)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {NULL, 0, NULL, 0}};
    const char *prefix_option = NULL;
    int c;
    opterr = 0; /* our own message, below */
    while ((c = getopt_long(argc, argv, "o:", options, NULL)) != -1) {
        if (c != 'o')
            return pl_cli_usage_error("unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        prefix_option = optarg;
    }
    if (optind >= argc)
        return pl_cli_usage_error("missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("one model at a time ('%s' is extra; commands: validate, "
                                  "dot)", argv[optind + 1]);
    const char *model = argv[optind];
    int status;
    pl_graph *graph = pl_cli_load_model(model, &status);
    if (!graph)
        return status;
    pl_cli_print_summary(stdout, model, graph);
    char *prefix = prefix_option ? strdup(prefix_option) : default_prefix(model);
    size_t len = prefix ? strlen(prefix) + sizeof ".graph.dot" : 0;
    char *dot_path = prefix ? malloc(len) : NULL;
    if (!dot_path) {
        fprintf(stderr, "placer: out of memory\n");
        status = PL_EXIT_FAILURE;
    } else {
        snprintf(dot_path, len, "%s.graph.dot", prefix);
        status = pl_cli_write_dot(graph, dot_path);
        if (status == PL_EXIT_OK)
            printf("wrote %s (render: dot -Tsvg %s > %s.svg)\n", dot_path, dot_path, prefix);
    }
    free(dot_path);
    free(prefix);
    pl_graph_free(graph);
    return status;
}
