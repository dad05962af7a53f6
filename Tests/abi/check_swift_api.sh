#!/usr/bin/env bash
# Holds the public Swift API of the Sheaf product (modules Sheaf and SheafCurl) to the one recorded
# in Tests/abi/baseline/Sheaf.json, with the toolchain's swift-api-digester: a removed or renamed
# declaration, a changed type or signature fails; additions pass. It reads the .swiftmodule files
# of SwiftPM's release build, so it checks source compatibility (API), not binary compatibility:
# the modules are not built with library evolution, and Swift users build Sheaf from source.
#
# usage: check_swift_api.sh [--update] SWIFT RELEASE_DIR BASELINE
#   SWIFT        the `swift` driver; swift-api-digester is the one beside it
#   RELEASE_DIR  SwiftPM's release build folder (build/swiftpm/release), with Modules/ in it
#   --update     writes the current API to BASELINE instead: only on purpose, before 1.0.0 or
#                with a new major version (README, "Layout").
set -euo pipefail

update=0
if [[ ${1-} == --update ]]; then update=1; shift; fi
if (($# != 3)); then
    echo "usage: $0 [--update] SWIFT RELEASE_DIR BASELINE" >&2
    exit 2
fi
swift=$1 release=$2 baseline=$3
digester="$(dirname "$(readlink -f "$(command -v "$swift")")")/swift-api-digester"
[[ -x $digester ]] || { echo "FAIL: no swift-api-digester beside $swift" >&2; exit 2; }
[[ -f $release/Modules/Sheaf.swiftmodule ]] \
    || { echo "FAIL: no Sheaf.swiftmodule in $release/Modules (build the library first)" >&2; exit 2; }

module_cache=$(mktemp -d)
trap 'rm -rf "$module_cache"' EXIT
# SheafCurl imports CCurl, a C module whose map SwiftPM writes into the build folder.
digester_options=(-module Sheaf -module SheafCurl -I "$release/Modules"
                  -Xcc "-fmodule-map-file=$release/CCurl.build/module.modulemap"
                  -module-cache-path "$module_cache")

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
# report only lists it.
if ! "$digester" -diagnose-sdk -compiler-style-diags -baseline-path "$baseline" "${digester_options[@]}"; then
    echo "FAIL: the Swift API breaks $baseline (see the errors above)" >&2
    exit 1
fi
echo "ok: the Swift API keeps everything in $baseline"
