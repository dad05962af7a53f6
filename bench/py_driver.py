#!/usr/bin/env python3
"""The Python driver of Sheaf's benchmarks: one measured run per process (bench/run.py runs it).

    python3 bench/py_driver.py MODE --base URL --path PATH --expect N [options]

Modes:
  requests-serial   the baseline: a serial walk with `requests` (urllib if it is missing), one
                    keep-alive session, following next_page from page 1
  threadpool        the baseline: page 1, then pages 2..P (P from the total) with a
                    ThreadPoolExecutor of --window threads, one keep-alive session per thread
  httpx-window      the baseline: page 1, then pages 2..P with httpx.AsyncClient, a sliding
                    window of --window requests (an asyncio semaphore), one connection pool
  aiohttp-window    the same with aiohttp.ClientSession
                    (both need their package: run the driver with a venv's python that has it)
  sheaf-fetch       sheaf.Client(...).fetch_all(...)
  sheaf-arrow       sheaf.Client(...).fetch_arrow(...): the list as a pyarrow.Table (needs pyarrow)
  sheaf-cli         `python3 -m sheaf get URL -o FILE`, with no pagination flags at all (detected)
                    for --addressing detect or next, with `--preset anchor --page-size S` for page,
                    timed as a whole command; its start-up (the same command on an empty list)
                    is timed too and subtracted: seconds = whole - start-up
  sheaf-fetch-404   fetch_all of a list whose page --fail-page answers 404: the run must end
                    with sheaf.HTTPError 404 and the items of the pages before it
  curl-parallel     the curl command fetching the list's pages 1..P (P = N / page size) with
                    --parallel --parallel-max W --parallel-immediate, bodies to /dev/null: the
                    fetching alone, no parsing (timed as a whole command, curl's start-up included)
  decode-floor      the pages fetched first (untimed, keep-alive), then only their decoding timed:
                    orjson.loads of each page (json.loads without orjson), its items kept: the
                    least any Python client that hands out dicts spends on the list
  sheaf-stream      for snapshot in sheaf.Client(...).stream(...): consume snapshot.items
                    (also reported: the CPU time of the consuming thread, of json.loads as the
                    binding calls it to decode each delta, and of freeing each delta's objects)
  (add --transport python to the sheaf modes: a Python transport on http.client, one keep-alive
   connection per library thread, instead of libcurl)

The list is the test API's /anchor: --page-size S (sent as per_page), --addressing page|next
(page numbers, or next links only), --total 1|0 (read the total or not).

Timing covers the list call only (not the interpreter, the imports or the client's creation).
What came back is checked against the list the server serves (item i has "id": i, all N of
them, in order) after the clock stops; a wrong list exits 3 with the reason on stderr, so no
time is reported for it. Streams are checked as they are consumed (each delta continues the
list: its first and last ids and its length; item_count is the running sum). Peak RSS is the
process's own VmHWM (see peak_rss_kb), read before the check. Output: one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

EXIT_WRONG = 3


def peak_rss_kb() -> int:
    """Peak RSS of this process in KiB: VmHWM, the high-water mark of this address space.
    Not ru_maxrss, which on Linux keeps the parent's peak across fork + exec."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def wrong(message: str) -> None:
    sys.stderr.write(f"py_driver: {message}\n")
    sys.exit(EXIT_WRONG)


def check_items(items, expect: int) -> None:
    if not isinstance(items, list):
        wrong(f"the list is a {type(items).__name__}, not a list")
    if len(items) != expect:
        wrong(f"{len(items)} items, expected {expect}")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("id") != i:
            wrong(f"item {i} does not have id {i}: out of order or wrong")


