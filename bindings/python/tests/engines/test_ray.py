"""sheaf.ray: a list read by Ray (2 CPUs) through ListSource is the list, exactly; a read task
whose worker dies is run again."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from .engine_lists import (ADDRESSED, CLIENT_OPTIONS, LISTS, OTHER_SECRET, SPLIT, WINDOW, asked_again,
                           assert_read_within_budget, authorizations, rows_json, secret_free, split_list)


def _source(server, path: str, **options):
    import sheaf.ray

    options.setdefault("client_options", CLIENT_OPTIONS)
    return sheaf.ray.ListSource(f"{server.base_url}{path}", **options)


def _table(ray, dataset):
    import pyarrow as pa

    return pa.concat_tables(ray.get(dataset.to_arrow_refs()), promote_options="default")


@pytest.mark.parametrize("name", sorted(LISTS))
def test_the_partitions_read_by_ray_are_the_list_exactly(ray_cluster, api, whole_lists, name: str) -> None:
    ray = ray_cluster
    source = _source(api, LISTS[name], partitions=8)
    assert len(source.get_read_tasks(2)) == (8 if name in ADDRESSED else 1)
    api.state.reset()
    table = _table(ray, ray.data.read_datasource(source))
    assert rows_json(table) == whole_lists[name]
    assert_read_within_budget(api, pages_at_least=100)


def test_the_window_is_shared_among_the_read_tasks_ray_runs_at_once(ray_cluster, api, monkeypatch) -> None:
    import sheaf.ray
    from sheaf._engines import ListRead

    assert sheaf.ray._tasks_at_once({}) == 2, "2 CPUs, a CPU a task"
    assert sheaf.ray._tasks_at_once({"ray_remote_args": {"num_cpus": 0.5}}) == 4
    assert sheaf.ray._tasks_at_once({"concurrency": 1}) == 1
    planned = []
    plan = ListRead.plan
    monkeypatch.setattr(ListRead, "plan", lambda read, n, at_once=None: planned.append(plan(read, n, at_once)) or planned[-1])
    path = "/anchor?n=3000&per_page=100"
    assert len(_source(api, path, partitions=8, client_options={"max_concurrency": 16}).get_read_tasks(2)) == 8
    assert [p.window for p in planned[-1]] == [8] * 8, "16 shared by the 2 that run at once, not by all 8"
    _source(api, path, partitions=8, client_options={"max_concurrency": 16}, at_once=4).get_read_tasks(2)
    assert [p.window for p in planned[-1]] == [4] * 8
    with pytest.raises(sheaf.UsageError, match="at_once must be 1 or more"):
        _source(api, path, at_once=0)


def test_ray_asks_for_the_partitions_when_not_told_and_a_schema_shapes_each_block(ray_cluster, api) -> None:
    import pyarrow as pa

    ray = ray_cluster
    source = _source(api, "/anchor?n=3000&per_page=100", description="anchor",
                     schema=pa.schema([("id", pa.float64()), ("name", pa.string()), ("missing", pa.int64())]))
    table = _table(ray, ray.data.read_datasource(source, override_num_blocks=3))
    assert table.schema.names == ["id", "name", "missing"] and table.column("missing").null_count == 3000
    assert sorted(table.column("id").to_pylist()) == [float(i) for i in range(3000)]
    assert len(source.get_read_tasks(5)) == 5


def test_read_list_makes_each_partition_one_block_where_ray_alone_splits_them(ray_cluster, api, whole_lists) -> None:
    import pyarrow as pa

    import sheaf.ray
    from sheaf import UsageError

    ray = ray_cluster
    url = f"{api.base_url}{ADDRESSED['page-numbers']}"
    blocks = ray.get(sheaf.ray.read_list(url, partitions=2, client_options=CLIENT_OPTIONS).to_arrow_refs())
    assert len(blocks) == 2
    assert rows_json(pa.concat_tables(blocks)) == whole_lists["page-numbers"]
    assert_read_within_budget(api, pages_at_least=200)
    # The same partitions through read_datasource alone: Ray splits each table into blocks.
    split = ray.get(ray.data.read_datasource(_source(api, ADDRESSED["page-numbers"], partitions=2)).to_arrow_refs())
    assert len(split) > 2
    with pytest.raises(UsageError, match="override_num_blocks"):
        sheaf.ray.read_list(url, partitions=2, override_num_blocks=4)
    # Not told, two partitions (and blocks) for each task Ray runs at once: 4 on 2 CPUs, not Ray's 200.
    blocks = ray.get(sheaf.ray.read_list(url, client_options=CLIENT_OPTIONS).to_arrow_refs())
    assert len(blocks) == 4
    assert rows_json(pa.concat_tables(blocks)) == whole_lists["page-numbers"]


def test_read_list_runs_its_read_tasks_at_once_and_leaves_the_current_context_alone(ray_cluster, api) -> None:
    # Ray Data's resource reservation would hold the second read task until the first ends (on 2
    # CPUs): read_list turns it off in the dataset's own context, so the server sees both
    # partitions' windows at once (2 each, of the 4 shared), and nothing else changes. (With
    # resource_reservation=True this fails: 2 in flight at most.)
    import sheaf.ray

    ray = ray_cluster
    context = ray.data.DataContext.get_current()
    assert context.op_resource_reservation_enabled
    api.state.reset()
    dataset = sheaf.ray.read_list(f"{api.base_url}/anchor?n=2000&per_page=50&latency_ms=40", partitions=2,
                                  client_options=CLIENT_OPTIONS)
    assert context.op_resource_reservation_enabled, "the current context is left as it was"
    assert sum(block.num_rows for block in ray.get(dataset.to_arrow_refs())) == 2000
    assert api.state.snapshot()["max_in_flight"] > WINDOW // 2, "the two partitions' reads overlapped"
    assert_read_within_budget(api, pages_at_least=40)


def _read_task_processes() -> list:
    """The pids of Ray workers running one of our read tasks (Ray names the process after the task)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if b"ReadSheafList" in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def test_a_read_task_whose_worker_is_killed_is_run_again(ray_cluster, api, whole_lists) -> None:
    # Two partitions, one per CPU, each slow enough (20 ms a request, 4 at once) to be killed in
    # the middle: Ray runs the dead worker's task again (max_retries), and the rows are exact.
    ray = ray_cluster
    path = LISTS["offset-limit"] + "&latency_ms=20"
    killed = []

    def kill_one_when_under_way() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            pids = _read_task_processes()
            if len(pids) == 2 and api.state.snapshot()["requests"] > 300:
                os.kill(pids[0], signal.SIGKILL)
                killed.append((pids[0], api.state.snapshot()["requests"]))
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_when_under_way)
    killer.start()
    try:
        table = _table(ray, ray.data.read_datasource(_source(api, path, partitions=2)))   # max_retries: 3
    finally:
        killer.join()
    assert killed, "no read task was seen running"
    assert rows_json(table) == whole_lists["offset-limit"]
    # The killed partition was read again from its start: its first pages were asked for twice.
    assert len(asked_again(api, "offset")) >= 10, asked_again(api, "offset")


