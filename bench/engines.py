#!/usr/bin/env python3
"""Sheaf's engine rows (issue 27): one list of 1,000,000 items at 50 ms a request from a server
that serves 64 requests at once, read by Ray with 2 workers against one process's adaptive
fetch_all, and by Spark local[2] and Dask with 2 worker processes; each engine's start-up is
shown apart from its reads.

    bench/engines.py [--runs 3] [--only fetch_all,ray,spark,dask] [--partitions 8] [--build-dir build]

Optional, apart from bench/run.py (whose default table needs no engine): it runs under the engine
suite's venv (bindings/python/tests/engines/run.sh BUILD_DIR makes BUILD_DIR/engines-venv) and
re-runs itself with that interpreter when started with another. The server is bench/run.py's
(Tests/server/api_server.py in a child process, --cache-pages); every row is measured in a fresh
process of its own (its engine started there), the median of --runs reads after one unmeasured
warm-up read. The library: $SHEAF_LIBRARY_PATH, else BUILD_DIR/lib/libsheaf.so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
ITEMS, PER_PAGE, LATENCY_MS, CAPACITY = 1_000_000, 1000, 50, 64


def list_path(items: int) -> str:
    return f"/anchor?n={items}&per_page={PER_PAGE}&cap={PER_PAGE}&latency_ms={LATENCY_MS}&capacity={CAPACITY}"
WORKERS = 2
SCENARIOS = ["fetch_all", "fetch_arrow", "ray", "ray-unreserved", "ray-read-list", "ray-read-list-unreserved",
             "ray-read-list-default", "spark", "dask", "split-fetch_all", "split-ray"]
#: Issue 43's engine row: bench/run.py's R1 list (a Stripe-shaped cursor list of 1,000 pages of 100
#: at 100 ms, capacity 64), split by its range filter, by Ray against one process.
SPLIT_PAGES, SPLIT_PER_PAGE, SPLIT_LATENCY_MS = 1000, 100, 100


def split_path(pages: int) -> str:
    return (f"/range/stripe?n={pages * SPLIT_PER_PAGE}&span={pages * SPLIT_PER_PAGE * 10}&limit={SPLIT_PER_PAGE}"
            f"&latency_ms={SPLIT_LATENCY_MS}&capacity={CAPACITY}")
#: Issue 27's row: Ray with 2 workers against one process's adaptive fetch_all, at most this.
RAY_TARGET = 1.2


# ---- a child: one scenario, its engine started here ----------------------------------------------

def _get(base: str, path: str) -> Dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.load(answer)


def _reset(base: str) -> None:
    deadline = time.monotonic() + 10
    while _get(base, "/_stats")["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    _get(base, "/_reset")


def child(scenario: str, base: str, runs: int, partitions: int, items: int, at_once: Optional[int]) -> Dict[str, Any]:
    """Starts the scenario's engine, then times a warm-up and `runs` reads of the list; each read
    must hold every item once."""
    global ITEMS
    ITEMS = items
    PATH = list_path(items)
    url = base + PATH
    started = time.monotonic()
    stop: Callable[[], None] = lambda: None   # noqa: E731
    if scenario.startswith("split-"):
        # The list is items // 10 pages of 100 (1,000 for the default 1,000,000 items).
        ITEMS = items // 10
        PATH = split_path(ITEMS // SPLIT_PER_PAGE)
        url = base + PATH
    if scenario == "split-fetch_all":
        import sheaf

        client = sheaf.Client(base)

        def read() -> int:
            ids = [item["id"] for item in client.fetch_all(PATH, preset="stripe")]
            return len(ids) if len(set(ids)) == ITEMS else -1
        stop = client.close
    elif scenario == "split-ray":
        import ray

        import sheaf.ray

        ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False

        def read() -> int:
            import pyarrow as pa

            dataset = sheaf.ray.read_list(url, description="stripe", at_once=at_once)
            table = pa.concat_tables(ray.get(dataset.to_arrow_refs()), promote_options="default")
            ids = table.column("id").to_pylist()
            return len(ids) if len(set(ids)) == ITEMS else -1
        stop = ray.shutdown
    elif scenario in ("fetch_all", "fetch_arrow"):
        import sheaf

        client = sheaf.Client(base)   # the adaptive window, from 8 up to 64

        def read() -> int:
            if scenario == "fetch_arrow":
                table = client.fetch_arrow(PATH)
                return table.num_rows if _ids_once(table.column("id").to_pylist()) else -1
            items = client.fetch_all(PATH)
            return len(items) if _ids_once([item["id"] for item in items]) else -1
        stop = client.close
    elif scenario.startswith("ray"):
        import ray

        import sheaf.ray

        ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, configure_logging=False)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        if scenario.endswith("-unreserved"):
            # Ray Data holds part of the cluster's CPUs for each operator's outputs: on 2 CPUs its
            # log shows the second read task "backpressured:tasks(ResourceBudget)" (a CPU budget of
            # 0.0 left once one task runs, even one asking for 0.25 CPU) until the first ends, so
            # the partitions' reads do not overlap.
            context.op_resource_reservation_enabled = False

        def read() -> int:
            import pyarrow as pa

            if scenario == "ray-read-list-default":   # as a user calls it: read_list picks the partitions
                dataset = sheaf.ray.read_list(url, at_once=at_once)
            elif scenario.startswith("ray-read-list"):
                dataset = sheaf.ray.read_list(url, partitions=partitions, at_once=at_once)
            else:
                dataset = ray.data.read_datasource(sheaf.ray.ListSource(url, partitions=partitions, at_once=at_once))
            table = pa.concat_tables(ray.get(dataset.to_arrow_refs()))
            return table.num_rows if _ids_once(table.column("id").to_pylist()) else -1
        stop = ray.shutdown
    elif scenario == "spark":
        from pyspark.sql import SparkSession

        import sheaf.spark

        spark = (SparkSession.builder.master(f"local[{WORKERS}]").config("spark.ui.enabled", "false")
                 .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        sheaf.spark.register(spark)

        def read() -> int:
            table = (spark.read.format("sheaf").option("url", url).option("partitions", partitions)
                     .option("at_once", at_once or spark.sparkContext.defaultParallelism)
                     .schema("id long, name string").load().toArrow())
            return table.num_rows if _ids_once(table.column("id").to_pylist()) else -1
        stop = spark.stop
    elif scenario == "dask":
        import pyarrow as pa
        from distributed import Client, LocalCluster

        import sheaf.dask

        cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None,
                               host="127.0.0.1")
        dask_client = Client(cluster)
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])

        def read() -> int:
            frame = sheaf.dask.read_list(url, partitions=partitions, schema=schema, at_once=at_once).compute()
            return len(frame) if _ids_once(frame["id"].tolist()) else -1

        def stop() -> None:
            dask_client.close()
            cluster.close()
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    startup = time.monotonic() - started
    measured: List[Dict[str, Any]] = []
    try:
        for run in range(runs + 1):   # the first is a warm-up
            _reset(base)
            began = time.monotonic()
            rows = read()
            seconds = time.monotonic() - began
            stats = _get(base, "/_stats")
            if rows != ITEMS:
                raise SystemExit(f"{scenario}: {rows} rows, not {ITEMS} ids once each")
            if run:
                measured.append({"seconds": seconds, "requests": stats["requests"],
                                 "max_in_flight": stats["max_in_flight"]})
    finally:
        stop()
    return {"scenario": scenario, "startup": startup, "runs": measured}


def _ids_once(ids: List[int]) -> bool:
    return len(ids) == ITEMS and sorted(ids) == list(range(ITEMS))


# ---- the parent: the server, a child per scenario, the table -------------------------------------

def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="measured reads per row (median quoted; default 3)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated: " + ",".join(SCENARIOS))
    parser.add_argument("--partitions", type=int, default=8, help="partitions each engine plans (default 8)")
    parser.add_argument("--at-once", type=int, default=0, help="the partitions the window is shared among (default: "
                        "each engine's task slots, 2 here; give --partitions' value for the share among all of them)")
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--items", type=int, default=ITEMS, help="items in the list (default 1,000,000; "
                        "fewer for a smoke run)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.base, args.runs, args.partitions, args.items, args.at_once or None)))
        return 0

    build = Path(args.build_dir).resolve()
    venv_python = build / "engines-venv" / "bin" / "python"
    if Path(sys.prefix).resolve() != venv_python.parent.parent.resolve():
        if not venv_python.exists():
            print(f"engines bench: no {venv_python}: make it with bindings/python/tests/engines/run.sh {build}",
                  file=sys.stderr)
            return 2
        return subprocess.call([str(venv_python), __file__, *(argv if argv is not None else sys.argv[1:])])
    env = dict(os.environ)
    env.setdefault("SHEAF_LIBRARY_PATH", str(build / "lib" / "libsheaf.so"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bindings" / "python"), env.get("PYTHONPATH", "")])
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, RAY_AUTH_MODE="disabled",
               RAY_USAGE_STATS_ENABLED="0")

    sys.path.insert(0, str(ROOT / "bench"))
    import run as bench   # bench/run.py: its server, its rows and its table

    server = bench.Server()
    server.start()
    rows: List[Any] = []
    items = args.items
    floor = -(-(-(-items // PER_PAGE)) // CAPACITY) * LATENCY_MS / 1000   # rounds of `capacity` requests
    results: Dict[str, Dict[str, Any]] = {}
    try:
        for scenario in [s for s in args.only.split(",") if s]:
            print(f"engines bench: {scenario} ...", file=sys.stderr)
            done = subprocess.run([sys.executable, __file__, "--child", scenario, "--base", server.base,
                                   "--runs", str(args.runs), "--partitions", str(args.partitions),
                                   "--items", str(args.items), "--at-once", str(args.at_once)],
                                  env=env, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                rows.append(bench.Row("E1", scenario, sheaf=f"failed: {done.stderr.strip().splitlines()[-1:]}"))
                continue
            results[scenario] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.stop()
    single = results.get("fetch_all")
    shared = f"the window shared among {args.at_once or 'the task slots'}"
    labels = {"fetch_all": "one process, Client.fetch_all (adaptive window, Python objects)",
              "fetch_arrow": "one process, Client.fetch_arrow (adaptive window, a pyarrow.Table)",
              "ray": f"Ray, {WORKERS} CPUs: read_datasource(ListSource), {args.partitions} partitions, {shared}, Arrow blocks to the driver",
              "ray-unreserved": "the same, DataContext.op_resource_reservation_enabled = False (the reads then overlap)",
              "ray-read-list": f"Ray, {WORKERS} CPUs: sheaf.ray.read_list, {args.partitions} partitions, {shared}, a block each "
                               "(read_datasource with override_num_blocks; the reservation off in the dataset's context)",
              "ray-read-list-unreserved": "the same, DataContext.op_resource_reservation_enabled = False for the whole session",
              "ray-read-list-default": f"Ray, {WORKERS} CPUs: sheaf.ray.read_list(url) as a user calls it (no partitions=: "
                                       f"two per task slot, {2 * WORKERS}), {shared}",
              "spark": f"Spark local[{WORKERS}]: the sheaf data source, {args.partitions} partitions, {shared}, toArrow()",
              "dask": f"Dask LocalCluster, {WORKERS} worker processes: read_list, {args.partitions} partitions, {shared}, compute()",
              "split-fetch_all": "a cursor list split by its range filter (R1's Stripe-shaped list): one process, fetch_all, stripe preset",
              "split-ray": f"the same list, Ray, {WORKERS} CPUs: sheaf.ray.read_list(url, description='stripe'), its partitions "
                           "ranges of the list"}
    split_single = results.get("split-fetch_all")
    split_pages = items // 10 // SPLIT_PER_PAGE
    split_floor = -(-split_pages // CAPACITY) * SPLIT_LATENCY_MS / 1000
    for scenario, result in results.items():
        seconds = statistics.median(run["seconds"] for run in result["runs"])
        splits = scenario.startswith("split-")
        one = split_single if splits else single
        against = statistics.median(run["seconds"] for run in one["runs"]) if one else None
        alone = scenario in ("fetch_all", "split-fetch_all")
        what = (f"{split_pages * SPLIT_PER_PAGE:,} items ({split_pages} pages), L={SPLIT_LATENCY_MS} ms" if splits
                else f"{items:,} items ({-(-items // PER_PAGE)} pages), L={LATENCY_MS} ms")
        rows.append(bench.Row(
            "R4" if splits else "E1", f"{what}, capacity {CAPACITY}: {labels[scenario]}",
            sheaf=bench.secs(seconds), floor=f"{bench.secs(split_floor if splits else floor)} (capacity)",
            ratio=f"{seconds / against:.2f}x fetch_all" if against and not alone
            else f"{seconds / (split_floor if splits else floor):.2f}x floor",
            runs=str(len(result["runs"])),
            **({"target": f"<= {RAY_TARGET:.2f}x fetch_all", "met": bench.yes(seconds <= RAY_TARGET * against)}
               if scenario in ("ray-read-list-default", "split-ray") and against else {}),
            requests="-".join(sorted({str(run["requests"]) for run in result["runs"]})),
            in_flight="-".join(sorted({str(run["max_in_flight"]) for run in result["runs"]}))))
        if scenario not in ("fetch_all", "fetch_arrow", "split-fetch_all"):
            rows.append(bench.Row("E1", f"  {scenario}: start-up (apart from the reads above)",
                                  sheaf=bench.secs(result["startup"])))
    bench.print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
