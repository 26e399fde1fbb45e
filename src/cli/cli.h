/* The placer command line: the only part of placer that prints or exits. Each subcommand
 * is a function taking its own argv (argv[0] is the subcommand's name) and returning an
 * exit status. */
#ifndef PLACER_CLI_H
#define PLACER_CLI_H

#include <stdio.h>

#include "error.h"
#include "graph.h"

enum {
    PL_EXIT_OK = 0,
    PL_EXIT_FAILURE = 1,
    PL_EXIT_USAGE = 2, /* bad input or usage */
    PL_EXIT_INTERRUPTED = 130,
};

int pl_cmd_validate(int argc, char **argv);
int pl_cmd_dot(int argc, char **argv);
int pl_cmd_main(int argc, char **argv);
int pl_cmd_train(int argc, char **argv);
int pl_cmd_cluster(int argc, char **argv);

/* Prints "placer: message" and a pointer to --help on stderr; returns PL_EXIT_USAGE. */
int pl_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the error's one line on stderr; returns the exit status for its status. */
int pl_cli_report(const pl_error *err);
/* Loads and validates a model, printing the error on failure (NULL then, *status set). */
pl_graph *pl_cli_load_model(const char *path, int *status);
/* The validate summary of a loaded model. */
void pl_cli_print_summary(FILE *out, const char *path, const pl_graph *graph);
/* Writes the model's dot drawing to `path` atomically ("-" for standard output). */
int pl_cli_write_dot(const pl_graph *graph, const char *path);

#endif
