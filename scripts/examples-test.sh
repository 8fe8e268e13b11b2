#!/usr/bin/env bash
# Runs every example (Examples/NAME/main.swift, each the executable target example-NAME of the root package,
# public API only) from an already built bin folder, from the repository root, with no arguments: each must exit
# 0. Then `ldd` on each must name none of the project's C libraries its product may not link, by ONE table: the
# "Examples" table of docs/library.md (product | example | may link), read here, so the two cannot disagree.
# A library an allowed one pulls in itself is allowed (Cairo links libpng and zlib: `ldd` of the allowed
# library names it).
# Usage: scripts/examples-test.sh [BIN_DIR]   (or BIN_DIR=...; default: `swift build --show-bin-path`)
# Nothing is built here: `make examples` runs after the main build (a sanitizer build's folder works too).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${BIN_DIR:-}}"
[ -n "$bin" ] || bin="$(swift build --show-bin-path)"
[ -d "$bin" ] || { echo "examples: no bin folder $bin (build first: swift build)" >&2; exit 1; }

# The project's C libraries, by the name their soname starts with (before .so and any -VERSION).
project_libs="libcrypto libz libqrencode libpng16 libjpeg libzbar libZXing libcairo libpango librsvg libmicrohttpd libsqlite3 libpq"

# The table: rows "| `Product` | `Examples/NAME` | lib, lib, ... |" between the markers in docs/library.md.
table=$(sed -n '/<!-- examples-ldd-table -->/,/<!-- \/examples-ldd-table -->/p' docs/library.md \
    | grep -E '^\| `HealthCards[A-Za-z]+` \| `Examples/[a-z0-9-]+` \|' || true)
[ -n "$table" ] || { echo "examples: docs/library.md has no examples-ldd-table" >&2; exit 1; }

# Every example folder is in the table, and every row names a folder that is there.
for dir in Examples/*/; do
    name=$(basename "$dir")
    grep -q "\`Examples/$name\`" <<<"$table" || { echo "examples: Examples/$name is not in docs/library.md's table" >&2; exit 1; }
done

# The base name of each project library a binary's ldd lists: libpango-1.0.so.0 -> libpango, librsvg-2.so.2 -> librsvg.
linked_project_libs() {
    ldd "$1" | awk -v libs="$project_libs" '
        BEGIN { n = split(libs, l, " "); for (i = 1; i <= n; i++) want[l[i]] = 1 }
        { base = $1; sub(/\.so.*$/, "", base); sub(/-[0-9.]+$/, "", base); if (base in want) print base }' | sort -u
}

failed=0
while IFS='|' read -r _ product example allowed _; do
    product=$(tr -d ' `' <<<"$product")
    example=$(tr -d ' `' <<<"$example")
    name=${example#Examples/}
    allowed=$(tr ',' ' ' <<<"$allowed" | xargs)
    exe="$bin/example-$name"
    [ -d "$example" ] || { echo "examples: docs/library.md names $example, which is not there" >&2; exit 1; }
    [ -x "$exe" ] || { echo "examples: no executable $exe (build first: swift build)" >&2; exit 1; }
    for lib in $allowed; do
        grep -qw -- "$lib" <<<"$project_libs" || { echo "examples: $product may link $lib, which is not a project library" >&2; exit 1; }
    done
    echo "examples: $example ($product): $exe"
    if ! out=$("$exe" </dev/null 2>&1); then
        printf '%s\n' "$out" | sed 's/^/  /'
        echo "examples: $example: exited non-zero" >&2
        failed=1
        continue
    fi
    printf '%s\n' "$out" | sed 's/^/  /'
    # What the allowed libraries pull in themselves is allowed too.
    closure=" $allowed "
    for lib in $allowed; do
        path=$(ldd "$exe" | awk -v l="$lib" '!found && $1 ~ "^"l"(-[0-9.]+)?\\.so" {print $3; found = 1}')
        [ -n "$path" ] || continue
        closure+=" $(linked_project_libs "$path" | xargs) "
    done
    linked=$(linked_project_libs "$exe" | xargs)
    bad=""
    for lib in $linked; do [[ "$closure" == *" $lib "* ]] || bad+=" $lib"; done
    if [ -n "$bad" ]; then
        ldd "$exe" | sed 's/^/  /'
        echo "examples: $example links$bad, which $product may not (docs/library.md, Examples)" >&2
        failed=1
    else
        echo "examples: $example links ${linked:-none} of the project's C libraries; $product may link: $allowed"
    fi
done <<<"$table"
exit $failed
