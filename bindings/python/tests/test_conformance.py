"""The same behaviours, whichever way Python runs a list: fetch_all (also with headers or a Python
transport of its own), stream, fetch_to, pager,
fetch_arrow, stream_batches (when pyarrow is installed), fetch_partition (the list as one partition), and
AsyncClient's fetch_all and stream. (Tests/c/conformance.c holds the C modes to the same.)

- every item arrives, in order, once, and the list ends COMPLETE;
- a consumer that stops at its first delivery (a break, a pager no longer asked) stops the list,
  with the object still held: nothing reaches the server afterwards;
- each budget ends without an error, with its stop reason, and its token completes the list;
- a failure mid-list raises with the items before it, and its token completes the list;
- a cancel racing the list's end may win, but a list that ends without an error is whole;
- a cursor list split by its range filter (Tests/server/ranges.py, the stripe preset) arrives
  whole, in the list's order, once, and a page budget's token goes on exactly;
- a spent quota stops the list with RateLimitedError before the server refuses a request, its
  items in order and a token;
- with a response cache, a second run is answered 304 page by page with the same items;
- a detected list's one full page that names no next page, total or cursor ends UNCONFIRMED.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import sheaf
from conftest import stats

ANCHOR = dict(preset="anchor")


class Run:
    """What one mode made of one list: the items its consumer received, in order, and how it ended."""

    def __init__(self) -> None:
        self.items: List[Any] = []
        self.stop_reason: Optional[sheaf.StopReason] = None
        self.error: Optional[sheaf.Error] = None
        self.token: Optional[str] = None
        self.held: Any = None           # the object a caller would still hold after stopping
        self.stoppable: Any = None      # what cancel() is called on, once the run has started
        self.started = threading.Event()


def _fetch_all(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    run.started.set()
    items = client.fetch_all(path, **{**ANCHOR, **options})
    run.items, run.stop_reason, run.token = list(items), items.stop_reason, items.resume_token


def _own_headers(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    """fetch_all of a list with headers of its own: the library runs it on a core client of its
    own, sending through its client's window."""
    _fetch_all(client, path, run, stop_at_first, headers={"X-Conformance": "own"}, **options)


def _own_transport(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, attempts: int = 4,
                   **options: Any) -> None:
    """fetch_all on a client of `client`'s URL with a Python transport (test_transport's
    BlockingTransport, an http.client GET per request), which keeps no time of its own: the
    library times each request."""
    from test_transport import BlockingTransport

    with sheaf.Client(client.base_url, transport=BlockingTransport(), max_attempts=attempts, **_ASYNC_OPTIONS) as own:
        _fetch_all(own, path, run, stop_at_first, **options)


