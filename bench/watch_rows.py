#!/usr/bin/env python3
"""The watch rows of the benchmark (issue 46), against the project's API server (a feed that
grows while it is watched, Tests/server/feeds.py). bench/run.py runs it; alone:

    python3 bench/watch_rows.py delay BASE_URL [--rate 10] [--seconds 20] [--every 1]
    python3 bench/watch_rows.py idle BASE_URL [--polls 720]

delay: `sheaf watch --every S -o FILE` on a Stripe-shaped feed while `rate` items a second are
  added (one every 1/rate s, each in the second it is added: same-second bursts of `rate`); a
  reader tails FILE and times each item from its insert (the server's clock, this machine's) to
  the moment it is in FILE. Beside it, the peer: a poll loop written as a careful engineer would
  (requests.Session, created[gte] the newest second seen, the ids of that second remembered, the
  new items appended to a file and fsynced, then a sleep of S). Prints JSON: both p50/p95/max
  delays, items inserted and written, and whether each wrote every item once.
idle: `polls` polls back to back of an unchanged list (720: an hour at --every 5; the waits are
  not slept), without and with the response cache; prints JSON: requests per poll for each.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.load(answer)


def percentile(values: List[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))] if ordered else float("nan")


def tail(path: str, arrived: Dict[str, float], counts: Dict[str, int], stop: threading.Event) -> None:
    """Times each line of `path` as it appears (looked at every 5 ms): when each id first came,
    and how many times each came."""
    offset, pending = 0, b""
    while not stop.is_set():   # bounded by stop, set once the run is over
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                chunk = file.read()
        except FileNotFoundError:
            chunk = b""
        now = time.time()
        if chunk:
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    identity = json.loads(line)["id"]
                    arrived.setdefault(identity, now)
                    counts[identity] = counts.get(identity, 0) + 1
        time.sleep(0.005)


def feed(base: str, name: str, rate: float, seconds: float) -> int:
    """Adds `rate` items a second to feed `name` for `seconds`; how many."""
    count = int(rate * seconds)
    start = time.monotonic()
    for k in range(count):   # bounded: rate x seconds inserts
        delay = start + k / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        get(base, f"/_feed/insert?feed={name}&n=1")
    return count


def peer(base: str, feed_name: str, output: str, every: float, stop: threading.Event) -> None:
    """The hand-written poll loop."""
    import requests

    session = requests.Session()
    newest, seen = None, set()
    with open(output, "ab") as out:
        while not stop.is_set():   # bounded by stop
            params = {"feed": feed_name, "limit": 100}
            if newest is not None:
                params["created[gte]"] = newest
            page, fresh = None, []
            while True:   # bounded by the list's pages
                if page is not None:
                    params["starting_after"] = page["data"][-1]["id"]
                page = session.get(base + "/feed/stripe", params=params, timeout=30).json()
                fresh += [item for item in page["data"] if item["id"] not in seen]
                if not page["has_more"]:
                    break
            if fresh:
                top = max(item["created"] for item in fresh)
                if newest is None or top > newest:
                    seen = {item["id"] for item in fresh if item["created"] == top}
                    newest = top
                else:
                    seen |= {item["id"] for item in fresh if item["created"] == top}
                out.write(b"".join(json.dumps(item).encode() + b"\n" for item in fresh))
                out.flush()
                os.fsync(out.fileno())
            stop.wait(every)


def delay_row(base: str, rate: float, seconds: float, every: float) -> Dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "bindings" / "python") + os.pathsep + env.get("PYTHONPATH", "")
    result: Dict[str, Any] = {"rate": rate, "seconds": seconds, "every": every}
    folder = tempfile.mkdtemp(prefix="sheaf-watch-bench-")
    for who in ("sheaf", "peer"):
        name = f"w{who}{int(time.time() * 1000)}"
        output = os.path.join(folder, f"{who}.jsonl")
        arrived: Dict[str, float] = {}
        counts: Dict[str, int] = {}
        stop = threading.Event()
        reader = threading.Thread(target=tail, args=(output, arrived, counts, stop))
        reader.start()
        proc = None
        loop = None
        if who == "sheaf":
            proc = subprocess.Popen([sys.executable, "-m", "sheaf", "watch", f"{base}/feed/stripe?feed={name}&limit=100",
                                     "--preset", "stripe", "--until", "/created=0", "--state", os.path.join(folder, "w.state"),
                                     "-o", output, "--every", str(every), "-q"], env=env, stdin=subprocess.DEVNULL)
        else:
            quit_peer = threading.Event()
            loop = threading.Thread(target=peer, args=(base, name, output, every, quit_peer))
            loop.start()
        time.sleep(1.0)   # the first (empty) poll is made
        inserted = feed(base, name, rate, seconds)
        time.sleep(every + 1.0)   # the polls after the last insert
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        else:
            quit_peer.set()
            loop.join()
        time.sleep(0.05)
        stop.set()
        reader.join()
        items = get(base, f"/_feed/items?feed={name}")["items"]
        delays = [arrived[f"ch_{item['id']:08d}"] - item["inserted_at"] for item in items if f"ch_{item['id']:08d}" in arrived]
        twice = sum(1 for count in counts.values() if count > 1)
        result[who] = {"inserted": inserted, "written": len(delays), "twice": twice,
                       "p50": percentile(delays, 0.5), "p95": percentile(delays, 0.95), "max": max(delays or [float("nan")]),
                       "exit": None if proc is None else proc.returncode}
    return result


def idle_row(base: str, polls: int) -> Dict[str, Any]:
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
    import sheaf

    name = f"idle{int(time.time() * 1000)}"
    for second in range(250):
        get(base, f"/_feed/insert?feed={name}&n=1&at={1_700_000_000 + second}")
    result: Dict[str, Any] = {"polls": polls}
    for label, cache in (("plain", None), ("cache", tempfile.mkdtemp(prefix="sheaf-watch-cache-"))):
        with sheaf.Client(base, cache=cache) as client:
            watch = client.watch(f"/feed/stripe?feed={name}&limit=100&etag=1", preset="stripe", until=("/created", 0), id="/id")
            watch.commit(watch.poll())
            before = get(base, "/_stats")
            written = 0
            for _ in range(polls):   # bounded: `polls` polls
                poll = watch.poll()
                written += len(poll)
                watch.commit(poll)
            after = get(base, "/_stats")
            watch.close()
        result[label] = {"requests": after["requests"] - before["requests"],
                         "not_modified": after.get("not_modified", 0) - before.get("not_modified", 0),
                         "bytes": after.get("bytes_sent", 0) - before.get("bytes_sent", 0), "items": written}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("row", choices=("delay", "idle"))
    parser.add_argument("base")
    parser.add_argument("--rate", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--every", type=float, default=1)
    parser.add_argument("--polls", type=int, default=720)
    args = parser.parse_args()
    row = delay_row(args.base, args.rate, args.seconds, args.every) if args.row == "delay" else idle_row(args.base, args.polls)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
