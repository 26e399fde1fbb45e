/* Writing a file so that readers see the old file or the whole new one, never a part:
 * write to a temporary file beside it, flush it to disk, rename it over the target.
 * An aborted or interrupted write leaves the target untouched. Not thread-safe per
 * handle; different handles are independent. */
#ifndef PLACER_ATOMIC_FILE_H
#define PLACER_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"

typedef struct pl_atomic_file {
    FILE *fp;    /* write here */
    char *path;  /* the target */
    char *temp;  /* the temporary file beside it */
} pl_atomic_file;

/* Opens a temporary file beside `path`. On failure returns PL_EIO with the reason. */
pl_status pl_atomic_open(pl_atomic_file *file, const char *path, pl_error *err);
/* Flushes, syncs and renames into place; on any failure removes the temporary file. The
 * handle is closed either way. */
pl_status pl_atomic_commit(pl_atomic_file *file, pl_error *err);
/* Closes and removes the temporary file; the target is unchanged. NULL fp is a no-op. */
void pl_atomic_abort(pl_atomic_file *file);

#endif
