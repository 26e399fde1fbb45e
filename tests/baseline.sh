#!/bin/sh
# placer baseline: one algorithm's plan written and accepted by placer validate, the
# table of every algorithm (measured too), megatron's plan where nothing else fits
# (simulated and measured), bad input.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
paced=$src/graphs/clusters/paced-4.json

own_profile mlp

expect 0 "baseline: one algorithm, written" "$bin" baseline "$mlp" --algo pipeline-dp --cluster "$paced" -o "$work/plan.json"
contains "$work/out" 'baseline placers for mlp-small on cluster "paced-4"' "baseline: one algorithm"
contains "$work/out" "pipeline-dp: plan:" "baseline: one algorithm"
contains "$work/out" "the lower bound" "baseline: one algorithm"
contains "$work/plan.json" '"algorithm": "pipeline-dp"' "baseline: provenance"
expect 0 "validate accepts the plan" "$bin" validate -q "$mlp" --cluster "$paced" --plan "$work/plan.json"
expect 0 "run accepts the plan" "$bin" run "$mlp" --cluster "$paced" --plan "$work/plan.json" --steps 1 --warmup 0

# A plan is checked against the cluster's devices, not its name, and against the model's
# ops, its hash only warned about (docs/plan-format.md).
contains "$work/plan.json" '"devices": [' "the plan lists its devices"
sed 's/"name": "paced-4"/"name": "renamed-4"/' "$paced" >"$work/renamed.json"
expect 0 "a renamed cluster with the same devices" "$bin" validate -q "$mlp" --cluster "$work/renamed.json" --plan "$work/plan.json"
[ ! -s "$work/err" ] && ok || bad "a renamed cluster: not silent: $(cat "$work/err")"
sed -e 's/"name": "paced-4"/"name": "paced-5"/' \
    -e '/"dev3"/s/}$/},\n    {"name": "dev4", "threads": 1, "memory_bytes": 1073741824}/' "$paced" >"$work/paced-5.json"
expect 2 "a cluster with more devices" "$bin" validate -q "$mlp" --cluster "$work/paced-5.json" --plan "$work/plan.json"
contains "$work/err" 'plan.json: /devices: the plan was made for cluster "paced-4" of 4 devices, without device "dev4" of cluster "paced-5" (5 devices)' "a cluster with more devices"
sed 's/"dev2"/"gpu2"/' "$paced" >"$work/other.json"
expect 2 "a cluster with another device" "$bin" validate -q "$mlp" --cluster "$work/other.json" --plan "$work/plan.json"
contains "$work/err" '/devices/2: cluster "paced-4" has no device "dev2"' "a cluster with another device"
sed 's/"lr": 0.01/"lr": 0.02/' "$mlp" >"$work/edited.json"
expect 0 "a plan for an edited model" "$bin" validate -q "$work/edited.json" --cluster "$paced" --plan "$work/plan.json"
contains "$work/err" "placer: warning: $work/plan.json was made for model \"mlp-small\" (" "a plan for an edited model"
contains "$work/err" "not this model \"mlp-small\" (" "a plan for an edited model"
[ "$(wc -l <"$work/err")" -eq 1 ] && ok || bad "a plan for an edited model: not one line"
expect 0 "run warns too" "$bin" run "$work/edited.json" --cluster "$paced" --plan "$work/plan.json" --steps 1 --warmup 0
contains "$work/err" "placer: warning:" "run warns too"
# The local machine and local-2.json describe the same devices on a 2-core machine.
if [ "$(nproc)" -eq 2 ]; then
    expect 0 "baseline on the local machine" "$bin" baseline "$mlp" --algo single -o "$work/local.plan.json"
    expect 0 "a plan for 'local' on local-2.json" "$bin" validate -q "$mlp" \
        --cluster "$src/graphs/clusters/local-2.json" --plan "$work/local.plan.json"
    [ ! -s "$work/err" ] && ok || bad "local on local-2: not silent: $(cat "$work/err")"
fi

expect 0 "baseline: every algorithm, measured" "$bin" baseline "$mlp" --algo all --measure 1
for a in single round-robin expert metis etf sct pipeline-dp; do
    grep -q "^$a .* ms " "$work/out" && ok || bad "baseline all: no row for $a"
done
contains "$work/out" "measured: median of 1 steps after 3 warm-up, native" "baseline all"
# Each ratio to the bound says whose it is; each measured step carries its spread.
grep -Eq "^algorithm +simulated +sim/bound +measured +meas/bound " "$work/out" && ok ||
    bad "baseline all: the header does not name sim/bound and meas/bound"
for a in single round-robin expert metis etf sct pipeline-dp; do
    grep -Eq "^$a .* ms ±[0-9.]+%" "$work/out" && ok || bad "baseline all: $a has no spread"
done
contains "$work/out" "±: half the interquartile range of the measured steps" "baseline all"

