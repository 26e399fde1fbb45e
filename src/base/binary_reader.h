/* Reading a binary file whose every field is checked (training and search checkpoints):
 * each read names what it reads, each check names the field, and the first problem is
 * kept in the caller's pl_error as one line ("truncated (reading the epoch)", "the
 * refinement count is -3 (expected 0 to 3)"); the file is the error's source, so a
 * message never repeats its path. Once a read or a check fails, the reader stays failed:
 * a chain of `&&` stops at the first problem.
 *
 * The reader borrows the FILE and the pl_error (NULL allowed); plain data, one per file. */
#ifndef PLACER_BINARY_READER_H
#define PLACER_BINARY_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

typedef struct pl_binary_reader {
    FILE *fp;
    pl_error *err;
    bool ok;
} pl_binary_reader;

/* Records a problem (PL_EINPUT) unless one is recorded; returns false. */
bool pl_binary_fail(pl_binary_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* `n` items of `size` bytes into `to`, or "truncated (reading WHAT)". */
bool pl_binary_take(pl_binary_reader *r, void *to, size_t size, size_t n, const char *what);
#define PL_BINARY_TAKE(r, value, what) pl_binary_take(r, &(value), sizeof(value), 1, what)
/* `value` within [low, high], or "WHAT is VALUE (expected LOW to HIGH)". */
bool pl_binary_int_in(pl_binary_reader *r, const char *what, int64_t value, int64_t low,
                      int64_t high);
/* `value` finite and at least `low` (-INFINITY: any finite number). */
bool pl_binary_finite(pl_binary_reader *r, const char *what, double value, double low);
/* At least `n` items of `size` bytes left to read, or "truncated (WHAT)": checked before
 * allocating room for them, so that a damaged count cannot ask for more than the file. */
bool pl_binary_has(pl_binary_reader *r, size_t size, size_t n, const char *what);
/* Nothing left to read, or "N byte(s) after WHAT". */
bool pl_binary_at_end(pl_binary_reader *r, const char *what);

#endif
