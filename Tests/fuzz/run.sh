#!/usr/bin/env bash
# Builds the libFuzzer binary (the core's sources with every target, AddressSanitizer on) and
# runs one target for a bounded time over its checked-in seed corpus; new inputs go to a scratch
# folder, never into the corpus. A crash leaves its input in the build folder and fails the run.
# The binary is built once for all targets (the core takes a minute to compile) and again only
# when a source is newer than it.
#
# usage: Tests/fuzz/run.sh TARGET SECONDS [BUILD_DIR]     e.g. Tests/fuzz/run.sh detection 30
#        Tests/fuzz/run.sh build [BUILD_DIR]               build (or bring up to date) only
# targets: detection (Detection.swift), parsers (Parsers.swift, by the input's first byte: 0x01
# resume tokens (read, range-checked, round-tripped, and resumed only on the list's origin and
# path), 0x02 the request builder (method, headers, segments, query and credential as sent),
# otherwise the small parsers: URLs, origins, Retry-After, pointers, the scanner, error fields),
# differential (Differential.swift: the JSON scanner against jansson, which it links); Entry.swift
# picks one by SHEAF_FUZZ_TARGET.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
usage="usage: $0 detection|parsers|differential SECONDS [BUILD_DIR], or $0 build [BUILD_DIR]"
target=${1:?$usage}
if [[ $target == build ]]; then
    build=${2:-build/fuzz}
else
    case "$target" in detection|parsers|differential) ;; *) echo "$usage" >&2; exit 2 ;; esac
    seconds=${2:?$usage}
    build=${3:-build/fuzz}
fi
mkdir -p "$build"
binary="$build/fuzz-sheaf"

sources=$(find Sources/Sheaf -name '*.swift' | sort)
if [[ ! -x $binary ]] || [[ -n $(find Sources/Sheaf Tests/fuzz -newer "$binary" -name '*.[sh]*' -print -quit) ]]; then
    # shellcheck disable=SC2046,SC2086
    swiftc -swift-version 6 -sanitize=fuzzer,address -parse-as-library -O -module-name SheafFuzz -package-name sheaf \
        $sources Tests/fuzz/Entry.swift Tests/fuzz/Detection.swift Tests/fuzz/Parsers.swift Tests/fuzz/Differential.swift \
        -import-objc-header Tests/fuzz/Reference.h $(pkg-config --cflags-only-I jansson | sed 's/-I/-Xcc -I/g') -ljansson \
        -o "$binary" 2> "$build/build.log" || { cat "$build/build.log" >&2; exit 1; }
fi
[[ $target == build ]] && exit 0

mkdir -p "$build/$target-new"
# libFuzzer prints the stack of a crash itself; Swift's backtracer would only delay it.
SHEAF_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/$target-" "$build/$target-new" "Tests/fuzz/corpus/$target" 2>&1 | tail -n 5
