/* What every subcommand shares: error reporting, exit statuses, loading a model. */
#include <stdarg.h>
#include <stdio.h>

#include "atomic_file.h"
#include "cli.h"
#include "dot.h"
#include "load.h"

int pl_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("placer: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'placer --help'.\n", stderr);
    va_end(ap);
    return PL_EXIT_USAGE;
}

int pl_cli_report(const pl_error *err)
{
    char line[PL_ERROR_SOURCE_MAX + PL_ERROR_PATH_MAX + PL_ERROR_TEXT_MAX + 16];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    return err->status == PL_EINPUT ? PL_EXIT_USAGE : PL_EXIT_FAILURE;
}

pl_graph *pl_cli_load_model(const char *path, int *status)
{
    pl_error err;
    pl_graph *graph = pl_graph_load_file(path, &err);
    *status = graph ? PL_EXIT_OK : pl_cli_report(&err);
    return graph;
}

int pl_cli_write_dot(const pl_graph *graph, const char *path)
{
    pl_error err;
    pl_error_init(&err, path);
    if (path[0] == '-' && path[1] == '\0') {
        if (pl_dot_write_graph(graph, stdout, &err) != PL_OK || fflush(stdout) != 0)
            return pl_cli_report(&err);
        return PL_EXIT_OK;
    }
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, &err) != PL_OK)
        return pl_cli_report(&err);
    if (pl_dot_write_graph(graph, file.fp, &err) != PL_OK) {
        pl_atomic_abort(&file);
        return pl_cli_report(&err);
    }
    if (pl_atomic_commit(&file, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}
