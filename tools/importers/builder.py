"""Builds a placer model (docs/model-format.md) op by op, for the importers.

Tensors are tracked with their whole shape, as placer sees it after the loader has put the
batch into the inputs: a batched tensor holds the step's batch on its batch axis (0 unless
an input says otherwise and ops move it). The builder checks nothing placer's loader
checks; it names things, keeps the weights, and writes.
"""

import json
import math

import numpy as np


class ImportError_(Exception):
    """A model that cannot be imported: the message says where and what."""


def batch_axis_of(batched):
    """A batch axis (an int) or None from what mappings pass: True for axis 0, False or None
    for an unbatched tensor, or the axis itself."""
    if batched is None or isinstance(batched, bool):
        return 0 if batched else None
    return int(batched)


class Tensor:
    __slots__ = ("name", "shape", "batch_axis", "dtype")

    def __init__(self, name, shape, batched, dtype="f32"):
        """batched: True (the batch on axis 0), False or None (none), or the batch's axis."""
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.batch_axis = batch_axis_of(batched)
        self.dtype = dtype

    @property
    def batched(self):
        return self.batch_axis is not None

    @property
    def rank(self):
        return len(self.shape)

    def sample_shape(self):
        """The shape placer's attributes use: per sample for a batched tensor."""
        if not self.batched:
            return list(self.shape)
        return list(self.shape[:self.batch_axis] + self.shape[self.batch_axis + 1:])

    def __repr__(self):
        return "Tensor(%s %s%s)" % (self.name, list(self.shape), "" if not self.batched else
                                    " batched on axis %d" % self.batch_axis)


