"""Maps one fx node: placeholders, parameters, leaf modules (torch_modules.py), and the
functions and tensor methods below."""

import operator

import numpy as np
import torch
import torch.fx
import torch.nn.functional as F

import emit
import torch_composed
import torch_functional
import torch_math
import torch_modules
import torch_recurrent
import torch_windows
from builder import ImportError_, Tensor
from torch_fx import Const, Poisoned, is_const, is_poisoned, like_init, val
from torch_modules import Refused


class NotMapped:
    """A value placer does not compute (MultiheadAttention's averaged weights): using it is
    an unsupported operator."""

    def __init__(self, what):
        self.what = what


def _axis(dim, rank):
    return int(dim) % rank


def _shape(imp):
    return tuple(imp.current_value.shape)


def _batch_axis(*args):
    """The batch axis of the first batched tensor among args (None when none is)."""
    return next((a.batch_axis for a in args if isinstance(a, Tensor) and a.batched), None)


# ---- arithmetic -------------------------------------------------------------------------------

def _arith(op, reverse=False):
    def handler(imp, name, args, kwargs):
        a, c = args[0], args[1]
        if reverse:
            a, c = c, a
        if val(kwargs.get("alpha", Const(1))) != 1:
            raise Refused("%s with alpha" % op)
        if isinstance(c, Const) and isinstance(c.value, (int, float)) and isinstance(a, Tensor):
            k = float(c.value)
            if op == "mul":
                return emit.scale(imp.b, name, a, k)
            if op == "div":
                return emit.scale(imp.b, name, a, 1.0 / k)
        if isinstance(a, Const) and isinstance(a.value, (int, float)) and op == "mul":
            return emit.scale(imp.b, name, c, float(a.value))
        if isinstance(a, Const) and isinstance(a.value, (int, float)) and op == "sub":
            neg = emit.scale(imp.b, name + ".neg", c, -1.0)
            return emit.binary(imp.b, "add", name, neg, imp.tensor_of(a, name, neg))
        like = a if isinstance(a, Tensor) else c
        a = imp.tensor_of(a, name, like)
        c = imp.tensor_of(c, name, like)
        return emit.binary(imp.b, op, name, a, c)
    return handler


def _neg(imp, name, args, kwargs):
    return emit.scale(imp.b, name, args[0], -1.0)


def _matmul(imp, name, args, kwargs):
    a = imp.tensor_of(args[0], name)
    c = imp.tensor_of(args[1], name)
    return emit.matmul(imp.b, name, a, c, _shape(imp))


def _unary(op, attrs=None):
    def handler(imp, name, args, kwargs):
        return emit.unary(imp.b, op, name, args[0], attrs)
    return handler


def _gelu(imp, name, args, kwargs):
    approximate = val(kwargs.get("approximate", Const("none")))
    return emit.unary(imp.b, "gelu", name, args[0], {"approximate": approximate})


def _clamp(lo_name, hi_name, lo_default, hi_default):
    def handler(imp, name, args, kwargs):
        lo = _arg(args, kwargs, 1, lo_name, lo_default)
        hi = _arg(args, kwargs, 2, hi_name, hi_default)
        attrs = {}
        if lo is not None:
            attrs["min"] = float(lo)
        if hi is not None:
            attrs["max"] = float(hi)
        return emit.unary(imp.b, "clamp", name, args[0], attrs)
    return handler


def _arg(args, kwargs, i, key, default):
    """Positional argument i or keyword key, as a plain value."""
    if len(args) > i:
        return val(args[i])
    return val(kwargs.get(key, Const(default)))


def _dim_kw(args, kwargs, i, default):
    return _arg(args, kwargs, i, "dim", default)


def _softmax(op):
    def handler(imp, name, args, kwargs):
        dim = _dim_kw(args, kwargs, 1, None)
        if dim is None:
            raise Refused("%s without dim" % op)
        return emit.unary(imp.b, op, name, args[0], {"axis": int(dim)})
    return handler


def _dropout(imp, name, args, kwargs):
    p = _arg(args, kwargs, 1, "p", 0.5)
    training = _arg(args, kwargs, 2, "training", True)
    if not training or p == 0:
        return args[0]
    return emit.unary(imp.b, "dropout", name, args[0], {"rate": float(p)})


