#!/usr/bin/env bash
# Holds a C library to the ABI recorded in a baseline (libabigail's abidw format): every function
# and variable of the baseline is still exported, with the same parameter and return types, and
# every public type they reach keeps its layout and its enum values. Additions pass; they are
# listed, and become part of the ABI when the baseline is refreshed.
#
# usage: check_compat.sh [--update] BASELINE LIBRARY HEADERS_DIR
#   --update  writes LIBRARY's ABI to BASELINE instead. On purpose only: while the ABI may still
#             change (before 1.0.0) or with a new major version (docs/contributing.md, "Frozen interfaces").
# $CC (default cc) compiles the stand-in described below.
#
# Why a stand-in: libsheaf.so's exported functions are Swift (`@c @implementation`), described by
# Swift DWARF, which libabigail does not read: abidw on libsheaf.so itself (release, with -g)
# shows their names and, of all the debug info, only the libcurl loader's C types. Their types
# are the header's: the Swift compiler checks each `@c @implementation` against sheaf.h. So the
# ABI is read from a stand-in: a C library, built with -g, that exports exactly LIBRARY's
# symbols, each defined with its declaration from HEADERS_DIR, and with LIBRARY's SONAME. A
# function the library stops exporting, or a prototype or type the header changes, changes the
# stand-in.
#
# Two tiers: a header named experimental.h (include/sheaf/experimental.h) holds calls that may
# change or go in a minor release. The stand-in leaves out what it declares (the library still
# exports them): the baseline never records them, --update writes none, and changing or removing
# one passes. A function of the baseline declared in experimental.h fails, named (to abidiff it
# would be a removal): nothing the baseline promised leaves the stable tier.
set -euo pipefail

