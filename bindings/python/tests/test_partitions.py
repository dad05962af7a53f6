"""Partitions: a list split by Client.partitions, each partition run by fetch_partition on a client
of its own, gives the list's items exactly once, in order; lists that cannot be split are one
partition saying why; no secret is in a partition; a malformed one is refused naming its field."""

from __future__ import annotations

import json
import pickle

import pytest
from conftest import expected_items, stats
from test_conventions import CONVENTIONS, N, path_of, plain

import sheaf
from sheaf import Partition, StopReason, UsageError

TOKEN = "tok-PARTITION-s3cret"
KEY = "key-PARTITION-value-42"

#: The conventions whose pages are addressed and whose count page one tells: each must split.
SPLIT = {"anchor": "page numbers, a total in the body", "drf-limit": "offset/limit with a count",
         "github": "Link rel=last", "json-server": "X-Total-Count"}


def _path(name: str) -> str:
    return f"{path_of(name)}?n={N}{CONVENTIONS[name][0]}"


def _run_each(api, partitions) -> list:
    """Every partition's items, each run on a fresh client from its pickled form."""
    items = []
    for partition in partitions:
        with sheaf.Client(api.base_url, TOKEN) as client:
            got = client.fetch_partition(pickle.loads(pickle.dumps(partition)), query={"api_key": KEY})
        assert got.stop_reason == StopReason.COMPLETE, partition
        if partition.items_expected is not None:
            assert len(got) == partition.items_expected, partition
        items += got
    return items


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_the_partitions_of_a_list_together_give_its_items_once_in_order(api, name: str) -> None:
    with sheaf.Client(api.base_url, TOKEN) as client:
        whole = client.fetch_all(_path(name))
        partitions = client.partitions(_path(name), 4, query={"api_key": KEY})
    assert plain(whole) == expected_items(N)
    if name in SPLIT:
        assert len(partitions) == 4, SPLIT[name]
        assert all(p.why is None for p in partitions)
    assert [p.index for p in partitions] == list(range(len(partitions)))
    assert [p.first_page for p in partitions] == [sum(q.pages for q in partitions[:i]) for i in range(len(partitions))]
    assert [p.open_ended for p in partitions] == [False] * (len(partitions) - 1) + [True]
    if len(partitions) == 1:
        assert partitions[0].why
    for partition in partitions:
        assert KEY not in partition.json and TOKEN not in partition.json
        assert KEY.encode() not in pickle.dumps(partition)
    assert plain(_run_each(api, partitions)) == expected_items(N)


def test_more_partitions_than_pages_gives_one_per_page(api) -> None:
    with sheaf.Client(api.base_url) as client:
        partitions = client.partitions("/anchor?n=250&per_page=100", 8)
    assert [(p.first_page, p.pages, p.items_expected) for p in partitions] == [(0, 1, 100), (1, 1, 100), (2, 1, 50)]
    assert _run_each(api, partitions) == expected_items(250)


def test_a_cursor_list_is_one_partition_saying_why(api) -> None:
    with sheaf.Client(api.base_url) as client:
        partitions = client.partitions(_path("drf-cursor"), 4)
        assert len(partitions) == 1
        assert "next link or cursor" in partitions[0].why
        assert partitions[0].open_ended and partitions[0].count == 1
        assert plain(client.fetch_partition(partitions[0])) == expected_items(N)


def test_a_partition_is_a_read_only_value_and_runs_the_same_twice(api) -> None:
    with sheaf.Client(api.base_url) as client:
        partition = client.partitions("/anchor?n=100&per_page=10", 3)[1]
        assert str(partition) == partition.json and json.loads(partition.json)["sheaf_partition"] == 1
        assert (partition.index, partition.count, partition.first_page, partition.pages) == (1, 3, 4, 3)
        assert partition.items_expected == 30 and partition.page_size == 10 and partition.why is None
        assert Partition(partition.json) == partition and pickle.loads(pickle.dumps(partition)) == partition
        with pytest.raises(AttributeError):
            partition.index = 0
        first = client.fetch_partition(partition)
        assert first == client.fetch_partition(partition.json) == expected_items(70, 40)
        assert [s.item_count for s in client.stream_partition(partition)][-1] == 30


def test_a_partitions_resume_token_goes_on_inside_its_range(api) -> None:
    with sheaf.Client(api.base_url) as client:
        partitions = client.partitions("/anchor?n=100&per_page=10", 3)   # pages 1-4, 5-7, 8-10
        first = client.fetch_partition(partitions[1], max_pages=1)
        assert first.stop_reason == StopReason.PAGE_BUDGET and first == expected_items(50, 40)
        rest = client.fetch_partition(partitions[1], resume=first.resume_token)
        assert rest.stop_reason == StopReason.COMPLETE and rest == expected_items(70, 50) and rest.resume_token is None
        with pytest.raises(UsageError, match="outside the partition"):
            client.fetch_partition(partitions[0], resume=first.resume_token)
    assert len({partitions[1], Partition(json.loads(partitions[1].json))}) == 1


@pytest.mark.parametrize("field, value, named", [("first_page", "x", "/first_page"),
                                                 ("sheaf_partition", 2, "/sheaf_partition"),
                                                 ("url", "ftp://h/x", "/url"),
                                                 ("open_ended", None, "/open_ended")])
