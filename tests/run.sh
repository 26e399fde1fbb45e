#!/bin/sh
# placer run and placer train --plan: a placed model measured and trained, its trace and
# timeline, plans that do not fit, and bad input.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
paced=$src/graphs/clusters/paced-4.json
plan=$src/tests/plans/mlp-small-paced-4.json

# A placed run on the paced cluster: the pacing mode, the plan, per-device lines, the
# measurement protocol, a trace that names every device, and its timeline as SVG.
expect 0 "run a plan" "$bin" run "$mlp" --cluster "$paced" --plan "$plan" --steps 4 --warmup 1 \
    --trace "$work/trace.json" --timeline "$work/timeline.svg"
contains "$work/out" 'run mlp-small on cluster "paced-4" (paced:' "run a plan"
contains "$work/out" "plan: 3 devices, 3 stages, 2 micro-batches, 1F1B" "run a plan"
contains "$work/out" "dev2 " "run a plan"
contains "$work/out" "(4 steps after 1 warm-up)" "run a plan"
contains "$work/out" "step time: median" "run a plan"
# The measurement's spreads and its verdict (a paced step is held to its model: steady,
# unless the machine was too busy to keep up).
grep -Eq "^step time: median [0-9.]+ ms ±[0-9.]+%, min .*; spread [0-9.]+% interquartile, [0-9.]+% min to max " \
    "$work/out" && ok || bad "run a plan: no spreads in: $(grep 'step time' "$work/out")"
grep -Eq "^measurement: (steady|UNSTABLE in all 3 rounds)" "$work/out" && ok ||
    bad "run a plan: no verdict on the measurement"
contains "$work/err" "warning: the plan's devices have 3 threads" "run a plan"
contains "$work/trace.json" '"traceEvents"' "trace"
contains "$work/trace.json" '"name":"link dev0 -> dev1"' "trace"
contains "$work/trace.json" '"name":"fc1/matmul#1"' "trace"
ls "$work"/.*trace* >/dev/null 2>&1 && bad "trace: a temporary file is left" || ok

# The timeline: the same step as the trace, a bar per task (66) and a row per device (4)
# and link (4), the step time in the title; it renders.
contains "$work/out" "timeline: $work/timeline.svg (the last step)" "timeline"
# Two outputs on one file: refused before any step; two on /dev/null are fine.
expect 2 "--trace and --timeline on one file" "$bin" run "$mlp" --trace "$work/both" \
    --timeline "$work/both"
contains "$work/err" "are the same file: one would replace the other" "two outputs on one file"
[ -e "$work/both" ] && bad "two outputs on one file: something was written" || ok
expect 0 "--trace and --timeline on /dev/null" "$bin" run "$mlp" --steps 1 --warmup 0 \
    --trace /dev/null --timeline /dev/null
contains "$work/timeline.svg" '<svg xmlns="http://www.w3.org/2000/svg" version="1.1"' "timeline"
contains "$work/timeline.svg" "mlp-small on paced-4, measured (the last of 4 steps, paced) — step " "timeline"
contains "$work/timeline.svg" ">dev0 → dev1</text>" "timeline"
contains "$work/timeline.svg" "<title>fc1/matmul (forward, micro-batch 1): " "timeline"
bars=$(grep -oE ' class="(forward|backward|update|copy)"' "$work/timeline.svg" | wc -l)
[ "$bars" -eq 66 ] && ok || bad "timeline: $bars bars, expected 66 (one per task)"
rows=$(grep -o 'class="row"' "$work/timeline.svg" | wc -l)
[ "$rows" -eq 8 ] && ok || bad "timeline: $rows rows, expected 8 (4 devices, 4 links)"
render_svg "$work/timeline.svg" "run: timeline"
ls "$work"/.*timeline* >/dev/null 2>&1 && bad "timeline: a temporary file is left" || ok

# Without a plan or cluster: every op on the local machine's first device, native.
expect 0 "run without a plan" "$bin" run "$mlp" --steps 2 --warmup 0
contains "$work/out" "native: as fast as this machine runs" "run without a plan"
contains "$work/out" "plan: 1 device, 1 stage, 1 micro-batch, GPipe" "run without a plan"

