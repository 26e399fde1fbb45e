/* Parameter initialisers. */
#include "init.h"

#include <math.h>
#include <stdint.h>

#include "rng.h"

void pl_tensor_fans(const pl_tensor *shard, double *fan_in, double *fan_out)
{
    pl_tensor whole = *shard; /* a shard draws as its whole tensor does */
    if (whole.init.shard_whole > 0)
        whole.dims[whole.init.shard_axis] = whole.init.shard_whole;
    const pl_tensor *t = &whole;
    if (t->rank >= 4) { /* [out, in/groups, kh, kw] or [out, in/groups, kd, kh, kw] */
        double field = 1;
        for (int a = 2; a < t->rank; a++)
            field *= (double)t->dims[a];
        *fan_in = (double)t->dims[1] * field;
        *fan_out = (double)t->dims[0] * field;
    } else if (t->rank >= 2) { /* [..., in, out] */
        *fan_in = (double)t->dims[t->rank - 2];
        *fan_out = (double)t->dims[t->rank - 1];
    } else {
        *fan_in = *fan_out = t->rank == 1 ? (double)t->dims[0] : 1.0;
    }
}

int64_t pl_shard_whole_index(const pl_tensor *t, int64_t i)
{
    const pl_init *init = &t->init;
    if (init->shard_whole == 0)
        return i;
    int64_t inner = 1;
    for (int a = init->shard_axis + 1; a < t->rank; a++)
        inner *= t->dims[a];
    int64_t part = t->dims[init->shard_axis], row = part * inner;
    int64_t outer = i / row, at = i % row / inner, within = i % inner;
    int64_t groups = init->shard_groups > 1 ? init->shard_groups : 1;
    int64_t per = part / groups, group = at / per; /* its group, and its place there */
    int64_t whole_at = group * (init->shard_whole / groups) + init->shard_start + at % per;
    return (outer * init->shard_whole + whole_at) * inner + within;
}

/* i32 tensors (frozen parameters: ids, positions) hold integers. */
static void initialize_integers(const pl_tensor *t, int32_t *data)
{
    int64_t n = pl_tensor_elements(t);
    const pl_init *init = &t->init;
    for (int64_t i = 0; i < n; i++)
        data[i] = init->kind == PL_INIT_VALUES  ? (int32_t)init->values[pl_shard_whole_index(t, i)]
                  : init->kind == PL_INIT_ONES  ? 1
                  : init->kind == PL_INIT_CONSTANT ? (int32_t)init->a
                                                   : 0;
}

void pl_tensor_initialize(const pl_tensor *t, void *buffer)
{
    if (t->dtype == PL_I32) {
        initialize_integers(t, buffer);
        return;
    }
    float *data = buffer;
    int64_t n = pl_tensor_elements(t);
    const pl_init *init = &t->init;
    double fan_in, fan_out;
    pl_tensor_fans(t, &fan_in, &fan_out);
    switch (init->kind) {
    case PL_INIT_ZEROS:
    case PL_INIT_ONES:
    case PL_INIT_CONSTANT: {
        float value = init->kind == PL_INIT_ZEROS ? 0.0f
                      : init->kind == PL_INIT_ONES ? 1.0f
                                                   : (float)init->a;
        for (int64_t i = 0; i < n; i++)
            data[i] = value;
        return;
    }
    case PL_INIT_UNIFORM:
    case PL_INIT_GLOROT_UNIFORM: {
        double low = init->a, high = init->b;
        if (init->kind == PL_INIT_GLOROT_UNIFORM) {
            high = sqrt(6.0 / (fan_in + fan_out));
            low = -high;
        }
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(low + (high - low) * pl_rng_uniform(init->seed, (uint64_t)
                                                                   pl_shard_whole_index(t, i)));
        return;
    }
    case PL_INIT_VALUES:
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)init->values[pl_shard_whole_index(t, i)];
        return;
    case PL_INIT_NORMAL:
    case PL_INIT_HE_NORMAL: {
        double mean = init->a, std = init->b;
        if (init->kind == PL_INIT_HE_NORMAL) {
            mean = 0;
            std = sqrt(2.0 / fan_in);
        }
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(mean + std * pl_rng_normal(init->seed, (uint64_t)pl_shard_whole_index(t, i)));
        return;
    }
    }
}