# Every bundled cluster: every algorithm places the model, none under the lower bound, and
# on unequal devices etf and sct are no slower than single (the fastest device alone).
for cluster in "$src"/graphs/clusters/*.json; do
    name=$(basename "$cluster" .json)
    case $name in *-ranks-*) continue ;; esac # measured under mpirun: tests/mpi.sh
    expect 0 "baseline all on $name" "$bin" baseline "$mlp" --algo all --cluster "$cluster"
    awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+x$/) { if ($i + 0 < 1) bad = 1; break } }
         END { exit bad }' "$work/out" && ok ||
        bad "baseline all on $name: a plan under the lower bound"
    [ "$name" = unequal-4 ] || continue
    awk '$1 == "single" { alone = $2 } $1 == "etf" || $1 == "sct" { s[$1] = $2 }
         END { exit !(alone > 0 && s["etf"] + 0 <= alone + 0 && s["sct"] + 0 <= alone + 0) }' \
        "$work/out" && ok || bad "baseline all on unequal-4: etf or sct slower than single"
done

# A cluster whose devices cannot hold the model: single fails (exit 3) with a reason, saying
# that it recomputed activations too.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 8192/' "$paced" >"$work/small.json"
expect 3 "baseline: nothing fits" "$bin" baseline "$mlp" --algo single --cluster "$work/small.json"
contains "$work/err" "single: even with activations recomputed, no device holds the whole model" \
    "baseline: nothing fits"
# METIS's own failure text ("***Cannot bisect ...", on a device with a tiny share) stays
# out of the table.
sed -e 's/"flops_per_second": 1e9}/"flops_per_second": 1e5}/' "$src/graphs/clusters/paced-8.json" >"$work/skewed.json"
expect 0 "baseline metis on a skewed cluster" "$bin" baseline "$mlp" --algo all --cluster "$work/skewed.json"
grep -q '\*\*\*' "$work/out" && bad "METIS printed into the table" || ok
contains "$work/out" "metis " "baseline metis on a skewed cluster"
expect 3 "baseline --algo all: nothing fits" "$bin" baseline "$mlp" --algo all --cluster "$work/small.json"
contains "$work/err" "every algorithm failed: no plan fits" "baseline --algo all: nothing fits"

# Devices of 10 MiB, which hold none of mlp's layers with their state (23 MiB in all):
# every other algorithm fails, megatron splits the layers over the four devices; its plan
# validates, and its simulated step is the executor's within a factor of 2.5: a model
# gone wrong, not a busy machine (tests share it; bench-sim measures the accuracy).
big=$src/graphs/mlp.json
sed -e 's/"memory_bytes": 1073741824/"memory_bytes": 10485760/' \
    -e 's/"flops_per_second": 2e9/"flops_per_second": 5e8/' "$paced" >"$work/tight.json"
expect 0 "baseline all: only megatron fits" "$bin" baseline "$big" --algo all --cluster "$work/tight.json"
for a in single round-robin expert metis etf sct pipeline-dp data-parallel hybrid; do
    grep -q "^$a  *failed: " "$work/out" && ok || bad "baseline all on tight devices: $a fits"
done
grep -q "^megatron  *[0-9.]* ms " "$work/out" && ok || bad "baseline all on tight devices: no megatron plan"
expect 0 "baseline megatron, written" "$bin" baseline "$big" --algo megatron --cluster "$work/tight.json" -o "$work/megatron.json"
contains "$work/megatron.json" '"split": [' "megatron's plan splits ops"
contains "$work/megatron.json" '"algorithm": "megatron"' "megatron's provenance"
expect 0 "validate accepts megatron's plan" "$bin" validate -q "$big" --cluster "$work/tight.json" --plan "$work/megatron.json"
expect 0 "megatron's plan simulated and measured" "$bin" simulate "$big" --cluster "$work/tight.json" --plan "$work/megatron.json" --measure 3
error=$(sed -n "s/.*the simulator's error \([-+][0-9.]*\)%.*/\1/p" "$work/out")
awk -v e="$error" 'BEGIN { exit !(e != "" && e >= -60 && e <= 150) }' && ok ||
    bad "megatron's plan: the simulator's error '$error'% is outside -60% to +150%"

# Bad input.
expect 2 "baseline: unknown algorithm" "$bin" baseline "$mlp" --algo random
contains "$work/err" "unknown algorithm 'random' (valid: single, round-robin, expert, metis, etf, sct, pipeline-dp, data-parallel, hybrid, megatron, all)" "baseline: unknown algorithm"
expect 2 "baseline: missing --algo" "$bin" baseline "$mlp"
expect 2 "baseline: bad seed" "$bin" baseline "$mlp" --algo etf --seed -1
expect 2 "baseline: -o with all" "$bin" baseline "$mlp" --algo all -o "$work/x.json"
expect 2 "baseline: missing model" "$bin" baseline --algo etf
[ ! -e "$work/x.json" ] && ok || bad "baseline: -o with all wrote a file"

finish baseline
