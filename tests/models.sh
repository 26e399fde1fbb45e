#!/bin/sh
# The bundled models: tools/gen-models writes graphs/, graphs/small and graphs/calibration
# again byte for byte, and the bundled and calibration models together hold every op kind a
# model file may name, so that calibration fits each kind on its own measurements
# (docs/simulator.md, "Ops").
. "${top_srcdir:-.}/tests/shell_lib.sh"
py=/usr/bin/python3

for dir in "" small calibration; do
    mkdir -p "$work/$dir"
    case $dir in
    "") expect 0 "gen-models" "$py" "$src/tools/gen-models" "$work" ;;
    small) expect 0 "gen-models --small" "$py" "$src/tools/gen-models" --small "$work/small" ;;
    *) expect 0 "gen-models --$dir" "$py" "$src/tools/gen-models" "--$dir" "$work/$dir" ;;
    esac
    for f in "$src/graphs/$dir"/*.json; do
        cmp -s "$f" "$work/$dir/$(basename "$f")" && ok ||
            bad "gen-models: graphs/$dir/$(basename "$f") differs from what it writes"
    done
    # and nothing it writes is missing from the tree
    for f in "$work/$dir"/*.json; do
        [ -e "$src/graphs/$dir/$(basename "$f")" ] && ok ||
            bad "gen-models writes $dir/$(basename "$f"), which graphs/ lacks"
    done
done

# The op kinds a model file may name: the loader's own list, from its error for an unknown
# one.
sed 's/"op":"relu"/"op":"no-such-op"/' "$src/graphs/small/mlp-small.json" >"$work/unknown.json"
expect 2 "an unknown op" "$bin" validate "$work/unknown.json"
contains "$work/err" 'unknown op "no-such-op" (known: ' "an unknown op"
sed -n 's/.*(known: \(.*\))$/\1/p' "$work/err" | tr -d ' ' | tr ',' '\n' | sort >"$work/known"
[ "$(wc -l <"$work/known")" -ge 40 ] && ok || bad "the loader's list of op kinds: $(cat "$work/known")"
"$py" - "$src"/graphs/*.json "$src"/graphs/small/*.json "$src"/graphs/calibration/*.json \
    <<'PY' | sort -u >"$work/held" || bad "the bundled models: unreadable"
import json, sys
for path in sys.argv[1:]:
    for node in json.load(open(path))["nodes"]:
        print(node["op"])
PY
missing=$(comm -23 "$work/known" "$work/held" | tr '\n' ' ')
[ -z "$missing" ] && ok || bad "no bundled or calibration model holds: $missing"

finish models
