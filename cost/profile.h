/* The cached calibration profile: where it lives, and loading it, calibrating first when
 * it is missing, was measured on another machine or lacks a thread count a cluster needs.
 *
 * The file is $PLACER_PROFILE, else $XDG_CACHE_HOME/placer/profile.json, else
 * ~/.cache/placer/profile.json. Calibration measures the bundled models: $PLACER_GRAPHS,
 * else the installed ones, else those of the source tree placer was built from. */
#ifndef PLACER_PROFILE_H
#define PLACER_PROFILE_H

#include <stdbool.h>

#include "calibrate.h"
#include "cluster.h"
#include "cost_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A calibration that comes out noisy (calibrate.h) is measured again, up to
 * PL_PROFILE_ATTEMPTS times in all, and the quietest kept; a profile measured more than
 * PL_PROFILE_OLD_DAYS days ago is old. Either is warned about at every use
 * (pl_profile_warning); neither makes a cached profile be measured again by itself. */
enum { PL_PROFILE_ATTEMPTS = 3, PL_PROFILE_OLD_DAYS = 30 };

/* The profile's path into buf; false when there is no home to put it in. */
bool pl_profile_path(char *buf, size_t cap);
/* The directory of models calibration measures, or NULL when none is found. */
const char *pl_profile_graphs_dir(void);
/* The thread counts a profile for `cluster` needs into threads[] (PL_COST_MAX_THREADS
 * room), in increasing order: its devices' (within 1 to PL_COST_MAX_THREADS), and those
 * `old` (may be NULL) has, which a new profile keeps. Returns how many. */
int pl_profile_threads(const pl_cluster *cluster, const pl_cost_model *old, int *threads);

/* The profile for `cluster`: read from the cache when it fits this machine and the
 * cluster's thread counts; else calibrated (progress and interrupt as in calibrate.h; an
 * interrupted calibration caches nothing; a noisy one is measured again, above) and
 * written to the cache. `force` calibrates anyway. *calibrated says which happened. A
 * caller that tells a user about the profile shows pl_profile_warning too. The model is
 * overwritten: release it with pl_cost_model_clear. When only writing the cache fails
 * (a folder that cannot be written), the model is filled all the same, *calibrated is
 * true and the status is the write's: a caller that can do without the cache says that
 * the profile is not kept and goes on. */
pl_status pl_profile_load(pl_cost_model *model, const pl_cluster *cluster, bool force,
                          void (*progress)(void *context, const char *what), void *context,
                          const volatile sig_atomic_t *interrupt, bool *calibrated,
                          pl_error *err);

/* Whether a profile read from `source` serves this machine and every thread count of
 * `cluster`: PL_OK, or PL_EINPUT with `err` saying which does not ("source: /machine:
 * measured on another machine (...)"). */
pl_status pl_profile_check(const pl_cost_model *model, const pl_cluster *cluster,
                           pl_error *err);

/* The cached profile, when there is one that fits this machine and the cluster's thread
 * counts: true, `model` filled (release it with pl_cost_model_clear). Else false, `model`
 * left empty: never calibrates, for commands that only show what a profile predicts. */
bool pl_profile_read_cached(pl_cost_model *model, const pl_cluster *cluster);

/* Whether the model's profile is old at `now` (UTC, seconds since the epoch): measured
 * more than PL_PROFILE_OLD_DAYS days before, or at an unknown time (a model made by hand). */
bool pl_profile_old(const pl_cost_model *model, long long now);

/* A warning for every use of a noisy or old profile, one line into buf ("the calibration
 * profile is noisy: ...; measured 2 h ago, 2026-11-24T19:05:41Z: run `placer calibrate
 * --force` on a quiet machine"), or false when the profile is neither. */
bool pl_profile_warning(const pl_cost_model *model, long long now, char *buf, size_t cap);

/* An age in words: "40 s ago", "5 min ago", "3 h ago", "41 days ago", "in the future". */
void pl_profile_age_text(double seconds, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
