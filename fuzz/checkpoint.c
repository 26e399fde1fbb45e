/* Fuzz target: the training checkpoint reader (checkpoint.h) into a session of mlp-small's
 * training graph. */
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fuzz_fixture *f = fuzz_fixture_get();
    fuzz_input in;
    fuzz_input_open(&in, data, size, "train.ckpt");
    pl_train_position where;
    (void)pl_checkpoint_read(in.path, f->graph, f->session, &where, &in.err);
    fuzz_input_close(&in);
    return 0;
}
