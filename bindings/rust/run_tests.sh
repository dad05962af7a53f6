#!/usr/bin/env bash
# Builds and tests the Rust binding (bindings/rust) against a build tree's library, installed
# into a temporary prefix the way a user installs it (cmake --install), found through pkg-config.
# usage: run_tests.sh BUILD_DIR [CMAKE]
# Cargo's output goes to BUILD_DIR/rust-target (nothing lands in the source tree but Cargo.lock,
# which is committed); --offline: the crate has no dependencies. Exits 77 (CTest's skip) when
# there is no cargo.
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [CMAKE]" >&2; exit 2; }
build_dir=$(cd "$1" && pwd)
cmake=${2:-cmake}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cargo=$(command -v cargo || true)
[[ -n $cargo ]] || { [[ -x $HOME/.cargo/bin/cargo ]] && cargo=$HOME/.cargo/bin/cargo; }
if [[ -z $cargo ]]; then
    echo "SKIP: cargo not found (neither on PATH nor in \$HOME/.cargo/bin)"
    exit 77
fi
# rustc beside cargo (a rustup install that is not on PATH).
export PATH="$(dirname "$cargo"):$PATH"

prefix=$(mktemp -d "${TMPDIR:-/tmp}/sheaf-rust-prefix.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
echo "== cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name sheaf.pc -print -quit)
[[ -n $pc ]] || { echo "FAIL: no sheaf.pc installed under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "== pkg-config sheaf: $(pkg-config --modversion sheaf) in $(pkg-config --variable=libdir sheaf)"

export CARGO_TARGET_DIR="$build_dir/rust-target"
cd "$here"
echo "== cargo build --offline --examples"
nice -n 10 "$cargo" build --offline --examples
echo "== cargo test --offline"
nice -n 10 "$cargo" test --offline
