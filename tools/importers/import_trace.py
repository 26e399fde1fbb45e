"""tools/import-trace: a PyTorch profiler trace of training steps -> a placer op-times file.

The trace (the Chrome-trace JSON of torch.profiler's export_chrome_trace or its TensorBoard
handler: a list of events, or an object with "traceEvents") names modules by ranges
"forward: PATH" and "backward: PATH" (trace_ranges.py; tools/profile-torch adds them). A
module's time is its ranges' time less that of the ranges nested in them (its submodules').
Without backward ranges, a Kineto trace's autograd events are tied to the forward op of
the same sequence number, and so to the module whose forward range holds that op.

The model's ops (tools/import-torch names them after modules: "layer1.0.conv1",
"fc.matmul", "layer1.0.add", "layer1.0.relu_1") go to the innermost module whose path
names them: the op's name is the path, or the path followed by "." or by "_N" (a second
call). Each module with ops becomes one entry of the op-times file (docs/simulator.md):
its ops and its forward and backward seconds per step, the steps being the calls of the
model itself ("forward: ", the root's range), or ProfilerStep ranges, or --steps.
"""

import argparse
import bisect
import json
import re
import sys

import command

FORWARD = "forward: "
BACKWARD = "backward: "
USAGE_EXAMPLES = """example:
  tools/profile-torch torchvision:resnet18 --input 3,64,64 --batch 8 --classes 10 \\
      -o resnet18.trace.json
  tools/import-torch torchvision:resnet18 --input 3,64,64 --batch 8 --classes 10 \\
      -o resnet18.json
  tools/import-trace resnet18.json resnet18.trace.json --device "my CPU" -o resnet18.times.json
  placer simulate resnet18.json --op-times resnet18.times.json
"""


def parse_args(argv):
    p = command.ArgumentParser(
        prog="import-trace", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Reads a PyTorch profiler trace (Chrome-trace JSON) of training steps of "
                    "a model imported by tools/import-torch, matches its module ranges to "
                    "the model's ops, and writes their forward and backward seconds per step "
                    "as a placer op-times file (placer simulate --op-times).",
        epilog=USAGE_EXAMPLES)
    p.add_argument("model", help="the placer model (MODEL.json from tools/import-torch)")
    p.add_argument("trace", help="the Chrome trace (TRACE.json)")
    p.add_argument("-o", "--output", required=True, metavar="TIMES.json",
                   help="the op-times file to write ('-' for standard output)")
    p.add_argument("--device", help="what the trace was measured on (default: the trace's "
                                    "GPU, else \"unknown\")")
    p.add_argument("--steps", type=int, help="training steps the trace holds (default: the "
                                             "model's calls, else its ProfilerStep ranges, "
                                             "else 1)")
    args = p.parse_args(argv)
    if args.steps is not None and not 1 <= args.steps <= 10 ** 6:
        p.error("--steps %d: must be in 1 .. 1000000" % args.steps)
    if args.device is not None and not 1 <= len(args.device.encode()) <= 255:
        p.error("--device: 1 to 255 bytes")
    return args


