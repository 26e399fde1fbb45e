/* What the fuzz targets share: the fixed model, cluster, cost model and agent options the
 * readers of plans, checkpoints and profiles are fuzzed against, and a way to hand a
 * reader that takes only a path the fuzzer's bytes.
 *
 * Everything here is for the targets in fuzz/ and fuzz/seeds.c only (tools/fuzz builds them; see
 * docs/fuzzing.md). The fixture is made once per process and never freed: libFuzzer runs
 * every input in the same process, and the readers only borrow it. Not thread-safe. */
#ifndef PLACER_FUZZ_FIXTURE_H
#define PLACER_FUZZ_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "cluster.h"
#include "cost_model.h"
#include "graph.h"
#include "session.h"

/* PL_FUZZ_SRCDIR, set by tools/fuzz, is the top of the source tree. */
#ifndef PL_FUZZ_SRCDIR
#define PL_FUZZ_SRCDIR "."
#endif
#define PL_FUZZ_MODEL PL_FUZZ_SRCDIR "/graphs/small/mlp-small.json"
#define PL_FUZZ_CLUSTER PL_FUZZ_SRCDIR "/graphs/clusters/paced-4.json"

typedef struct fuzz_fixture {
    pl_graph *graph;       /* mlp-small's training graph (autodiff built) */
    pl_cluster *cluster;   /* paced-4 */
    pl_cost_model model;   /* hand-made: every op kind at one thread, a copy line */
    pl_agent_options options; /* small and single-threaded, seed 5 */
    pl_session *session;   /* one thread, over `graph` */
} fuzz_fixture;

/* The fixture, made on first use; aborts if the bundled files do not load (a broken
 * checkout, not an input). */
const fuzz_fixture *fuzz_fixture_get(void);

/* An input for a reader that takes only a path: data[0..size) in an anonymous memory file
 * named by `path` (/proc/self/fd/N), and an error record naming it `source`. Aborts when
 * the file cannot be made: running out of descriptors is the target's bug. */
typedef struct fuzz_input {
    int fd;
    char path[64];
    pl_error err;
} fuzz_input;

void fuzz_input_open(fuzz_input *input, const uint8_t *data, size_t size, const char *source);
void fuzz_input_close(fuzz_input *input);

#endif
