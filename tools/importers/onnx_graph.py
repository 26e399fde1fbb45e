"""ONNX graph -> placer model.

Values are placer Tensors (computed from the input) or numpy arrays (initializers,
Constant nodes, and everything folded from them: shapes are static once the batch is
fixed). Ops are named after the module path in the exporter's node names
("/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1"). torch.nn.MultiheadAttention, which
torch.onnx exports with the batch merged with its heads, is recognised by its scope and its
in_proj_weight and mapped as a whole.
"""

import numpy as np
import onnx
from onnx import numpy_helper

import emit
import onnx_fold
from builder import ImportError_, Tensor, Unsupported


# What the attention scope needs beyond constant folding, to learn its shapes.
SHAPE_ONLY = {
    "MatMul": lambda a, i: [np.matmul(i[0], i[1])],
    "Softmax": lambda a, i: [i[0]],
    "Dropout": lambda a, i: [i[0], None],
    "Gemm": lambda a, i: [i[0] @ (i[1].T if a.get("transB") else i[1])],
}


class Refused(Exception):
    """An attribute value placer cannot express; the text names it."""


def module_path(node_name):
    """"/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1"; "" when the name has no scope."""
    parts = [p for p in node_name.split("/") if p][:-1]
    path, last = "", ""
    for p in parts:  # a part is named relative to the one before: layer1, layer1.0, conv1
        if last and p.startswith(last + "."):
            path = path[:len(path) - len(last)] + p
        else:
            path = path + "." + p if path else p
        last = p
    return path


def attributes(node):
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, onnx.TensorProto):
            v = tensor_array(v, "%s: attribute %r" % (node.name or node.op_type, a.name))
        out[a.name] = v
    return out


def tensor_array(tensor, where):
    """A TensorProto's values; a tensor whose data does not match its shape is bad input."""
    try:
        return numpy_helper.to_array(tensor)
    except Exception as e:  # numpy_helper raises what numpy raises: ValueError, TypeError, ...
        raise ImportError_("%s: its data does not match its shape %s and type: %s"
                           % (where, list(tensor.dims), e))