def _fetch_partition(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    """The list planned as one partition (the whole of it), then that partition fetched."""
    described = {name: options.pop(name) for name in ("preset", "split") if name in options}
    (partition,) = client.partitions(path, 1, **{**ANCHOR, **described})
    run.started.set()
    items = client.fetch_partition(partition, **options)
    run.items, run.stop_reason, run.token = list(items), items.stop_reason, items.resume_token


def _stream(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    stream = run.held = run.stoppable = client.stream(path, **{**ANCHOR, **options})
    run.started.set()
    for snapshot in stream:
        run.items += snapshot.items
        if stop_at_first:
            break
    run.stop_reason, run.token = stream.stop_reason, stream.resume_token


def _fetch_to(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, tmp_path: Any = None,
              **options: Any) -> None:
    target = tmp_path / f"items-{time.monotonic_ns()}.jsonl"
    run.started.set()
    try:
        with open(target, "wb") as out:
            written = client.fetch_to(path, out, format="jsonl", **{**ANCHOR, **options})
        run.stop_reason, run.token = written.stop_reason, written.resume_token
    finally:
        run.items = [json.loads(line) for line in target.read_bytes().splitlines()]


def _pager(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    pager = run.held = run.stoppable = client.pager(path, look_ahead=1, **{**ANCHOR, **options})
    run.started.set()
    try:
        for page in pager:
            run.items += page
            if stop_at_first:
                return   # it stops asking; the pager stays open, held
        run.stop_reason = pager.stop_reason
    finally:
        run.token = pager.resume_token
        if not stop_at_first:
            pager.close()


def _table_outcome(table: Any) -> Tuple[Optional[sheaf.StopReason], Optional[str]]:
    """The stop reason and resume token a table from fetch_arrow carries in its schema's metadata."""
    metadata = table.schema.metadata or {}
    reason = metadata.get(b"sheaf.stop_reason")
    token = metadata.get(b"sheaf.resume_token")
    return (sheaf.StopReason[reason.decode()] if reason else None), (token.decode() if token else None)


def _fetch_arrow(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    run.started.set()
    table = client.fetch_arrow(path, **{**ANCHOR, **options})
    run.items = table.to_pylist()
    run.stop_reason, run.token = _table_outcome(table)


def _stream_batches(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    stream = run.held = run.stoppable = client.stream_batches(path, **{**ANCHOR, **options})
    run.started.set()
    for batch in stream:
        run.items += batch.to_pylist()
        if stop_at_first:
            break
    run.stop_reason, run.token = stream.stop_reason, stream.resume_token


def _aio_fetch_all(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, attempts: int = 4,
                   **options: Any) -> None:
    async def main() -> None:
        async with sheaf.AsyncClient(client.base_url, max_attempts=attempts, **_ASYNC_OPTIONS) as aclient:
            run.started.set()
            items = await aclient.fetch_all(path, **{**ANCHOR, **options})
            run.items, run.stop_reason, run.token = list(items), items.stop_reason, items.resume_token
    asyncio.run(main())


def _aio_stream(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, attempts: int = 4,
                **options: Any) -> None:
    async def main() -> None:
        async with sheaf.AsyncClient(client.base_url, max_attempts=attempts, **_ASYNC_OPTIONS) as aclient:
            stream = run.held = aclient.stream(path, **{**ANCHOR, **options})
            run.started.set()
            try:
                async for snapshot in stream:
                    run.items += snapshot.items
                    if stop_at_first:
                        break
            finally:
                run.stop_reason, run.token = stream.stop_reason, stream.resume_token
            if stop_at_first:   # the stop holds while the loop still runs and the stream is referenced
                await asyncio.sleep(0.45)
    asyncio.run(main())


def _group_outcome(run: Run, outcome: sheaf.ListOutcome) -> None:
    """How a group's one list ended, as the other modes say it (its error raised, as theirs is)."""
    run.stop_reason, run.token = outcome.stop_reason, outcome.resume_token
    if outcome.error is not None:
        raise outcome.error


def _one_of_many(options: Dict[str, Any]) -> Dict[str, Any]:
    """A list's options as a group of one takes them: its resume token among the group's."""
    if "resume" in options:
        options = dict(options, resume=[options["resume"]])
    return options


def _fetch_many(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    """The list as the one list of a group (Client.fetch_many)."""
    run.started.set()
    (outcome,) = client.fetch_many([path], **{**ANCHOR, **_one_of_many(options)}, check=False)
    run.items = list(outcome.items)
    _group_outcome(run, outcome)


def _stream_many(client: sheaf.Client, path: str, run: Run, stop_at_first: bool, **options: Any) -> None:
    """The list as the one list of a group streamed (Client.stream_many)."""
    stream = run.held = run.stoppable = client.stream_many([path], **{**ANCHOR, **_one_of_many(options)}, check=False)
    run.started.set()
    for delta in stream:
        run.items += delta.items
        if stop_at_first and delta.items:
            return
    _group_outcome(run, stream.result[0])


MODES: Dict[str, Callable[..., None]] = {
    "fetch_all": _fetch_all, "own_headers": _own_headers, "own_transport": _own_transport, "fetch_partition": _fetch_partition,
    "stream": _stream, "fetch_to": _fetch_to, "pager": _pager,
    "aio.fetch_all": _aio_fetch_all, "aio.stream": _aio_stream, "fetch_many": _fetch_many, "stream_many": _stream_many,
}
try:
    import pyarrow  # noqa: F401  (the Arrow modes run only where the optional extra is installed)
    MODES.update({"fetch_arrow": _fetch_arrow, "stream_batches": _stream_batches})
except ImportError:
    pass
_ASYNC_OPTIONS = dict(concurrency=4, adaptive_window=False)


def run_mode(mode: str, client: sheaf.Client, path: str, tmp_path: Any, stop_at_first: bool = False,
             attempts: int = 4, **options: Any) -> Run:
    """Runs `path` in `mode` (an async mode, or own_transport, on a client of its own of `client`'s
    URL, with `attempts`)."""
    run = Run()
    extra: Dict[str, Any] = {"tmp_path": tmp_path} if mode == "fetch_to" else {}
    if mode.startswith("aio.") or mode == "own_transport":
        extra["attempts"] = attempts
    try:
        MODES[mode](client, path, run, stop_at_first, **extra, **options)
    except sheaf.Error as error:
        run.error = error
        run.token = error.resume_token
        if mode in ("fetch_all", "own_headers", "own_transport", "fetch_partition", "aio.fetch_all"):   # the others received their items already
            run.items = list(error.items)
        elif mode == "fetch_arrow":
            run.items = error.items.to_pylist()
    return run


def ids(items: List[Any]) -> List[int]:
    return [item["id"] for item in items]


@pytest.fixture
def client(api):
    with sheaf.Client(api.base_url, **_ASYNC_OPTIONS) as client:
        yield client


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n, query", [(997, ""), (500, "&nototal=1"), (0, "")])
def test_every_item_arrives_in_order_once_and_the_list_ends_complete(mode, n, query, client, tmp_path):
    run = run_mode(mode, client, f"/anchor?n={n}&per_page=10{query}", tmp_path)
    assert run.error is None
    assert ids(run.items) == list(range(n))
    assert run.stop_reason == sheaf.StopReason.COMPLETE and run.token is None
    assert sheaf._live_runs() == 0


@pytest.mark.parametrize("mode", ["stream", "pager", "aio.stream"])
def test_a_consumer_that_stops_at_its_first_delivery_stops_the_list_while_still_held(mode, client, api, tmp_path):
    run = run_mode(mode, client, "/anchor?n=10000&per_page=10&latency_ms=100", tmp_path, stop_at_first=True)
    assert run.held is not None   # still referenced here
    time.sleep(0.05)   # a request already on the wire at the stop lands
    at_the_stop = stats(api)["requests"]
    time.sleep(0.4)    # four latencies: a list still running would have sent more
    assert stats(api)["requests"] == at_the_stop, f"{mode}: requests went on after the stop"
    assert ids(run.items) == list(range(len(run.items))) and len(run.items) >= 10
    if mode == "pager":
        run.held.close()
    assert sheaf._live_runs() == 0


BUDGETS = [(dict(max_items=27), sheaf.StopReason.ITEM_LIMIT, 27),
           (dict(max_pages=3), sheaf.StopReason.PAGE_BUDGET, 30),
           (dict(max_requests=2), sheaf.StopReason.REQUEST_BUDGET, 20)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("budget, reason, count", BUDGETS, ids=["items", "pages", "requests"])
def test_each_budget_ends_without_an_error_with_its_reason_and_its_token_completes_the_list(
        mode, budget, reason, count, client, tmp_path):
    path = "/anchor?n=200&per_page=10"
    run = run_mode(mode, client, path, tmp_path, **budget)
    assert run.error is None
    assert run.stop_reason == reason
    assert ids(run.items) == list(range(count))
    rest = run_mode(mode, client, path, tmp_path, resume=run.token)
    assert rest.error is None and rest.stop_reason == sheaf.StopReason.COMPLETE
    assert ids(run.items + rest.items) == list(range(200))


@pytest.mark.parametrize("mode", MODES)
def test_a_failure_mid_list_keeps_the_items_before_it_and_its_token_completes_the_list(mode, api, tmp_path):
    path = "/anchor?n=300&per_page=10&fail=5:1:500"
    with sheaf.Client(api.base_url, max_attempts=1, **_ASYNC_OPTIONS) as client:
        run = run_mode(mode, client, path, tmp_path, attempts=1)
        assert isinstance(run.error, sheaf.HTTPError), mode
        assert ids(run.items) == list(range(40))   # pages 1 to 4
        rest = run_mode(mode, client, path, tmp_path, attempts=1, resume=run.token)   # page 5 answers now
    assert rest.error is None
    assert ids(run.items + rest.items) == list(range(300))


@pytest.mark.parametrize("mode", ["stream", "pager"])
def test_a_cancel_racing_the_end_may_win_but_a_list_that_ends_without_an_error_is_whole(mode, client, tmp_path):
    rng = random.Random(7)
    ended = {"whole": 0, "cancelled": 0}
    for _ in range(60):
        n = rng.randint(1, 60)
        run = Run()
        thread = threading.Thread(target=lambda: _into(run, mode, client, f"/anchor?n={n}&per_page=10"))
        thread.start()
        run.started.wait(5)
        time.sleep(rng.random() * 0.003)
        run.stoppable.cancel()
        thread.join(10)
        assert not thread.is_alive()
        run.stoppable.close()
        if run.error is None:
            ended["whole"] += 1
            assert ids(run.items) == list(range(n)), f"{mode}: ended without an error, yet not whole"
        else:
            ended["cancelled"] += 1
            assert isinstance(run.error, sheaf.StoppedError)
            assert ids(run.items) == list(range(len(run.items)))
    assert sum(ended.values()) == 60
    assert sheaf._live_runs() == 0


def _into(run: Run, mode: str, client: sheaf.Client, path: str) -> None:
    try:
        MODES[mode](client, path, run, False)
    except sheaf.Error as error:
        run.error = error


SPLIT = "/range/stripe?n=1500&limit=100&burst=150:2&latency_ms=2"


def _served_in_order(client: sheaf.Client, path: str) -> List[str]:
    return [item["id"] for item in client.fetch_all(path, preset="stripe", split="none")]


@pytest.mark.parametrize("mode", MODES)
def test_a_cursor_list_split_by_its_range_filter_arrives_whole_in_order_once(mode, client, tmp_path):
    expected = _served_in_order(client, SPLIT)
    run = run_mode(mode, client, SPLIT, tmp_path, preset="stripe")
    assert run.error is None, mode
    assert [item["id"] for item in run.items] == expected, mode
    assert run.stop_reason == sheaf.StopReason.COMPLETE and run.token is None
    assert sheaf._live_runs() == 0


@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "fetch_partition"])
def test_a_split_lists_page_budget_stops_it_and_its_token_goes_on_exactly(mode, client, tmp_path):
    expected = _served_in_order(client, SPLIT)
    got: List[str] = []
    token = None
    for _ in range(40):
        run = run_mode(mode, client, SPLIT, tmp_path, preset="stripe", max_pages=4, resume=token)
        assert run.error is None, mode
        got += [item["id"] for item in run.items]
        token = run.token
        if run.stop_reason == sheaf.StopReason.COMPLETE:
            break
        assert run.stop_reason == sheaf.StopReason.PAGE_BUDGET and token, mode
    assert got == expected, mode


@pytest.mark.parametrize("mode", MODES)
def test_a_spent_quota_stops_the_list_before_the_server_refuses_it(mode, api, tmp_path, monkeypatch):
    # A GitHub-shaped quota of 12 points, a window of its own per mode (quota_resource=).
    monkeypatch.setitem(_ASYNC_OPTIONS, "max_wait", 0)
    path = f"/anchor?n=300&per_page=10&quota=12:3600&quota_resource=conformance-{mode}"
    with sheaf.Client(api.base_url, **_ASYNC_OPTIONS) as client:
        run = run_mode(mode, client, path, tmp_path)
    assert isinstance(run.error, sheaf.RateLimitedError), (mode, run.error)
    assert stats(api)["refused"] == 0
    assert ids(run.items) == list(range(len(run.items))) and len(run.items) <= 120
    assert run.token is not None


@pytest.mark.parametrize("mode", MODES)
def test_a_second_run_with_the_cache_is_answered_304_with_the_same_items(mode, api, tmp_path, monkeypatch):
    monkeypatch.setitem(_ASYNC_OPTIONS, "cache", str(tmp_path / "cache"))
    path = f"/anchor?n=97&per_page=10&etag=1&mode={mode}"
    runs = []
    for _ in range(2):
        api.state.reset()
        with sheaf.Client(api.base_url, **_ASYNC_OPTIONS) as client:
            runs.append(run_mode(mode, client, path, tmp_path))
        assert runs[-1].error is None and ids(runs[-1].items) == list(range(97)), mode
    # fetch_partition plans the list first, reading page one: on the second run, a 304 too.
    assert stats(api)["not_modified"] == 10 + (mode == "fetch_partition"), mode
    assert runs[1].items == runs[0].items


@pytest.mark.parametrize("mode", MODES)
def test_a_full_page_that_says_nothing_of_more_ends_unconfirmed(mode, client, tmp_path):
    # Detected (no preset): GitHub's shape without its Link header, one full page of 30.
    run = run_mode(mode, client, "/conv/github?n=95&link=none", tmp_path, preset=None)
    assert run.error is None, (mode, run.error)
    assert ids(run.items) == list(range(30))
    assert run.stop_reason == sheaf.StopReason.UNCONFIRMED, mode
