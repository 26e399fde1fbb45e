/* placer train MODEL.json: trains a model for real, on one device or placed by a plan on
 * a cluster, printing loss, accuracy and throughput as it goes, with checkpoints that
 * resume exactly. With a plan, the executor runs the training steps on the session's
 * parameters; evaluation runs on one device. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "cli.h"
#include "data.h"
#include "executor.h"
#include "graph_build.h"
#include "session.h"

typedef struct train_options {
    const char *model, *data, *checkpoint, *resume, *plan, *cluster, *weights, *save_weights;
    long epochs, steps, batch, threads, micro_batches, log_every, checkpoint_every;
    double lr;
    unsigned long long seed;
    bool quiet;
} train_options;

static void usage(void)
{
    printf("Usage: placer train MODEL.json [options]\n"
           "Trains the model and prints loss, accuracy and samples per second: placed by\n"
           "--plan on the cluster's devices, or without a plan on a single device of\n"
           "--threads threads. Evaluation runs on a single device.\n"
           "\n"
           "  --plan FILE          train with this plan (plan-format.md); it sets the\n"
           "                       micro-batches and the devices' threads\n"
           "  --cluster FILE       the plan's cluster (default: this machine)\n"
           "  --data PATH          a Fashion-MNIST directory, a text file, or 'synthetic'\n"
           "                       (default: chosen by the model's inputs)\n"
           "  --epochs N           train until N epochs are done (default 1)\n"
           "  --steps N            train until N steps are done (instead of --epochs)\n"
           "  --batch N            samples per step (default: the model's batch size)\n"
           "  --micro-batches N    split each step into N micro-batches (default 1)\n"
           "  --lr X               learning rate (default: the model's)\n"
           "  --seed N             data order and dropout seed (default 1)\n"
           "  --threads N          worker threads of the single device (default 1)\n"
           "  --checkpoint FILE    write a checkpoint here at the end (and on Ctrl-C,\n"
           "                       SIGTERM or SIGHUP: exit status 130)\n"
           "  --checkpoint-every N also every N steps\n"
           "  --resume FILE        continue from a checkpoint\n"
           "  --weights FILE       start from these weights (a tensor file: every parameter\n"
           "                       and batch-norm running average, finite; tensor-file.md)\n"
           "  --save-weights FILE  write the weights there at the end (and on Ctrl-C)\n"
           "  --log-every N        print a line every N steps (default 100) and at the\n"
           "                       last step\n"
           "  -q, --quiet          only the epoch lines and the summary\n"
           "\n"
           "A MODEL.json, --plan or --cluster FILE of '-' is read from standard input (one\n"
           "of them). More: " PLACER_DOCDIR "/training.md.\n");
}

static int parse_options(int argc, char **argv, train_options *o)
{
    enum { DATA = 256, EPOCHS, STEPS, BATCH, MICRO, LR, SEED, THREADS, CKPT, CKPT_EVERY,
           RESUME, LOG_EVERY, PLAN, CLUSTER, WEIGHTS, SAVE_WEIGHTS };
    static const struct option options[] = {
        {"data", required_argument, NULL, DATA}, {"epochs", required_argument, NULL, EPOCHS},
        {"steps", required_argument, NULL, STEPS}, {"batch", required_argument, NULL, BATCH},
        {"micro-batches", required_argument, NULL, MICRO}, {"lr", required_argument, NULL, LR},
        {"seed", required_argument, NULL, SEED}, {"threads", required_argument, NULL, THREADS},
        {"checkpoint", required_argument, NULL, CKPT},
        {"checkpoint-every", required_argument, NULL, CKPT_EVERY},
        {"resume", required_argument, NULL, RESUME},
        {"log-every", required_argument, NULL, LOG_EVERY},
        {"plan", required_argument, NULL, PLAN}, {"cluster", required_argument, NULL, CLUSTER},
        {"weights", required_argument, NULL, WEIGHTS},
        {"save-weights", required_argument, NULL, SAVE_WEIGHTS},
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (train_options){.epochs = 0, .steps = 0, .threads = 0, .micro_batches = 0,
                         .log_every = 100, .seed = 1};
    opterr = 0; /* our own message, below */
    int c, index = 0; /* index: the long option just read */
    long value = 0;
    while ((c = getopt_long(argc, argv, "qh", options, &index)) != -1) {
        const char *arg = optarg;
        bool ok = true;
        const char *range = "";
        switch (c) {
        case DATA: o->data = arg; break;
        case EPOCHS: ok = pl_cli_parse_long(arg, 1, LONG_MAX, &o->epochs); break;
        case STEPS: ok = pl_cli_parse_long(arg, 1, LONG_MAX, &o->steps); break;
        case BATCH:
            ok = pl_cli_parse_long(arg, 1, INT_MAX, &o->batch);
            range = " (1 to 2147483647: a batch is an int)";
            break;
        case MICRO: ok = pl_cli_parse_long(arg, 1, LONG_MAX, &o->micro_batches); break;
        case THREADS: ok = pl_cli_parse_long(arg, 1, 256, &o->threads); break;
        case LOG_EVERY: ok = pl_cli_parse_long(arg, 1, LONG_MAX, &o->log_every); break;
        case CKPT: o->checkpoint = arg; break;
        case CKPT_EVERY: ok = pl_cli_parse_long(arg, 1, LONG_MAX, &o->checkpoint_every); break;
        case RESUME: o->resume = arg; break;
        case PLAN: o->plan = arg; break;
        case CLUSTER: o->cluster = arg; break;
        case WEIGHTS: o->weights = arg; break;
        case SAVE_WEIGHTS: o->save_weights = arg; break;
        case SEED:
            ok = pl_cli_parse_long(arg, 0, LONG_MAX, &value);
            o->seed = (unsigned long long)value;
            break;
        case LR: {
            char *end;
            o->lr = strtod(arg, &end);
            ok = *arg && *end == '\0' && o->lr > 0 && isfinite(o->lr);
            break;
        }
        case 'q': o->quiet = true; break;
        case 'h': usage(); return -1;
        default:
            return pl_cli_usage_error("train: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
        if (!ok)
            return pl_cli_usage_error("train: invalid value '%s' for --%s%s", arg,
                                      options[index].name, range);
    }
    if (optind >= argc)
        return pl_cli_usage_error("train: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("train: one model at a time ('%s' is extra)", argv[optind + 1]);
    if (o->epochs && o->steps)
        return pl_cli_usage_error("train: give --epochs or --steps, not both");
    if (!o->epochs && !o->steps)
        o->epochs = 1;
    if (o->cluster && !o->plan)
        return pl_cli_usage_error("train: --cluster goes with --plan");
    if (o->weights && o->resume)
        return pl_cli_usage_error("train: give --weights or --resume, not both (a "
                                  "checkpoint holds the weights)");
    if (o->plan && (o->threads || o->micro_batches))
        return pl_cli_usage_error("train: the plan sets the %s", o->threads ? "threads (its "
                                  "cluster's devices)" : "micro-batches");
    if (!o->threads)
        o->threads = 1;
    if (!o->micro_batches)
        o->micro_batches = 1;
    o->model = argv[optind];
    if (o->checkpoint && !strcmp(o->checkpoint, "-") && o->checkpoint_every)
        return pl_cli_usage_error("train: --checkpoint-every writes the checkpoint again and "
                                  "again: give a file, not '-'");
    /* Only the checkpoint may be the one resumed: that file is read whole before training,
     * and writing its continuation over it is how a run goes on in one file. */
    const pl_cli_file inputs[] = {
        {o->model, "the model", false},     {o->plan, "the plan", false},
        {o->cluster, "the cluster", false}, {o->data, "the data", false},
        {o->weights, "the weights", false}, {o->resume, "the checkpoint resumed", false}};
    const pl_cli_file outputs[] = {{o->save_weights, "the saved weights", true},
                                   {o->checkpoint, "the checkpoint", true}};
    int status = pl_cli_check_outputs(inputs, 6, outputs, 1);
    return status == PL_EXIT_OK ? pl_cli_check_outputs(inputs, 5, outputs, 2) : status;
}

static void **input_buffers(const pl_graph *g, pl_session *s)
{
    void **inputs = calloc((size_t)g->n_tensors, sizeof *inputs);
    for (int t = 0; inputs && t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_INPUT)
            inputs[t] = pl_session_data(s, t);
    return inputs;
}

/* Test-split accuracy (and mean loss), evaluation mode, whole batches. */
static void evaluate(const pl_graph *g, pl_session *s, const pl_dataset *data,
                     const pl_cli_scorer *sc, void *const *inputs, double *loss, double *accuracy)
{
    int64_t size = pl_dataset_size(data, PL_SPLIT_TEST), correct = 0, batches = 0;
    double total = 0;
    pl_error err;
    for (int64_t first = 0; first < size; first += g->batch_size, batches++) {
        int64_t count = size - first < g->batch_size ? size - first : g->batch_size;
        pl_dataset_fill(data, PL_SPLIT_TEST, 0, first, g->batch_size, inputs);
        float batch_loss = 0;
        if (pl_session_forward(s, false, &batch_loss, &err) != PL_OK)
            break;
        total += batch_loss;
        if (sc->logits >= 0)
            correct += pl_cli_count_correct(sc, pl_session_data(s, sc->logits),
                                     pl_session_data(s, sc->labels), count);
    }
    *loss = batches ? total / (double)batches : NAN;
    *accuracy = sc->logits >= 0 && size ? (double)correct / (double)(size * sc->positions_per_sample)
                                        : NAN;
}

static void print_timing(double *times, long n)
{
    long warmup = n >= 10 ? 5 : n / 2;
    if (n - warmup < 1)
        return;
    pl_stats stats = pl_stats_of(times + warmup, (int)(n - warmup));
    fprintf(pl_cli_text,
            "timing: %ld steps, median %.3f ms, min %.3f ms, max %.3f ms (%ld warm-up steps "
            "excluded)\n",
            n - warmup, 1e3 * stats.median, 1e3 * stats.min, 1e3 * stats.max, warmup);
}

typedef struct trainer {
    train_options o;
    pl_cli_setup setup;  /* owns the model, and with a plan its cluster and the plan */
    pl_graph *g;         /* the set-up's */
    pl_dataset *data;
    pl_session *s;
    pl_cluster *cluster; /* with a plan: the set-up's cluster and plan, and an executor */
    pl_plan *plan;
    pl_executor *ex;
    void **inputs;
    pl_cli_scorer sc;
    pl_train_position at;
    int64_t epoch_size;
    bool save_failed; /* a periodic checkpoint failed, and was said */
} trainer;

/* Reports a failure unless a periodic save failed and was reported before. */
static int write_checkpoint(trainer *t)
{
    pl_error err;
    pl_error_init(&err, t->o.checkpoint);
    /* a sharded optimizer state, and every rank's tensors, in the session's */
    if (t->ex && pl_executor_sync_host(t->ex, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!pl_cli_leader())
        return PL_EXIT_OK;
    if (pl_checkpoint_write(t->o.checkpoint, t->g, t->s, &t->at, &err) == PL_OK)
        return PL_EXIT_OK;
    if (t->save_failed)
        return PL_EXIT_FAILURE;
    t->save_failed = true;
    return pl_cli_report(&err);
}

/* The training accuracy counts the last step's logits: in one process, where they are
 * all in one place (one micro-batch of one replica, and a plan that makes them whole: a
 * loss split by classes never does). Asked after a step. */
static bool counts_accuracy(const trainer *t)
{
    return t->sc.logits >= 0 && t->o.micro_batches == 1 && !pl_cli_comm() &&
           (!t->plan || t->plan->replicas == 1) &&
           (!t->ex || pl_executor_data(t->ex, t->sc.logits));
}

/* Whether to stop for Ctrl-C or a signal. With an executor, its decision: under mpirun the
 * ranks take it together at a step's end, so that all stop at the same step. */
static bool interrupted(const trainer *t)
{
    return t->ex ? pl_executor_interrupted(t->ex) : pl_cli_interrupted;
}

static bool finished(const trainer *t)
{
    return t->o.steps ? t->at.step >= t->o.steps : t->at.epoch >= t->o.epochs;
}

/* Whether the step just done is the run's last: its line is printed whatever --log-every
 * says, so that a run shorter than the interval, or ending between two lines, still shows
 * its loss. An epoch is counted done only after its line (run), hence epoch_done. */
static bool last_step(const trainer *t, bool epoch_done)
{
    if (interrupted(t))
        return true;
    return t->o.steps ? t->at.step >= t->o.steps
                      : epoch_done && t->at.epoch + 1 >= t->o.epochs;
}

static int run(trainer *t)
{
    const pl_graph *g = t->g;
    /* under mpirun a rank's standard output is a terminal of mpirun's, not the user's */
    bool tty = !t->o.quiet && isatty(fileno(pl_cli_text)) && !pl_cli_comm();
    long capacity = 1024, timed = 0;
    double *times = malloc((size_t)capacity * sizeof *times);
    double window_loss = 0, window_start = pl_now(), epoch_loss = 0;
    int64_t window_steps = 0, window_correct = 0, epoch_steps = 0;
    bool partial = false; /* a terminal's progress line waits for its end */
    int status = PL_EXIT_OK;
    while (!finished(t) && !interrupted(t) && times) {
        pl_dataset_fill(t->data, PL_SPLIT_TRAIN, t->at.epoch, t->at.position, g->batch_size,
                        t->inputs);
        pl_error err;
        pl_error_init(&err, t->o.model);
        float loss;
        double start = pl_now();
        pl_status stepped = t->ex ? pl_executor_step(t->ex, t->at.step + 1, &loss, &err)
                                  : pl_session_train_step(t->s, t->at.step + 1,
                                                          (int)t->o.micro_batches, &loss, &err);
        /* cut short by an interrupt (executor.h): the step is done, its time is not one */
        bool cut_short = stepped == PL_EINTERRUPTED;
        if (stepped != PL_OK && !cut_short) {
            status = pl_cli_report(&err);
            break;
        }
        double elapsed = pl_now() - start;
        if (!cut_short && timed == capacity) {
            double *more = realloc(times, (size_t)(capacity *= 2) * sizeof *times);
            if (!more)
                break;
            times = more;
        }
        if (!cut_short)
            times[timed++] = elapsed;
        t->at.step++;
        t->at.position += g->batch_size;
        window_loss += loss;
        epoch_loss += loss;
        window_steps++;
        epoch_steps++;
        const float *logits = !counts_accuracy(t) ? NULL
                              : t->ex           ? pl_executor_data(t->ex, t->sc.logits)
                                                : pl_session_data(t->s, t->sc.logits);
        if (logits)
            window_correct += pl_cli_count_correct(&t->sc, logits,
                                                   pl_session_data(t->s, t->sc.labels),
                                                   g->batch_size);
        if (!isfinite(loss)) {
            fprintf(stderr, "placer: train: the loss became %f at step %lld; try a smaller "
                    "--lr\n", (double)loss, (long long)t->at.step);
            status = PL_EXIT_FAILURE;
            break;
        }
        bool epoch_done = t->at.position >= t->epoch_size;
        bool line = t->at.step % t->o.log_every == 0 || last_step(t, epoch_done);
        if (line || (tty && window_steps % 10 == 0)) {
            double seconds = pl_now() - window_start;
            char accuracy[32] = "";
            if (counts_accuracy(t))
                snprintf(accuracy, sizeof accuracy, "  accuracy %.4f",
                         (double)window_correct /
                             (double)(window_steps * g->batch_size * t->sc.positions_per_sample));
            if (!t->o.quiet || !line)
                fprintf(pl_cli_text, "%sstep %lld  epoch %lld  loss %.4f%s  %.0f samples/s%s",
                        tty ? "\r" : "", (long long)t->at.step, (long long)t->at.epoch + 1,
                        window_loss / (double)window_steps, accuracy,
                        (double)(window_steps * g->batch_size) / seconds,
                        line || !tty ? "\n" : "   ");
            partial = tty && !line;
            fflush(pl_cli_text);
            if (line) {
                window_loss = 0;
                window_steps = window_correct = 0;
                window_start = pl_now();
            }
        }
        if (epoch_done) {
            double test_loss, test_accuracy;
            /* the session's buffers whole: every rank's tensors */
            if (t->ex && pl_executor_sync_host(t->ex, &err) != PL_OK) {
                status = pl_cli_report(&err);
                break;
            }
            evaluate(g, t->s, t->data, &t->sc, t->inputs, &test_loss, &test_accuracy);
            fprintf(pl_cli_text, "%sepoch %lld  train loss %.4f", tty ? "\r" : "",
                    (long long)t->at.epoch + 1, epoch_loss / (double)epoch_steps);
            if (pl_dataset_size(t->data, PL_SPLIT_TEST) > 0)
                fprintf(pl_cli_text, "  test loss %.4f", test_loss);
            if (!isnan(test_accuracy))
                fprintf(pl_cli_text, "  test accuracy %.4f", test_accuracy);
            fprintf(pl_cli_text, "\n");
            partial = false;
            fflush(pl_cli_text);
            t->at.epoch++;
            t->at.position = 0;
            epoch_loss = 0;
            epoch_steps = 0;
        }
        /* a periodic save that fails is said and training goes on: the next save, or the
           last, may succeed (space freed), and the last one's failure is the exit status */
        if (t->o.checkpoint && t->o.checkpoint_every && t->at.step % t->o.checkpoint_every == 0)
            write_checkpoint(t);
    }
    if (partial)
        fprintf(pl_cli_text, "\n");
    if (times)
        print_timing(times, timed);
    free(times);
    if (status == PL_EXIT_OK && t->o.checkpoint) {
        t->save_failed = false; /* the last save's failure is always said */
        status = write_checkpoint(t);
    }
    pl_error err;
    pl_error_init(&err, NULL);
    if (status == PL_EXIT_OK && t->o.save_weights && t->ex &&
        pl_executor_sync_host(t->ex, &err) != PL_OK)
        status = pl_cli_report(&err);
    if (status == PL_EXIT_OK && t->o.save_weights && pl_cli_leader())
        status = pl_cli_weights(t->o.save_weights, true, g, t->s, NULL);
    if (status == PL_EXIT_OK && interrupted(t)) {
        if (pl_cli_leader())
            fprintf(stderr, "placer: train: interrupted at step %lld%s%s\n",
                    (long long)t->at.step, t->o.checkpoint ? "; checkpoint written" : "",
                    t->o.save_weights ? "; weights written" : "");
        status = PL_EXIT_INTERRUPTED;
    }
    return status;
}

/* The plan and its executor, working on the session's parameters, state and inputs. */
static int set_up_plan(trainer *t)
{
    t->setup.needs |= PL_CLI_PLAN;
    int status = pl_cli_setup_load(&t->setup);
    if (status != PL_EXIT_OK)
        return status;
    t->cluster = t->setup.cluster;
    t->plan = t->setup.plan;
    t->o.micro_batches = t->plan->micro_batches;
    void **host = calloc((size_t)t->g->n_tensors, sizeof *host);
    if (!host)
        return PL_EXIT_FAILURE;
    for (int i = 0; i < t->g->n_tensors; i++)
        if (t->g->tensors[i].kind != PL_TENSOR_ACTIVATION)
            host[i] = pl_session_data(t->s, i);
    pl_error err;
    pl_error_init(&err, t->o.plan);
    pl_fit fit = {.fits = true};
    t->ex = pl_executor_new(t->g, t->cluster, host, &err);
    free(host);
    if (!t->ex)
        return pl_cli_report(&err);
    pl_executor_set_interrupt(t->ex, &pl_cli_interrupted);
    if ((status = pl_cli_join_processes(t->ex, t->cluster)) != PL_EXIT_OK)
        return status;
    if (pl_executor_set_plan(t->ex, t->plan, &fit, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!fit.fits) {
        pl_cli_error("train: the plan does not fit: device %s needs %lld bytes "
                "and has %lld", t->cluster->devices[fit.device].name, (long long)fit.need,
                (long long)fit.capacity);
        return PL_EXIT_NO_FIT;
    }
    return PL_EXIT_OK;
}

/* In steps of the shared set-up (cli.h) with the trainer's own between them: the batch
 * and learning rate change the model before its training graph is built, and the data and
 * session come before the plan. */
static int set_up(trainer *t)
{
    t->setup = (pl_cli_setup){.model_path = t->o.model, .cluster_path = t->o.cluster,
                              .plan_path = t->o.plan,
                              .needs = t->o.cluster ? PL_CLI_CLUSTER : 0};
    int status = pl_cli_setup_load(&t->setup);
    if (status != PL_EXIT_OK)
        return status;
    if (t->setup.cluster && t->setup.cluster->simulated) /* before any parameter memory */
        return pl_cli_refuse_simulated("train", t->setup.cluster);
    t->g = t->setup.graph;
    pl_error err;
    pl_error_init(&err, t->o.model);
    if (t->o.batch && pl_graph_set_batch(t->g, (int)t->o.batch, &err) != PL_OK)
        return pl_cli_report(&err);
    if (t->o.lr > 0)
        t->g->optimizer.lr = t->o.lr;
    if (t->g->batch_size % t->o.micro_batches != 0)
        return pl_cli_usage_error("train: %ld micro-batches do not divide the batch of %d",
                                  t->o.micro_batches, t->g->batch_size);
    char reason[PL_MAX_NAME + 256];
    if (t->o.micro_batches > 1 && pl_graph_whole_step_reason(t->g, reason, sizeof reason))
        return pl_cli_usage_error("train: %ld micro-batches, but %s", t->o.micro_batches,
                                  reason);
    t->setup.needs = PL_CLI_TRAINING;
    if ((status = pl_cli_setup_load(&t->setup)) != PL_EXIT_OK)
        return status;
    pl_error_init(&err, pl_cli_input_name(t->o.model));
    if (!(t->s = pl_session_new(t->g, (int)t->o.threads, &err)))
        return pl_cli_report(&err);
    if (!(t->data = pl_dataset_open(t->g, t->o.data, t->o.seed, &err)))
        return pl_cli_report(&err);
    t->inputs = input_buffers(t->g, t->s);
    t->sc = pl_cli_find_scorer(t->g);
    t->at = (pl_train_position){.seed = t->o.seed};
    t->epoch_size = pl_dataset_size(t->data, PL_SPLIT_TRAIN);
    if (t->o.plan && (status = set_up_plan(t)) != PL_EXIT_OK)
        return status;
    if (t->o.weights && (status = pl_cli_weights(t->o.weights, false, t->g, t->s, NULL)) !=
                            PL_EXIT_OK)
        return status;
    if (t->o.resume) {
        pl_error_init(&err, t->o.resume);
        if (pl_checkpoint_read(t->o.resume, t->g, t->s, &t->at, &err) != PL_OK)
            return pl_cli_report(&err);
        if (t->at.position > 0 && t->at.position >= t->epoch_size) {
            pl_error_set(&err, PL_EINPUT, NULL, "the position is %lld: an epoch of the "
                         "training data has %lld samples", (long long)t->at.position,
                         (long long)t->epoch_size);
            return pl_cli_report(&err);
        }
        if (t->at.seed != t->o.seed)
            fprintf(stderr, "placer: train: continuing with the checkpoint's seed %llu\n",
                    (unsigned long long)t->at.seed);
    }
    if (!t->o.quiet && !t->plan)
        fprintf(pl_cli_text, "training %s: batch %d%s, %d ops, %s, %ld thread%s, data: %s\n",
                t->g->name, t->g->batch_size, t->o.micro_batches > 1 ? " in micro-batches" : "",
                t->g->n_ops, t->g->optimizer.kind == PL_OPT_ADAM ? "adam" : "sgd", t->o.threads,
                t->o.threads == 1 ? "" : "s", pl_dataset_describe(t->data));
    char replicas[64], split[96];
    if (!t->o.quiet && t->plan)
        fprintf(pl_cli_text,
                "training %s: batch %d in %d micro-batch%s, %d ops, %s, placed by %s on "
                "cluster \"%s\" (%s%s%d stage%s, %s%s), data: %s\n",
                t->g->name, t->g->batch_size, t->plan->micro_batches,
                t->plan->micro_batches == 1 ? "" : "es", t->g->n_ops,
                t->g->optimizer.kind == PL_OPT_ADAM ? "adam" : "sgd", t->o.plan, t->cluster->name,
                pl_plan_replicas_text(t->plan, replicas, sizeof replicas),
                pl_plan_split_text(t->plan, split, sizeof split), t->plan->n_stages,
                t->plan->n_stages == 1 ? "" : "s", pl_plan_schedule_text(t->plan),
                t->cluster->paced ? ", paced" : "", pl_dataset_describe(t->data));
    return PL_EXIT_OK;
}

int pl_cmd_train(int argc, char **argv)
{
    trainer t = {0};
    int status = parse_options(argc, argv, &t.o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    status = set_up(&t);
    if (status == PL_EXIT_OK) {
        pl_cli_catch_interrupt(true);
        status = run(&t);
        pl_cli_catch_interrupt(false);
    }
    free(t.inputs);
    pl_executor_free(t.ex);
    pl_session_free(t.s);
    pl_dataset_free(t.data);
    pl_cli_setup_release(&t.setup);
    return status;
}