def test_a_malformed_partition_is_refused_naming_its_field(api, field: str, value, named: str) -> None:
    with sheaf.Client(api.base_url) as client:
        fields = json.loads(client.partitions("/anchor?n=100&per_page=10", 2)[1].json)
        fields[field] = value
        with pytest.raises(UsageError) as refused:
            client.fetch_partition(Partition(fields))
        assert named in str(refused.value)
        with pytest.raises(UsageError, match="n must be 1 or more"):
            client.partitions("/anchor", 0)
        with pytest.raises(UsageError):
            Partition("{}")


def test_a_partition_off_the_clients_origin_is_refused(api, other_api) -> None:
    with sheaf.Client(other_api.base_url) as client:
        partition = client.partitions("/anchor?n=100&per_page=10", 2)[1]
    with sheaf.Client(api.base_url, TOKEN) as client:
        with pytest.raises(UsageError, match="origin"):
            client.fetch_partition(partition)


def test_the_async_client_plans_and_runs_partitions(api) -> None:
    import asyncio

    async def main() -> list:
        async with sheaf.AsyncClient(api.base_url) as client:
            partitions = await client.partitions("/anchor?n=100&per_page=10", 3)
            parts = await asyncio.gather(*(client.fetch_partition(p) for p in partitions))
            streamed = [s.item_count async for s in client.stream_partition(partitions[2])]
            assert streamed[-1] == 30
            return [item for part in parts for item in part]

    assert asyncio.run(main()) == expected_items(100)


def test_partitions_share_the_planning_clients_window_and_together_never_exceed_it(api):
    # A window of 12 split 3 ways: each partition runs at most 4 in flight, on clients of their
    # own (as three workers would), so the server sees at most 12 however the windows grow.
    import threading
    path = "/anchor?n=6000&latency_ms=20"
    with sheaf.Client(api.base_url, max_concurrency=12) as planner:
        partitions = planner.partitions(path, 3, paging="page:page", size_param="per_page", page_size=50)
    assert [p.window for p in partitions] == [4, 4, 4]
    results = {}

    def run(partition):
        with sheaf.Client(api.base_url) as worker:
            results[partition.index] = worker.fetch_partition(partition)
    threads = [threading.Thread(target=run, args=(p,)) for p in partitions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [item for k in range(3) for item in results[k]] == expected_items(6000)
    assert stats(api)["max_in_flight"] <= 12


def test_partitions_read_two_at_a_time_share_the_window_between_those_two(api):
    # Six partitions, two workers: at_once=2 gives each half of a window of 12, so the two
    # running together fill it (a share among all six would hold them to 4 between them).
    from concurrent.futures import ThreadPoolExecutor
    path = "/anchor?n=6000&latency_ms=20"
    with sheaf.Client(api.base_url, max_concurrency=12) as planner:
        partitions = planner.partitions(path, 6, paging="page:page", size_param="per_page", page_size=50, at_once=2)
        assert [p.window for p in partitions] == [6] * 6
        assert [p.window for p in planner.partitions(path, 6, paging="page:page", size_param="per_page",
                                                     page_size=50, at_once=50)] == [2] * 6
        with pytest.raises(sheaf.UsageError, match="at_once must be 1 or more"):
            planner.partitions(path, 6, at_once=0)

    def run(partition):
        with sheaf.Client(api.base_url) as worker:
            return worker.fetch_partition(partition)
    with ThreadPoolExecutor(2) as workers:
        parts = list(workers.map(run, partitions))
    assert [item for part in parts for item in part] == expected_items(6000)
    assert 4 < stats(api)["max_in_flight"] <= 12


@pytest.mark.parametrize("name", sorted(SPLIT) + ["drf-cursor"])
def test_the_partitions_as_arrow_tables_together_are_the_lists_table(api, name: str) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install sheaf[arrow])")
    with sheaf.Client(api.base_url, TOKEN) as client:
        whole = client.fetch_arrow(_path(name))
        partitions = client.partitions(_path(name), 3)
        tables = [client.fetch_partition_arrow(pickle.loads(pickle.dumps(p))) for p in partitions]
        batches = [batch for p in partitions for batch in client.stream_partition_batches(p.json)]
    assert all(t.schema.metadata[b"sheaf.stop_reason"] == b"COMPLETE" for t in tables)
    joined = pa.concat_tables(tables, promote_options="default")
    assert plain(joined.to_pylist()) == plain(whole.to_pylist()) == expected_items(N)
    assert plain(pa.Table.from_batches(batches).to_pylist()) == expected_items(N)


def test_a_partition_as_arrow_takes_a_schema_and_budgets(api) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install sheaf[arrow])")
    with sheaf.Client(api.base_url) as client:
        partition = client.partitions("/anchor?n=100&per_page=10", 3)[1]   # pages 5-7
        table = client.fetch_partition_arrow(partition, schema=pa.schema([("id", pa.float64())]), max_pages=1)
        assert table.schema.field("id").type == pa.float64()
        assert table.column("id").to_pylist() == [float(i) for i in range(40, 50)]
        assert table.schema.metadata[b"sheaf.stop_reason"] == b"PAGE_BUDGET"
        rest = client.fetch_partition_arrow(partition, resume=table.schema.metadata[b"sheaf.resume_token"].decode())
        assert rest.to_pylist() == expected_items(70, 50)
        with pytest.raises(UsageError, match="schema must be a pyarrow.Schema"):
            client.stream_partition_batches(partition, schema={"id": "int"})
