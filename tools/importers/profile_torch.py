"""tools/profile-torch: profiles training steps of a PyTorch module on this machine's CPU
and writes the profiler's Chrome trace, with ranges named after the modules
(trace_ranges.py), for tools/import-trace."""

import argparse
import os
import sys
import tempfile

import command
import import_torch
import limits
from builder import ImportError_

USAGE_EXAMPLES = """example:
  tools/profile-torch torchvision:resnet18 --input 3,64,64 --batch 8 --classes 10 \\
      -o resnet18.trace.json
  tools/import-trace resnet18.json resnet18.trace.json -o resnet18.times.json
"""


def parse_args(argv):
    p = command.ArgumentParser(
        prog="profile-torch", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Runs training steps of a PyTorch module (the loss and SGD that "
                    "tools/import-torch gives its model) under the PyTorch profiler, on the "
                    "CPU, and writes the Chrome trace with ranges named after the modules.",
        epilog=USAGE_EXAMPLES)
    import_torch.add_source_options(p)
    p.add_argument("--batch", type=int, default=32, help="samples per step (default 32)")
    p.add_argument("--loss", default="cross-entropy", choices=["cross-entropy", "mse", "model"])
    p.add_argument("--steps", type=int, default=3, help="steps profiled (default 3)")
    p.add_argument("--warmup", type=int, default=2,
                   help="steps run first, not profiled (default 2)")
    p.add_argument("--threads", type=int, help="PyTorch's threads (default: its own choice)")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json",
                   help="the Chrome trace to write")
    args = p.parse_args(argv)
    if not 1 <= args.batch <= limits.MAX_DIM:
        p.error("--batch %d: must be in 1 .. %d" % (args.batch, limits.MAX_DIM))
    if not 1 <= args.steps <= 1000 or not 0 <= args.warmup <= 1000:
        p.error("--steps must be in 1 .. 1000 and --warmup in 0 .. 1000")
    if args.threads is not None and not 1 <= args.threads <= 4096:
        p.error("--threads %d: must be in 1 .. 4096" % args.threads)
    import_torch.check_source_options(p, args)
    return args


def loss_module(args, torch, output):
    """The loss tools/import-torch attaches, as a module (so that its ranges can be named
    "loss", its op's name), and the target it is held against (None: the model's own)."""
    F = torch.nn.functional
    if args.loss == "model":
        return torch.nn.Identity(), None
    classes = output.shape[-1]

    class Loss(torch.nn.Module):
        def forward(self, y, target):
            if args.loss == "mse":
                return F.mse_loss(y, target)
            return F.cross_entropy(y.reshape(-1, classes), target.reshape(-1))
    if args.loss == "mse":
        return Loss(), torch.randn(output.shape)
    return Loss(), torch.randint(0, classes, output.shape[:-1])


def main():
    args = parse_args(sys.argv[1:])
    command.check_outputs([args.output], [args.source.partition(":")[0]])
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    import trace_ranges
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    module, _, _ = import_torch.load_module(args.source, args.kwargs, args.classes)
    module.train()
    inputs = import_torch.example_batch(args, torch)
    try:
        with torch.no_grad():
            output = module(*inputs)
    except Exception as e:
        raise ImportError_("running the model on an example batch failed: %s"
                           % command.describe(e))
    while isinstance(output, (tuple, list)):
        output = output[0]
    loss, target = loss_module(args, torch, output)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace.json")
        with trace_ranges.ModuleRanges(module) as ranges, profile(
                activities=[ProfilerActivity.CPU],
                schedule=schedule(wait=0, warmup=args.warmup, active=args.steps),
                on_trace_ready=lambda prof: prof.export_chrome_trace(trace)) as prof:
            ranges.watch(loss, "loss")
            for _ in range(args.warmup + args.steps):
                y = module(*inputs)
                while isinstance(y, (tuple, list)):
                    y = y[0]
                value = loss(y) if target is None else loss(y, target)
                optimizer.zero_grad()
                value.backward()
                optimizer.step()
                prof.step()
        with open(trace, "rb") as f:
            command.write_output(args.output, f.read())
    threads = torch.get_num_threads()
    print("profile-torch: %s: %d step%s of %s at a batch of %d on %s, %d thread%s (tell "
          "tools/import-trace with --device)" % (
              args.output, args.steps, "" if args.steps == 1 else "s", args.source, args.batch,
              cpu_name(), threads, "" if threads == 1 else "s"), file=sys.stderr)


def cpu_name():
    """This machine's CPU model, as /proc/cpuinfo names it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "this CPU"


if __name__ == "__main__":
    command.run(main, "profile-torch")
