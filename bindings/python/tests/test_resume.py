"""Resume tokens and budgets: a list that stopped (an item limit inside a page, a page or request
budget, a failure, a deadline, a caller who left early) goes on from its token, and what the runs
deliver together is the whole list, for every convention of the test server."""

from __future__ import annotations

import base64
import json
import time

import pytest
from conftest import expected_items, stats
from test_conventions import CONVENTIONS, N, PAGE_SIZES, path_of, plain

import sheaf
from sheaf import Result, StopReason


def _path(name: str) -> str:
    return f"{path_of(name)}?n={N}{CONVENTIONS[name][0]}"


def _token_json(token: str) -> dict:
    assert token.startswith("sheaf-resume-1.")
    body = token.split(".", 1)[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_an_item_limit_inside_a_page_resumes_item_exact(api, name: str) -> None:
    limit = PAGE_SIZES[name] * 2 + 3   # the third page is cut after 3 items
    with sheaf.Client(api.base_url) as client:
        first = client.fetch_all(_path(name), max_items=limit)
        assert first.stop_reason == StopReason.ITEM_LIMIT and len(first) == limit
        assert _token_json(first.resume_token)["i"] == 3
        rest = client.fetch_all(_path(name), resume=first.resume_token)
    assert rest.stop_reason == StopReason.COMPLETE and rest.resume_token is None
    assert plain(first + rest) == expected_items(N)


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_a_failure_mid_list_resumes_from_the_page_that_failed(api, name: str) -> None:
    path = _path(name) + "&fail=3:1:500"   # the first request for page 3 answers 500
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        with pytest.raises(sheaf.HTTPError) as failed:
            client.fetch_all(path)
        error = failed.value
        assert error.status == 500 and len(error.items) == 2 * PAGE_SIZES[name]
        assert error.resume_token is not None
        rest = client.fetch_all(path, resume=error.resume_token)
    assert plain(error.items + rest) == expected_items(N)


@pytest.mark.parametrize("name", ["github", "drf-limit", "drf-cursor", "stripe", "fastapi-page", "jira"])
def test_a_page_budget_stops_where_more_pages_follow_and_resumes(api, name: str) -> None:
    with sheaf.Client(api.base_url) as client:
        parts = []
        token = None
        for _ in range(N):   # bounded: every run but the last delivers two whole pages
            items = client.fetch_all(_path(name), max_pages=2, resume=token)
            parts.extend(items)
            token = items.resume_token
            if token is None:
                assert items.stop_reason == StopReason.COMPLETE
                break
            assert items.stop_reason == StopReason.PAGE_BUDGET and len(items) == 2 * PAGE_SIZES[name]
    assert parts == expected_items(N)


def test_a_request_budget_counts_retries_and_keeps_whole_pages(api) -> None:
    # Page 2 fails twice before it answers: 1 + 3 requests reach page 2, and the budget of 4
    # leaves no request for page 3.
    path = f"/conv/drf-cursor?n={N}&fail=2:2:503"
    with sheaf.Client(api.base_url, max_attempts=4, retry_base=0.001) as client:
        items = client.fetch_all(path, max_requests=4)
        assert items.stop_reason == StopReason.REQUEST_BUDGET
        assert items == expected_items(100)
        assert stats(api)["requests"] == 4
        rest = client.fetch_all(path, resume=items.resume_token)
    assert items + rest == expected_items(N)


def test_a_deadline_ends_the_list_in_time_and_resumes(api) -> None:
    deadline = 0.5
    path = f"/conv/drf-cursor?n={N}&latency_ms=200"   # 5 pages, one at a time: about 1 s
    with sheaf.Client(api.base_url) as client:
        started = time.monotonic()
        with pytest.raises(sheaf.DeadlineError) as late:
            client.fetch_all(path, deadline=deadline)
        took = time.monotonic() - started
        assert took < 2 * deadline, f"the list ended {took:.2f} s after its start, deadline {deadline} s"
        assert isinstance(late.value, TimeoutError) and late.value.code == Result.DEADLINE
        assert 0 < len(late.value.items) < N
        rest = client.fetch_all(path, resume=late.value.resume_token)
    assert late.value.items + rest == expected_items(N)


def test_a_stream_left_early_resumes_after_the_snapshots_taken(api) -> None:
    # Long enough that the first snapshot taken cannot hold it all, however late it is taken (a
    # stream holds its fetching back while nothing is taken): the token then exists.
    n = N * 10
    path = f"/conv/github?n={n}"
    with sheaf.Client(api.base_url, concurrency=2) as client:
        taken = []
        stream = client.stream(path)
        for snapshot in stream:
            taken.extend(snapshot.items)
            if snapshot.page_count >= 3:
                break
        token = stream.resume_token
        assert token is not None
        rest = client.fetch_all(path, resume=token)
    assert taken + rest == expected_items(n)


def test_a_complete_list_has_no_token_and_a_token_of_another_list_is_refused(api) -> None:
    with sheaf.Client(api.base_url) as client:
        everything = client.fetch_all(f"/conv/github?n={N}")
        assert everything.stop_reason == StopReason.COMPLETE and everything.resume_token is None and everything.complete
        cut = client.fetch_all(f"/conv/github?n={N}", max_items=5)
        with pytest.raises(sheaf.UsageError, match="another list"):
            client.fetch_all(f"/conv/github?n={N + 1}", resume=cut.resume_token)
        with pytest.raises(sheaf.UsageError, match="another list"):
            client.fetch_all(f"/conv/github?n={N}", resume=cut.resume_token, paging="page:page")
        with pytest.raises(sheaf.UsageError, match="not a resume token"):
            client.fetch_all(f"/conv/github?n={N}", resume="sheaf-resume-1.bm90IGpzb24")


def test_a_token_holds_no_secret_and_the_resumed_list_sends_its_own(api) -> None:
    secret_key = "query-key-7c1f9a2b"
    secret_param = "signed-4b8e2d61"
    path = f"/conv/drf-limit?n={N}&signature={secret_param}"
    with sheaf.Client(api.base_url, auth=sheaf.ApiKey("api_key", secret_key, where="query")) as client:
        first = client.fetch_all(path, max_items=70)
        token = first.resume_token
        decoded = json.dumps(_token_json(token))
        assert secret_key not in token + decoded and secret_param not in token + decoded
        rest = client.fetch_all(path, resume=token)
    assert first + rest == expected_items(N)
    resumed = [entry["path"] for entry in stats(api)["log"] if "offset=50" in entry["path"]]
    assert len(resumed) == 2 and all(f"signature={secret_param}" in path and f"api_key={secret_key}" in path
                           for path in resumed)


def test_a_token_edited_to_another_origin_or_path_is_refused_before_any_request(api) -> None:
    path = f"/conv/drf-cursor?n={N}&signature=signed-5e7d2a90"
    with sheaf.Client(api.base_url, follow_cross_origin=True) as client:
        first = client.fetch_all(path, max_items=70)
        body = _token_json(first.resume_token)
        page = body["u"]
        assert page.startswith(api.base_url + "/conv/drf-cursor?")
        for url, refused in [(page.replace("127.0.0.1", "localhost"), "origin"),
                             (page.replace("/conv/drf-cursor?", "/conv/stripe?"), "path"),
                             (page.replace("/conv/drf-cursor?", "/conv/drf-cursor/../stripe?"), "path")]:
            edited = dict(body, u=url)
            token = "sheaf-resume-1." + base64.urlsafe_b64encode(json.dumps(edited).encode()).decode().rstrip("=")
            before = stats(api)["requests"]
            with pytest.raises(sheaf.UsageError, match=refused):
                client.fetch_all(path, resume=token)
            assert stats(api)["requests"] == before
        rest = client.fetch_all(path, resume=first.resume_token)   # the token as made still goes on
    assert first + rest == expected_items(N)
