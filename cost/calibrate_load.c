/* How busy the machine was while calibrating (calibrate_impl.h): the CPU time all cores
 * spent, less this process's. Passes that agree can still both be slow when the machine
 * was loaded all along; this sees such a steady load, which the passes cannot. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "calibrate_impl.h"

pl_calib_load pl_calib_load_now(void)
{
    pl_calib_load load = {0};
    unsigned long long v[8] = {0}; /* user nice system idle iowait irq softirq steal */
    FILE *stat = fopen("/proc/stat", "r");
    long hz = sysconf(_SC_CLK_TCK);
    struct rusage self;
    if (stat && hz > 0 && getrusage(RUSAGE_SELF, &self) == 0 &&
        fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        /* guest time is in user already; steal is a neighbour's on the host */
        load.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
        load.total = load.busy + (double)(v[3] + v[4]) / (double)hz;
        load.ours = (double)self.ru_utime.tv_sec + 1e-6 * (double)self.ru_utime.tv_usec +
                    (double)self.ru_stime.tv_sec + 1e-6 * (double)self.ru_stime.tv_usec;
        load.known = true;
    }
    if (stat)
        fclose(stat);
    return load;
}

double pl_calib_others_share(const pl_calib_load *before, const pl_calib_load *after)
{
    double total = after->total - before->total;
    if (!before->known || !after->known || total <= 0)
        return 0;
    double others = (after->busy - before->busy) - (after->ours - before->ours);
    return others <= 0 ? 0 : others >= total ? 1 : others / total;
}