@pytest.mark.filterwarnings("ignore:`ray_remote_args` is deprecated")   # retry_exceptions has no named parameter
def test_a_partition_that_fails_once_is_retried_by_ray(ray_cluster, api) -> None:
    ray = ray_cluster
    source = _source(api, "/anchor?n=2000&per_page=100&fail=12:1:500", partitions=4,
                     client_options={**CLIENT_OPTIONS, "max_attempts": 1})
    table = _table(ray, ray.data.read_datasource(source, ray_remote_args={"retry_exceptions": True,
                                                                          "max_retries": 2}))
    assert sorted(table.column("id").to_pylist()) == list(range(2000))


def test_the_token_is_read_from_the_variable_token_env_names(ray_cluster, api) -> None:
    ray = ray_cluster
    table = _table(ray, ray.data.read_datasource(_source(api, "/anchor?n=1000&per_page=100", partitions=2,
                                                         token_env="SHEAF_OTHER_TOKEN")))
    assert table.num_rows == 1000
    assert set(authorizations(api)) == {f"Bearer {OTHER_SECRET}"}


def test_no_token_is_in_the_source_its_read_tasks_an_error_or_the_logs(ray_cluster, api) -> None:
    import cloudpickle

    ray = ray_cluster
    source = _source(api, "/anchor?n=1000&per_page=100", partitions=4, headers={"X-Trace": "t"})
    tasks = source.get_read_tasks(4)
    for what, thing in (("the source", source), ("the read tasks", tasks)):
        secret_free(cloudpickle.dumps(thing), what)
    with pytest.raises(Exception) as refused:
        _table(ray, ray.data.read_datasource(_source(api, "/anchor?n=1000&per_page=100&fail=7:100:401",
                                                     partitions=2)))
    assert "401" in str(refused.value)
    secret_free(str(refused.value).encode(), "the error")
    logs = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs"
    for log in logs.rglob("*"):
        if log.is_file():
            secret_free(log.read_bytes(), str(log))


def test_a_cursor_list_with_a_range_filter_is_read_by_ray_in_ranges_each_item_once(ray_cluster, api) -> None:
    ray = ray_cluster
    expected = split_list(api)
    source = _source(api, SPLIT, description="stripe", partitions=4)
    assert len(source.get_read_tasks(2)) == 4
    table = _table(ray, ray.data.read_datasource(source))
    assert sorted(table.column("id").to_pylist()) == sorted(expected)
    assert len(expected) == 20000
