/* How busy the machine was while something was measured: the CPU time that others (other
 * processes, and a virtual machine's host through its steal time) took from the machine's
 * cores over an interval. A native device's step is real time on shared cores, so another
 * program's work lengthens it; this says by how much the cores were taken, so that a
 * measurement can be judged by the machine's state rather than by its times alone.
 *
 * A reading (pl_machine_load_read) is the machine's CPU seconds from /proc/stat's "cpu"
 * line (busy, steal included, and in all, idle too) and this process's own from
 * getrusage(RUSAGE_SELF), all of its threads. Between two readings, others' CPU seconds are
 * the machine's busy seconds less this process's: a thread of this process is never
 * counted as others', a child process is (until it is waited for, and even then only the
 * machine's count has it). /proc/stat counts in clock ticks (USER_HZ, 100 a second) while
 * getrusage is finer, so over an interval of a few ticks the share is coarse and others'
 * seconds may come out slightly negative: loads add up (pl_machine_load_add) unclamped, and
 * only the share is clamped, so that many short intervals pooled read true.
 *
 * Where /proc/stat cannot be read the load is unknown (`known` false), never an error.
 *
 * Thread-safety: every function is safe to call from any thread; a reading is of the whole
 * process, whichever thread takes it. */
#ifndef PLACER_MACHINE_LOAD_H
#define PLACER_MACHINE_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Others' share of the machine's CPU above which a measurement on native cores was
 * disturbed (docs/executor.md, "How busy the machine was": the measurements it comes
 * from). */
#define PL_MACHINE_LOAD_DISTURBED 0.15
/* An interval shorter than this (seconds) reads too few clock ticks to be judged alone;
 * pooled with others it still counts. */
#define PL_MACHINE_LOAD_MIN_SECONDS 0.1

/* The machine's CPU seconds at one moment. */
typedef struct pl_machine_cpu {
    bool known;   /* false: /proc/stat (or getrusage) could not be read */
    double wall;  /* pl_now() when read */
    double busy;  /* all cores: user, nice, system, irq, softirq and steal */
    double steal; /* all cores: taken by the virtual machine's host */
    double total; /* all cores: busy, idle and iowait */
    double ours;  /* this process: user and system, all threads */
} pl_machine_cpu;

/* The load over an interval, or over several added up. CPU seconds of all cores. */
typedef struct pl_machine_load {
    bool known;     /* false: some reading was unknown; the rest is 0 */
    double seconds; /* wall-clock seconds covered */
    double total;   /* the machine's CPU seconds in that time (cores x seconds) */
    double others;  /* of them, used by others (steal included); not clamped */
    double steal;   /* of them, stolen by the host */
} pl_machine_load;

/* Reads the machine's CPU seconds now. */
pl_machine_cpu pl_machine_load_read(void);

/* The load between two readings (`before` first); unknown when either is. */
pl_machine_load pl_machine_load_between(const pl_machine_cpu *before, const pl_machine_cpu *after);

/* The load from `start` (a reading) to now, once at least `seconds` have passed since it
 * was read: it sleeps what is left of them first. */
pl_machine_load pl_machine_load_since(const pl_machine_cpu *start, double seconds);

/* Adds `load` into `sum` (a zeroed sum is empty and unknown). An unknown load is skipped;
 * the sum is known once a known load was added. */
void pl_machine_load_add(pl_machine_load *sum, const pl_machine_load *load);

/* The load a measurement is judged by: `during` it, and when it lasted under
 * PL_MACHINE_LOAD_MIN_SECONDS (too few clock ticks to judge alone), `before` it too;
 * unknown when `during` is (nothing measured). */
pl_machine_load pl_machine_load_judged(const pl_machine_load *during,
                                       const pl_machine_load *before);

/* Others' share of the machine's CPU, 0 to 1 (steal included); 0 when unknown. */
double pl_machine_load_share(const pl_machine_load *load);
/* The host's steal share, 0 to 1; 0 when unknown. */
double pl_machine_load_steal_share(const pl_machine_load *load);

/* Whether others' share is above PL_MACHINE_LOAD_DISTURBED (a known load only). */
bool pl_machine_load_disturbed(const pl_machine_load *load);

/* When `load` is disturbed, writes into `text` (`cap` bytes) what to tell the user, one
 * line without "placer: warning: " and without a newline, and returns true: "other work
 * took 63% of the CPU while WHAT (STEPS): the measurements are not trustworthy; run again
 * on a quiet machine (...)". `what` says what was measured ("the plans were measured");
 * `slowdown` > 0 adds how much slower the steps were than simulated ("steps 1.8x their
 * simulated time"), and `note` (NULL: none) what else the load explains ("the choice rests
 * on an unstable measurement"), both in the parentheses. Nothing written and false when it
 * is not disturbed. */
bool pl_machine_load_warning(const pl_machine_load *load, const char *what, double slowdown,
                             const char *note, char *text, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
