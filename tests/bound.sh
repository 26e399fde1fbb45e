#!/bin/sh
# The lower bound on native devices holds for measured steps: plans of several kinds
# (one device, a GPipe pipeline of micro-batches, data-parallel replicas, megatron's, and
# fc1 and fc2 split over both devices by hand) on local-2, for models the profile
# measured (mlp-small, recommender-small) and one it did not (the full mlp: every op time
# from the fit), each measured and compared with its bound. A busy machine makes steps slower, never faster, so the check
# stays sound under load.
. "${top_srcdir:-.}/tests/shell_lib.sh"

local2=$src/graphs/clusters/local-2.json
own_profile mlp recommender
expect 0 "calibrate" "$bin" calibrate -q --cluster "$local2"

# measured MODEL ALGO: the measured step of the baseline's plan holds its lower bound
measured() {
    what="bound: $1 $2"
    expect 0 "$what" "$bin" baseline "$1" --algo "$2" --cluster "$local2" --measure 5
    ratio=$(sed -n 's/^measured step: .*, \([0-9.]*\)x the lower bound.*/\1/p' "$work/out")
    if [ -z "$ratio" ]; then
        bad "$what: no measured step"
        sed 's/^/    /' "$work/out"
    elif awk -v r="$ratio" 'BEGIN { exit !(r >= 1) }'; then
        ok
    else
        bad "$what: measured at ${ratio}x the lower bound"
        sed 's/^/    /' "$work/out"
    fi
}

# split MODEL PLAN: the same for a plan of split ops, which simulate measures
split() {
    what="bound: $1 split"
    expect 0 "$what" "$bin" simulate "$1" --plan "$2" --cluster "$local2" --measure 5
    contains "$work/out" "6 ops split over 2 devices" "$what"
    bound=$(sed -n 's/.*the lower bound of \([0-9.]*\) ms.*/\1/p' "$work/out")
    step=$(sed -n 's/^measured step: median \([0-9.]*\) ms.*/\1/p' "$work/out")
    if [ -z "$bound" ] || [ -z "$step" ]; then
        bad "$what: no bound or measured step"
        sed 's/^/    /' "$work/out"
    elif awk -v s="$step" -v b="$bound" 'BEGIN { exit !(s >= b) }'; then
        ok
    else
        bad "$what: measured $step ms, below the lower bound of $bound ms"
        sed 's/^/    /' "$work/out"
    fi
}

for algo in single pipeline-dp data-parallel megatron; do
    measured "$src/graphs/small/mlp-small.json" $algo
    measured "$src/graphs/small/recommender-small.json" $algo
done
measured "$src/graphs/mlp.json" pipeline-dp
split "$src/graphs/mlp.json" "$src/tests/plans/mlp-split-local-2.json"

echo "bound: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
