#!/bin/sh
# Hardware placer cannot run: the bundled hardware clusters describe themselves, the job
# plans on one on the simulator alone (no calibration, nothing measured) and says so in
# every output, run and train refuse, and tools/gen-gpt writes a model of a billion
# parameters that loads.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
dgx=$src/graphs/clusters/dgx-a100.json
own_profile mlp

for c in dgx-a100 dgx-h100 a100-2-nodes a100-4-nodes pcie-a100 mixed-a100-h100; do
    expect 0 "cluster $c" "$bin" cluster "$src/graphs/clusters/$c.json"
    contains "$work/out" "hardware this machine cannot run" "cluster $c"
    contains "$work/out" "FLOP per byte" "cluster $c"
done
expect 0 "cluster dgx-a100" "$bin" cluster "$dgx"
contains "$work/out" "node node0: 8 devices of A100-SXM4-80GB" "cluster dgx-a100"
contains "$work/out" "300 GB/s, 2 us per direction: 28 pairs (e.g. node0/0 - node0/1), 520 FLOP per byte" "cluster dgx-a100"
expect 0 "cluster a100-2-nodes" "$bin" cluster "$src/graphs/clusters/a100-2-nodes.json"
contains "$work/out" "25 GB/s, 5 us per direction: 64 pairs (e.g. node0/0 - node1/0), 6240 FLOP per byte" "cluster a100-2-nodes"
contains "$work/out" "ports: a device's copies to its node share its node port, to other nodes its" "cluster a100-2-nodes"
sed 's/"nodes"/"ports": false, "nodes"/' "$dgx" > "$work/dgx-no-ports.json"
expect 0 "cluster dgx-a100 without ports" "$bin" cluster "$work/dgx-no-ports.json"
contains "$work/out" "no ports: every pair has a link of its own" "cluster dgx-a100 without ports"

simulated='simulated: this machine cannot run cluster "dgx-a100"'
expect 0 "job on dgx-a100" "$bin" "$mlp" --cluster "$dgx" --budget 20 --iterations 3 \
    --progress none -o "$work/mlp"
contains "$work/out" "$simulated" "job on dgx-a100"
contains "$work/out" "error is unknown (not calibrated against this hardware)" "job on dgx-a100"
contains "$work/out" "simulated step" "job on dgx-a100"
contains "$work/mlp.report.md" "$simulated" "job on dgx-a100: the report"
contains "$work/mlp.summary.json" "\"simulated\": \"$(echo "$simulated" | sed 's/"/\\"/g')" "job on dgx-a100: the summary"
contains "$work/mlp.plan.json" "this machine cannot run cluster \\\"dgx-a100\\\": the predicted step is the simulator's" "job on dgx-a100: the plan's provenance"
contains "$work/mlp.plan.json" '"measured_seconds": 0.0' "job on dgx-a100: nothing measured"
[ ! -e "$PLACER_PROFILE" ] && ok || bad "job on dgx-a100: this machine was calibrated for it"

expect 2 "run on dgx-a100" "$bin" run "$mlp" --cluster "$dgx" --plan "$work/mlp.plan.json"
contains "$work/err" 'this machine cannot run cluster "dgx-a100" (A100-SXM4-80GB is hardware' "run on dgx-a100"
expect 2 "train on dgx-a100" "$bin" train "$mlp" --cluster "$dgx" --plan "$work/mlp.plan.json"
contains "$work/err" 'train: this machine cannot run cluster "dgx-a100"' "train on dgx-a100"
expect 0 "replay on dgx-a100" "$bin" run "$mlp" --cluster "$dgx" --plan "$work/mlp.plan.json" \
    --replay 100 --steps 2 --warmup 1
contains "$work/out" 'replay mlp-small on cluster "dgx-a100" (replayed: paced devices 100 times slower' "replay on dgx-a100"
contains "$work/out" "the simulator at the replay's speeds" "replay on dgx-a100"
# A round-robin plan sends from each device to several peers: the replay runs those copies
# on the devices' ports, a thread each, as the simulator does.
expect 0 "round-robin on dgx-a100" "$bin" baseline "$mlp" --cluster "$dgx" --algo round-robin \
    -o "$work/rr.json"
expect 0 "replay with ports" "$bin" run "$mlp" --cluster "$dgx" --plan "$work/rr.json" \
    --replay 100 --steps 2 --warmup 1 --trace "$work/rr.trace.json"
contains "$work/out" "the simulator at the replay's speeds" "replay with ports"
contains "$work/rr.trace.json" "link node0/0 -> node port" "replay with ports: the trace's rows"
expect 2 "replay: a cluster that runs here" "$bin" run "$mlp" --cluster "$src/graphs/clusters/paced-4.json" --replay 10
contains "$work/err" '--replay replays hardware placer cannot run; cluster "paced-4" runs here' "replay: a cluster that runs here"
expect 2 "replay: below 1" "$bin" run "$mlp" --cluster "$dgx" --replay 0.5
expect 0 "simulate on dgx-a100" "$bin" simulate "$mlp" --cluster "$dgx" --plan "$work/mlp.plan.json"
contains "$work/out" "$simulated" "simulate on dgx-a100"

# Op times measured elsewhere take the place of the roofline for the ops they time: one
# op's 10 ms forward moves a one-device step from well under a millisecond to over 10 ms.
cat > "$work/mlp.times.json" <<'EOF2'
{"format": "placer-op-times", "version": 1, "model": "mlp-small", "device": "a GPU", "batch": 4,
 "times": [{"module": "fc1", "ops": ["fc1/matmul"], "forward": 0.010}]}
EOF2
expect 0 "single on dgx-a100" "$bin" baseline "$mlp" --cluster "$dgx" --algo single -o "$work/single.json"
expect 0 "simulate with op times on dgx-a100" "$bin" simulate "$mlp" --cluster "$dgx" \
    --plan "$work/single.json" --op-times "$work/mlp.times.json"
contains "$work/out" "from the op times measured on a GPU for 1 of the model's ops and the roofline" \
    "simulate with op times on dgx-a100"
contains "$work/out" "the rest from the roofline" "simulate with op times on dgx-a100"
step=$(sed -n 's/^predicted step: \([0-9.]*\) ms.*/\1/p' "$work/out")
awk -v s="$step" 'BEGIN { exit !(s >= 10 && s < 11) }' && ok ||
    bad "simulate with op times on dgx-a100: the step $step ms is not the op's 10 ms and the rest's"

expect 0 "gen-gpt" /usr/bin/python3 "$src/tools/gen-gpt" -o "$work/gpt.json"
contains "$work/err" "1416602705 parameters (1.42 B)" "gen-gpt"
expect 0 "gen-gpt: the model loads" "$bin" validate "$work/gpt.json"
contains "$work/out" "1.42 G values" "gen-gpt: the model loads"
expect 2 "gen-gpt: heads must divide hidden" /usr/bin/python3 "$src/tools/gen-gpt" --heads 5 -o "$work/bad.json"
finish hardware
