"""What the importers' command lines share: the loss and optimiser options, the outputs.

Exit status: 0 written, 2 bad usage or a model that cannot be imported (nothing written),
1 an output that could not be written or a bug in the importer. Every error is one line on
standard error; PLACER_IMPORT_TRACEBACK=1 adds Python's traceback to a bug's.
"""

import argparse
import contextlib
import io
import math
import os
import stat
import sys
import traceback

import limits
import placer_tensors
from builder import ImportError_


EXIT_STATUS = """exit status: 0 written; 2 bad usage or a model that cannot be imported, nothing
written; 1 an output that could not be written, or a bug in the importer
(PLACER_IMPORT_TRACEBACK=1 prints its traceback). What is refused: docs/importers.md."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line (a UsageError), not its usage text and exit."""

    def error(self, message):
        raise UsageError(message)


def add_common_options(parser):
    parser.add_argument("--batch", type=int, default=32,
                        help="samples per step, 1 .. 2^31 - 1 (default 32)")
    parser.add_argument("-o", "--output", metavar="MODEL.json", required=True,
                        help="the placer model to write ('-' for standard output)")
    parser.add_argument("--weights", metavar="FILE",
                        help="also write the source model's weights (docs/tensor-file.md)")
    parser.add_argument("--name", help="the model's name (default: from the source)")
    parser.add_argument("--loss", default="cross-entropy",
                        choices=["cross-entropy", "mse", "model"],
                        help="softmax cross-entropy against an i32 label input (default); "
                             "mse against a target input; or the model's own scalar output")
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    parser.add_argument("--lr", type=float, default=None,
                        help="learning rate (default 0.01 for sgd, 0.001 for adam)")
    parser.add_argument("--momentum", type=float, default=0.9, help="sgd momentum (0.9)")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--micro-batch-statistics", action="store_true",
                        help="declare that batch norm may use each micro-batch's own "
                             "statistics, so that plans may split a step (GPipe's semantics)")


def check_common_options(parser, args):
    if not 1 <= args.batch <= limits.MAX_DIM:
        parser.error("--batch %d: must be in 1 .. %d" % (args.batch, limits.MAX_DIM))
    if args.lr is not None and not (args.lr > 0 and math.isfinite(args.lr)):
        parser.error("--lr %g: must be a finite number above 0" % args.lr)
    if not 0 <= args.momentum < 1:
        parser.error("--momentum %g: must be in [0, 1)" % args.momentum)
    if not (args.weight_decay >= 0 and math.isfinite(args.weight_decay)):
        parser.error("--weight-decay %g: must be a finite number, 0 or more" % args.weight_decay)
    if args.name is not None and not args.name.strip():
        parser.error("--name: must not be empty")


def attach_loss(b, prediction, args):
    """Adds the loss the options ask for on top of the model's prediction."""
    p = prediction
    if args.loss == "model":
        if p.batched or p.shape not in ((), (1,)) or p.dtype != "f32":
            raise ImportError_("--loss model needs a scalar f32 output; the model returns %s"
                               % list(p.shape))
        if p.shape == (1,):
            p = b.node1("reshape", "loss", [p], (), False, {"shape": []})
        b.loss = p.name
    elif args.loss == "cross-entropy":
        if not p.batched or p.rank < 2 or p.batch_axis == p.rank - 1:
            raise ImportError_("cross-entropy needs batched logits [batch, ..., classes]; the "
                               "model returns %s (try --loss mse or --loss model)" % list(p.shape))
        # labels: the logits' shape without the classes, the batch where the logits hold it
        label = b.input("label", p.sample_shape()[:-1], "i32", "label", p.batch_axis)
        b.loss = b.node1("softmax_cross_entropy", "loss", [p, label], (), False).name
    else:
        if not p.batched:
            raise ImportError_("mse needs a batched output; the model returns %s" % list(p.shape))
        target = b.input("target", p.sample_shape(), "f32", "label", p.batch_axis)
        b.loss = b.node1("mse", "loss", [p, target], (), False).name
    lr = args.lr if args.lr is not None else (0.01 if args.optimizer == "sgd" else 0.001)
    if args.optimizer == "sgd":
        b.optimizer = {"kind": "sgd", "lr": lr, "momentum": args.momentum}
    else:
        b.optimizer = {"kind": "adam", "lr": lr}
    if args.weight_decay:
        b.optimizer["weight_decay"] = args.weight_decay
    if args.micro_batch_statistics:
        b.batch_statistics = "per_micro_batch"


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs, inputs):
    """Refuses an output that would overwrite an input, or two outputs on one file."""
    seen = []
    for out in outputs:
        if out is None or out == "-":
            continue
        for src in inputs:
            if src and (_same_file(out, src) or os.path.abspath(out) == os.path.abspath(src)):
                raise UsageError("%s: refusing to overwrite the input %s" % (out, src))
        for other in seen:
            if os.path.abspath(out) == os.path.abspath(other) or _same_file(out, other):
                raise UsageError("%s: given as two outputs" % out)
        seen.append(out)


