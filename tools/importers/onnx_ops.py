"""ONNX operators -> placer ops: handler(imp, node, name, inputs, attrs) -> outputs.
inputs are Tensors, numpy arrays (constants) or None (an absent optional input)."""

import numpy as np

import emit
from builder import ImportError_, Tensor
from onnx_graph import Refused


def _window_out(size, k, s, p, d, ceil):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _conv_attrs(attrs, op, spatial):
    """stride, padding and dilation of a convolution of 1 to 3 spatial axes, and its
    groups; placer pads symmetrically."""
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise Refused("auto_pad=%s" % attrs["auto_pad"])
    pads = list(attrs.get("pads", [0] * 2 * spatial))
    if len(pads) != 2 * spatial or pads[:spatial] != pads[spatial:]:
        raise Refused("asymmetric pads %s" % pads)
    a = {"stride": list(attrs.get("strides", [1] * spatial)), "padding": pads[:spatial],
         "dilation": list(attrs.get("dilations", [1] * spatial))}
    if int(attrs.get("group", 1)) != 1:
        a["groups"] = int(attrs["group"])
    return a


def _conv_inputs(imp, n, name, ins, op):
    """x, the filter and the optional bias of a convolution of 1 to 3 spatial axes."""
    w = imp.tensor(n.input[1], name)
    if not 3 <= w.rank <= 5:
        raise Refused("%d-D %s" % (w.rank - 2, op))
    if isinstance(ins[0], Padded):  # a Pad around two spatial axes: 2-D Conv takes it in
        raise Refused("%s of a padded input" % op)
    bias = [imp.tensor(n.input[2], name)] if len(n.input) > 2 and n.input[2] else []
    return ins[0], w, bias


def conv(imp, n, name, ins, attrs):
    if imp.tensor(n.input[1], name).rank == 4:
        ins, attrs, _ = _unpad(ins, attrs, "Conv")
    x, w, bias = _conv_inputs(imp, n, name, ins, "Conv")
    spatial = w.rank - 2
    a = _conv_attrs(attrs, "Conv", spatial)
    out = [_window_out(x.shape[2 + i], w.shape[2 + i], a["stride"][i], a["padding"][i],
                       a["dilation"][i], False) for i in range(spatial)]
    return [imp.b.node1("conv%dd" % spatial, name, [x, w] + bias,
                        (x.shape[0], w.shape[0]) + tuple(out), True, a)]


def conv_transpose(imp, n, name, ins, attrs):
    if "output_shape" in attrs:
        raise Refused("ConvTranspose with output_shape")
    x, w, bias = _conv_inputs(imp, n, name, ins, "ConvTranspose")
    spatial = w.rank - 2
    a = _conv_attrs(attrs, "ConvTranspose", spatial)
    extra = list(attrs.get("output_padding", [0] * spatial))
    if any(e >= s for e, s in zip(extra, a["stride"])):
        raise Refused("output_padding %s not below the strides" % extra)
    if any(extra):
        a["output_padding"] = extra
    out = [(x.shape[2 + i] - 1) * a["stride"][i] - 2 * a["padding"][i] +
           a["dilation"][i] * (w.shape[2 + i] - 1) + extra[i] + 1 for i in range(spatial)]
    channels = w.shape[1] * a.get("groups", 1)
    return [imp.b.node1("conv_transpose%dd" % spatial, name, [x, w] + bias,
                        (x.shape[0], channels) + tuple(out), True, a)]


def _pool(op):
    """MaxPool and AveragePool of 1 to 3 spatial axes (x's rank says which)."""
    def handler(imp, n, name, ins, attrs):
        if op == "max_pool" and isinstance(ins[0], Padded):
            raise Refused("max pooling of zero-padded input")
        ins, attrs, padded = _unpad(ins, attrs, op)
        if padded:  # the zeros were part of the input: they count
            attrs["count_include_pad"] = 1
        x = ins[0]
        spatial = x.rank - 2
        spec = _conv_attrs(attrs, op, spatial)
        if spec.pop("dilation") != [1] * spatial:
            raise Refused("dilations")
        spec["kernel"] = list(attrs["kernel_shape"])
        ceil = bool(attrs.get("ceil_mode", 0))
        out = [_window_out(x.shape[2 + i], spec["kernel"][i], spec["stride"][i],
                           spec["padding"][i], 1, ceil) for i in range(spatial)]
        if ceil:
            spec["ceil_mode"] = True
        if op == "avg_pool" and attrs.get("count_include_pad", 0) and any(spec["padding"]):
            spec["count_include_pad"] = True
        return [imp.b.node1(emit.pool_kind(op, spatial), name, [x], x.shape[:2] + tuple(out),
                            True, spec)]
    return handler


