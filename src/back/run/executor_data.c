/* An executor whose inputs hold a batch of a data source (data.h): what measuring a
 * plan's step needs, for the search, the command line, calibration and the benchmarks. */
#include <stdlib.h>

#include "data.h"
#include "executor.h"

pl_executor *pl_executor_new_with_data(const pl_graph *graph, const pl_cluster *cluster,
                                       const char *data_path, pl_error *err)
{
    /* the executor first: its errors keep the caller's source, the data's name their own */
    pl_executor *ex = pl_executor_new(graph, cluster, NULL, err);
    pl_dataset *data = ex ? pl_dataset_open(graph, data_path, 1, err) : NULL;
    void **inputs = data ? calloc((size_t)graph->n_tensors, sizeof *inputs) : NULL;
    if (data && !inputs)
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (inputs) {
        for (int t = 0; t < graph->n_tensors; t++)
            if (graph->tensors[t].kind == PL_TENSOR_INPUT)
                inputs[t] = pl_executor_data(ex, t);
        pl_dataset_fill(data, PL_SPLIT_TRAIN, 0, 0, graph->batch_size, inputs);
    } else {
        pl_executor_free(ex);
        ex = NULL;
    }
    free(inputs);
    pl_dataset_free(data);
    return ex;
}
