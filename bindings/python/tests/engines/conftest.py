"""The engine suite: sheaf.spark, sheaf.ray and sheaf.dask on real engines in local mode (Spark
local[2], Ray with 2 CPUs, a Dask LocalCluster of 2 worker processes), reading 100,000-item lists
of the test API server (Tests/server/api_server.py, in this process, reached over loopback by the
engines' worker processes).

It runs from run.sh (CTest `engines`), in a venv that has the engines; elsewhere (the Python suite,
the sanitizer runs) its tests are not collected: set SHEAF_ENGINE_TESTS=1 to collect them.

The token: every worker reads it from its environment. It is set here, at import, before any
engine starts a process, so every worker inherits it; it appears in no URL, option or argument.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Iterator

import pytest

#: Collected only when asked for (run.sh does): the engines are not in the Python suite's environment.
ENABLED = os.environ.get("SHEAF_ENGINE_TESTS") == "1"
if not ENABLED:
    collect_ignore_glob = ["test_*.py"]
else:   # the Python suite's own environment is left alone
    from .engine_lists import OTHER_SECRET, SECRET

    os.environ["SHEAF_TOKEN"] = SECRET
    os.environ["SHEAF_OTHER_TOKEN"] = OTHER_SECRET
    # Workers start this interpreter (Spark runs "python3" from PATH unless told).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")     # no token file written to ~/.ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from .engine_lists import LISTS, N, SECRET, SLOTS  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    # Ray Data's own settings, deprecated inside Ray: not this suite's to fix.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:ray.data.context")


@pytest.fixture(scope="session")
def whole_lists(_api_session) -> Dict[str, str]:
    """Each list as fetch_all gives it in this process, as JSON text (what every engine must match)."""
    import sheaf

    lists = {}
    with sheaf.Client(_api_session.base_url, SECRET) as client:
        for name, path in LISTS.items():
            items = client.fetch_all(path)
            assert [item["id"] for item in items] == list(range(N)), name
            lists[name] = json.dumps(list(items))
    return lists


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A Spark session, local[2] (two task slots; a task is tried up to 2 times)."""
    from pyspark.sql import SparkSession

    import sheaf.spark

    session = (SparkSession.builder.master(f"local[{SLOTS},2]").appName("sheaf-engines")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
               .getOrCreate())
    try:
        session.sparkContext.setLogLevel("ERROR")
        sheaf.spark.register(session)
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """Ray in this machine, 2 CPUs (two read tasks at once)."""
    import ray

    ray.init(num_cpus=SLOTS, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A Dask LocalCluster of 2 worker processes, a thread each, and its client."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=SLOTS, threads_per_worker=1, processes=True, dashboard_address=None,
                           host="127.0.0.1")
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()