class Importer:
    def __init__(self, builder, model):
        self.b = builder
        self.graph = model.graph
        self.unsupported = Unsupported()
        self.values = {}    # ONNX value name -> Tensor | numpy array | None (poisoned)
        self.param_tensors = {}
        self.initializers = {i.name: tensor_array(i, "initializer %r" % i.name)
                             for i in self.graph.initializer}
        self.consumers = {}
        for n in self.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.scope_nodes = {}
        for n in self.graph.node:
            self.scope_nodes.setdefault(module_path(n.name), []).append(n)

    # ---- values -----------------------------------------------------------------------------

    def parameter(self, name, init=None, trainable=True):
        t = self.param_tensors.get(name)
        if t is None:
            value = self.initializers[name].astype(np.float32)
            t = self.b.parameter(name, value, init or _like_init(value, len(self.b.parameters) + 1),
                                 trainable)
            self.param_tensors[name] = t
        return t

    def tensor(self, value_name, where, like=None, role="weight"):
        """An input as a Tensor: initializers become parameters (constants when they come
        from the exporter's own arithmetic, named onnx::...), folded arrays constants."""
        v = self.values.get(value_name)
        if isinstance(v, Tensor):
            return v
        if value_name in self.initializers and (role == "weight" or "::" not in value_name):
            return self.parameter(value_name)
        if isinstance(v, np.ndarray):
            v = v.astype(np.float32)
            if like is not None:
                while v.ndim > emit.after_batch(like) and v.shape[0] == 1:
                    v = v.reshape(v.shape[1:])
            return self.b.constant(where + ".const", v)
        raise ImportError_("%s: input %r is not available" % (where, value_name))

    # ---- the walk ---------------------------------------------------------------------------

    def run(self, inputs):
        for name, t in inputs.items():
            self.values[name] = t
        for name, value in self.initializers.items():
            self.values.setdefault(name, value)
        from onnx_ops import HANDLERS
        done = set()
        for n in self.graph.node:
            if id(n) in done:
                continue
            path = module_path(n.name)
            if path and path + ".in_proj_weight" in self.initializers:
                group = self.scope_nodes[path]
                done.update(id(g) for g in group)
                self._attention(path, group)
                continue
            self._node(n, HANDLERS)
        outputs = [self.values.get(o.name) for o in self.graph.output]
        return outputs

    def is_parameter(self, name):
        """A float initializer named by its model (not onnx::...): trained, so never folded."""
        v = self.initializers.get(name)
        return v is not None and v.dtype.kind == "f" and "::" not in name

    def _node(self, n, handlers):
        ins = [self.parameter(i) if self.is_parameter(i) else self.values.get(i) if i else None
               for i in n.input]
        attrs = attributes(n)
        where = self.name_of(n)
        if any(i and i in self.values and self.values[i] is None for i in n.input):
            # Downstream of an unsupported operator: only whether this one is supported counts.
            if n.op_type not in handlers and n.op_type not in onnx_fold.FOLD and \
                    n.op_type not in ("Constant", "Shape", "Split"):
                self.unsupported.add(n.op_type, where)
            self._set(n, [None] * len(n.output))
            return
        if n.op_type == "Constant":
            self._set(n, [attrs.get("value") if "value" in attrs else
                          np.asarray(attrs.get("value_float", attrs.get("value_int")))])
            return
        if n.op_type == "Shape" and isinstance(ins[0], Tensor):
            self._set(n, [np.asarray(ins[0].shape, dtype=np.int64)])
            return
        if all(v is None or isinstance(v, np.ndarray) for v in ins):
            try:
                folded = onnx_fold.fold(n.op_type, attrs, ins, len(n.output))
            except Exception as e:  # constants that do not fit (a batch fixed at export)
                what = "%s (folding its constants: %s)" % (n.op_type, str(e).strip())
                self.unsupported.add(what, where)
                self._set(n, [None] * len(n.output))
                return
            if folded is not None:
                self._set(n, folded)
                return
        handler = handlers.get(n.op_type)
        if any(type(v).__name__ == "Padded" for v in ins) and \
                n.op_type not in ("Conv", "AveragePool", "MaxPool"):
            handler = None  # a Pad only a pooling or convolution can take
        if handler is None:
            self.unsupported.add(n.op_type, where)
            self._set(n, [None] * len(n.output))
            return
        try:
            outs = handler(self, n, where, ins, attrs)
        except Refused as e:
            self.unsupported.add("%s (%s)" % (n.op_type, e), where)
            outs = [None] * len(n.output)
        except ImportError_ as e:  # a use placer cannot express (it moves the batch, ...)
            self.unsupported.add("%s (%s)" % (n.op_type, str(e).split(": ", 1)[-1]), where)
            outs = [None] * len(n.output)
        self._set(n, outs)

    def _set(self, n, outs):
        for name, v in zip(n.output, outs):
            if name:
                self.values[name] = v

    def name_of(self, n):
        path = module_path(n.name)
        if not path:
            base = (n.name or n.output[0] or n.op_type).strip("/").replace("/", ".")
            return n.op_type.lower() + base[len(n.op_type):] if base.startswith(n.op_type) \
                else base
        computing = [m for m in self.scope_nodes[path] if m.op_type not in ("Constant", "Shape")]
        return path if len(computing) == 1 else "%s.%s" % (path, n.op_type.lower())

    # ---- torch.nn.MultiheadAttention ----------------------------------------------------------

    def _attention(self, path, group):
        produced = {o for g in group for o in g.output}
        outside_in = [i for g in group for i in g.input
                      if i and i not in produced and isinstance(self.values.get(i), Tensor)]
        if not outside_in or any(i != outside_in[0] for i in outside_in):
            self.unsupported.add("attention other than self-attention", path)
            return self._poison(group, produced)
        x = self.values[outside_in[0]]
        if x.rank != 3 or x.batch_axis not in (0, 1):
            self.unsupported.add("attention on a %s input" % list(x.shape), path)
            return self._poison(group, produced)
        leaving = [o for o in produced if o in {gi.name for gi in self.graph.output} or any(
            module_path(c.name) != path for c in self.consumers.get(o, []))]
        shapes = self._scope_shapes(group, outside_in[0], x)
        heads, rate, mask = None, 0.0, None
        e = x.shape[2]
        for g in group:
            if g.op_type == "Reshape" and shapes.get(g.output[0]) is not None:
                out = shapes[g.output[0]].shape  # [T, N·heads, head size] inside
                n = x.shape[x.batch_axis]
                if len(out) == 3 and out[1] % n == 0 and out[2] * (out[1] // n) == e and \
                        out[2] < e:
                    heads = out[1] // n
            if g.op_type == "Dropout":
                ratio = shapes.get(g.input[1]) if len(g.input) > 1 and g.input[1] else None
                rate = float(ratio) if ratio is not None else \
                    float(attributes(g).get("ratio", 0.5))
            if g.op_type == "Add":
                for i in g.input:
                    v = self.values.get(i)
                    if isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[-1] == v.shape[-2] \
                            and i not in self.initializers:
                        mask = np.maximum(v.astype(np.float32), -1e9)
        if heads is None or len(leaving) != 1:
            self.unsupported.add("attention the importer cannot read (heads or outputs)", path)
            return self._poison(group, produced)
        def p(suffix):
            name = path + suffix
            return self.parameter(name) if name in self.initializers else None
        mask_t = self.b.constant(path + ".mask", mask.reshape(mask.shape[-2:])) \
            if mask is not None else None
        y = emit.self_attention(self.b, path, x, p(".in_proj_weight"), p(".in_proj_bias"),
                                p(".out_proj.weight"), p(".out_proj.bias"), heads, rate, mask_t)
        self.values[leaving[0]] = y

    def _scope_shapes(self, group, x_name, x):
        """Runs the scope in numpy on zeros shaped like x, for the shapes inside it."""
        env = {k: v for k, v in self.values.items() if isinstance(v, np.ndarray)}
        env[x_name] = np.zeros(x.shape, np.float32)
        for g in group:
            ins = [env.get(i) if i else None for i in g.input]
            attrs = attributes(g)
            try:
                if g.op_type == "Constant":
                    outs = [attrs.get("value")]
                elif g.op_type == "Shape":
                    outs = [np.asarray(ins[0].shape, np.int64)]
                elif g.op_type in SHAPE_ONLY:
                    outs = SHAPE_ONLY[g.op_type](attrs, ins)
                else:
                    outs = onnx_fold.fold(g.op_type, attrs, ins, len(g.output)) or []
            except Exception:
                outs = []
            env.update(zip(g.output, outs))
        return env

    def _poison(self, group, produced):
        for o in produced:
            self.values[o] = None


def _like_init(value, seed):
    v = value.astype(np.float64)
    if v.size > 1 and v.std() > 0:
        return {"kind": "normal", "mean": float(v.mean()), "std": float(v.std()), "seed": seed}
    c = float(v.reshape(-1)[0]) if v.size else 0.0
    return {"kind": "zeros"} if c == 0 else {"kind": "constant", "value": c}
