"""sheaf.dask: a list read by a Dask LocalCluster of 2 worker processes through read_list is the
list, exactly; a partition whose worker is killed is run again."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from .engine_lists import (ADDRESSED, CLIENT_OPTIONS, LISTS, OTHER_SECRET, SPLIT, asked_again,
                           assert_read_within_budget, authorizations, secret_free, split_list)


def _frame(server, path: str, **options):
    import sheaf.dask

    options.setdefault("client_options", CLIENT_OPTIONS)
    return sheaf.dask.read_list(f"{server.base_url}{path}", **options)


def _json(frame) -> str:
    import json

    return json.dumps(frame.sort_values("id").to_dict("records"))


@pytest.mark.parametrize("name", sorted(LISTS))
def test_the_partitions_read_by_dask_are_the_list_exactly(dask_client, api, whole_lists, name: str) -> None:
    frame = _frame(api, LISTS[name], partitions=8)
    assert frame.npartitions == (8 if name in ADDRESSED else 1)
    assert list(frame.columns) == ["id", "name"]
    api.state.reset()
    assert _json(frame.compute()) == whole_lists[name]
    assert_read_within_budget(api, pages_at_least=100)


def test_the_window_is_shared_among_the_clusters_threads(dask_client, api, monkeypatch) -> None:
    from sheaf._engines import ListRead

    planned = []
    plan = ListRead.plan
    monkeypatch.setattr(ListRead, "plan", lambda read, n, at_once=None: planned.append(plan(read, n, at_once)) or planned[-1])
    _frame(api, "/anchor?n=3000&per_page=100", partitions=8, client_options={"max_concurrency": 16})
    assert [p.window for p in planned[-1]] == [8] * 8, "16 shared by the cluster's 2 threads, not by all 8 partitions"
    _frame(api, "/anchor?n=3000&per_page=100", partitions=8, client_options={"max_concurrency": 16}, at_once=8)
    assert [p.window for p in planned[-1]] == [2] * 8


def test_a_schema_gives_the_columns_and_a_description_pins_the_shape(dask_client, api) -> None:
    import pyarrow as pa

    frame = _frame(api, "/conv/github?n=2000&per_page=100", partitions=3, description={"preset": "github"},
                   schema=pa.schema([("id", pa.float64()), ("missing", pa.string())]))
    assert list(frame.columns) == ["id", "missing"] and str(frame.dtypes["id"]) == "float64"
    got = frame.compute()
    assert sorted(got["id"]) == [float(i) for i in range(2000)] and got["missing"].isna().all()


def test_a_partition_whose_worker_is_killed_is_run_again(dask_client, api, whole_lists) -> None:
    # Two partitions, one per worker, each slow enough (20 ms a request, 4 at once) to be killed
    # in the middle: the nanny starts a new worker, the scheduler runs the lost task again.
    path = LISTS["offset-limit"] + "&latency_ms=20"
    frame = _frame(api, path, partitions=2)
    pids = list(dask_client.run(os.getpid).values())
    api.state.reset()
    killed = []

    def kill_one_when_under_way() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            if api.state.snapshot()["requests"] > 300:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_when_under_way)
    killer.start()
    try:
        got = frame.compute()
    finally:
        killer.join()
    assert killed
    assert _json(got) == whole_lists["offset-limit"]
    # The killed partition was read again from its start: its first pages were asked for twice.
    assert len(asked_again(api, "offset")) >= 10, asked_again(api, "offset")
    dask_client.wait_for_workers(2, timeout=30)


def test_the_token_is_read_from_the_variable_token_env_names(dask_client, api) -> None:
    frame = _frame(api, "/anchor?n=1000&per_page=100", partitions=2, token_env="SHEAF_OTHER_TOKEN")
    assert len(frame.compute()) == 1000
    assert set(authorizations(api)) == {f"Bearer {OTHER_SECRET}"}


def test_no_token_is_in_the_graph_an_error_or_the_logs(dask_client, api) -> None:
    import cloudpickle
    import pyarrow as pa

    import sheaf

    frame = _frame(api, "/anchor?n=1000&per_page=100", partitions=4, headers={"X-Trace": "t"})
    secret_free(cloudpickle.dumps(frame), "the frame")
    secret_free(cloudpickle.dumps(dict(frame.__dask_graph__())), "the task graph")
    # Planned, then a task refused: page 7 (the second partition's) is answered 401 every time.
    refused_task = _frame(api, "/anchor?n=1000&per_page=100&fail=7:100:401", partitions=2,
                          schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(sheaf.HTTPError) as refused:
        refused_task.compute()
    assert "401" in str(refused.value)
    secret_free(str(refused.value).encode(), "the error")
    for logs in (dask_client.get_worker_logs(), {"scheduler": dask_client.get_scheduler_logs()}):
        secret_free(repr(logs).encode(), "the cluster's logs")


def test_options_are_checked_before_anything_is_read(api) -> None:
    import sheaf

    with pytest.raises(sheaf.UsageError, match="may not carry a credential"):
        _frame(api, "/anchor", headers={"Authorization": "Bearer x"})
    with pytest.raises(sheaf.UsageError, match="not allowed here: token"):
        _frame(api, "/anchor", client_options={"token": "x"})
    with pytest.raises(sheaf.UsageError, match="may not carry credentials"):
        import sheaf.dask
        sheaf.dask.read_list(f"http://user:pw@{api.base_url.split('//')[1]}/anchor")
    with pytest.raises(sheaf.CredentialError, match="SHEAF_UNSET_TOKEN .* is not set"):
        _frame(api, "/anchor", token_env="SHEAF_UNSET_TOKEN")


def test_a_cursor_list_with_a_range_filter_is_read_by_dask_in_ranges_each_item_once(dask_client, api) -> None:
    expected = split_list(api)
    frame = _frame(api, SPLIT, partitions=4, description="stripe")
    assert frame.npartitions == 4
    assert sorted(frame.compute()["id"].tolist()) == sorted(expected)
    assert len(expected) == 20000