def global_avg_pool(imp, n, name, ins, attrs):
    x = ins[0]
    if x.rank != 4:
        return [emit.channel_mean(imp.b, name, x)]
    g = imp.b.node1("global_avg_pool", name, [x], x.shape[:2], True)
    return [emit.reshape(imp.b, name + ".reshape", g, x.shape[:2] + (1, 1))]


def batch_norm(imp, n, name, ins, attrs):
    x = ins[0]
    gamma = imp.tensor(n.input[1], name)
    beta = imp.tensor(n.input[2], name)
    y = imp.b.node1("batch_norm", name, [x, gamma, beta], x.shape, True,
                    {"eps": float(attrs.get("epsilon", 1e-5)),
                     "momentum": float(attrs.get("momentum", 0.9))})
    for k, i in (("mean", 3), ("var", 4)):
        value = imp.initializers.get(n.input[i], ins[i])
        if not isinstance(value, np.ndarray):
            raise Refused("running averages computed from the input")
        imp.b.state("%s/running_%s" % (y.name, k), value.astype(np.float32))
    return [y] + [None] * (len(n.output) - 1)


def layer_norm(imp, n, name, ins, attrs):
    x = ins[0]
    if int(attrs.get("axis", -1)) % x.rank != x.rank - 1:
        raise Refused("axis other than the last")
    gamma = imp.tensor(n.input[1], name)
    beta = imp.tensor(n.input[2], name) if len(n.input) > 2 and n.input[2] else \
        imp.b.constant(name + ".beta", np.zeros(x.shape[-1], np.float32))
    return [imp.b.node1("layer_norm", name, [x, gamma, beta], x.shape, x.batch_axis,
                        {"eps": float(attrs.get("epsilon", 1e-5))})]


def gemm(imp, n, name, ins, attrs):
    if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
        raise Refused("transA, alpha or beta")
    x = ins[0]
    w = imp.tensor(n.input[1], name)
    bias = imp.tensor(n.input[2], name) if len(n.input) > 2 and n.input[2] else None
    if not isinstance(x, Tensor):  # torch.onnx's zero state of a cell, its batch fixed
        raise Refused("a constant first operand")
    if attrs.get("transB", 0):
        return [emit.linear(imp.b, name, x, w, bias)]
    y = imp.b.node1("matmul", name + ".matmul" if bias else name, [x, w],
                    (x.shape[0], w.shape[1]), True)
    return [emit.binary(imp.b, "add", name, y, bias) if bias else y]


def matmul(imp, n, name, ins, attrs):
    a = imp.tensor(n.input[0], name)
    c = imp.tensor(n.input[1], name)
    lead = emit.broadcast(a.shape[:-2], c.shape[:-2]) if a.rank > 2 and c.rank > 2 else \
        (a.shape[:-2] if a.rank > 2 else c.shape[:-2])
    out = tuple(lead) + (a.shape[-2] if a.rank > 1 else (), c.shape[-1])
    out = tuple(d for d in out if d != ())
    return [emit.matmul(imp.b, name, a, c, out)]


def _arith(op):
    def handler(imp, n, name, ins, attrs):
        a, c = ins
        if op in ("mul", "div") and isinstance(c, np.ndarray) and c.size == 1:
            k = float(c.reshape(-1)[0])
            return [emit.scale(imp.b, name, a, k if op == "mul" else 1.0 / k)]
        if op == "mul" and isinstance(a, np.ndarray) and a.size == 1:
            return [emit.scale(imp.b, name, c, float(a.reshape(-1)[0]))]
        like = a if isinstance(a, Tensor) else c
        x = imp.tensor(n.input[0], name, like, role="operand")
        y = imp.tensor(n.input[1], name, like, role="operand")
        return [emit.binary(imp.b, op, name, x, y)]
    return handler


def _unary(op, attrs_of=None):
    def handler(imp, n, name, ins, attrs):
        return [emit.unary(imp.b, op, name, ins[0], attrs_of(attrs) if attrs_of else None)]
    return handler


def clip(imp, n, name, ins, attrs):
    lo = ins[1] if len(ins) > 1 else attrs.get("min")
    hi = ins[2] if len(ins) > 2 else attrs.get("max")
    a = {}
    if lo is not None:
        a["min"] = float(np.asarray(lo).reshape(-1)[0])
    if hi is not None:
        a["max"] = float(np.asarray(hi).reshape(-1)[0])
    return [emit.unary(imp.b, "clamp", name, ins[0], a)]


