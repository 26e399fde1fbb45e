/* The placer command line: the only part of placer that prints or exits. Each subcommand
 * is a function taking its own argv (argv[0] is the subcommand's name) and returning an
 * exit status. */
#ifndef PLACER_CLI_H
#define PLACER_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "clock.h"
#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "executor.h"
#include "measure.h"
#include "op_times.h"
#include "plan.h"
#include "program.h"
#include "session.h"
#include "stats.h"
#include "units.h"

/* Where docs/ is installed (configure's docdir, from Makefile.am): the help texts name
 * it so that their pointers resolve after `make install`. */
#ifndef PLACER_DOCDIR
#define PLACER_DOCDIR "docs"
#endif

enum {
    PL_EXIT_OK = 0,
    PL_EXIT_FAILURE = 1,
    PL_EXIT_USAGE = 2, /* bad input or usage */
    PL_EXIT_NO_FIT = 3, /* the plan does not fit a device's memory */
    PL_EXIT_INTERRUPTED = 130,
};

int pl_cmd_validate(int argc, char **argv);
int pl_cmd_dot(int argc, char **argv);
int pl_cmd_main(int argc, char **argv);
int pl_cmd_train(int argc, char **argv);
int pl_cmd_cluster(int argc, char **argv);
int pl_cmd_run(int argc, char **argv);
int pl_cmd_simulate(int argc, char **argv);
int pl_cmd_calibrate(int argc, char **argv);
int pl_cmd_baseline(int argc, char **argv);
int pl_cmd_eval(int argc, char **argv);
int pl_cmd_pretrain(int argc, char **argv);
int pl_cmd_partition(int argc, char **argv);

/* Prints "placer: message" on stderr, its control characters escaped (pl_text_escape):
 * every message that echoes a name or a path goes through here or pl_cli_report. */
void pl_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same and a pointer to the running command's --help ("Try 'placer train --help'.",
 * or 'placer --help' outside a subcommand); returns PL_EXIT_USAGE. */
int pl_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Names the subcommand that runs (NULL: none), for pl_cli_usage_error. main() calls it
 * once, before the command. */
void pl_cli_set_command(const char *name);
/* Prints the error's one line on stderr; returns the exit status for its status. Under
 * mpirun, after a failure between ranks, it ends every rank instead of returning
 * (pl_cli_end_on_comm_failure). */
int pl_cli_report(const pl_error *err);

/* Processes (processes.c): under mpirun, MPI is started before the command and ended
 * after it (pl_cli_end_processes returns the status to exit with, or ends every rank
 * when one failed alone). pl_cli_comm: NULL in one process. pl_cli_leader: rank 0, or the
 * one process, which prints and writes outputs. pl_cli_join_processes makes an executor
 * one rank of the cluster's processes, checking that mpirun started as many (exit 2; so does
 * pl_cli_check_processes, alone). */
int pl_cli_start_processes(void);
int pl_cli_end_processes(int status);
/* Under mpirun, once the processes have failed (comm.h): ends every rank now, exit
 * status 1, before anything MPI may still use is freed (pl_cli_report calls it after
 * saying the error). Otherwise nothing. */
void pl_cli_end_on_comm_failure(void);
pl_comm *pl_cli_comm(void);
bool pl_cli_leader(void);
int pl_cli_check_processes(const pl_cluster *cluster);
int pl_cli_join_processes(pl_executor *executor, const pl_cluster *cluster);
/* A rank other than 0 in the main job: its executor follows rank 0's (executor.h). */
int pl_cli_follow(const pl_graph *graph, const pl_cluster *cluster);
/* Under mpirun: the cost model's transfers between ranks measured when rank 0's `costs`
 * has none, or `force` (collective; every rank's `costs` gets them) and kept in rank 0's
 * cached profile. */
int pl_cli_measure_processes(pl_cost_model *costs, bool force);
/* Under mpirun, rank 0's cost model (loaded there alone, with `status` its exit status) on
 * every rank, so that the ranks decide alike; returns rank 0's status on every rank. In
 * one process, `status`. */
int pl_cli_share_costs(pl_cost_model *costs, int status);
/* Loads and validates a model, printing the error on failure (NULL then, *status set). */
pl_graph *pl_cli_load_model(const char *path, int *status);
/* The cluster (the local machine when cluster_path is NULL) and the plan (every op on the
 * first device when plan_path is NULL) for a graph; on failure reports the error and
 * returns its exit status, with both set to NULL. */