class UsageError(Exception):
    pass


def write_output(path, data):
    """Writes data (bytes) atomically with the umask's mode; '-' and special files directly."""
    try:
        if path == "-":
            if sys.stdout is None:  # started with standard output closed
                raise OSError(9, "it is closed")
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        elif os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
            with open(path, "wb") as f:
                f.write(data)
        else:
            placer_tensors.write_atomically(path, data)
    except OSError as e:
        raise OutputError("%s: cannot write: %s" % ("standard output" if path == "-" else path,
                                                     e.strerror or e))


def finish(b, args, prog, dropped):
    """Writes the model and its weights, and says what was written (and left out)."""
    if dropped:
        print("%s: %d op%s the loss does not use left out (%s%s)" % (
            prog, len(dropped), "" if len(dropped) == 1 else "s", ", ".join(dropped[:3]),
            ", ..." if len(dropped) > 3 else ""), file=sys.stderr)
    try:
        text = b.dumps().encode()
    except ImportError_ as e:
        raise ImportError_("%s: %s" % (args.source, e))
    weights = placer_tensors.encode(b.weights, args.weights) if args.weights else None
    write_output(args.output, text)
    if weights is not None:
        write_output(args.weights, weights)
    if args.output != "-":
        print("%s: %s: %d ops, %d parameters (%s values)%s" % (
            prog, args.output, len(b.nodes), len(b.parameters),
            "{:,}".format(sum(int(v.size) for k, v in b.weights if "/" not in k)),
            ", weights in %s" % args.weights if args.weights else ""), file=sys.stderr)


class OutputError(Exception):
    pass


def outcome(main, prog):
    """Runs an importer's main: its exit status (above), an error printed as one line on
    standard error."""
    try:
        main()
        return 0
    except (UsageError, ImportError_) as e:
        return _fail(prog, e, 2)
    except OutputError as e:
        return _fail(prog, e, 1)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted; nothing written", 130)
    except Exception as e:  # a bug, or memory running out: one line either way
        if limits.out_of_memory(e):
            return _fail(prog, "%s; nothing written (a smaller --batch or input may fit)"
                         % limits.out_of_memory(e), 2)
        if os.environ.get("PLACER_IMPORT_TRACEBACK"):
            traceback.print_exc()
        return _fail(prog, "internal error: %s: %s (a bug; PLACER_IMPORT_TRACEBACK=1 shows "
                     "where)" % (type(e).__name__, _one_line(e)), 1)


def run(main, prog):
    """Runs an importer's main as its command line, with the exit statuses above."""
    limits.cap_memory()
    sys.exit(outcome(main, prog))


def call(main, prog, argv):
    """Runs an importer's main in this process as the command line `prog argv` would (the
    tests' checks: a second Python process would import PyTorch again, seconds each), its
    memory uncapped: (exit status, what it printed)."""
    saved, printed = sys.argv, io.StringIO()
    sys.argv = [prog] + list(argv)
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                status = outcome(main, prog)
            except SystemExit as e:  # --help, --version
                status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    finally:
        sys.argv = saved
    return status, printed.getvalue()


def describe(e):
    """An exception from the source's own code, in one line: what it was and what it said."""
    return limits.out_of_memory(e) or "%s: %s" % (type(e).__name__, _one_line(e))


def _one_line(e):
    return " ".join(str(e).split())


def _fail(prog, message, status):
    print("%s: %s" % (prog, message), file=sys.stderr)
    return status
