#!/bin/sh
# placer MODEL.json, the main job: baselines, the agent, the plan, its drawing and the
# report; a checkpoint resumed; Ctrl-C leaves a valid plan; bad options.
. "${top_srcdir:-.}/tests/shell_lib.sh"

model=$src/graphs/small/inception-small.json
paced=$src/graphs/clusters/paced-4.json

own_profile inception mlp

# The cluster by a name with a quote and a space: the report's command line quotes it so
# that a shell reads it back.
quoted="$work/it's paced.json"
ln -s "$paced" "$quoted"
expect 0 "main job" "$bin" "$model" --cluster "$quoted" --iterations 4 --samples 8 -o "$work/inc"
for f in plan.json plan.dot report.md curve.svg timeline.svg timeline-measured.svg summary.json \
    agent.ckpt agent.plan.json graph.dot; do
    [ -s "$work/inc.$f" ] && ok || bad "main job did not write inc.$f"
done
contains "$work/out" "baseline pipeline-dp" "main job"
contains "$work/out" "agent: 4 iterations; stopped: the iterations asked for are done" "main job"
contains "$work/out" "wrote $work/inc.plan.json" "main job"
contains "$work/inc.report.md" "| algorithm | simulated step (ms) | measured step (ms) | simulated / lower bound | measured / lower bound |" "report"
contains "$work/inc.report.md" "Command: \`placer $model --cluster '$work/it'\\''s paced.json' --iterations 4" "report"
contains "$work/inc.report.md" "## Devices" "report"
contains "$work/inc.report.md" "±: half the interquartile range of the measured steps" "report"
contains "$work/inc.summary.json" '"iqr_spread"' "summary"
contains "$work/inc.summary.json" "/policy.plt\"" "summary: the shipped policy"
contains "$work/inc.summary.json" '"trained": true' "summary: the shipped policy"
contains "$work/inc.report.md" "were measured again at the end, taking turns step by step" "report: head to head"
# The chosen row (bold) is one of the head-to-head contenders named in that sentence
# (markdown escapes aside).
chosen=$(sed -n 's/^Chosen: \*\*\(.*\)\*\*.*/\1/p' "$work/inc.report.md" | tr -d '\\')
grep "taking turns" "$work/inc.report.md" | tr -d '\\' | grep -qF "$chosen" && ok ||
    bad "report: the chosen plan ($chosen) was not among the head-to-head contenders"
contains "$work/inc.curve.svg" "best simulated" "curve"
contains "$work/inc.curve.svg" "lower bound" "curve"
# The report renders as markdown with its tables whole, the pictures render, and the
# summary names the report's choice.
/usr/bin/python3 "$src/tests/check_job_outputs.py" "$work/inc" >"$work/check" 2>&1
case $? in
    0) ok ;;
    77) echo "SKIP: $(cat "$work/check")" ;;
    *) bad "the job's outputs: $(cat "$work/check")" ;;
esac

# Progress for a log (stdout not a terminal): a line on news, never one per iteration; a
# search that converges stops early and says so.
expect 0 "converging" "$bin" "$src/graphs/small/mlp-small.json" --cluster "$paced" \
    --budget 120 -o "$work/conv"
contains "$work/out" "stopped: converged (no better plan in the last" "converging"
iterations=$(sed -n 's/^agent: \([0-9]*\) iterations.*/\1/p' "$work/out")
lines=$(grep -c '^iteration' "$work/out")
[ "$lines" -lt 30 ] && [ "${iterations:-0}" -ge 250 ] && ok ||
    bad "converging: $lines iteration lines for ${iterations:-?} iterations"
contains "$work/conv.report.md" "the agent stopped: converged" "converging: the report"
grep -q ' $' "$work/out" && bad "progress: a line ends in a space" || ok
expect 0 "--no-early-stop" "$bin" "$src/graphs/small/mlp-small.json" --cluster "$paced" \
    --iterations 300 --no-early-stop --progress none -o "$work/conv"
contains "$work/out" "agent: 300 iterations; stopped: the iterations asked for are done" \
    "--no-early-stop"
