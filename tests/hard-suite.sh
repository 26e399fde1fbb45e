#!/bin/sh
# The hard suite (graphs/hard): tools/gen-hard writes its files again byte for byte; it has
# at least 12 instances, each naming a model and a cluster that load, the large one of
# 10,000 ops or more on 64 devices, in a training half and a held-out half of at least
# five each; tools/bench-agent refuses a suite naming a missing file or another half.
. "${top_srcdir:-.}/tests/shell_lib.sh"
need_importers "the hard suite"

hard=$src/graphs/hard
mkdir -p "$work/top"
expect 0 "gen-hard" "$src/tools/gen-hard" --top "$work/top"
for f in suite.json vgg11.json gpt-15m.json gpt-1.3b.json dag-10k.json \
    clusters/paced-2-nodes.json clusters/paced-4-nodes.json \
    clusters/paced-2-generations.json clusters/a100-8-nodes.json; do
    cmp -s "$hard/$f" "$work/top/graphs/hard/$f" && ok || bad "gen-hard: $f differs from the bundled one"
done

# model cluster: every instance, as paths from the top
/usr/bin/python3 - "$hard/suite.json" >"$work/instances" <<'PY' || bad "suite.json unreadable"
import json, sys
for i in json.load(open(sys.argv[1]))["instances"]:
    print(i["model"], i["cluster"])
PY
[ "$(wc -l <"$work/instances")" -ge 12 ] && ok || bad "the hard suite: fewer than 12 instances"
while read -r model cluster; do
    expect 0 "validate $model" "$bin" validate -q "$src/$model"
    expect 0 "cluster $cluster" "$bin" cluster "$src/$cluster"
done <"$work/instances"

expect 0 "validate dag-10k" "$bin" validate "$hard/dag-10k.json"
ops=$(awk '$1 == "ops" { print $2 }' "$work/out")
[ "${ops:-0}" -ge 10000 ] && ok || bad "dag-10k: $ops ops, expected 10,000 or more"
expect 0 "cluster a100-8-nodes" "$bin" cluster "$hard/clusters/a100-8-nodes.json"
contains "$work/out" "64 devices" "cluster a100-8-nodes"

/usr/bin/python3 - "$hard/suite.json" >"$work/halves" <<'PY' || bad "suite.json unreadable"
import json, sys
halves = [i["half"] for i in json.load(open(sys.argv[1]))["instances"]]
print(halves.count("train"), halves.count("held-out"))
PY
read -r train held <"$work/halves"
[ "$train" -ge 5 ] && [ "$held" -ge 5 ] && ok ||
    bad "the hard suite's halves: $train training and $held held-out instances, expected 5 or more each"

# A suite naming a file that is not there, or a half of another name: refused before any
# job runs.
sed 's|"half": "held-out"|"half": "test"|' "$hard/suite.json" >"$work/half.json"
expect 1 "a suite with another half" "$src/tools/bench-agent" --suite "$work/half.json" --transfer
contains "$work/err" '/instances/1/half: "train" or "held-out"' "a suite with another half"
sed 's|graphs/moe.json|graphs/missing.json|' "$hard/suite.json" >"$work/broken.json"
expect 1 "a suite naming a missing model" "$src/tools/bench-agent" --suite "$work/broken.json"
contains "$work/err" "no file $src/graphs/missing.json" "a suite naming a missing model"

finish hard-suite
