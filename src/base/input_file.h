/* How placer opens a file it reads (models, clusters, plans, data, profiles, checkpoints):
 * the one place that
 * decides what a readable input is, so that every command treats a bad path alike.
 *
 * - Only a regular file is read. A directory, a character or block device (/dev/zero), a
 *   FIFO or a socket is bad input; a FIFO is opened without blocking, so that naming one
 *   fails at once instead of waiting for a writer.
 * - Every way a path can fail to name a readable file (missing, a component not a
 *   directory, no permission, too long, a loop of links) is bad input (PL_EINPUT: exit
 *   status 2); only a failure of the system itself (EIO, no descriptors, no memory) is
 *   PL_EIO.
 * - The caller bounds what it reads by the size found here and a limit of its own.
 *
 * Thread-safe (no shared state). */
#ifndef PLACER_INPUT_FILE_H
#define PLACER_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* Opens `path` for reading (blocking, close-on-exec) if it is a regular file: returns the
 * descriptor (the caller closes it) and its size in *size. Else returns -1 and writes
 * what is wrong into why[cap] ("cannot open: No such file or directory", "is a directory,
 * not a file", "is not a regular file (a device, FIFO or socket)") and its status into
 * *status. */
int pl_input_open(const char *path, int64_t *size, pl_status *status, char *why, size_t cap);

/* The same with what is wrong in `err` (the path is the caller's source): the descriptor,
 * or -1. */
int pl_input_open_or_fail(const char *path, int64_t *size, pl_error *err);
/* The same as a stream for binary reading (checkpoints): the FILE, or NULL with `err`
 * holding what is wrong (the path is the caller's source). */
FILE *pl_input_fopen(const char *path, pl_error *err);

/* PL_EINPUT for an errno that says the path names no readable file, else PL_EIO. */
pl_status pl_input_errno_status(int errnum);

#endif