def read_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise command.UsageError("%s: cannot read: %s" % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        raise command.UsageError("%s: not UTF-8 text: %s" % (path, e))
    except ValueError as e:
        raise command.UsageError("%s: not JSON: %s" % (path, e))


def read_model(path):
    model = read_json(path)
    if not isinstance(model, dict) or model.get("format") != "placer-model" or \
            not isinstance(model.get("nodes"), list):
        raise command.UsageError("%s: not a placer model (format \"placer-model\" with nodes)"
                                 % path)
    names = [n.get("name") for n in model["nodes"] if isinstance(n, dict)]
    if not all(isinstance(n, str) for n in names):
        raise command.UsageError("%s: /nodes: every node needs a name" % path)
    return model.get("name", ""), int(model.get("batch_size", 0)), names


class Event:
    __slots__ = ("name", "start", "end", "lane", "args", "category")

    def __init__(self, e):
        self.name = e["name"]
        self.start = float(e["ts"])
        self.end = self.start + float(e["dur"])
        self.lane = (str(e.get("pid")), str(e.get("tid")))
        self.args = e.get("args") if isinstance(e.get("args"), dict) else {}
        self.category = e.get("cat")


def read_trace(path):
    """The trace's complete events, and its GPU's name when it names one."""
    trace = read_json(path)
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise command.UsageError("%s: not a Chrome trace (a list of events, or an object "
                                 "with \"traceEvents\")" % path)
    complete = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            complete.append(Event(e))
        except (KeyError, TypeError, ValueError):
            raise command.UsageError("%s: event %d: a complete event (\"ph\": \"X\") needs "
                                     "a name, \"ts\" and \"dur\"" % (path, i))
    gpu = None
    if isinstance(trace, dict) and isinstance(trace.get("deviceProperties"), list):
        names = [d.get("name") for d in trace["deviceProperties"] if isinstance(d, dict)]
        gpu = next((n for n in names if isinstance(n, str)), None)
    return complete, gpu


def module_ranges(events, prefix):
    """Ranges named prefix + PATH: {PATH: (seconds less nested ranges', calls)}. On a GPU
    the annotations over its kernels (Kineto's "gpu_user_annotation") are the device's
    time, and are taken where there are any."""
    ranges = [e for e in events if e.name.startswith(prefix)]
    on_gpu = [e for e in ranges if e.category == "gpu_user_annotation"]
    if on_gpu:
        ranges = on_gpu
    totals = {}
    lanes = {}
    for e in ranges:
        lanes.setdefault(e.lane, []).append(e)
    for lane in lanes.values():
        lane.sort(key=lambda e: (e.start, -e.end))
        stack = []  # [event, its own time so far]
        for e in lane:
            while stack and stack[-1][0].end <= e.start:
                _add(totals, stack.pop())
            if stack and e.end <= stack[-1][0].end:
                stack[-1][1] -= e.end - e.start
            stack.append([e, e.end - e.start])
        while stack:
            _add(totals, stack.pop())
    return totals


def _add(totals, item):
    event, own = item
    path = event.name.split(": ", 1)[1] if ": " in event.name else ""
    seconds, calls = totals.get(path, (0.0, 0))
    totals[path] = (seconds + max(own, 0.0) / 1e6, calls + 1)


AUTOGRAD_NODE = re.compile(r"Backward\d*$")  # AddmmBackward0, a custom Function's FooBackward


def backward_by_sequence(events):
    """A Kineto trace's autograd nodes (events named like AddmmBackward0), each tied by its
    sequence number to the forward op of that number, and so to the innermost module range
    around that op: {PATH: seconds}."""
    lanes = {}  # lane -> its forward ranges by start
    for e in sorted((e for e in events if e.name.startswith(FORWARD)),
                    key=lambda e: (e.start, -e.end)):
        lanes.setdefault(e.lane, []).append(e)
    starts = {lane: [r.start for r in ranges] for lane, ranges in lanes.items()}

    def innermost(e):
        """Ranges nest: the one starting last before e that holds it is the innermost."""
        ranges = lanes.get(e.lane, [])
        for i in range(bisect.bisect_right(starts.get(e.lane, []), e.start) - 1, -1, -1):
            if e.end <= ranges[i].end:
                return ranges[i]
        return None

    module_of = {}
    nodes = []
    for e in events:
        seq = e.args.get("Sequence number")
        if not isinstance(seq, int) or seq < 0 or e.name.startswith(FORWARD) or \
                e.name.startswith("autograd::engine::"):
            continue
        if AUTOGRAD_NODE.search(e.name):
            nodes.append(e)
            continue
        inner = innermost(e)
        if inner is not None and seq not in module_of:
            module_of[seq] = inner.name[len(FORWARD):]
    totals = {}
    for e in nodes:
        path = module_of.get(e.args["Sequence number"])
        if path is not None:
            totals[path] = totals.get(path, 0.0) + (e.end - e.start) / 1e6
    return totals


def owner(name, paths):
    """The innermost module path that names op `name`, or None."""
    best = None
    for p in paths:
        if p == "":
            named = True
        else:
            named = name == p or name.startswith(p + ".") or \
                re.match(re.escape(p) + r"_\d+(\.|$)", name) is not None
        if named and (best is None or len(p) > len(best)):
            best = p
    return best


def dumps(times):
    """One entry a line, so that the file reads and diffs well."""
    head = json.dumps({k: v for k, v in times.items() if k != "times"})[:-1]
    entries = ",\n  ".join(json.dumps(e) for e in times["times"])
    return '%s,\n "times": [\n  %s\n ]}\n' % (head, entries)


def main():
    args = parse_args(sys.argv[1:])
    command.check_outputs([args.output], [args.model, args.trace])
    model_name, batch, ops = read_model(args.model)
    events, gpu = read_trace(args.trace)
    forward = module_ranges(events, FORWARD)
    if not forward:
        raise command.UsageError("%s: no ranges named \"forward: MODULE\": profile with "
                                 "tools/profile-torch, or with trace_ranges.ModuleRanges in "
                                 "your own loop (docs/importers.md)" % args.trace)
    backward = {p: s for p, (s, _) in module_ranges(events, BACKWARD).items()}
    how_backward = "backward ranges"
    if not backward:
        backward = backward_by_sequence(events)
        how_backward = "autograd sequence numbers" if backward else "none in the trace"
    steps = args.steps
    if steps is None:
        steps = forward[""][1] if "" in forward else \
            sum(1 for e in events if e.name.startswith("ProfilerStep#")) or 1
    owned = {}
    for name in ops:
        path = owner(name, forward)
        if path is not None:
            owned.setdefault(path, []).append(name)
    entries = []
    for path, names in owned.items():
        entry = {"module": path, "ops": names, "forward": forward[path][0] / steps}
        if path in backward:
            entry["backward"] = backward[path] / steps
        entries.append(entry)
    unmatched = [n for n in ops if not any(n in e["ops"] for e in entries)]
    times = {"format": "placer-op-times", "version": 1, "model": model_name,
             "device": args.device or gpu or "unknown", "batch": batch,
             "source": args.trace, "times": entries}
    command.write_output(args.output, dumps(times).encode())
    matched = len(ops) - len(unmatched)
    spare = sum(s for p, (s, _) in forward.items() if p not in owned) / steps
    print("import-trace: %s: %d of %d ops of %s matched (%d steps; backward: %s)%s" % (
        args.output, matched, len(ops), model_name, steps, how_backward,
        "; not matched: " + ", ".join(unmatched[:8]) + (", ..." if len(unmatched) > 8 else "")
        if unmatched else ""), file=sys.stderr)
    if spare > 0:
        print("import-trace: %.3f ms a step of module ranges without ops of their own (%s) "
              "left out" % (1e3 * spare, ", ".join(sorted(p or "(the model)" for p in forward
                                                       if p not in owned)[:4])
                            + (", ..." if len(forward) - len(owned) > 4 else "")), file=sys.stderr)


if __name__ == "__main__":
    command.run(main, "import-trace")