def _adaptive_avg_pool(imp, name, args, kwargs):
    return torch_modules.adaptive_avg_pool(imp, name, args[0], _shape(imp))


def _layer_norm(imp, name, args, kwargs):
    x = args[0]
    shape = val(args[1])
    if len(shape) != 1:
        raise Refused("layer_norm over %d axes" % len(shape))
    w = args[2] if len(args) > 2 else kwargs.get("weight", Const(None))
    bias = args[3] if len(args) > 3 else kwargs.get("bias", Const(None))
    eps = _arg(args, kwargs, 4, "eps", 1e-5)
    n = shape[0]
    gamma = w if isinstance(w, Tensor) else imp.b.constant(name + ".gamma", [1.0] * n)
    beta = bias if isinstance(bias, Tensor) else imp.b.constant(name + ".beta", [0.0] * n)
    return imp.b.node1("layer_norm", name, [x, gamma, beta], x.shape, x.batch_axis,
                       {"eps": float(eps)})


def _conv(transposed):
    """F.conv1d/2d/3d and F.conv_transpose1d/2d/3d; their arguments' order differs."""
    order = ["stride", "padding", "output_padding", "groups", "dilation"] if transposed else \
        ["stride", "padding", "dilation", "groups"]
    defaults = {"stride": 1, "padding": 0, "output_padding": 0, "dilation": 1, "groups": 1}

    def handler(imp, name, args, kwargs):
        x = args[0]
        w = imp.tensor_of(args[1] if len(args) > 1 else kwargs["weight"], name + ".weight")
        bias = args[2] if len(args) > 2 else kwargs.get("bias", Const(None))
        bias = None if val(bias) is None else imp.tensor_of(bias, name + ".bias")
        v = {key: _arg(args, kwargs, 3 + i, key, defaults[key]) for i, key in enumerate(order)}
        kind = "%s%dd" % ("conv_transpose" if transposed else "conv", w.rank - 2)
        return torch_modules.conv(imp, name, kind, x, w, bias, v["stride"], v["padding"],
                                  v["dilation"], int(v["groups"]), _shape(imp), transposed)
    return handler


# ---- shapes -----------------------------------------------------------------------------------

def _reshape(imp, name, args, kwargs):
    return emit.reshape(imp.b, name, args[0], _shape(imp))


def _flatten(imp, name, args, kwargs):
    return emit.reshape(imp.b, name, args[0], _shape(imp))


def _identity(imp, name, args, kwargs):
    return args[0]