int pl_cli_load_placement(const char *cluster_path, const char *plan_path,
                          const pl_graph *graph, pl_cluster **cluster, pl_plan **plan);
/* "placer: warning: PLAN was made for model "a" (HASH), not this model "b" (HASH); ..."
 * on stderr when the plan file's model hash is not the graph's (plan.h: file_model): the
 * plan was read, its ops matched by name, but the model has changed since. */
void pl_cli_warn_plan_model(const char *path, const pl_plan *plan, const pl_graph *graph);
/* What a command sets up before its own work, in the order every command takes it: the
 * model (always), its training graph, the cluster (cluster_path, else this machine), the
 * plan (plan_path, else every op on the cluster's first device), this machine's profile
 * for the cluster (calibrated on first use), the step's lower bound under it, and an
 * executor holding the first training batch of data_path. A plan, the profile and an
 * executor each bring the cluster with them. */
enum {
    PL_CLI_TRAINING = 1 << 0,
    PL_CLI_CLUSTER = 1 << 1,
    PL_CLI_PLAN = 1 << 2,
    PL_CLI_COSTS = 1 << 3,
    PL_CLI_EXECUTOR = 1 << 4,
    PL_CLI_BOUND = 1 << 5, /* the lower bound under the profile (the search finds its own) */
};

typedef struct pl_cli_setup {
    /* what the command asks for */
    const char *model_path, *cluster_path, *plan_path, *data_path;
    const char *op_times_path;  /* op times measured elsewhere, which the profile takes
                                   (op_times.h); NULL: none */
    int needs;                  /* PL_CLI_* */
    const char *profile_source; /* the file the profile's and bound's errors name (NULL:
                                   the model) */
    bool quiet;                 /* no calibration progress */
    /* what it gets, owned by the set-up */
    pl_graph *graph;
    pl_cluster *cluster;
    pl_plan *plan;
    pl_cost_model *costs;
    pl_op_times *op_times; /* op_times_path's, borrowed by `costs` */
    bool calibrated; /* the profile was measured just now */
    double bound;    /* seconds */
    pl_executor *executor;
    int ready;       /* the needs met so far */
} pl_cli_setup;

/* Sets up what `needs` asks for and is not there yet, so that a command with work of its
 * own between the steps (placer train) raises `needs` and calls again. Reports the first
 * error; returns the exit status. */
int pl_cli_setup_load(pl_cli_setup *setup);
/* Frees what the set-up holds, the model last, and clears it. */
void pl_cli_setup_release(pl_cli_setup *setup);

/* A file a command reads or writes, and what it is to the command: "the model", "the
 * checkpoint". A NULL path is no file (an option not given). */
typedef struct pl_cli_file {
    const char *path;
    const char *role;
    bool binary; /* an output that is no text: never written to a terminal */
} pl_cli_file;

/* Where a command prints its text: standard output, or standard error while one of its
 * outputs is "-" (pl_cli_check_outputs decides), so that standard output carries that
 * output alone and it can be read back. */
extern FILE *pl_cli_text;

/* Refuses two inputs that are both "-": standard input can be read once (json_reader.h).
 * Prints "placer: standard input ('-') is given as both the model and the plan: it
 * can be read once" and returns
 * PL_EXIT_USAGE, else PL_EXIT_OK. pl_cli_check_outputs calls it first. */
int pl_cli_check_inputs(const pl_cli_file *inputs, size_t n_inputs);
/* Refuses an output that is also one of the inputs, before any work (docs/outputs.md):
 * every command calls it right after parsing its options. Files are compared by identity
 * (device and inode, links followed) when both exist, so "./a.json", "a.json" and a link
 * to it are one file; an output that does not exist yet is no input, and "-" (standard
 * output) none either. Prints "placer: the output 'a.json' is the model being read" on
 * stderr and returns PL_EXIT_USAGE, else PL_EXIT_OK. Then checks that every output can be
 * written, so that no long work ends in a failed write: its folder exists and is writable
 * (the profile's, which is made when missing, excepted), it is no directory, and a device or FIFO is writable;
 * otherwise "placer: cannot write the checkpoint '/x/c.ckpt': /x: No such file or
 * directory" and PL_EXIT_USAGE. Last, standard output: at most one output is "-"; a binary
 * one is refused when standard output is a terminal or under mpirun (which merges every
 * rank's standard output); while one is "-", pl_cli_text is standard error. */
