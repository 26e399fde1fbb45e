"""tools/import-survey: how many of a set of real models import: torchvision's classification
models (its image models, and its video models as video.NAME), or the models written by hand
the common ways in tests/importers/written.py (--set written), or both (--set all).

Each model goes through tools/import-torch at a small input and batch 2, `placer validate`,
and a comparison of its forward outputs against PyTorch's (tests/importers/check.py's, on
the weights file the importer wrote, its zeros made random); one line per model, then the
rates. Each model runs in a process of its own, killed at --timeout.
"""

import argparse
import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH = 2
CLASSES = 10
SMALL = (3, 64, 64)

# Where a model does not take SMALL: the smallest input it takes, or its own size argument
# set small (a vision transformer's image_size, a multiple of its patch).
INPUTS = {
    "googlenet": (SMALL, {"init_weights": False}),
    "inception_v3": ((3, 75, 75), {"aux_logits": False, "init_weights": False}),
    "vit_b_16": ((3, 32, 32), {"image_size": 32}),
    "vit_b_32": ((3, 32, 32), {"image_size": 32}),
    "vit_l_16": ((3, 32, 32), {"image_size": 32}),
    "vit_l_32": ((3, 32, 32), {"image_size": 32}),
    "vit_h_14": ((3, 28, 28), {"image_size": 28}),
    # Each of its four stages' grids must divide into 7x7 partitions: 224 / 32 = 7.
    "maxvit_t": ((3, 224, 224), {}),
    # Video: [channels, frames, height, width]. S3D pools a 2x7x7 window at the end, and
    # MViT's attention pools are sized for 16 frames of 224x224.
    "video.s3d": ((3, 16, 224, 224), {}),
    "video.mvit_v1_b": ((3, 16, 224, 224), {}),
    "video.mvit_v2_s": ((3, 16, 224, 224), {}),
}
VIDEO = (3, 4, 32, 32)
WRITTEN_PY = os.path.join(TOP, "tests", "importers", "written.py")
SETS = ("torchvision", "written", "all")


def classification_models():
    import torchvision.models as models
    return models.list_models(module=models) + \
        ["video." + n for n in models.list_models(module=models.video)]


def written_specs():
    """tests/importers/written.py's module, and its models' specs by name."""
    import importlib.util
    loader = importlib.util.spec_from_file_location("written", WRITTEN_PY)
    written = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(written)
    return written, written.SPECS


def models_of(which):
    """{name: its set} for the models of a set."""
    names = {}
    if which in ("torchvision", "all"):
        names.update((n, "torchvision") for n in classification_models())
    if which in ("written", "all"):
        names.update((n, "written") for n in written_specs()[1])
    return names


def spec_of(name, which):
    """A model's entry: its source for tools/import-torch, its inputs per sample (shape,
    dtype, vocab), the builder's keyword arguments and the loss to import it with."""
    if which == "written":
        spec = written_specs()[1][name]
        return dict(source="%s:%s" % (WRITTEN_PY, name), inputs=spec["inputs"], kwargs={},
                    loss=spec.get("loss", "cross-entropy"))
    default = VIDEO if name.startswith("video.") else SMALL
    shape, kwargs = INPUTS.get(name, (default, {}))
    return dict(source="torchvision:" + name, inputs=[dict(shape=shape, dtype="f32")],
                kwargs=dict(kwargs, num_classes=CLASSES), loss="cross-entropy")


def build(name, which, kwargs):
    import warnings
    import torch
    torch.manual_seed(0)
    if which == "written":
        return getattr(written_specs()[0], name)(**kwargs)
    import torchvision.models
    package, _, short = name.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = getattr(torchvision.models, package) if package else torchvision.models
        return getattr(models, short)(weights=None, **kwargs)


def import_command(spec, model_path, weights):
    cmd = [os.path.join(TOP, "tools", "import-torch"), spec["source"], "--batch", str(BATCH),
           "--loss", spec["loss"], "-o", model_path, "--weights", weights]
    for i in spec["inputs"]:
        cmd += ["--input", ",".join(map(str, i["shape"])), "--input-dtype", i["dtype"],
                "--batch-axis", str(i.get("batch_axis", 0))]
    vocab = max([i["vocab"] for i in spec["inputs"] if "vocab" in i], default=None)
    if vocab:
        cmd += ["--vocab", str(vocab)]
    for k, v in spec["kwargs"].items():
        cmd += ["--arg", "%s=%r" % (k, v)]
    return cmd


def first_error(stderr, tool="import-torch"):
    """The tool's error on one line, without PyTorch's warnings before it; for the list of
    unsupported operators, each operator and its count, without where it is used."""
    lines = stderr.strip().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith(tool + ":")), 0)
    parts = []
    for line in lines[start:]:
        m = re.match(r"^\s+(.*): (\d+ uses?)(: .*)?$", line)
        parts.append("%s (%s)" % m.group(1, 2) if m else line.strip())
    text = "; ".join(p for p in parts if p).replace(":; ", ": ", 1) or "no message"
    return re.sub(r"^%s: (torchvision:\w+: )?" % tool, "", text)


