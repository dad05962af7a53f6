"""Groups: many lists as one job (Client.fetch_many, fetch_each, their streams and the asyncio
client), against the test server's organisation (Tests/server/org_api.py): /orgs/<org>/repos
names repositories, /repos/<org>/repo-NNN/issues holds 0 to 12 pages of each in one of three
conventions, and /_orgs/<org>/issues is the whole answer, known without Sheaf.

    SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 python3 -m pytest bindings/python/tests/test_groups.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
import urllib.request
from collections import defaultdict
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import expected_items, settled_log, stats

import sheaf

TEMPLATE = "/repos/{/full_name}/issues"


def org_issues(server, org: str, repos: int) -> Dict[str, List[Dict[str, Any]]]:
    """Every issue of the org's first `repos` repositories, by repository, newest first, as the
    server itself accounts for them."""
    with urllib.request.urlopen(f"{server.base_url}/_orgs/{org}/issues?repos={repos}", timeout=10) as response:
        answer = json.load(response)
    by_repository: Dict[str, List[Dict[str, Any]]] = {f"{org}/repo-{i:03d}": [] for i in range(repos)}
    for issue in answer["issues"]:
        by_repository[issue["repository"]].append(issue)
    for issues in by_repository.values():
        issues.sort(key=lambda issue: issue["updated_at"], reverse=True)
    return by_repository


def post(server, path: str) -> None:
    request = urllib.request.Request(f"{server.base_url}{path}", data=b"", method="POST")
    urllib.request.urlopen(request, timeout=10).close()


def issue_requests(server, repository: str) -> List[str]:
    """The requests the server saw for one repository's issues, in order."""
    return [path for path in (entry["path"] for entry in stats(server)["log"]) if f"/repos/{repository}/issues" in path]


# ---- a fan-out gives every child's items exactly once ---------------------------------------------

def test_a_fan_out_gives_each_child_its_items_exactly_once_tagged_with_its_repository(api):
    expected = org_issues(api, "fan", 60)
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_each("/orgs/fan/repos?repos=60", TEMPLATE)
    assert result.ok and result.error is None and not result.failed
    parent, children = result[0], result[1:]
    assert parent.parent and parent.items == [] and parent.tag == "/orgs/fan/repos?repos=60"
    assert sorted(child.tag for child in children) == sorted(expected)   # every child once
    for child in children:
        assert child.items == expected[child.tag], child.tag
        assert child.url == f"{api.base_url}/repos/{child.tag}/issues" and child.resume_token is None
    assert [outcome.index for outcome in result] == list(range(len(result)))


def test_an_item_that_repeats_on_the_next_page_is_fetched_once(api):
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_each("/orgs/again/repos?repos=70&repeat=1", TEMPLATE)
    tags = [child.tag for child in result[1:]]
    assert len(tags) == len(set(tags)) == 70


def test_ordered_fan_out_delivers_children_one_after_another_in_the_parents_order(api):
    with sheaf.Client(api.base_url) as client:
        deltas = list(client.stream_each("/orgs/inorder/repos?repos=40", TEMPLATE, ordered=True))
    children = [delta for delta in deltas if not delta.parent]
    seen: List[str] = []
    for delta in children:
        if not seen or seen[-1] != delta.tag:
            assert delta.tag not in seen, f"{delta.tag} came back after another child"
            seen.append(delta.tag)
    assert seen == [f"inorder/repo-{i:03d}" for i in range(40)]
    assert all(delta.items == [] for delta in deltas if delta.finished)


def test_a_missing_template_value_skips_the_item_or_fails_the_parent(api):
    with sheaf.Client(api.base_url) as client:
        skipped = client.fetch_each("/orgs/holes/repos?repos=60&missing=3", TEMPLATE)
        assert len(skipped) == 1 + 40   # every third repository has no full_name
        with pytest.raises(sheaf.PartialError) as caught:
            client.fetch_each("/orgs/holes/repos?repos=60&missing=3", TEMPLATE, missing="fail")
    parent = caught.value.result[0]
    # Its error is the bad page, naming the pointer (it was CANCELLED now and then before the
    # parent's failure was set on its way out).
    assert parent.parent and not parent.ok
    assert isinstance(parent.error, sheaf.DecodingError) and parent.error.code == sheaf.Result.BAD_PAGE, parent.error
    assert "/full_name" in str(parent.error)


def test_a_missing_template_value_on_the_parents_last_page_fails_it_too(api):
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_each("/orgs/holes/repos?repos=30&missing=3", TEMPLATE, missing="fail", check=False)
    assert not result[0].ok


# ---- many lists: tags, failures that leave the others whole ------------------------------------------

