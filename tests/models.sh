#!/bin/sh
# The generated models: tools/gen-models writes graphs/, graphs/small, graphs/calibration,
# graphs/bench and the drawing test's model again byte for byte (tools/gen-gpt the split
# tests' GPT), and the bundled and calibration models together hold every op kind a model
# file may name, so that calibration fits each kind on its own measurements
# (docs/simulator.md, "Ops").
. "${top_srcdir:-.}/tests/shell_lib.sh"
py=/usr/bin/python3

# same_files WHAT DIR PATTERN: every file of $src/DIR matching PATTERN is what gen-models
# wrote into $work/DIR, and gen-models wrote no such file that DIR lacks
same_files() {
    for f in "$src/$2"/$3; do
        cmp -s "$f" "$work/$2/$(basename "$f")" && ok ||
            bad "$1: $2/$(basename "$f") differs from what it writes"
    done
    for f in "$work/$2"/$3; do
        [ -e "$src/$2/$(basename "$f")" ] && ok ||
            bad "$1 writes $2/$(basename "$f"), which $2 lacks"
    done
}

mkdir -p "$work/graphs/small" "$work/graphs/calibration" "$work/graphs/bench" "$work/tests/models"
expect 0 "gen-models" "$py" "$src/tools/gen-models" "$work/graphs"
same_files "gen-models" graphs "*.json"
expect 0 "gen-models --small" "$py" "$src/tools/gen-models" --small "$work/graphs/small"
same_files "gen-models --small" graphs/small "*.json"
for set in calibration bench; do # (expect sets $what)
    expect 0 "gen-models --$set" "$py" "$src/tools/gen-models" "--$set" "$work/graphs/$set"
    same_files "gen-models --$set" "graphs/$set" "*.json"
done
expect 0 "gen-models --drawing" "$py" "$src/tools/gen-models" --drawing "$work/tests/models"
same_files "gen-models --drawing" tests/models densenet-like.json
# the split tests' GPT of sizes that do not divide (tests/test_split.c)
expect 0 "gen-gpt: gpt-odd" "$py" "$src/tools/gen-gpt" --layers 1 --hidden 18 --heads 2 \
    --vocab 37 --sequence 8 --batch 8 --optimizer sgd --name gpt-odd -o "$work/tests/models/gpt-odd.json"
same_files "gen-gpt" tests/models gpt-odd.json

# The op kinds a model file may name: the loader's own list, from its error for an unknown
# one.
sed 's/"op":"relu"/"op":"no-such-op"/' "$src/graphs/small/mlp-small.json" >"$work/unknown.json"
expect 2 "an unknown op" "$bin" validate "$work/unknown.json"
contains "$work/err" 'unknown op "no-such-op" (known: ' "an unknown op"
sed -n 's/.*(known: \(.*\))$/\1/p' "$work/err" | tr -d ' ' | tr ',' '\n' | sort >"$work/known"
[ "$(wc -l <"$work/known")" -ge 40 ] && ok ||
    bad "the loader's list of op kinds: $(cat "$work/known")"
if "$py" - "$src"/graphs/*.json "$src"/graphs/small/*.json "$src"/graphs/calibration/*.json \
    >"$work/ops" <<'PY'
import json, sys
for path in sys.argv[1:]:
    for node in json.load(open(path))["nodes"]:
        print(node["op"])
PY
then ok; else bad "the bundled and calibration models: unreadable"; fi
sort -u "$work/ops" >"$work/held"
missing=$(comm -23 "$work/known" "$work/held" | tr '\n' ' ')
[ -z "$missing" ] && ok || bad "no bundled or calibration model holds: $missing"

finish models
