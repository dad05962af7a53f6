#!/usr/bin/env bash
# Holds libsheaf.so to the ABI recorded in Tests/abi/baseline/libsheaf.abi (libabigail's abidw
# output for the release library and include/sheaf.h): a function or variable that was there is
# still there and unchanged. New ones pass (they are listed, for the record).
#
# usage: check_compat.sh [--update] LIBRARY HEADERS_DIR BASELINE
#   --update  writes LIBRARY's ABI to BASELINE instead: only on purpose, before 1.0.0 or with a
#             new major version (README, "Layout").
#
# What it can see for libsheaf.so: the exported symbols, so a removed or renamed function or
# variable fails. What it cannot: the exported functions are Swift `@c` functions, and their
# DWARF is Swift's, which libabigail does not read (the release library's only C debug info is the
# libcurl loader's, which exports nothing). So a changed parameter list, return type, enum value or
# struct layout of sheaf.h is invisible here; abi_header (check_header.py) and abi_mirrors hold
# the header to the library and the bindings instead. For a library with C debug info (the
# self-test's) the same check also fails on changed signatures and type layouts.
set -euo pipefail

update=0
if [[ ${1-} == --update ]]; then update=1; shift; fi
if (($# != 3)); then
    echo "usage: $0 [--update] LIBRARY HEADERS_DIR BASELINE" >&2
    exit 2
fi
library=$1 headers=$2 baseline=$3
for tool in abidw abidiff; do
    command -v "$tool" >/dev/null 2>&1 \
        || { echo "FAIL: $tool not found (Debian: abigail-tools; scripts/setup.sh installs it)" >&2; exit 2; }
done
[[ -f $library ]] || { echo "FAIL: no library at $library" >&2; exit 2; }

# No corpus path or compilation directory, and locations as file names only: a baseline made in
# another checkout differs only in its translation units' names, which abidiff does not compare.
# (Locations must stay: without them abidiff takes every type of the baseline for a private one
# and stops comparing types.)
abidw_options=(--headers-dir "$headers" --drop-private-types --no-corpus-path --no-comp-dir-path --short-locs)

if ((update)); then
    mkdir -p "$(dirname "$baseline")"
    abidw "${abidw_options[@]}" --out-file "$baseline.new" "$library"
    mv "$baseline.new" "$baseline"
    echo "wrote $baseline: $(grep -c '<elf-symbol ' "$baseline") exported symbols"
    exit 0
fi

[[ -f $baseline ]] || { echo "FAIL: no baseline at $baseline (make one with --update)" >&2; exit 2; }

# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible
# change (a removed function or variable). Added symbols also set 4; --no-added-syms leaves them
# out, so any 4 left is a change to something the baseline has.
status=0
report=$(abidiff --no-added-syms --hd2 "$headers" --drop-private-types "$baseline" "$library" 2>&1) || status=$?
if ((status & 1)); then
    echo "FAIL: abidiff could not compare (status $status):" >&2
    echo "$report" >&2
    exit 2
fi
if ((status & 12)); then
    echo "$report"
    if ((status & 8)); then
        echo "FAIL: $library removes a function or variable that $baseline has" >&2
    else
        echo "FAIL: $library changes a function, variable or type that $baseline has" >&2
    fi
    exit 1
fi

# Nothing the baseline has changed: whatever this run still reports is an addition.
if ! added=$(abidiff --hd2 "$headers" --drop-private-types "$baseline" "$library" 2>&1); then
    echo "$added"
    echo "ok: compatible with $baseline, with the additions above (refresh the baseline when they ship)"
else
    echo "ok: the same ABI as $baseline"
fi
