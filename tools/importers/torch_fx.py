"""PyTorch module -> placer model, through torch.fx.

The module is traced symbolically, or where torch.fx cannot follow its code (it unpacks
sizes, branches on them) with the example batch's real shapes (torch_concrete.py); the
modules placer maps whole (convolutions, linear layers, norms, attention, ...) stay leaves,
everything else is traced through. The traced
graph is then run once on an example batch to learn every value's shape. Values that do
not depend on the input (sizes, masks sliced from buffers, position ranges) are folded into
constants; the rest becomes placer ops, named after the module or function they come from.
"""

import contextlib

import numpy as np
import torch
import torch.fx
import torch.nn as nn

import command
import emit
import torch_concrete
import torch_modules
import torch_recurrent
from builder import ImportError_, Tensor, Unsupported


class _Tracer(torch.fx.Tracer):
    """Keeps as leaves the modules placer maps whole, and any other torch.nn module (so that
    it is reported as unsupported instead of traced into its internals). Every node
    remembers the module it was made in (meta "scope"), which names the ops of functions.
    A module made inside forward (`nn.Softmax(dim=-1)(scores)`, as BERT's code has it) is
    no submodule: it is traced through, its functions in the scope of the module that made
    it."""

    scope = ""

    def call_module(self, m, forward, args, kwargs):
        try:
            path = self.path_of_module(m)
        except NameError:  # not installed as a submodule
            return forward(*args, **kwargs)
        outer = self.scope
        self.scope = path
        try:
            result = super().call_module(m, forward, args, kwargs)
        finally:
            self.scope = outer
        return torch_recurrent.unpackable(m, result)

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["scope"] = self.scope
        return node

    def is_leaf_module(self, m, qualified_name):
        if torch_modules.handler_for(m) is not None:
            return True
        if isinstance(m, (nn.Sequential, nn.ModuleList, nn.ModuleDict, nn.TransformerEncoder,
                          nn.TransformerDecoder, nn.Transformer)):
            return False
        return type(m).__module__.startswith("torch.nn")


def _restore(module, state):
    """Puts back the module's state where running it changed it (batch norm's running
    averages), and there only: a constant the trace kept may be an expanded view
    (`torch.arange(t).expand(b, t)`), which cannot be written into."""
    with torch.no_grad():
        for key, value in module.state_dict().items():
            if not torch.equal(value, state[key]):
                value.copy_(state[key])


class _Recorder(torch.fx.Interpreter):
    """Runs the traced graph and keeps every node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        value = super().run_node(n)
        self.values[n] = value
        return value


class Const:
    """A value that does not depend on the input: a Python value or a tensor."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Poisoned:
    """The result of an unsupported operator: mapping goes on to find the others."""


def trace(module, examples):
    """Symbolically where torch.fx can, else with real shapes on the example inputs
    (torch_concrete.py); through the functions torchvision keeps whole for torch.fx."""
    from torch_ops import FUNCTIONS  # the handlers need this module's classes
    with _unwrapped("torchvision.", FUNCTIONS):
        return _trace(module, examples)


@contextlib.contextmanager
def _unwrapped(package, mapped):
    """torch.fx.wrap makes a function a leaf of every trace (torchvision's Swin keeps its
    attention and padding so): the package's are traced through instead, op by op, except
    those mapped whole (stochastic depth)."""
    patched = torch.fx._symbolic_trace._wrapped_fns_to_patch
    kept = list(patched)
    patched[:] = [(g, fn) for g, fn in kept if g.get(fn) in mapped or
                  not g.get("__name__", "").startswith(package)]
    try:
        yield
    finally:
        patched[:] = kept


def _trace(module, examples):
    try:
        graph = _Tracer().trace(module)
    except (Exception, SystemExit):  # fx raises many kinds; all mean: it needs real shapes
        return torch.fx.GraphModule(module, torch_concrete.trace(_Tracer, module, examples))
    extra = [n for n in graph.nodes if n.op == "placeholder"][len(examples):]
    if extra and all(n.args for n in extra):  # optional arguments: they take their defaults
        graph = torch_concrete.trace(_Tracer, module, examples)
    return torch.fx.GraphModule(module, graph)


