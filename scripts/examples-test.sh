#!/usr/bin/env bash
# Builds and runs every example client (Examples/*/, each a Swift package that depends on this one by path and
# uses only its public API) from the repository root, as docs/library.md says to: `swift run --package-path
# Examples/NAME` with no arguments must exit 0. When an example has a must-not-link.txt (one library name per
# line, # for comments), `ldd` on its executable must name none of them.
# Usage: scripts/examples-test.sh [NAME...]   (default: every folder under Examples/)
set -euo pipefail
cd "$(dirname "$0")/.."
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for dir in Examples/*/; do [ -f "$dir/Package.swift" ] && names+=("$(basename "$dir")"); done
fi
for name in "${names[@]}"; do
    dir="Examples/$name"
    echo "examples: $dir: swift run --package-path $dir"
    swift build --package-path "$dir" ${SWIFT_FLAGS:-}
    # The executable the package makes (its one executable product; named after the folder by convention).
    bin="$(swift build --package-path "$dir" --show-bin-path)/$name"
    [ -x "$bin" ] || { echo "examples: $dir: no executable $bin" >&2; exit 1; }
    if ! out=$(swift run --skip-build --package-path "$dir" 2>&1); then
        printf '%s\n' "$out"
        echo "examples: $dir: swift run failed" >&2
        exit 1
    fi
    printf '%s\n' "$out" | sed 's/^/  /'
    if [ -f "$dir/must-not-link.txt" ]; then
        linked=$(ldd "$bin")
        while read -r lib; do
            [ -z "$lib" ] || [ "${lib#\#}" != "$lib" ] && continue
            if printf '%s\n' "$linked" | grep -q -- "$lib"; then
                printf '%s\n' "$linked"
                echo "examples: $dir: $bin links $lib, which it must not (must-not-link.txt)" >&2
                exit 1
            fi
        done < "$dir/must-not-link.txt"
        echo "examples: $dir: ldd names none of: $(grep -v '^#' "$dir/must-not-link.txt" | tr '\n' ' ')"
    fi
done
