#!/usr/bin/env bash
# Shows that check_compat.sh fails and passes when it should, on purpose-made versions of a tiny C
# library: a baseline of the original, then the same check against each version. A removal, a
# changed parameter, a grown struct or a renumbered enum value fails; an added function, an
# appended enum value or a field appended to a versioned struct (one with a <NAME>_VERSION) passes. A function still declared but no longer exported fails too: the
# check reads what the library exports, not only what the header says. The experimental tier
# (shelf/experimental.h) is left out: its function may change or go and the check passes; a
# function of the baseline moved into it fails, as a removal.
# usage: check_compat_selftest.sh CHECK_COMPAT_SCRIPT   ($CC, default cc, compiles the versions)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect_outcome.sh"

check=$1
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each version is a folder whose shelf.h starts with the version's macro; the library and the
# check both read that header, so they agree on what the version is.
cat >"$work/shelf.h.in" <<'HEADER'
#ifndef SHELF_H
#define SHELF_H
typedef enum shelf_result {
    SHELF_OK = 0,
#ifdef RESULT_RENUMBERED
    SHELF_E_STATE = 3,
#else
    SHELF_E_STATE = 1,
#endif
#ifdef RESULT_APPENDED
    SHELF_E_STOPPED = 2,
#endif
} shelf_result;

typedef struct shelf_page {
    unsigned int version;
    int items;
#ifdef PAGE_GROWN
    long total;
#endif
} shelf_page;

/* Versioned: it may grow at its end, under a new version. */
typedef struct shelf_stat {
    unsigned int version;
#ifdef STAT_INSERTED
    long inserted;
#endif
    long pages;
#ifdef STAT_GROWN
    long bytes;
#endif
} shelf_stat;
#define SHELF_STAT_VERSION 1
shelf_result shelf_get_stat(shelf_stat *stat);

extern int shelf_verbosity;
shelf_result shelf_page_items(const shelf_page *page, int *items);
#ifdef PARAMETER_CHANGED
int shelf_page_number(const shelf_page *page, long base);
#else
int shelf_page_number(const shelf_page *page);
#endif
#if !defined(FUNCTION_REMOVED) && !defined(MOVED_TO_EXPERIMENTAL)
void shelf_page_free(shelf_page *page);
#endif
#ifdef FUNCTION_ADDED
int shelf_page_total(const shelf_page *page);
#endif
#endif
HEADER
cat >"$work/shelf.c" <<'SOURCE'
#include <stdlib.h>
#include "shelf.h"
int shelf_verbosity;
shelf_result shelf_get_stat(shelf_stat *stat) { stat->pages = 1; return SHELF_OK; }
shelf_result shelf_page_items(const shelf_page *page, int *items) { *items = page->items; return SHELF_OK; }
#ifdef PARAMETER_CHANGED
int shelf_page_number(const shelf_page *page, long base) { return (int)base + (int)page->version; }
#else
int shelf_page_number(const shelf_page *page) { return (int)page->version; }
#endif
#if !defined(FUNCTION_REMOVED) && !defined(FUNCTION_NOT_EXPORTED)
void shelf_page_free(shelf_page *page) { free(page); }
#endif
#ifdef FUNCTION_ADDED
int shelf_page_total(const shelf_page *page) { return page->items; }
#endif
SOURCE
cat >"$work/experimental.h.in" <<'HEADER'
#ifndef SHELF_EXPERIMENTAL_H
#define SHELF_EXPERIMENTAL_H
#include "../shelf.h"
#if defined(EXPERIMENTAL_CHANGED)
long shelf_page_peek(const shelf_page *page, int deep);
#elif !defined(EXPERIMENTAL_REMOVED)
int shelf_page_peek(const shelf_page *page);
#endif
#ifdef MOVED_TO_EXPERIMENTAL
void shelf_page_free(shelf_page *page);
#endif
#endif
HEADER
cat >>"$work/shelf.c" <<'SOURCE'
#include "shelf/experimental.h"
#if defined(EXPERIMENTAL_CHANGED)
long shelf_page_peek(const shelf_page *page, int deep) { return page->items + deep; }
#elif !defined(EXPERIMENTAL_REMOVED)
int shelf_page_peek(const shelf_page *page) { return page->items; }
#endif
SOURCE

build() {   # build VERSION: VERSION/include/shelf.h, shelf/experimental.h and VERSION/libshelf.so.1
    mkdir -p "$work/$1/include/shelf"
    { echo "#define $1"; cat "$work/shelf.h.in"; } >"$work/$1/include/shelf.h"
    cp "$work/experimental.h.in" "$work/$1/include/shelf/experimental.h"
    "$cc" -O2 -fPIC -shared -I "$work/$1/include" -Wl,-soname,libshelf.so.1 \
        -o "$work/$1/libshelf.so.1" "$work/shelf.c"
}

check_version() {   # check_version VERSION: builds it, then checks it against the baseline
    # expect calls this as `check_version || ...`, where set -e does not stop a failed build.
    build "$1" || { echo "FAIL: could not build $1" >&2; exit 2; }
    bash "$check" "$work/baseline.abi" "$work/$1/libshelf.so.1" "$work/$1/include"
}

build ORIGINAL
bash "$check" --update "$work/baseline.abi" "$work/ORIGINAL/libshelf.so.1" "$work/ORIGINAL/include"
expect pass ORIGINAL
expect pass FUNCTION_ADDED
expect pass RESULT_APPENDED
expect fail FUNCTION_REMOVED
expect fail FUNCTION_NOT_EXPORTED
expect fail PARAMETER_CHANGED
expect fail PAGE_GROWN
expect pass STAT_GROWN
expect fail STAT_INSERTED
expect fail RESULT_RENUMBERED
expect pass EXPERIMENTAL_CHANGED
expect pass EXPERIMENTAL_REMOVED
expect fail MOVED_TO_EXPERIMENTAL
grep -q shelf_page_peek "$work/baseline.abi" && { echo "FAIL: the baseline records the experimental shelf_page_peek" >&2; exit 1; }
echo "ok: the baseline leaves the experimental shelf_page_peek out"

expect_done "check_compat.sh passes the original, an added function, an appended enum value, a versioned struct grown at its end and an experimental function changed or removed, and fails a removed or unexported function, a changed parameter, a grown struct, a versioned struct grown but not at its end, a renumbered enum value and a function moved into the experimental header"
