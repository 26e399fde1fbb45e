/* The attribute table: names, types, ranges and defaults of every op attribute. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

#define DIM_MAX 2147483647.0
#define FIELD(f) offsetof(pl_attrs, f)

_Static_assert(PL_ATTR_COUNT <= 32, "pl_attrs.given has one bit per attribute");

/* In pl_gelu_approximate's order. */
static const char *const gelu_approximations[] = {"tanh", "none", NULL};
/* In pl_dropout_mode's order. */
static const char *const dropout_modes[] = {"element", "row", "batch", NULL};

static const pl_attr_info attr_table[PL_ATTR_COUNT] = {
    [PL_ATTR_TRANSPOSE_A] = {"transpose_a", PL_ATTR_TYPE_BOOL, FIELD(transpose_a), 0, 1, 0},
    [PL_ATTR_TRANSPOSE_B] = {"transpose_b", PL_ATTR_TYPE_BOOL, FIELD(transpose_b), 0, 1, 0},
    [PL_ATTR_FACTOR] = {"factor", PL_ATTR_TYPE_REAL, FIELD(factor), -1e30, 1e30, 0},
    [PL_ATTR_AXIS] = {"axis", PL_ATTR_TYPE_INT, FIELD(axis), -PL_MAX_RANK, PL_MAX_RANK - 1, 0},
    [PL_ATTR_AXES] = {"axes", PL_ATTR_TYPE_INTS, FIELD(axes), -PL_MAX_RANK, PL_MAX_RANK - 1,
                      PL_MAX_RANK},
    [PL_ATTR_KEEPDIMS] = {"keepdims", PL_ATTR_TYPE_BOOL, FIELD(keepdims), 0, 1, 0},
    [PL_ATTR_EPS] = {"eps", PL_ATTR_TYPE_REAL, FIELD(eps), 1e-30, 1, 0},
    [PL_ATTR_MOMENTUM] = {"momentum", PL_ATTR_TYPE_REAL, FIELD(momentum), 0, 1, 0},
    [PL_ATTR_STRIDE] = {"stride", PL_ATTR_TYPE_PAIR, FIELD(stride), 1, DIM_MAX, 0},
    [PL_ATTR_PADDING] = {"padding", PL_ATTR_TYPE_PAIR, FIELD(padding), 0, DIM_MAX, 0},
    [PL_ATTR_DILATION] = {"dilation", PL_ATTR_TYPE_PAIR, FIELD(dilation), 1, DIM_MAX, 0},
    [PL_ATTR_GROUPS] = {"groups", PL_ATTR_TYPE_INT, FIELD(groups), 1, DIM_MAX, 0},
    [PL_ATTR_KERNEL] = {"kernel", PL_ATTR_TYPE_PAIR, FIELD(kernel), 1, DIM_MAX, 0},
    [PL_ATTR_SIZES] = {"sizes", PL_ATTR_TYPE_INTS, FIELD(sizes), 1, DIM_MAX, 127},
    [PL_ATTR_START] = {"start", PL_ATTR_TYPE_INT, FIELD(start), 0, DIM_MAX, 0},
    [PL_ATTR_END] = {"end", PL_ATTR_TYPE_INT, FIELD(end), 1, DIM_MAX, 0},
    [PL_ATTR_SHAPE] = {"shape", PL_ATTR_TYPE_INTS, FIELD(shape), 1, DIM_MAX, PL_MAX_RANK},
    [PL_ATTR_PERM] = {"perm", PL_ATTR_TYPE_INTS, FIELD(perm), 0, PL_MAX_RANK - 1, PL_MAX_RANK},
    [PL_ATTR_RATE] = {"rate", PL_ATTR_TYPE_REAL, FIELD(rate), 0, 1, 0},
    [PL_ATTR_SEED] = {"seed", PL_ATTR_TYPE_INT, FIELD(seed), 0, 9007199254740991.0, 0},
    [PL_ATTR_K] = {"k", PL_ATTR_TYPE_INT, FIELD(k), 1, DIM_MAX, 0},
    [PL_ATTR_MIN] = {"min", PL_ATTR_TYPE_REAL, FIELD(clamp_min), -1e30, 1e30, 0},
    [PL_ATTR_MAX] = {"max", PL_ATTR_TYPE_REAL, FIELD(clamp_max), -1e30, 1e30, 0},
    [PL_ATTR_APPROXIMATE] = {"approximate", PL_ATTR_TYPE_ENUM, FIELD(approximate), 0, 0, 0,
                             gelu_approximations},
    [PL_ATTR_CEIL_MODE] = {"ceil_mode", PL_ATTR_TYPE_BOOL, FIELD(ceil_mode), 0, 1, 0},
    [PL_ATTR_COUNT_INCLUDE_PAD] = {"count_include_pad", PL_ATTR_TYPE_BOOL,
                                   FIELD(count_include_pad), 0, 1, 0},
    [PL_ATTR_OUTPUT_SIZE] = {"output_size", PL_ATTR_TYPE_PAIR, FIELD(output_size), 1, DIM_MAX,
                             0},
    [PL_ATTR_MODE] = {"mode", PL_ATTR_TYPE_ENUM, FIELD(mode), 0, 0, 0, dropout_modes},
    [PL_ATTR_OUTPUT_PADDING] = {"output_padding", PL_ATTR_TYPE_PAIR, FIELD(output_padding), 0,
                                DIM_MAX, 0},
    [PL_ATTR_BATCH_AXIS] = {"batch_axis", PL_ATTR_TYPE_INT, FIELD(batch_axis), 0,
                            PL_MAX_RANK - 1, 0},
    [PL_ATTR_EXPONENT] = {"exponent", PL_ATTR_TYPE_REAL, FIELD(exponent), -1e30, 1e30, 0},
    [PL_ATTR_BATCH_GROUP] = {"batch_group", PL_ATTR_TYPE_INT, FIELD(batch_group), 1, DIM_MAX,
                             0},
};

const pl_attr_info *pl_attr_info_of(pl_attr_id id)
{
    return id < PL_ATTR_COUNT ? &attr_table[id] : NULL;
}

pl_attr_id pl_attr_from_name(const char *name)
{
    for (int id = 0; id < PL_ATTR_COUNT; id++)
        if (strcmp(attr_table[id].name, name) == 0)
            return (pl_attr_id)id;
    return PL_ATTR_COUNT;
}

void pl_attrs_default(pl_attrs *attrs)
{
    memset(attrs, 0, sizeof *attrs);
    attrs->axis = -1;
    attrs->groups = 1;
    attrs->k = 1;
    attrs->batch_group = 1;
    for (int a = 0; a < 3; a++)
        attrs->stride[a] = attrs->dilation[a] = 1;
    attrs->factor = 1.0;
    attrs->eps = 1e-5;
    attrs->momentum = 0.9;
    attrs->clamp_min = -INFINITY;
    attrs->clamp_max = INFINITY;
}