def hard_sigmoid(imp, n, name, ins, attrs):
    if abs(attrs.get("alpha", 0.2) - 1 / 6) > 1e-6 or abs(attrs.get("beta", 0.5) - 0.5) > 1e-6:
        raise Refused("alpha and beta other than PyTorch's 1/6 and 1/2")
    return [emit.unary(imp.b, "hardsigmoid", name, ins[0])]


def softmax(op):
    def handler(imp, n, name, ins, attrs):
        return [emit.unary(imp.b, op, name, ins[0], {"axis": int(attrs.get("axis", -1))})]
    return handler


def flatten(imp, n, name, ins, attrs):
    x = ins[0]
    axis = int(attrs.get("axis", 1)) % max(x.rank, 1)
    shape = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
    return [emit.reshape(imp.b, name, x, shape)]


def reshape(imp, n, name, ins, attrs):
    x, target = ins
    if not isinstance(target, np.ndarray):
        raise Refused("a shape computed from values")
    shape = [x.shape[i] if d == 0 and not attrs.get("allowzero") else int(d)
             for i, d in enumerate(target)]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(x.shape)) // known
    return [emit.reshape(imp.b, name, x, shape)]


def squeeze_unsqueeze(imp, n, name, ins, attrs):
    x = ins[0]
    probe = np.empty(x.shape, dtype=np.int8)
    shape = onnx_fold_shape(n.op_type, attrs, [probe] + list(ins[1:]))
    return [emit.reshape(imp.b, name, x, shape)]


def onnx_fold_shape(op, attrs, ins):
    import onnx_fold
    return onnx_fold.fold(op, attrs, ins, 1)[0].shape


def transpose(imp, n, name, ins, attrs):
    x = ins[0]
    perm = attrs.get("perm", list(range(x.rank))[::-1])
    return [emit.transpose(imp.b, name, x, perm)]


