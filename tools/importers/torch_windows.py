"""What window attention (torchvision's Swin and MaxViT) is written with: zero padding, a
cyclic shift, rows of a parameter picked by constant indices, products written with
torch.einsum. Each is made of ops placer has: slices, concatenations, a one-hot product,
matmul."""

import torch
import torch.nn.functional as F

import emit
import torch_modules
from builder import Tensor
from torch_fx import Const, val
from torch_modules import Refused


def _slice(b, name, x, axis, start, end):
    shape = list(x.shape)
    shape[axis] = end - start
    return b.node1("slice", name, [x], shape, x.batch_axis,
                   {"axis": axis, "start": start, "end": end})


def _concat(b, name, parts, axis):
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return b.node1("concat", name, parts, shape, parts[0].batch_axis, {"axis": axis})


def _along(x, axis, what):
    if axis == x.batch_axis:
        raise Refused("%s along the batch axis" % what)
    return axis


def pad(imp, name, args, kwargs):
    """F.pad in constant mode with zeros: zeros (an edge slice of x times 0, so that they
    carry x's batch) concatenated on each side, axis by axis."""
    x = args[0]
    pads = list(val(args[1] if len(args) > 1 else kwargs["pad"]))
    mode = val(args[2] if len(args) > 2 else kwargs.get("mode", Const("constant")))
    value = val(args[3] if len(args) > 3 else kwargs.get("value", Const(None)))
    if mode != "constant" or value not in (None, 0, 0.0):
        raise Refused("F.pad other than with zeros (mode %s, value %s)" % (mode, value))
    if any(p < 0 for p in pads):
        raise Refused("F.pad with a negative padding (a crop)")
    b, y = imp.b, x
    for k in range(len(pads) // 2):
        before, after = pads[2 * k], pads[2 * k + 1]
        if before == after == 0:
            continue
        axis = _along(x, x.rank - 1 - k, "F.pad")
        edge = _slice(b, "%s.edge%d" % (name, axis), y, axis, 0, 1)
        zero = emit.scale(b, "%s.zero%d" % (name, axis), edge, 0.0)
        parts = [zero] * before + [y] + [zero] * after
        y = _concat(b, "%s.axis%d" % (name, axis), parts, axis)
    return y


def roll(imp, name, args, kwargs):
    """torch.roll along given axes: each a concatenation of the two slices it swaps."""
    x = args[0]
    shifts = val(args[1] if len(args) > 1 else kwargs["shifts"])
    dims = val(args[2] if len(args) > 2 else kwargs.get("dims", Const(None)))
    if dims is None:
        raise Refused("torch.roll without dims (of the flattened tensor)")
    shifts = shifts if isinstance(shifts, (tuple, list)) else [shifts]
    dims = dims if isinstance(dims, (tuple, list)) else [dims]
    y = x
    for shift, dim in zip(shifts, dims):
        axis = _along(x, int(dim) % x.rank, "torch.roll")
        n = x.shape[axis]
        s = int(shift) % n
        if s == 0:
            continue
        tail = _slice(imp.b, "%s.tail%d" % (name, axis), y, axis, n - s, n)
        head = _slice(imp.b, "%s.head%d" % (name, axis), y, axis, 0, n - s)
        y = _concat(imp.b, "%s.axis%d" % (name, axis), [tail, head], axis)
    return y


def rows(imp, name, table, index):
    """table[index] for a parameter (not batched) and constant integer indices: the rows
    they pick (a relative position bias's lookup table)."""
    if not isinstance(table, Tensor) or table.batched or index.is_floating_point() or \
            index.dtype == torch.bool:
        raise Refused("tensor indexing with Tensor other than a parameter's rows picked by "
                      "constant indices")
    index = index.remainder(table.shape[0])  # a negative index counts from the end
    if table.rank > 1:
        return torch_modules.lookup(imp, name, table, Const(index))
    column = emit.reshape(imp.b, name + ".column", table, (table.shape[0], 1))
    picked = torch_modules.lookup(imp, name + ".picked", column, Const(index))
    return emit.reshape(imp.b, name, picked, tuple(index.shape))


def _letters(term, rank, spare):
    """An einsum term with its "..." spelled out in spare letters, as many as it stands for."""
    if "..." not in term:
        return term
    named = len(term) - 3
    return term.replace("...", spare[:rank - named])


def einsum(imp, name, args, kwargs):
    """torch.einsum of two operands that is a (batched) matrix product, either operand's
    last two axes in either order: "bhid,bhjd->bhij", "...ij,...jk->...ik"."""
    equation = val(args[0]).replace(" ", "")
    operands = list(args[1]) if len(args) == 2 and isinstance(args[1], (tuple, list)) \
        else list(args[1:])
    refused = Refused("torch.einsum other than a matrix product of two tensors (%s)"
                      % equation)
    if len(operands) != 2 or "->" not in equation:
        raise refused
    a, c = (imp.tensor_of(t, name) for t in operands)
    terms, out = equation.split("->")
    if terms.count(",") != 1:
        raise refused
    spare = "".join(ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in equation)
    ta, tc = (_letters(t, x.rank, spare) for t, x in zip(terms.split(","), (a, c)))
    out = _letters(out, len(imp.current_value.shape), spare)
    lead = out[:-2]
    i, j = out[-2:] if len(out) >= 2 else ("", "")
    k = set(ta[-2:]) & set(tc[-2:])
    if len(out) < 2 or len(k) != 1 or ta[:-2] != lead or tc[:-2] != lead or \
            set(ta[-2:]) != {i} | k or set(tc[-2:]) != {j} | k:
        raise refused
    k = k.pop()
    if ta[-2:] == k + i:
        a = emit.transpose(imp.b, name + ".a", a, list(range(a.rank - 2)) +
                           [a.rank - 1, a.rank - 2])
    if tc[-2:] == j + k:
        c = emit.transpose(imp.b, name + ".b", c, list(range(c.rank - 2)) +
                           [c.rank - 1, c.rank - 2])
    return emit.matmul(imp.b, name, a, c, tuple(imp.current_value.shape))


def assign(imp, name, args, kwargs):
    """x[...] = v: only where everything is a constant (a mask filled in place), which the
    importer folds before it gets here."""
    raise Refused("assigning into a tensor computed from the input or a parameter")


FUNCTIONS = {
    F.pad: pad,
    torch.roll: roll, "roll": roll,
    torch.einsum: einsum,
}
