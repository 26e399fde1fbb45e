"""The policy's corpus (share/policy-corpus.json) made into files: the models listed, the
generated ones written by tools/gen-dag and tools/gen-chain, the imported ones by
tools/import-torch (at the sizes tools/importers/zoo.py gives them). Shared by
tools/pretrain-policy and tools/bench-agent --transfer."""
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(TOP, "share", "policy-corpus.json")


def load(path=MANIFEST):
    with open(path) as f:
        corpus = json.load(f)
    if corpus.get("format") != "placer-policy-corpus" or corpus.get("version") != 1:
        sys.exit(f"{path}: not a placer-policy-corpus of version 1")
    return corpus


def _generated(spec, work):
    tool, *args = spec
    name = "-".join([tool] + [a.lstrip("-") for a in args]) + ".json"
    out = os.path.join(work, name)
    if not os.path.exists(out):
        subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tools", tool), args[0], out]
                       + args[1:], check=True, stderr=subprocess.DEVNULL)
    return out


def _imported(spec, work):
    sys.path.insert(0, os.path.join(TOP, "tools", "importers"))
    import zoo
    out = os.path.join(work, f"{spec['zoo']}-b{spec['batch']}.json")
    if not os.path.exists(out):
        cmd = zoo.import_command(spec["zoo"], out, spec["batch"])
        subprocess.run(["/usr/bin/python3"] + cmd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return out


def models(part, work):
    """The model files of one part ("train" or "held_out"), made in `work` when needed."""
    os.makedirs(work, exist_ok=True)
    files = [os.path.join(TOP, m) for m in part.get("models", [])]
    files += [_generated(g, work) for g in part.get("generated", [])]
    files += [_imported(i, work) for i in part.get("imported", [])]
    return files


def clusters(part):
    return [os.path.join(TOP, c) for c in part.get("clusters", [])]
