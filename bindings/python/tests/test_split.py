"""Cursor lists split by their range filter (issue 43): the Stripe-, Slack- and Shopify-shaped lists
of Tests/server/ranges.py read in pieces side by side, each item exactly once, in the list's order,
through Python and the command line; bursts that share a second, items added during the run, a
server that ignores the filter, budgets and an interrupt resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from typing import Any, Dict, List

import pytest

import sheaf
from conftest import interrupt_cli, stats
from test_cli import cli_env, command, lines, run_cli

SHAPES = {
    # preset: (path, the items' key, the field the list is ordered by)
    "stripe": ("/range/stripe", "data", "created"),
    "slack": ("/range/slack", "messages", "ts"),
    "shopify": ("/range/shopify", "orders", "created_at"),
}


def served(api, path: str) -> List[Dict[str, Any]]:
    """The list as the server serves it, walked one page at a time with urllib (not Sheaf)."""
    with sheaf.Client(api.base_url) as client:
        return list(client.fetch_all(path, split="none", preset=path.split("/")[2].split("?")[0]))


def identity(item: Dict[str, Any]) -> Any:
    return item.get("id", item.get("ts"))


@pytest.mark.parametrize("preset", SHAPES)
def test_each_shape_is_read_in_pieces_each_item_once_in_the_lists_order(api, preset):
    path, _, field = SHAPES[preset]
    size = {"stripe": "limit=100", "slack": "limit=100", "shopify": "limit=250"}[preset]
    listed = f"{path}?n=6000&{size}&latency_ms=10"
    expected = served(api, listed)
    assert len(expected) == 6000
    urllib.request.urlopen(f"{api.base_url}/_reset", timeout=10).read()
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(listed, preset=preset)
        explained = client.explain(listed, preset=preset)
    assert [identity(item) for item in items] == [identity(item) for item in expected]
    assert items.stop_reason == sheaf.StopReason.COMPLETE
    seen = stats(api)
    assert seen["max_in_flight"] > 4, "pieces are walked side by side"
    assert explained.plan == "split"
    assert json.loads(explained.json)["split_plan"].startswith(f"split on /{field}")


def test_bursts_in_one_second_and_items_added_during_the_run_are_never_lost_or_repeated(api):
    path = "/range/stripe?n=8000&limit=100&burst=450:6&latency_ms=20"
    before = served(api, path)
    urllib.request.urlopen(f"{api.base_url}/_reset", timeout=10).read()
    with sheaf.Client(api.base_url) as client:
        items = list(client.fetch_all(path + "&insert_rate=20", preset="stripe"))
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids)), "no item twice"
    old = {item["id"] for item in before}
    assert [i for i in ids if i in old] == [item["id"] for item in before], "every item there at the start, in order"
    # Items added during the run are newer than page one: none is read (the run's top is fixed).
    assert all(i in old for i in ids)


def test_a_server_that_ignores_the_filter_is_walked_as_one_piece_and_says_so(api):
    path = "/range/stripe?n=900&limit=100&ignore_filter=1"
    expected = served(api, path)
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(path, preset="stripe")
        explained = client.explain(path, preset="stripe")
    assert [item["id"] for item in items] == [item["id"] for item in expected]
    # The plan is printed once page one is in (explain reads it alone): the probes decide later.
    assert explained.plan in ("split", "sequential")


def test_a_split_spelled_by_hand_reads_a_list_without_a_preset(api):
    path = "/range/stripe?n=3000&limit=100&latency_ms=10"
    expected = served(api, path)
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(path, items="/data", paging="cursor:starting_after", cursor="last-item:/id",
                                 has_more="/has_more", split="/created:created[gte],created[lt]")
    assert [item["id"] for item in items] == [item["id"] for item in expected]
    assert stats(api)["max_in_flight"] > 4
    with pytest.raises(sheaf.UsageError, match="FIELD:LOWER,UPPER"):
        sheaf.Description(split="created:gte").to_json()


@pytest.mark.parametrize("budget", [dict(max_pages=5), dict(max_items=333), dict(max_requests=12)],
                         ids=["pages", "items", "requests"])
def test_a_budget_stops_the_pieces_and_its_token_goes_on_exactly(api, budget):
    path = "/range/stripe?n=4000&limit=100"
    expected = [item["id"] for item in served(api, path)]
    got: List[str] = []
    token = None
    with sheaf.Client(api.base_url) as client:
        for _ in range(60):
            items = client.fetch_all(path, preset="stripe", resume=token, **budget)
            got += [item["id"] for item in items]
            token = items.resume_token
            if items.stop_reason == sheaf.StopReason.COMPLETE:
                break
            assert token is not None
    assert got == expected


def test_the_command_line_splits_and_an_interrupt_goes_on_where_it_stopped(api, tmp_path):
    path = f"{api.base_url}/range/stripe?n=5000&limit=100&latency_ms=30"
    expected = [item["id"] for item in served(api, "/range/stripe?n=5000&limit=100")]
    first = tmp_path / "first.jsonl"
    proc = subprocess.Popen(command(path, "--preset", "stripe", "--concurrency", "4", "--max-concurrency", "4"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(), bufsize=0)
    head: List[bytes] = []
    out, _, token = interrupt_cli(proc, lambda: head.append(proc.stdout.readline()) or time.sleep(0.2))
    written = lines(b"".join(head) + out)
    assert 0 < len(written) < 5000
    rest = run_cli(path, "--preset", "stripe", "--resume", token)
    assert rest.returncode == 0, rest.stderr
    assert [item["id"] for item in written + lines(rest.stdout)] == expected


def test_explain_names_the_split_and_the_flag_spells_it(api):
    path = f"{api.base_url}/range/stripe?n=2000&limit=100"
    result = run_cli(path, "--split", "/created:created[gte],created[lt]", "--items", "/data",
                     "--paging", "cursor:starting_after", "--cursor", "last-item:/id", "--has-more", "/has_more",
                     "--explain", "--format", "json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["split"]["field"] == "/created" and printed["split"]["lower"] == {"param": "created[gte]", "inclusive": True}
    got = run_cli(path, "--preset", "stripe", "-o", "-")
    assert got.returncode == 0, got.stderr
    assert [item["id"] for item in lines(got.stdout)] == [item["id"] for item in served(api, "/range/stripe?n=2000&limit=100")]
    bad = run_cli(path, "--split", "/created")
    assert bad.returncode == 2 and b"FIELD:LOWER,UPPER" in bad.stderr


def test_partitions_of_a_split_list_are_ranges_read_apart_whose_union_is_the_list_once(api):
    path = "/range/stripe?n=5000&limit=100"
    expected = [item["id"] for item in served(api, path)]
    with sheaf.Client(api.base_url) as client:
        partitions = client.partitions(path, 4, preset="stripe")
        assert len(partitions) == 4 and all(partition.why is None for partition in partitions)
        got: List[str] = []
        for partition in partitions:
            with sheaf.Client(api.base_url) as worker:   # as another process would
                got += [item["id"] for item in worker.fetch_partition(sheaf.Partition(partition.json))]
    assert got == expected
    # The command line: --partitions prints them, --partition runs one.
    printed = run_cli(f"{api.base_url}{path}", "--preset", "stripe", "--partitions", "3")
    assert printed.returncode == 0, printed.stderr
    plans = printed.stdout.decode().splitlines()
    assert len(plans) == 3
    ran: List[str] = []
    for plan in plans:
        result = run_cli("--partition", plan)
        assert result.returncode == 0, result.stderr
        ran += [item["id"] for item in lines(result.stdout)]
    assert ran == expected
