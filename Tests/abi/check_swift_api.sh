#!/usr/bin/env bash
# Holds the public Swift API of the Sheaf product (modules Sheaf and SheafCurl) to the one recorded
# in Tests/abi/baseline/Sheaf.json, with the toolchain's swift-api-digester: a removed or renamed
# declaration, a changed type or signature, a new case of a public enum fails; other additions
# pass. It reads the .swiftmodule files of SwiftPM's release build, so it checks source
# compatibility (API), not binary compatibility: the modules are not built with library
# evolution, and Swift users build Sheaf from source.
#
# usage: check_swift_api.sh [--update] BASELINE RELEASE_DIR MODULE...
#   RELEASE_DIR  SwiftPM's release build folder (build/swiftpm/release), with Modules/ in it
#   --update     writes the current API to BASELINE instead. On purpose only: while the API may
#                still change (before 1.0.0) or with a new major version (docs/contributing.md, "Frozen interfaces").
# $SWIFT (default: swift on PATH) is the driver; swift-api-digester is the one beside it.
set -euo pipefail

update=0
if [[ ${1-} == --update ]]; then update=1; shift; fi
if (($# < 3)); then
    echo "usage: $0 [--update] BASELINE RELEASE_DIR MODULE..." >&2
    exit 2
fi
baseline=$1 release=$2
shift 2
swift=$(command -v "${SWIFT:-swift}") || { echo "FAIL: no swift driver (${SWIFT:-swift})" >&2; exit 2; }
digester="$(dirname "$(readlink -f "$swift")")/swift-api-digester"
[[ -x $digester ]] || { echo "FAIL: no swift-api-digester beside $swift" >&2; exit 2; }

module_cache=$(mktemp -d)
trap 'rm -rf "$module_cache"' EXIT
# Without -abort-on-module-fail a module that does not load is dumped as an empty API, and
# --update would write that. The C modules SwiftPM built (SheafCurl imports CCurl) have their
# module maps in the build folder.
digester_options=(-abort-on-module-fail -I "$release/Modules" -module-cache-path "$module_cache")
for module in "$@"; do digester_options+=(-module "$module"); done
for map in "$release"/*.build/module.modulemap; do
    [[ -f $map ]] && digester_options+=(-Xcc "-fmodule-map-file=$map")
done

if ((update)); then
    mkdir -p "$(dirname "$baseline")"
    # No source paths or tool arguments in it: a baseline made in another checkout is the same.
    "$digester" -dump-sdk -avoid-location -avoid-tool-args "${digester_options[@]}" -o "$baseline.new"
    mv "$baseline.new" "$baseline"
    echo "wrote $baseline"
    exit 0
fi

[[ -f $baseline ]] || { echo "FAIL: no baseline at $baseline (make one with --update)" >&2; exit 2; }
# With -compiler-style-diags a breakage is an error and the exit status non-zero; the plain
# report only lists it and exits 0.
if ! "$digester" -diagnose-sdk -compiler-style-diags -baseline-path "$baseline" "${digester_options[@]}"; then
    echo "FAIL: the Swift API of $* breaks $baseline (see the errors above)" >&2
    exit 1
fi
echo "ok: the Swift API of $* keeps everything in $baseline"
