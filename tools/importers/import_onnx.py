"""tools/import-onnx: an ONNX model -> a placer model (and its weights)."""

import argparse
import os
import sys

import command
import limits
from builder import Builder, ImportError_

ONNX_DTYPES = {1: "f32", 6: "i32", 7: "i32"}  # FLOAT, INT32, INT64 (ids fit in i32)


def parse_args(argv):
    p = command.ArgumentParser(
        prog="import-onnx",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Reads an ONNX model and writes it as a placer training model: its graph, "
                    "a loss and an optimiser. The batch is axis 0 of every graph input, or\n"
                    "--batch-axis.\n"
                    "External data is read only from regular files in the model's folder, "
                    "reached\nwithout symbolic links, within their sizes.",
        epilog="example: tools/import-onnx model.onnx --batch 32 -o model.json "
               "--weights model.weights\n\n" + command.EXIT_STATUS)
    p.add_argument("source", metavar="MODEL.onnx")
    p.add_argument("--batch-axis", type=int, default=0, metavar="AXIS",
                   help="the axis of every graph input that holds the batch (default 0; 1 for "
                        "sequence-first models)")
    command.add_common_options(p)
    args = p.parse_args(argv)
    if args.batch_axis < 0:
        p.error("--batch-axis %d: must be 0 or more" % args.batch_axis)
    command.check_common_options(p, args)
    return args


def graph_inputs(model, batch, batch_axis):
    """(name, per-sample shape, dtype) of each input that is not an initializer, each
    within placer's limits at `batch`, all together within the machine's memory."""
    init = {i.name for i in model.graph.initializer}
    out, held = [], 0
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        dtype = ONNX_DTYPES.get(tt.elem_type)
        if dtype is None:
            raise ImportError_("input %r has element type %d; placer takes float and integer "
                               "inputs" % (vi.name, tt.elem_type))
        dims = list(tt.shape.dim)
        if len(dims) <= batch_axis:
            raise ImportError_("input %r has no batch axis %d (it has %d axes)"
                               % (vi.name, batch_axis, len(dims)))
        sample = []
        for k, d in enumerate(dims):
            if k == batch_axis:
                continue
            if not d.HasField("dim_value"):
                raise ImportError_("input %r: axis %d has no fixed size (%r); export with "
                                   "fixed sizes except the batch" % (vi.name, k, d.dim_param))
            sample.append(int(d.dim_value))
        held += limits.check_input("input %r" % vi.name, batch, sample, 4)
        out.append((vi.name, tuple(sample), dtype))
    limits.check_memory("the inputs at --batch %d" % batch, held)
    return out


def main():
    args = parse_args(sys.argv[1:])
    command.check_outputs([args.output, args.weights], [args.source])
    import onnx
    import onnx_graph
    import onnx_load
    if not os.path.lexists(args.source):
        raise command.UsageError("%s: no such file" % args.source)
    model, data_files = onnx_load.load(args.source)
    command.check_outputs([args.output, args.weights], data_files)
    try:  # with shape inference, so that the op mappings meet consistent shapes only
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # the checker raises several kinds, all meaning the same
        first = str(e).strip().split("\n")[0]  # the others mostly follow from it
        raise ImportError_("%s: not a valid ONNX model: %s: %s"
                           % (args.source, type(e).__name__, first))
    name = args.name or model.graph.name or os.path.splitext(os.path.basename(args.source))[0]
    b = Builder(name, args.batch, "%s, imported by tools/import-onnx" % os.path.basename(
        args.source))
    try:
        inputs = {n: b.input(n, shape, dtype, "data", args.batch_axis) for n, shape, dtype in
                  graph_inputs(model, args.batch, args.batch_axis)}
        imp = onnx_graph.Importer(b, model)
        outputs = imp.run(inputs)
    except ImportError_ as e:
        raise ImportError_("%s: %s" % (args.source, e))
    if imp.unsupported:
        raise ImportError_(imp.unsupported.message(args.source))
    if not outputs or not isinstance(outputs[0], onnx_graph.Tensor):
        raise ImportError_("the model's first output does not depend on its input")
    command.attach_loss(b, outputs[0], args)
    command.finish(b, args, "import-onnx", b.prune())


if __name__ == "__main__":
    command.run(main, "import-onnx")
