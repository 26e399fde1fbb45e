#!/usr/bin/python3
"""Checks imported models against PyTorch, through either importer.

    tests/importers/check.py resnet18 --via torch [--train-steps 200] [--job-budget 10]
    tests/importers/check.py --list

For one model: imports it (tools/import-torch, or torch.onnx.export then tools/import-onnx)
with its weights; `placer validate`; loads the weights file back into the PyTorch module
(so both sides hold the same values, and the file is checked name by name); then compares
  - forward outputs in evaluation mode (`placer eval --outputs`, against module.eval()),
  - first-step gradients in training mode (`placer eval --train-mode --gradients`, against
    loss.backward() of module.train()),
each as max|placer - torch| / max|torch| per tensor, which must be at most 1e-4. Dropout
is imported with rate 0 for these comparisons (its masks are placer's own; its kernel has
its own tests). With --train-steps N it trains the imported model (dropout as in the
source) N steps on synthetic data with a learnable target and checks that the loss falls;
with --job-budget S it runs the main job on paced-4 for S seconds.
Exit status 0 when every check passes, 1 when one fails, 77 when torch is absent.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tools", "importers"))

from zoo import MODELS, build as build_module, import_command  # noqa: E402

TOLERANCE = 1e-4
PLACER = os.path.join(TOP, "placer")


class CheckFailed(Exception):
    pass


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise CheckFailed("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                                 p.stderr[-2000:]))
    return p.stdout + p.stderr


def import_model(name, via, module, work, numeric, batch, shape):
    """Runs the importer; returns (model JSON path, weights path)."""
    spec = MODELS[name]
    out = os.path.join(work, "model.json")
    weights = os.path.join(work, "model.weights")
    if via == "torch":
        cmd = import_command(name, out, batch, numeric=numeric, weights=weights)
    else:
        import torch
        onnx_path = os.path.join(work, "model.onnx")
        example = example_input(spec, 2, shape)
        with open(os.devnull, "w") as null:
            stderr = os.dup(2)
            os.dup2(null.fileno(), 2)  # torch.onnx warns at length on stderr
            try:
                torch.onnx.export(module.train(), example, onnx_path, opset_version=17,
                                  do_constant_folding=False,
                                  training=torch.onnx.TrainingMode.TRAINING,
                                  input_names=["x"], output_names=["y"],
                                  dynamic_axes={"x": {0: "batch"}})
            finally:
                os.dup2(stderr, 2)
                os.close(stderr)
        cmd = [os.path.join(TOP, "tools", "import-onnx"), onnx_path, "--batch", str(batch),
               "-o", out, "--weights", weights]
    run(cmd)
    return out, weights


def example_input(spec, batch, shape, seed=1):
    import torch
    g = torch.Generator().manual_seed(seed)
    if spec.get("dtype") == "i32":
        return torch.randint(0, spec["vocab"], (batch,) + tuple(shape), generator=g)
    return torch.randn((batch,) + tuple(shape), generator=g)


def load_weights(module, path):
    """The weights file into the module: every tensor must have its counterpart."""
    import torch
    import placer_tensors
    state = module.state_dict()
    seen = set()
    for name, array in placer_tensors.read(path):
        key = name.replace("/", ".")
        if key not in state:
            raise CheckFailed("weights: %s has no counterpart %s in the module" % (name, key))
        if tuple(state[key].shape) != tuple(array.shape):
            raise CheckFailed("weights: %s is %s, the module's %s" % (
                name, list(array.shape), list(state[key].shape)))
        state[key] = torch.from_numpy(array.copy())
        seen.add(key)
    module.load_state_dict(state)
    missing = [k for k, v in module.named_parameters() if k not in seen]
    if missing:
        raise CheckFailed("weights: parameters missing from the file: %s" % ", ".join(missing))


def torch_output(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def relative_error(got, want):
    import numpy as np
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        raise CheckFailed("shapes differ: placer %s, torch %s" % (list(got.shape),
                                                                  list(want.shape)))
    scale = np.max(np.abs(want)) if want.size else 0.0
    return float(np.max(np.abs(got - want)) / scale) if scale > 0 else float(np.max(np.abs(got)))


def compare(spec, via, work, model_path, weights, module, batch, shape):
    import numpy as np
    import torch
    import torch.nn.functional as F
    import placer_tensors
    model = json.load(open(model_path))
    x = example_input(spec, batch, shape)
    data_name = next(i["name"] for i in model["inputs"] if i["role"] == "data")
    label_name = next(i["name"] for i in model["inputs"] if i["role"] == "label")
    module.eval()
    with torch.no_grad():
        logits = torch_output(module(x))
    g = torch.Generator().manual_seed(2)
    labels = torch.randint(0, logits.shape[-1], logits.shape[:-1], generator=g)
    inputs = os.path.join(work, "inputs.tensors")
    placer_tensors.write(inputs, [
        (data_name, x.numpy().astype(np.int32 if spec.get("dtype") == "i32" else np.float32)),
        (label_name, labels.numpy().astype(np.int32))])
    outputs = os.path.join(work, "outputs.tensors")
    grads = os.path.join(work, "gradients.tensors")
    placer = PLACER
    run([placer, "eval", model_path, "--weights", weights, "--inputs", inputs,
         "--outputs", outputs])
    got = placer_tensors.read(outputs)
    report = {"outputs": relative_error(got[0][1], logits.numpy())}
    run([placer, "eval", model_path, "--weights", weights, "--inputs", inputs, "--train-mode",
         "--gradients", grads])
    module.train()
    module.zero_grad()
    out = torch_output(module(x))
    F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1)).backward()
    params = dict(module.named_parameters())
    worst, worst_name = 0.0, None
    count = 0
    for name, array in placer_tensors.read(grads):
        if name not in params:
            raise CheckFailed("gradients: %s is not a parameter of the module" % name)
        err = relative_error(array, params[name].grad.numpy())
        count += 1
        if err > worst:
            worst, worst_name = err, name
    report["gradients"] = worst
    report["worst"] = worst_name
    report["count"] = count
    return report


def train(spec, work, model_path, steps):
    out = run([PLACER, "train", model_path, "--data", "synthetic",
               "--steps", str(steps), "--log-every", str(max(steps // 4, 1))])
    losses = [float(m.group(1)) for m in re.finditer(r"^step \d+ .*?loss ([0-9.eE+-]+)", out,
                                                      re.M)]
    if len(losses) < 2:
        raise CheckFailed("train: no loss lines in\n" + out[-1000:])
    return losses


def check(name, via, train_steps, job_budget):
    spec = MODELS[name]
    shape = spec.get("onnx_input", spec["input"]) if via == "onnx" else spec["input"]
    batch = spec.get("onnx_batch", spec["batch"]) if via == "onnx" else spec["batch"]
    with tempfile.TemporaryDirectory(prefix="placer-import-") as work:
        module = build_module(name, numeric=True)
        model_path, weights = import_model(name, via, module, work, True, batch, shape)
        run([PLACER, "validate", "-q", model_path])
        load_weights(module, weights)
        report = compare(spec, via, work, model_path, weights, module, batch, shape)
        ok = report["outputs"] <= TOLERANCE and report["gradients"] <= TOLERANCE
        line = "%-20s %-5s outputs %.1e  gradients %.1e (%d, worst %s)" % (
            name, via, report["outputs"], report["gradients"], report["count"], report["worst"])
        if train_steps:
            trained = build_module(name)
            model_path, _ = import_model(name, via, trained, work, False, batch, shape)
            losses = train(spec, work, model_path, train_steps)
            falls = losses[-1] < losses[0]
            ok = ok and falls
            line += "  loss %.4f -> %.4f over %d steps%s" % (
                losses[0], losses[-1], train_steps, "" if falls else " (does not fall)")
        if job_budget:
            run([PLACER, model_path, "--cluster",
                 os.path.join(TOP, "graphs", "clusters", "paced-4.json"), "--budget",
                 str(job_budget), "-o", os.path.join(work, "job")])
            line += "  job ok"
        print(("ok   " if ok else "FAIL ") + line, flush=True)
        return ok


def main():
    global PLACER
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", help="default: all (see --list)")
    p.add_argument("--via", choices=["torch", "onnx", "both"], default="both")
    p.add_argument("--train-steps", type=int, default=0)
    p.add_argument("--job-budget", type=float, default=0)
    p.add_argument("--list", action="store_true")
    p.add_argument("--placer", default=PLACER, help="the placer binary")
    args = p.parse_args()
    PLACER = os.path.abspath(args.placer)
    if args.list:
        print("\n".join(MODELS))
        return 0
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        print("check.py: skipped: %s (apt-get install python3-torch python3-torchvision "
              "python3-onnx)" % e)
        return 77
    torch.set_num_threads(1)
    failed = 0
    for name in args.models or list(MODELS):
        if name not in MODELS:
            print("check.py: unknown model %r (see --list)" % name, file=sys.stderr)
            return 2
        for via in (["torch", "onnx"] if args.via == "both" else [args.via]):
            try:
                failed += not check(name, via, args.train_steps, args.job_budget)
            except CheckFailed as e:
                print("FAIL %-20s %-5s %s" % (name, via, e), flush=True)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
