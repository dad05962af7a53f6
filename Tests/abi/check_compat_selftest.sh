#!/usr/bin/env bash
# Shows that check_compat.sh fails and passes when it should, on a tiny C library with debug info
# (so types are seen too): a baseline of the original, then the same script against a version
# without a function (fails), with one more function (passes), with a struct grown by a field
# (fails), and the original itself (passes).
# usage: check_compat_selftest.sh CHECK_COMPAT_SCRIPT C_COMPILER
set -euo pipefail

check=$1 cc=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/include"

# One source, three versions chosen by macros: the header below is the public one.
cat >"$work/include/shelf.h" <<'HEADER'
struct shelf_page { int number; int items;
#ifdef GROWN
    int total;
#endif
};
int shelf_page_items(const struct shelf_page *page);
int shelf_page_number(const struct shelf_page *page);
#ifdef ADDED
int shelf_page_total(const struct shelf_page *page);
#endif
HEADER
cat >"$work/shelf.c" <<'SOURCE'
#include "shelf.h"
int shelf_page_items(const struct shelf_page *page) { return page->items; }
#ifndef REMOVED
int shelf_page_number(const struct shelf_page *page) { return page->number; }
#endif
#ifdef ADDED
int shelf_page_total(const struct shelf_page *page) { return page->items; }
#endif
SOURCE
for version in original REMOVED ADDED GROWN; do
    "$cc" -g -O0 -shared -fPIC -D"$version" -I"$work/include" -o "$work/$version.so" "$work/shelf.c"
done

failures=0
expect() {   # expect pass|fail VERSION
    local outcome=pass
    echo "--- $2: check_compat.sh should $1"
    bash "$check" "$work/$2.so" "$work/include" "$work/baseline.abi" || outcome=fail
    if [[ $outcome == "$1" ]]; then
        echo "ok: $2: $outcome, as it should"
    else
        echo "FAIL: $2: $outcome, expected $1" >&2
        failures=$((failures + 1))
    fi
}

bash "$check" --update "$work/original.so" "$work/include" "$work/baseline.abi"
expect pass original
expect fail REMOVED
expect pass ADDED
expect fail GROWN

if ((failures > 0)); then echo "$failures self-test cases went the wrong way" >&2; exit 1; fi
echo "check_compat.sh fails on a removal and a changed layout, passes on an addition"
