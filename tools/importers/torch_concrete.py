"""Tracing with real shapes, for the code torch.fx's symbolic trace cannot follow.

Every proxy carries the value its node has on the example batch, computed as the trace goes.
Sizes are therefore plain integers (`b, t = x.shape`, `x.size(-1)`, `len(x)`), so shape
arithmetic folds away instead of entering the graph; results are unpacked and iterated by
their real length; arguments of forward that --input does not give take their defaults
(`targets=None`); and a branch on a value that does not depend on the input or the
parameters takes its real way. A branch on one that does (or a read of it as a Python
number) is data-dependent control flow, which a placer model cannot express: it is
refused, naming the model's source line.

The graph is the one symbolic tracing would give (same leaves, same scopes, same node
names) with the sizes of the example batch written in: the importer maps it the same way.
"""

import linecache
import operator
import os
import sys
import traceback

import torch
import torch.fx
from torch.fx.node import map_aggregate

import command
from builder import ImportError_

# Asked of a tensor, these give its sizes: answered from the example value, not traced.
SIZE_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "layout"}
SIZE_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "element_size"}
# These give a tensor's values as Python's: folded where they are constants.
VALUE_METHODS = {"item", "tolist"}

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_IMPORTER_DIR = os.path.dirname(os.path.abspath(__file__))


class DataDependent(Exception):
    """A read of the input's values in Python: the message names the source line."""


class _TooFewInputs(Exception):
    pass


def _is_user_file(path):
    path = os.path.abspath(path)
    return not (path.startswith(_TORCH_DIR + os.sep) or path.startswith(_IMPORTER_DIR + os.sep)
                or "importlib" in path or path.startswith("<"))


def _place(frames):
    """'FILE:LINE (`code`)' of the innermost frame in the model's own code, or ''."""
    for filename, lineno in frames:
        if _is_user_file(filename):
            code = linecache.getline(filename, lineno).strip()
            shown = os.path.relpath(filename)
            where = "%s:%d" % (filename if shown.startswith("..") else shown, lineno)
            return "%s (`%s`)" % (where, code) if code else where
    return ""


def user_line():
    """Where the model's code is now: the innermost caller outside torch and the importer."""
    frame, frames = sys._getframe(1), []
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return _place(frames)


def failure_line(e):
    """Where in the model's code an exception was raised (its innermost user frame)."""
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
    return _place(reversed(frames))


class _Proxy(torch.fx.Proxy):
    """A proxy that answers size questions with the example value's sizes."""

    def __getattr__(self, k):
        if k in ("node", "tracer") or k.startswith("__"):
            raise AttributeError(k)
        value = self.tracer.values.get(self.node)
        if k in SIZE_ATTRIBUTES and torch.is_tensor(value):
            return getattr(value, k)
        return super().__getattr__(k)

    def __len__(self):
        return len(self.tracer.values[self.node])

    def __iter__(self):  # by the real length (torch.fx reads bytecode, which Python 3.11 moved)
        return self.tracer.iter(self)

    def __index__(self):
        return self.tracer.constant(self).__index__()

    def __int__(self):
        return int(self.tracer.constant(self))

    def __float__(self):
        return float(self.tracer.constant(self))

    def __setitem__(self, key, value):  # a mask filled in place (Swin's): a node of its own
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


def concrete_tracer(base):
    """A subclass of the tracer class `base` (which decides the leaves and the scopes) that
    carries example values: Tracer(examples).trace(module)."""

    class Tracer(base):
        def __init__(self, examples):
            super().__init__()
            self.examples = list(examples)
            self.values = {}        # fx node -> its value on the example batch
            self.dependent = set()  # nodes whose value depends on the input or a parameter
            self.evaluating = False

        def proxy(self, node):
            return _Proxy(node, self)

        def _value(self, a):
            if isinstance(a, torch.fx.Proxy):
                return self.values[a.node]
            return a

        # While a node's value is computed, the module calls and parameter reads that
        # torch.fx intercepts run as they would without it.
        def call_module(self, m, forward, args, kwargs):
            if self.evaluating:
                return forward(*args, **kwargs)
            return super().call_module(m, forward, args, kwargs)

        def getattr(self, attr, attr_val, parameter_proxy_cache):
            if self.evaluating:
                return attr_val
            return super().getattr(attr, attr_val, parameter_proxy_cache)

        def _evaluate(self, kind, target, args, kwargs):
            self.evaluating = True
            try:
                return self._run(kind, target, map_aggregate(args, self._value),
                                 map_aggregate(kwargs, self._value))
            finally:
                self.evaluating = False

        def _run(self, kind, target, args, kwargs):
            if kind == "call_function":
                return target(*args, **kwargs)
            if kind == "call_method":
                return getattr(args[0], target)(*args[1:], **kwargs)
            if kind == "call_module":
                return self.root.get_submodule(target)(*args, **kwargs)
            if kind == "get_attr":
                value = self.root
                for part in target.split("."):
                    value = getattr(value, part)
                return value
            raise ImportError_("cannot trace a %s node" % kind)

        def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                         proxy_factory_fn=None):
            if kind == "call_method" and target in SIZE_METHODS and \
                    torch.is_tensor(self._value(args[0])):
                return self._evaluate(kind, target, args, kwargs)
            if kind == "call_method" and target in VALUE_METHODS:
                self.constant(args[0])
                return self._evaluate(kind, target, args, kwargs)
            if kind == "placeholder" and not self.examples:
                if not args:
                    raise _TooFewInputs(target)
                return args[0]  # an argument --input does not give takes its default
            proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                         proxy_factory_fn)
            node = proxy.node
            if kind == "placeholder":
                self.values[node] = self.examples.pop(0)
                self.dependent.add(node)
                return proxy
            self.values[node] = self._evaluate(kind, target, args, kwargs)
            if (kind == "get_attr" and isinstance(self.values[node], torch.nn.Parameter)) or \
                    any(n in self.dependent for n in node.all_input_nodes):
                self.dependent.add(node)
            return proxy

        def iter(self, obj):
            return iter([obj[i] for i in range(len(self.values[obj.node]))])

        def to_bool(self, obj):
            return bool(self.constant(obj))

        def constant(self, obj):
            """The value of a proxy read as a Python value: only one that depends on neither
            the input nor a parameter, since the model's path would depend on it."""
            if obj.node in self.dependent:
                raise DataDependent(user_line())
            return self.values[obj.node]

    return Tracer


def trace(tracer_class, module, examples):
    """The module's graph traced on the example inputs (a list of tensors), its running
    averages and other state as they were before. Raises ImportError_ saying why not."""
    state = {k: v.clone() for k, v in module.state_dict().items()}
    try:
        with torch.no_grad():
            return concrete_tracer(tracer_class)(examples).trace(module)
    except DataDependent as e:
        raise ImportError_("data-dependent control flow at %s: the model reads values of "
                           "its input or parameters in Python (to branch, count or size), "
                           "which a placer model cannot express" % (str(e) or "a line unknown"))
    except _TooFewInputs as e:
        raise ImportError_("the model takes more inputs than --input gives (from %r on)"
                           % str(e))
    except ImportError_:
        raise
    except (Exception, SystemExit) as e:  # anything the model's code or torch raises
        where = failure_line(e)
        raise ImportError_("tracing with the example input failed%s: %s" % (
            " at " + where if where else "", command.describe(e)))
    finally:
        module.load_state_dict(state)