int pl_cli_check_outputs(const pl_cli_file *inputs, size_t n_inputs,
                         const pl_cli_file *outputs, size_t n_outputs);
/* The calibration profile as an output ({NULL} when there is no home to put it in): the
 * commands that may calibrate write it. `buf` holds the path. */
pl_cli_file pl_cli_profile_output(char *buf, size_t cap);

/* How messages name an input: "<stdin>" for "-" (json_reader.h), else the path. */
const char *pl_cli_input_name(const char *path);
/* A whole decimal number in [min, max], or false. */
bool pl_cli_parse_long(const char *text, long min, long max, long *out);
/* Refuses to run a cluster with hardware placer cannot run (cluster.h: simulated): says
 * why in one line, after "COMMAND: " when `command` is not NULL; returns 2. */
int pl_cli_refuse_simulated(const char *command, const pl_cluster *cluster);
/* What every output of a search on such a cluster says: "simulated: this machine cannot
 * run cluster X", and the error its costs carry (the roofline's: unknown), into `buf`
 * (PL_ERROR_TEXT_MAX is room enough); returns buf. */
const char *pl_cli_simulated_text(const pl_cluster *cluster, const pl_cost_model *costs,
                                  char *buf, size_t cap);
/* An executor for a training graph on a cluster, its inputs filled with the first training
 * batch of `data_path` (as placer train --data takes it). Reports errors; exit status
 * (2 on a simulated cluster: pl_cli_refuse_simulated). */
int pl_cli_new_executor(const pl_graph *graph, const pl_cluster *cluster,
                        const char *data_path, pl_executor **executor);
/* Classification: the loss is softmax cross-entropy; its inputs are logits and labels
 * (logits -1: the loss is another). */
typedef struct pl_cli_scorer {
    int logits, labels; /* tensors, or -1 */
    int64_t classes, positions_per_sample;
} pl_cli_scorer;
pl_cli_scorer pl_cli_find_scorer(const pl_graph *graph);
/* Correct predictions among the first `samples` samples of the batch. */
int64_t pl_cli_count_correct(const pl_cli_scorer *scorer, const float *logits,
                             const int32_t *labels, int64_t samples);
/* The weights of `path` (weights.h) into a session's buffers, or an executor's host
 * buffers when `session` is NULL; `save` writes them there instead. Reports errors; exit
 * status. */
int pl_cli_weights(const char *path, bool save, const pl_graph *graph, pl_session *session,
                   pl_executor *executor);
/* A measured step's spread as the tables print it, "±1.2%": half the interquartile range
 * of its steps over their median (measure.h). Returns `text`. */
const char *pl_cli_spread_text(const pl_series *series, char *text, size_t size);
/* What made a series unstable, for a sentence: "bimodal: 3 steps near 0.390 ms, 7 near
 * 12.010 ms", "drifting: the last third of the steps 35% slower than the first (rank
 * correlation +0.92)", both joined by "; ", or "" when it is steady. Returns `text`. */
const char *pl_cli_instability_text(const pl_series *series, char *text, size_t size);
/* The measurement's rounds and stability, a line or two for run, simulate and baseline:
 * "measurement: steady ...", or what made it unstable in every round and which round the
 * figures are. */
void pl_cli_print_stability(FILE *out, const pl_measurement *measurement);
/* "placer: warning: other work took 63% of the CPU while WHAT ...: the measurements are
 * not trustworthy; run again on a quiet machine (...)" on stderr when `load` was disturbed
 * (machine_load.h: pl_machine_load_warning, which says what `slowdown` and `note` add), whatever -q says; nothing otherwise. Only for native cores in one process: paced
 * devices mostly wait, so others' work seldom moves their steps, and over processes the
 * other ranks are no one else's work. One line per command that measures. */
void pl_cli_warn_load(const pl_machine_load *load, const pl_cluster *cluster, const char *what,
                      double slowdown, const char *note);
/* The least the machine's load is read before a measurement, seconds (machine_load.h). */
#define PL_CLI_LOAD_BEFORE_SECONDS 0.2
/* The load before a measurement that began reading at `started`: read once at least
 * PL_CLI_LOAD_BEFORE_SECONDS have passed (sleeping what is left), or unknown over
 * processes, where the other ranks would read as others' work. */
