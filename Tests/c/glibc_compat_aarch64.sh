#!/usr/bin/env bash
# cmake/glibc_compat.c's aarch64 half (its symbol versions are all GLIBC_2.17, and __xstat takes
# structure version 0 there): the glibc_compat test program, built for aarch64 with the Swift
# toolchain's clang and lld against Debian's aarch64 glibc (libc6-dev-arm64-cross), run under
# qemu-aarch64, and its symbol versions checked. The whole libsheaf.so cannot be built for aarch64
# here (no Swift SDK for it); this covers the part of the build recipe that differs by CPU.
# usage: glibc_compat_aarch64.sh SOURCE_DIR CLANG OBJDUMP ALLOW --wrap=NAME...
#        (ALLOW as glibc_compat_versions's; the --wrap options as CMakeLists.txt reads them from
#        cmake/glibc_compat.c)
set -euo pipefail

source_dir=$1 clang=$2 objdump=$3 allow=$4
shift 4
sysroot=/usr/aarch64-linux-gnu
work=$(mktemp -d "${TMPDIR:-/tmp}/sheaf-aarch64.XXXXXX")
trap 'rm -rf "$work"' EXIT

wraps=("${@/#/-Wl,}")
echo "${#wraps[@]} wrapped functions"

# No GCC for aarch64 here: the C start-up files and libraries are named by hand (-nostdlib), and
# the headers are clang's own and glibc's for aarch64.
"$clang" --target=aarch64-linux-gnu -nostdinc -isystem "$("$clang" -print-resource-dir)/include" \
    -isystem "$sysroot/include" -O2 -Wall -Wextra -Werror -fuse-ld=lld -nostdlib \
    "$sysroot/lib/crt1.o" "$sysroot/lib/crti.o" \
    "$source_dir/Tests/c/glibc_compat_test.c" "$source_dir/cmake/glibc_compat.c" \
    "$sysroot/lib/crtn.o" -L"$sysroot/lib" "${wraps[@]}" \
    -Wl,--no-as-needed -lc -lm -l:libpthread.so.0 -l:libdl.so.2 \
    -Wl,--dynamic-linker=/lib/ld-linux-aarch64.so.1 -o "$work/glibc_compat_test"
qemu-aarch64 -L "$sysroot" "$work/glibc_compat_test"
cmake -D "LIBRARY=$work/glibc_compat_test" -D "OBJDUMP=$objdump" -D MAX_GLIBC=2.17 \
    -D "ALLOW=$allow" \
    -P "$source_dir/cmake/check_glibc_versions.cmake"
