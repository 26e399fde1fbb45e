#!/bin/sh
# The models written by hand the common ways (tests/importers/written.py) through
# tools/import-torch, their outputs against PyTorch's (tools/import-survey --set written): as
# many import and match as did. With IMPORTER_MODELS "all" (or unset) only, as in
# tools/check's first step: skipped (exit 77) when `make check` names a few models
# (Makefile.am), and as tests/importers.sh is when the importers' Python packages are
# missing.
. "${top_srcdir:-.}/tests/shell_lib.sh"

if [ "${IMPORTER_MODELS:-all}" != all ]; then
    echo "SKIP: importers-written: run with IMPORTER_MODELS=all only (tools/check's first step)"
    exit 77
fi
need_importers importers-written

"$src/tools/import-survey" --set written --placer "$bin" >"$work/written" 2>&1
cat "$work/written"
matched=$(sed -n 's/.*outputs match \([0-9]*\) .*/\1/p' "$work/written")
[ "${matched:-0}" -ge 30 ] && ok || bad "import-survey --set written: ${matched:-no} models match, expected at least 30"

finish importers-written
