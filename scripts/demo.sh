#!/usr/bin/env bash
# Builds everything, starts the bundled test API on loopback (200 pages of 50 items, 50 ms per
# request), fetches the list with the `sheaf` command-line tool (8 pages in flight at first, a
# window that grows while the latency holds; a live progress line on a terminal), then walks the
# same list serially with urllib for comparison, checks that both lists are equal, prints both
# times, the speed-up and the most requests the API saw at once, and stops the API.
# Needs no network beyond loopback and no pip install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build

pages=200 per_page=50 latency_ms=50
out=$(mktemp -d)
server=
cleanup() {
    if [[ -n $server ]]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The API reads its stdin from a FIFO whose only writer is this script (fd 3, closed for every
# child): however the script ends, even killed, the API sees end of file and stops
# (--exit-on-stdin-eof).
mkfifo "$out/hold"
exec 3<>"$out/hold"
python3 Tests/server/api_server.py --port 0 --latency-ms "$latency_ms" --quiet --exit-on-stdin-eof \
    < "$out/hold" > "$out/port" 3>&- &
server=$!
for _ in $(seq 100); do grep -q PORT "$out/port" 2>/dev/null && break; sleep 0.1; done
grep -q PORT "$out/port" || { echo "demo: the API did not start" >&2; exit 1; }
base="http://127.0.0.1:$(awk '/PORT/ {print $2}' "$out/port")"
url="$base/anchor?n=$((pages * per_page))"

echo
echo "Demo API at $base (loopback): $pages pages x $per_page items, $latency_ms ms per request."
echo "Pages look like {\"items\": [...], \"next_page\": \"...?page=2\", \"total\": $((pages * per_page))}."
echo
echo "1. Sheaf: 8 pages in flight at first, more while the latency holds (the adaptive window)"
echo "   \$ sheaf get '$url' --id /id -o $out/sheaf.jsonl      (no pagination flags: detected)"
[[ -t 2 ]] || echo "   (stderr is not a terminal, so there is no live progress line)"
start=$(date +%s.%N)
PYTHONPATH=bindings/python SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 \
    python3 -m sheaf get "$url" --id /id \
    -o "$out/sheaf.jsonl" 3>&-
end=$(date +%s.%N)

echo "2. A plain serial walk: urllib, one request at a time, following next_page..."
python3 - "$url" "$out/sheaf.jsonl" "$start" "$end" "$pages" "$per_page" "$latency_ms" "$base" 3>&- <<'PY'
import json, signal, sys, time, urllib.request

signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: stop at once, no traceback

url, sheaf_file = sys.argv[1], sys.argv[2]
sheaf_seconds = float(sys.argv[4]) - float(sys.argv[3])
pages, per_page, latency_ms = (int(a) for a in sys.argv[5:8])
base = sys.argv[8]
n = pages * per_page

start = time.monotonic()
walked, requests = [], 0
while url:
    with urllib.request.urlopen(url, timeout=30) as response:
        page = json.load(response)
    walked += page["items"]
    requests += 1
    url = page["next_page"]
serial_seconds = time.monotonic() - start
with urllib.request.urlopen(base + "/_stats", timeout=30) as response:
    most_in_flight = json.load(response)["max_in_flight"]   # sheaf's: the walk had one at a time

with open(sheaf_file, encoding="utf-8") as f:
    fetched = [json.loads(line) for line in f]
expected = [{"id": i, "name": f"item-{i}"} for i in range(n)]
assert walked == expected, f"the serial walk got {len(walked)} items, not the list"
assert fetched == walked, f"sheaf got {len(fetched)} items, not the same list as the serial walk"

print()
print(f"  sheaf get:                {len(fetched):,} items in {sheaf_seconds:6.2f} s"
      "  (the whole command: Python start-up, library load, output file)")
print(f"  serial walk (urllib):     {len(walked):,} items in {serial_seconds:6.2f} s"
      f"  ({requests} requests)")
print(f"  speed-up: {serial_seconds / sheaf_seconds:.1f}x  -- both lists are equal "
      f"({n:,} items, ids 0..{n - 1} in order)")
def floor(window):   # full windows of requests, one latency each
    return -(-pages // window) * latency_ms / 1000
print(f"  sheaf had up to {most_in_flight} requests in flight; floors at {latency_ms} ms per request: "
      f"serial {floor(1):.2f} s, 8 in flight {floor(8):.2f} s, {most_in_flight} in flight {floor(most_in_flight):.2f} s")
PY
