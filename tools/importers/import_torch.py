"""tools/import-torch: a PyTorch module -> a placer model (and its weights)."""

import argparse
import ast
import importlib.util
import os
import sys

import command
from builder import Builder, ImportError_

USAGE_EXAMPLES = """examples:
  tools/import-torch torchvision:resnet18 --input 3,224,224 --batch 32 --classes 10 \\
      -o resnet18.json --weights resnet18.weights
  tools/import-torch mymodels.py:build_model --input 64 --input-dtype i32 --batch 16 -o lm.json
"""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="import-torch", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Traces a PyTorch module with torch.fx and writes it as a placer training "
                    "model: the body as traced, a loss and an optimiser.",
        epilog=USAGE_EXAMPLES)
    p.add_argument("source", help="torchvision:NAME, or FILE.py:CALLABLE returning a module")
    p.add_argument("--input", action="append", required=True, metavar="D1,D2,...",
                   help="one input's shape per sample (repeat for several inputs; '' for a "
                        "scalar per sample)")
    p.add_argument("--input-dtype", action="append", choices=["f32", "i32"],
                   help="each input's dtype, in order (default f32)")
    p.add_argument("--classes", type=int, help="torchvision: the classifier's class count")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument for the builder (a Python literal), repeatable")
    p.add_argument("--vocab", type=int, default=2,
                   help="example token ids for i32 inputs are drawn below this (default 2)")
    command.add_common_options(p)
    args = p.parse_args(argv)
    command.check_common_options(p, args)
    try:
        args.shapes = [tuple(int(d) for d in s.split(",")) if s.strip() else ()
                       for s in args.input]
    except ValueError:
        p.error("--input takes comma-separated dimensions, like 3,224,224")
    if any(d < 1 for s in args.shapes for d in s):
        p.error("--input dimensions must be positive")
    dtypes = args.input_dtype or []
    if len(dtypes) > len(args.shapes):
        p.error("%d --input-dtype for %d --input" % (len(dtypes), len(args.shapes)))
    args.dtypes = dtypes + ["f32"] * (len(args.shapes) - len(dtypes))
    args.kwargs = {}
    for a in args.arg:
        key, sep, value = a.partition("=")
        if not sep or not key.isidentifier():
            p.error("--arg takes KEY=VALUE, not %r" % a)
        try:
            args.kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            args.kwargs[key] = value
    if args.classes is not None and args.classes < 1:
        p.error("--classes must be at least 1")
    return args


def load_module(source, kwargs, classes):
    """Returns (module, model name, the file it came from or None)."""
    kind, sep, name = source.partition(":")
    if not sep or not name:
        raise command.UsageError("%s: give torchvision:NAME or FILE.py:CALLABLE" % source)
    if kind == "torchvision":
        import torchvision
        builder = getattr(torchvision.models, name, None)
        if builder is None or not callable(builder) or name.startswith("_"):
            raise command.UsageError("torchvision has no model %r" % name)
        if classes is not None:
            kwargs = dict(kwargs, num_classes=classes)
        try:
            return builder(weights=None, **kwargs), name, None
        except TypeError as e:
            raise command.UsageError("torchvision:%s: %s" % (name, e))
    path = kind
    if not os.path.isfile(path):
        raise command.UsageError("%s: no such file" % path)
    spec = importlib.util.spec_from_file_location(
        os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ImportError_("%s: cannot load: %s: %s" % (path, type(e).__name__, e))
    build = getattr(module, name, None)
    if not callable(build):
        raise command.UsageError("%s has no callable %r" % (path, name))
    try:
        model = build(**kwargs)
    except Exception as e:
        raise ImportError_("%s:%s() failed: %s: %s" % (path, name, type(e).__name__, e))
    import torch
    if not isinstance(model, torch.nn.Module):
        raise ImportError_("%s:%s() returned %s, not a torch.nn.Module"
                           % (path, name, type(model).__name__))
    return model, name, path


def main():
    args = parse_args(sys.argv[1:])
    command.check_outputs([args.output, args.weights], [args.source.partition(":")[0]])
    import torch
    import torch_fx
    torch.manual_seed(0)
    module, name, _ = load_module(args.source, args.kwargs, args.classes)
    module.train()
    gm = torch_fx.trace(module)
    b = Builder(args.name or name, args.batch,
                "%s, imported by tools/import-torch" % args.source)
    inputs = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args.shapes):
        raise command.UsageError("the model takes %d input%s (%s); --input gives %d" % (
            len(placeholders), "" if len(placeholders) == 1 else "s",
            ", ".join(n.target for n in placeholders), len(args.shapes)))
    examples = []
    gen = torch.Generator().manual_seed(0)
    for n, shape, dtype in zip(placeholders, args.shapes, args.dtypes):
        inputs.append(b.input(n.target, shape, dtype, "data"))
        if dtype == "i32":
            examples.append(torch.randint(0, args.vocab, (args.batch,) + shape, generator=gen))
        else:
            examples.append(torch.randn((args.batch,) + shape, generator=gen))
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
