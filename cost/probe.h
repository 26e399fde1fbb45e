/* The machine as it is now: a profile describes the machine when it was measured, and a
 * virtual machine's cores slow and recover as its neighbours come and go. A probe runs a
 * model's ops for a moment on one native device and compares their times with the
 * profile's; the job then scales the profile's native times by what it found
 * (pl_cost_model's `speed`), so that the search and the bound see the machine as it runs. */
#ifndef PLACER_PROBE_H
#define PLACER_PROBE_H

#include <signal.h>

#include "cost_model.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A probe's longest step, predicted: a model whose step is longer at every batch it tries
 * is probed through the reference model alone. */
#define PL_PROBE_MAX_STEP_SECONDS 0.05
/* Nor is a model whose parameters and training state exceed this: setting them up takes
 * longer than the probe. */
#define PL_PROBE_MAX_BYTES (64.0 * 1024 * 1024)

typedef struct pl_probe {
    double scale;   /* the ops' measured seconds over their profiled ones (summed);
                            1 when no op was compared */
    int ops;        /* op tasks compared: ones whose configuration the profile measured */
    int batch;      /* the batch the model ran at (0: not run) */
    bool reference; /* the reference model was run instead: the model's own ops are not in
                       the profile (or too few, or too small a share of its step), or its
                       step is too long to probe */
    double measured, profiled; /* the compared ops' seconds per step, summed */
    double seconds;            /* how long the probe took */
} pl_probe;

/* Runs the model of `model_path` (NULL: none) on one native device of one thread, at the
 * largest of its batch, a half, a quarter and an eighth of it whose step the profile puts
 * under PL_PROBE_MAX_STEP_SECONDS (those are the sizes calibration measured), as
 * calibration runs it: one warm-up and five measured steps, again until 50 ms have passed
 * (25 runs at most). Where it cannot (its state exceeds PL_PROBE_MAX_BYTES, or fewer than
 * 5 of its ops have a measured time in the profile, or those take less than a quarter of
 * its step, or that step is under a millisecond), it runs `reference_path` (a bundled
 * model) instead. The scale is the compared ops' measured median times, summed, of the
 * median run, over their profiled times, summed. `interrupt` may be NULL. */
pl_status pl_cost_probe(const pl_cost_model *model, const char *model_path,
                        const char *reference_path, const volatile sig_atomic_t *interrupt,
                        pl_probe *out, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
