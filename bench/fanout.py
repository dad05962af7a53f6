#!/usr/bin/env python3
"""Sheaf's fan-out rows (issue 28): every issue of every repository of an organisation, the test
server's org fixture (Tests/server/org_api.py: /orgs/<org>/repos names 300 repositories, each with
an issues list of 0 to 12 pages in one of three conventions), 50 ms a request, a server that serves
64 requests at once (more wait their turn).

    bench/fanout.py [--runs 3] [--build-dir build] [--serial-sample 30]

Rows (the median of --runs, each in a fresh process):
  F1  Sheaf's fan-out (sheaf_bench each: sheaf_group_add_each, adaptive window, detection) against
      its floor: ceil(pages / 64) round trips for the children plus the parent's own walk (the
      parent list fetched alone by Sheaf, measured).
  F1  the same written by hand with aiohttp and asyncio.Semaphore(64) over every request, knowing
      each convention (a Link rel="last" or a total_pages fetched at once, a body next followed):
      the best a skilled user writes (needs build/bench-venv with aiohttp, as bench/run.py's rows).
  F1  a serial loop of lists (what `gh api --paginate` in a shell loop does): the first
      --serial-sample repositories walked one page at a time, scaled to 300 (said in the row).
  F2  the incremental rerun: after the first sync, 2 new issues in every 4th repository (150,
      about 1 % of the org's issues); the fan-out again with the children bounded by the newest
      updated_at the first sync saw (`until`), and with that value sent as `since` (the server
      filters): the requests made against the pages holding new items plus one per list.
The server is bench/run.py's (Tests/server/api_server.py in a child process). The library:
$SHEAF_LIBRARY_PATH, else BUILD_DIR/lib/libsheaf.so; the C driver BUILD_DIR/bench/sheaf_bench.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import Server  # noqa: E402  (bench/run.py's server in a child process)

LATENCY_MS, CAPACITY, REPOS = 50, 64, 300
TEMPLATE = "/repos/{/full_name}/issues"


def post(server: Server, path: str) -> None:
    conn = server.connection()
    try:
        conn.request("POST", path)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"POST {path}: HTTP {response.status}")
    finally:
        conn.close()


def expected(server: Server, org: str) -> Tuple[int, int]:
    """(issues, child pages a walk asks for) of the org: an empty list is still one request."""
    sys.path.insert(0, str(ROOT / "Tests" / "server"))
    import org_api
    pages = sum(max(1, org_api.repo_plan(org, i)[1]) for i in range(REPOS))
    return server.get(f"/_orgs/{org}/issues?repos={REPOS}")["count"], pages


def yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def run_json(argv: List[str], env: Dict[str, str]) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- the hand-written baselines (run in a child process with the bench venv's python) ---------

async def aiohttp_fan_out(base: str, org: str) -> Tuple[int, int]:
    """Every issue of the org with aiohttp and one Semaphore(64) over every request; returns
    (issues, requests)."""
    import aiohttp
    gate = asyncio.Semaphore(CAPACITY)
    requests = 0

    async def get(session, url):
        nonlocal requests
        async with gate:
            requests += 1
            async with session.get(url) as response:
                response.raise_for_status()
                return response.links, await response.json()

    def last_page(links) -> Optional[int]:
        last = links.get("last")
        if last is None:
            return None
        query = dict(part.split("=", 1) for part in urlsplit(str(last["url"])).query.split("&") if "=" in part)
        return int(query.get("page", "1"))

    async def child(session, path) -> int:
        url = base + path
        links, body = await get(session, url)
        if isinstance(body, list):              # Link rel=next/last: every page at once
            last = last_page(links) or 1
            rest = await asyncio.gather(*(get(session, f"{url}?page={p}") for p in range(2, last + 1)))
            return len(body) + sum(len(b) for _, b in rest)
        if "total_pages" in body:               # numbered, with a total: every page at once
            rest = await asyncio.gather(*(get(session, f"{url}?page={p}") for p in range(2, body["total_pages"] + 1)))
            return len(body["data"]) + sum(len(b["data"]) for _, b in rest)
        count = len(body["issues"])             # a body next: one page after another
        while body["next"]:
            _, body = await get(session, body["next"])
            count += len(body["issues"])
        return count

    connector = aiohttp.TCPConnector(limit=CAPACITY)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        parent = f"{base}/orgs/{org}/repos"
        links, first = await get(session, parent)
        children = [asyncio.ensure_future(child(session, f"/repos/{r['full_name']}/issues")) for r in first]
        pages = await asyncio.gather(*(get(session, f"{parent}?page={p}") for p in range(2, (last_page(links) or 1) + 1)))
        for _, repos in pages:
            children += [asyncio.ensure_future(child(session, f"/repos/{r['full_name']}/issues")) for r in repos]
        return sum(await asyncio.gather(*children)), requests


def serial_fan_out(base: str, org: str, sample: int) -> Tuple[int, int]:
    """The first `sample` repositories' issues, each list walked one page at a time over one
    keep-alive connection (next links, or page numbers up to total_pages)."""
    host = urlsplit(base)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    requests = 0

    def get(path):
        nonlocal requests
        requests += 1
        conn.request("GET", path)
        response = conn.getresponse()
        body = json.loads(response.read())
        return response.getheader("Link") or "", body

    def local(url: str) -> str:
        parts = urlsplit(url)
        return parts.path + ("?" + parts.query if parts.query else "")

    _, repos = get(f"/orgs/{org}/repos?per_page=100")
    issues = 0
    for repo in repos[:sample]:
        path = f"/repos/{repo['full_name']}/issues"
        page = 1
        while path:
            link, body = get(path)
            if isinstance(body, list):
                issues += len(body)
                nexts = [p.split(";")[0].strip(" <>") for p in link.split(",") if 'rel="next"' in p]
                path = local(nexts[0]) if nexts else None
            elif "issues" in body:
                issues += len(body["issues"])
                path = local(body["next"]) if body["next"] else None
            else:
                issues += len(body["data"])
                page += 1
                path = f"/repos/{repo['full_name']}/issues?page={page}" if page <= body["total_pages"] else None
    conn.close()
    return issues, requests


# ---- the rows ----------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--serial-sample", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON array (bench/run.py reads it)")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BASE", "ORG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, base, org = args.child
        start = time.perf_counter()
        issues, requests = (asyncio.run(aiohttp_fan_out(base, org)) if kind == "aiohttp"
                            else serial_fan_out(base, org, args.serial_sample))
        print(json.dumps({"seconds": time.perf_counter() - start, "items": issues, "requests": requests}))
        return 0

    build = Path(args.build_dir)
    library = os.environ.get("SHEAF_LIBRARY_PATH") or str(build / "lib" / "libsheaf.so")
    env = dict(os.environ, LD_LIBRARY_PATH=str(Path(library).parent))
    driver = str(build / "bench" / "sheaf_bench")
    venv_python = build / "bench-venv" / "bin" / "python"
    server = Server()
    server.start()
    # (row, scenario, Sheaf, against, ratio, target, met)
    rows: List[Tuple[str, str, str, str, str, str, str]] = []
    try:
        org = "bench"
        post(server, f"/_orgs/{org}/options?latency_ms={LATENCY_MS}&capacity={CAPACITY}")
        issues, pages = expected(server, org)

        def measure(argv: List[str], check_items: int, runs: int) -> List[dict]:
            results = []
            for _ in range(runs):
                server.reset()
                result = run_json(argv, env)
                if result["items"] != check_items:
                    raise RuntimeError(f"{argv[1]}: {result['items']} items, expected {check_items}")
                result["server_max_in_flight"] = server.stats()["max_in_flight"]
                results.append(result)
            return results

        parent = measure([driver, "fetch", "--base", server.base, "--path", f"/orgs/{org}/repos", "--expect", str(REPOS),
                          "--detect", "1", "--adaptive", "1"], REPOS, args.runs)
        parent_s = statistics.median(r["seconds"] for r in parent)
        sheaf = measure([driver, "each", "--base", server.base, "--path", f"/orgs/{org}/repos", "--template", TEMPLATE,
                         "--expect", str(issues), "--adaptive", "1"], issues, args.runs)
        sheaf_s = statistics.median(r["seconds"] for r in sheaf)
        floor = math.ceil(pages / CAPACITY) * LATENCY_MS / 1000 + parent_s
        requests = statistics.median(r["requests"] for r in sheaf)
        most = max(r["server_max_in_flight"] for r in sheaf)
        label = (f"{REPOS} child lists, 0-12 pages each ({pages} child pages, {issues} issues), L={LATENCY_MS} ms, "
                 f"capacity {CAPACITY}, C, adaptive")
        rows.append(("F1", f"{label}; {requests:.0f} requests, server max in flight {most}", f"{sheaf_s:.3f} s",
                     f"{floor:.3f} s (parent alone {parent_s:.3f} s)", f"{sheaf_s / floor:.2f}x",
                     "<= 1.15x the floor", yes(sheaf_s / floor <= 1.15)))

        if venv_python.exists():
            hand = measure([str(venv_python), __file__, "--child", "aiohttp", server.base, org], issues, args.runs)
            hand_s = statistics.median(r["seconds"] for r in hand)
            rows.append(("F1", "  the same, hand-written aiohttp + asyncio.Semaphore(64), knowing each convention",
                         f"{sheaf_s:.3f} s", f"{hand_s:.3f} s (aiohttp, {statistics.median(r['requests'] for r in hand):.0f} requests)",
                         f"{sheaf_s / hand_s:.2f}x", "<= 0.90x", yes(sheaf_s / hand_s <= 0.90)))
        else:
            rows.append(("F1", "  the same, hand-written aiohttp", "not run: needs build/bench-venv with aiohttp", "-", "-",
                         "<= 0.90x", "-"))

        sample = min(args.serial_sample, REPOS)
        sys.path.insert(0, str(ROOT / "Tests" / "server"))
        import org_api
        sample_issues = sum(org_api.repo_plan(org, i)[0] for i in range(sample))
        serial = measure([sys.executable, __file__, "--serial-sample", str(sample), "--child", "serial", server.base, org],
                         sample_issues, 1)[0]
        scaled = serial["seconds"] * REPOS / sample
        rows.append(("F1", f"  the same, a serial loop of lists (the first {sample} walked, x{REPOS / sample:g})",
                     f"{sheaf_s:.3f} s", f"{scaled:.1f} s (serial, {serial['seconds']:.1f} s for {sample})",
                     f"{sheaf_s / scaled:.3f}x", "(report)", "-"))

        # F2: only what changed since the first sync.
        every = server.get(f"/_orgs/{org}/issues?repos={REPOS}")["issues"]
        newest = max(issue["updated_at"] for issue in every)
        changed = [i for i in range(REPOS) if i % 4 == 0]
        for i in changed:
            post(server, f"/_orgs/{org}/repos/repo-{i:03d}/issues?add=2")
        new_issues = 2 * len(changed)
        pages_new = len(changed) * math.ceil(2 / 10)
        parent_pages = math.ceil(REPOS / 30)
        allowed = 1.1 * pages_new + (REPOS + 1) + parent_pages
        for label, child, expect in (
                ("until /updated_at", {"until": {"pointer": "/updated_at", "value": newest}}, new_issues),
                ("since (server-side filter)", {"since": {"param": "since", "pointer": "/updated_at", "value": newest}},
                 server.get(f"/_orgs/{org}/issues?repos={REPOS}&since={newest}")["count"])):
            rerun = measure([driver, "each", "--base", server.base, "--path", f"/orgs/{org}/repos", "--template", TEMPLATE,
                             "--expect", str(expect), "--adaptive", "1", "--child", json.dumps(child)], expect, args.runs)
            requests = statistics.median(r["requests"] for r in rerun)
            seconds = statistics.median(r["seconds"] for r in rerun)
            rows.append(("F2", f"rerun after {new_issues} new issues in {len(changed)} repositories, {label}",
                         f"{seconds:.3f} s, {requests:.0f} requests ({expect} items)",
                         f"{allowed:.0f} requests (1.1 x {pages_new} pages holding new items + {REPOS + 1} lists "
                         f"+ the parent's {parent_pages} pages)",
                         f"{requests / allowed:.2f}x", "requests <= 1.1x the pages holding new items + 1 per list",
                         yes(requests <= allowed)))
    finally:
        server.stop()

    if args.json:
        print(json.dumps(rows))
        return 0
    print("| row | scenario | Sheaf | against | ratio | target | met |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
