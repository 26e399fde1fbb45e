/* The fuzz targets' shared fixture (fixture.h). */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "autodiff.h"
#include "load.h"

static void fail(const char *what, const pl_error *err)
{
    fprintf(stderr, "fuzz fixture: %s: %s\n", what, err ? err->text : "failed");
    abort();
}

static fuzz_fixture fixture;
static int made;

const fuzz_fixture *fuzz_fixture_get(void)
{
    if (made)
        return &fixture;
    pl_error err;
    pl_error_init(&err, PL_FUZZ_MODEL);
    if (!(fixture.graph = pl_graph_load_file(PL_FUZZ_MODEL, &err)) ||
        pl_autodiff_build(fixture.graph, &err) != PL_OK)
        fail("the model", &err);
    pl_error_init(&err, PL_FUZZ_CLUSTER);
    if (!(fixture.cluster = pl_cluster_load_file(PL_FUZZ_CLUSTER, &err)))
        fail("the cluster", &err);
    memset(&fixture.model, 0, sizeof fixture.model);
    fixture.model.ops[1][PL_OP_COUNT] = (pl_op_cost){2e-6, 1e-9, 0, 1, 0, 0};
    pl_cost_set_copy_line(&fixture.model, 5e-6, 1e-10);
    fixture.model.handoff_seconds = 1e-6;
    pl_agent_options_default(&fixture.options);
    fixture.options.seed = 5;
    fixture.options.samples = 8;
    fixture.options.groups = 4;
    fixture.options.hidden = 8;
    fixture.options.threads = 1;
    fixture.options.refine_every = 1;
    fixture.options.refine_proposals = 20;
    if (!(fixture.session = pl_session_new(fixture.graph, 1, &err)))
        fail("the session", &err);
    made = 1;
    return &fixture;
}

void fuzz_input_open(fuzz_input *input, const uint8_t *data, size_t size, const char *source)
{
    input->fd = memfd_create(source, 0);
    if (input->fd < 0)
        fail("memfd_create", NULL);
    for (size_t done = 0; done < size;) {
        ssize_t n = write(input->fd, data + done, size - done);
        if (n <= 0)
            fail("write", NULL);
        done += (size_t)n;
    }
    snprintf(input->path, sizeof input->path, "/proc/self/fd/%d", input->fd);
    pl_error_init(&input->err, source);
}

void fuzz_input_close(fuzz_input *input)
{
    close(input->fd);
}