def test_many_lists_come_back_in_order_with_their_tags(api):
    expected = org_issues(api, "many", 5)
    paths = [f"/repos/many/repo-{i:03d}/issues" for i in range(5)]
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_many(paths, tags=["a", "b", "c", "d", "e"])
    assert [outcome.tag for outcome in result] == ["a", "b", "c", "d", "e"]
    assert [outcome.url for outcome in result] == paths
    assert [outcome.items for outcome in result] == [expected[f"many/repo-{i:03d}"] for i in range(5)]
    assert result.by_tag()["c"].items == expected["many/repo-002"]


def test_a_404_and_a_500_after_retries_fail_their_lists_while_the_others_finish(api):
    expected = org_issues(api, "broken", 4)
    paths = ["/repos/broken/repo-000/issues", "/nowhere", "/repos/broken/repo-001/issues",
             "/repos/broken/repo-001/issues?fail=2:99:500", "/repos/broken/repo-003/issues"]
    with sheaf.Client(api.base_url, max_attempts=2, retry_base=0.01) as client:
        with pytest.raises(sheaf.PartialError) as caught:
            client.fetch_many(paths)
        result = client.fetch_many(paths, check=False)
    error = caught.value
    assert error.code == sheaf.Result.PARTIAL and "2 of 5" in error.message and error.result is not None
    for group in (error.result, result):
        assert not group.ok and [outcome.index for outcome in group.failed] == [1, 3]
        assert [outcome.items for outcome in group.succeeded] == [expected["broken/repo-000"], expected["broken/repo-001"],
                                                                  expected["broken/repo-003"]]
        missing, broken = group.failed
        assert isinstance(missing.error, sheaf.HTTPError) and missing.error.status == 404
        assert isinstance(broken.error, sheaf.HTTPError) and broken.error.status == 500
        assert broken.items == expected["broken/repo-001"][:10] and broken.error.items == broken.items
        assert broken.resume_token is not None and broken.error.resume_token == broken.resume_token


def test_fail_fast_ends_the_group_with_the_first_failure_and_stops_the_others(api):
    post(api, "/_orgs/fast/options?latency_ms=30")
    paths = ["/nowhere"] + [f"/repos/fast/repo-{i:03d}/issues" for i in range(20)]
    caught: List[BaseException] = []

    def fetch() -> None:
        try:
            client.fetch_many(paths, fail_fast=True)
        except BaseException as error:   # noqa: B902 - handed to the test's thread
            caught.append(error)

    with sheaf.Client(api.base_url, concurrency=2, adaptive_window=False) as client:
        # On a thread with a deadline: about one run in a hundred, the lists a fail-fast group
        # cancelled while they waited for the window never end (a library bug, see the pygroup
        # report), and the test must say so rather than hang the suite.
        started = time.monotonic()
        fetching = threading.Thread(target=fetch, daemon=True)
        fetching.start()
        fetching.join(timeout=20)
        took = time.monotonic() - started
        assert not fetching.is_alive(), "the fail-fast group did not end (lists cancelled while waiting never ended)"
    error = caught[0]
    assert isinstance(error, sheaf.HTTPError), error
    result = error.result
    assert error.status == 404 and not result.ok and result[0].error.status == 404
    assert any(isinstance(outcome.error, sheaf.StoppedError) for outcome in result[1:])
    assert took < 2.0   # 20 lists at 2 in flight and 30 ms a page would take longer
    settled_log(api)


def test_the_lists_of_a_group_share_the_origins_window(api):
    org = "budget"
    settled_log(api)   # an earlier test's abandoned requests leave the server before the count starts
    urllib.request.urlopen(f"{api.base_url}/_reset", timeout=10).close()
    post(api, f"/_orgs/{org}/options?latency_ms=20")
    most = 0
    with sheaf.Client(api.base_url, concurrency=8, adaptive_window=False) as client:
        stream = client.stream_each(f"/orgs/{org}/repos?repos=100", TEMPLATE)   # 100 lists, 8 at once
        for number, delta in enumerate(stream):
            if number % 50 == 0:
                most = stats(api)["max_in_flight"]
                if most > 8:
                    break   # the budget is already broken: no need to wait for the rest
    settled_log(api)   # the requests abandoned at the break leave the server before the next test
    assert most <= 8, most
    assert stream.result is not None and len(stream.result) == 101 and stream.result.ok
    assert stats(api)["max_in_flight"] <= 8