def _transpose(imp, name, args, kwargs):
    x = args[0]
    d0 = _axis(_arg(args, kwargs, 1, "dim0", 0), x.rank)
    d1 = _axis(_arg(args, kwargs, 2, "dim1", 1), x.rank)
    perm = list(range(x.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return emit.transpose(imp.b, name, x, perm)


def _permute(imp, name, args, kwargs):
    x = args[0]
    dims = val(args[1:]) if len(args) > 2 else val(args[1])
    dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    return emit.transpose(imp.b, name, x, dims)


def _expand(imp, name, args, kwargs):
    """x.expand(...) and x.expand_as(y): a parameter spread over the batch (a class token)
    or a size-1 axis repeated, as a broadcasting add of zeros."""
    x, shape = args[0], _shape(imp)
    if isinstance(x, Const):  # over a batched tensor (position ids as the input's ids)
        return x
    if x.shape == shape:
        return x
    b = imp.b
    if x.batched and x.batch_axis != 0:
        raise Refused("expand of a tensor with the batch on axis %d" % x.batch_axis)
    if not x.batched and shape[0] == b.batch and (x.rank < len(shape) or x.shape[0] == 1):
        x = emit.binary(b, "add", name + ".batch", x, _batch_zeros(imp, name, len(shape)))
    if x.shape != shape:
        x = emit.binary(b, "add", name, x, b.constant(name + ".zeros", np.zeros(
            shape[1:] if x.batched else shape, np.float32)))
    return x


def _batch_zeros(imp, name, rank):
    """Zeros [batch, 1, ...] (rank axes), batched: the first f32 input times 0, which placer
    broadcasts a tensor over the batch with."""
    source = next((t for t in imp.all_inputs if t.dtype == "f32"), None)
    if source is None or source.batch_axis != 0:
        raise Refused("expanding over the batch in a model without an f32 input batched on "
                      "axis 0")
    b = imp.b
    flat = emit.reshape(b, name + ".flat", source, (b.batch, int(np.prod(source.shape[1:]))))
    first = b.node1("slice", name + ".first", [flat], (b.batch, 1), True,
                    {"axis": 1, "start": 0, "end": 1})
    zeros = emit.scale(b, name + ".zeros", first, 0.0)
    return emit.reshape(b, name + ".zeros_shaped", zeros, (b.batch,) + (1,) * (rank - 1))


def _unsqueeze_squeeze(imp, name, args, kwargs):
    return emit.reshape(imp.b, name, args[0], _shape(imp))


def _cat(imp, name, args, kwargs):
    parts = list(args[0])
    dim = _dim_kw(args, kwargs, 1, 0)
    first = next(p for p in parts if isinstance(p, Tensor))
    tensors = [imp.tensor_of(p, name, first) for p in parts]
    if len(tensors) == 1:
        return tensors[0]
    return imp.b.node1("concat", name, tensors, _shape(imp), _batch_axis(*tensors),
                       {"axis": _axis(dim, first.rank)})


def _split(imp, name, args, kwargs):
    x = args[0]
    dim = _axis(_dim_kw(args, kwargs, 2, 0), x.rank)
    outs = imp.current_value
    sizes = [int(o.shape[dim]) for o in outs]
    if len(sizes) == 1:
        return (x,)
    specs = [(tuple(o.shape), x.batch_axis) for o in outs]
    attrs = {"axis": dim}
    if len(set(sizes)) > 1:
        attrs["sizes"] = sizes
    return tuple(imp.b.node("split", name, [x], specs, attrs))


def _mean_sum(op):
    def handler(imp, name, args, kwargs):
        x = args[0]
        dim = _dim_kw(args, kwargs, 1, None)
        keep = _arg(args, kwargs, 2, "keepdim", False)
        if dim is None:
            raise Refused("%s over every axis" % op)
        axes = [_axis(d, x.rank) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
        attrs = {"axes": axes}
        if keep:
            attrs["keepdims"] = True
        return imp.b.node1(op, name, [x], _shape(imp), emit.reduced_batch_axis(x, axes, keep),
                           attrs)
    return handler


def _getitem(imp, name, args, kwargs):
    base, index = args[0], val(args[1])
    if isinstance(base, (tuple, list)) and isinstance(index, tuple):
        # A stack of tensors held as their tuple (an RNN's h_n: hidden[-1, :, :]): the first
        # index picks one, the others index it.
        if not index or not isinstance(index[0], int):
            raise Refused("indexing the stack of an RNN's states other than by one integer")
        item = base[index[0]]
        return _slice_tensor(imp, name, item, index[1:]) if index[1:] else item
    if isinstance(base, (tuple, list)):
        return base[index]
    if not isinstance(base, Tensor):
        raise Refused("indexing a %s" % type(base).__name__)
    if torch.is_tensor(index):
        return torch_windows.rows(imp, name, base, index)
    return _slice_tensor(imp, name, base, index)


def _slice_tensor(imp, name, x, index):
    """x[...] with integers and slices on axes other than the batch; one ... stands for
    the axes not named, and None's new axes come with the result's shape."""
    index = tuple(i for i in (index if isinstance(index, tuple) else (index,)) if i is not None)
    ellipses = [k for k, i in enumerate(index) if i is Ellipsis]
    if len(ellipses) > 1 or len(index) - len(ellipses) > x.rank:
        raise Refused("tensor indexing with several ... or too many indices")
    if ellipses:
        at = ellipses[0]
        index = index[:at] + (slice(None),) * (x.rank - len(index) + 1) + index[at + 1:]
    y = x
    for axis, i in enumerate(index):
        if isinstance(i, slice):
            start, stop, step = i.indices(x.shape[axis])
            if step != 1:
                y = emit.strided(imp.b, "%s.step%d" % (name, axis), y, axis, start, stop,
                                 step)
                continue
            if (start, stop) == (0, x.shape[axis]):
                continue
            if axis == x.batch_axis:
                raise Refused("slicing the batch axis")
            shape = list(y.shape)
            shape[axis] = stop - start
            y = imp.b.node1("slice", name + ".slice", [y], shape, y.batch_axis,
                            {"axis": axis, "start": start, "end": stop})
        elif isinstance(i, int):
            if axis == x.batch_axis:
                raise Refused("indexing the batch axis")
            j = i % x.shape[axis]
            shape = list(y.shape)
            shape[axis] = 1
            y = imp.b.node1("slice", name + ".slice", [y], shape, y.batch_axis,
                            {"axis": axis, "start": j, "end": j + 1})
        else:
            raise Refused("tensor indexing with %s" % type(i).__name__)
    return emit.reshape(imp.b, name, y, _shape(imp))


def _fill_value(fill):
    """A fill JSON can carry: -inf (an attention mask's) as -1e9, whose exp is 0 in f32 all
    the same."""
    return -1e9 if fill == float("-inf") or fill <= -1e9 else fill


def _masked_fill(imp, name, args, kwargs):
    x, mask, fill = args[0], args[1], args[2]
    if isinstance(fill, Tensor):  # a computed fill
        return _emit_where(imp, name, mask, fill, x)
    fill = float(val(fill))
    if isinstance(mask, Tensor):  # a mask computed from the input: where(mask, fill, x)
        value = imp.constant(name + ".fill", [_fill_value(fill)], x)
        return _emit_where(imp, name, mask, value, x)
    if not isinstance(mask, Const) or not torch.is_tensor(mask.value):
        raise Refused("masked_fill with a mask that is not a tensor")
    m = mask.value.bool()
    if fill == float("-inf") or fill <= -1e9:
        additive = torch.zeros(m.shape).masked_fill(m, -1e9)
        return emit.binary(imp.b, "add", name, x, imp.constant(name + ".mask", additive, x))
    keep = imp.constant(name + ".keep", (~m).float(), x)
    kept = emit.binary(imp.b, "mul", name + ".kept", x, keep)
    filled = imp.constant(name + ".fill", m.float() * float(fill), x)
    return emit.binary(imp.b, "add", name, kept, filled)


# ---- masks: comparisons, logical not, where ------------------------------------------------
# Masks are f32 tensors of 0 and 1; on constants alone they fold at import time.

# A comparison with its operands swapped (`0 < ids` is `ids > 0`), and each one in numpy.
SWAPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater",
           "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal"}
NUMPY = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
         "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}


def _compare_ids(imp, name, op, ids, number):
    """Token ids compared with a number (`ids > 0`, `src != pad`): placer compares f32
    values, so the mask is looked up in a constant table of each id's answer. The ids are
    below the largest nn.Embedding's row count, since they index it."""
    rows = max((m.num_embeddings for m in imp.modules.values()
                if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))), default=0)
    if not rows or not isinstance(number, (int, float)):
        raise Refused("%s of integer ids other than with a number, in a model with an "
                      "embedding they index" % op)
    table = NUMPY[op](np.arange(rows), number).astype(np.float32).reshape(rows, 1)
    mask = imp.b.node1("embedding", name + ".lookup", [imp.b.constant(name + ".table", table),
                                                       ids], ids.shape + (1,), ids.batch_axis)
    return emit.reshape(imp.b, name, mask, ids.shape)


