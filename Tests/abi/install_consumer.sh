#!/usr/bin/env bash
# Installs Sheaf into a temporary prefix, then builds and runs a tiny consumer against the
# installed files in both ways a C user would: find_package(sheaf) and pkg-config. Then moves the
# installed tree and does both again, to show the package files are prefix-relative. The consumer
# uses both tiers: sheaf.h, and sheaf/experimental.h (installed beside description.schema.json).
# usage: install_consumer.sh BUILD_DIR LIBDIR INCLUDEDIR VERSION C_COMPILER CMAKE GENERATOR
set -euo pipefail

build_dir=$1 libdir=$2 includedir=$3 version=$4 cc=$5 cmake=$6 generator=$7
major=${version%%.*}

work=$(mktemp -d "${TMPDIR:-/tmp}/sheaf-install-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
clean_env=(env -i PATH=/usr/bin:/bin)

step() { echo "== $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

step "cmake --install into $work/prefix"
"$cmake" --install "$build_dir" --prefix "$work/prefix" >/dev/null

check_tree() {
    local prefix=$1
    for path in "$libdir/libsheaf.so.$version" "$includedir/sheaf.h" "$includedir/sheaf/experimental.h" \
                "$includedir/sheaf/description.schema.json" "$libdir/pkgconfig/sheaf.pc" \
                "$libdir/cmake/sheaf/sheafConfig.cmake" "$libdir/cmake/sheaf/sheafConfigVersion.cmake"; do
        [[ -f $prefix/$path ]] || die "not installed: $path"
    done
    [[ -L $prefix/$libdir/libsheaf.so.$major ]] || die "libsheaf.so.$major is not a symlink"
    [[ -L $prefix/$libdir/libsheaf.so ]] || die "libsheaf.so is not a symlink"
    [[ $(readlink -f "$prefix/$libdir/libsheaf.so") == "$(readlink -f "$prefix/$libdir/libsheaf.so.$version")" ]] \
        || die "libsheaf.so does not lead to libsheaf.so.$version"
}
check_tree "$work/prefix"

mkdir -p "$work/consumer"
cat >"$work/consumer/consumer.c" <<'C'
#include <stdio.h>
#include <sheaf.h>
#include <sheaf/experimental.h>

int main(void) {
    sheaf_client *client = NULL;
    sheaf_result result;
    struct ArrowSchema schema;
    struct ArrowArray array;
    if (sheaf_version_number() != SHEAF_VERSION_NUMBER) {
        fprintf(stderr, "header %d, library %d\n", SHEAF_VERSION_NUMBER, sheaf_version_number());
        return 1;
    }
    result = sheaf_client_new(&client, "http://127.0.0.1:9/");
    if (result != SHEAF_OK || client == NULL) {
        fprintf(stderr, "sheaf_client_new: %s\n", sheaf_result_str(result));
        return 1;
    }
    sheaf_client_free(client);
    /* The experimental tier, from its own header. */
    result = sheaf_arrow_from_json("[{\"id\": 1}]", 11, NULL, &schema, &array);
    if (result != SHEAF_OK || array.length != 1) {
        fprintf(stderr, "sheaf_arrow_from_json: %s\n", sheaf_result_str(result));
        return 1;
    }
    array.release(&array);
    schema.release(&schema);
    printf("consumer ok: sheaf %s, both tiers\n", sheaf_version_string());
    return 0;
}
C
cat >"$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(sheaf_consumer LANGUAGES C)
find_package(sheaf ${SHEAF_WANTED_VERSION} REQUIRED CONFIG)
add_executable(consumer consumer.c)
target_compile_options(consumer PRIVATE -Wall -Wextra -Werror)
target_link_libraries(consumer PRIVATE sheaf::sheaf)
CMAKE

with_find_package() {
    local prefix=$1 build=$2
    step "find_package(sheaf $version) from $prefix"
    "$cmake" -S "$work/consumer" -B "$build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_PREFIX_PATH="$prefix" -DSHEAF_WANTED_VERSION="$version" >"$build.log" 2>&1 \
        || { cat "$build.log" >&2; die "configuring the find_package consumer failed"; }
    grep -q "$prefix/$libdir/libsheaf.so.$version" "$build/CMakeCache.txt" "$build"/*.ninja "$build"/CMakeFiles/consumer.dir/link.txt 2>/dev/null \
        || die "the consumer does not link the library in $prefix"
    "$cmake" --build "$build" >>"$build.log" 2>&1 \
        || { cat "$build.log" >&2; die "building the find_package consumer failed"; }
    "${clean_env[@]}" "$build/consumer" || die "the find_package consumer failed to run"
}

with_pkg_config() {
    local prefix=$1 out=$2 flags
    step "pkg-config --cflags --libs sheaf from $prefix"
    flags=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs sheaf) \
        || die "pkg-config does not find sheaf"
    echo "   $flags"
    [[ $(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --modversion sheaf) == "$version" ]] \
        || die "pkg-config reports another version"
    # shellcheck disable=SC2086 # the flags are words
    "$cc" -Wall -Wextra -Werror "$work/consumer/consumer.c" $flags \
        -Wl,-rpath,"$prefix/$libdir" -o "$out" || die "building the pkg-config consumer failed"
    "${clean_env[@]}" "$out" || die "the pkg-config consumer failed to run"
    [[ $(readlink -f "$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --variable=includedir sheaf)") \
        == "$(readlink -f "$prefix/$includedir")" ]] || die "sheaf.pc's includedir is not inside $prefix"
}

with_find_package "$work/prefix" "$work/build-cmake"
with_pkg_config "$work/prefix" "$work/consumer-pc"

step "find_package(sheaf $((major + 1))) is refused (SameMajorVersion)"
if "$cmake" -S "$work/consumer" -B "$work/build-wrong-major" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_PREFIX_PATH="$work/prefix" -DSHEAF_WANTED_VERSION="$((major + 1))" >/dev/null 2>&1; then
    die "find_package accepted version $((major + 1))"
fi

step "cmake --install --strip into $work/stripped"
"$cmake" --install "$build_dir" --prefix "$work/stripped" --strip >/dev/null
check_tree "$work/stripped"
# Whole outputs, not `readelf | grep -q`: grep leaving early would fail the pipe (pipefail).
sections() { readelf -S "$1"; }
[[ $(sections "$work/prefix/$libdir/libsheaf.so.$version") == *.symtab* ]] \
    || die "the plain install has no symbol table: nothing to compare the stripped one with"
[[ $(sections "$work/stripped/$libdir/libsheaf.so.$version") != *.symtab* ]] \
    || die "--strip left the symbol table in libsheaf.so.$version"
plain_size=$(stat -c %s "$work/prefix/$libdir/libsheaf.so.$version")
stripped_size=$(stat -c %s "$work/stripped/$libdir/libsheaf.so.$version")
echo "   $plain_size bytes, stripped $stripped_size"
with_pkg_config "$work/stripped" "$work/consumer-pc-stripped"

step "moving the installed tree"
mv "$work/prefix" "$work/moved"
check_tree "$work/moved"
with_find_package "$work/moved" "$work/build-cmake-moved"
with_pkg_config "$work/moved" "$work/consumer-pc-moved"

echo "install consumer checks passed"
