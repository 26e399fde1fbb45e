"""A suite of instances for tools/bench-agent --suite NAME: graphs/NAME/suite.json (written
by tools/gen-hard for the hard suite), each instance a model, a cluster, a budget, what
its steps are and its half (training or held out); the ablation over them (the full agent
against the search without learning, each against the best baseline of its own job), the
transfer (a policy pre-trained on the training half, zero-shot on the held-out half,
against a search from fresh weights) and the figures read from each job's summary,
measured where the cluster's devices run here and simulated where they cannot."""
import json
import math
import os
import time


def load_suite(top, name):
    """The instances of suite NAME (graphs/NAME/suite.json) or of the file NAME (ending in
    .json), their model and cluster paths (from the checkout's top) made absolute, and its
    pre-training settings (None when it has none)."""
    path = name if name.endswith(".json") else os.path.join(top, "graphs", name, "suite.json")
    try:
        suite = json.load(open(path))
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: {e}")
    instances = []
    for k, i in enumerate(suite["instances"]):
        model, cluster = (os.path.join(top, i[key]) for key in ("model", "cluster"))
        for p in (model, cluster):
            if not os.path.exists(p):
                raise SystemExit(f"{path}: /instances/{k}: no file {p}")
        label = (f"{os.path.splitext(os.path.basename(model))[0]}, "
                 f"{os.path.splitext(os.path.basename(cluster))[0]}")
        if i.get("half", "train") not in ("train", "held-out"):
            raise SystemExit(f"{path}: /instances/{k}/half: \"train\" or \"held-out\", not "
                             f"{i['half']!r}")
        instances.append({"label": label, "model": model, "cluster": cluster,
                          "budget": str(i.get("budget_seconds", 60)), "what": i["what"],
                          "simulated": i["steps"].startswith("simulated"),
                          "half": i.get("half", "train")})
    return instances, suite.get("pretrain")


def provenance(row):
    """How the written row was made: a baseline's plan, the policy's own sample, or either
    one swept to other shapes or refined by single-op moves (the row's name carries its
    origin: "agent #2 (etf refined)" from a baseline, "agent #1 (refined)" or "(reshaped
    refined)" from the policy's own; docs/outputs.md)."""
    name = row["name"]
    if row["kind"] != "agent":
        return "baseline " + name
    if not row["reshaped"] and not row["refined"]:
        return "the policy's own"
    how = ("swept and refined" if row["reshaped"] and row["refined"]
           else "swept" if row["reshaped"] else "refined")
    origin = name[name.find("(") + 1:].rstrip(")").split()[0] if "(" in name else "rl"
    own = origin in ("rl", "reshaped", "refined")
    return f"the policy's own, {how}" if own else f"baseline {origin}, {how}"


def figures(summary_path, simulated):
    """One job's figures: the written plan's step, the best baseline's, the best of the
    policy's own plans (neither swept nor refined), the lower bound (ms), the written
    plan's provenance, the agent's iterations and seconds of search, and the job's seconds.
    Steps are the measured ones (the
    head-to-head rows, else every measured row) on devices that run here, the simulated
    ones on hardware placer cannot run."""
    s = json.load(open(summary_path))
    if simulated:
        rows = [r for r in s["rows"] if r["simulated_seconds"] and r["fits"]]
        step = {r["name"]: 1e3 * r["simulated_seconds"] for r in rows}
    else:
        rows = [r for r in s["rows"] if r["measured_seconds"]]
        rows = [r for r in rows if r["head_to_head"]] or rows
        step = {r["name"]: 1e3 * r["measured_seconds"] for r in rows}
    by_name = {r["name"]: r for r in rows}
    baselines = [step[r["name"]] for r in rows if r["kind"] != "agent"]
    own = [step[r["name"]] for r in rows
           if r["kind"] == "agent" and not r["reshaped"] and not r["refined"]]
    chosen = (s["chosen"] or {}).get("name")
    return {"written": step.get(chosen), "baseline": min(baselines, default=None),
            "own": min(own, default=None), "bound": 1e3 * s["lower_bound_seconds"],
            "provenance": provenance(by_name[chosen]) if chosen in by_name else "-",
            "iterations": s["iterations"],
            "searched": (s["learning"] or {}).get("search_seconds", 0),
            "elapsed": s["elapsed_seconds"]}