def _compare(op):
    def handler(imp, name, args, kwargs):
        a, c = args[0], args[1]
        if isinstance(a, Tensor) and a.dtype == "i32":
            return _compare_ids(imp, name, op, a, val(c))
        if isinstance(c, Tensor) and c.dtype == "i32":
            return _compare_ids(imp, name, SWAPPED[op], c, val(a))
        like = a if isinstance(a, Tensor) else c
        return emit.binary(imp.b, op, name, imp.tensor_of(a, name, like),
                           imp.tensor_of(c, name, like))
    return handler


def _logical_not(imp, name, args, kwargs):
    return emit.unary(imp.b, "logical_not", name, args[0])


def _carried(v):
    """A constant branch as JSON can carry it and the batch allows: -inf (a mask's fill) as
    -1e9, and one value filling a shape (full_like of a batched tensor) as that value."""
    if not isinstance(v, Const):
        return v
    value = v.value
    if torch.is_tensor(value) and value.is_floating_point() and value.numel() and \
            bool((value == value.reshape(-1)[0]).all()):
        value = float(value.reshape(-1)[0])
    if isinstance(value, float):
        return Const(_fill_value(value))
    if torch.is_tensor(value) and value.is_floating_point():
        return Const(value.clamp(min=-1e9))
    return v


