#!/usr/bin/env bash
# Checks what libsheaf.so shows the world:
#   - no Swift runtime, Foundation, dispatch or BlocksRuntime among its NEEDED libraries
#     (the stdlib is linked statically), no toolchain path in its RPATH/RUNPATH, the right SONAME;
#   - only sheaf_* in its dynamic symbol table (the version script hides everything else): the
#     functions of both tiers, include/sheaf.h and include/sheaf/experimental.h, exported alike
#     (check_header.py holds the exports to the two headers, one header each; check_compat.sh
#     compares the stable tier alone with the baseline);
#   - it loads, with no LD_LIBRARY_PATH and no /opt/swift anywhere, from a C program and from
#     python3 ctypes, and reports the version the header promises.
# usage: check_exports.sh LIBRARY LOAD_PROGRAM EXPECTED_SONAME EXPECTED_VERSION_NUMBER
set -euo pipefail

library=$1 load_program=$2 expected_soname=$3 expected_version=$4

# Symbols the linker adds that cannot be avoided. None so far; list any here explicitly, by name.
allowed_extra_symbols=()

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

[[ -f $library ]] || { echo "FAIL: no library at $library" >&2; exit 1; }
library=$(readlink -f "$library")
clean_env=(env -i PATH=/usr/bin:/bin)

# -- dynamic section --
dynamic=$(readelf -d "$library")
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic")
echo "NEEDED: $(tr '\n' ' ' <<<"$needed")"
forbidden=$(grep -E '^(libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libicu)' <<<"$needed" || true)
if [[ -n $forbidden ]]; then fail "Swift runtime libraries are NEEDED: $(tr '\n' ' ' <<<"$forbidden")"
else pass "no Swift runtime library is NEEDED"; fi

soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p' <<<"$dynamic")
if [[ $soname == "$expected_soname" ]]; then pass "SONAME is $soname"
else fail "SONAME is '$soname', expected '$expected_soname'"; fi

search_path=$(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' <<<"$dynamic")
if grep -qiE 'swift|/opt/' <<<"$search_path"; then fail "RPATH/RUNPATH names the toolchain: $search_path"
else pass "RPATH/RUNPATH is '${search_path}'"; fi

# -- exported symbols --
symbols=$(nm -D --defined-only "$library" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
count=$(grep -c . <<<"$symbols" || true)
unexpected=()
while IFS= read -r symbol; do
    [[ -z $symbol || $symbol == sheaf_* ]] && continue
    allowed=0
    for extra in "${allowed_extra_symbols[@]}"; do [[ $symbol == "$extra" ]] && allowed=1; done
    ((allowed)) || unexpected+=("$symbol")
done <<<"$symbols"
if ((${#unexpected[@]} > 0)); then
    fail "${#unexpected[@]} exported symbols are not sheaf_*: ${unexpected[*]:0:20}"
else
    pass "all $count exported symbols are sheaf_*"
fi
grep -qx sheaf_version_number <<<"$symbols" || fail "sheaf_version_number is not exported"

# -- loading without the toolchain --
ldd_output=$("${clean_env[@]}" ldd "$library" 2>&1 || true)
if grep -qE 'not found|/opt/swift' <<<"$ldd_output"; then
    fail "in a clean environment the dependencies resolve badly:"$'\n'"$ldd_output"
else
    pass "every dependency resolves from the system in a clean environment"
fi

if output=$("${clean_env[@]}" "$load_program" 2>&1) && [[ $output == "$expected_version" ]]; then
    pass "a C program loads it in a clean environment: version $output"
else
    fail "the C program in a clean environment printed '$output' (expected $expected_version)"
fi

python_check='
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.sheaf_version_number.restype = ctypes.c_int
lib.sheaf_version_number.argtypes = []
print(lib.sheaf_version_number())
'
if output=$("${clean_env[@]}" python3 -c "$python_check" "$library" 2>&1) && [[ $output == "$expected_version" ]]; then
    pass "python3 ctypes loads it in a clean environment: version $output"
else
    fail "python3 ctypes in a clean environment printed '$output' (expected $expected_version)"
fi

if ((failures > 0)); then echo "$failures ABI export checks failed" >&2; exit 1; fi
echo "all ABI export checks passed"
