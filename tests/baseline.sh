#!/bin/sh
# placer baseline: one algorithm's plan written and accepted by placer validate, the
# table of every algorithm (measured too), bad input.
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

expect 0 "baseline: every algorithm, measured" "$bin" baseline "$mlp" --algo all --measure 1
for a in single round-robin expert metis etf sct pipeline-dp; do
    grep -q "^$a .* ms " "$work/out" && ok || bad "baseline all: no row for $a"
done
contains "$work/out" "measured: median of 1 steps after 3 warm-up, native" "baseline all"

# A cluster whose devices cannot hold the model: single fails with a reason.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 8192/' "$paced" >"$work/small.json"
expect 2 "baseline: nothing fits" "$bin" baseline "$mlp" --algo single --cluster "$work/small.json"
contains "$work/err" "no device holds the whole model" "baseline: nothing fits"
# METIS's own failure text ("***Cannot bisect ...", on a device with a tiny share) stays
# out of the table.
sed -e 's/"flops_per_second": 1e9}/"flops_per_second": 1e5}/' "$src/graphs/clusters/paced-8.json" >"$work/skewed.json"
expect 0 "baseline metis on a skewed cluster" "$bin" baseline "$mlp" --algo all --cluster "$work/skewed.json"
grep -q '\*\*\*' "$work/out" && bad "METIS printed into the table" || ok
contains "$work/out" "metis " "baseline metis on a skewed cluster"
expect 3 "baseline --algo all: nothing fits" "$bin" baseline "$mlp" --algo all --cluster "$work/small.json"
contains "$work/err" "every algorithm failed: no plan fits" "baseline --algo all: nothing fits"

# Bad input.
expect 2 "baseline: unknown algorithm" "$bin" baseline "$mlp" --algo random
contains "$work/err" "unknown algorithm 'random' (valid: single, round-robin, expert, metis, etf, sct, pipeline-dp, all)" "baseline: unknown algorithm"
expect 2 "baseline: missing --algo" "$bin" baseline "$mlp"
expect 2 "baseline: bad seed" "$bin" baseline "$mlp" --algo etf --seed -1
expect 2 "baseline: -o with all" "$bin" baseline "$mlp" --algo all -o "$work/x.json"
expect 2 "baseline: missing model" "$bin" baseline --algo etf
[ ! -e "$work/x.json" ] && ok || bad "baseline: -o with all wrote a file"

finish baseline
