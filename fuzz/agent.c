/* Fuzz target: the search (agent) checkpoint reader (agent.h, pl_agent_load) for mlp-small
 * on paced-4 under the fixture's cost model and options, as fuzz/seeds.c writes one. */
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    fuzz_input in;
    fuzz_input_open(&in, data, size, "agent.ckpt");
    pl_agent_free(pl_agent_load(in.path, f->graph, f->cluster, &f->model, &f->options,
                                &in.err));
    fuzz_input_close(&in);
    return 0;
}