def _emit_where(imp, name, cond, a, c):
    like = emit.meeting_point((a, c, cond))
    parts = [imp.tensor_of(_carried(t), name, like) for t in (cond, a, c)]
    for i, t in enumerate(parts):  # an unbatched operand broadcasts after the batch only
        parts[i] = emit.fit_to(imp.b, name + ".squeeze", t, like)
    shape = emit.broadcast(emit.broadcast(parts[0].shape, parts[1].shape), parts[2].shape)
    return imp.b.node1("where", name, parts, shape,
                       emit.broadcast_batch_axis(len(shape), *parts))


def _where(imp, name, args, kwargs):
    if len(args) != 3:
        raise Refused("torch.where with one argument (the indices of nonzero elements)")
    return _emit_where(imp, name, args[0], args[1], args[2])


FUNCTIONS = {
    operator.add: _arith("add"), torch.add: _arith("add"), "add": _arith("add"),
    operator.iadd: _arith("add"), "add_": _arith("add"),
    operator.sub: _arith("sub"), torch.sub: _arith("sub"), "sub": _arith("sub"),
    operator.mul: _arith("mul"), torch.mul: _arith("mul"), "mul": _arith("mul"),
    operator.imul: _arith("mul"), "mul_": _arith("mul"),
    operator.truediv: _arith("div"), torch.div: _arith("div"), "div": _arith("div"),
    operator.neg: _neg, torch.neg: _neg, "neg": _neg,
    operator.matmul: _matmul, torch.matmul: _matmul, torch.bmm: _matmul, "matmul": _matmul,
    "bmm": _matmul,
    F.relu: _unary("relu"), torch.relu: _unary("relu"), "relu": _unary("relu"),
    "relu_": _unary("relu"),
    torch.sigmoid: _unary("sigmoid"), F.sigmoid: _unary("sigmoid"), "sigmoid": _unary("sigmoid"),
    torch.tanh: _unary("tanh"), F.tanh: _unary("tanh"), "tanh": _unary("tanh"),
    F.gelu: _gelu, F.silu: _unary("silu"),
    F.hardswish: _unary("hardswish"), F.hardsigmoid: _unary("hardsigmoid"),
    F.relu6: _unary("clamp", {"min": 0.0, "max": 6.0}),
    F.hardtanh: _clamp("min_val", "max_val", -1.0, 1.0),
    torch.clamp: _clamp("min", "max", None, None), "clamp": _clamp("min", "max", None, None),
    torch.erf: _unary("erf"), "erf": _unary("erf"),
    F.softmax: _softmax("softmax"), torch.softmax: _softmax("softmax"),
    "softmax": _softmax("softmax"),
    F.log_softmax: _softmax("log_softmax"), "log_softmax": _softmax("log_softmax"),
    F.dropout: _dropout,
    F.adaptive_avg_pool2d: _adaptive_avg_pool,
    F.adaptive_avg_pool1d: _adaptive_avg_pool, F.adaptive_avg_pool3d: _adaptive_avg_pool,
    F.layer_norm: _layer_norm,
    torch.flatten: _flatten, "flatten": _flatten,
    torch.reshape: _reshape, "reshape": _reshape, "view": _reshape,
    "contiguous": _identity,
    torch.transpose: _transpose, "transpose": _transpose,
    "permute": _permute, torch.permute: _permute,
    torch.unsqueeze: _unsqueeze_squeeze, "unsqueeze": _unsqueeze_squeeze,
    torch.squeeze: _unsqueeze_squeeze, "squeeze": _unsqueeze_squeeze,
    torch.cat: _cat, torch.concat: _cat,
    torch.split: _split, "split": _split, torch.chunk: _split, "chunk": _split,
    torch.tensor_split: _split, "tensor_split": _split,
    torch.mean: _mean_sum("reduce_mean"), "mean": _mean_sum("reduce_mean"),
    torch.sum: _mean_sum("reduce_sum"), "sum": _mean_sum("reduce_sum"),
    operator.getitem: _getitem,
    "masked_fill": _masked_fill, "masked_fill_": _masked_fill,
    operator.eq: _compare("equal"), torch.eq: _compare("equal"), "eq": _compare("equal"),
    operator.ne: _compare("not_equal"), torch.ne: _compare("not_equal"),
    "ne": _compare("not_equal"),
    operator.lt: _compare("less"), torch.lt: _compare("less"), "lt": _compare("less"),
    operator.le: _compare("less_equal"), torch.le: _compare("less_equal"),
    "le": _compare("less_equal"),
    operator.gt: _compare("greater"), torch.gt: _compare("greater"), "gt": _compare("greater"),
    operator.ge: _compare("greater_equal"), torch.ge: _compare("greater_equal"),
    "ge": _compare("greater_equal"),
    operator.invert: _logical_not, torch.logical_not: _logical_not,
    "logical_not": _logical_not, "bitwise_not": _logical_not,
    torch.where: _where, "where": _where,
    "expand": _expand, "expand_as": _expand,
    F.conv1d: _conv(False), F.conv2d: _conv(False), F.conv3d: _conv(False),
    F.conv_transpose1d: _conv(True), F.conv_transpose2d: _conv(True),
    F.conv_transpose3d: _conv(True),
    torch.swapaxes: _transpose, "swapaxes": _transpose,
    torch.swapdims: _transpose, "swapdims": _transpose,
    operator.setitem: torch_windows.assign,
}

