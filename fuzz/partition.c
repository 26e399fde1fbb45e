/* Fuzz target: a dnn-partitioning instance (partition.h) read, bounded and placed. */
#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "partition.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in;
    fuzz_input_open(&in, data, size, "instance.json");
    pl_partition_instance *instance = pl_partition_instance_load(in.path, &in.err);
    if (instance) {
        (void)pl_partition_bound(instance);
        pl_partition_split *split = NULL;
        pl_partition_result result;
        /* few ideals: an input's time stays in the reader and the programs' edges */
        if (pl_partition_solve(instance, 64, &split, &result, &in.err) == PL_OK)
            (void)pl_partition_max_load(instance, split, NULL);
        pl_partition_split_free(split);
        pl_partition_instance_free(instance);
    }
    fuzz_input_close(&in);
    return 0;
}
