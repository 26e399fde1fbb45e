/* How placer writes a file, for every output it has (plans, drawings, traces, checkpoints,
 * reports, the calibration profile); docs/outputs.md says the same to users.
 *
 * - A regular file, or a path that does not exist yet, is replaced atomically: placer
 *   writes a temporary file beside it, named `.NAME.placer-tmp-PID-XXXXXX` (NAME the
 *   target's file name, PID the writer's process, XXXXXX random), flushes it to disk and
 *   renames it over the target, so that readers see the old file or the whole new one,
 *   never a part. An aborted or failed write removes the temporary file and leaves the
 *   target untouched; only a process killed outright (kill -9, power loss) leaves one
 *   behind, and the next write of the same target removes it once that PID no longer
 *   runs on this machine.
 *   The new file gets the mode the umask gives (0666 & ~umask), whether it is new or
 *   replaces one.
 * - A symbolic link is followed (through every link of a chain): the file it ends at is
 *   replaced as above, its temporary file beside it, and the link stays a link.
 * - A character or block device, a FIFO or a socket, and "-" (standard output), are
 *   written directly: opened for writing, no temporary file, no rename. Such a write is
 *   not atomic: what was written before a failure has gone.
 * - A directory is an error naming the path.
 *
 * Not thread-safe per handle; different handles are independent. */
#ifndef PLACER_ATOMIC_FILE_H
#define PLACER_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"

/* The infix of a temporary file's name: ".NAME" PL_ATOMIC_TEMP_INFIX "PID-XXXXXX". */
#define PL_ATOMIC_TEMP_INFIX ".placer-tmp-"

typedef struct pl_atomic_file {
    FILE *fp;    /* write here */
    char *path;  /* the target as given (what errors name) */
    char *target; /* the regular file replaced (links followed); NULL when direct */
    char *temp;   /* the temporary file beside it; NULL when direct */
} pl_atomic_file;

/* Opens `path` for writing by the rules above: a temporary file beside the regular file
 * it replaces, or the device, FIFO or standard output itself. On failure returns PL_EIO
 * (PL_ENOMEM) with the reason, and `file->fp` is NULL. */
pl_status pl_atomic_open(pl_atomic_file *file, const char *path, pl_error *err);
/* Flushes; for a replaced file also syncs it and renames it into place, removing the
 * temporary file on any failure. The handle is closed either way (standard output is
 * flushed, never closed). */
pl_status pl_atomic_commit(pl_atomic_file *file, pl_error *err);
/* Closes and removes the temporary file; a replaced target is unchanged (what went to a
 * device, FIFO or standard output has gone). NULL fp is a no-op. */
void pl_atomic_abort(pl_atomic_file *file);
/* Removes the temporary file of the write under way, if any (the one opened last and
 * not yet committed or aborted), and nothing else: async-signal-safe, for a process that
 * must end at once (_exit) without leaving a temporary file behind. */
void pl_atomic_remove_pending(void);

#endif
