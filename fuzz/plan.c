/* Fuzz target: the plan reader (plan.h) against mlp-small on paced-4, as `placer validate
 * --plan` and `placer run` take a plan: read and checked, then its partitions and its step
 * program built, so that an input which passes the check reaches the partitioning. */
#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "plan.h"
#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    fuzz_input in;
    fuzz_input_open(&in, data, size, "plan.json");
    pl_plan *plan = pl_plan_load_file(in.path, f->graph, f->cluster, &in.err);
    if (plan) {
        pl_partitions_free(pl_partitions_new(plan, f->graph, f->cluster->n_devices, &in.err));
        pl_program_free(pl_program_new(f->graph, f->cluster, plan, &in.err));
    }
    pl_plan_free(plan);
    fuzz_input_close(&in);
    return 0;
}
