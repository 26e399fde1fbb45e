/* placer pretrain -o POLICY.plt [--cluster C]... MODEL.json...: pre-trains one policy over
 * every model on every cluster (policy/pretrain.h) and writes it as a policy file, the
 * kind `placer MODEL.json --policy` starts from and placer ships as its pre-trained one. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "pretrain.h"

/* as many clusters as models: --paired gives each model its own */
enum { MAX_CLUSTERS = 256, MAX_MODELS = 256 };

typedef struct pretrain_args {
    const char *output, *start;
    const char *clusters[MAX_CLUSTERS];
    int n_clusters;
    const char **models;
    int n_models;
    bool paired; /* the i-th model on the i-th cluster alone */
    pl_pretrain_options pretrain;
} pretrain_args;

static void print_usage(void)
{
    printf("Usage: placer pretrain -o POLICY.plt [options] MODEL.json...\n"
           "Pre-trains one placement policy over every model on every cluster: round after\n"
           "round, each pair in turn gets a simulated search (baselines imitated, then the\n"
           "agent learning) that starts from the weights the last one ended with. Writes the\n"
           "policy file atomically; `placer MODEL.json --policy POLICY.plt` starts from it.\n"
           "\n"
           "  -o, --output FILE   the policy file to write\n"
           "  --cluster FILE      a cluster to train on (again for more; default: this\n"
           "                      machine)\n"
           "  --seed N            the seed (default 1): the same corpus, profile and seed\n"
           "                      give the same weights\n"
           "  --rounds N          visits of every model and cluster (default 3)\n"
           "  --iterations N      the agent's iterations a visit (default 20)\n"
           "  --samples N         plans drawn an iteration (default 32)\n"
           "  --from FILE         start from this policy's weights (default: fresh ones)\n"
           "  --paired            the i-th model on the i-th cluster alone, not every model\n"
           "                      on every cluster (as many --cluster as models)\n"
           "  --consolidate N     after the rounds, N supervised steps fitting the policy to\n"
           "                      every pair's fastest plan (of one replica) at once, so\n"
           "                      that it keeps them all (default 0: none)\n"
           "Ctrl-C writes the weights of the visits done (exit status 130). A model\n"
           "that fits nowhere on a cluster (no plan fits its memory) stops it with\n"
           "nothing written (exit status 3). More: " PLACER_DOCDIR "/agent.md.\n");
}

