"""sheaf.ListOptions: a list's run keywords (query, headers, budgets, resume) as one value, taken
by every list call as ``options=``. It runs a list exactly as the keywords do; a keyword given
both ways, or one the call has none for, is refused before anything is sent; and the public
methods the command line runs a list with (sync_key, fetch_partition_to) do what it needs."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from typing import Any, Dict, List

import pytest
from conftest import expected_items, stats

import sheaf
from sheaf import ListOptions, StopReason, UsageError
from sheaf import client as client_module

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=50, id="/id")
PATH = "/anchor?n=400"
RUN = dict(query={"latency_ms": 0}, headers={"Authorization": "Bearer list-token-7f"}, max_items=130,
           max_pages=20, max_requests=40, deadline=30.0)
FIELDS = ("query", "headers", "max_items", "max_pages", "max_requests", "deadline", "resume")
#: The list calls of Client: every public method with a `query` parameter (a single request
#: takes `params`), and the ones that have no other reason to exist.
LIST_CALLS = {"fetch_all", "stream", "fetch_to", "fetch_arrow", "stream_batches", "pager", "fetch_many",
              "stream_many", "fetch_each", "stream_each", "partitions", "fetch_partition", "stream_partition",
              "fetch_partition_arrow", "stream_partition_batches", "fetch_partition_to", "explain", "sync_key", "watch"}
ASYNC_LIST_CALLS = {"fetch_all", "stream", "partitions", "fetch_partition", "stream_partition", "fetch_many",
                    "stream_many", "fetch_each", "stream_each"}
NOWHERE = "http://127.0.0.1:9"   # nothing listens; the calls below fail before a request


def _sent(api) -> List[Dict[str, Any]]:
    return stats(api)["log"]


def _run_both_ways(api, call, *args, **extra):
    """`call` run with RUN as keywords and as options=, on fresh clients: both results and what
    the server saw each time (the paths asked for, and the Authorization headers)."""
    seen = []
    for how in ("keywords", "options"):
        api.state.reset()
        with sheaf.Client(api.base_url) as client:
            method = getattr(client, call)
            if how == "keywords":
                result = method(*args, **RUN, **extra)
            else:
                result = method(*args, options=ListOptions(**RUN), **extra)
        log = _sent(api)
        seen.append((result, {entry["path"] for entry in log}, {entry["authorization"] for entry in log}))
    return seen


# ---- the same run either way ----------------------------------------------------------------------

def test_options_run_a_list_exactly_as_the_keywords_do(api):
    (by_keywords, paths, authorization), (by_options, paths_too, authorization_too) = _run_both_ways(
        api, "fetch_all", PATH, **ANCHOR)
    assert by_keywords == expected_items(130) and by_options == by_keywords
    assert by_options.stop_reason == by_keywords.stop_reason == StopReason.ITEM_LIMIT
    assert by_options.resume_token == by_keywords.resume_token is not None
    # The same pages (the window sent after the item limit may differ), each with the query.
    first_pages = {f"/anchor?n=400&latency_ms=0&page={page}&per_page=50" for page in (1, 2, 3)}
    assert first_pages <= paths and first_pages <= paths_too
    assert all("latency_ms=0" in path for path in paths | paths_too)
    assert authorization == authorization_too == {"Bearer list-token-7f"}          # and the header


def test_a_resume_token_in_options_goes_on_where_the_keyword_would(api):
    with sheaf.Client(api.base_url) as client:
        first = client.fetch_all(PATH, max_items=75, **ANCHOR)
        by_keyword = client.fetch_all(PATH, resume=first.resume_token, **ANCHOR)
        by_options = client.fetch_all(PATH, options=ListOptions(resume=first.resume_token), **ANCHOR)
    assert by_keyword == by_options == expected_items(400, start=75)
    assert by_options.stop_reason == StopReason.COMPLETE


def test_keywords_and_options_may_each_give_some(api):
    with sheaf.Client(api.base_url) as client:
        whole = client.fetch_all(PATH, **RUN, **ANCHOR)
        mixed = client.fetch_all(PATH, max_items=130, query={"latency_ms": 0},
                                 options=ListOptions(headers=RUN["headers"], deadline=30.0), **ANCHOR)
    assert mixed == whole and mixed.resume_token == whole.resume_token


def test_streams_pagers_writers_and_arrow_take_options_as_keywords(api, tmp_path):
    with sheaf.Client(api.base_url) as client:
        by_keywords = [item for snapshot in client.stream(PATH, **RUN, **ANCHOR) for item in snapshot.items]
        by_options = [item for snapshot in client.stream(PATH, options=ListOptions(**RUN), **ANCHOR)
                      for item in snapshot.items]
        with client.pager(PATH, options=ListOptions(**RUN), **ANCHOR) as pager:
            while pager.more() is not None:
                pass
            paged = pager.items
        outs = []
        for name, how in (("keywords", RUN), ("options", {"options": ListOptions(**RUN)})):
            with open(tmp_path / name, "wb") as out:
                written = client.fetch_to(PATH, out, **how, **ANCHOR)
            outs.append((json.loads((tmp_path / name).read_text()), written.items, written.resume_token))
    assert by_keywords == by_options == paged == expected_items(130)
    assert outs[0] == outs[1] and outs[0][1] == 130


def test_groups_take_options_for_every_list(api):
    paths = ["/anchor?n=120", "/anchor?n=80"]
    with sheaf.Client(api.base_url) as client:
        by_keywords = client.fetch_many(paths, max_items=60, headers=RUN["headers"], **ANCHOR)
        by_options = client.fetch_many(paths, options=ListOptions(max_items=60, headers=RUN["headers"]), **ANCHOR)
    assert [outcome.items for outcome in by_options] == [outcome.items for outcome in by_keywords] == [
        expected_items(60), expected_items(60)]
    assert {entry["authorization"] for entry in _sent(api)} == {"Bearer list-token-7f"}


def test_partitions_take_options_as_keywords(api):
    with sheaf.Client(api.base_url) as client:
        plan = client.partitions(PATH, 3, options=ListOptions(query={"latency_ms": 0}), **ANCHOR)
        assert plan == client.partitions(PATH, 3, query={"latency_ms": 0}, **ANCHOR)
        by_keywords = [client.fetch_partition(partition, max_items=50) for partition in plan]
        by_options = [client.fetch_partition(partition, options=ListOptions(max_items=50)) for partition in plan]
    assert by_options == by_keywords
    assert [items.resume_token for items in by_options] == [items.resume_token for items in by_keywords]


def test_the_async_client_takes_options_as_the_blocking_one_does(api):
    async def both() -> Any:
        async with sheaf.AsyncClient(api.base_url) as client:
            by_keywords = await client.fetch_all(PATH, **RUN, **ANCHOR)
            by_options = await client.fetch_all(PATH, options=ListOptions(**RUN), **ANCHOR)
            streamed = [item async for snapshot in client.stream(PATH, options=ListOptions(**RUN), **ANCHOR)
                        for item in snapshot.items]
            many = await client.fetch_many(["/anchor?n=120"], options=ListOptions(max_items=10), **ANCHOR)
            return by_keywords, by_options, streamed, many

    by_keywords, by_options, streamed, many = asyncio.run(both())
    assert by_keywords == by_options == streamed == expected_items(130)
    assert by_options.resume_token == by_keywords.resume_token
    assert many[0].items == expected_items(10)


# ---- refused, before anything is sent ------------------------------------------------------------

def test_a_keyword_given_in_options_too_is_refused_naming_it(api):
    with sheaf.Client(api.base_url) as client:
        for same in (True, False):
            with pytest.raises(UsageError) as raised:
                client.fetch_all(PATH, max_items=10, deadline=5.0,
                                 options=ListOptions(max_items=10 if same else 20, deadline=5.0), **ANCHOR)
            assert str(raised.value) == ("fetch_all() got max_items, deadline both as a keyword and in options=: "
                                         "give each in one place")
    assert isinstance(raised.value, ValueError) and raised.value.code == sheaf.Result.INVALID_ARGUMENT
    assert _sent(api) == []


def test_options_the_call_has_no_keyword_for_are_refused(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(UsageError, match=r"^fetch_each\(\) takes no max_items, which options= sets$"):
            client.fetch_each("/anchor?n=3", "/anchor?n={/id}", options=ListOptions(max_items=1))
        with pytest.raises(UsageError, match=r"fetch_many\(\) takes no resume, which options= sets "
                                             r"\(its resume= is a value per path\)"):
            client.fetch_many([PATH], options=ListOptions(resume="token"))
        with pytest.raises(UsageError, match=r"partitions\(\) takes no max_pages, deadline"):
            client.partitions(PATH, 2, options=ListOptions(max_pages=3, deadline=1.0))
        with pytest.raises(UsageError, match=r"explain\(\) takes no headers"):
            client.explain(PATH, options=ListOptions(headers={"X": "y"}))
        with pytest.raises(UsageError, match=r"options must be a sheaf.ListOptions, not dict"):
            client.fetch_all(PATH, options={"max_items": 3})
    assert _sent(api) == []


def test_a_conflict_is_refused_by_the_asyncio_client_too():
    async def refused() -> List[str]:
        messages = []
        async with sheaf.AsyncClient(NOWHERE) as client:
            for call in (lambda: client.fetch_all("/x", max_items=1, options=ListOptions(max_items=2)),
                         lambda: client.fetch_partition('{"url": "/x"}', resume="a", options=ListOptions(resume="b")),
                         lambda: client.fetch_many(["/x"], deadline=1, options=ListOptions(deadline=2)),
                         lambda: client.fetch_each("/x", "/{/id}", options=ListOptions(max_items=2))):
                with pytest.raises(UsageError) as raised:
                    await call()
                messages.append(str(raised.value))
        return messages

    messages = asyncio.run(refused())
    assert [message.split("()")[1].split(":")[0].strip() for message in messages] == [
        "got max_items both as a keyword and in options=", "got resume both as a keyword and in options=",
        "got deadline both as a keyword and in options=", "takes no max_items, which options= sets"]


# ---- every list call takes options ----------------------------------------------------------------

def _list_calls(cls: type) -> Dict[str, Any]:
    return {name: member for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_") and "query" in inspect.signature(member).parameters}


def _arguments_for(function: Any) -> List[Any]:
    """Placeholders for the required positional parameters of a bound method (never used: the
    call is refused first)."""
    placeholders = {"path": "/x", "parent_path": "/x", "paths": ["/x"], "templates": "/{/id}", "n": 2, "out": -1,
                    "partition": '{"url": "/x"}'}
    return [placeholders[parameter.name] for parameter in inspect.signature(function).parameters.values()
            if parameter.default is parameter.empty and parameter.kind is parameter.POSITIONAL_OR_KEYWORD]


def test_every_list_call_of_the_client_takes_options_keyword_only():
    calls = _list_calls(sheaf.Client)
    assert set(calls) == LIST_CALLS
    for name, method in calls.items():
        parameters = inspect.signature(method).parameters
        options = parameters["options"]
        assert options.kind is options.KEYWORD_ONLY and options.default is None, name
        for field in FIELDS:
            if field in parameters:   # each run keyword it has: keyword-only, None when not given
                assert parameters[field].kind is parameters[field].KEYWORD_ONLY and parameters[field].default is None


def test_every_list_call_of_the_client_resolves_options_in_the_one_place():
    # The conflict is found before the client is touched (this one reaches no server): each
    # call's options go through the same resolution, whatever the method.
    with sheaf.Client(NOWHERE) as client:
        for name in sorted(LIST_CALLS):
            method = getattr(client, name)
            with pytest.raises(UsageError, match=rf"^{name}\(\) got query both as a keyword and in options="):
                method(*_arguments_for(method), query={"a": "1"}, options=ListOptions(query={"a": "2"}))


def test_every_list_call_of_the_async_client_takes_options():
    for name in ASYNC_LIST_CALLS:
        options = inspect.signature(getattr(sheaf.AsyncClient, name)).parameters["options"]
        assert options.kind is options.KEYWORD_ONLY and options.default is None, name

    async def refused() -> List[str]:
        names = []
        async with sheaf.AsyncClient(NOWHERE) as client:
            for name in sorted(ASYNC_LIST_CALLS):
                method = getattr(client, name)
                with pytest.raises(UsageError, match=r"got query both as a keyword and in options="):
                    made = method(*_arguments_for(method), query={"a": "1"},
                                  options=ListOptions(query={"a": "2"}))
                    if inspect.isawaitable(made):
                        await made
                names.append(name)
        return names

    assert set(asyncio.run(refused())) == ASYNC_LIST_CALLS


def test_options_are_resolved_once_per_call_not_per_page(api, monkeypatch):
    resolved = []
    resolve = client_module._Takes.resolve
    monkeypatch.setattr(client_module._Takes, "resolve",
                        lambda takes, options, keywords: resolved.append(takes.call) or resolve(takes, options, keywords))
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=1000", options=ListOptions(max_pages=20), **ANCHOR)   # 20 pages
        snapshots = list(client.stream("/anchor?n=1000", max_items=600, **ANCHOR))
    assert len(items) == 1000 and len(snapshots) > 1
    assert resolved == ["fetch_all", "stream"]


# ---- the value itself -----------------------------------------------------------------------------

def test_list_options_is_a_frozen_value_whose_repr_hides_header_and_query_values():
    options = ListOptions(headers={"Authorization": "Bearer s3cret"}, query=[("api_key", "k3y")], max_items=5)
    assert [field.name for field in dataclasses.fields(ListOptions)] == list(FIELDS)
    assert ListOptions() == ListOptions(None, None, None, None, None, None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_items = 6   # type: ignore[misc]
    assert dataclasses.replace(options, max_items=6).max_items == 6 and options.max_items == 5
    assert repr(options) == "ListOptions(query=<api_key>, headers=<Authorization>, max_items=5)"
    assert "s3cret" not in repr(options) and "k3y" not in repr(options)
    assert repr(ListOptions()) == "ListOptions()"


# ---- what the command line runs a list with --------------------------------------------------------

def test_sync_key_is_the_list_a_run_reports_and_sends_nothing(api):
    path = "/anchor?n=60"
    with sheaf.Client(api.base_url) as client:
        key = client.sync_key(path, until=("/id", -1), max_items=10, **ANCHOR)
        assert key == client.sync_key(path, options=ListOptions(max_items=10), until=("/id", -1), **ANCHOR)
        assert client.sync_key(path, **ANCHOR) is None   # it does not sync
        assert _sent(api) == []
        items = client.fetch_all(path, until=("/id", -1), **ANCHOR)
    assert key == items.sync_state["list"] and key.startswith(f"{api.base_url}{path}")


def test_fetch_partition_to_writes_what_fetch_partition_returns(api, tmp_path):
    with sheaf.Client(api.base_url) as client:
        plan = client.partitions(PATH, 3, **ANCHOR)
        for partition in plan:
            with open(tmp_path / "out.json", "wb") as out:
                written = client.fetch_partition_to(partition, out, options=ListOptions(max_items=100))
            items = client.fetch_partition(partition, max_items=100)
            assert json.loads((tmp_path / "out.json").read_text()) == list(items)
            assert (written.items, written.stop_reason, written.resume_token) == (
                len(items), items.stop_reason, items.resume_token)
