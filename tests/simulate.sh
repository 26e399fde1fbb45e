#!/bin/sh
# placer calibrate and placer simulate: a profile measured and cached, predictions with
# their lower bound, their timelines, out-of-memory plans, a comparison with a measured
# run, bad input.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
paced=$src/graphs/clusters/paced-4.json
plan=$src/tests/plans/mlp-small-paced-4.json

own_profile mlp transformer inception

expect 0 "calibrate" "$bin" calibrate -q
contains "$work/out" "profile: $PLACER_PROFILE" "calibrate"
contains "$work/out" "devices of 1 thread:" "calibrate"
contains "$work/out" "calibrated in" "calibrate"
[ -s "$PLACER_PROFILE" ] && ok || bad "calibrate: no profile written"
expect 0 "calibrate again: cached" "$bin" calibrate
contains "$work/out" "(cached; --force measures again)" "calibrate again: cached"
# A model of its own: its ops measured into the profile, then predicted from them all.
models=$src/tests/models
expect 0 "calibrate a model" "$bin" calibrate -q "$models/convolutions.json"
grep -q "^measured 1 model: [1-9][0-9]* op configurations new to the profile" "$work/out" && ok ||
    bad "calibrate a model: no new op configurations"
expect 0 "calibrate a model again" "$bin" calibrate -q "$models/convolutions.json"
contains "$work/out" "measured 1 model: 0 op configurations new to the profile" "calibrate a model again"
grep -Eq "convolutions.json: ([0-9]+) of its \1 training ops measured at its batch, 0 by" "$work/out" &&
    ok || bad "calibrate a model again: not every op measured"

expect 0 "simulate a plan" "$bin" simulate "$mlp" --cluster "$paced" --plan "$plan"
contains "$work/out" 'simulate mlp-small on cluster "paced-4" (paced)' "simulate a plan"
contains "$work/out" "plan: 3 devices, 3 stages, 2 micro-batches, 1F1B" "simulate a plan"
contains "$work/out" "the lower bound of" "simulate a plan"
contains "$work/out" "communication: 8 copies" "simulate a plan"
contains "$work/out" "dev2 " "simulate a plan"

# The simulated step as SVG, for a pipeline of 4 stages: a bar per task (428), a row per
# device (4) and link (7); it renders.
tsmall=$src/graphs/small/transformer-small.json
tplan=$src/tests/plans/transformer-small-paced-4.json
expect 0 "simulate: timeline" "$bin" simulate "$tsmall" --cluster "$paced" --plan "$tplan" \
    --timeline "$work/timeline.svg"
contains "$work/out" "428 tasks" "simulate: timeline"
contains "$work/out" "timeline: $work/timeline.svg (the simulated step)" "simulate: timeline"
step=$(sed -n 's/^predicted step: \([0-9.]*\) ms.*/\1/p' "$work/out")
contains "$work/timeline.svg" "transformer-small on paced-4, simulated (paced) — step $step ms" "simulate: timeline"
bars=$(grep -oE ' class="(forward|backward|update|copy)"' "$work/timeline.svg" | wc -l)
[ "$bars" -eq 428 ] && ok || bad "simulate: timeline: $bars bars, expected 428 (one per task)"
rows=$(grep -o 'class="row"' "$work/timeline.svg" | wc -l)
[ "$rows" -eq 11 ] && ok || bad "simulate: timeline: $rows rows, expected 11 (4 devices, 7 links)"
contains "$work/timeline.svg" ">dev3 → dev2</text>" "simulate: timeline"
contains "$work/timeline.svg" "(backward, micro-batch 1): " "simulate: timeline"
render_svg "$work/timeline.svg" "simulate: timeline"
expect 2 "simulate: the timeline is the model" "$bin" simulate "$tsmall" --timeline "$tsmall"
contains "$work/err" "the timeline '$tsmall' is the model being read" "simulate: the timeline is the model"
expect 2 "simulate: timeline into a missing directory" "$bin" simulate "$mlp" \
    --timeline "$work/no/t.svg"
contains "$work/err" "cannot write the timeline '$work/no/t.svg'" "simulate: timeline into a missing directory"

expect 0 "simulate and measure" "$bin" simulate "$mlp" --measure 2
contains "$work/out" "the simulator's error" "simulate and measure"

# Op times measured elsewhere (tests/trace.sh makes them from a PyTorch trace): said in the
# simulate output, the main job's report and its summary.
printf '{"format": "placer-op-times", "version": 1, "model": "mlp-small", "device": "by hand",
 "batch": 4, "times": [{"ops": ["fc1/matmul", "fc1/bias"], "forward": 0.001, "backward": 0.002}]}' \
    >"$work/times.json"
expect 0 "simulate --op-times" "$bin" simulate "$mlp" --op-times "$work/times.json"
contains "$work/out" "op times: $work/times.json, measured on by hand: 2 of 9 ops (1.000 ms forward), 4 backward ops (2.000 ms)" "simulate --op-times"
expect 0 "the job --op-times" "$bin" "$mlp" --op-times "$work/times.json" --budget 2 -q \
    -o "$work/job"
contains "$work/job.report.md" "takes the times of $work/times.json for 2 of the model's 9 ops and 4 of their backward ops, measured on by hand" "the job --op-times"
contains "$work/job.summary.json" "\"device\": \"by hand\"" "the job --op-times"
expect 2 "the job: the op times are an output" "$bin" "$mlp" --op-times "$work/job.report.md" \
    -o "$work/job"
contains "$work/err" "is the op times being read" "the job: the op times are an output"

# A profile of another machine is measured again, for the cluster's thread counts.
sed 's/"machine": "cpu=/"machine": "elsewhere cpu=/' "$PLACER_PROFILE" >"$work/other.json"
cp "$work/other.json" "$PLACER_PROFILE"
expect 0 "simulate with another machine's profile" "$bin" simulate "$mlp"
contains "$work/err" "placer: calibrating:" "simulate with another machine's profile"
contains "$work/out" "just calibrated" "simulate with another machine's profile"

# Out of memory: exit 3, as placer run.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 8192/' "$paced" >"$work/small.json"
expect 3 "simulate a plan that does not fit" "$bin" simulate "$mlp" --cluster "$work/small.json" --plan "$plan"
contains "$work/err" "out of memory: device dev0 needs" "simulate a plan that does not fit"

# Bad input.
expect 2 "simulate: missing model" "$bin" simulate
expect 2 "simulate: bad --measure" "$bin" simulate "$mlp" --measure 0
expect 2 "calibrate: a model that is not there" "$bin" calibrate "$work/none.json"
expect 2 "calibrate: --check with a model" "$bin" calibrate --check "$mlp"
expect 2 "simulate: plan of another cluster" "$bin" simulate "$mlp" --plan "$plan"
printf '{"format": "placer-cost-profile", "version": 1, "machine": 5}' >"$work/bad.json"
PLACER_PROFILE=$work/bad.json expect 0 "a broken profile is measured again" "$bin" calibrate -q
contains "$work/out" "calibrated in" "a broken profile is measured again"
printf '{"format": "placer-cost-profile", "version": 1, "machine": 5}' >"$work/bad.json"
PLACER_PROFILE=$work/bad.json expect 0 "a broken profile: why" "$bin" calibrate
contains "$work/err" "calibrating: the cached profile does not read ($work/bad.json: /version: format version 1, made by an older placer" "a broken profile: why"

finish simulate