class Unsupported:
    """Operators that cannot be mapped, gathered over the whole model for one error."""

    def __init__(self):
        self.uses = {}  # operator -> list of places, in the order met

    def add(self, operator, where):
        self.uses.setdefault(operator, []).append(where)

    def __bool__(self):
        return bool(self.uses)

    def message(self, source):
        total = sum(len(w) for w in self.uses.values())
        lines = ["%s: %d unsupported operator%s (%d use%s); nothing was written:" % (
            source, len(self.uses), "" if len(self.uses) == 1 else "s", total,
            "" if total == 1 else "s")]
        for op, where in sorted(self.uses.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            shown = ", ".join(where[:6]) + (", ..." if len(where) > 6 else "")
            lines.append("  %s: %d use%s: %s" % (op, len(where), "" if len(where) == 1 else "s",
                                                 shown))
        return "\n".join(lines)


def _json_number(x):
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ImportError_("a constant holds %r, which JSON cannot carry" % x)
    return int(x) if x.is_integer() and abs(x) < 2 ** 53 else x


def _json(value, where):
    try:
        return json.dumps(value, separators=(", ", ": "), allow_nan=False)
    except ValueError:  # an attribute of the source (a NaN epsilon) JSON cannot carry
        if isinstance(value, dict) and "name" in value:
            where += " (%s %r)" % (value.get("op", "parameter"), value["name"])
        raise ImportError_("%s: holds NaN or an infinity, which JSON cannot carry" % where)


class Builder:
    def __init__(self, name, batch, description=""):
        self.name = name
        self.batch = int(batch)
        self.description = description
        self.inputs = []
        self.parameters = []   # JSON objects
        self.nodes = []
        self.weights = []      # (name, numpy array), parameters then running averages
        self.loss = None
        self.optimizer = None
        self.batch_statistics = None
        self.reshaped_from = {}  # a reshape's output -> its input (see emit.reshape)
        self.transposed_from = {}  # a last-two-axes transpose's output -> its input
        self._tensor_names = set()
        self._node_names = set()

    # ---- names ------------------------------------------------------------------------------

    @staticmethod
    def _fresh(wanted, taken):
        name = wanted or "t"
        if name not in taken:
            taken.add(name)
            return name
        i = 1
        while "%s_%d" % (name, i) in taken:
            i += 1
        name = "%s_%d" % (name, i)
        taken.add(name)
        return name

    def tensor_name(self, wanted):
        return self._fresh(wanted, self._tensor_names)

    # ---- tensors ----------------------------------------------------------------------------

    def input(self, name, sample_shape, dtype, role, batch_axis=0):
        """An input of `sample_shape` per sample, with the batch put on `batch_axis`."""
        sample_shape = tuple(sample_shape)
        shape = sample_shape[:batch_axis] + (self.batch,) + sample_shape[batch_axis:]
        t = Tensor(self.tensor_name(name), shape, batch_axis, dtype)
        entry = {"name": t.name, "shape": list(sample_shape), "dtype": dtype, "role": role}
        if batch_axis:
            entry["batch_axis"] = batch_axis
        self.inputs.append(entry)
        return t

    def parameter(self, name, value, init, trainable=True):
        """A parameter whose source value goes to the weights file; init is for a fresh start."""
        value = np.ascontiguousarray(value, dtype=np.float32)
        t = Tensor(self.tensor_name(name), value.shape or (1,), False)
        entry = {"name": t.name, "shape": list(t.shape), "init": init}
        if not trainable:
            entry["trainable"] = False
        self.parameters.append(entry)
        self.weights.append((t.name, value.reshape(t.shape)))
        return t

    def constant(self, name, value):
        """A tensor fixed by the source model (a mask, a folded expression): its values are
        written into the model itself, so that the model needs no weights file to run."""
        value = np.ascontiguousarray(value, dtype=np.float32)
        if value.ndim == 0:
            value = value.reshape(1)
        init = {"kind": "values", "values": [_json_number(v) for v in value.reshape(-1)]}
        return self.parameter(name, value, init, trainable=False)

    def state(self, name, value):
        """A running average kept by placer's training graph (named NODE/running_mean)."""
        self.weights.append((name, np.ascontiguousarray(value, dtype=np.float32)))

    # ---- nodes ------------------------------------------------------------------------------

    def node(self, op, name, inputs, outputs, attrs=None):
        """Adds one op. outputs: (shape, batched[, dtype]) per output, batched as Tensor takes
        it; returns their Tensors.
        The first output takes the node's name, the others NAME:1, NAME:2, ..."""
        node_name = self._fresh(name, self._node_names)
        outs = []
        for i, spec in enumerate(outputs):
            shape, batched = spec[0], spec[1]
            dtype = spec[2] if len(spec) > 2 else "f32"
            outs.append(Tensor(self.tensor_name(node_name if i == 0 else
                                                "%s:%d" % (node_name, i)), shape, batched, dtype))
        entry = {"name": node_name, "op": op, "inputs": [t.name for t in inputs],
                 "outputs": [t.name for t in outs]}
        if attrs:
            entry["attrs"] = attrs
        self.nodes.append(entry)
        return outs

    def node1(self, op, name, inputs, shape, batched, attrs=None, dtype="f32"):
        return self.node(op, name, inputs, [(shape, batched, dtype)], attrs)[0]

    # ---- the model --------------------------------------------------------------------------

    def to_json(self):
        model = {"format": "placer-model", "version": 1, "name": self.name}
        if self.description:
            model["description"] = self.description
        model["batch_size"] = self.batch
        if self.batch_statistics:
            model["batch_statistics"] = self.batch_statistics
        model.update({"inputs": self.inputs, "parameters": self.parameters,
                      "nodes": self.nodes, "loss": self.loss, "optimizer": self.optimizer})
        return model

    def dumps(self):
        """One object per line in the long arrays, so that the file diffs and greps well."""
        model = self.to_json()
        parts = []
        for key, value in model.items():
            if isinstance(value, list) and value:
                items = ",\n    ".join(_json(v, "/%s/%d" % (key, k)) for k, v in enumerate(value))
                parts.append('  "%s": [\n    %s\n  ]' % (key, items))
            else:
                parts.append('  "%s": %s' % (key, _json(value, "/" + key)))
        return "{\n" + ",\n".join(parts) + "\n}\n"

    def prune(self):
        """Drops what the loss does not depend on (a second output's head, an unused branch);
        returns the names of the ops dropped."""
        producer = {}
        for i, n in enumerate(self.nodes):
            for o in n["outputs"]:
                producer[o] = i
        needed, keep, stack = set(), set(), [self.loss]
        while stack:
            name = stack.pop()
            if name in needed:
                continue
            needed.add(name)
            i = producer.get(name)
            if i is not None and i not in keep:
                keep.add(i)
                stack.extend(self.nodes[i]["inputs"])
        # A reshape that a later reshape went around is no news to the user.
        dropped = [n["name"] for i, n in enumerate(self.nodes)
                   if i not in keep and n["outputs"][0] not in self.reshaped_from
                   and n["outputs"][0] not in self.transposed_from]
        self.nodes = [n for i, n in enumerate(self.nodes) if i in keep]
        kept_nodes = {n["name"] for n in self.nodes}
        self.parameters = [p for p in self.parameters if p["name"] in needed]
        self.inputs = [t for t in self.inputs if t["name"] in needed]
        self.weights = [(k, v) for k, v in self.weights
                        if k in needed or k.split("/")[0] in kept_nodes]
        return dropped
