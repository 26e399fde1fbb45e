/* The agent's memo of simulated plans (step_memo.h). */
#include "step_memo.h"

#include <stdlib.h>

bool pl_step_memo_init(pl_step_memo *memo, int log2_slots)
{
    size_t slots = (size_t)1 << log2_slots;
    memo->keys = calloc(slots, sizeof *memo->keys);
    memo->steps = calloc(slots, sizeof *memo->steps);
    memo->fits = calloc(slots, sizeof *memo->fits);
    memo->mask = slots - 1;
    if (memo->keys && memo->steps && memo->fits)
        return true;
    pl_step_memo_clear(memo);
    return false;
}

void pl_step_memo_clear(pl_step_memo *memo)
{
    free(memo->keys);
    free(memo->steps);
    free(memo->fits);
    *memo = (pl_step_memo){0};
}

bool pl_step_memo_find(const pl_step_memo *memo, uint64_t key, double *step, bool *fits)
{
    if (!memo->keys || key == 0)
        return false;
    uint64_t slot = key & memo->mask;
    if (memo->keys[slot] != key)
        return false;
    *step = memo->steps[slot];
    *fits = memo->fits[slot];
    return true;
}

void pl_step_memo_store(pl_step_memo *memo, uint64_t key, double step, bool fits)
{
    if (!memo->keys || key == 0)
        return;
    uint64_t slot = key & memo->mask;
    memo->keys[slot] = key;
    memo->steps[slot] = step;
    memo->fits[slot] = fits;
}
