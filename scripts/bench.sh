#!/usr/bin/env bash
# The benchmark command: builds Sheaf, installs what every row needs, then prints bench/run.py's
# table (saved as JSON under build/bench-results) and bench/engines.py's engine rows.
#   bash scripts/bench.sh                 # every row: about 15 minutes on 2 cores
#   bash scripts/bench.sh --runs 3        # arguments go to bench/run.py
#   SHEAF_BENCH_ENGINES=0 bash scripts/bench.sh   # run.py's table only
# What it installs, each only when missing (as scripts/setup.sh does, and after it):
# - libsimdjson-dev (Debian), P5's scan anchor;
# - uvicorn, for the python3 on PATH, P5U's server (as pip installs hypercorn in setup.sh);
# - build/bench-venv with the Python peers (requests, httpx, aiohttp) and matplotlib for --charts;
# - build/engines-venv (Spark, Ray, Dask, pyarrow: bindings/python/tests/engines/run.sh --venv-only).
# Uses nothing but loopback once installed. Exits with run.py's status (1 when a row misses its
# target) unless the engine rows fail to run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build

if [[ ! -e /usr/include/simdjson.h ]]; then
    echo "bench: installing libsimdjson-dev" >&2
    if [[ $(id -u) -eq 0 ]]; then sudo=(); else sudo=(sudo); fi
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
    "${apt[@]}" install -y --no-install-recommends libsimdjson-dev \
        || { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends libsimdjson-dev; }
fi
if ! python3 -c "import uvicorn" >/dev/null 2>&1; then
    echo "bench: installing uvicorn for $(command -v python3)" >&2
    python3 -m pip install --quiet uvicorn
fi
venv=build/bench-venv
if ! "$venv/bin/python" -c "import requests, httpx, aiohttp, matplotlib" >/dev/null 2>&1; then
    echo "bench: making $venv (requests, httpx, aiohttp, matplotlib)" >&2
    [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check requests httpx aiohttp matplotlib
fi

status=0
python3 bench/run.py "$@" || status=$?
[[ $status == 130 ]] && exit 130
if [[ ${SHEAF_BENCH_ENGINES:-1} != 0 ]]; then
    bash bindings/python/tests/engines/run.sh build --venv-only
    python3 bench/engines.py || exit 1
fi
exit $status
