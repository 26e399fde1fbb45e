/* pl_units_bytes. */
#include "units.h"

#include <stdio.h>

const char *pl_units_bytes(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    for (; bytes >= 1024 && unit < 4; unit++)
        bytes /= 1024;
    snprintf(buf, cap, unit ? "%.1f %s" : "%.0f %s", bytes, units[unit]);
    return buf;
}