# A plan that does not fit: exit 3 naming the device, its need and its capacity.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 8192/' "$paced" >"$work/small.json"
expect 3 "a plan that does not fit" "$bin" run "$mlp" --cluster "$work/small.json" --plan "$plan"
contains "$work/err" "out of memory: device dev0 needs" "a plan that does not fit"
contains "$work/err" "has 8.0 KiB (8192 bytes)" "a plan that does not fit"
expect 3 "training with a plan that does not fit" "$bin" train "$mlp" --steps 1 \
    --cluster "$work/small.json" --plan "$plan"
contains "$work/err" "the plan does not fit: device dev0" "training with a plan that does not fit"

# Training with the plan gives the one-device losses (micro-batches as the plan's).
expect 0 "train with a plan" "$bin" train "$mlp" --steps 20 --log-every 10 --cluster "$paced" \
    --plan "$plan"
contains "$work/out" "placed by $plan on cluster \"paced-4\" (3 stages, 1F1B, paced)" "train with a plan"
grep '^step' "$work/out" | sed 's/  [0-9]* samples.*//' >"$work/placed"
expect 0 "train on one device" "$bin" train "$mlp" --steps 20 --log-every 10 --micro-batches 2
grep '^step' "$work/out" | sed 's/  [0-9]* samples.*//' >"$work/single"
if cmp -s "$work/placed" "$work/single"; then ok; else bad "placed and one-device losses differ"; diff "$work/placed" "$work/single"; fi

# Weight gradients deferred behind the forward and backward ops: the same losses again.
sed 's/"schedule": "1f1b",/&\n  "weight_gradients": "deferred",/' "$plan" >"$work/deferred.json"
expect 0 "train with weight gradients deferred" "$bin" train "$mlp" --steps 20 --log-every 10 \
    --cluster "$paced" --plan "$work/deferred.json"
contains "$work/out" "(3 stages, 1F1B, weight gradients deferred, paced)" "train with weight gradients deferred"
grep '^step' "$work/out" | sed 's/  [0-9]* samples.*//' >"$work/deferred"
if cmp -s "$work/deferred" "$work/single"; then ok; else bad "deferred and one-device losses differ"; diff "$work/deferred" "$work/single"; fi
sed 's/"schedule": "1f1b",/&\n  "weight_gradients": "later",/' "$plan" >"$work/later.json"
expect 2 "run: unknown weight_gradients" "$bin" run "$mlp" --cluster "$paced" --plan "$work/later.json"
contains "$work/err" 'unknown weight_gradients "later" (known: with-backward, deferred)' "run: unknown weight_gradients"
contains "$work/err" "/weight_gradients" "run: unknown weight_gradients"

# Bad input: exit 2 with what is wrong.
expect 2 "run: missing model" "$bin" run
expect 2 "run: zero steps" "$bin" run "$mlp" --steps 0
contains "$work/err" "invalid value '0' for --steps" "run: zero steps"
expect 2 "run: a plan for another cluster" "$bin" run "$mlp" --plan "$plan"
contains "$work/err" "mlp-small-paced-4.json" "run: a plan for another cluster"
expect 2 "run: a missing plan" "$bin" run "$mlp" --cluster "$paced" --plan "$work/none.json"
expect 2 "train: --plan with --threads" "$bin" train "$mlp" --plan "$plan" --threads 2
contains "$work/err" "the plan sets the threads" "train: --plan with --threads"
expect 2 "train: --cluster without --plan" "$bin" train "$mlp" --cluster "$paced"
expect 2 "run: trace into a missing directory" "$bin" run "$mlp" --steps 1 --warmup 0 \
    --trace "$work/no/such/trace.json"
expect 2 "run: timeline into a missing directory" "$bin" run "$mlp" --steps 1 --warmup 0 \
    --timeline "$work/no/such/t.svg"
contains "$work/err" "cannot write the timeline '$work/no/such/t.svg'" "run: timeline into a missing directory"
expect 2 "run: the timeline is the plan" "$bin" run "$mlp" --cluster "$paced" --plan "$plan" \
    --timeline "$plan"
contains "$work/err" "the timeline '$plan' is the plan being read" "run: the timeline is the plan"

finish run
