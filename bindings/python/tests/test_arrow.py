"""A list as Arrow: Client.fetch_arrow (a table) and Client.stream_batches (a record batch per
snapshot), read by pyarrow from the bytes the library holds."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any, List
from urllib.parse import parse_qs, urlsplit

import pytest

import sheaf

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install sheaf[arrow]; scripts/setup.sh installs it)")


def pages_of(pages: List[List[Any]]):
    """A transport serving `pages` (lists of items) as ?page=1.., each with a next link but the last."""

    def transport(method, url, headers, body):
        page = int(parse_qs(urlsplit(url).query).get("page", ["1"])[0])
        following = f"http://127.0.0.1:1/list?page={page + 1}" if page < len(pages) else None
        document = {"items": pages[page - 1], "next_page": following}
        return 200, [("Content-Type", "application/json")], json.dumps(document).encode()

    return transport


PAGED = dict(paging="next", items="/items", next="/next_page")


def test_a_whole_list_as_a_table_is_what_fetch_all_returns(api):
    with sheaf.Client(api.base_url) as client:
        table = client.fetch_arrow("/anchor?n=1000&per_page=50")
        items = client.fetch_all("/anchor?n=1000&per_page=50")
    assert table.to_pylist() == list(items)
    assert table.schema.field("id").type == pa.int64() and table.schema.field("name").type == pa.string()
    assert table.schema.metadata[b"sheaf.stop_reason"] == b"COMPLETE"
    assert b"sheaf.resume_token" not in table.schema.metadata


def test_pretty_printed_pages_are_read_as_compact_ones(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_arrow("/anchor?n=120&per_page=50&indent=1").to_pylist() == \
            list(client.fetch_all("/anchor?n=120&per_page=50"))


def test_nested_objects_and_arrays_keep_their_structure():
    items = [{"id": 1, "owner": {"login": "a", "site": {"admin": True}}, "tags": ["x", "y"],
              "reviews": [{"by": "b", "score": 2}], "when": "2024-01-01T10:00:00Z"},
             {"id": 2, "owner": {"login": "c", "site": {"admin": False}}, "tags": [],
              "reviews": [], "when": "2024-01-02"}]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of([items[:1], items[1:]])) as client:
        table = client.fetch_arrow("/list", **PAGED)
    schema = table.schema
    assert schema.field("owner").type == pa.struct([("login", pa.string()), ("site", pa.struct([("admin", pa.bool_())]))])
    assert schema.field("tags").type == pa.list_(pa.string())
    assert schema.field("reviews").type == pa.list_(pa.struct([("by", pa.string()), ("score", pa.int64())]))
    assert schema.field("when").type == pa.string()   # strings stay strings: no inferred timestamps
    assert table.to_pylist() == items


def test_a_field_that_changes_type_across_pages_fails_naming_the_field_and_the_page():
    pages = [[{"id": 1, "price": 10}], [{"id": 2, "price": 12}], [{"id": 3, "price": "twelve"}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        with pytest.raises(sheaf.SchemaError) as caught:
            client.fetch_arrow("/list", **PAGED)
    error = caught.value
    assert error.field == "price" and error.pages == (3, 3)
    assert "'price'" in str(error) and "page 3" in str(error) and "int64" in str(error)
    assert error.items.to_pylist() == [{"id": 1, "price": 10}, {"id": 2, "price": 12}]
    assert error.resume_token is not None
    assert isinstance(error, sheaf.DecodingError)


def test_a_list_that_opens_with_nulls_keeps_them():
    # pyarrow's own reader would read [null, "a"] as ["a"] (apache/arrow#51305).
    pages = [[{"id": 1, "tags": [None, "a"]}, {"id": 2, "tags": [None, None, "b", None]}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        table = client.fetch_arrow("/list", **PAGED)
    table.validate(full=True)
    assert table.to_pylist() == pages[0]


def test_a_field_known_only_as_an_empty_list_that_comes_as_another_kind_fails_naming_it():
    pages = [[{"id": 1, "t": []}], [{"id": 2, "t": True}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        with pytest.raises(sheaf.SchemaError) as caught:
            client.fetch_arrow("/list", **PAGED)
    assert caught.value.field == "t" and caught.value.pages == (2, 2)
    assert "'t'" in str(caught.value) and "page 2" in str(caught.value)
    assert caught.value.items.to_pylist() == [{"id": 1, "t": []}]


def _counting_reader_calls(monkeypatch):
    import pyarrow.json
    calls = []
    real = pyarrow.json.read_json
    monkeypatch.setattr(pyarrow.json, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_the_library_reads_every_snapshot_and_pyarrows_reader_is_never_called(monkeypatch):
    calls = _counting_reader_calls(monkeypatch)
    pages = [[{"id": i, "name": f"item-{i}", "tags": [i], "at": {"x": i / 2}}] for i in range(40)]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        table = client.fetch_arrow("/list", **PAGED)
        batches = list(client.stream_batches("/list", **PAGED))
    assert table.to_pylist() == [item for page in pages for item in page]
    assert pa.Table.from_batches(batches).equals(table.replace_schema_metadata(None))
    assert len(batches) == 40 and calls == []


def test_snapshots_the_library_does_not_read_are_read_together_in_a_few_calls_of_the_reader(monkeypatch):
    # A caller's schema with a type the library does not build (a timestamp): pyarrow's reader
    # reads every snapshot, and fetch_arrow gathers them into one call of it (on its threads):
    # 40 pages take the first page alone, then one call, not 40.
    calls = _counting_reader_calls(monkeypatch)
    pages = [[{"id": i, "name": f"item-{i}", "tags": [i]}] for i in range(40)]
    schema = pa.schema([("seen", pa.timestamp("s"))])
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        table = client.fetch_arrow("/list", **PAGED, schema=schema)
        batches = list(client.stream_batches("/list", **PAGED, schema=schema))
    assert table.drop_columns(["seen"]).to_pylist() == [item for page in pages for item in page]
    assert pa.Table.from_batches(batches).equals(table.replace_schema_metadata(None))
    assert len(calls) - len(batches) == 2


def test_a_field_first_seen_late_that_changes_type_fails_as_read_page_by_page():
    # Read together, pyarrow would widen "p" to double across pages 2 and 3; read one by one,
    # page 2 makes it int64 and page 3 does not fit: fetch_arrow answers as the latter does.
    pages = [[{"id": 1}], [{"id": 2, "p": 1}], [{"id": 3, "p": 1.5}], [{"id": 4, "p": 2}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        with pytest.raises(sheaf.SchemaError) as caught:
            client.fetch_arrow("/list", **PAGED)
        with pytest.raises(sheaf.SchemaError) as streamed:
            list(client.stream_batches("/list", **PAGED))
    error = caught.value
    assert error.field == "p" and error.pages == (3, 3) and str(error) == str(streamed.value)
    assert error.items.to_pylist() == [{"id": 1, "p": None}, {"id": 2, "p": 1}]
    assert error.resume_token is not None


def test_a_nested_field_that_changes_from_int_to_double_is_named_with_its_path():
    pages = [[{"owner": {"id": 1}}], [{"owner": {"id": 1.5}}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        with pytest.raises(sheaf.SchemaError) as caught:
            client.fetch_arrow("/list", **PAGED)
    assert caught.value.field == "owner.id" and "page 2" in str(caught.value) and "1.5" in str(caught.value)


def test_an_explicit_schema_widens_a_field_that_changes():
    pages = [[{"id": 1, "price": 10}], [{"id": 2, "price": 12.5}]]
    schema = pa.schema([("price", pa.float64())])
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        table = client.fetch_arrow("/list", schema=schema, **PAGED)
    assert table.schema.field("price").type == pa.float64()
    assert table.to_pylist() == [{"price": 10.0, "id": 1}, {"price": 12.5, "id": 2}]


def test_a_value_the_schema_cannot_hold_fails_naming_field_and_page():
    pages = [[{"price": 10}], [{"price": "n/a"}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        with pytest.raises(sheaf.SchemaError) as caught:
            client.fetch_arrow("/list", schema=pa.schema([("price", pa.float64())]), **PAGED)
    assert caught.value.field == "price" and "page 2" in str(caught.value) and "schema" in str(caught.value)
    assert caught.value.items.to_pylist() == [{"price": 10.0}]


def test_a_field_null_at_first_or_appearing_later_is_no_change():
    pages = [[{"id": 1, "note": None}], [{"id": 2, "note": "hi", "extra": {"a": 1}}]]
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of(pages), concurrency=1) as client:
        table = client.fetch_arrow("/list", **PAGED)
    assert table.schema.names == ["id", "note", "extra"]
    assert table.to_pylist() == [{"id": 1, "note": None, "extra": None}, {"id": 2, "note": "hi", "extra": {"a": 1}}]


def test_items_that_are_not_objects_fail_clearly():
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of([[1, 2, 3]])) as client:
        with pytest.raises(sheaf.SchemaError, match="not all JSON objects"):
            client.fetch_arrow("/list", **PAGED)


def test_stream_batches_yields_batches_in_order_whose_concatenation_is_the_table(api):
    with sheaf.Client(api.base_url) as client:
        stream = client.stream_batches("/anchor?n=1000&per_page=50")
        batches = list(stream)
        table = client.fetch_arrow("/anchor?n=1000&per_page=50")
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches) and len(batches) > 1
    assert [batch.num_rows for batch in batches if batch.num_rows] == [batch.num_rows for batch in batches]
    assert pa.Table.from_batches(batches).equals(table.replace_schema_metadata(None))
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(1000))
    assert stream.stop_reason == sheaf.StopReason.COMPLETE and stream.resume_token is None


def test_a_budgets_stop_reason_and_resume_token_are_carried(api):
    with sheaf.Client(api.base_url) as client:
        table = client.fetch_arrow("/anchor?n=1000&per_page=50", max_items=120)
        assert table.num_rows == 120
        assert sheaf.StopReason[table.schema.metadata[b"sheaf.stop_reason"].decode()] == sheaf.StopReason.ITEM_LIMIT
        token = table.schema.metadata[b"sheaf.resume_token"].decode()
        rest = client.fetch_arrow("/anchor?n=1000&per_page=50", resume=token)
        stream = client.stream_batches("/anchor?n=1000&per_page=50", max_pages=3)
        rows = sum(batch.num_rows for batch in stream)
    assert table.column("id").to_pylist() + rest.column("id").to_pylist() == list(range(1000))
    assert rows == 150 and stream.stop_reason == sheaf.StopReason.PAGE_BUDGET and stream.resume_token


def test_a_failure_mid_list_keeps_the_rows_before_it(api):
    with sheaf.Client(api.base_url, max_attempts=1, concurrency=1, adaptive_window=False) as client:
        with pytest.raises(sheaf.HTTPError) as caught:
            client.fetch_arrow("/anchor?n=500&per_page=50&fail=4:9:404")
    error = caught.value
    assert isinstance(error.items, pa.Table)
    assert error.items.column("id").to_pylist() == list(range(150))
    assert error.items.schema.metadata[b"sheaf.stop_reason"] == b"FAILED"
    assert error.resume_token is not None


def test_an_empty_list_is_an_empty_table_with_the_given_schema():
    schema = pa.schema([("id", pa.int64())])
    with sheaf.Client("http://127.0.0.1:1", transport=pages_of([[]])) as client:
        table = client.fetch_arrow("/list", schema=schema, **PAGED)
        assert table.num_rows == 0 and table.schema.names == ["id"]
        assert list(client.stream_batches("/list", **PAGED)) == []


def test_a_schema_that_is_not_a_pyarrow_schema_is_a_usage_error(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError, match="pyarrow.Schema"):
            client.fetch_arrow("/anchor?n=10", schema={"id": "int64"})


def test_without_pyarrow_the_error_names_the_extra(api, monkeypatch):
    for name in [name for name in sys.modules if name == "pyarrow" or name.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(ImportError, match=r"pip install sheaf\[arrow\]"):
            client.fetch_arrow("/anchor?n=10")
        with pytest.raises(ImportError, match=r"pip install sheaf\[arrow\]"):
            client.stream_batches("/anchor?n=10")
    assert sheaf._live_runs() == 0   # nothing was started


def test_importing_sheaf_does_not_import_pyarrow():
    code = "import sys, sheaf; assert 'pyarrow' not in sys.modules, 'pyarrow was imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=sheaf.__file__.rsplit("/sheaf/", 1)[0])


def test_reading_a_list_as_arrow_does_not_import_pyarrow_compute(api):
    # pyarrow.compute costs 70 ms to import, and a list's rows need none of it: a table (its
    # first snapshot read alone, the rest gathered) and a stream of batches.
    code = ("import sys, sheaf\n"
            "with sheaf.Client(sys.argv[1]) as client:\n"
            "    table = client.fetch_arrow('/anchor?n=3000&per_page=100')\n"
            "    assert table.num_rows == 3000 and table.column('id').to_pylist() == list(range(3000))\n"
            "    batches = list(client.stream_batches('/anchor?n=300&per_page=100'))\n"
            "    assert sum(batch.num_rows for batch in batches) == 300\n"
            "assert 'pyarrow.compute' not in sys.modules, 'pyarrow.compute was imported'\n")
    subprocess.run([sys.executable, "-c", code, api.base_url], check=True, cwd=sheaf.__file__.rsplit("/sheaf/", 1)[0])


# ---- the library's reading against pyarrow's, on generated items -------------------------------

def _value(rng, depth: int) -> Any:
    kind = rng.choice("nnibfsSdlo" if depth < 3 else "nnibfsS")
    if kind == "n":
        return None
    if kind == "i":
        return rng.choice([0, -1, 7, 2**31, -(2**63), 2**63 - 1, 2**64, rng.randrange(-10**6, 10**6)])
    if kind == "b":
        return rng.random() < 0.5
    if kind == "f":
        return rng.choice([0.5, -0.0, 1e300, 2.5e-8, 3.0, rng.uniform(-1e6, 1e6)])
    if kind == "s":
        return rng.choice(["", "plain", "2024-01-02T03:04:05Z", "quote \" and \\ back", "é ü 😀 \u0000 \n\t"])
    if kind == "S":
        return f"item-{rng.randrange(1000)}"
    if kind == "d":
        return rng.choice(["1", "2024-05-06"])
    if kind == "l":
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice("xyz"): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _items(rng, count: int, kinds: dict) -> str:
    """`count` objects whose fields mostly keep one kind (`kinds`: name -> a seed), sometimes
    another: enough agreement to make columns, enough change to make conflicts."""
    items = []
    for _ in range(count):
        item = {}
        for name in rng.sample(sorted(kinds), rng.randrange(len(kinds) + 1)):
            same = rng.random() < 0.9
            item[name] = _value(random.Random(kinds[name] if same else rng.random()), 0)
        items.append(item)
    text = json.dumps(items, ensure_ascii=rng.random() < 0.5)
    return text.replace(", ", ",\n ") if rng.random() < 0.2 else text


def _shaped(value: Any, type_: Any) -> Any:
    """A JSON value as to_pylist gives it from a column of `type_` (an integer in a double
    column is a float; a struct has every field)."""
    if value is None:
        return None
    if pa.types.is_floating(type_):
        return float(value)
    if pa.types.is_struct(type_):
        return {field.name: _shaped(value.get(field.name), field.type) for field in type_}
    if pa.types.is_list(type_):
        return [_shaped(element, type_.value_type) for element in value]
    return value


def test_the_library_reads_what_pyarrows_reader_reads_or_leaves_it_to_that_reader():
    # Each snapshot is read both ways, one after another under one evolving schema: where the
    # library reads a batch, it equals pyarrow's (types, field order, values, nulls); where
    # pyarrow refuses, the library never reads (it leaves those bytes to pyarrow, which words
    # the SchemaError). Both ways must be exercised.
    from sheaf.arrow import Line, SchemaError, SnapshotBatches, _definite

    rng = random.Random(20261127)
    read_here = refused = lost = 0
    for case in range(150):
        kinds = {name: rng.random() for name in rng.sample(["id", "name", "tags", "owner", "score", "when"], 4)}
        library, reader = SnapshotBatches(None), SnapshotBatches(None)
        reader.in_library = False
        for snapshot in range(3):
            items = _items(rng, rng.randrange(1, 12), kinds).encode()
            line = Line(items, (snapshot + 1, snapshot + 1), 0, 1)
            ours = library._read_in_library(line, _definite(pa, pa.struct(list(library.known))))
            try:
                theirs = reader.read_one(line)
            except SchemaError as error:
                # Either the reader refused the bytes (the library must have left them to it), or
                # the batch does not extend the schema (which fails the library's batch too).
                if ours is not None:
                    with pytest.raises(SchemaError) as caught:
                        library._extend(ours, line)
                    assert (caught.value.field, caught.value.pages) == (error.field, error.pages), f"case {case}"
                refused += 1
                break
            if ours is None:   # left to pyarrow's reader: both go on with its batch
                library.known = reader.known
                continue
            read_here += 1
            ours = library._extend(ours, line)
            assert ours.schema == theirs.schema, f"case {case}: {items!r}"
            row = pa.struct(list(ours.schema))
            expected = [_shaped(item, row) for item in json.loads(items)]
            assert ours.to_pylist() == expected, f"case {case}: {items!r}"
            # pyarrow's reader loses the nulls that open a list whose element type it learns later
            # in it ([null, "a"] -> ["a"], apache/arrow#51305); the library keeps them.
            if theirs.to_pylist() == expected:
                assert ours.equals(theirs), f"case {case}: {items!r}"
            else:
                lost += 1
            assert library.known == reader.known
    assert read_here > 100 and refused > 10, (read_here, refused)