def test_a_fan_out_at_a_server_refusing_past_its_capacity_learns_it_and_loses_nothing(api):
    # The issue's server: 20 ms a request, a 429 to every request past 8 in flight. 100 children
    # started together on the default adaptive window (it starts at 8 and grows): the refusals
    # take it back to what the server takes, each refused page is asked for again, every child
    # is whole, and refusals stay few once the window has learnt the server's 8.
    org = "gated"
    expected = org_issues(api, org, 100)
    settled_log(api)
    urllib.request.urlopen(f"{api.base_url}/_reset", timeout=10).close()
    post(api, f"/_orgs/{org}/options?latency_ms=20&limit=8")
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_each(f"/orgs/{org}/repos?repos=100", TEMPLATE)
    seen = stats(api)
    assert result.ok, result.error
    by_tag = {outcome.tag: outcome.items for outcome in result[1:]}
    assert by_tag == {name: expected[name] for name in by_tag} and len(by_tag) == 100
    pages = seen["requests"] - seen["refused"]
    assert seen["refused"] >= 1, seen   # the window did reach past 8: the test saw the server refuse
    # A slow start's overshoot (the window quadruples a round trip: 8 to 32, 24 past the server's
    # 8), retries that meet the server still full, and a few tries past 8 afterwards, each
    # waiting longer: 28 to 39 here, 57 of 578 pages in one CI run. A window that never learnt
    # would have most of its requests refused.
    assert seen["refused"] <= 24 + 0.10 * pages, (seen["refused"], pages)


def test_a_window_of_one_holds_for_every_list_of_a_group(api):
    post(api, "/_orgs/narrow/options?latency_ms=5")
    with sheaf.Client(api.base_url, concurrency=1, adaptive_window=False) as client:
        assert client.fetch_each("/orgs/narrow/repos?repos=12", TEMPLATE).ok
    assert stats(api)["max_in_flight"] == 1


# ---- streams stop when left ------------------------------------------------------------------------

def _requests_settle(server) -> int:
    """The server's request count once the requests already sent have arrived."""
    time.sleep(0.1)
    return stats(server)["requests"]


def test_breaking_out_of_a_group_stream_stops_the_fetching(api):
    post(api, "/_orgs/left/options?latency_ms=20")
    with sheaf.Client(api.base_url) as client:
        stream = client.stream_each("/orgs/left/repos", TEMPLATE)
        for delta in stream:
            if delta.items:
                break
        after_break = _requests_settle(api)
        time.sleep(0.3)
        assert stats(api)["requests"] == after_break   # nothing more was asked for
        assert after_break < 300 and stream.result is None
        assert list(stream) == []   # a stopped stream yields nothing more


def test_a_group_stream_dropped_unfinished_is_stopped_by_the_garbage_collector(api):
    post(api, "/_orgs/dropped/options?latency_ms=20")
    with sheaf.Client(api.base_url) as client:
        stream = client.stream_each("/orgs/dropped/repos", TEMPLATE)
        next(stream)
        del stream
        gc.collect()
        after_drop = _requests_settle(api)
        time.sleep(0.3)
        assert stats(api)["requests"] == after_drop


def test_a_group_stream_says_how_each_list_ended(api):
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        stream = client.stream_many(["/repos/said/repo-000/issues", "/nowhere"], check=False)
        deltas = list(stream)
    last = {delta.index: delta for delta in deltas if delta.finished}
    assert last[0].error is None and isinstance(last[1].error, sheaf.HTTPError) and last[1].resume_token
    assert stream.result is not None and [outcome.ok for outcome in stream.result] == [True, False]
    assert sum(len(delta.items) for delta in deltas if delta.index == 0) == len(org_issues(api, "said", 1)["said/repo-000"])


# ---- resume ------------------------------------------------------------------------------------------

def test_the_failed_lists_are_fetched_again_from_where_they_stopped_and_only_they(api):
    expected = org_issues(api, "again2", 3)
    # Page 2 of repo-000 answers 500 twice: the first run's two attempts fail, the next one passes.
    flaky = "/repos/again2/repo-000/issues?fail=2:2:500"
    paths = [flaky, "/repos/again2/repo-001/issues", "/repos/again2/repo-002/issues"]
    with sheaf.Client(api.base_url, max_attempts=2, retry_base=0.01) as client:
        first = client.fetch_many(paths, tags=["zero", "one", "two"], check=False)
        assert [outcome.tag for outcome in first.failed] == ["zero"]
        asked_before = len(settled_log(api))   # (a reset would forget the failures injected)
        second = client.fetch_many(first.failed)
    assert [outcome.tag for outcome in second] == ["zero"] and second.ok
    assert first[0].items + second[0].items == expected["again2/repo-000"]
    asked = settled_log(api)[asked_before:]
    assert asked and all("repo-000" in path for path in asked)   # the lists that succeeded are not asked again
    pages = [int(parse_qs(urlsplit(path).query).get("page", ["1"])[0]) for path in asked]
    assert 1 not in pages   # it went on from page 2