grep -q '^iteration' "$work/out" && bad "--progress none printed iterations" || ok
expect 2 "--progress sometimes" "$bin" "$model" --progress sometimes
# Where no plan fits (devices of 4 KiB), no line shows a step time: exit 3, said once.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 4096/' "$paced" >"$work/tiny.json"
for mode in lines live; do
    expect 3 "nothing fits, $mode" "$bin" "$src/graphs/small/mlp-small.json" \
        --cluster "$work/tiny.json" --iterations 20 --samples 8 --progress $mode -o "$work/tiny"
    contains "$work/out" "iteration 1  no plan fits yet" "nothing fits, $mode"
    grep -q 'best 0\.000' "$work/out" && bad "nothing fits, $mode: a best step of 0 ms" || ok
    once "$work/err" "no plan fits the cluster's memory" "nothing fits, $mode"
done
# On a terminal (script(1) gives it one): one line rewritten in place, each version of it
# within 80 columns, ended once the agent stops.
if command -v script >/dev/null 2>&1; then
    script -qc "'$bin' '$src/graphs/small/mlp-small.json' --cluster '$paced' --iterations 30 \
        --samples 8 -o '$work/tty'" /dev/null >"$work/tty.out" 2>&1
    /usr/bin/python3 - "$work/tty.out" >"$work/check" <<'PY' && ok || bad "live progress: $(cat "$work/check")"
import re, sys
text = open(sys.argv[1], "rb").read().decode()
lines = [s for s in re.split(r"\r\x1b\[K|\r?\n", text) if s.startswith("iteration")]
widest = max((len(s) for s in lines), default=0)
print(f"{len(lines)} versions of the line, the widest {widest} columns")
sys.exit(0 if len(lines) == 30 and widest <= 80 and "\x1b[K" in text else 1)
PY
else
    echo "SKIP: live progress (no script(1))"
fi
expect 0 "the plan validates" "$bin" validate -q "$model" --cluster "$paced" --plan "$work/inc.plan.json"
ls -a "$work" | grep -q 'placer-tmp-' && bad "a temporary file was left behind" || ok

# Resumed from the checkpoint of 4 iterations, up to 6.
expect 0 "resume" "$bin" "$model" --cluster "$paced" --iterations 6 --samples 8 -o "$work/inc" \
    --resume "$work/inc.agent.ckpt"
contains "$work/out" "resumed from $work/inc.agent.ckpt at iteration 4" "resume"
contains "$work/out" "agent: 6 iterations" "resume"
expect 2 "resume with other samples" "$bin" "$model" --cluster "$paced" --samples 9 -o "$work/x" \
    --resume "$work/inc.agent.ckpt"
contains "$work/err" "other search options" "resume with other samples"
expect 2 "resume without deferral" "$bin" "$model" --cluster "$paced" --samples 8 --no-defer \
    -o "$work/x" --resume "$work/inc.agent.ckpt"
contains "$work/err" "other search options" "resume without deferral"
expect 2 "resume without sweeps" "$bin" "$model" --cluster "$paced" --samples 8 --no-sweep \
    -o "$work/x" --resume "$work/inc.agent.ckpt"
contains "$work/err" "deferral, shape sweeps" "resume without sweeps"
expect 2 "resume without learning" "$bin" "$model" --cluster "$paced" --samples 8 --no-learning \
    -o "$work/x" --resume "$work/inc.agent.ckpt"
contains "$work/err" "other search options" "resume without learning"

# The search without learning: every iteration a refinement, no samples, said as such.
expect 0 "main job without learning" "$bin" "$model" --cluster "$paced" --iterations 3 \
    --samples 8 --no-learning -o "$work/nl"
contains "$work/out" "agent: 3 iterations" "main job without learning"
contains "$work/nl.report.md" "It searched without its learned policy (\`--no-learning\`)" \
    "report without learning"
contains "$work/nl.summary.json" '"learned": false' "summary without learning"
contains "$work/nl.summary.json" '"mean_sampled_first_seconds": null' "summary without learning"
contains "$work/inc.summary.json" '"learned": true' "summary with learning"

# Pre-training and the policy it writes: a job starts from it (--policy) or samples it as
# it is (--zero-shot); options that contradict each other and bad files exit 2.
small=$src/graphs/small/mlp-small.json
expect 0 "pretrain" "$bin" pretrain -o "$work/p.plt" --cluster "$paced" --rounds 2 \
    --iterations 2 --samples 8 "$small" "$src/graphs/small/cnn-small.json"
contains "$work/out" "[4/4] round 2, " "pretrain"
contains "$work/out" "wrote $work/p.plt: " "pretrain"
cp "$work/p.plt" "$work/p1.plt"
expect 0 "pretrain again" "$bin" pretrain -o "$work/p.plt" --cluster "$paced" --rounds 2 \
    --iterations 2 --samples 8 "$small" "$src/graphs/small/cnn-small.json"
