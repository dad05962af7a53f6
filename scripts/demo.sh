#!/usr/bin/env bash
# Builds everything, starts the bundled demo API on loopback (200 pages of 50 items, 50 ms per
# request), fetches the list with Sheaf, then walks it serially for comparison, and stops the API.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build

pages=200 per_page=50 latency_ms=50
out=$(mktemp -d)
python3 Tests/server/api_server.py --port 0 --latency-ms "$latency_ms" --quiet --exit-on-stdin-eof \
    < <(sleep 600) > "$out/port" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do grep -q PORT "$out/port" 2>/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$(awk '/PORT/ {print $2}' "$out/port")"
path="/anchor?n=$((pages * per_page))"

run() { # window, label -> seconds
    local start end
    start=$(date +%s.%N)
    SHEAF_WINDOW=$1 build/examples/list "$base" "$path" > "$out/items.$1.json"
    end=$(date +%s.%N)
    python3 - "$out/items.$1.json" "$start" "$end" "$2" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))
assert [item["id"] for item in items] == list(range(len(items))), "items out of order"
print(f"{sys.argv[4]}: {len(items)} items in {float(sys.argv[3]) - float(sys.argv[2]):.2f} s")
PY
}

echo
echo "Demo API: $pages pages x $per_page items at $base, $latency_ms ms per request"
echo "Sheaf, window 8 (pages in flight at once):"
concurrent=$(run 8 "  sheaf, window 8 ")
echo "$concurrent"
echo "A plain serial walk of the same list (window 1), for comparison:"
serial=$(run 1 "  serial walk     ")
echo "$serial"
python3 - "$concurrent" "$serial" <<'PY'
import re, sys
fast, slow = (float(re.search(r"in ([0-9.]+) s", text).group(1)) for text in sys.argv[1:])
print(f"Sheaf was {slow / fast:.1f}x faster than the serial walk "
      f"(floor for window 8: {(1 + -(-199 // 8)) * 0.05:.2f} s; serial floor: {200 * 0.05:.2f} s)")
PY
