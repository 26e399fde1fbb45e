/* The memory this process may use (machine.h). */
#include "machine.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "units.h"

/* The control group's memory.max (cgroup v2), or -1 when there is none or it says "max". */
static int64_t cgroup_limit(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    long long bytes = -1;
    if (f) {
        if (fscanf(f, "%lld", &bytes) != 1)
            bytes = -1;
        fclose(f);
    }
    return bytes > 0 ? bytes : -1;
}

int64_t pl_machine_memory(const char **limit)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t bytes = pages > 0 && page > 0 ? (int64_t)pages * page : INT64_MAX;
    const char *why = "its physical memory";
    struct rlimit address_space;
    if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY &&
        (int64_t)address_space.rlim_cur < bytes) {
        bytes = (int64_t)address_space.rlim_cur;
        why = "the address-space limit, ulimit -v";
    }
    int64_t cgroup = cgroup_limit();
    if (cgroup > 0 && cgroup < bytes) {
        bytes = cgroup;
        why = "its control group's memory.max";
    }
    if (limit)
        *limit = why;
    return bytes;
}

pl_status pl_machine_fits(int64_t bytes, const char *what, pl_error *err)
{
    const char *limit;
    int64_t have = pl_machine_memory(&limit);
    if (bytes <= have)
        return PL_OK;
    char need[32], room[32];
    return pl_error_set(err, PL_ENOFIT, NULL, "%s needs %s of memory; this machine has %s (%s)",
                        what, pl_units_bytes((double)bytes, need, sizeof need),
                        pl_units_bytes((double)have, room, sizeof room), limit);
}
