#!/usr/bin/env bash
# Builds one libFuzzer binary per parser target (Fuzz/targets/*.swift) against the library's sources
# compiled with -sanitize=fuzzer,address, then runs each for FUZZ_SECONDS seconds.
#
# Usage: Fuzz/run.sh [TARGET...]   (default: every target)
# Environment: FUZZ_SECONDS (default 60) for the parser targets, FUZZ_STRUCTURED_SECONDS (default 600) for
# the structure-aware ones (card, issue, row, batch: each input is a whole signed card or batch record, so
# they run fewer inputs a second and need longer), FUZZ_DIR (default .build/fuzz), FUZZ_ARGS (extra
# libFuzzer flags). Everything runs under `nice -n 10`: the machine is shared.
# Crashes are written to $FUZZ_DIR/crashes/<target>-crash-*; the run fails if any target crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_STRUCTURED_SECONDS=${FUZZ_STRUCTURED_SECONDS:-600}
# Targets that build whole cards from the fuzzer's bytes; they share Tests/HealthCardsIssuingTests/FuzzShapes.swift.
structured=" card issue row batch "
NICE=(nice -n 10)
FUZZ_DIR=${FUZZ_DIR:-.build/fuzz}
SWIFTC=${SWIFTC:-swiftc}
CLANG=${CLANG:-$(dirname "$(command -v "$SWIFTC")")/clang}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=($(ls Fuzz/targets/*.swift | xargs -n1 basename | sed 's/\.swift$//'))
fi
mkdir -p "$FUZZ_DIR/CPNG" "$FUZZ_DIR/CJPEG" "$FUZZ_DIR/CZXing" "$FUZZ_DIR/CMicroHTTPD" "$FUZZ_DIR/crashes"
# The C modules' include paths; the PDF ones (Cairo, Pango, librsvg) also need their libraries' headers.
pdf_cflags=()
for flag in $(pkg-config --cflags-only-I cairo pangocairo librsvg-2.0); do pdf_cflags+=(-Xcc "$flag"); done
# The link server's: SQLite, libpq (its headers in their own folder), libmicrohttpd's C shim (a module of its own).
for flag in $(pkg-config --cflags-only-I libpq); do pdf_cflags+=(-Xcc "$flag"); done
flags=(-parse-as-library -sanitize=fuzzer,address -g -I Sources/COpenSSL -I Sources/CZlib -I Sources/CQRencode -I Sources/CZbar
       -I Sources/CProcess -I Sources/CCairo -I Sources/CPango -I Sources/CRsvg "${pdf_cflags[@]}" -I "$FUZZ_DIR/CPNG"
       -I "$FUZZ_DIR/CJPEG" -I "$FUZZ_DIR/CZXing" -I Sources/CSQLite -I Sources/CPostgres -I "$FUZZ_DIR/CMicroHTTPD")
# The small C targets (their own setjmp or C++ inside), compiled with the same instrumentation: CPNG (libpng), CJPEG
# (libjpeg), CZXing (the C shim over zxing-cpp, C++17) and CMicroHTTPD (the shim over
# libmicrohttpd's variadic start). Each gets a module map naming its header.
c_objects=("$FUZZ_DIR/CPNG.o" "$FUZZ_DIR/CJPEG.o" "$FUZZ_DIR/CZXing.o" "$FUZZ_DIR/CMicroHTTPD.o")
compile_c() {
    local name=$1 source=$2 header=$3 object="$FUZZ_DIR/$1.o"
    shift 3
    if [ ! -f "$object" ] || [ "$source" -nt "$object" ] || [ "$header" -nt "$object" ]; then
        printf 'module %s {\n    header "%s/%s"\n    export *\n}\n' "$name" "$PWD" "$header" > "$FUZZ_DIR/$name/module.modulemap"
        "${NICE[@]}" "$@" -fsanitize=fuzzer-no-link,address -g -O1 -I "Sources/$name/include" -c "$source" -o "$object"
    fi
}
# The library: each layer's sources (docs/library.md), instrumented, as one static library per module, compiled
# in dependency order (each rebuilt, with the layers above it, when a source changes).
modules=(HealthCardsCore HealthCardsVerify HealthCardsQR HealthCardsPrint HealthCardsIssuing HealthCardsFixtures HealthCardsServer)
libs=()
rebuild=0
for object in "${c_objects[@]}"; do [ -f "$object" ] || rebuild=1; done
compile_c CPNG Sources/CPNG/CPNG.c Sources/CPNG/include/CPNG.h "$CLANG" $(pkg-config --cflags libpng)
compile_c CJPEG Sources/CJPEG/CJPEG.c Sources/CJPEG/include/CJPEG.h "$CLANG"
compile_c CZXing Sources/CZXing/CZXing.cpp Sources/CZXing/include/CZXing.h "$CLANG++" -std=c++17 -DZX_USE_UTF8=1
compile_c CMicroHTTPD Sources/CMicroHTTPD/CMicroHTTPD.c Sources/CMicroHTTPD/include/CMicroHTTPD.h "$CLANG"
for module in "${modules[@]}"; do
    lib="$FUZZ_DIR/lib$module.a"
    if [ "$rebuild" = 1 ] || [ ! -f "$lib" ] || [ -n "$(find "Sources/$module" Sources/CPNG Sources/CJPEG Sources/CZXing Sources/CMicroHTTPD -newer "$lib" -print -quit)" ]; then
        rebuild=1
        echo "fuzz: compiling $module with -sanitize=fuzzer,address"
        "${NICE[@]}" "$SWIFTC" "${flags[@]}" -I "$FUZZ_DIR" -enable-testing -package-name healthcards -module-name "$module" \
            -emit-module -emit-module-path "$FUZZ_DIR/$module.swiftmodule" -emit-library -static -o "$lib" \
            $(find "Sources/$module" -name '*.swift' | sort) 2>&1 | grep -v "^/usr/bin/ld.gold: warning" || true
        test -f "$lib"
    fi
    libs+=(-l"$module")
done
# The fuzz targets import every layer (the modules' names, as the tests do).
newest_lib=$(ls -t "$FUZZ_DIR"/libHealthCards*.a | head -n 1)
status=0
for target in "${targets[@]}"; do
    binary="$FUZZ_DIR/fuzz-$target"
    files=("Fuzz/targets/$target.swift")
    seconds=$FUZZ_SECONDS
    limits=()
    if [[ "$structured" == *" $target "* ]]; then
        files+=(Tests/HealthCardsIssuingTests/FuzzShapes.swift)
        seconds=$FUZZ_STRUCTURED_SECONDS
        # Every byte is a choice: inputs of a few hundred bytes from the start (libFuzzer would otherwise
        # grow the length limit from a handful of bytes, leaving most choices at "unbent").
        limits=(-max_len=512 -len_control=0)
    fi
    if [ ! -x "$binary" ] || [ -n "$(find "${files[@]}" -newer "$binary" -print -quit)" ] || [ "$newest_lib" -nt "$binary" ]; then
        echo "fuzz: building $target"
        "${NICE[@]}" "$SWIFTC" "${flags[@]}" -I "$FUZZ_DIR" "${files[@]}" "${c_objects[@]}" -L "$FUZZ_DIR" \
            $(for ((i=${#libs[@]}-1; i>=0; i--)); do echo "${libs[$i]}"; done) -package-name healthcards \
            -lcrypto -lz -lqrencode -lpng16 -ljpeg -lzbar -lZXing -lstdc++ $(pkg-config --libs cairo pangocairo librsvg-2.0) -lmicrohttpd -lsqlite3 -lpq -o "$binary" 2>&1 | grep -v "^/usr/bin/ld.gold: warning" || true
        test -x "$binary"
    fi
    corpus="$FUZZ_DIR/corpus/$target"
    mkdir -p "$corpus"
    seeds=()
    [ -d "Fuzz/seeds/$target" ] && seeds=("Fuzz/seeds/$target")
    echo "fuzz: running $target for $seconds s"
    log="$FUZZ_DIR/$target.log"
    if SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "${NICE[@]}" "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${limits[@]}" \
        -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/crashes/$target-" ${FUZZ_ARGS:-} "$corpus" "${seeds[@]}" >"$log" 2>&1; then
        echo "fuzz: $target: $(grep -E '^Done [0-9]+ runs' "$log" || tail -1 "$log"), corpus $(ls "$corpus" | wc -l) inputs"
    else
        status=1
        echo "fuzz: $target FAILED; see $log and $FUZZ_DIR/crashes/$target-*"
        grep -E "ERROR|Fatal error|Precondition|==[0-9]+==" "$log" | head -5 || true
    fi
done
exit $status
