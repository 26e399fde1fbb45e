/* What this machine lets the process have, so that work too large for it is refused with
 * its figures before anything is allocated, rather than granted by the kernel's
 * overcommit and killed when the pages are touched. */
#ifndef PLACER_MACHINE_H
#define PLACER_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Bytes of memory the process may use: the machine's physical memory, or less where the
 * address-space limit (`ulimit -v`) or the control group's memory.max says so. `limit`
 * (NULL allowed) names which of the three it is. */
int64_t pl_machine_memory(const char **limit);

/* PL_OK when `bytes` fit pl_machine_memory(); else PL_ENOFIT with the figures: "WHAT
 * needs 32.0 GiB of memory; this machine has 23.4 GiB (its physical memory)". */
pl_status pl_machine_fits(int64_t bytes, const char *what, pl_error *err);

#endif
