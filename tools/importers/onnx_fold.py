"""Constant folding for ONNX graphs: the shape arithmetic exporters emit (Shape, Gather,
Unsqueeze, Concat, ...) evaluated in numpy, since every shape is static once the batch is
fixed. fold(op, attrs, inputs) returns the outputs, or None when the op is not foldable."""

import numpy as np


def _axes(attrs, inputs, i):
    """Axes from attribute "axes" (older opsets) or input i (newer ones)."""
    if len(inputs) > i and inputs[i] is not None:
        return [int(a) for a in np.asarray(inputs[i]).reshape(-1)]
    return [int(a) for a in attrs.get("axes", [])]


def _unsqueeze(attrs, inputs):
    x = inputs[0]
    for a in sorted(a % (x.ndim + len(_axes(attrs, inputs, 1))) for a in _axes(attrs, inputs, 1)):
        x = np.expand_dims(x, a)
    return [x]


def _squeeze(attrs, inputs):
    axes = _axes(attrs, inputs, 1)
    x = inputs[0]
    return [np.squeeze(x, axis=tuple(a % x.ndim for a in axes)) if axes else np.squeeze(x)]


def _slice(attrs, inputs):
    x = inputs[0]
    starts = [int(v) for v in inputs[1]]
    ends = [int(v) for v in inputs[2]]
    axes = [int(v) for v in inputs[3]] if len(inputs) > 3 and inputs[3] is not None \
        else list(range(len(starts)))
    steps = [int(v) for v in inputs[4]] if len(inputs) > 4 and inputs[4] is not None \
        else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a % x.ndim] = slice(s, e, st)
    return [x[tuple(index)]]


def _reshape(attrs, inputs):
    x, shape = inputs[0], [int(d) for d in inputs[1]]
    shape = [x.shape[i] if d == 0 and not attrs.get("allowzero") else d
             for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _cast(attrs, inputs):
    import onnx.mapping
    return [inputs[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[attrs["to"]])]


def _constant_of_shape(attrs, inputs):
    value = attrs.get("value")
    fill = value.reshape(-1)[0] if value is not None else np.float32(0)
    return [np.full([int(d) for d in inputs[0]], fill, dtype=np.asarray(fill).dtype)]


def _split(attrs, inputs, n_outputs):
    x = inputs[0]
    axis = attrs.get("axis", 0) % x.ndim
    sizes = [int(s) for s in inputs[1]] if len(inputs) > 1 and inputs[1] is not None \
        else attrs.get("split") or [x.shape[axis] // n_outputs] * n_outputs
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def _scatter_nd(attrs, inputs):
    """ScatterND without a reduction: a constant written in place (Swin's shifted-window
    mask, filled region by region)."""
    data, indices, updates = inputs
    if attrs.get("reduction", "none") != "none":
        return None
    out = np.array(data, copy=True)
    k = indices.shape[-1]
    for where, value in zip(indices.reshape(-1, k), updates.reshape((-1,) + data.shape[k:])):
        out[tuple(int(i) for i in where)] = value
    return [out]


FOLD = {
    "Identity": lambda a, i: [i[0]],
    "Gather": lambda a, i: [np.take(i[0], i[1].astype(np.int64), axis=a.get("axis", 0))],
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": lambda a, i: [np.concatenate([np.atleast_1d(v) for v in i], axis=a["axis"])],
    "Slice": _slice,
    "Reshape": _reshape,
    "Cast": _cast,
    "ConstantOfShape": _constant_of_shape,
    "Range": lambda a, i: [np.arange(i[0], i[1], i[2]).astype(np.asarray(i[0]).dtype)],
    "Expand": lambda a, i: [i[0] * np.ones([int(d) for d in i[1]], dtype=i[0].dtype)],
    "Equal": lambda a, i: [np.equal(i[0], i[1])],
    "Where": lambda a, i: [np.where(i[0], i[1], i[2])],
    "Not": lambda a, i: [np.logical_not(i[0])],
    "Add": lambda a, i: [np.add(i[0], i[1])],
    "Sub": lambda a, i: [np.subtract(i[0], i[1])],
    "Mul": lambda a, i: [np.multiply(i[0], i[1])],
    "Div": lambda a, i: [np.floor_divide(i[0], i[1]) if np.asarray(i[0]).dtype.kind == "i"
                         else np.divide(i[0], i[1])],
    "Neg": lambda a, i: [np.negative(i[0])],
    "Sqrt": lambda a, i: [np.sqrt(i[0])],
    "Pow": lambda a, i: [np.power(i[0], i[1]).astype(np.asarray(i[0]).dtype)],
    "Transpose": lambda a, i: [np.transpose(i[0], a.get("perm"))],
    "Trilu": lambda a, i: [np.triu(i[0], int(i[1]) if len(i) > 1 and i[1] is not None else 0)
                           if a.get("upper", 1) else
                           np.tril(i[0], int(i[1]) if len(i) > 1 and i[1] is not None else 0)],
    "Shape": lambda a, i: [np.asarray(np.shape(i[0])[a.get("start", 0):a.get("end")],
                                      dtype=np.int64)],
    "Mod": lambda a, i: [np.fmod(i[0], i[1]) if a.get("fmod", 0) else np.mod(i[0], i[1])],
    "ScatterND": _scatter_nd,
}


def fold(op, attrs, inputs, n_outputs):
    if op == "Split":
        return _split(attrs, inputs, n_outputs)
    outputs = FOLD[op](attrs, inputs) if op in FOLD else None
    return None if outputs is None else [np.asarray(v) for v in outputs]
