#!/usr/bin/env bash
# Installs what building and testing Sheaf needs on a Debian machine that has Swift and gcc:
# cmake, ninja, pkg-config, jansson and libcurl headers, valgrind, python3 (+ pytest, hypercorn, orjson, pyarrow),
# g++, abigail-tools (abidw and abidiff hold the C ABI to Tests/abi/baseline), zsh (the CLI's
# completion script is checked in bash and zsh), debootstrap (the wheel is also run on an older
# Debian, in a chroot), qemu-user and aarch64 glibc (the glibc compatibility code is also run for
# aarch64), Go 1.21+ from bookworm-backports (bindings/go).
# Safe to rerun: when everything is already there it changes nothing and touches no network.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin   # debootstrap's place, off a non-root user's PATH

missing_commands=()
for command in cmake ninja pkg-config valgrind python3 g++ readelf nm abidw abidiff openssl zsh debootstrap qemu-aarch64; do
    command -v "$command" >/dev/null 2>&1 || missing_commands+=("$command")
done
[[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ]] || missing_commands+=(libc6-dev-arm64-cross)

missing_modules=()
if command -v pkg-config >/dev/null 2>&1; then
    for module in jansson libcurl; do
        pkg-config --exists "$module" || missing_modules+=("$module")
    done
else
    missing_modules=(jansson libcurl)
fi

packages=(cmake ninja-build pkg-config libjansson-dev libcurl4-openssl-dev valgrind python3 g++ binutils
          abigail-tools openssl zsh debootstrap qemu-user libc6-dev-arm64-cross)
if ((${#missing_commands[@]} + ${#missing_modules[@]} > 0)); then
    echo "setup: missing: ${missing_commands[*]} ${missing_modules[*]}; installing with apt-get" >&2
    if [[ $(id -u) -eq 0 ]]; then
        sudo=()
    elif command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "setup: not root and no sudo: install these Debian packages by hand:" >&2
        echo "  ${packages[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
fi

# Check again, so a package that installed but did not provide what we need fails here, loudly.
for command in cmake ninja pkg-config valgrind python3 g++ readelf nm abidw abidiff openssl zsh debootstrap qemu-aarch64; do
    command -v "$command" >/dev/null 2>&1 || { echo "setup: '$command' still missing" >&2; exit 1; }
done
[[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ]] || { echo "setup: aarch64 glibc still missing" >&2; exit 1; }
for module in jansson libcurl; do
    pkg-config --exists "$module" || { echo "setup: pkg-config module '$module' still missing" >&2; exit 1; }
done
cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
if [[ "$(printf '%s\n' 3.25 "$cmake_version" | sort -V | head -n1)" != 3.25 ]]; then
    echo "setup: cmake $cmake_version is older than 3.25" >&2
    exit 1
fi
command -v swift >/dev/null 2>&1 || { echo "setup: 'swift' is not on PATH (expected /opt/swift/usr/bin)" >&2; exit 1; }

# The server self-test runs under the python3 on PATH, which may not be Debian's.
if ! python3 -m pytest --version >/dev/null 2>&1; then
    echo "setup: installing pytest for $(command -v python3)" >&2
    # pip for a python3 of its own (pyenv); Debian's python3 refuses pip (PEP 668): use apt there.
    python3 -m pip install --quiet pytest 2>/dev/null \
        || { [[ $(id -u) -eq 0 ]] && apt-get install -y --no-install-recommends python3-pytest; } \
        || { echo "setup: could not install pytest" >&2; exit 1; }
    python3 -m pytest --version >/dev/null 2>&1 || { echo "setup: pytest still missing" >&2; exit 1; }
fi

# The HTTP/2 test server (hypercorn), the fast JSON decoder the binding uses when present
# (orjson) and the validator of include/sheaf/description.schema.json's tests (jsonschema), from
# PyPI, for the same python3.
if ! python3 -c "import hypercorn, orjson, jsonschema" >/dev/null 2>&1; then
    echo "setup: installing hypercorn, orjson and jsonschema for $(command -v python3)" >&2
    python3 -m pip install --quiet hypercorn orjson jsonschema \
        || { echo "setup: could not install hypercorn, orjson and jsonschema with pip" >&2; exit 1; }
fi
# pyarrow, pinned, for the Arrow tests (bindings/python/tests/test_arrow.py, skipped without it):
# the binding's extra `arrow` (pyproject.toml). 21.0.0 has wheels for CPython 3.10 to 3.14.
if ! python3 -c "import pyarrow" >/dev/null 2>&1; then
    echo "setup: installing pyarrow 21.0.0 for $(command -v python3)" >&2
    python3 -m pip install --quiet pyarrow==21.0.0 \
        || { echo "setup: could not install pyarrow with pip" >&2; exit 1; }
fi

# Go 1.21 or newer (log/slog) for bindings/go: bookworm's golang-go is 1.19, so Go comes from
# bookworm-backports (golang-1.23-go, in /usr/lib/go-1.23/bin; bindings/go/run_tests.sh finds it
# there), its source added only when no such Go is installed yet.
go_new_enough() { "$1" version 2>/dev/null | grep -Eq 'go1\.(2[1-9]|[3-9][0-9])'; }
have_go=
for go in "$(command -v go 2>/dev/null || true)" /usr/lib/go-1.*/bin/go; do
    [[ -x $go ]] && go_new_enough "$go" && { have_go=$go; break; }
done
if [[ -z $have_go ]]; then
    echo "setup: installing Go 1.23 from bookworm-backports (golang-1.23-go)" >&2
    [[ $(id -u) -eq 0 ]] || { echo "setup: not root: install golang-1.23-go from bookworm-backports by hand" >&2; exit 1; }
    backports=/etc/apt/sources.list.d/bookworm-backports.sources
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
            'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' >"$backports"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends golang-1.23-go
    go_new_enough /usr/lib/go-1.23/bin/go || { echo "setup: Go 1.23 still missing" >&2; exit 1; }
    have_go=/usr/lib/go-1.23/bin/go
fi

echo "setup: ok (cmake $cmake_version, $(swift --version 2>/dev/null | head -n1), $("$have_go" version))"
