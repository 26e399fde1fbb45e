#!/bin/sh
# The shared library's surface is what the installed headers state: every symbol
# libplacer.so exports is declared in an installed header, every function or variable an
# installed header declares is exported, and src/libplacer.sym (the export list) names
# nothing else. Fails with the names that differ.
. "${top_srcdir:-.}/tests/shell_lib.sh"

headers=${PLACER_PUBLIC_HEADERS:?the installed headers (set by make check)}
la=$(cd "${top_builddir:-.}" && pwd)/libplacer.la
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$la")
if [ -z "$dlname" ]; then
    echo "SKIP: symbols: no shared library was built (--disable-shared): nothing to check"
    exit 77
fi
so=$(dirname "$la")/.libs/$dlname

# Top-level declarations of the headers, read from their text: comments, preprocessor lines
# and the C++ guards dropped, the insides of braces skipped; a statement ending in ';'
# that is not a typedef names a function (the word before its first '(') or, with
# 'extern', a variable (its last word). A body closing at the top level is an inline
# function's, which is not exported.
declared() {
    for h in $headers; do cat "$src/$h"; done | awk '
        /^#ifdef __cplusplus/ { guard = 1; next }
        guard { if ($0 ~ /^#endif/) guard = 0; next }
        continued || /^[ \t]*#/ { continued = /\\$/; next }
        { text = text $0 "\n" }
        END {
            while ((i = index(text, "/*")) > 0) {
                rest = substr(text, i + 2)
                text = substr(text, 1, i - 1) " " substr(rest, index(rest, "*/") + 2)
            }
            depth = 0
            statement = ""
            for (i = 1; i <= length(text); i++) {
                c = substr(text, i, 1)
                if (c == "{") { depth++; continue }
                if (c == "}") {
                    if (--depth == 0 && statement ~ /\(/) statement = ""
                    continue
                }
                if (depth > 0) continue
                if (c != ";") { statement = statement c; continue }
                gsub(/[ \t\n]+/, " ", statement)
                sub(/^ /, "", statement)
                if (statement !~ /^(typedef|static) /) {
                    if (statement ~ /\(/) {
                        name = substr(statement, 1, index(statement, "(") - 1)
                        sub(/ *$/, "", name)
                        sub(/.*[ *]/, "", name)
                        print name
                    } else if (statement ~ /^extern /) {
                        sub(/ *(\[.*|=.*)?$/, "", statement)
                        sub(/.*[ *]/, "", statement)
                        print statement
                    }
                }
                statement = ""
            }
        }' | LC_ALL=C sort -u
}

declared >"$work/declared"
${NM:-nm} -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | LC_ALL=C sort -u >"$work/exported"
LC_ALL=C sort -u "$src/src/libplacer.sym" >"$work/listed"

# report FILE-A FILE-B WHAT: the names in A that B lacks.
report() {
    LC_ALL=C comm -23 "$1" "$2" >"$work/differ"
    if [ -s "$work/differ" ]; then
        bad "$3: $(tr '\n' ' ' <"$work/differ")"
    else
        ok
    fi
}
report "$work/exported" "$work/declared" "exported by $dlname but declared in no installed header"
report "$work/declared" "$work/exported" "declared in an installed header but not exported (src/libplacer.sym)"
report "$work/listed" "$work/declared" "in src/libplacer.sym but declared in no installed header"
# The reading itself: a declaration every version of the API has.
grep -qx pl_graph_load_file "$work/declared" && ok || bad "the headers' declarations were not read"

echo "symbols: $(wc -l <"$work/exported") exported, $(wc -l <"$work/declared") declared"
finish symbols
