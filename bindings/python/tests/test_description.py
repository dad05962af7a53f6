"""Describing a list: detection by default, presets from the library, pinned parts, explain(),
and the list that would have been silently short."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO, expected_items, stats

import sheaf
from sheaf import Description


def test_an_undescribed_list_is_detected_and_fetched_whole_in_parallel(api):
    with sheaf.Client(api.base_url, concurrency=8, adaptive_window=False) as client:
        # 50 ms a page: the window's eight requests overlap even when a sanitizer slows their start.
        assert client.fetch_all("/anchor?n=1000&per_page=20&latency_ms=50") == expected_items(1000)
    seen = stats(api)
    # Counted by path: a request an earlier test cancelled may still reach the server.
    assert sum(entry["path"].startswith("/anchor?n=1000&per_page=20") for entry in seen["log"]) == 50
    assert seen["max_in_flight"] == 8


@pytest.mark.parametrize("path, plan, parts", [
    ("/anchor?n=1000", "parallel", {"items": "/items", "next": "/next_page", "total": "/total"}),
    ("/drf?n=1000", "parallel", {"items": "/results", "next": "/next", "total": "/count"}),
    ("/array?n=1000&per_page=50", "sequential", {"items": ""}),
])
def test_explain_reports_what_was_detected_and_the_plan(api, path, plan, parts):
    with sheaf.Client(api.base_url) as client:
        explained = client.explain(path)
    assert explained.plan == plan
    for name, value in parts.items():
        assert getattr(explained, name) == value, name
    assert "items" in explained.detected
    # The flags pin exactly what was detected: the same list, described, is the same.
    with sheaf.Client(api.base_url) as client:
        pinned = client.fetch_all(path, explained)
    assert pinned == expected_items(len(pinned)) and len(pinned) in (1000, 50)


def test_the_presets_come_from_the_library(api):
    known = sheaf.presets()
    assert len(known) >= 18
    assert {"github", "gitlab", "json-server", "drf-page", "drf-limit", "drf-cursor", "jsonapi", "odata", "hal",
            "stripe", "slack", "google", "fastapi-page", "fastapi-limit-offset", "anchor"} <= set(known)
    summary, github = known["github"]
    assert "GitHub" in summary
    assert (github.paging, github.next, github.page_count, github.items) == ("page:page", "link:next", "link:last", "")
    assert known["stripe"][1].cursor == "last-item:/id"
    # The CLI lists the same table.
    listed = subprocess.run([sys.executable, "-m", "sheaf", "presets"], capture_output=True, cwd=REPO, timeout=60,
                            env={**__import__("os").environ, "PYTHONPATH": str(REPO / "bindings" / "python")})
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.decode().splitlines()[::2]] == list(known)


def test_a_description_prints_as_the_flags_that_pin_it():
    described = Description(paging="offset:offset", first=0, size_param="limit", page_size=50, items="/results",
                            total="header:X-Total-Count", next="none", id="/id")
    assert described.flags() == ["--paging", "offset:offset", "--first", "0", "--size-param", "limit",
                                 "--page-size", "50", "--items", "/results", "--next", "none", "--total",
                                 "header:X-Total-Count", "--id", "/id"]
    assert described.command_line("http://x/y?a=1").startswith("sheaf get 'http://x/y?a=1' --paging offset:offset")
    assert Description(preset="github").merged({"id": "/id", "items": None}) == Description(preset="github", id="/id")
    with pytest.raises(sheaf.UsageError):
        Description().merged({"shape": "anchor"})


def test_a_preset_with_a_page_size_asks_for_it_in_the_presets_parameter(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_all("/anchor?n=95", preset="anchor", page_size=10) == expected_items(95)
    assert all("per_page=10" in entry["path"] for entry in stats(api)["log"])


def test_a_last_page_that_signals_more_than_the_description_follows_is_an_error(api):
    # Only the items pinned, no paging: page one names a next page nobody follows.
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.NotFollowedError) as raised:
            client.fetch_all("/anchor?n=120&per_page=50", items="/items", paging="next", next="none", total="none")
    error = raised.value
    assert error.code == sheaf.Result.NOT_FOLLOWED
    assert error.items == expected_items(50), "what arrived stays delivered"
    assert "next_page" in error.signal and "--next /next_page" in error.hint
    assert isinstance(error, sheaf.DecodingError)


def test_a_page_with_several_candidate_arrays_names_them(api):
    def two_arrays(method, url, headers, body):
        return 200, [("Content-Type", "application/json")], b'{"users":[1],"groups":[2]}'

    with sheaf.Client(api.base_url, transport=two_arrays) as client:
        with pytest.raises(sheaf.DetectionError) as raised:
            client.fetch_all("/anything")
    assert "/users" in raised.value.message and "/groups" in raised.value.message
    assert raised.value.hint == "--items /users or --items /groups"


@pytest.mark.parametrize("status", [0, -1, 1000])
def test_a_python_transport_returning_an_impossible_status_fails_instead_of_hanging(api, status):
    # The binding ignored the library's refusal and left the request unanswered: fetch_all hung.
    def impossible(method, url, headers, body):
        return status, [], b"[]"

    with sheaf.Client(api.base_url, transport=impossible, max_attempts=1) as client:
        with pytest.raises(sheaf.TransportError) as raised:
            client.fetch_all("/anything", paging="single")
    assert str(status) in raised.value.message


def test_cli_explain_prints_the_flags_and_the_plan(api):
    from test_cli import run_cli

    r = run_cli(f"{api.base_url}/drf?n=300", "--explain")
    assert r.returncode == 0, r.stderr
    command_line, plan = r.stdout.decode().splitlines()
    assert command_line.startswith(f"sheaf get '{api.base_url}/drf?n=300' --paging page:page --first 1")
    for flag in ("--items /results", "--next /next", "--total /count"):
        assert flag in command_line, flag
    assert plan.startswith("plan: parallel; detected: paging, items, next, total")