update=0
if [[ ${1-} == --update ]]; then update=1; shift; fi
if (($# != 3)); then
    echo "usage: $0 [--update] BASELINE LIBRARY HEADERS_DIR" >&2
    exit 2
fi
baseline=$1 library=$2 headers=$3
cc=${CC:-cc}
for tool in abidw abidiff nm readelf python3 "$cc"; do
    command -v "$tool" >/dev/null 2>&1 \
        || { echo "FAIL: $tool not found (abidw and abidiff: Debian's abigail-tools; scripts/setup.sh installs it)" >&2; exit 2; }
done
[[ -f $library ]] || { echo "FAIL: no library at $library" >&2; exit 2; }
[[ -d $headers ]] || { echo "FAIL: no headers folder at $headers" >&2; exit 2; }
headers=$(cd "$headers" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nm -D --defined-only "$library" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$work/exported"
soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')

# The headers as a compiler sees them: comments gone, conditionals decided, macros expanded. The
# stable tier (every header but experimental.h) makes the stand-in; the experimental tier is read
# only to know what to leave out.
(cd "$headers" && find . -name '*.h' | sort) | sed 's|^\./\(.*\)|#include "\1"|' >"$work/all_headers.c"
awk '!/\/experimental\.h"$/' "$work/all_headers.c" >"$work/headers.c"
awk '/\/experimental\.h"$/' "$work/all_headers.c" >"$work/experimental.c"
"$cc" -E -P -I "$headers" "$work/headers.c" >"$work/headers.i"
"$cc" -E -P -I "$headers" "$work/experimental.c" >"$work/experimental.i"

# One definition per exported symbol of the stable tier, from its declaration: a function traps
# (it is never called), a variable is defined by its `extern` declaration without `extern`.
python3 - "$work/headers.i" "$work/exported" "$work/headers.c" "$work/experimental.i" "$work/left_out" \
    >"$work/stand_in.c" <<'PYTHON'
import re
import sys

code, exported, includes, experimental = (open(path).read() for path in sys.argv[1:5])


def declarations(text):
    return [" ".join(part.split()) for part in re.split(r"[;{}]", text)]


def declaration_of(name, candidates):
    function = re.compile(r"\b%s\s*\(" % re.escape(name))
    variable = re.compile(r"^extern\b.*\b%s\b" % re.escape(name))
    for declaration in candidates:
        if function.search(declaration) and not declaration.startswith("typedef"):
            return declaration + " { __builtin_trap(); }"
        if variable.search(declaration):
            return declaration[len("extern"):].strip() + ";"
    return None


stable, experimental = declarations(code), declarations(experimental)
print(includes)
undeclared, left_out = [], []
for name in exported.split():
    definition = declaration_of(name, stable)
    if definition is not None:
        print(definition)
    elif declaration_of(name, experimental) is not None:
        left_out.append(name)
    else:
        undeclared.append(name)
with open(sys.argv[5], "w") as f:
    f.write("".join(name + "\n" for name in left_out))
if undeclared:
    sys.exit("FAIL: exported but declared in no header: " + ", ".join(undeclared))
PYTHON
if [[ -s $work/left_out ]]; then
    echo "left out: $(wc -w <"$work/left_out") experimental functions ($(tr '\n' ' ' <"$work/left_out"| sed 's/ $//'))"
fi

name=${soname:-$(basename "$library")}
"$cc" -g -O0 -fPIC -shared -I "$headers" ${soname:+"-Wl,-soname,$soname"} -o "$work/$name" "$work/stand_in.c"

# Only types defined under HEADERS_DIR count, and of those the ones a function or variable reaches
# (libabigail's ABI): an enum only ever passed as an int (sheaf.h's sheaf_http_version, an option's
# value) is not in it. No paths, locations or architecture: the baseline
# is the same from any checkout, and holds on x86_64 and aarch64 alike (both LP64). Hashed type
# ids keep a refreshed baseline's diff to what changed.
abidw --headers-dir "$headers" --drop-private-types --no-corpus-path --no-comp-dir-path \
    --no-show-locs --no-architecture --type-id-style hash --out-file "$work/current.abi" "$work/$name"

if ((update)); then
    mkdir -p "$(dirname "$baseline")"
    cp "$work/current.abi" "$baseline.new"
    mv "$baseline.new" "$baseline"
    echo "wrote $baseline: $(grep -c '<function-decl ' "$baseline") functions, $(grep -c '<elf-symbol .*object-type' "$baseline" || true) variables"
    exit 0
fi
[[ -f $baseline ]] || { echo "FAIL: no baseline at $baseline (make one with --update)" >&2; exit 2; }

# A function the baseline promised, now declared in the experimental tier: said by name (abidiff
# below sees it as removed).
moved=()
if [[ -s $work/left_out ]]; then
    while IFS= read -r name; do
        grep -q "<elf-symbol name='$name'" "$baseline" && moved+=("$name")
    done <"$work/left_out"
fi
if ((${#moved[@]} > 0)); then
    echo "FAIL: ${moved[*]}: in $baseline, now declared in an experimental.h: a stable function never leaves the stable tier" >&2
    exit 1
fi

# abidiff's exit status is a bit field (abidiff(1), "RETURN VALUES"): 1 error, 2 usage error,
# 4 ABI change, 8 incompatible change (a removed function or variable; 4 is then set too). An
# added function or variable sets 4, and so does any harmful change to what the baseline has: a
# changed parameter, return or variable type, a changed struct layout, a renumbered enum value.
# --no-added-syms leaves additions out, so any 4 left is a change to something the baseline has.
# Appended enum values are harmless to libabigail and set nothing.
# A versioned struct (one with a SHEAF_<NAME>_VERSION; the caller sets its `version`, the library
# fills what both versions know) may gain fields at its end, and only there: the suppression
# lets an insertion at the end through for those structs, and nothing else (a field moved,
# retyped or inserted before the end still fails).
: >"$work/versioned.supp"
for name in $(find "$headers" -name '*.h' -exec sed -n 's/^#define \([A-Z][A-Z0-9_]*\)_VERSION\b.*/\1/p' {} + | tr 'A-Z' 'a-z'); do
    printf '[suppress_type]\n  type_kind = struct\n  name = %s\n  has_data_member_inserted_at = end\n\n' "$name" >>"$work/versioned.supp"
done
status=0
report=$(abidiff --no-default-suppression --suppressions "$work/versioned.supp" --no-added-syms "$baseline" "$work/current.abi" 2>&1) || status=$?
if ((status & 1)); then
    echo "$report" >&2
    echo "FAIL: abidiff could not compare (exit status $status)" >&2
    exit 2
fi
if ((status & 12)); then
    echo "$report"
    if ((status & 8)); then
        echo "FAIL: $library no longer exports a function or variable of $baseline (exit status $status)" >&2
    else
        echo "FAIL: $library changes a function, variable or type of $baseline (exit status $status)" >&2
    fi
    exit 1
fi

if ! additions=$(abidiff --no-default-suppression --suppressions "$work/versioned.supp" "$baseline" "$work/current.abi" 2>&1); then
    echo "$additions"
    echo "ok: compatible with $baseline; the additions above are not in it yet"
else
    echo "ok: the same ABI as $baseline ($(grep -c '<function-decl ' "$baseline") functions)"
fi