def ratio(a, b):
    return a / b if a and b else None


def geometric_mean(values):
    """Of the values known (None left out); nan when none is."""
    known = [v for v in values if v]
    return math.exp(sum(map(math.log, known)) / len(known)) if known else float("nan")


def mean_text(values):
    """The geometric mean to three places, or "none" when no value is known."""
    known = geometric_mean(values)
    return "none" if math.isnan(known) else f"{known:.3f}"


def cell(value):
    return f"{value:.3f}" if value else "-"


def row_start(inst, seed):
    """A table row's first cells: the instance, how its steps are had, the seed."""
    return f"| {inst['label']} | {'simulated' if inst['simulated'] else 'paced'} | {seed} | "


def worst(ratios):
    """The largest of the known ratios (nan when none is)."""
    return max((r for r in ratios if r), default=float('nan'))


def run_jobs(a, run_job, inst, seed, work, columns, variants):
    """The instance's job for each (name, extra options) of variants, one after another at
    its budget: each one's figures, with the seconds its agent searched and the job took,
    or None for a job that failed (a table row of `columns` says so)."""
    a.seed, a.cluster, a.budget = seed, inst["cluster"], inst["budget"]
    got = []
    for variant, extra in variants:
        prefix = os.path.join(work, f"{len(got)}-{seed}-{inst['label']}").replace(", ", "-")
        done = run_job(a, inst["model"], prefix, extra)
        if done.returncode != 0:
            print(row_start(inst, seed) + f"{variant} failed: "
                  f"{done.stderr.strip().splitlines()[-1:]} |" + " |" * (columns - 4),
                  flush=True)
        got.append(figures(prefix + ".summary.json", inst["simulated"])
                   if done.returncode == 0 else None)
    return got


