/* How busy the machine was (machine_load.h): /proc/stat's CPU seconds less this process's
 * own, over an interval, and what to tell a user whose measurement it disturbed. */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "machine_load.h"

static double timeval_seconds(struct timeval t)
{
    return (double)t.tv_sec + 1e-6 * (double)t.tv_usec;
}

pl_machine_cpu pl_machine_load_read(void)
{
    pl_machine_cpu cpu = {.wall = pl_now()};
    unsigned long long v[8] = {0}; /* user nice system idle iowait irq softirq steal */
    FILE *stat = fopen("/proc/stat", "r");
    long hz = sysconf(_SC_CLK_TCK);
    struct rusage self;
    if (stat && hz > 0 && getrusage(RUSAGE_SELF, &self) == 0 &&
        fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) == 8) {
        /* guest time is in user already; steal is a neighbour's on the host */
        cpu.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
        cpu.steal = (double)v[7] / (double)hz;
        cpu.total = cpu.busy + (double)(v[3] + v[4]) / (double)hz;
        cpu.ours = timeval_seconds(self.ru_utime) + timeval_seconds(self.ru_stime);
        cpu.known = true;
    }
    if (stat)
        fclose(stat);
    return cpu;
}

pl_machine_load pl_machine_load_between(const pl_machine_cpu *before, const pl_machine_cpu *after)
{
    if (!before->known || !after->known)
        return (pl_machine_load){0};
    return (pl_machine_load){
        .known = true,
        .seconds = after->wall - before->wall,
        .total = after->total - before->total,
        .others = (after->busy - before->busy) - (after->ours - before->ours),
        .steal = after->steal - before->steal,
    };
}

pl_machine_load pl_machine_load_since(const pl_machine_cpu *start, double seconds)
{
    double left = seconds - (pl_now() - start->wall);
    if (left > 0) {
        struct timespec ts = {.tv_sec = (time_t)left,
                              .tv_nsec = (long)(1e9 * (left - (double)(time_t)left))};
        while (nanosleep(&ts, &ts) != 0) /* a signal: sleep the rest */
            ;
    }
    pl_machine_cpu now = pl_machine_load_read();
    return pl_machine_load_between(start, &now);
}

void pl_machine_load_add(pl_machine_load *sum, const pl_machine_load *load)
{
    if (!load->known)
        return;
    sum->known = true;
    sum->seconds += load->seconds;
    sum->total += load->total;
    sum->others += load->others;
    sum->steal += load->steal;
}

pl_machine_load pl_machine_load_judged(const pl_machine_load *during, const pl_machine_load *before)
{
    pl_machine_load load = *during;
    if (load.known && load.seconds < PL_MACHINE_LOAD_MIN_SECONDS)
        pl_machine_load_add(&load, before);
    return load;
}

static double clamped_share(double part, double total)
{
    return total <= 0 || part <= 0 ? 0 : part >= total ? 1 : part / total;
}

double pl_machine_load_share(const pl_machine_load *load)
{
    return load->known ? clamped_share(load->others, load->total) : 0;
}

double pl_machine_load_steal_share(const pl_machine_load *load)
{
    return load->known ? clamped_share(load->steal, load->total) : 0;
}

bool pl_machine_load_disturbed(const pl_machine_load *load)
{
    return load->known && pl_machine_load_share(load) > PL_MACHINE_LOAD_DISTURBED;
}

bool pl_machine_load_warning(const pl_machine_load *load, const char *what, double slowdown,
                             const char *note, char *text, size_t cap)
{
    if (!pl_machine_load_disturbed(load) || cap == 0)
        return false;
    double others = pl_machine_load_share(load), steal = pl_machine_load_steal_share(load);
    /* the host's neighbours cannot be closed: most of it stolen, the advice differs */
    bool host = steal > others / 2;
    char steps[256] = "", slower[48] = "";
    if (slowdown > 0)
        snprintf(slower, sizeof slower, "steps %.1fx their simulated time", slowdown);
    if (slowdown > 0 || note)
        snprintf(steps, sizeof steps, " (%s%s%s)", slower, slowdown > 0 && note ? "; " : "",
                 note ? note : "");
    char stolen[96] = "";
    if (steal >= 0.01)
        snprintf(stolen, sizeof stolen, " (%.0f%% stolen by the virtual machine's host)",
                 100 * steal);
    snprintf(text, cap,
             "other work took %.0f%% of the CPU%s while %s%s: the measurements are not "
             "trustworthy; run again on a quiet machine (%s; check with `uptime` or `top`)",
             100 * others, stolen, what, steps,
             host ? "the host's other virtual machines took it: try again later, or on a "
                    "machine of your own"
                  : "close other programs");
    return true;
}
