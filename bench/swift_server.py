#!/usr/bin/env python3
"""Sheaf's Swift server products: issue 30's P1 row through AsyncHTTPClient.

    python3 bench/swift_server.py [--runs 5] [--build-dir build]

Rows (medians of --runs, each run a fresh process, the two sides alternating):
  P1-ahc     200 pages x 50 items, 50 ms a page: SheafClient.fetchAll(Thing.self, ...) over
             AsyncHTTPClientTransport, with the client's default window (8, adapting up to 64),
             against AsyncHTTPClient alone with a task-group window of 64 (page one, its total, then
             the other pages 64 in flight, each decoded with JSONDecoder); target <= 1.05.
  P1-ahc-64  the same with Sheaf's window fixed at 64, as the task group's.
  P1-ahc-learnt  the default window on a client in use: the same list once first, untimed, so the
             timed one starts with the window its origin learnt (a service's long-lived client).
  P1-curl, P1-curl-64  the same two through Sheaf's libcurl transport, for comparison (no target).

Builds bindings/swift-server's sheaf-server-bench (release) into BUILD_DIR/swift-server-bench.
Starts its own server (bench/run.py's: Tests/server/api_server.py with --cache-pages).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import Server  # noqa: E402  (the same loopback server the other benchmarks use)
from swift import run  # noqa: E402  (one measured run in a child process, as bench/swift.py runs it)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    args = parser.parse_args()
    scratch = Path(args.build_dir) / "swift-server-bench"
    subprocess.run(["swift", "build", "-c", "release", "--product", "sheaf-server-bench",
                    "--package-path", str(ROOT / "bindings" / "swift-server"), "--scratch-path", str(scratch)],
                   check=True, capture_output=True)
    driver = str(scratch / "release" / "sheaf-server-bench")

    n, size = 10000, 50
    path = "/anchor?n=10000&latency_ms=50"
    server = Server()
    server.start()
    try:
        def once(mode: str, *extra: str) -> float:
            server.reset()
            return run([driver, mode, "--base", server.base, "--path", path, "--expect", str(n),
                        "--page-size", str(size), *extra])["seconds"]

        sheaf, sheaf64, learnt, ahc, curl, curl64 = [], [], [], [], [], []
        for _ in range(args.runs):
            sheaf.append(once("sheaf"))
            learnt.append(once("sheaf", "--learnt"))
            ahc.append(once("ahc", "--window", "64"))
            sheaf64.append(once("sheaf", "--window", "64"))
            curl.append(once("curl"))
            curl64.append(once("curl", "--window", "64"))
    finally:
        server.stop()

    s, s64, a = statistics.median(sheaf), statistics.median(sheaf64), statistics.median(ahc)
    learned = statistics.median(learnt)
    c, c64 = statistics.median(curl), statistics.median(curl64)
    rows = [
        ("P1-ahc", "fetchAll over AsyncHTTPClient (default window) / AHC + task group W=64, 200 x 50, 50 ms",
         s, a, 1.05),
        ("P1-ahc-64", "fetchAll over AsyncHTTPClient (fixed window 64) / AHC + task group W=64", s64, a, 1.05),
        ("P1-ahc-learnt", "fetchAll over AsyncHTTPClient (default window, learnt by a list before) / AHC + task group W=64",
         learned, a, 1.05),
        ("P1-curl", "fetchAll over libcurl (default window) / AHC + task group W=64", c, a, None),
        ("P1-curl-64", "fetchAll over libcurl (fixed window 64) / AHC + task group W=64", c64, a, None),
    ]
    print(f"{'id':13} {'scenario':100} {'sheaf':>8} {'against':>8} {'ratio':>6} {'target':>7} met")
    for id_, scenario, mine, theirs, target in rows:
        ratio = mine / theirs
        met = "-" if target is None else ("yes" if ratio <= target else "NO")
        shown = "-" if target is None else f"<= {target}"
        print(f"{id_:13} {scenario:100} {mine:7.3f}s {theirs:7.3f}s {ratio:6.2f} {shown:>7} {met}")
    print(f"(medians of {args.runs} runs, each in a fresh process; all runs, s: sheaf {sorted(round(x, 3) for x in sheaf)}, "
          f"sheaf W=64 {sorted(round(x, 3) for x in sheaf64)}, sheaf learnt {sorted(round(x, 3) for x in learnt)}, ahc {sorted(round(x, 3) for x in ahc)}, "
          f"curl {sorted(round(x, 3) for x in curl)}, curl W=64 {sorted(round(x, 3) for x in curl64)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
