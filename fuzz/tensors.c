/* Fuzz target: the tensor-file reader (tensor_file.h) as a reader of its own: the index
 * opened and checked, every tensor's data loaded, then what callers ask of a loaded file
 * (a name looked up, a shape formatted, the values checked finite). */
#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "tensor_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in;
    fuzz_input_open(&in, data, size, "inputs.tensors");
    pl_tensor_file *file = pl_tensor_file_read(in.path, &in.err);
    for (int k = 0; file && k < file->n; k++) {
        char shape[160];
        pl_named_tensor_format_shape(&file->tensors[k], shape, sizeof shape);
        if (pl_tensor_file_find(file, file->tensors[k].name) != k)
            __builtin_trap(); /* names are unique: the first with this name is this one */
        pl_error err;
        pl_error_init(&err, NULL);
        (void)pl_named_tensor_check_finite(&file->tensors[k], &err);
    }
    pl_tensor_file_free(file);
    fuzz_input_close(&in);
    return 0;
}
