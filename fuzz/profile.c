/* Fuzz target: the cached profile reader (cost_model.h, pl_cost_model_read). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cost_model.h"
#include "fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in;
    fuzz_input_open(&in, data, size, "profile.json");
    pl_cost_model model;
    memset(&model, 0, sizeof model); /* a syntax error returns before the reader clears it */
    (void)pl_cost_model_read(&model, in.path, &in.err);
    pl_cost_model_clear(&model);
    fuzz_input_close(&in);
    return 0;
}