def concat(imp, n, name, ins, attrs):
    like = next(v for v in ins if isinstance(v, Tensor))
    parts = [imp.tensor(i, name, like, role="operand") for i in n.input]
    axis = int(attrs["axis"]) % like.rank
    shape = list(like.shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return [imp.b.node1("concat", name, parts, shape, like.batch_axis, {"axis": axis})]


def split(imp, n, name, ins, attrs):
    x = ins[0]
    axis = int(attrs.get("axis", 0)) % x.rank
    sizes = [int(s) for s in ins[1]] if len(ins) > 1 and ins[1] is not None else \
        attrs.get("split") or [x.shape[axis] // len(n.output)] * len(n.output)
    specs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = s
        specs.append((shape, x.batch_axis))
    a = {"axis": axis}
    if len(set(sizes)) > 1:
        a["sizes"] = sizes
    return imp.b.node("split", name, [x], specs, a)


def slice_(imp, n, name, ins, attrs):
    x = ins[0]
    starts, ends = ins[1], ins[2]
    axes = ins[3] if len(ins) > 3 and ins[3] is not None else np.arange(len(starts))
    steps = ins[4] if len(ins) > 4 and ins[4] is not None else np.ones(len(starts), np.int64)
    y = x
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = int(a) % x.rank
        start, stop, step = slice(int(s), int(e), int(st)).indices(x.shape[a])
        if step < 0:
            raise Refused("negative steps")
        if step != 1:
            y = emit.strided(imp.b, "%s.step%d" % (name, a), y, a, start, stop, step)
            continue
        if (start, stop) == (0, x.shape[a]):
            continue
        if a == x.batch_axis:
            raise Refused("slicing the batch axis")
        shape = list(y.shape)
        shape[a] = stop - start
        y = imp.b.node1("slice", name, [y], shape, y.batch_axis, {"axis": a, "start": start,
                                                                   "end": stop})
    return [y]


def reduce(op):
    def handler(imp, n, name, ins, attrs):
        x = ins[0]
        axes = attrs.get("axes")
        if axes is None and len(ins) > 1 and ins[1] is not None:
            axes = [int(a) for a in ins[1]]
        if axes is None:
            raise Refused("over every axis")
        axes = sorted(int(a) % x.rank for a in axes)
        keep = bool(attrs.get("keepdims", 1))
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        a = {"axes": axes}
        if keep:
            a["keepdims"] = True
        return [imp.b.node1(op, name, [x], shape, emit.reduced_batch_axis(x, axes, keep), a)]
    return handler


def gather(imp, n, name, ins, attrs):
    data, ids = ins
    axis = int(attrs.get("axis", 0))
    if isinstance(ids, Tensor) and not (isinstance(data, Tensor) and data.batched) and axis == 0:
        table = imp.tensor(n.input[0], name)
        if table.rank != 2:
            raise Refused("a lookup in a %d-D table" % table.rank)
        return [imp.b.node1("embedding", name, [table, ids], ids.shape + (table.shape[1],),
                            ids.batch_axis)]
    if isinstance(data, Tensor) and isinstance(ids, np.ndarray) and ids.size == 1:
        a = axis % data.rank
        if a == data.batch_axis:
            raise Refused("indexing the batch axis")
        j = int(ids.reshape(-1)[0]) % data.shape[a]
        shape = list(data.shape)
        shape[a] = 1
        y = imp.b.node1("slice", name + ".slice", [data], shape, data.batch_axis,
                        {"axis": a, "start": j, "end": j + 1})
        if ids.ndim == 0:
            del shape[a]
        return [emit.reshape(imp.b, name, y, shape)]
    if isinstance(data, Tensor) and not data.batched and isinstance(ids, np.ndarray) and \
            axis % data.rank == 0:  # a parameter's rows picked by constant indices
        return [emit.constant_rows(imp.b, name, data, ids.astype(np.int64) % data.shape[0])]
    raise Refused("gathering several indices")


def dropout(imp, n, name, ins, attrs):
    x = ins[0]
    training = ins[2] if len(ins) > 2 else None
    ratio = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("ratio", 0.5)
    ratio = float(np.asarray(ratio).reshape(-1)[0])
    if training is None or not bool(np.asarray(training).reshape(-1)[0]) or ratio == 0:
        return [x] + [None] * (len(n.output) - 1)
    return [emit.unary(imp.b, "dropout", name, x, {"rate": ratio})] + \
        [None] * (len(n.output) - 1)


def _compare(op):
    """Equal, Less, ... of a computed operand: a mask of 0 and 1 (constants alone fold)."""
    def handler(imp, n, name, ins, attrs):
        like = next(v for v in ins if isinstance(v, Tensor))
        operands = [imp.tensor(n.input[i], name, like, role="operand") for i in range(2)]
        return [emit.binary(imp.b, op, name, *operands)]
    return handler


def where(imp, n, name, ins, attrs):
    """Where(c, a, b): with a constant condition and one constant branch, masked_fill's
    constants; else placer's where (a constant -inf branch as -1e9, which JSON carries)."""
    c, a, b = ins
    if not isinstance(c, np.ndarray) or isinstance(a, Tensor) == isinstance(b, Tensor):
        like = emit.meeting_point((a, b, c))
        for i, v in enumerate(ins):  # constants as JSON and the batch take them (see torch's)
            if not isinstance(v, Tensor):
                v = np.maximum(np.asarray(v, np.float32), np.float32(-1e9))
                uniform = v.size and np.all(v == v.reshape(-1)[0])
                imp.values[n.input[i]] = np.asarray(v.reshape(-1)[:1] if uniform else v)
        parts = [emit.fit_to(imp.b, name + ".squeeze",
                             imp.tensor(n.input[i], name, like, role="operand"), like)
                 for i in range(3)]
        shape = emit.broadcast(emit.broadcast(parts[0].shape, parts[1].shape), parts[2].shape)
        return [imp.b.node1("where", name, parts, shape,
                            emit.broadcast_batch_axis(len(shape), *parts))]
    c = c.astype(bool)
    if isinstance(a, Tensor):           # keep a where c, the constant b elsewhere
        x, fill, filled = a, b, ~c
    else:
        x, fill, filled = b, a, c
    fill = np.broadcast_to(np.asarray(fill, np.float32), filled.shape)
    out = imp.b
    if np.all(fill[filled] <= -1e9):
        mask = np.where(filled, np.float32(-1e9), np.float32(0))
        return [emit.binary(out, "add", name, x, emit.constant_for(out, name + ".mask", mask, x))]
    keep = emit.constant_for(out, name + ".keep", (~filled).astype(np.float32), x)
    kept = emit.binary(out, "mul", name + ".kept", x, keep)
    fills = np.where(filled, fill, 0).astype(np.float32)
    values = emit.constant_for(out, name + ".fill", fills, x)
    return [emit.binary(out, "add", name, kept, values)]


class Padded:
    """The result of a Pad of zeros around the spatial axes, which only the average
    pooling or convolution reading it can take (as its own padding)."""

    def __init__(self, x, padding):
        self.x, self.padding = x, padding


def pad(imp, n, name, ins, attrs):
    """torch.onnx puts a Pad before every average pooling (all zeros, or the padding that
    count_include_pad counts); placer has no pad op of its own."""
    pads = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("pads")
    value = ins[2] if len(ins) > 2 and ins[2] is not None else attrs.get("value", 0.0)
    if pads is None or not isinstance(pads, (np.ndarray, list)) or \
            attrs.get("mode", "constant") != "constant" or np.any(np.asarray(value)):
        raise Refused("padding other than zeros of a constant size")
    pads = [int(p) for p in pads]
    x = ins[0]
    if not any(pads):
        return [x]
    r = len(pads) // 2
    begin, end = pads[:r], pads[r:]
    if x.rank not in (3, 4, 5) or r != x.rank or begin[:2] + end[:2] != [0, 0, 0, 0] or \
            begin != end:
        raise Refused("padding other than equal sides of the spatial axes")
    return [Padded(x, begin[2:])]


def _unpad(ins, attrs, op):
    """A pooling or convolution reading a Pad: the pad becomes its own padding."""
    if not isinstance(ins[0], Padded):
        return ins, attrs, False
    if any(attrs.get("pads", [])):
        raise Refused("%s of a padded input with padding of its own" % op)
    attrs = dict(attrs, pads=ins[0].padding * 2)
    return [ins[0].x] + list(ins[1:]), attrs, True


def identity(imp, n, name, ins, attrs):
    return [ins[0]]


MASK_OPS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
            "logical_not")


def _is_mask(b, t):
    """Whether placer computes t as a mask of 0 and 1 (a comparison's or logical_not's)."""
    return any(node["op"] in MASK_OPS and t.name in node["outputs"] for node in b.nodes)


def cast(imp, n, name, ins, attrs):
    x = ins[0]
    if attrs.get("to") == 1 and x.dtype == "f32":  # FLOAT to FLOAT; a mask is already one
        return [x]
    if attrs.get("to") == 9 and x.dtype == "f32":  # to BOOL: a mask as it is, else x != 0
        if _is_mask(imp.b, x):
            return [x]
        zero = imp.b.constant(name + ".zero", np.zeros(1, np.float32))
        return [emit.binary(imp.b, "not_equal", name, x, zero)]
    raise Refused("casting a computed value")


def pow_(imp, n, name, ins, attrs):
    """x to a constant power: x * x for 2, else placer's pow."""
    x, e = ins
    if not isinstance(e, np.ndarray) or e.size != 1:
        raise Refused("exponents other than a constant number")
    k = float(e.reshape(-1)[0])
    if k == 2.0:
        return [emit.binary(imp.b, "mul", name, x, x)]
    return [emit.unary(imp.b, "pow", name, x, {"exponent": k})]


def neg(imp, n, name, ins, attrs):
    return [emit.scale(imp.b, name, ins[0], -1.0)]


HANDLERS = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "MaxPool": _pool("max_pool"),
    "AveragePool": _pool("avg_pool"),
    "GlobalAveragePool": global_avg_pool,
    "BatchNormalization": batch_norm,
    "LayerNormalization": layer_norm,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": _arith("add"), "Sub": _arith("sub"), "Mul": _arith("mul"), "Div": _arith("div"),
    "Relu": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"),
    "Erf": _unary("erf"), "HardSwish": _unary("hardswish"), "HardSigmoid": hard_sigmoid,
    "Gelu": _unary("gelu", lambda a: {"approximate": a.get("approximate", "none")}),
    "Clip": clip,
    "Softmax": softmax("softmax"), "LogSoftmax": softmax("log_softmax"),
    "Flatten": flatten, "Reshape": reshape, "Squeeze": squeeze_unsqueeze,
    "Unsqueeze": squeeze_unsqueeze, "Transpose": transpose, "Concat": concat, "Split": split,
    "Slice": slice_, "ReduceMean": reduce("reduce_mean"), "ReduceSum": reduce("reduce_sum"),
    "Gather": gather, "Dropout": dropout, "Identity": identity, "Cast": cast, "Pow": pow_,
    "Neg": neg, "Where": where, "Pad": pad,
    "Equal": _compare("equal"), "Less": _compare("less"), "LessOrEqual": _compare("less_equal"),
    "Greater": _compare("greater"), "GreaterOrEqual": _compare("greater_equal"),
    "Not": _unary("logical_not"),
    "Exp": _unary("exp"), "Log": _unary("log"), "Sqrt": _unary("sqrt"), "Abs": _unary("abs"),
}

import onnx_recurrent  # noqa: E402 (LSTM and GRU, in a module of their own)
HANDLERS.update(onnx_recurrent.HANDLERS)

__all__ = ["HANDLERS", "ImportError_"]
