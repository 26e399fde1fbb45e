/* Fuzz target: the policy-file reader (policy/policy_file.c, pl_policy_weights_read): a
 * tensor file whose index must give a policy's options and shapes before any matrix is
 * read; what it accepts starts the fixture's agent when the shapes are the agent's. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent.h"
#include "fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    static pl_agent *agent;
    if (!agent && !(agent = pl_agent_new(f->graph, f->cluster, &f->model, &f->options, NULL)))
        abort(); /* the fixture's agent, for the process's life */
    fuzz_input in;
    fuzz_input_open(&in, data, size, "policy.plt");
    pl_policy_weights weights;
    if (pl_policy_weights_read(in.path, &weights, &in.err) == PL_OK) {
        pl_error err;
        pl_error_init(&err, NULL);
        (void)pl_agent_start_from(agent, &weights, &err);
        pl_policy_weights_clear(&weights);
    }
    fuzz_input_close(&in);
    return 0;
}