def cpu_now() -> float:
    """CPU seconds used so far by this process (every thread) and its waited-for children (the
    curl command): a mode's cpu_seconds is the difference across its timed part."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def page_url(args, page: int) -> str:
    sep = "&" if "?" in args.path else "?"
    return f"{args.base}{args.path}{sep}page={page}&per_page={args.page_size}"


# ---- baselines ---------------------------------------------------------------------------------

def http_getter():
    """A keep-alive GET returning parsed JSON: requests.Session, or urllib if requests is missing."""
    try:
        import requests
    except ImportError:
        import urllib.request

        def get(url):
            with urllib.request.urlopen(url, timeout=60) as r:   # urllib: a connection per request
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status} for {url}")
                return json.loads(r.read())
        return get, "urllib"
    session = requests.Session()

    def get(url):
        r = session.get(url, timeout=60)
        r.raise_for_status()
        return r.json()
    return get, f"requests {requests.__version__}"


def run_requests_serial(args) -> dict:
    get, library = http_getter()
    start, cpu = time.perf_counter(), cpu_now()
    items, url, pages = [], page_url(args, 1), 0
    while url is not None:                    # bounded by --max-pages
        pages += 1
        if pages > args.max_pages:
            wrong("more pages than --max-pages")
        page = get(url)
        items.extend(page["items"])
        url = page.get("next_page")
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    rss = peak_rss_kb()
    check_items(items, args.expect)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "pages": pages, "client": library, "peak_rss_kb": rss}


def run_threadpool(args) -> dict:
    local = threading.local()

    def get(url):
        getter = getattr(local, "get", None)
        if getter is None:
            getter, local.library = http_getter()
            local.get = getter
        return getter(url)

    _, library = http_getter()
    start, cpu = time.perf_counter(), cpu_now()
    first = get(page_url(args, 1))
    per_page = len(first["items"])
    total = first.get("total")
    if not isinstance(total, int) or per_page == 0:
        wrong("the first page has no total or no items: the thread pool needs both")
    pages = (total + per_page - 1) // per_page
    if pages > args.max_pages:
        wrong("more pages than --max-pages")
    items = list(first["items"])
    with ThreadPoolExecutor(max_workers=args.window) as pool:
        for page in pool.map(lambda k: get(page_url(args, k)), range(2, pages + 1)):
            items.extend(page["items"])
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    rss = peak_rss_kb()
    check_items(items, args.expect)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "pages": pages, "client": f"{library}, {args.window} threads",
            "peak_rss_kb": rss}


def run_async_window(args, library: str) -> dict:
    """Page 1, then pages 2..P at most --window at a time, in order: what a Python user writes
    with an async client."""
    import asyncio

    async def walk(get):
        first = await get(page_url(args, 1))
        per_page, total = len(first["items"]), first.get("total")
        if not isinstance(total, int) or per_page == 0:
            wrong("the first page has no total or no items: the sliding window needs both")
        pages = (total + per_page - 1) // per_page
        if pages > args.max_pages:
            wrong("more pages than --max-pages")
        window = asyncio.Semaphore(args.window)

        async def one(k):
            async with window:
                return await get(page_url(args, k))
        rest = await asyncio.gather(*(one(k) for k in range(2, pages + 1)))
        items = list(first["items"])
        for page in rest:
            items.extend(page["items"])
        return items, pages

    async def main():
        if library == "httpx":
            import httpx
            limits = httpx.Limits(max_connections=args.window, max_keepalive_connections=args.window)
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                async def get(url):
                    r = await client.get(url)
                    r.raise_for_status()
                    return r.json()
                start, cpu = time.perf_counter(), cpu_now()
                items, pages = await walk(get)
                return time.perf_counter() - start, cpu_now() - cpu, items, pages, f"httpx {httpx.__version__}"
        import aiohttp
        connector = aiohttp.TCPConnector(limit=args.window)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
            async def get(url):
                async with session.get(url) as r:
                    r.raise_for_status()
                    return await r.json()
            start, cpu = time.perf_counter(), cpu_now()
            items, pages = await walk(get)
            return time.perf_counter() - start, cpu_now() - cpu, items, pages, f"aiohttp {aiohttp.__version__}"

    seconds, cpu_seconds, items, pages, client = asyncio.run(main())
    rss = peak_rss_kb()
    check_items(items, args.expect)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "pages": pages, "client": f"{client}, window {args.window}", "peak_rss_kb": rss}


# ---- Sheaf -------------------------------------------------------------------------------------

def python_transport(base: str):
    """A blocking transport on http.client: one keep-alive connection per calling thread."""
    split = urlsplit(base)
    host, port = split.hostname, split.port or 80
    local = threading.local()
    calls = {"n": 0, "in_flight": 0, "max_in_flight": 0}
    lock = threading.Lock()

    def transport(method, url, headers, body):
        with lock:
            calls["n"] += 1
            calls["in_flight"] += 1
            calls["max_in_flight"] = max(calls["max_in_flight"], calls["in_flight"])
        try:
            return exchange(method, url, headers, body)
        finally:
            with lock:
                calls["in_flight"] -= 1

    def exchange(method, url, headers, body):
        u = urlsplit(url)
        target = u.path + ("?" + u.query if u.query else "")
        for attempt in (1, 2):                # a reused connection the server closed: once more
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection(host, port, timeout=30)
            try:
                conn.request(method, target, body=body or None, headers=dict(headers))
                r = conn.getresponse()
                data = r.read()
                if r.will_close:
                    conn.close()
                    local.conn = None
                return r.status, r.getheaders(), data
            except (http.client.HTTPException, ConnectionError) as error:
                conn.close()
                local.conn = None
                if attempt == 2:
                    raise ConnectionError(str(error)) from error
        raise AssertionError("unreachable")

    return transport, calls


def sheaf_options(args) -> dict:
    """The list pinned as the C driver pins it: what is not given is absent, not detected."""
    options = {"items": "/items", "next": "/next_page", "total": "/total" if args.total else "none",
               "cursor": "none", "page_count": "none", "has_more": "none", "is_last": "none", "paging": "next"}
    if args.addressing == "page":
        options.update(paging="page:page", first=1, size_param="per_page", page_size=args.page_size)
    return options


def make_client(args):
    import sheaf
    transport, calls = (python_transport(args.base) if args.transport == "python" else (None, None))
    client = sheaf.Client(args.base, concurrency=args.window, adaptive_window=args.adaptive == 1,
                          max_pages=args.max_pages, transport=transport)
    return client, calls


def run_sheaf_fetch(args) -> dict:
    client, calls = make_client(args)
    start, cpu = time.perf_counter(), cpu_now()
    items = client.fetch_all(args.path, **sheaf_options(args))
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    rss = peak_rss_kb()
    client.close()
    check_items(items, args.expect)
    out = {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": rss}
    if calls is not None:
        out["transport_calls"] = calls["n"]
        out["transport_max_in_flight"] = calls["max_in_flight"]
    return out


def run_sheaf_arrow(args) -> dict:
    import pyarrow.json  # noqa: F401  (imported before the clock, as every mode's imports are)
    client, _ = make_client(args)
    start, cpu = time.perf_counter(), cpu_now()
    table = client.fetch_arrow(args.path, **sheaf_options(args))
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    rss = peak_rss_kb()
    client.close()
    if table.num_rows != args.expect:
        wrong(f"{table.num_rows} rows, expected {args.expect}")
    if table.column("id").to_pylist() != list(range(args.expect)):
        wrong("the id column is not 0..N-1 in order")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": rss}


def run_sheaf_fetch_404(args) -> dict:
    import sheaf
    client, _ = make_client(args)
    start = time.perf_counter()
    try:
        client.fetch_all(args.path, **sheaf_options(args))
    except sheaf.HTTPError as error:
        seconds = time.perf_counter() - start
        if error.status != 404:
            wrong(f"the list failed with HTTP {error.status}, not 404")
        check_items(error.items, (args.fail_page - 1) * args.page_size)
    else:
        wrong("the list succeeded past a page that answers 404")
    rss = peak_rss_kb()
    client.close()
    return {"seconds": seconds, "peak_rss_kb": rss}


def run_sheaf_quota(args) -> dict:
    """Q3: the list (its path carries the server's quota=) into a token with fewer points than
    pages, a window of --window: it must stop with RateLimitedError, the items before it whole and
    in order; the resume token, with a token of full points (the next hour), must give the rest,
    each item once. The server's refusals are the row's measure (run.py reads them)."""
    import sheaf
    options = sheaf_options(args)
    start = time.perf_counter()
    with sheaf.Client(args.base, token="q3-first-hour", concurrency=args.window, max_wait=0) as client:
        try:
            client.fetch_all(args.path, **options)
        except sheaf.RateLimitedError as error:
            seconds, first, token = time.perf_counter() - start, list(error.items), error.resume_token
        else:
            wrong("the list ended though the quota is smaller than its pages")
    check_items(first, len(first))
    if token is None:
        wrong("a rate-limited list gave no resume token")
    with sheaf.Client(args.base, token="q3-next-hour", concurrency=args.window) as client:
        rest = list(client.fetch_all(args.path, resume=token, **options))
    check_items(first + rest, args.expect)
    return {"seconds": seconds, "stopped_after": len(first), "peak_rss_kb": peak_rss_kb()}


def resync_phases(args, fetch_once) -> dict:
    """C1, C2: the list (its path carries the server's etag=) fetched by `fetch_once(folder)`
    with an empty cache folder, then again (every page unchanged), then again after 3 items on 3
    pages change (/_edit): each run's time, and what the server counted between them (points:
    answers other than 304; bytes sent). Each run's items are checked whole and in order."""
    import shutil
    import tempfile
    import urllib.request

    def server(path: str) -> dict:
        with urllib.request.urlopen(args.base + path, timeout=30) as answer:
            return json.loads(answer.read())

    def counts() -> tuple:
        s = server("/_stats")
        return s["requests"] - s["not_modified"], s["bytes_sent"]

    folder = tempfile.mkdtemp(prefix="bench-cache-")
    phases = []
    try:
        for phase in ("first", "resync", "changed"):
            if phase == "changed":
                per = args.page_size
                server(f"/_edit?ids={3 * per + 1},{70 * per + 2},{150 * per + 3}")
            before = counts()
            start = time.perf_counter()
            items = fetch_once(folder)
            seconds = time.perf_counter() - start
            if len(items) != args.expect or [item["id"] for item in items] != list(range(args.expect)):
                wrong(f"{phase}: {len(items)} items, not 0..{args.expect - 1} in order")
            after = counts()
            phases.append({"seconds": seconds, "points": after[0] - before[0], "bytes": after[1] - before[1]})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    first, resync, changed = phases
    return {"seconds": resync["seconds"], "first_seconds": first["seconds"], "changed_seconds": changed["seconds"],
            "first_points": first["points"], "resync_points": resync["points"], "changed_points": changed["points"],
            "first_bytes": first["bytes"], "resync_bytes": resync["bytes"], "peak_rss_kb": peak_rss_kb()}


def run_sheaf_resync(args) -> dict:
    """C1, C2 (resync_phases): Python fetch_all with Client(cache=)."""
    import sheaf
    options = sheaf_options(args)

    def once(folder: str) -> list:
        with sheaf.Client(args.base, token="c1-token", concurrency=args.window, cache=folder) as client:
            return client.fetch_all(args.path, **options)
    return resync_phases(args, once)


def run_aiohttp_resync(args) -> dict:
    """C1's peer (resync_phases): the conditional-request loop a good engineer writes with
    aiohttp: page one, then every other page the total names at once within a semaphore of
    --window, each page's ETag and body kept in a file of the folder (one per URL), sent again as
    If-None-Match, a 304 answered with the kept body."""
    import asyncio
    import hashlib

    import aiohttp

    async def fetch(session, limit, folder, url):
        name = os.path.join(folder, hashlib.sha256(url.encode()).hexdigest())
        kept = None
        if os.path.exists(name):
            with open(name, "rb") as f:
                tag, _, body = f.read().partition(b"\n")
                kept = (tag.decode(), body)
        headers = {"If-None-Match": kept[0]} if kept else {}
        async with limit:
            async with session.get(url, headers=headers) as answer:
                if answer.status == 304 and kept:
                    return json.loads(kept[1])
                body = await answer.read()
                tag = answer.headers.get("ETag")
        if tag:
            temporary = name + ".tmp"
            with open(temporary, "wb") as f:
                f.write(tag.encode() + b"\n" + body)
            os.replace(temporary, name)
        return json.loads(body)

    async def walk(folder: str) -> list:
        limit = asyncio.Semaphore(args.window)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.window)) as session:
            url = lambda page: f"{args.base}{args.path}&page={page}&per_page={args.page_size}"
            first = await fetch(session, limit, folder, url(1))
            pages = -(-first["total"] // args.page_size)
            rest = await asyncio.gather(*(fetch(session, limit, folder, url(page)) for page in range(2, pages + 1)))
        return [item for page in [first, *rest] for item in page["items"]]

    return resync_phases(args, lambda folder: asyncio.run(walk(folder)))


def run_decode_floor(args) -> dict:
    try:
        import orjson
        loads, name = orjson.loads, "orjson"
    except ImportError:
        loads, name = json.loads, "json"
    split = urlsplit(args.base)
    conn = http.client.HTTPConnection(split.hostname, split.port or 80, timeout=60)
    bodies = []
    for page in range(1, -(-args.expect // args.page_size) + 1):
        u = urlsplit(page_url(args, page))
        conn.request("GET", u.path + "?" + u.query)
        answer = conn.getresponse()
        bodies.append(answer.read())
        if answer.status != 200:
            wrong(f"page {page}: HTTP {answer.status}")
    conn.close()
    start, cpu = time.perf_counter(), cpu_now()
    items = []
    for body in bodies:
        items.extend(loads(body)["items"])
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    rss = peak_rss_kb()
    check_items(items, args.expect)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "decoder": name, "peak_rss_kb": rss}


def run_curl_parallel(args) -> dict:
    import shutil
    import subprocess
    import tempfile

    curl = shutil.which("curl")
    if curl is None:
        wrong("the curl command is not installed")
    pages = -(-args.expect // args.page_size)
    with tempfile.NamedTemporaryFile("w", suffix=".curlrc") as config:
        for page in range(1, pages + 1):
            config.write(f'url = "{page_url(args, page)}"\noutput = "/dev/null"\n')
        config.flush()
        argv = [curl, "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", str(args.window),
                "--parallel-immediate", "--config", config.name]
        start, cpu = time.perf_counter(), cpu_now()
        finished = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    if finished.returncode != 0:
        wrong(f"curl exited {finished.returncode}: {finished.stderr.decode(errors='replace')[-300:]}")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "requests": pages, "peak_rss_kb": 0}


def time_json_loads() -> list:
    """Times the decoding of each delta where the binding does it (sheaf._run.decode_items:
    orjson when installed, else json.loads), in CPU seconds of the calling thread: returns a
    one-element list that accumulates them. Turning JSON into Python objects costs the decoder's
    own time, the same for any Python client using it; what the binding adds per snapshot is the
    rest."""
    import sheaf._run as binding
    spent = [0.0]
    decode = binding.decode_items

    def timed(data):
        started = time.thread_time()
        try:
            return decode(data)
        finally:
            spent[0] += time.thread_time() - started

    binding.decode_items = timed
    return spent


def run_sheaf_stream(args) -> dict:
    client, calls = make_client(args)
    decoding = time_json_loads()
    snapshots = nonempty = next_id = 0
    freeing = 0.0
    previous = delta = None
    start, cpu_start, thread_start = time.perf_counter(), time.process_time(), time.thread_time()
    for snapshot in client.stream(args.path, **sheaf_options(args)):
        # Letting go of the last delta frees its objects: the consumer's cost (a caller that
        # keeps the items never pays it), timed apart, like json.loads.
        released = time.thread_time()
        previous = delta = None
        freeing += time.thread_time() - released
        previous = snapshot
        snapshots += 1
        delta = snapshot.items
        if delta:
            nonempty += 1
            if delta[0].get("id") != next_id or delta[-1].get("id") != next_id + len(delta) - 1:
                wrong(f"snapshot {snapshots} does not continue the list at id {next_id}")
            next_id += len(delta)
        if snapshot.item_count != next_id:
            wrong(f"snapshot {snapshots}: item_count {snapshot.item_count}, items so far {next_id}")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    thread_cpu_seconds = time.thread_time() - thread_start   # this (the consuming) thread only
    rss = peak_rss_kb()
    client.close()
    if next_id != args.expect:
        wrong(f"the stream delivered {next_id} items, expected {args.expect}")
    out = {"seconds": seconds, "cpu_seconds": cpu_seconds, "thread_cpu_seconds": thread_cpu_seconds,
           "json_loads_cpu_seconds": decoding[0], "freeing_cpu_seconds": freeing,
           "snapshots": snapshots, "nonempty_snapshots": nonempty,
           "peak_rss_kb": rss}
    if calls is not None:
        out["transport_calls"] = calls["n"]
        out["transport_max_in_flight"] = calls["max_in_flight"]
    return out


def run_sheaf_cli(args) -> dict:
    import subprocess
    import tempfile

    def command(path: str, out: str) -> float:
        argv = [sys.executable, "-m", "sheaf", "get", args.base + path, "--quiet", "-o", out,
                "--concurrency", str(args.window)] + ([] if args.adaptive else ["--fixed-window"])
        if args.addressing == "page":   # paged as C pins it: page numbers and the page size
            argv += ["--preset", "anchor", "--page-size", str(args.page_size)]
        start = time.perf_counter()
        finished = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        seconds = time.perf_counter() - start
        if finished.returncode != 0:
            wrong(f"sheaf get exited {finished.returncode}: {finished.stderr.decode(errors='replace')[-300:]}")
        return seconds

    with tempfile.TemporaryDirectory() as folder:
        startup = command("/anchor?n=0", os.path.join(folder, "empty.jsonl"))
        whole = command(args.path, os.path.join(folder, "list.jsonl"))
        with open(os.path.join(folder, "list.jsonl")) as f:
            items = [json.loads(line) for line in f]
    check_items(items, args.expect)
    # Peak RSS is not measured (another process): reported as 0, shown as "-".
    return {"seconds": whole - startup, "cli_seconds": whole, "startup_seconds": startup, "peak_rss_kb": 0}


def _identity(item: dict):
    return item.get("id", item.get("ts"))


def _served_ids(args) -> list:
    """The ids of the split list as the server serves it, walked one page at a time by Sheaf with
    no latency, inserts or capacity (untimed): what a split run must deliver, in that order."""
    import re

    import sheaf

    path = re.sub(r"&(latency_ms|insert_rate|capacity)=[^&]*", "", args.path)
    with sheaf.Client(args.base) as client:
        return [_identity(item) for item in client.fetch_all(path, preset=args.preset, split="none")]


def check_split(ids: list, served: list) -> dict:
    """Every item the server had at the start once, in its order; added items at most once."""
    if len(set(ids)) != len(ids):
        wrong(f"{len(ids) - len(set(ids))} items came twice")
    there = set(served)
    kept = [i for i in ids if i in there]
    if kept != served:
        missing = len(there - set(kept))
        wrong(f"{missing} items missing" if missing else "the items are out of the list's order")
    return {"twice": 0, "missing": 0, "added_read": len(ids) - len(kept)}


def run_sheaf_split(args) -> dict:
    """A cursor list split by its range filter (--preset's), Python fetch_all."""
    served = _served_ids(args)
    client, _ = make_client(args)
    start, cpu = time.perf_counter(), cpu_now()
    items = client.fetch_all(args.path, preset=args.preset)
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    client.close()
    out = {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": peak_rss_kb()}
    out.update(check_split([_identity(item) for item in items], served))
    return out


def run_sheaf_post(args) -> dict:
    """A Notion-shaped database query (Tests/server/post_api.py): POSTs walked by the cursor in
    their body, Python fetch_all with the notion preset; every result once, in order."""
    client, _ = make_client(args)
    start, cpu = time.perf_counter(), cpu_now()
    items = client.fetch_all(args.path, preset="notion", page_size=args.page_size,
                             json={"filter": {"property": "n", "number": {"greater_than_or_equal_to": 1}}})
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    client.close()
    numbers = [item["properties"]["n"]["number"] for item in items]
    if numbers != list(range(1, args.expect + 1)):
        wrong(f"{len(numbers)} results, {len(numbers) - len(set(numbers))} twice, not 1..{args.expect} in order")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": peak_rss_kb(), "items": len(numbers)}


GRAPHQL_ISSUES = """query($owner: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: "sheaf") { issues(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } } }
}"""
GRAPHQL_COMMENTS = """query($id: ID!, $first: Int!, $after: String) {
  node(id: $id) { ... on Issue { comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } }
}"""


def run_sheaf_graphql(args) -> dict:
    """A GitHub-shaped GraphQL connection (Tests/server/post_api.py) with each issue's comments
    completed by a nested query, Python fetch_all; every issue once, in order, each whole."""
    client, _ = make_client(args)
    start, cpu = time.perf_counter(), cpu_now()
    items = client.fetch_all(args.path, graphql=GRAPHQL_ISSUES, connection="/data/repository/issues",
                             variables={"owner": "octo"}, page_size=args.page_size,
                             nested={"/comments": {"query": GRAPHQL_COMMENTS, "page_size": 100}})
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    client.close()
    if [item["number"] for item in items] != list(range(1, args.expect + 1)):
        wrong(f"{len(items)} issues, not 1..{args.expect} in order")
    short = [item["number"] for item in items if len(item["comments"]["nodes"]) != item["comments"]["totalCount"]]
    if short:
        wrong(f"{len(short)} issues short of their comments (issue {short[0]} first)")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": peak_rss_kb(), "items": len(items),
            "comments": sum(len(item["comments"]["nodes"]) for item in items)}


def run_aiohttp_split(args) -> dict:
    """The peer: an aiohttp range splitter as a good engineer writes one (Airbyte's
    DatetimeBasedCursor.step): the created range, known to it, cut into a fixed number of equal
    steps, each walked by starting_after, at most --window requests at once, joined in order."""
    import asyncio

    import aiohttp

    served = _served_ids(args)
    low, high = args.range_low, args.range_high + 1
    steps = args.steps
    bounds = [high - (high - low) * k // steps for k in range(steps + 1)]

    async def main():
        limit = asyncio.Semaphore(args.window)
        connector = aiohttp.TCPConnector(limit=args.window)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def walk(top, bottom):
                ids, after = [], None
                while True:
                    url = f"{args.base}{args.path}&created%5Bgte%5D={bottom}&created%5Blt%5D={top}"
                    if after:
                        url += f"&starting_after={after}"
                    async with limit:
                        async with session.get(url) as answer:
                            page = await answer.json()
                    ids += [item["id"] for item in page["data"]]
                    if not page["has_more"]:
                        return ids
                    after = page["data"][-1]["id"]
            parts = await asyncio.gather(*(walk(bounds[k], bounds[k + 1]) for k in range(steps)))
        return [i for part in parts for i in part]

    start, cpu = time.perf_counter(), cpu_now()
    ids = asyncio.run(main())
    seconds, cpu_seconds = time.perf_counter() - start, cpu_now() - cpu
    out = {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_kb": peak_rss_kb()}
    out.update(check_split(ids, served))
    return out


MODES = {
    "requests-serial": run_requests_serial,
    "sheaf-cli": run_sheaf_cli,
    "threadpool": run_threadpool,
    "httpx-window": lambda args: run_async_window(args, "httpx"),
    "aiohttp-window": lambda args: run_async_window(args, "aiohttp"),
    "sheaf-fetch": run_sheaf_fetch,
    "sheaf-arrow": run_sheaf_arrow,
    "sheaf-stream": run_sheaf_stream,
    "sheaf-fetch-404": run_sheaf_fetch_404,
    "sheaf-quota": run_sheaf_quota,
    "sheaf-resync": run_sheaf_resync,
    "aiohttp-resync": run_aiohttp_resync,
    "curl-parallel": run_curl_parallel,
    "decode-floor": run_decode_floor,
    "sheaf-split": run_sheaf_split,
    "sheaf-post": run_sheaf_post,
    "sheaf-graphql": run_sheaf_graphql,
    "aiohttp-split": run_aiohttp_split,
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=sorted(MODES))
    p.add_argument("--base", required=True)
    p.add_argument("--path", required=True, help="the list's path and query, without page/per_page")
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--window", type=int, default=8)
    p.add_argument("--adaptive", type=int, choices=(0, 1), default=0,
                   help="Sheaf's window adapts from --window (default: it stays at --window)")
    p.add_argument("--page-size", type=int, default=50)
    p.add_argument("--addressing", choices=("page", "next", "detect"), default="page")
    p.add_argument("--total", type=int, choices=(0, 1), default=1)
    p.add_argument("--transport", choices=("curl", "python"), default="curl")
    p.add_argument("--max-pages", type=int, default=100000)
    p.add_argument("--fail-page", type=int, default=0, help="sheaf-fetch-404: the page that answers 404")
    p.add_argument("--range-low", type=int, default=0, help="aiohttp-split: the created range's first second")
    p.add_argument("--range-high", type=int, default=0, help="aiohttp-split: the created range's last second")
    p.add_argument("--steps", type=int, default=64, help="aiohttp-split: the steps the range is cut into")
    p.add_argument("--preset", default="stripe", help="sheaf-split: the preset of the list (stripe, slack, shopify)")
    args = p.parse_args(argv)
    result = MODES[args.mode](args)
    result.setdefault("items", args.expect)
    result.update(mode=args.mode, ok=True, window=args.window,
                  transport=args.transport if args.mode.startswith("sheaf") else None)
    if "sheaf" in sys.modules:
        result["library"] = sys.modules["sheaf"].library_path
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)   # no interpreter teardown to wait for: the list is done and checked


if __name__ == "__main__":
    sys.exit(main())
