#!/bin/sh
# placer calibrate and placer simulate: a profile measured and cached, predictions with
# their lower bound, out-of-memory plans, a comparison with a measured run, bad input.
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

expect 0 "simulate a plan" "$bin" simulate "$mlp" --cluster "$paced" --plan "$plan"
contains "$work/out" 'simulate mlp-small on cluster "paced-4" (paced)' "simulate a plan"
contains "$work/out" "plan: 3 devices, 3 stages, 2 micro-batches, 1F1B" "simulate a plan"
contains "$work/out" "the lower bound of" "simulate a plan"
contains "$work/out" "communication: 8 copies" "simulate a plan"
contains "$work/out" "dev2 " "simulate a plan"

expect 0 "simulate and measure" "$bin" simulate "$mlp" --measure 2
contains "$work/out" "the simulator's error" "simulate and measure"

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
expect 2 "calibrate: extra argument" "$bin" calibrate "$mlp"
expect 2 "simulate: plan of another cluster" "$bin" simulate "$mlp" --plan "$plan"
printf '{"format": "placer-cost-profile", "version": 1, "machine": 5}' >"$work/bad.json"
PLACER_PROFILE=$work/bad.json expect 0 "a broken profile is measured again" "$bin" calibrate -q
contains "$work/out" "calibrated in" "a broken profile is measured again"
printf '{"format": "placer-cost-profile", "version": 1, "machine": 5}' >"$work/bad.json"
PLACER_PROFILE=$work/bad.json expect 0 "a broken profile: why" "$bin" calibrate
contains "$work/err" "calibrating: the cached profile does not read ($work/bad.json: /version: format version 1, made by an older placer" "a broken profile: why"

finish simulate
