"""The engine modules (sheaf.spark, sheaf.ray, sheaf.dask) without their engines: importing them
needs none, using one without its engine says which extra installs it, and what a read sends to
its tasks holds no credential. The engines themselves run in tests/engines (run.sh)."""

from __future__ import annotations

import importlib
import pickle
import sys

import pytest

import sheaf
from sheaf._engines import ListRead

TOKEN = "tok-ENGINES-s3cret"

#: module -> (the engine's module that it needs, the extra, how it is used)
ENGINES = {
    "sheaf.spark": ("pyspark.sql.datasource", "spark", lambda module: module.register(object())),
    "sheaf.ray": ("ray.data", "ray", lambda module: module.ListSource("http://127.0.0.1:1/list")),
    "sheaf.dask": ("dask.dataframe", "dask", lambda module: module.read_list("http://127.0.0.1:1/list")),
}


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_an_engine_module_without_its_engine_names_the_extra_that_installs_it(monkeypatch, name: str) -> None:
    needed, extra, use = ENGINES[name]
    module = importlib.import_module(name)   # importing needs no engine
    monkeypatch.setitem(sys.modules, needed, None)   # as if it were not installed
    with pytest.raises(ImportError, match=rf"pip install 'sheaf\[{extra}\]'") as missing:
        use(module)
    assert missing.value.name == needed


def test_ray_read_list_without_ray_names_the_extra_too(monkeypatch) -> None:
    import sheaf.ray

    monkeypatch.setitem(sys.modules, "ray.data", None)
    with pytest.raises(ImportError, match=r"pip install 'sheaf\[ray\]'"):
        sheaf.ray.read_list("http://127.0.0.1:1/list", partitions=2)


def test_a_list_read_holds_no_credential_and_takes_the_token_from_the_environment(api, monkeypatch) -> None:
    read = ListRead.of(f"{api.base_url}/anchor?n=250&per_page=100", "anchor", '{"X-Trace": "t"}',
                       token_env="SHEAF_ENGINES_TEST_TOKEN", client_options={"max_concurrency": 4, "concurrency": 4})
    assert (read.base_url, read.path) == (api.base_url, "/anchor?n=250&per_page=100")
    monkeypatch.setenv("SHEAF_ENGINES_TEST_TOKEN", TOKEN)
    partitions = read.plan(3)
    assert TOKEN.encode() not in pickle.dumps((read, partitions))
    monkeypatch.delenv("SHEAF_ENGINES_TEST_TOKEN")
    with pytest.raises(sheaf.CredentialError, match="SHEAF_ENGINES_TEST_TOKEN .token_env. is not set"):
        read.table(partitions[0])
    monkeypatch.setenv("SHEAF_ENGINES_TEST_TOKEN", TOKEN)
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install sheaf[arrow])")
    ids = [row["id"] for p in partitions for row in read.table(p).to_pylist()]
    assert ids == list(range(250))
    assert {entry["authorization"] for entry in api.state.snapshot()["log"]} == {f"Bearer {TOKEN}"}


def test_a_process_reads_one_partition_after_another_on_one_client_that_keeps_the_window(api, monkeypatch) -> None:
    # A worker's second partition starts where its first left the window (and asks it ahead of
    # page one: the origin has answered one on that client), not at page one and page two alone.
    from sheaf import _engines

    monkeypatch.delenv("SHEAF_TOKEN", raising=False)
    read = ListRead.of(f"{api.base_url}/anchor?n=4000&per_page=50&latency_ms=50", "anchor",
                       client_options={"max_concurrency": 32})
    partitions = read.plan(4, at_once=1)
    assert [p.window for p in partitions] == [32] * 4 and [p.pages for p in partitions] == [20] * 4
    bursts = []
    for partition in partitions[1:3]:
        api.state.reset()
        assert [item["id"] for item in read.client().fetch_partition(partition)] == list(
            range(partition.first_page * 50, (partition.first_page + 20) * 50))
        arrivals = list(api.state.arrivals)
        # What arrived before any answer could have gone back (each waits 50 ms): the requests
        # sent together at the start. A loaded machine accepts 20 connections slowly: 45 ms.
        bursts.append(sum(1 for at in arrivals if at - arrivals[0] < 0.045))
    assert bursts[1] > 8, f"the second partition's first burst: {bursts} (a new client sends 2, then 8)"
    one, again = read.client(), read.client()
    assert one is again
    monkeypatch.setenv("SHEAF_TOKEN", TOKEN)
    other = read.client()
    assert other is not one, "another token: another client"
    monkeypatch.setattr(_engines.os, "getpid", lambda: -1)
    forked = read.client()
    assert forked is not other, "a forked child does not use its parent's clients"


def test_an_engine_is_handed_batches_of_many_snapshots_under_its_schema(api, monkeypatch) -> None:
    # A cursor list comes a page per snapshot; Spark pays for each batch it is handed, so the
    # snapshots are joined into batches of at least `rows` rows (the last one may hold fewer).
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install sheaf[arrow])")
    monkeypatch.delenv("SHEAF_TOKEN", raising=False)
    read = ListRead.of(f"{api.base_url}/conv/drf-cursor?n=1050&page_size=100")
    [partition] = read.plan(4)
    schema = pa.schema([("name", pa.string()), ("id", pa.int64()), ("absent", pa.float64())])
    batches = list(read.batches(partition, schema, rows=300))
    assert [batch.num_rows for batch in batches] == [300, 300, 300, 150]
    assert all(batch.schema == schema for batch in batches)
    assert [i for batch in batches for i in batch.column("id").to_pylist()] == list(range(1050))
    assert batches[0].column("absent").null_count == 300


@pytest.mark.parametrize("given, refused", [
    (dict(headers={"Authorization": "Bearer x"}), "may not carry a credential"),
    (dict(headers='{"cookie": "a=b"}'), "may not carry a credential"),
    (dict(client_options={"token": "x"}), "not allowed here: token"),
    (dict(client_options={"auth": "x"}), "not allowed here: auth"),
    (dict(token_env="NOT A NAME"), "token_env must name an environment variable"),
    (dict(description=3), "description must be"),
])
def test_a_list_read_refuses_credentials_where_tasks_would_carry_them(given, refused) -> None:
    with pytest.raises(sheaf.UsageError, match=refused):
        ListRead.of("http://127.0.0.1:1/list", **given)
    with pytest.raises(sheaf.UsageError, match="may not carry credentials"):
        ListRead.of("http://user:password@127.0.0.1:1/list")


def test_a_description_is_a_preset_its_json_or_a_description() -> None:
    assert ListRead.of("http://h/l", "github").description == sheaf.Description(preset="github").to_json()
    text = '{"paging": {"kind": "page", "param": "p"}}'
    assert ListRead.of("http://h/l", text).description == sheaf.Description(json=text).to_json()
    assert ListRead.of("http://h/l", {"preset": "anchor"}).description == '{"preset": "anchor"}'
    assert ListRead.of("http://h/l", sheaf.Description(items="/data")).description == \
        sheaf.Description(items="/data").to_json()
    assert ListRead.of("http://h/l").description is None