def ablation(a, instances, run_job, work):
    """For each seed and instance, the full agent and the search without learning
    (--no-learning), one job after another at the instance's budget; a table row each,
    then the geometric means and the targets."""
    print("| instance | steps | seed | full: written / best baseline | written plan | "
          "without learning / best baseline | full / without learning | policy's own / "
          "best baseline | written / lower bound | best baseline / lower bound | "
          "iterations |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    full_base, full_without, owns = [], [], []
    for seed in a.seeds.split(","):
        for inst in instances:
            got = run_jobs(a, run_job, inst, seed, work, 11,
                           (("full", []), ("without", ["--no-learning"])))
            full, without = got
            if not full:
                continue
            r_full = ratio(full["written"], full["baseline"])
            r_without = ratio(without["written"], without["baseline"]) if without else None
            gain = ratio(r_full, r_without)
            own = ratio(full["own"], full["baseline"])
            full_base.append(r_full)
            full_without.append(gain)
            owns.append(own)
            print(row_start(inst, seed) + f"{cell(r_full)} | {full['provenance']} | "
                  f"{cell(r_without)} | {cell(gain)} | {cell(own)} | "
                  f"{cell(ratio(full['written'], full['bound']))} | "
                  f"{cell(ratio(full['baseline'], full['bound']))} | {full['iterations']} |",
                  flush=True)
    print(f"\ngeometric means over {len(instances)} instances and seeds {a.seeds}: "
          f"the full agent's written plan over the best baseline {geometric_mean(full_base):.3f} "
          f"(target at most 0.85; worst {worst(full_base):.3f}, target never "
          f"above 1), over the search without learning {geometric_mean(full_without):.3f} "
          f"(target at most 0.90), the policy's own plans over the best baseline "
          f"{mean_text(owns)} (target at most 1.0) "
          f"(load average {os.getloadavg()[0]:.2f})")


def pretrain(placer, instances, settings, work):
    """A policy pre-trained on the instances of the training half by one `placer pretrain
    --paired` (each instance's model on its own cluster): round after round, each instance
    in an order drawn from the seed gets a simulated search (one visit: the baselines
    imitated, then `iterations` of learning) that starts from the weights the visit before
    ended with; then, with "consolidate", that many supervised steps fitting the policy to
    every instance's fastest plan at once. Returns the policy file and the seconds it took."""
    train = [i for i in instances if i["half"] == "train"]
    if not train:
        raise SystemExit("the suite has no instance in its training half")
    out = os.path.join(work, "pretrained.plt")
    args = ["pretrain", "-o", out, "--paired", "--rounds", str(settings["rounds"]),
            "--iterations", str(settings["iterations"]), "--samples", str(settings["samples"]),
            "--seed", str(settings["seed"]),
            "--consolidate", str(settings.get("consolidate", 0))]
    for inst in train:
        args += ["--cluster", inst["cluster"]]
    start = time.time()
    done = placer(args + [inst["model"] for inst in train])
    if done.returncode != 0:
        raise SystemExit(f"pre-training: {done.stderr.strip().splitlines()[-1:]}")
    return out, time.time() - start


def transfer(a, instances, settings, placer, run_job, work, seconds=10):
    """A policy pre-trained on the training half (pretrain), then for each seed and
    held-out instance: the full agent from fresh weights at the instance's budget, and
    the pre-trained policy sampled as it is (--zero-shot: no baseline offered or imitated,
    no training; its best samples swept and refined) for `seconds` of search; each
    job's written plan over its best baseline, and the zero-shot plan over the one from
    scratch; then the geometric mean and the target."""
    if not settings:
        raise SystemExit("the suite says nothing on pre-training (its \"pretrain\" member)")
    policy, took = pretrain(placer, instances, settings, work)
    train = [i["label"] for i in instances if i["half"] == "train"]
    rounds = settings["rounds"]
    print(f"pre-trained on the training half ({'; '.join(train)}): {rounds} "
          f"round{'s' if rounds != 1 else ''} of {settings['iterations']} iterations a "
          f"visit, then {settings.get('consolidate', 0)} steps fitting every instance's "
          f"fastest plan at once, seed {settings['seed']}, simulated, {took:.0f} s\n")
    print(f"| instance | steps | seed | from scratch: written / best baseline | zero-shot, "
          f"{seconds} s: written / best baseline | zero-shot / from scratch | zero-shot's "
          f"written plan | the agent's search seconds: scratch, zero-shot | the jobs' "
          f"seconds |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|")
    held = [i for i in instances if i["half"] == "held-out"]
    ratios = []
    for seed in a.seeds.split(","):
        for inst in held:
            got = run_jobs(a, run_job, inst, seed, work, 9,
                           (("from scratch", ["--no-pretrained"]),
                            ("zero-shot", ["--policy", policy, "--zero-shot",
                                           "--search-seconds", str(seconds)])))
            scratch, zero = got
            r = ratio(zero["written"], scratch["written"]) if scratch and zero else None
            ratios.append(r)
            cells = [cell(ratio(x["written"], x["baseline"])) if x else "-" for x in got]
            searched, elapsed = (", ".join(f"{x[key]:.1f}" if x else "-" for x in got)
                                 for key in ("searched", "elapsed"))
            print(row_start(inst, seed) + f"{cells[0]} | {cells[1]} | {cell(r)} | "
                  f"{zero['provenance'] if zero else '-'} | {searched} | {elapsed} |",
                  flush=True)
    print(f"\ngeometric mean over {len(held)} held-out instances and seeds {a.seeds}: the "
          f"pre-trained policy zero-shot ({seconds} s of search) over the search from fresh "
          f"weights {geometric_mean(ratios):.3f} (target at most 1.10; worst "
          f"{worst(ratios):.3f}) (load average {os.getloadavg()[0]:.2f})")