static int parse_options(int argc, char **argv, pretrain_args *a)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"seed", required_argument, NULL, 's'},
                                            {"rounds", required_argument, NULL, 'r'},
                                            {"iterations", required_argument, NULL, 'i'},
                                            {"samples", required_argument, NULL, 'n'},
                                            {"from", required_argument, NULL, 'f'},
                                            {"paired", no_argument, NULL, 'P'},
                                            {"consolidate", required_argument, NULL, 'C'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    pl_pretrain_options_default(&a->pretrain);
    opterr = 0;
    int c;
    long value;
    while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': a->output = optarg; break;
        case 'f': a->start = optarg; break;
        case 'c':
            if (a->n_clusters == MAX_CLUSTERS)
                return pl_cli_usage_error("pretrain: at most %d clusters", MAX_CLUSTERS);
            a->clusters[a->n_clusters++] = optarg;
            break;
        case 's':
            if (!pl_cli_parse_long(optarg, 0, 2147483647, &value))
                return pl_cli_usage_error("pretrain: invalid value '%s' for --seed (0 to "
                                          "2147483647)", optarg);
            a->pretrain.seed = (uint64_t)value;
            break;
        case 'r':
        case 'i':
            if (!pl_cli_parse_long(optarg, 1, 100000, &value))
                return pl_cli_usage_error("pretrain: invalid value '%s' for --%s (1 to 100000)",
                                          optarg, c == 'r' ? "rounds" : "iterations");
            *(c == 'r' ? &a->pretrain.rounds : &a->pretrain.iterations) = (int)value;
            break;
        case 'n':
            if (!pl_cli_parse_long(optarg, 2, 4096, &value))
                return pl_cli_usage_error("pretrain: invalid value '%s' for --samples (2 to "
                                          "4096)", optarg);
            a->pretrain.samples = (int)value;
            break;
        case 'P': a->paired = true; break;
        case 'C':
            if (!pl_cli_parse_long(optarg, 0, 100000, &value))
                return pl_cli_usage_error("pretrain: invalid value '%s' for --consolidate (0 "
                                          "to 100000)", optarg);
            a->pretrain.consolidation_steps = (int)value;
            break;
        case 'h': print_usage(); return -1;
        default:
            return pl_cli_usage_error("pretrain: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (!a->output)
        return pl_cli_usage_error("pretrain: missing -o POLICY.plt");
    if (optind >= argc)
        return pl_cli_usage_error("pretrain: missing MODEL.json");
    a->models = (const char **)argv + optind;
    a->n_models = argc - optind;
    if (a->n_models > MAX_MODELS)
        return pl_cli_usage_error("pretrain: at most %d models", MAX_MODELS);
    if (a->paired && a->n_clusters != a->n_models)
        return pl_cli_usage_error("pretrain: --paired needs as many --cluster as models (%d "
                                  "clusters, %d models)", a->n_clusters, a->n_models);
    pl_cli_file inputs[MAX_MODELS + MAX_CLUSTERS + 1];
    int n = 0;
    for (int i = 0; i < a->n_models; i++)
        inputs[n++] = (pl_cli_file){a->models[i], "a model", false};
    for (int i = 0; i < a->n_clusters; i++)
        inputs[n++] = (pl_cli_file){a->clusters[i], "a cluster", false};
    inputs[n++] = (pl_cli_file){a->start, "the policy started from", false};
    char profile[4096];
    const pl_cli_file outputs[] = {pl_cli_profile_output(profile, sizeof profile),
                                   {a->output, "the policy", true}};
    return pl_cli_check_outputs(inputs, (size_t)n, outputs, 2);
}

static void print_visit(void *context, const pl_pretrain_visit *v)
{
    double start = *(const double *)context;
    fprintf(pl_cli_text, "[%d/%d] round %d, %s: best %.3f ms", v->visit, v->visits, v->round + 1,
            v->pair->name, 1e3 * v->best);
    if (v->best_baseline > 0)
        fprintf(pl_cli_text, " (%.3f of the best baseline)", v->best / v->best_baseline);
    if (v->best_baseline > 0 && v->mean_sampled > 0)
        fprintf(pl_cli_text, ", the samples %.3f", v->mean_sampled / v->best_baseline);
    fprintf(pl_cli_text, "; %.0f s\n", pl_now() - start);
    fflush(pl_cli_text);
}

/* Every model on every cluster (paired: each on its own), set up (training graph, cluster,
 * profile), into pairs. */
static int set_up(const pretrain_args *a, pl_cli_setup *setups, pl_pretrain_pair *pairs,
                  char (*names)[256])
{
    int n = 0;
    int clusters = a->n_clusters ? a->n_clusters : 1;
    for (int m = 0; m < a->n_models; m++)
        for (int c = a->paired ? m : 0; c < (a->paired ? m + 1 : clusters); c++, n++) {
            setups[n] = (pl_cli_setup){.model_path = a->models[m],
                                       .cluster_path = a->n_clusters ? a->clusters[c] : NULL,
                                       .needs = PL_CLI_TRAINING | PL_CLI_COSTS};
            int status = pl_cli_setup_load(&setups[n]);
            if (status != PL_EXIT_OK)
                return status;
            snprintf(names[n], sizeof names[n], "%s on %s", setups[n].graph->name,
                     setups[n].cluster->name);
            pairs[n] = (pl_pretrain_pair){names[n], setups[n].graph, setups[n].cluster,
                                          setups[n].costs};
        }
    return PL_EXIT_OK;
}

static int pretrain(const pretrain_args *a, pl_cli_setup *setups, pl_pretrain_pair *pairs,
                    char (*names)[256], int n_pairs)
{
    int status = set_up(a, setups, pairs, names);
    if (status != PL_EXIT_OK)
        return status;
    pl_policy_weights start = {0}, weights = {0};
    pl_error err;
    pl_error_init(&err, a->start);
    if (a->start && pl_policy_weights_read(a->start, &start, &err) != PL_OK)
        return pl_cli_report(&err);
    double begin = pl_now();
    pl_error_init(&err, NULL);
    pl_cli_catch_interrupt(true);
    int no_fit;
    pl_status done = pl_pretrain(pairs, n_pairs, &a->pretrain,
                                 a->start ? &start : NULL, print_visit, &begin,
                                 &pl_cli_interrupted, &weights, &no_fit, &err);
    pl_cli_catch_interrupt(false);
    pl_policy_weights_clear(&start);
    if (done != PL_OK && done != PL_EINTERRUPTED) {
        pl_policy_weights_clear(&weights);
        if (no_fit >= 0) { /* as the main job says it, and exits */
            fprintf(stderr, "placer: %s: no plan fits the cluster's memory; no policy "
                    "written\n", pairs[no_fit].name);
            return PL_EXIT_NO_FIT;
        }
        return pl_cli_report(&err);
    }
    status = done == PL_EINTERRUPTED ? PL_EXIT_INTERRUPTED : PL_EXIT_OK;
    if (weights.n) {
        pl_error_init(&err, a->output);
        if (pl_policy_weights_write(&weights, a->output, &err) != PL_OK)
            status = pl_cli_report(&err);
        else
            fprintf(pl_cli_text,
                    "wrote %s: %d weights (hidden %d, %d rounds, %d groups) after %.0f s\n",
                    a->output, weights.n, weights.hidden, weights.rounds, weights.groups,
                    pl_now() - begin);
    }
    pl_policy_weights_clear(&weights);
    return status;
}

int pl_cmd_pretrain(int argc, char **argv)
{
    pretrain_args a;
    int status = parse_options(argc, argv, &a);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    int n_pairs = a.paired ? a.n_models : a.n_models * (a.n_clusters ? a.n_clusters : 1);
    pl_cli_setup *setups = calloc((size_t)n_pairs, sizeof *setups);
    pl_pretrain_pair *pairs = calloc((size_t)n_pairs, sizeof *pairs);
    char (*names)[256] = calloc((size_t)n_pairs, sizeof *names);
    if (!setups || !pairs || !names) {
        fprintf(stderr, "placer: out of memory\n");
        status = PL_EXIT_FAILURE;
    } else {
        status = pretrain(&a, setups, pairs, names, n_pairs);
    }
    for (int i = 0; setups && i < n_pairs; i++)
        pl_cli_setup_release(&setups[i]);
    free(setups);
    free(pairs);
    free(names);
    return status;
}
