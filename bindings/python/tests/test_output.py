"""Client.fetch_to and `sheaf get`: items written by the library as the pages brought them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import sheaf
from conftest import REPO, expected_items, stats

ANCHOR = dict(preset="anchor", page_size=50, id="/id")


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_every_item_is_written_in_order_in_either_format(api, tmp_path, fmt):
    seen = []
    target = tmp_path / f"things.{fmt}"
    with sheaf.Client(api.base_url) as client, open(target, "wb") as out:
        written = client.fetch_to("/anchor?n=1234&latency_ms=5", out, format=fmt, progress=seen.append, **ANCHOR)
    assert written == (1234, sheaf.StopReason.COMPLETE, None) and written.complete
    data = target.read_bytes()
    items = json.loads(data) if fmt == "json" else [json.loads(line) for line in data.splitlines()]
    assert items == expected_items(1234)
    assert data.endswith(b"\n") and data.count(b"\n") == (1234 + 2 if fmt == "json" else 1234)  # "[", items, "]"
    assert seen[-1].item_count == 1234 and seen[-1].expected_items == 1234 and seen[-1].requests_made >= 25


def test_an_empty_list_is_an_empty_array_or_nothing(api, tmp_path):
    with sheaf.Client(api.base_url) as client:
        for fmt, expected in [("json", b"[]\n"), ("jsonl", b"")]:
            target = tmp_path / f"empty.{fmt}"
            with open(target, "wb") as out:
                assert client.fetch_to("/anchor?n=0", out, format=fmt, **ANCHOR).items == 0
            assert target.read_bytes() == expected


def test_pretty_printed_items_are_one_line_each_in_jsonl(api, tmp_path):
    # GitHub's API indents its JSON: an item spans lines on the wire.
    target = tmp_path / "pretty.jsonl"
    with sheaf.Client(api.base_url) as client, open(target, "wb") as out:
        client.fetch_to("/anchor?n=120&indent=1", out, format="jsonl", **ANCHOR)
    lines = target.read_bytes().splitlines()
    assert [json.loads(line) for line in lines] == expected_items(120)
    with open(target, "wb") as out, sheaf.Client(api.base_url) as client:
        client.fetch_to("/anchor?n=120&indent=1", out, format="json", **ANCHOR)
    assert json.loads(target.read_bytes()) == expected_items(120)


def test_a_failure_keeps_what_was_written_well_formed_and_raises_with_a_token(api, tmp_path):
    target = tmp_path / "partial.json"
    with sheaf.Client(api.base_url, max_attempts=1) as client, open(target, "wb") as out:
        with pytest.raises(sheaf.HTTPError) as failure:
            client.fetch_to("/anchor?n=500&fail=4:9:500", out, **ANCHOR)
    assert failure.value.status == 500 and failure.value.items == []
    assert json.loads(target.read_bytes()) == expected_items(150), "the pages before the failure, closed"
    assert failure.value.resume_token is not None


def test_budgets_stop_without_an_error_and_the_token_goes_on(api, tmp_path):
    target = tmp_path / "first.jsonl"
    with sheaf.Client(api.base_url) as client:
        with open(target, "wb") as out:
            first = client.fetch_to("/anchor?n=300", out, format="jsonl", max_items=70, **ANCHOR)
        assert first.items == 70 and first.stop_reason == sheaf.StopReason.ITEM_LIMIT and not first.complete
        with open(target, "ab") as out:
            rest = client.fetch_to("/anchor?n=300", out, format="jsonl", resume=first.resume_token, **ANCHOR)
    assert rest.complete
    assert [json.loads(line) for line in target.read_bytes().splitlines()] == expected_items(300)


def test_a_closed_pipe_is_a_file_error_and_stops_the_list(api):
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with sheaf.Client(api.base_url) as client:
            with pytest.raises(sheaf.FileError, match="could not be written"):
                client.fetch_to("/anchor?n=100000&latency_ms=20", writer, **ANCHOR)
    finally:
        os.close(writer)
    assert len(stats(api)["log"]) < 100, "the list stopped with the output"


def test_a_bad_format_is_refused_before_anything_is_fetched(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError, match="format"):
            client.fetch_to("/anchor", 1, format="csv", **ANCHOR)
    assert stats(api)["log"] == []


def test_the_cli_writes_the_bytes_the_server_sent(api, tmp_path):
    # Not decoded and encoded again in Python: an indented item keeps its spacing (on one line).
    target = tmp_path / "raw.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    status = subprocess.run([sys.executable, "-m", "sheaf", "get", f"{api.base_url}/anchor?n=75&indent=1",
                             "--preset", "anchor", "-o", str(target), "--quiet"],
                            env=env, cwd=REPO, capture_output=True, timeout=60)
    assert status.returncode == 0, status.stderr
    lines = target.read_bytes().splitlines()
    assert [json.loads(line) for line in lines] == expected_items(75)
    assert b'"id": 0,' in lines[0] and lines[0].startswith(b"{ ") and lines[0].endswith(b" }")
