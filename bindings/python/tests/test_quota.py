"""Quota as a budget (issue 44): the server's rate-limit headers are read into a budget the window
consults before it sends, so the quota is never overdrawn; a limit that resets past
``max_wait`` stops the list with RateLimitedError (never a bad token), its items and resume token
kept; one that resets within it is waited for. The server is GitHub-shaped (Tests/server/
api_server.py ``quota=R:W``: X-RateLimit-* per credential, 403 with X-RateLimit-Remaining: 0 past
it, counted as "refused")."""

from __future__ import annotations

import time

import pytest

import sheaf
from conftest import expected_items, stats
from test_cli import cli_env, command, lines
from test_cli_trust import run_cli, said

PAGES = dict(paging="page:page", size_param="per_page", page_size=10)


def test_a_list_past_the_quota_stops_before_it_is_refused_and_resumes_exactly(api):
    # 200 pages into 120 points with a window of 64: no request past the points.
    path = "/anchor?n=2000&quota=120:2"
    with sheaf.Client(api.base_url, token="t-1", concurrency=64, max_wait=0) as client:
        with pytest.raises(sheaf.RateLimitedError) as caught:
            client.fetch_all(path, **PAGES)
        error = caught.value
        assert "the server's core limit of 120 requests is spent: 0 left until it resets in" in error.message, error.message
        assert not isinstance(error, sheaf.HTTPError)
        seen = stats(api)
        assert seen["refused"] == 0 and seen["requests"] == 120, seen
        first = list(error.items)
        assert first == expected_items(len(first)) and len(first) >= 1000
    time.sleep(2.1)   # the server's window resets; the next run (a process of the next hour) goes on
    with sheaf.Client(api.base_url, token="t-1", concurrency=64) as client:
        rest = client.fetch_all(path, resume=error.resume_token, **PAGES)
    assert first + list(rest) == expected_items(2000), "every item once"
    assert stats(api)["refused"] == 0


def test_a_quota_that_resets_within_max_wait_is_waited_for(api):
    # A window of 8: what goes before the origin's first answer, which says what the quota is, fits it.
    events: list = []
    with sheaf.Client(api.base_url, token="t-2", concurrency=8, on_event=events.append) as client:
        items = client.fetch_all("/anchor?n=300&quota=12:1", **PAGES)
        client.flush_hooks()
    assert items == expected_items(300)
    assert stats(api)["refused"] == 0
    waits = [event for event in events if event.kind == "rate_limited"]
    assert waits and all("waiting" in event.message and 0 < event.wait <= 2 for event in waits), events


def test_a_refusal_for_a_spent_quota_is_rate_limited_not_a_bad_token(api):
    path = "/anchor?n=100&quota=3:60"
    # One page at a time, so that nothing goes before an answer that says what is left.
    with sheaf.Client(api.base_url, token="t-3", concurrency=1, adaptive_window=False) as spender:
        spender.fetch_all("/anchor?n=30&quota=3:60", **PAGES)
    assert stats(api)["refused"] == 0
    # Another client of the same token knows nothing of it: the server's 403 tells it.
    events: list = []
    with sheaf.Client(api.base_url, token="t-3", max_wait=0, concurrency=1, adaptive_window=False,
                      on_event=events.append) as client:
        with pytest.raises(sheaf.RateLimitedError) as caught:
            client.fetch_all(path, **PAGES)
        client.flush_hooks()
    kinds = [event.kind for event in events]
    assert "rate_limited" in kinds and "authentication_refused" not in kinds, kinds
    assert "the server's core limit of 3 requests is spent" in caught.value.message
    assert stats(api)["refused"] == 1


def test_cli_a_rate_limited_run_keeps_its_items_beside_the_file_and_resume_appends_the_rest(api, tmp_path):
    out = tmp_path / "issues.jsonl"
    out.write_text("old\n")
    url = f"{api.base_url}/anchor?n=600&per_page=10&quota=25:2"
    env = cli_env(SHEAF_TOKEN="t-4")
    failed = run_cli(url, "--paging", "page:page", "-o", str(out), "--max-wait", "0", env=env)
    assert failed.returncode == 7, said(failed)
    assert "the server's core limit of 25 requests is spent" in said(failed)
    assert "refused the token" not in said(failed)
    assert out.read_text() == "old\n", "-o is replaced only by a run that succeeds"
    partial = tmp_path / "issues.jsonl.partial"
    kept = lines(partial.read_bytes())
    assert kept == expected_items(len(kept)) and 200 <= len(kept) <= 250, len(kept)
    assert f"kept in {partial}" in said(failed)
    token = said(failed).rsplit("--resume ", 1)[1].split()[0]
    time.sleep(2.1)
    resumed = run_cli(url, "--paging", "page:page", "-o", str(out), "--resume", token, "--max-wait", "5", env=env)
    assert resumed.returncode == 0, said(resumed)
    assert lines(out.read_bytes()) == expected_items(600), "the kept items and the rest, each once"
    assert not partial.exists()
    assert stats(api)["refused"] == 0


def test_a_spent_search_limit_holds_back_the_search_requests_not_the_others(api):
    # GitHub's limits are per resource (X-RateLimit-Resource): 30 searches a minute, 5,000 core
    # requests an hour. One client spends its search limit; its core lists go on.
    with sheaf.Client(api.base_url, token="t-resources", concurrency=4, adaptive_window=False, max_wait=0) as client:
        with pytest.raises(sheaf.RateLimitedError) as caught:
            client.fetch_all("/drf?n=200&page_size=10&quota=3:3600&quota_resource=search")
        assert "search limit" in caught.value.message, caught.value.message
        items = client.fetch_all("/anchor?n=300&quota=100:3600", **PAGES)
        assert items == expected_items(300)
        with pytest.raises(sheaf.RateLimitedError):   # and the search requests are still held
            client.fetch_all("/drf?n=200&page_size=10&quota=3:3600&quota_resource=search")
    assert stats(api)["refused"] == 0
