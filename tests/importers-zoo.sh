#!/bin/sh
# One shard of the importers' zoo: tests/importers/check.py on every Nth model of
# IMPORTER_MODELS (all of tools/importers/zoo.py's MODELS when "all" or unset), through
# both importers, against PyTorch. `make check` names the shards tests/zoo/K-of-N.zoo
# (Makefile.am, ZOO_SHARDS) and runs this with each, so that the shards run side by side
# under `make -j check`: one check.py is one process on one core. Skipped (exit 77) as
# tests/importers.sh is, when the importers' Python packages are missing.
. "${top_srcdir:-.}/tests/shell_lib.sh"

name=importers-zoo-$(basename "${1:?usage: tests/importers-zoo.sh tests/zoo/K-of-N.zoo}" .zoo)
shard=$(echo "${name#importers-zoo-}" | sed 's|-of-|/|')
need_importers "$name"

models=${IMPORTER_MODELS:-all}
[ "$models" = all ] && models=
# shellcheck disable=SC2086
if "$py" "$src/tests/importers/check.py" --placer "$bin" --shard "$shard" $models \
    >"$work/check" 2>&1
then
    ok
else
    bad "check.py --shard $shard: a model differs from PyTorch or does not import"
fi
cat "$work/check"

finish "$name"
