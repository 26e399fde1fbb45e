/* The pipeline schedules: each stage's sequence of forward and backward micro-batches
 * (GPipe or 1F1B), and the ideal timeline that orders the stages against each other. */
#include <stdlib.h>

#include "program_impl.h"

/* Stage s's sequence of (phase, micro-batch): GPipe runs every forward, then every
 * backward; 1F1B runs forwards until n_stages - s micro-batches are in flight, then
 * alternates, then drains. */
static void stage_sequence(int s, int n_stages, int m, pl_schedule schedule, int *phase,
                           int *mb)
{
    int n = 0;
    if (schedule == PL_SCHEDULE_GPIPE) {
        for (int k = 0; k < m; k++, n++)
            phase[n] = PL_FORWARD, mb[n] = k;
        for (int k = 0; k < m; k++, n++)
            phase[n] = PL_BACKWARD, mb[n] = k;
        return;
    }
    int warm = n_stages - s - 1 < m ? n_stages - s - 1 : m;
    for (int k = 0; k < warm; k++, n++)
        phase[n] = PL_FORWARD, mb[n] = k;
    for (int k = 0; k < m - warm; k++) {
        phase[n] = PL_FORWARD, mb[n++] = warm + k;
        phase[n] = PL_BACKWARD, mb[n++] = k;
    }
    for (int k = m - warm; k < m; k++, n++)
        phase[n] = PL_BACKWARD, mb[n] = k;
}

typedef struct timed_block {
    int start, stage, phase, block;
} timed_block;

static int compare_blocks(const void *a, const void *b)
{
    const timed_block *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    return x->phase - y->phase;
}

int pl_block_of(int stage, int phase, int micro_batch, int m)
{
    return (stage * 2 + phase) * m + micro_batch;
}

/* Ranks every (stage, phase, micro-batch) block by its start in the ideal timeline: a
 * forward takes 1, a backward 2; a forward follows the previous stage's forward of its
 * micro-batch, a backward the next stage's backward. */
int *pl_rank_blocks(int n_stages, int m, pl_schedule schedule, pl_error *err)
{
    int n_blocks = n_stages * 2 * m;
    int *rank = malloc((size_t)n_blocks * sizeof *rank);
    int *end = malloc((size_t)n_blocks * sizeof *end);
    int *phase = malloc((size_t)n_stages * 2 * (size_t)m * sizeof *phase);
    int *mb = malloc((size_t)n_stages * 2 * (size_t)m * sizeof *mb);
    int *next = calloc((size_t)n_stages, sizeof *next), *clock = calloc((size_t)n_stages, sizeof *clock);
    timed_block *order = malloc((size_t)n_blocks * sizeof *order);
    if (!rank || !end || !phase || !mb || !next || !clock || !order) {
        free(rank);
        rank = NULL;
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (int s = 0; s < n_stages; s++)
        stage_sequence(s, n_stages, m, schedule, phase + s * 2 * m, mb + s * 2 * m);
    for (int b = 0; b < n_blocks; b++)
        end[b] = -1;
    for (int placed = 0; placed < n_blocks;) {
        int before = placed;
        for (int s = 0; s < n_stages; s++)
            for (; next[s] < 2 * m; next[s]++, placed++) {
                int ph = phase[s * 2 * m + next[s]], k = mb[s * 2 * m + next[s]];
                int after = ph == PL_FORWARD ? (s > 0 ? end[pl_block_of(s - 1, PL_FORWARD, k, m)] : 0)
                                          : (s + 1 < n_stages ? end[pl_block_of(s + 1, PL_BACKWARD, k, m)]
                                                              : end[pl_block_of(s, PL_FORWARD, k, m)]);
                if (after < 0)
                    break;
                int start = after > clock[s] ? after : clock[s];
                int b = pl_block_of(s, ph, k, m);
                clock[s] = end[b] = start + (ph == PL_FORWARD ? 1 : 2);
                order[placed] = (timed_block){start, s, ph, b};
            }
        if (placed == before) {
            free(rank);
            rank = NULL;
            pl_error_set(err, PL_EINTERNAL, NULL, "the pipeline schedule does not progress");
            goto done;
        }
    }
    qsort(order, (size_t)n_blocks, sizeof *order, compare_blocks);
    for (int i = 0; i < n_blocks; i++)
        rank[order[i].block] = i;
done:
    free(end);
    free(phase);
    free(mb);
    free(next);
    free(clock);
    free(order);
    return rank;
}

