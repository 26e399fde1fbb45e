"""tools/import-torch: a PyTorch module -> a placer model (and its weights)."""

import argparse
import ast
import importlib.machinery
import importlib.util
import os
import sys

import command
import limits
from builder import Builder, ImportError_

USAGE_EXAMPLES = """examples:
  tools/import-torch torchvision:resnet18 --input 3,224,224 --batch 32 --classes 10 \\
      -o resnet18.json --weights resnet18.weights
  tools/import-torch mymodels.py:build_model --input 64 --input-dtype i32 --batch 16 -o lm.json
"""


def parse_args(argv):
    p = command.ArgumentParser(
        prog="import-torch", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Traces a PyTorch module with torch.fx (with the example batch's real "
                    "shapes where its symbolic trace cannot follow the code) and writes it as "
                    "a placer training model: the body as traced, a loss and an optimiser.",
        epilog=USAGE_EXAMPLES + "\n" + command.EXIT_STATUS)
    add_source_options(p)
    command.add_common_options(p)
    args = p.parse_args(argv)
    command.check_common_options(p, args)
    check_source_options(p, args)
    return args


def add_source_options(p):
    """The module and its example batch's inputs (tools/profile-torch takes them too)."""
    p.add_argument("source", help="torchvision:NAME (video.NAME for its video models), or "
                                   "FILE.py:CALLABLE returning a module")
    p.add_argument("--input", action="append", required=True, metavar="D1,D2,...",
                   help="one input's shape per sample, at most 5 dimensions of 1 .. 2^31 - 1 "
                        "(repeat for several inputs; '' for a scalar per sample)")
    p.add_argument("--input-dtype", action="append", choices=["f32", "i32"],
                   help="each input's dtype, in order (default f32)")
    p.add_argument("--batch-axis", action="append", type=int, metavar="AXIS",
                   help="each input's batch axis, in order (default 0; 1 for sequence-first "
                        "models: [T, batch, ...])")
    p.add_argument("--classes", type=int, help="torchvision: the classifier's class count")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument for the builder (a Python literal), repeatable")
    p.add_argument("--vocab", type=int, default=2,
                   help="example token ids for i32 inputs are drawn below this, 1 .. 2^31 "
                        "(default 2)")


def check_source_options(p, args):
    """Sets args.shapes, dtypes and kwargs; args.batch must be checked already."""
    kind, sep, name = args.source.partition(":")
    if not sep or not kind or not name:
        p.error("%s: give torchvision:NAME or FILE.py:CALLABLE" % args.source)
    args.shapes = [input_shape(p, s) for s in args.input]
    dtypes = args.input_dtype or []
    if len(dtypes) > len(args.shapes):
        p.error("%d --input-dtype for %d --input" % (len(dtypes), len(args.shapes)))
    args.dtypes = dtypes + ["f32"] * (len(args.shapes) - len(dtypes))
    axes = args.batch_axis or []
    if len(axes) > len(args.shapes):
        p.error("%d --batch-axis for %d --input" % (len(axes), len(args.shapes)))
    args.batch_axes = axes + [0] * (len(args.shapes) - len(axes))
    for text, shape, axis in zip(args.input, args.shapes, args.batch_axes):
        if not 0 <= axis <= len(shape):
            p.error("--batch-axis %d: --input %s has %d ax%s per sample, so it must be in "
                    "0 .. %d" % (axis, text, len(shape), "is" if len(shape) == 1 else "es",
                                 len(shape)))
    if not 1 <= args.vocab <= limits.MAX_ELEMENTS:
        p.error("--vocab %d: token ids are i32, so it must be in 1 .. 2^31" % args.vocab)
    check_example_batch(args)
    args.kwargs = parse_builder_args(p, args.arg)
    if args.classes is not None and not 1 <= args.classes <= limits.MAX_DIM:
        p.error("--classes %d: must be in 1 .. %d" % (args.classes, limits.MAX_DIM))


def check_example_batch(args):
    """The example batch is made before PyTorch runs the model: its inputs must fit first.
    PyTorch holds integer ids in 8 bytes."""
    held = sum(limits.check_input("--input %s" % text, args.batch, shape,
                                  8 if dtype == "i32" else 4)
               for text, shape, dtype in zip(args.input, args.shapes, args.dtypes))
    limits.check_memory("--batch %d" % args.batch, held)


def parse_builder_args(parser, texts):
    """--arg KEY=VALUE options as keyword arguments (values read as Python literals, else
    kept as strings)."""
    kwargs = {}
    for a in texts:
        key, sep, value = a.partition("=")
        if not sep or not key.isidentifier():
            parser.error("--arg takes KEY=VALUE, not %r" % a)
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return kwargs


def input_shape(parser, text):
    """--input's "3,224,224" as a tuple; "" is a scalar per sample."""
    if not text.strip():
        return ()
    try:
        return tuple(int(d) for d in text.split(","))
    except ValueError:
        parser.error("--input %s: give whole numbers separated by commas, like 3,224,224"
                     % text)


def load_module(source, kwargs, classes):
    """Returns (module, model name, the file it came from or None)."""
    kind, _, name = source.partition(":")
    if kind == "torchvision":
        model, path = _torchvision_model(name, kwargs, classes), None
    else:
        model, path = _file_model(kind, name, kwargs), kind
    import torch
    if not isinstance(model, torch.nn.Module):
        raise ImportError_("%s returned %s, not a torch.nn.Module"
                           % (source, type(model).__name__))
    return model, name, path


def _torchvision_model(name, kwargs, classes):
    """NAME from torchvision.models, or PACKAGE.NAME from one of its packages
    (video.r3d_18)."""
    import types
    import torchvision
    package, _, short = name.rpartition(".")
    models = getattr(torchvision.models, package, None) if package else torchvision.models
    builder = getattr(models, short, None) if isinstance(models, types.ModuleType) else None
    if builder is None or not callable(builder) or isinstance(builder, types.ModuleType) or \
            short.startswith("_") or package.startswith("_"):
        raise command.UsageError("torchvision has no model %r" % name)
    if classes is not None:
        kwargs = dict(kwargs, num_classes=classes)
    try:
        return builder(weights=None, **kwargs)
    except TypeError as e:
        raise command.UsageError("torchvision:%s: %s" % (name, e))
    except Exception as e:  # an --arg or --classes the model cannot take
        raise ImportError_("torchvision:%s: %s" % (name, command.describe(e)))


def _file_model(path, name, kwargs):
    """Runs the file (any name: it is read as Python source) and calls its `name`."""
    if not os.path.lexists(path):
        raise command.UsageError("%s: no such file" % path)
    if not os.path.isfile(path):
        raise command.UsageError("%s: not a regular file" % path)
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_loader(
        module_name, importlib.machinery.SourceFileLoader(module_name, path))
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the file's own errors, and its exit() too
        raise ImportError_("%s: cannot load: %s" % (path, command.describe(e)))
    build = getattr(module, name, None)
    if not callable(build):
        raise command.UsageError("%s has no callable %r" % (path, name))
    try:
        return build(**kwargs)
    except (Exception, SystemExit) as e:
        raise ImportError_("%s:%s() failed: %s" % (path, name, command.describe(e)))


def example_batch(args, torch):
    """One random batch of --input's shapes, the batch on each input's --batch-axis: what
    tracing sees (and tools/profile-torch runs)."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for shape, dtype, axis in zip(args.shapes, args.dtypes, args.batch_axes):
        whole = shape[:axis] + (args.batch,) + shape[axis:]
        if dtype == "i32":
            out.append(torch.randint(0, args.vocab, whole, generator=gen))
        else:
            out.append(torch.randn(whole, generator=gen))
    return out


def main():
    args = parse_args(sys.argv[1:])
    command.check_outputs([args.output, args.weights], [args.source.partition(":")[0]])
    import torch
    import torch_fx
    torch.manual_seed(0)
    module, name, _ = load_module(args.source, args.kwargs, args.classes)
    module.train()
    examples = example_batch(args, torch)
    gm = torch_fx.trace(module, examples)
    b = Builder(args.name or name, args.batch,
                "%s, imported by tools/import-torch" % args.source)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args.shapes):
        raise command.UsageError("the model takes %d input%s (%s); --input gives %d" % (
            len(placeholders), "" if len(placeholders) == 1 else "s",
            ", ".join(n.target for n in placeholders), len(args.shapes)))
    inputs = [b.input(n.target, shape, dtype, "data", axis)
              for n, shape, dtype, axis in zip(placeholders, args.shapes, args.dtypes,
                                                args.batch_axes)]
    imp = torch_fx.Importer(b, gm, examples, inputs)
    out = imp.run()
    if imp.unsupported:
        raise ImportError_(imp.unsupported.message(args.source))
    while isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch_fx.Tensor):
        raise ImportError_("the model's output does not depend on its input")
    command.attach_loss(b, out, args)
    command.finish(b, args, "import-torch", b.prune())


if __name__ == "__main__":
    command.run(main, "import-torch")
