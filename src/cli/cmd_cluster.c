/* placer cluster [CLUSTER.json]: checks a cluster file and describes it, or describes the
 * local machine, which placer uses when no cluster is given. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"

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

/* Hardware kinds: their peaks, memory, and FLOP per byte of memory bandwidth. */
static void print_hardware(const pl_cluster *c)
{
    printf("  hardware:\n");
    for (int k = 0; k < c->n_hardware; k++) {
        const pl_hardware *hw = &c->hardware[k];
        double math = hw->peak[hw->math];
        printf("    %s: peak", hw->kind);
        for (int m = 0; m < PL_MATH_COUNT; m++)
            if (hw->peak[m] > 0)
                printf(" %s %.4g", pl_math_names[m], hw->peak[m] / 1e12);
        printf(" TFLOP/s; math %s; %.1f GiB at %.4g GB/s (%.0f FLOP per byte); launch "
               "%.3g us\n", pl_math_names[hw->math], (double)hw->memory_bytes / (1 << 30),
               hw->memory_bytes_per_second / 1e9, math / hw->memory_bytes_per_second,
               hw->launch_seconds * 1e6);
        printf("      efficiency: matmul %.2f, add %.2f, softmax %.2f\n",
               hw->efficiency[PL_OP_MATMUL], hw->efficiency[PL_OP_ADD],
               hw->efficiency[PL_OP_SOFTMAX]);
    }
}

/* The nodes: each one's devices and kind. */
static void print_nodes(const pl_cluster *c)
{
    for (int d = 0; d < c->n_devices; d++) {
        const char *node = c->devices[d].node;
        bool first = node != NULL;
        for (int e = 0; e < d && first; e++)
            first = !c->devices[e].node || strcmp(c->devices[e].node, node) != 0;
        if (!first)
            continue;
        int count = 0;
        for (int e = d; e < c->n_devices; e++)
            count += c->devices[e].node && strcmp(c->devices[e].node, node) == 0;
        const pl_hardware *hw = c->devices[d].hardware;
        printf("    node %s: %d device%s%s%s\n", node, count, count == 1 ? "" : "s",
               hw ? " of " : "", hw ? hw->kind : "");
    }
}

/* A cluster of hardware: its links once per distinct figure, with the FLOP the faster
 * device's math does in the time the link carries a byte (compute over communication). */
static void print_distinct_links(const pl_cluster *c)
{
    printf("  links (distinct):\n");
    for (int a = 0; a < c->n_devices; a++)
        for (int b = a + 1; b < c->n_devices; b++) {
            const pl_link *link = pl_cluster_link(c, a, b);
            bool seen = false;
            for (int i = 0; i <= a && !seen; i++)
                for (int j = i + 1; j < c->n_devices && !seen && (i < a || j < b); j++)
                    seen = memcmp(pl_cluster_link(c, i, j), link, sizeof *link) == 0;
            if (seen)
                continue;
            int pairs = 0;
            double peak = 0;
            for (int i = 0; i < c->n_devices; i++)
                for (int j = i + 1; j < c->n_devices; j++)
                    if (memcmp(pl_cluster_link(c, i, j), link, sizeof *link) == 0) {
                        pairs++;
                        for (int e = 0; e < 2; e++) {
                            const pl_hardware *hw = c->devices[e ? j : i].hardware;
                            if (hw && hw->peak[hw->math] > peak)
                                peak = hw->peak[hw->math];
                        }
                    }
            printf("    ");
            print_link(link);
            printf(" per direction: %d pair%s (e.g. %s - %s)", pairs, pairs == 1 ? "" : "s",
                   c->devices[a].name, c->devices[b].name);
            if (peak > 0 && link->bytes_per_second > 0)
                printf(", %.0f FLOP per byte", peak / link->bytes_per_second);
            printf("\n");
        }
}

/* Ports (cluster.h): what a device's copies share; said of hardware without them too,
 * whose link figures are per device. */
static void print_ports(const pl_cluster *c)
{
    if (!c->ports) {
        printf("  no ports: every pair has a link of its own (a device sending to several "
               "peers\n  at once sends at each link's figure)\n");
        return;
    }
    int own = 0;
    for (int a = 0; a < c->n_devices; a++)
        for (int b = a + 1; b < c->n_devices; b++)
            own += pl_cluster_port(c, a, b) == PL_PORT_NONE;
    printf("  ports: a device's copies to its node share its node port, to other nodes its\n"
           "  network port, one copy at a time each (link figures are per device)");
    if (own > 0)
        printf("; %d pair%s in \"links\" ha%s a link of its own", own, own == 1 ? "" : "s",
               own == 1 ? "s" : "ve");
    printf("\n");
}

static void print_cluster(const char *source, const pl_cluster *c)
{
    printf("%s: cluster \"%s\", %d device%s, %s\n", source, c->name, c->n_devices,
           c->n_devices == 1 ? "" : "s",
           c->simulated ? "hardware this machine cannot run (planned on the simulator only)"
           : c->paced   ? "paced (emulated throughput)"
                        : "native");
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
        char compute[PL_MAX_NAME + 8] = "native";
        if (dev->hardware)
            snprintf(compute, sizeof compute, "%s", dev->hardware->kind);
        else if (dev->flops_per_second > 0)
            snprintf(compute, sizeof compute, "%.3g GFLOP/s", dev->flops_per_second / 1e9);
        if (c->n_ranks > 1)
            printf("%-12s %4d\n", compute, dev->rank);
        else
            printf("%s\n", compute);
    }
    if (c->n_hardware > 0)
        print_hardware(c);
    bool nodes = false;
    for (int d = 0; d < c->n_devices; d++)
        nodes = nodes || c->devices[d].node;
    if (nodes) {
        printf("  nodes:\n");
        print_nodes(c);
    }
    if (c->simulated && c->n_devices > 1) {
        print_distinct_links(c);
    } else if (c->n_devices > 1) {
        printf("  links:\n");
        for (int a = 0; a < c->n_devices; a++)
            for (int b = a + 1; b < c->n_devices; b++) {
                printf("    %s - %s: ", c->devices[a].name, c->devices[b].name);
                print_link(pl_cluster_link(c, a, b));
                printf("\n");
            }
    }
    if ((c->ports || c->simulated) && c->n_devices > 1)
        print_ports(c);
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
               "standard input. A cluster of hardware placer cannot run (GPUs from their\n"
               "datasheets) is described with its kinds' peaks, its nodes, its links'\n"
               "FLOP per byte and its ports. The format: " PLACER_DOCDIR "/cluster-format.md.\n");
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
