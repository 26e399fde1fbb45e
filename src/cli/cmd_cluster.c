/* placer cluster [CLUSTER.json]: checks a cluster file and describes it, or describes the
 * local machine, which placer uses when no cluster is given. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "cluster.h"

static void print_link(const pl_link *link)
{
    if (link->bytes_per_second > 0)
        printf("%.3g GB/s", link->bytes_per_second / 1e9);
    else
        printf("native");
    if (link->latency_seconds > 0)
        printf(", %.3g us", link->latency_seconds * 1e6);
}

static void print_cluster(const char *source, const pl_cluster *c)
{
    printf("%s: cluster \"%s\", %d device%s, %s\n", source, c->name, c->n_devices,
           c->n_devices == 1 ? "" : "s", c->paced ? "paced (emulated throughput)" : "native");
    if (c->description[0])
        printf("  %s\n", c->description);
    if (c->n_ranks > 1)
        printf("  %d processes: run it with mpirun -np %d\n", c->n_ranks, c->n_ranks);
    printf("  %-12s %7s %12s  %-10s %-12s%s\n", "device", "threads", "memory", "cores",
           "compute", c->n_ranks > 1 ? " rank" : "");
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *dev = &c->devices[d];
        char cores[64] = "-";
        int used = 0;
        for (int k = 0; k < dev->n_cores && used < (int)sizeof cores - 8; k++)
            used += snprintf(cores + used, sizeof cores - (size_t)used, "%s%d", k ? "," : "",
                             dev->cores[k]);
        printf("  %-12s %7d %8.1f MiB  %-10s ", dev->name, dev->threads,
               (double)dev->memory_bytes / (1 << 20), cores);
        char compute[32] = "native";
        if (dev->flops_per_second > 0)
            snprintf(compute, sizeof compute, "%.3g GFLOP/s", dev->flops_per_second / 1e9);
        if (c->n_ranks > 1)
            printf("%-12s %4d\n", compute, dev->rank);
        else
            printf("%s\n", compute);
    }
    if (c->n_devices > 1) {
        printf("  links:\n");
        for (int a = 0; a < c->n_devices; a++)
            for (int b = a + 1; b < c->n_devices; b++) {
                printf("    %s - %s: ", c->devices[a].name, c->devices[b].name);
                print_link(pl_cluster_link(c, a, b));
                printf("\n");
            }
    }
}

int pl_cmd_cluster(int argc, char **argv)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    opterr = 0; /* our own message, below */
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (c != 'h')
            return pl_cli_usage_error("cluster: unknown option '%s'", argv[optind - 1]);
        printf("Usage: placer cluster [CLUSTER.json]\n"
               "Checks a cluster file and describes it; without one, describes the local\n"
               "machine (the cluster placer uses when none is given). '-': read it from\n"
               "standard input. The format: " PLACER_DOCDIR "/cluster-format.md.\n");
        return PL_EXIT_OK;
    }
    if (optind + 1 < argc)
        return pl_cli_usage_error("cluster: one cluster at a time ('%s' is extra)",
                                  argv[optind + 1]);
    const char *path = optind < argc ? argv[optind] : NULL;
    pl_error err;
    pl_cluster *cluster = path ? pl_cluster_load_file(path, &err) : pl_cluster_local(&err);
    if (!cluster)
        return pl_cli_report(&err);
    print_cluster(path ? pl_cli_input_name(path) : "local machine", cluster);
    pl_cluster_free(cluster);
    return PL_EXIT_OK;
}
