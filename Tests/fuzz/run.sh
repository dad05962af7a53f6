#!/usr/bin/env bash
# Builds a libFuzzer target with the core's sources (AddressSanitizer on) and runs it for a
# bounded time over its checked-in seed corpus; new inputs go to a scratch folder, never into
# the corpus. A crash leaves its input in the build folder and fails the run.
#
# usage: Tests/fuzz/run.sh TARGET SECONDS [BUILD_DIR]     e.g. Tests/fuzz/run.sh detection 30
# targets: detection (Detection.swift), parsers (Parsers.swift, by the input's first byte: 0x01
# resume tokens (read, range-checked, round-tripped, and resumed only on the list's origin and
# path), 0x02 the request builder (method, headers, segments, query and credential as sent),
# otherwise the small parsers: URLs, origins, Retry-After, pointers, the scanner, error fields),
# differential (Differential.swift: the JSON scanner against jansson, which it links)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
target=$1
seconds=$2
build=${3:-build/fuzz}
extra=()
case "$target" in
    detection) entry=Tests/fuzz/Detection.swift ;;
    parsers) entry=Tests/fuzz/Parsers.swift ;;
    differential) entry=Tests/fuzz/Differential.swift
        # shellcheck disable=SC2207
        extra=(-import-objc-header Tests/fuzz/Reference.h $(pkg-config --cflags-only-I jansson | sed 's/-I/-Xcc -I/g') -ljansson) ;;
    *) echo "run.sh: unknown target '$target'" >&2; exit 2 ;;
esac
mkdir -p "$build/$target-new"
binary="$build/fuzz-$target"
# shellcheck disable=SC2046
swiftc -swift-version 6 -sanitize=fuzzer,address -parse-as-library -O -module-name SheafFuzz -package-name sheaf \
    $(find Sources/Sheaf -name '*.swift' | sort) "$entry" "${extra[@]}" -o "$binary" 2> "$build/$target-build.log" \
    || { cat "$build/$target-build.log" >&2; exit 1; }
# libFuzzer prints the stack of a crash itself; Swift's backtracer would only delay it.
SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/$target-" \
    "$build/$target-new" "Tests/fuzz/corpus/$target" 2>&1 | tail -n 5
