/* How busy the machine was while the placement search measured (search.h): one reading
 * before the first measurement, and every measurement's load pooled into the result. */
#include <math.h>

#include "search_impl.h"

void pl_search__load_before(pl_search_call *call)
{
    if (!call->reads_load || call->read_before)
        return;
    call->read_before = true;
    /* placing the baselines took part of the interval already; it sleeps what is left */
    call->result->load_before = pl_machine_load_since(&call->executor_started,
                                                      PL_SEARCH_LOAD_BEFORE_SECONDS);
}

void pl_search__load_during(pl_search_call *call, const pl_machine_load *load)
{
    pl_search *s = call->result;
    if (!call->reads_load || !load->known)
        return;
    pl_machine_load_add(&s->load_measuring, load);
    if (load->seconds >= PL_MACHINE_LOAD_MIN_SECONDS)
        s->load_worst = fmax(s->load_worst, pl_machine_load_share(load));
}
