#!/usr/bin/env bash
# The engine suite: sheaf.spark, sheaf.ray and sheaf.dask on real engines in local mode (Spark
# local[2], Ray with 2 CPUs, a Dask LocalCluster of 2 worker processes) against the test API server.
# usage: bindings/python/tests/engines/run.sh BUILD_DIR [pytest arguments]
#        bindings/python/tests/engines/run.sh BUILD_DIR --venv-only   (makes the venv, runs nothing:
#        bench/engines.py runs under it)
# Makes (or reuses) a venv at BUILD_DIR/engines-venv with requirements.txt beside this script and
# this source tree's package (a .pth file: nothing is built), then runs pytest on this folder with
# SHEAF_LIBRARY_PATH (set by CTest; else BUILD_DIR's library). Needs Python 3.9+ with venv and
# Java 17 (installed from Debian's packages when missing and this runs as root). Exits 77
# (CTest's SKIP_RETURN_CODE) when there is no Java and it cannot be installed, or no venv module.
set -euo pipefail

build_dir=$(mkdir -p "${1:?usage: run.sh BUILD_DIR [pytest arguments | --venv-only]}" && cd "$1" && pwd)
shift
venv_only=
[[ ${1:-} == --venv-only ]] && venv_only=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
package=$(cd "$here/../.." && pwd)          # bindings/python
python=${PYTHON3:-python3}
venv="$build_dir/engines-venv"
start=$SECONDS

if [[ -z ${SHEAF_LIBRARY_PATH:-} ]]; then
    SHEAF_LIBRARY_PATH=$(find "$build_dir/lib" -maxdepth 1 -name 'libsheaf.so' -print -quit 2>/dev/null || true)
    [[ -n $SHEAF_LIBRARY_PATH ]] || { echo "engines: no libsheaf.so in $build_dir/lib (set SHEAF_LIBRARY_PATH)" >&2; exit 1; }
    export SHEAF_LIBRARY_PATH
fi

# Java 17 for Spark: the machine's, else Debian's headless JRE (as root only).
java_ok() { java -version 2>&1 | grep -Eq 'version "(1[7-9]|2[0-9])'; }
if ! java_ok; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "== installing openjdk-17-jre-headless"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }
    fi
    java_ok || { echo "engines: no Java 17 or newer for Spark and none could be installed: skipped" >&2; exit 77; }
fi

# The venv, made once; its packages installed again only when requirements.txt changes.
stamp="$venv/.sheaf-requirements"
if [[ ! -x $venv/bin/python ]] || ! cmp -s "$here/requirements.txt" "$stamp"; then
    if [[ ! -x $venv/bin/python ]]; then
        "$python" -m venv "$venv" || { echo "engines: $python cannot make a venv (python3-venv): skipped" >&2; exit 77; }
    fi
    echo "== installing the engines into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi
# The package from this source tree, as installed (the library comes from SHEAF_LIBRARY_PATH).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$package" > "$site/sheaf-source.pth"
echo "== venv ready in $((SECONDS - start)) s: $("$venv/bin/python" -c 'import pyspark, ray, dask, pyarrow, pandas
print(f"pyspark {pyspark.__version__}, ray {ray.__version__}, dask {dask.__version__}, pyarrow {pyarrow.__version__}, pandas {pandas.__version__}")')"
[[ -n $venv_only ]] && exit 0

export SHEAF_ENGINE_TESTS=1 PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python"
export RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
# Ray keeps its session files (sockets, logs) in a folder of this run's, searched for tokens below.
if [[ -z ${RAY_TMPDIR:-} ]]; then
    export RAY_TMPDIR="$build_dir/engines-ray"
    rm -rf "$RAY_TMPDIR"
fi
mkdir -p "$RAY_TMPDIR"
cd "$package/../.."
# Uncaptured (-s), so that whatever the engines and their workers print (Spark's JVM, Ray, Dask)
# is in the log, which is then searched for the tokens: none may be there.
log="$build_dir/engines-test.log"
status=0
"$venv/bin/python" -m pytest -q -s -rfE -p no:cacheprovider "$here" "$@" >"$log" 2>&1 || status=$?
if [[ $status == 0 ]]; then tail -n 5 "$log"; else cat "$log"; fi
secrets="$build_dir/engines-secrets"
"$venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import engine_lists as e; print(e.SECRET); print(e.OTHER_SECRET)' \
    "$here" >"$secrets"
# Files that hold a token (sockets and unreadable files skipped: not a match, not a failure).
found=$(grep -rlsF -D skip -f "$secrets" "$log" "$RAY_TMPDIR" || true)
if [[ -n $found ]]; then
    echo "engines: a token is in the output or the logs: $found" >&2
    status=1
fi
rm -f "$secrets"
echo "== engines: $((SECONDS - start)) s in all (the whole output: $log)"
exit $status