def test_a_failed_fan_out_child_can_be_fetched_again_by_its_url(api):
    with sheaf.Client(api.base_url) as client:
        result = client.fetch_each("/orgs/redo/repos?repos=5", TEMPLATE)
        outcome = result.by_tag()["redo/repo-003"]
        again = client.fetch_many([outcome])
    assert again[0].tag == "redo/repo-003" and again[0].items == outcome.items


# ---- asyncio -------------------------------------------------------------------------------------------

def test_asyncio_streams_a_fan_out_without_blocking_the_loop(api):
    expected = org_issues(api, "loop", 30)
    post(api, "/_orgs/loop/options?latency_ms=10")   # long enough for the loop to tick in between

    async def main() -> Dict[str, List[Any]]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticker = asyncio.ensure_future(tick())
        items: Dict[str, List[Any]] = defaultdict(list)
        async with sheaf.AsyncClient(api.base_url) as client:
            async for delta in client.stream_each("/orgs/loop/repos?repos=30", TEMPLATE):
                if not delta.parent:
                    items[delta.tag].extend(delta.items)
            result = await client.fetch_many(["/repos/loop/repo-001/issues", "/nowhere"], check=False)
        ticker.cancel()
        assert ticks > 5
        assert [outcome.ok for outcome in result] == [True, False]
        assert result[0].items == expected["loop/repo-001"]
        return items

    items = asyncio.run(main())
    assert all(items.get(tag, []) == issues for tag, issues in expected.items())
    assert set(items) <= set(expected)


def test_asyncio_leaving_the_loop_stops_the_group(api):
    post(api, "/_orgs/aleft/options?latency_ms=20")

    async def main() -> None:
        async with sheaf.AsyncClient(api.base_url) as client:
            stream = client.stream_each("/orgs/aleft/repos", TEMPLATE)
            async for delta in stream:
                if delta.items:
                    break
            after_break = _requests_settle(api)
            await asyncio.sleep(0.3)
            assert stats(api)["requests"] == after_break

    asyncio.run(main())


# ---- misuse --------------------------------------------------------------------------------------------

def test_misuse_is_refused_before_anything_is_fetched(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError):
            client.fetch_many("/one/path")
        with pytest.raises(sheaf.UsageError):
            client.fetch_many(["/a", "/b"], tags=["only one"])
        with pytest.raises(sheaf.UsageError):
            client.fetch_each("/orgs/x/repos", "/repos/no-placeholder")
        with pytest.raises(sheaf.UsageError):
            client.fetch_each("/orgs/x/repos", TEMPLATE, missing="maybe")
        with pytest.raises(sheaf.UsageError):
            client.fetch_each("/orgs/x/repos", "/repos/{/full_name/issues")
    assert stats(api)["requests"] == 0
    assert sheaf._live_runs() == 0


def test_the_failed_lists_handed_back_run_again_even_one_whose_token_points_to_another_origin(api, other_api):
    # Issue 47: a list refused on a next link to another origin got a token pointing there, and
    # handing the failed lists back was refused for the whole group, nothing fetched.
    away = f"/anchor?n=60&per_page=10&next_base={other_api.base_url}"
    flaky = "/anchor?n=60&per_page=10&fail=3:1:500"   # page 3 fails once
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        first = client.fetch_many([away, flaky, "/anchor?n=30&per_page=10"], check=False)
        assert [outcome.ok for outcome in first.lists] == [False, False, True]
        assert isinstance(first.lists[0].error, sheaf.PolicyError)
        again = client.fetch_many(first.failed, check=False)
    assert [outcome.ok for outcome in again.lists] == [False, True], [o.error for o in again.lists]
    assert again.lists[0].resume_token == first.lists[0].resume_token, "it keeps the token it was given"
    assert again.lists[1].items == expected_items(60)[len(first.lists[1].items):], "the other goes on exactly"
    assert stats(other_api)["requests"] == 0


def test_a_middle_level_of_a_fan_out_is_a_parent_with_the_templates_below_it(api):
    # Two levels: repositories, then each repository's issues (failing: every middle list fails
    # on its page one), then a list per issue. A middle list is a parent too, and says which
    # templates fetch its children again.
    templates = ["/repos/{/full_name}/issues?fail=1:1:500", "/anchor?n=2&issue={/id}"]
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        with pytest.raises(sheaf.Error) as caught:
            client.fetch_each("/orgs/middle/repos?repos=3", templates)
    result = caught.value.result
    assert result[0].parent and result[0].templates == tuple(templates)
    middles = result[1:]
    assert len(middles) == 3 and all(outcome.parent and not outcome.ok for outcome in middles), middles
    assert all(outcome.templates == (templates[1],) for outcome in middles)
    assert all(outcome.url and "/repos/middle/repo-" in outcome.url for outcome in middles)
