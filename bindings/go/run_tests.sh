#!/usr/bin/env bash
# Runs the Go binding's checks against libsheaf installed from a build tree into a temporary
# prefix, found the way a Go user finds it (pkg-config sheaf): go vet, go test and go test -race,
# over the package and the example service, with the test API server (Tests/server/api_server.py)
# started by the tests themselves.
# usage: bindings/go/run_tests.sh BUILD_DIR
#        bindings/go/run_tests.sh --prefix PREFIX   (a libsheaf already installed there, used as it is)
# Exits 77 (CTest's SKIP_RETURN_CODE) when no Go 1.21 or newer is found (scripts/setup.sh installs
# one from Debian's bookworm-backports).
set -euo pipefail

installed=
if [[ ${1:-} == --prefix ]]; then
    installed=$(cd "${2:?usage: run_tests.sh --prefix PREFIX}" && pwd)
else
    build_dir=$(cd "${1:?usage: run_tests.sh BUILD_DIR | --prefix PREFIX}" && pwd)
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmake=${CMAKE:-cmake}

# The newest Go that has log/slog (1.21+): the one on PATH, else Debian's backports packages.
go_ok() { "$1" version 2>/dev/null | grep -Eq 'go1\.(2[1-9]|[3-9][0-9])'; }
go=
for candidate in "$(command -v go 2>/dev/null || true)" $(ls -d /usr/lib/go-1.*/bin/go 2>/dev/null | sort -V -r); do
    if [[ -n $candidate ]] && go_ok "$candidate"; then go=$candidate; break; fi
done
if [[ -z $go ]]; then
    echo "go_tests: no Go 1.21 or newer (on PATH or /usr/lib/go-1.2x/bin): skipped; scripts/setup.sh installs one" >&2
    exit 77
fi
export PATH="$(dirname "$go"):$PATH"
echo "== $(go version)"

# A prefix at a path of its own in the build tree, the same every run: Go's build cache keeps the
# -L path that pkg-config gave when a package was built, so a prefix at a new temporary path each
# run made the second run link against the first one's (deleted) prefix.
# With --prefix, the installed library is used in place: nothing is installed or removed, and
# Go's cache lives in the prefix (PREFIX/.go-tests), for the same reason.
if [[ -n $installed ]]; then
    prefix=$installed
    build_dir=$installed/.go-tests
    mkdir -p "$build_dir"
else
    prefix="$build_dir/go/prefix"
    rm -rf "$prefix"
    "$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
fi
pc=$(find "$prefix" -name sheaf.pc -print -quit)
[[ -n $pc ]] || { echo "go_tests: the install put no sheaf.pc under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
libdir=$(cd "$(dirname "$pc")/.." && pwd)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== libsheaf $(pkg-config --modversion sheaf) from $libdir"

# Go's cache lives in the build tree too (unless the caller names one), so it never outlives the
# prefix its packages were linked against; without a HOME Go would have no default cache anyway.
export GOCACHE="${GOCACHE:-$build_dir/go/cache}" GOPATH="${GOPATH:-$build_dir/go/path}"
# Standard library only: no module download, no toolchain download.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1
cd "$here"
echo "== go vet ./..."
go vet ./...
echo "== go test ./..."
go test -count=1 ./...
echo "== go test -race ./..."
go test -race -count=1 ./...
echo "go_tests: ok"
