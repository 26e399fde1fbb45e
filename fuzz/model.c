/* Fuzz target: the model loader from a buffer (load.h): parsing, validation, shape
 * inference and costs, then automatic differentiation of what loaded. */
#include <stddef.h>
#include <stdint.h>

#include "autodiff.h"
#include "load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_error err;
    pl_error_init(&err, "model.json");
    pl_graph *graph = pl_graph_load_buffer((const char *)data, size, "model.json", &err);
    if (graph)
        (void)pl_autodiff_build(graph, &err);
    pl_graph_free(graph);
    return 0;
}