FUNCTIONS.update(torch_functional.FUNCTIONS)  # casts (a mask is f32 already), F.*
FUNCTIONS.update(torch_windows.FUNCTIONS)  # padding, rolls: window attention
FUNCTIONS.update(torch_composed.FUNCTIONS)  # stack, leaky ReLU, upsampling
FUNCTIONS.update(torch_math.FUNCTIONS)  # exp, log, powers, normalize, zero_
# Their layers too (torch_composed.py needs torch_modules.py first).
torch_modules.HANDLERS.update(torch_composed.MODULES)
torch_modules.HANDLERS.update(torch_math.MODULES)


def _stochastic_depth(imp, name, args, kwargs):
    return torch_modules.stochastic_depth(imp, name, args[0], _arg(args, kwargs, 1, "p", None),
                                          _arg(args, kwargs, 2, "mode", None),
                                          _arg(args, kwargs, 3, "training", True))


try:  # torchvision's functions, where torchvision is installed
    import torchvision.ops
    FUNCTIONS[torchvision.ops.stochastic_depth] = _stochastic_depth
except ImportError:
    pass

# Calls whose value depends on their argument's shape only, which is static: folded.
SHAPE_ONLY = {"size", "dim", getattr, "new_ones", "new_zeros", "new_full", torch.ones_like,
              torch.zeros_like, torch.full_like}


FILLS = {"new_ones", "new_zeros", "new_full", torch.ones_like, torch.zeros_like,
         torch.full_like}


def _one_sample(imp, value, target, args):
    """A fill shaped like a batched tensor (`torch.zeros_like(input_ids)`), or a constant
    expanded over the batch (`torch.arange(t).unsqueeze(0).expand(b, -1)`), holds the same
    values for every sample: one sample's, which broadcast over the batch as they meet it
    (a constant the batch's size would be refused as stretching over it)."""
    x = args[0] if args else None
    if target in FILLS and isinstance(x, Tensor) and x.batched and torch.is_tensor(value) \
            and tuple(value.shape) == tuple(x.shape):
        return value.narrow(x.batch_axis, 0, 1)
    if torch.is_tensor(value) and value.dim() and value.shape[0] == imp.b.batch > 1 and \
            value.stride(0) == 0:  # expanded: every row is one row's values
        return value.narrow(0, 0, 1)
    return value