cmp -s "$work/p.plt" "$work/p1.plt" && ok || bad "pretrain: the same seed gave other weights"
# A model that fits nowhere (devices of 4 KiB): said, nothing written, exit 3.
expect 3 "pretrain, nothing fits" "$bin" pretrain -o "$work/tiny.plt" --cluster "$work/tiny.json" \
    --rounds 1 --iterations 2 --samples 8 "$small"
once "$work/err" "no plan fits the cluster's memory" "pretrain, nothing fits"
grep -q 'best 0\.000' "$work/out" && bad "pretrain, nothing fits: a best step of 0 ms" || ok
[ -e "$work/tiny.plt" ] && bad "pretrain, nothing fits: a policy was written" || ok
expect 2 "pretrain over its model" "$bin" pretrain -o "$small" "$small"
# --paired: each model on its own cluster. --consolidate then fits the policy to each pair's
# fastest plan of one replica at once: it changes the weights, and sampled as it is (its
# samples alone) the policy places each pair at least as well as that pair's pipeline-dp
# (a plan of one replica of its visit, so at most the fastest one's step).
paced2=$src/share/clusters/paced-2.json
for steps in 0 300; do
    expect 0 "pretrain --paired --consolidate $steps" "$bin" pretrain -o "$work/c$steps.plt" \
        --paired --consolidate $steps --rounds 1 --iterations 2 --samples 8 --cluster "$paced" \
        --cluster "$paced2" "$small" "$src/graphs/small/cnn-small.json"
    contains "$work/out" "round 1, cnn-small on paced-2: " "pretrain --paired"
    contains "$work/out" "round 1, mlp-small on paced-4: " "pretrain --paired"
done
cmp -s "$work/c0.plt" "$work/c300.plt" && bad "pretrain --consolidate: the same weights" || ok
for pair in "cnn-small $paced2" "mlp-small $paced"; do
    set -- $pair
    expect 0 "zero-shot on $1 after --consolidate" "$bin" "$src/graphs/small/$1.json" \
        --cluster "$2" --policy "$work/c300.plt" --zero-shot --no-sweep --no-refine \
        --iterations 3 --samples 16 -o "$work/zc-$1"
    /usr/bin/python3 - "$work/zc-$1.summary.json" <<'PY' && ok || bad "pretrain --consolidate: $1's plan not kept"
import json, sys
s = json.load(open(sys.argv[1]))
pipeline = next(r for r in s["rows"] if r["name"] == "pipeline-dp")["simulated_seconds"]
sys.exit(not s["learning"]["best_simulated_seconds"] <= 1.01 * pipeline)
PY
done
expect 2 "pretrain --paired, a cluster short" "$bin" pretrain -o "$work/x.plt" --paired \
    --cluster "$paced" "$small" "$src/graphs/small/cnn-small.json"
contains "$work/err" "--paired needs as many --cluster as models (1 clusters, 2 models)" \
    "pretrain --paired, a cluster short"
expect 2 "pretrain --consolidate -1" "$bin" pretrain -o "$work/x.plt" --consolidate -1 "$small"
expect 2 "pretrain without -o" "$bin" pretrain "$small"
expect 0 "main job from a policy" "$bin" "$model" --cluster "$paced" --iterations 2 \
    --samples 8 --policy "$work/p.plt" -o "$work/pol"
contains "$work/pol.report.md" "The policy started from the weights in \`$work/p.plt\`." \
    "report from a policy"
contains "$work/pol.summary.json" '"trained": true' "summary from a policy"
expect 0 "zero-shot" "$bin" "$model" --cluster "$paced" --iterations 2 --samples 8 \
    --policy "$work/p.plt" --zero-shot -o "$work/zs"
contains "$work/zs.report.md" "sampled without training (\`--zero-shot\`)" "report zero-shot"
contains "$work/zs.summary.json" '"trained": false' "summary zero-shot"
expect 0 "fresh weights" "$bin" "$model" --cluster "$paced" --iterations 2 --samples 8 \
    --no-pretrained -o "$work/fresh"
contains "$work/fresh.report.md" "The policy started from fresh weights." "report fresh"
contains "$work/fresh.summary.json" '"policy": null' "summary fresh"
expect 0 "--search-seconds" "$bin" "$model" --cluster "$paced" --samples 8 --zero-shot \
    --search-seconds 0.5 --no-early-stop -o "$work/ss"
/usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["learning"]
sys.exit(not 0.4 < s["search_seconds"] < 10)' "$work/ss.summary.json" && ok ||
    bad "--search-seconds 0.5: the agent searched $(grep -o '"search_seconds": [0-9.]*' "$work/ss.summary.json")"
expect 2 "--search-seconds 0" "$bin" "$model" --search-seconds 0
expect 2 "--policy with --no-pretrained" "$bin" "$model" --policy "$work/p.plt" --no-pretrained
expect 2 "--zero-shot with --no-learning" "$bin" "$model" --zero-shot --no-learning
expect 2 "--zero-shot without a policy" env PLACER_POLICY= "$bin" "$model" --zero-shot
contains "$work/err" "no pre-trained one was found" "--zero-shot without a policy"
expect 2 "a model as the policy" "$bin" "$model" --policy "$small" -o "$work/x"
contains "$work/err" "$small: not a placer tensor file" "a model as the policy"
head -c 300 "$work/p.plt" >"$work/cut.plt"
expect 2 "a policy cut short" "$bin" "$model" --policy "$work/cut.plt" -o "$work/x"
once "$work/err" "$work/cut.plt" "a policy cut short"

# Ctrl-C: exit 130, and the best plan so far is written and valid. Without early stops: the
# search converges on this model about a second after its first iteration.
"$bin" "$model" --cluster "$paced" --budget 600 --samples 8 --no-early-stop -o "$work/int" \
    >"$work/out" 2>"$work/err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q "^iteration" "$work/out"; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid
wait $pid
got=$?
[ "$got" -eq 130 ] && ok || bad "Ctrl-C: exit $got, expected 130"
expect 0 "the interrupted plan validates" "$bin" validate -q "$model" --cluster "$paced" --plan "$work/int.plan.json"
contains "$work/int.report.md" "interrupted" "the interrupted report"

# Bad options: exit 2 and one line.
expect 2 "--budget 0" "$bin" "$model" --budget 0
contains "$work/err" "invalid value '0' for --budget" "--budget 0"
expect 2 "--seed x" "$bin" "$model" --seed x
expect 2 "--samples 1" "$bin" "$model" --samples 1
expect 2 "--iterations 0" "$bin" "$model" --iterations 0
expect 2 "unknown option" "$bin" "$model" --frobnicate
expect 2 "missing checkpoint" "$bin" "$model" --cluster "$paced" --resume "$work/none.ckpt" -o "$work/y"
contains "$work/err" "none.ckpt: cannot open" "missing checkpoint"
once "$work/err" "none.ckpt" "missing checkpoint: the path"

# Batch statistics (docs/model-format.md): the model declared per step keeps every plan at
# one micro-batch and says why; a plan of two is refused by every command that reads one,
# and accepted for the bundled model, which declares per micro-batch.
sed 's/"batch_statistics": "per_micro_batch"/"batch_statistics": "per_step"/' "$model" >"$work/per-step.json"
sed 's/"micro_batches": [0-9]*/"micro_batches": 2/' "$work/inc.plan.json" >"$work/two.plan.json"
why='batch_norm "stem/bn" computes statistics over the whole step'"'"'s batch (the model'"'"'s "batch_statistics" is "per_step"; "per_micro_batch" would allow micro-batches)'
expect 0 "two micro-batches, per micro-batch" "$bin" validate -q "$model" --cluster "$paced" --plan "$work/two.plan.json"
expect 0 "validate: per step" "$bin" validate "$work/per-step.json"
contains "$work/out" "micro-batches     one per step: $why" "validate: per step"
expect 2 "validate: two micro-batches, per step" "$bin" validate -q "$work/per-step.json" --cluster "$paced" --plan "$work/two.plan.json"
contains "$work/err" "two.plan.json: /micro_batches: 2 micro-batches, but $why" "validate: two micro-batches, per step"
expect 2 "run: two micro-batches, per step" "$bin" run "$work/per-step.json" --cluster "$paced" --plan "$work/two.plan.json" --steps 1 --warmup 0
contains "$work/err" "/micro_batches: 2 micro-batches, but batch_norm" "run: two micro-batches, per step"
expect 2 "train: two micro-batches, per step" "$bin" train "$work/per-step.json" --cluster "$paced" --plan "$work/two.plan.json" --steps 1
contains "$work/err" "/micro_batches: 2 micro-batches, but batch_norm" "train: two micro-batches, per step"
expect 2 "train --micro-batches 2, per step" "$bin" train "$work/per-step.json" --micro-batches 2 --steps 1
contains "$work/err" "train: 2 micro-batches, but $why" "train --micro-batches 2, per step"
expect 0 "main job, per step" "$bin" "$work/per-step.json" --cluster "$paced" --iterations 2 --samples 8 -o "$work/step"
contains "$work/step.plan.json" '"micro_batches": 1,' "main job, per step: one micro-batch"
contains "$work/step.summary.json" "\"whole_steps\": \"batch_norm" "main job, per step: the summary says why"
contains "$work/step.report.md" "No plan was searched with micro-batches: batch\\_norm" "main job, per step: the report says why"
grep -q '"whole_steps": null' "$work/inc.summary.json" && ok || bad "main job: whole_steps is not null"

