/* Fuzz target: the cluster loader from a buffer (cluster.h). */
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_error err;
    pl_error_init(&err, "cluster.json");
    pl_cluster_free(pl_cluster_load_buffer((const char *)data, size, "cluster.json", &err));
    return 0;
}
