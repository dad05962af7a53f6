#!/usr/bin/env bash
# Shows that check_swift_api.sh fails and passes when it should, on purpose-made versions of a tiny
# Swift module: a baseline of the original, then the same check against each version. A removed
# method, a renamed argument label or a changed parameter type fails, and so does a new case of a
# public enum (a user's exhaustive switch stops compiling); a new function or method passes.
# usage: check_swift_api_selftest.sh CHECK_SWIFT_API_SCRIPT   ($SWIFT, default swift on PATH)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect_outcome.sh"

check=$1
swift=$(command -v "${SWIFT:-swift}")
swiftc="$(dirname "$(readlink -f "$swift")")/swiftc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One source; each version is the original with one condition set.
cat >"$work/Shelf.swift" <<'SOURCE'
public struct Page: Sendable {
    public var number: Int
    public init(number: Int) { self.number = number }
}

public enum Paging: Sendable {
#if CASE_ADDED
    case offset, cursor, link
#else
    case offset, cursor
#endif
}

public final class Shelf {
    public init() {}
#if LABEL_RENAMED
    public func fetch(at path: String, limit: Int = 0) async throws -> [Page] { [] }
#elseif TYPE_CHANGED
    public func fetch(path: String, limit: Int32 = 0) async throws -> [Page] { [] }
#else
    public func fetch(path: String, limit: Int = 0) async throws -> [Page] { [] }
#endif
#if !METHOD_REMOVED
    public func close() {}
#endif
}

#if ADDED
extension Shelf {
    public func count(path: String) async throws -> Int { 0 }
}
public func openShelf(url: String) -> Shelf { Shelf() }
#endif
SOURCE

build() {   # build VERSION: VERSION/Modules/Shelf.swiftmodule
    mkdir -p "$work/$1/Modules"
    "$swiftc" -emit-module -parse-as-library -module-name Shelf -D "$1" "$work/Shelf.swift" \
        -emit-module-path "$work/$1/Modules/Shelf.swiftmodule"
}

check_version() {   # check_version VERSION: builds it, then checks it against the baseline
    # expect calls this as `check_version || ...`, where set -e does not stop a failed build.
    build "$1" || { echo "FAIL: could not build $1" >&2; exit 2; }
    bash "$check" "$work/baseline.json" "$work/$1" Shelf
}

build ORIGINAL
bash "$check" --update "$work/baseline.json" "$work/ORIGINAL" Shelf
expect pass ORIGINAL
expect pass ADDED
expect fail METHOD_REMOVED
expect fail LABEL_RENAMED
expect fail TYPE_CHANGED
expect fail CASE_ADDED

expect_done "check_swift_api.sh passes the original and added declarations, and fails a removed method, a renamed label, a changed parameter type and a new enum case"