# A budget the final head-to-head could fill (steps of 0.2 s on paced-4): the drawings are
# written all the same (short ones always are, however slow the build: sanitizers).
expect 0 "main job, a short budget" "$bin" "$src/graphs/transformer.json" --cluster "$paced" \
    --budget 12 -q -o "$work/short"
for f in plan.dot timeline.svg timeline-measured.svg; do
    [ -s "$work/short.$f" ] && ok || bad "main job, a short budget: no short.$f"
done

# tools/readme-pictures on a copy of the README: the job's pictures copied, its plan's
# sentence and both pictures' links between the markers, nothing else changed; a README
# without the markers is refused before any job runs.
cp "$src/README.md" "$work/README.md"
expect 0 "readme-pictures" /usr/bin/python3 "$src/tools/readme-pictures" --placer "$bin" \
    --model "$src/graphs/small/transformer-small.json" --cluster "$paced" --budget 5 \
    --readme "$work/README.md" --images "$work/images"
for picture in curve timeline-measured; do
    render_svg "$work/images/transformer-small-paced-4.$picture.svg" "readme-pictures: $picture"
    contains "$work/README.md" "](images/transformer-small-paced-4.$picture.svg)" "readme-pictures: $picture"
done
contains "$work/README.md" "One step of the plan the job writes for the transformer-small on paced-4 (" "readme-pictures: the sentence"
outside() { sed '/<!-- \(curve\|plan\): tools\/readme-pictures -->/,/<!-- \/\(curve\|plan\) -->/d' "$1"; }
outside "$src/README.md" >"$work/readme.before"
outside "$work/README.md" >"$work/readme.after"
cmp -s "$work/readme.before" "$work/readme.after" && ok || bad "readme-pictures changed the README outside its blocks"
# The sentence on plans that split ops (over one group, or a group per replica) and
# recompute activations, on paced devices.
cat >"$work/sentence.py" <<'EOF'
import json, sys
from importlib.machinery import SourceFileLoader
tool = SourceFileLoader("readme_pictures", sys.argv[1]).load_module()
summary = {"model": "m", "cluster": "c", "paced": True, "chosen": {"row": 0},
           "rows": [{"kind": "agent", "name": "agent #1"}]}
print(tool.describe(json.load(open(sys.argv[2])), summary))
EOF
for plan in nanogpt-split-recompute-paced-4 transformer-small-split-replicas; do
    expect 0 "readme-pictures: $plan" /usr/bin/python3 "$work/sentence.py" \
        "$src/tools/readme-pictures" "$src/tests/plans/$plan.json"
    cp "$work/out" "$work/$plan.sentence"
done
contains "$work/nanogpt-split-recompute-paced-4.sentence" "ops split over two devices (tensor parallelism), the activations of 26 ops recomputed in the backward pass" "readme-pictures: split and recomputed"
contains "$work/nanogpt-split-recompute-paced-4.sentence" "as the executor ran it on emulated (paced) devices" "readme-pictures: paced devices"
contains "$work/transformer-small-split-replicas.sentence" "two replicas sharing each step's batch" "readme-pictures: split ops in replicas"
contains "$work/transformer-small-split-replicas.sentence" "ops split over two devices" "readme-pictures: split ops in replicas"
echo "no markers" >"$work/plain.md"
expect 2 "readme-pictures without markers" /usr/bin/python3 "$src/tools/readme-pictures" \
    --placer "$bin" --readme "$work/plain.md" --images "$work/images"
contains "$work/err" "expected one '<!-- curve: tools/readme-pictures -->'" "readme-pictures without markers"

finish agent
