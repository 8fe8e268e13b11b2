#!/usr/bin/env bash
# Builds one libFuzzer binary per parser target (Fuzz/targets/*.swift) against the HealthCards sources
# compiled with -sanitize=fuzzer,address, then runs each for FUZZ_SECONDS seconds.
#
# Usage: Fuzz/run.sh [TARGET...]   (default: every target)
# Environment: FUZZ_SECONDS (default 60), FUZZ_DIR (default .build/fuzz), FUZZ_JOBS_ARGS (extra libFuzzer flags)
# Crashes are written to $FUZZ_DIR/crashes/<target>-crash-*; the run fails if any target crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_DIR=${FUZZ_DIR:-.build/fuzz}
SWIFTC=${SWIFTC:-swiftc}
CLANG=${CLANG:-$(dirname "$(command -v "$SWIFTC")")/clang}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=($(ls Fuzz/targets/*.swift | xargs -n1 basename | sed 's/\.swift$//'))
fi
mkdir -p "$FUZZ_DIR/CPNG" "$FUZZ_DIR/crashes"
flags=(-parse-as-library -sanitize=fuzzer,address -g -I Sources/COpenSSL -I Sources/CZlib -I Sources/CQRencode -I Sources/CZbar
       -I "$FUZZ_DIR/CPNG")
# The library: every HealthCards source, instrumented, as one static library (rebuilt when a source changes).
sources=($(find Sources/HealthCards -name '*.swift' | sort))
if [ ! -f "$FUZZ_DIR/libHealthCards.a" ] || [ ! -f "$FUZZ_DIR/CPNG.o" ] || [ -n "$(find Sources/HealthCards Sources/CPNG -newer "$FUZZ_DIR/libHealthCards.a" -print -quit)" ]; then
    printf 'module CPNG {\n    header "%s/Sources/CPNG/include/CPNG.h"\n    export *\n}\n' "$PWD" > "$FUZZ_DIR/CPNG/module.modulemap"
    echo "fuzz: compiling the HealthCards library with -sanitize=fuzzer,address"
    "$CLANG" -fsanitize=fuzzer-no-link,address -g -O1 $(pkg-config --cflags libpng) -I Sources/CPNG/include \
        -c Sources/CPNG/CPNG.c -o "$FUZZ_DIR/CPNG.o"
    "$SWIFTC" "${flags[@]}" -enable-testing -module-name HealthCards -emit-module -emit-module-path "$FUZZ_DIR/HealthCards.swiftmodule" \
        -emit-library -static -o "$FUZZ_DIR/libHealthCards.a" "${sources[@]}" 2>&1 | grep -v "^/usr/bin/ld.gold: warning" || true
    test -f "$FUZZ_DIR/libHealthCards.a"
fi
status=0
for target in "${targets[@]}"; do
    binary="$FUZZ_DIR/fuzz-$target"
    if [ ! -x "$binary" ] || [ "Fuzz/targets/$target.swift" -nt "$binary" ] || [ "$FUZZ_DIR/libHealthCards.a" -nt "$binary" ]; then
        echo "fuzz: building $target"
        "$SWIFTC" "${flags[@]}" -I "$FUZZ_DIR" "Fuzz/targets/$target.swift" "$FUZZ_DIR/CPNG.o" -L "$FUZZ_DIR" -lHealthCards \
            -lcrypto -lz -lqrencode -lpng16 -lzbar -o "$binary" 2>&1 | grep -v "^/usr/bin/ld.gold: warning" || true
        test -x "$binary"
    fi
    corpus="$FUZZ_DIR/corpus/$target"
    mkdir -p "$corpus"
    seeds=()
    [ -d "Fuzz/seeds/$target" ] && seeds=("Fuzz/seeds/$target")
    echo "fuzz: running $target for $FUZZ_SECONDS s"
    log="$FUZZ_DIR/$target.log"
    if SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$binary" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/crashes/$target-" ${FUZZ_ARGS:-} "$corpus" "${seeds[@]}" >"$log" 2>&1; then
        echo "fuzz: $target: $(grep -E '^Done [0-9]+ runs' "$log" || tail -1 "$log"), corpus $(ls "$corpus" | wc -l) inputs"
    else
        status=1
        echo "fuzz: $target FAILED; see $log and $FUZZ_DIR/crashes/$target-*"
        grep -E "ERROR|Fatal error|Precondition|==[0-9]+==" "$log" | head -5 || true
    fi
done
exit $status
