/* Sizes as people read them, for every printout and drawing: "512 B", "1.5 KiB",
 * "3.2 GiB" (powers of 1024, one decimal past bytes). */
#ifndef PLACER_UNITS_H
#define PLACER_UNITS_H

#include <stddef.h>

/* `bytes` into buf[cap]; returns buf. */
const char *pl_units_bytes(double bytes, char *buf, size_t cap);

#endif