def enliven(weights, model_path):
    """Gives the parameters that start at zero small random values in the weights file (the
    module reads them back from it): a classifier initialised to zeros, as a vision
    transformer's is, outputs zeros whatever the layers before it compute."""
    import numpy as np
    import placer_tensors
    frozen = {p["name"] for p in json.load(open(model_path))["parameters"]
              if p.get("trainable") is False}
    rng = np.random.default_rng(0)
    tensors = [(n, a if n in frozen or a.dtype != np.float32 or a.any() else
                (0.02 * rng.standard_normal(a.shape)).astype(np.float32))
               for n, a in placer_tensors.read(weights)]
    placer_tensors.write(weights, tensors)


def survey_one(name, which, placer):
    """The stages one model passes, as a JSON-able dict: imported, validated, outputs (the
    worst relative error of the inputs compared) and match, or error (the stage's)."""
    sys.path.insert(0, os.path.join(TOP, "tests", "importers"))
    import check
    check.PLACER = placer
    import torch
    torch.set_num_threads(1)
    spec = spec_of(name, which)
    result = {"imported": False, "validated": False, "match": False}
    with tempfile.TemporaryDirectory(prefix="placer-survey-") as work:
        model_path = os.path.join(work, "model.json")
        weights = os.path.join(work, "model.weights")
        # in this process (its own already, run_one's): PyTorch is imported once
        import command
        import import_torch
        cmd = import_command(spec, model_path, weights)
        status, printed = command.call(import_torch.main, "import-torch", cmd[1:])
        if status != 0:
            result["error"] = first_error(printed)
            return result
        result["imported"] = True
        v = subprocess.run([placer, "validate", "-q", model_path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if v.returncode != 0:
            result["error"] = "validate: " + first_error(v.stdout, "placer")
            return result
        result["validated"] = True
        module = build(name, which, spec["kwargs"])
        try:
            enliven(weights, model_path)
            check.load_weights(module, weights, model_path)
            reports = check.compare_inputs({"inputs": spec["inputs"]}, "torch", work,
                                           model_path, weights, module, BATCH, None,
                                           ["outputs"])
        except check.CheckFailed as e:
            result["error"] = "compare: " + first_error(str(e))
            return result
        result["outputs"] = max(r["outputs"] for r in reports)
        result["match"] = sum(check.agrees(r, ["outputs"]) for r in reports) >= 2
        if not result["match"]:
            result["error"] = "outputs differ from PyTorch's by %.1e" % result["outputs"]
    return result


def run_one(name, which, placer, timeout):
    """survey_one in a process of its own (with the importer it starts), killed at
    timeout seconds."""
    cmd = [sys.executable, os.path.abspath(sys.argv[0]), "--one", name, "--set", which,
           "--placer", placer]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"imported": False, "validated": False, "match": False,
                "error": "timed out after %g s" % timeout}
    seconds = time.monotonic() - start
    lines = out.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (err.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        result = {"imported": False, "validated": False, "match": False,
                  "error": "survey: " + tail}
    result["seconds"] = seconds
    return result


def describe(name, r, width=20):
    stages = "%-8s %-9s %-7s" % ("imported" if r["imported"] else "-",
                                 "validated" if r["validated"] else "-",
                                 "match" if r["match"] else "-")
    line = "%-*s %s %5.0fs" % (width, name, stages, r.get("seconds", 0))
    if "outputs" in r:
        line += "  outputs %.1e" % r["outputs"]
    if "error" in r:
        line += "  " + r["error"]
    return line


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="import-survey",
        description="Imports every model of a set (tools/import-torch, at a small input "
                    "and batch 2), validates it and compares its forward outputs with "
                    "PyTorch's; prints a line per model and the rates.")
    p.add_argument("--set", choices=SETS, default="torchvision",
                   help="torchvision's classification models (the default), the models "
                        "written by hand in tests/importers/written.py, or all of them")
    p.add_argument("--models", help="A,B,...: these models only (default: every one of the "
                                    "set)")
    p.add_argument("--timeout", type=float, default=300, metavar="S",
                   help="seconds per model (default 300)")
    p.add_argument("--placer", default=os.path.join(TOP, "placer"), help="the placer binary")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    placer = os.path.abspath(args.placer)
    if args.one:
        print(json.dumps(survey_one(args.one, args.set, placer)))
        return 0
    if not args.timeout > 0:
        p.error("--timeout %g: must be above 0" % args.timeout)
    try:
        known = models_of(args.set)
    except ImportError as e:
        print("import-survey: %s (apt-get install python3-torch python3-torchvision)" % e,
              file=sys.stderr)
        return 2
    names = args.models.split(",") if args.models else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        p.error("not models of the %s set: %s" % (args.set, ", ".join(unknown)))
    counts = {"imported": 0, "validated": 0, "match": 0}
    for name in names:
        r = run_one(name, known[name], placer, args.timeout)
        for k in counts:
            counts[k] += r[k]
        print(describe(name, r, max(20, *map(len, names))), flush=True)
    n = len(names)
    print("%d models: %s" % (n, ", ".join(
        "%s %d (%.0f%%)" % (k if k != "match" else "outputs match", c, 100.0 * c / n)
        for k, c in counts.items())))
    return 0
