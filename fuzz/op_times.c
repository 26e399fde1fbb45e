/* Fuzz target: the op-times reader (op_times.h, pl_op_times_read) against the fixture's
 * training graph and cost model, then every op's time at a micro-batch's share. */
#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "op_times.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    fuzz_input in;
    fuzz_input_open(&in, data, size, "times.json");
    pl_op_times *times = pl_op_times_read(in.path, f->graph, &f->model, 1, &in.err);
    for (int o = 0; times && o < f->graph->n_ops; o++)
        (void)pl_op_times_seconds(times, f->graph, o, 0.5);
    pl_op_times_free(times);
    fuzz_input_close(&in);
    return 0;
}