class Importer:
    def __init__(self, builder, gm, examples, inputs):
        self.b = builder
        self.gm = gm
        self.examples = examples
        self.inputs = list(inputs)   # placer Tensors for the placeholders, in order
        self.all_inputs = tuple(inputs)  # the same, kept whole
        self.current_value = None    # the node being mapped: its value on the example batch
        self.current_node = None     # and its fx node
        self.unsupported = Unsupported()
        self.env = {}          # fx node -> Tensor | Const | Poisoned | tuple/list of those
        self.values = {}       # fx node -> the value it had on the example batch
        self.modules = dict(gm.named_modules())
        self.params = dict(gm.named_parameters())
        self.buffers = dict(gm.named_buffers())
        self.param_tensors = {}  # parameter name -> Tensor, so a shared weight is one tensor
        self.shared = _shared_names(gm)  # a tied weight's other names -> its first

    # ---- helpers used by the op handlers (torch_ops.py, torch_modules.py) ------------------

    def value(self, node):
        return self.values[node]

    def parameter(self, qualified_name, init, trainable=True):
        """The placer parameter for a module's parameter or buffer, made once (a weight
        tied to another, such as a GPT's head and embedding, is the same one)."""
        qualified_name = self.shared.get(qualified_name, qualified_name)
        t = self.param_tensors.get(qualified_name)
        if t is None:
            source = self.params.get(qualified_name)
            if source is None:
                source = self.buffers[qualified_name]
                trainable = False
            if qualified_name in self.shared.values():  # tied: no one layer's default holds
                init = like_init(source, len(self.b.parameters) + 1)
            t = self.b.parameter(qualified_name, source.detach().cpu().numpy(), init, trainable)
            self.param_tensors[qualified_name] = t
        return t

    def constant(self, name, value, like=None):
        """A constant tensor, shaped to meet `like` (emit.constant_for)."""
        value = np.asarray(value.detach().cpu().numpy() if torch.is_tensor(value) else value,
                           dtype=np.float32)
        return emit.constant_for(self.b, name, value, like)

    def tensor_of(self, arg, name, like=None):
        """An argument as a placer Tensor (a constant made on the spot when it is one)."""
        if isinstance(arg, Tensor):
            return arg
        if isinstance(arg, Const):
            v = arg.value
            if isinstance(v, (int, float, bool)) or torch.is_tensor(v):
                return self.constant(name + ".const", v if torch.is_tensor(v) else [float(v)],
                                     like)
        raise ImportError_("%s: expected a tensor, got %r" % (name, arg))

    # ---- the walk ---------------------------------------------------------------------------

    def next_input(self, node):
        if not self.inputs:
            raise ImportError_("the model takes more inputs than --input gives (from %r on)"
                               % node.target)
        return self.inputs.pop(0)

    def arg_value(self, arg):
        """An optional argument (a mask, ...): None when absent, else its constant value."""
        v = val(arg)
        if isinstance(v, (Tensor, Poisoned)):
            from torch_modules import Refused
            raise Refused("a mask computed from the input")
        return v

    def not_mapped(self, what):
        from torch_ops import NotMapped
        return NotMapped(what)

    def run(self):
        # Running the model changes batch norm's running averages: keep the source's.
        state = {k: v.clone() for k, v in self.gm.state_dict().items()}
        rec = _Recorder(self.gm)
        try:
            with torch.no_grad():
                rec.run(*self.examples)
        except Exception as e:
            raise ImportError_("running the model on an example batch failed: %s"
                               % command.describe(e))
        _restore(self.gm, state)
        self.values = rec.values
        from torch_ops import map_node  # the handlers need this module's classes
        output = None
        for n in self.gm.graph.nodes:
            if n.op == "output":
                output = self.env_of(n.args[0])
                continue
            self.env[n] = map_node(self, n)
        return output

    def env_of(self, arg):
        """fx arguments (nodes, nested tuples, plain values) as mapped values."""
        if isinstance(arg, torch.fx.Node):
            return self.env[arg]
        if isinstance(arg, (tuple, list)):
            return type(arg)(self.env_of(a) for a in arg)
        if isinstance(arg, dict):
            return {k: self.env_of(v) for k, v in arg.items()}
        if isinstance(arg, slice):
            return Const(slice(*(val(self.env_of(a)) for a in (arg.start, arg.stop, arg.step))))
        return Const(arg)


def _shared_names(module):
    """Every other name of a parameter or buffer that several modules hold -> its first name
    (the one named_parameters and named_buffers give)."""
    first = {id(t): name for name, t in list(module.named_parameters()) +
             list(module.named_buffers())}
    shared = {}
    for prefix, m in module.named_modules(remove_duplicate=False):
        for key, t in list(m._parameters.items()) + list(m._buffers.items()):
            name = prefix + "." + key if prefix else key
            if t is not None and first.get(id(t), name) != name:
                shared[name] = first[id(t)]
    return shared


def val(x):
    """A mapped argument as the plain value it stands for (Consts unwrapped, deeply)."""
    if isinstance(x, Const):
        return x.value
    if isinstance(x, (tuple, list)):
        return type(x)(val(a) for a in x)
    return x


def is_const(x):
    if isinstance(x, Const):
        return True
    if isinstance(x, (tuple, list)):
        return all(is_const(a) for a in x)
    if isinstance(x, dict):
        return all(is_const(a) for a in x.values())
    return not isinstance(x, (Tensor, Poisoned))


def is_poisoned(x):
    if isinstance(x, Poisoned):
        return True
    if isinstance(x, (tuple, list)):
        return any(is_poisoned(a) for a in x)
    if isinstance(x, dict):
        return any(is_poisoned(a) for a in x.values())
    return False


def example_inputs(module, specs, batch):
    """Random inputs of the given per-sample shapes and dtypes (ids below 2, which every
    embedding accepts; a caller with a known vocabulary gives its own)."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for shape, dtype in specs:
        if dtype == "i32":
            out.append(torch.randint(0, 2, (batch,) + tuple(shape), generator=gen))
        else:
            out.append(torch.randn((batch,) + tuple(shape), generator=gen))
    return out


def like_init(value, seed):
    """A fresh-start init resembling a tensor the model came with."""
    v = value.detach().cpu().double()
    if v.numel() > 1 and float(v.std()) > 0:
        return {"kind": "normal", "mean": float(v.mean()), "std": float(v.std()), "seed": seed}
    c = float(v.reshape(-1)[0]) if v.numel() else 0.0
    return {"kind": "zeros"} if c == 0 else {"kind": "constant", "value": c}