pl_machine_load pl_cli_load_before(const pl_machine_cpu *started);
/* The load a measurement is judged by (machine_load.h): its rounds', with `before` it when
 * they were too short to judge alone (*with_before then true); unknown when `before` is. */
pl_machine_load pl_cli_measured_load(const pl_measurement *measurement,
                                     const pl_machine_load *before, bool *with_before);
/* "machine: other work took 3% of the CPU (0.42 s measured) while WHAT[ and just
 * before]", or that it is unknown (not over processes, where nothing is read). */
void pl_cli_print_load(const pl_machine_load *judged, bool with_before, const char *what);
/* How busy the machine was, for a sentence: "other work took 3% of the CPU (0.42 s
 * measured)", with the steal share when there was some, or "how busy the machine was is
 * unknown (no /proc/stat)". Returns `text`. */
const char *pl_cli_load_text(const pl_machine_load *load, char *text, size_t size);
/* The footnote of a table whose measured figures carry a spread and a mark. */
void pl_cli_print_spread_note(FILE *out, bool any_unstable);
/* "plan: 3 devices, 3 stages, ..." for run and simulate. */
void pl_cli_describe_plan(const pl_plan *plan, const pl_cluster *cluster,
                          const pl_program *program);
/* Ctrl-C for long commands: pl_cli_catch_interrupt(true) clears the flag and makes SIGINT,
 * SIGTERM and SIGHUP set it instead of ending the process (an interrupted command still
 * writes what it has and exits PL_EXIT_INTERRUPTED, 130, whichever signal it was);
 * (false) restores what was there before, unless the flag is set or the command runs under
 * mpirun: then they stay caught until the process exits, since a command ending for an
 * interrupt changes nothing for a second one, and mpirun's signal may reach a rank only
 * after the ranks stopped together. SIGHUP ignored at the start (nohup) stays ignored. */
extern volatile sig_atomic_t pl_cli_interrupted;
void pl_cli_catch_interrupt(bool catch);
/* For a job that must answer an interrupt within a bound although some of its steps
 * cannot stop midway (loading a huge model, one placement of it): once the flag is set,
 * the process gets `seconds` to stop in order, and then ends at once with
 * PL_EXIT_INTERRUPTED, the temporary file of a write under way removed and the outputs
 * written before kept. 0 turns that off. */
void pl_cli_interrupt_grace(int seconds);

/* PREFIX and a suffix ("m" ".plan.json"): a path to free(), or NULL without memory. */
char *pl_cli_path(const char *prefix, const char *suffix);
/* Calibration progress on stderr; `context` points to a bool that enables it. */
void pl_cli_calibration_progress(void *context, const char *what);
/* "placer: warning: the calibration profile is noisy: ..." on stderr when the profile is
 * noisy or old (profile.h: pl_profile_warning), whatever -q says; nothing otherwise. Once
 * per command that loads the profile. */
void pl_cli_warn_profile(const pl_cost_model *model);
/* The validate summary of a loaded model. */
void pl_cli_print_summary(FILE *out, const char *path, const pl_graph *graph);
/* Writes the model's dot drawing to `path` atomically ("-" for standard output); ops
 * grouped by module above max_boxes (dot.h). */
int pl_cli_write_dot(const pl_graph *graph, int max_boxes, const char *path);
/* Writes the drawing of a placed training graph (dot.h: pl_dot_write_plan) the same way. */
int pl_cli_write_plan_dot(const pl_graph *graph, const pl_plan *plan,
                          const pl_cluster *cluster, const double *op_seconds, bool all_ops,
                          int max_boxes, const char *path);
/* Each op's simulated time per step (summed over its tasks) under `model`, or NULL when
 * the simulation fails. free(). Per op of the graph the plan runs: the training graph's,
 * or for a plan that splits ops, the rewritten graph's (as pl_dot_write_plan draws it). */
double *pl_cli_op_seconds(const pl_graph *graph, const pl_cluster *cluster,
                          const pl_cost_model *model, const pl_plan *plan);
/* The same from the cached profile, or
 * NULL when no cached profile fits (never calibrates) or the simulation fails. free(). */
double *pl_cli_cached_op_seconds(const pl_graph *graph, const pl_cluster *cluster,
                                 const pl_plan *plan);

#endif
