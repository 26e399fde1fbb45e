/* Fuzz target: the tensor-file reader (tensor_file.h) through the weights loader
 * (weights.h) into a session of mlp-small's training graph. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fixture.h"
#include "weights.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    static void **buffers;
    if (!buffers) { /* the fixture's session, for the process's life */
        buffers = calloc((size_t)f->graph->n_tensors, sizeof *buffers);
        if (!buffers)
            abort();
        for (int t = 0; t < f->graph->n_tensors; t++)
            buffers[t] = pl_session_data(f->session, t);
    }
    fuzz_input in;
    fuzz_input_open(&in, data, size, "model.weights");
    (void)pl_weights_load(in.path, f->graph, buffers, &in.err);
    fuzz_input_close(&in);
    return 0;
}
