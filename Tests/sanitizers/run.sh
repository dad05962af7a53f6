#!/usr/bin/env bash
# One test suite against a sanitized build of the library:
#   address  AddressSanitizer + LeakSanitizer in the library (SwiftPM -sanitize=address, debug),
#            and UndefinedBehaviorSanitizer too in the C programs;
#   thread   ThreadSanitizer (SwiftPM -sanitize=thread): every lock in Sheaf is a pthread mutex
#            (Sources/Sheaf/Support/Lock.swift), which TSan models, and the toolchain's TSan runtime
#            intercepts libdispatch, so queue hand-overs count as synchronisation.
# Suites: c_harness (Tests/c/harness/), c_conformance (Tests/c/conformance.c), c_stress
# (Tests/c/stress.c), python (bindings/python/tests, split between the two sanitizers, less the
# tests that start the sheaf command as a process; the runtime preloaded into CPython; RSS checks
# are skipped there, see test_memory.py).
# The C programs are built with the toolchain's clang, whose sanitizer runtime serves the
# library's instrumentation too. Any sanitizer report fails the run.
#
# usage: Tests/sanitizers/run.sh address|thread build|c_harness|c_conformance|c_stress|python [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
sanitizer=$1 suite=$2
case $sanitizer in address) short=asan ;; thread) short=tsan ;; *) echo "usage: $0 address|thread c_harness|c_conformance|c_stress|python [BUILD_DIR]" >&2; exit 2 ;; esac
mkdir -p "${3:-build}"
build=$(cd "${3:-build}" && pwd)/$short
source=$PWD
bin=$(dirname "$(command -v swift)")
toolchain_lib=$bin/../lib/swift/linux
runtime_dir=$(dirname "$("$bin/clang" -print-libgcc-file-name --rtlib=compiler-rt)")   # the sanitizer runtimes
library=$build/swiftpm/debug/libsheaf.so
mkdir -p "$build"

# SwiftPM builds incrementally, so the suites after the first reuse the library.
swift build -c debug --product sheaf --scratch-path "$build/swiftpm" -Xswiftc "-sanitize=$sanitizer" \
    -Xlinker "-soname=libsheaf.so.1" > "$build/swift-build.log" 2>&1 || { tail -40 "$build/swift-build.log" >&2; exit 1; }
ln -sf libsheaf.so "$build/swiftpm/debug/libsheaf.so.1"
[[ $suite == build ]] && exit 0   # the library only (CTest's sanitizer_build_asan, _tsan)

if [[ $sanitizer == address ]]; then
    c_flags=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
    c_libs=()
    preload=("$runtime_dir/libclang_rt.asan-x86_64.so")
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    reports="ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:"
else
    c_flags=(-fsanitize=thread)
    # TSan's libdispatch interceptors call into libdispatch and the blocks runtime.
    c_libs=(-L"$toolchain_lib" -ldispatch -lBlocksRuntime)
    preload=("$runtime_dir/libclang_rt.tsan-x86_64.so" "$toolchain_lib/libdispatch.so" "$toolchain_lib/libBlocksRuntime.so")
    export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:suppressions=$source/Tests/sanitizers/tsan.supp"
    reports="WARNING: ThreadSanitizer"
fi

build_c() {   # build_c OUTPUT SOURCES...
    local output=$1
    shift
    # shellcheck disable=SC2046
    "$bin/clang" -std=c11 -g -O1 "${c_flags[@]}" -fno-omit-frame-pointer \
        -Iinclude $(pkg-config --cflags jansson) -DSHEAF_SOURCE_DIR="\"$source\"" -DSHEAF_PYTHON3="\"$(command -v python3)\"" \
        "$@" -L"$build/swiftpm/debug" -lsheaf "${c_libs[@]}" -Wl,-rpath,"$build/swiftpm/debug" -Wl,-rpath,"$toolchain_lib" \
        $(pkg-config --libs jansson) -lpthread -o "$build/$output" 2> "$build/clang-$output.log" \
        || { cat "$build/clang-$output.log" >&2; exit 1; }
}

log=$build/$suite.log
case $suite in
c_harness)
    build_c harness Tests/c/harness/*.c Tests/c/check.c Tests/c/http_get.c Tests/c/test_server.c Tests/c/blocking_transport.c
    (cd "$build" && ./harness) > "$log" 2>&1 && status=0 || status=$?
    ;;
c_conformance)
    build_c conformance Tests/c/conformance.c Tests/c/check.c Tests/c/http_get.c Tests/c/test_server.c Tests/c/blocking_transport.c
    (cd "$build" && ./conformance) > "$log" 2>&1 && status=0 || status=$?
    ;;
c_stress)
    build_c stress Tests/c/stress.c
    (cd "$build" && ./stress) > "$log" 2>&1 && status=0 || status=$?
    ;;
python)
    # CPython itself is not instrumented and keeps memory to its exit: leaks are LSan's job in the
    # C suites. Reports go to files, since pytest captures the processes' output.
    rm -rf "$build/python-reports" && mkdir -p "$build/python-reports"
    if [[ $sanitizer == address ]]; then
        export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$build/python-reports/asan"
    else
        export TSAN_OPTIONS="$TSAN_OPTIONS:log_path=$build/python-reports/tsan"
    fi
    # Not the tests that start the sheaf command in processes of their own (see conftest.py), nor
    # the public APIs' conventions one by one (test_conventions.py: the library's detection of
    # each runs under both sanitizers in the C harness), nor the adaptive window's (test_window.py:
    # latencies, which a sanitizer stretches; the C harness runs the window under both). The
    # files are split between the two: ThreadSanitizer takes those whose subject is threads
    # (streams held and dropped, asyncio, groups, the pager, hooks, interrupts, transports, HTTP/2
    # and TLS), AddressSanitizer every other file (a new one lands there). The C suites run whole
    # under both.
    threaded=(test_stream test_asyncio test_groups test_cli_groups test_pager test_hooks test_interrupts
              test_transport test_http2 test_libcurl test_tls test_sync test_loading)
    files=()
    if [[ $sanitizer == thread ]]; then
        for name in "${threaded[@]}"; do files+=("bindings/python/tests/$name.py"); done
    else
        for file in bindings/python/tests/test_*.py; do
            name=$(basename "$file" .py)
            [[ " ${threaded[*]} test_conventions test_window " == *" $name "* ]] || files+=("$file")
        done
    fi
    LD_PRELOAD="${preload[*]}" SHEAF_LIBRARY_PATH="$library" SHEAF_SANITIZER=$sanitizer \
        python3 -m pytest -q -p no:cacheprovider -m "not cli_process" "${files[@]}" > "$log" 2>&1 && status=0 || status=$?
    cat "$build"/python-reports/* >> "$log" 2>/dev/null || true
    ;;
*)
    echo "unknown suite '$suite'" >&2
    exit 2
    ;;
esac

tail -n 3 "$log"
if grep -Eq "$reports" "$log"; then
    echo "sanitizers ($sanitizer, $suite): a report, see $log" >&2
    grep -E -m 5 -A 12 "$reports" "$log" >&2
    exit 1
fi
exit "$status"
