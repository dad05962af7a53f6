#!/usr/bin/env bash
# The C harness under AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer: libsheaf.so
# built by SwiftPM with -sanitize=address (debug, the Swift runtime from the toolchain), the
# harness built with the toolchain's clang (-fsanitize=address,undefined), whose static ASan
# runtime serves the library's instrumentation too. Any report fails the run.
#
# usage: Tests/sanitizers/c_harness_asan.sh [BUILD_DIR]        (from the source tree or anywhere)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mkdir -p "${1:-build}"
build=$(cd "${1:-build}" && pwd)/asan
source=$PWD
toolchain_lib=$(dirname "$(command -v swift)")/../lib/swift/linux
clang=$(dirname "$(command -v swift)")/clang
mkdir -p "$build"

swift build -c debug --product sheaf --scratch-path "$build/swiftpm" -Xswiftc -sanitize=address \
    -Xlinker "-soname=libsheaf.so.0" > "$build/swift-build.log" 2>&1 || { tail -40 "$build/swift-build.log" >&2; exit 1; }
ln -sf libsheaf.so "$build/swiftpm/debug/libsheaf.so.0"

# shellcheck disable=SC2046
"$clang" -std=c11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
    -Iinclude $(pkg-config --cflags jansson) -DSHEAF_SOURCE_DIR="\"$source\"" -DSHEAF_PYTHON3="\"$(command -v python3)\"" \
    Tests/c/harness.c Tests/c/check.c Tests/c/http_get.c Tests/c/test_server.c Tests/c/blocking_transport.c \
    -L"$build/swiftpm/debug" -lsheaf -Wl,-rpath,"$build/swiftpm/debug" -Wl,-rpath,"$toolchain_lib" \
    $(pkg-config --libs jansson) -lpthread -o "$build/harness" 2> "$build/clang.log" || { cat "$build/clang.log" >&2; exit 1; }

cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ./harness 2>&1 | tee harness.log | tail -n 3
status=${PIPESTATUS[0]}
if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" harness.log; then
    echo "c_harness_asan: a sanitizer reported (see $PWD/harness.log)" >&2
    exit 1
fi
exit "$status"
