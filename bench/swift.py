#!/usr/bin/env python3
"""The Swift async API against C and JSONDecoder: BENCHMARKS.md's P1 and P5 through
`SheafClient.fetchAll(Thing.self, ...)` (items decoded as they arrive).

    python3 bench/swift.py [--runs 5] [--build-dir build]

Rows (medians of --runs, each run a fresh process):
  P1-swift  200 pages x 50 items, 50 ms a page, window 8: the async Decodable API against C's
            sheaf_list_fetch_all (bench/sheaf_bench fetch) on the same list; target <= 1.05.
  P5-swift  500 pages x 1000 items, no latency: the time the async API spends beyond the blocking
            fetch of the same JSON (its decoding, overlapped with fetching) against JSONDecoder
            alone on those bytes; target <= 1.2. Also shown: the async API against fetching
            then decoding one after the other.

Builds bench/swift (SwiftPM product sheaf-swift-bench, release) into BUILD_DIR/swiftpm-bench;
the C driver is BUILD_DIR/bench/sheaf_bench (cmake --build BUILD_DIR). Starts its own server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import Server  # noqa: E402  (the same loopback server the other benchmarks use)


def run(argv: list) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median(runs: list, key: str = "seconds") -> float:
    return statistics.median(r[key] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    args = parser.parse_args()
    build = Path(args.build_dir)
    subprocess.run(["swift", "build", "-c", "release", "--product", "sheaf-swift-bench",
                    "--scratch-path", str(build / "swiftpm-bench")], cwd=ROOT, check=True, capture_output=True)
    swift = str(build / "swiftpm-bench" / "release" / "sheaf-swift-bench")
    c = str(build / "bench" / "sheaf_bench")
    if not Path(c).exists():
        raise SystemExit(f"{c} is missing: cmake --build {build}")

    server = Server()
    server.start()
    try:
        def swift_runs(mode: str, path: str, n: int, size: int) -> list:
            out = []
            for _ in range(args.runs):
                server.reset()
                out.append(run([swift, mode, "--base", server.base, "--path", path, "--expect", str(n),
                                "--page-size", str(size)]))
            return out

        def c_runs(path: str, n: int, size: int) -> list:
            out = []
            for _ in range(args.runs):
                server.reset()
                out.append(run([c, "fetch", "--base", server.base, "--path", path, "--expect", str(n), "--window", "8",
                                "--page-param", "page", "--first-page", "1", "--size-param", "per_page",
                                "--page-size", str(size), "--max-pages", "10000"]))
            return out

        rows = []
        p1 = ("/anchor?n=10000&latency_ms=50", 10000, 50)
        swift_p1, c_p1 = median(swift_runs("async", *p1)), median(c_runs(*p1))
        rows.append(("P1-swift", "async fetchAll(Thing.self) / C fetch_all, 200 x 50 items, 50 ms",
                     f"{swift_p1:.3f} s", f"{c_p1:.3f} s", swift_p1 / c_p1, 1.05))
        p5 = ("/anchor?n=500000", 500000, 1000)
        asynchronous, raw = swift_runs("async", *p5), swift_runs("raw", *p5)
        a, r, d = median(asynchronous), median(raw), median(raw, "decode_seconds")
        rows.append(("P5-swift", "async fetchAll beyond the blocking fetch / JSONDecoder alone, 500 x 1000 items",
                     f"{a - r:.3f} s", f"{d:.3f} s", (a - r) / d, 1.2))
        rows.append(("P5-swift", "async fetchAll / blocking fetch then JSONDecoder, one after the other",
                     f"{a:.3f} s", f"{r + d:.3f} s", a / (r + d), None))
    finally:
        server.stop()

    print(f"{'id':9} {'scenario':82} {'sheaf':>9} {'against':>9} {'ratio':>6} {'target':>7} met")
    for id_, scenario, mine, theirs, ratio, target in rows:
        met = "-" if target is None else ("yes" if ratio <= target else "NO")
        print(f"{id_:9} {scenario:82} {mine:>9} {theirs:>9} {ratio:6.2f} {('<= ' + str(target)) if target else '-':>7} {met}")
    print(f"(medians of {args.runs} runs, each in a fresh process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
