"""Profiler ranges named after a model's modules, so that a PyTorch profiler trace of a
training step says how long each module took, forward and backward (tools/import-trace
reads them; docs/importers.md, "Op times from a profiler trace").

    from trace_ranges import ModuleRanges
    with ModuleRanges(model), torch.profiler.profile(...) as prof:
        ...  # training steps, prof.step() after each

Forward: a range "forward: PATH" around each call of the module at PATH (its name in
model.named_modules(), "" for the model itself), nested as the calls are. Backward: each
autograd node a module's forward made (the innermost module's, when modules nest; the
accumulation into its parameters' gradients included) runs inside a range "backward: PATH",
opened by a pre-hook on the node and closed by its hook, so that the range holds the node's
own work whatever order the autograd engine takes. The ranges are record_function ranges:
every profiler records them, with or without Kineto, on the CPU (and, with Kineto on a GPU,
as GPU annotations over the kernels launched inside them).
"""

import torch
from torch.autograd.profiler import record_function

FORWARD = "forward: "
BACKWARD = "backward: "


def _open(name):
    r = record_function(name)
    r.__enter__()
    return r


def _close(r):
    r.__exit__(None, None, None)


def _tensors(value):
    if torch.is_tensor(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _time_node(node, name):
    open_ranges = []

    def before(grad_outputs):
        open_ranges.append(_open(name))

    def after(grad_inputs, grad_outputs):
        if open_ranges:
            _close(open_ranges.pop())

    node.register_prehook(before)
    node.register_hook(after)


class ModuleRanges:
    """Adds the ranges to every module of `model` (and to any module given to watch())
    while in use as a context manager; the hooks are removed on leaving it."""

    def __init__(self, model):
        self.handles = []
        self.calls = []  # (the open forward range, the nodes that existed before the call)
        for path, module in model.named_modules():
            self.watch(module, path)

    def watch(self, module, path):
        """Ranges for one more module under its own name (a loss computed outside the
        model, named after the op that computes it)."""
        self.handles.append(module.register_forward_pre_hook(
            lambda m, inputs: self._enter(path, inputs)))
        self.handles.append(module.register_forward_hook(
            lambda m, inputs, output: self._exit(path, output)))

    def _enter(self, path, inputs):
        # The nodes of the inputs end the walk back from the outputs; kept alive, so that
        # their Python objects (compared by identity) stay the same.
        before = [t.grad_fn for t in _tensors(inputs) if t.grad_fn is not None]
        self.calls.append((_open(FORWARD + path), before))

    def _exit(self, path, output):
        forward_range, before = self.calls.pop()
        _close(forward_range)
        if torch.is_grad_enabled():
            self._claim(path, output, before)

    @staticmethod
    def _claim(path, output, before):
        """Times the nodes this call made that no inner module claimed."""
        stop = {id(n) for n in before}
        todo = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
        seen = {}  # id -> node, kept alive so that no other node takes its id
        while todo:
            node = todo.pop()
            if node is None or id(node) in stop or id(node) in seen:
                continue
            seen[id(node)] = node
            if "placer_module" not in node.metadata:
                node.metadata["placer_module"] = path
                _time_node(node, BACKWARD + path)
            todo.extend(n for n, _ in node.next_functions if n is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
        return False
