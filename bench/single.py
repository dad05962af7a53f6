#!/usr/bin/env python3
"""Single requests and downloads: Sheaf against curl, requests and httpx, on loopback.

    python3 bench/single.py [--size-mb 1024] [--runs 3] [--calls 1000]

Rows (medians of --runs):
  D1  download of --size-mb MB to a file: `sheaf download` (the whole command, Python start-up
      included) and client.download in-process, against `curl -s -o` on the same URL
  L1  --calls small GETs on one keep-alive connection from Python: client.get against
      requests.Session and httpx.Client (skipped when a package is missing; a venv with them:
      python3 -m venv build/bench-venv && build/bench-venv/bin/pip install requests httpx)

The server (Tests/server/api_server.py, as bench/run.py starts it) runs in a process of its own. The library comes from
$SHEAF_LIBRARY_PATH or build/lib. Every loop is bounded by --runs and --calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("SHEAF_LIBRARY_PATH", str(REPO / "build" / "lib" / "libsheaf.so.1"))

import sheaf  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from run import Server  # noqa: E402  (the loopback server the other benchmarks use)


def median_seconds(runs: int, body) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        body()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    server = Server()
    server.start()
    base = server.base
    rows = []
    try:
        size = args.size_mb << 20
        url = f"{base}/req/download?size={size}"
        with tempfile.TemporaryDirectory() as folder:
            target = os.path.join(folder, "file.bin")
            env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
            curl = median_seconds(args.runs, lambda: subprocess.run(["curl", "-s", "-o", target, url], check=True))
            command = median_seconds(args.runs, lambda: subprocess.run(
                [sys.executable, "-m", "sheaf", "download", url, "-o", target, "-q"], check=True, env=env))
            with sheaf.Client(base) as client:
                in_process = median_seconds(args.runs, lambda: client.download(url, target))
            if os.path.getsize(target) != size:
                raise SystemExit("the downloaded file has the wrong size")
        mb = size / 1e6
        rows.append(("D1", f"download {args.size_mb} MiB: curl -s -o", f"{mb / curl:,.0f} MB/s", "1.00x"))
        rows.append(("D1", "  sheaf download (whole command)", f"{mb / command:,.0f} MB/s", f"{curl / command:.2f}x"))
        rows.append(("D1", "  client.download (in process)", f"{mb / in_process:,.0f} MB/s", f"{curl / in_process:.2f}x"))

        path = f"{base}/req/echo"
        with sheaf.Client(base) as client:
            client.get("/req/echo")
            ours = median_seconds(args.runs, lambda: [client.get("/req/echo") for _ in range(args.calls)])
        rows.append(("L1", f"{args.calls} x GET, keep-alive: sheaf client.get", f"{ours / args.calls * 1e6:,.0f} us/call", "1.00x"))
        for name, make in (("requests.Session", lambda: __import__("requests").Session()),
                           ("httpx.Client", lambda: __import__("httpx").Client())):
            try:
                session = make()
            except ImportError:
                rows.append(("L1", f"  {name}", "not installed", "-"))
                continue
            with session:
                session.get(path)
                theirs = median_seconds(args.runs, lambda: [session.get(path) for _ in range(args.calls)])
            rows.append(("L1", f"  {name}", f"{theirs / args.calls * 1e6:,.0f} us/call", f"{theirs / ours:.2f}x (theirs / ours)"))
    finally:
        server.stop()
    width = max(len(row[1]) for row in rows)
    print(f"sheaf {sheaf.library_version()}, python {sys.version.split()[0]}, runs {args.runs} (medians)")
    for row in rows:
        print(f"{row[0]}  {row[1]:<{width}}  {row[2]:>16}  {row[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