def _describe(n, imp):
    if n.op == "call_module":
        return "%s (torch.nn module)" % type(imp.modules[n.target]).__name__
    if n.op == "call_method":
        return "Tensor.%s" % n.target
    target = n.target
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    if module in ("_operator", "operator"):
        return "operator.%s" % name
    if module.startswith("torch.nn.functional") or target in vars(F).values():
        return "torch.nn.functional.%s" % name
    return "%s.%s" % (module.replace("torch._C._VariableFunctions", "torch") or "torch", name)


def _node_name(n):
    """The placer name: the module's path, or the function's name in its module's scope."""
    if n.op == "call_module":
        return n.target
    base = n.name.rstrip("0123456789").rstrip("_") or n.name
    scope = n.meta.get("scope", "")
    return "%s.%s" % (scope, base) if scope else base


def _has_parameters(imp, n):
    """A module with parameters is mapped even on constant inputs (position ids from
    torch.arange): folding it would freeze its parameters."""
    return n.op == "call_module" and any(True for _ in imp.modules[n.target].parameters())


def _module_inputs(imp, name, m, args):
    """A module's tensor arguments as Tensors: constants made of those that are constant
    (an embedding takes constant ids as they are)."""
    if isinstance(m, torch.nn.Embedding):
        return args
    return tuple(imp.tensor_of(a, name) if isinstance(a, Const) and torch.is_tensor(a.value)
                 else a for a in args)


def map_node(imp, n):
    if n.op == "placeholder":
        return imp.next_input(n)
    if n.op == "get_attr":
        if n.target in imp.params:
            return imp.parameter(n.target, like_init(imp.params[n.target], len(imp.b.parameters) + 1))
        return Const(_one_sample(imp, imp.value(n), None, ()))
    args = imp.env_of(n.args)
    kwargs = imp.env_of(n.kwargs)
    where = _node_name(n)
    if n.target is getattr and isinstance(args[0], torch_composed.Extremes):
        return getattr(args[0], val(args[1]))  # torch.max(x, dim).values
    if n.target in SHAPE_ONLY:  # its value is known even where its argument's op is not
        return Const(_one_sample(imp, imp.value(n), n.target, args))
    if is_poisoned(args) or is_poisoned(kwargs):
        # Downstream of an unsupported operator: only whether this one is supported counts.
        if n.op == "call_module":
            known = torch_modules.handler_for(imp.modules[n.target]) is not None
        else:
            known = n.target in FUNCTIONS or n.target in SHAPE_ONLY or (
                isinstance(n.target, type) and issubclass(n.target, tuple))
        if not known:
            imp.unsupported.add(_describe(n, imp), where)
        return Poisoned()
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, NotMapped):
            imp.unsupported.add(a.what, where)
            return Poisoned()
    args, kwargs = torch_recurrent.stacked(imp, n, args, kwargs)
    if is_const(args) and is_const(kwargs) and not _has_parameters(imp, n):
        return Const(_one_sample(imp, imp.value(n), n.target, args))
    if n.op == "call_function" and isinstance(n.target, type) and issubclass(n.target, tuple):
        fields = getattr(n.target, "_fields", ())  # a named tuple of outputs (GoogLeNet's)
        return tuple(args) + tuple(kwargs[f] for f in fields[len(args):] if f in kwargs)
    imp.current_value = imp.value(n)
    imp.current_node = n
    try:
        if n.op == "call_module":
            m = imp.modules[n.target]
            handler = torch_modules.handler_for(m)
            if handler is None:
                imp.unsupported.add(_describe(n, imp), where)
                return Poisoned()
            return handler(imp, where, m, _module_inputs(imp, where, m, args), kwargs)
        handler = FUNCTIONS.get(n.target)
        if handler is None:
            imp.unsupported.add(_describe(n, imp), where)
            return Poisoned()
        return handler(imp, where, args, kwargs)
    except Refused as e:
        imp.unsupported.add(str(e), where)
        return Poisoned()
    except ImportError_ as e:  # a use placer cannot express (it moves the batch, ...)
        imp.unsupported.add("%s (%s)" % (_describe(n, imp), str(e).split(": ", 1)[-1]), where)
        return Poisoned()
