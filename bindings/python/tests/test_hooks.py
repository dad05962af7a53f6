"""Log records on the "sheaf" logger and events to on_event: a scripted run, asserted exactly."""

from __future__ import annotations

import gc
import logging
import os
import re
import subprocess
import sys
import threading
import time
from typing import List

import pytest

import sheaf

from conftest import REPO, TOKEN, expected_items

SECRET_KEY = "py-k3y-secret-value"


def _until(condition, seconds: float = 10.0) -> None:
    """Waits (bounded) for `condition`: hooks run on a library thread, and closing the client
    drops what is still queued for them."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def sheaf_log():
    logger = logging.getLogger("sheaf")
    handler = Collect()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_records_and_events_of_a_scripted_run(api, sheaf_log) -> None:
    events: List[sheaf.Event] = []
    key = f"py-hooks-{time.monotonic_ns()}"
    with sheaf.Client(api.base_url, TOKEN, max_attempts=3, retry_base=0.001, on_event=events.append) as client:
        assert client.get(f"/req/flaky?key={key}&fails=1&status=429").ok
        with pytest.raises(sheaf.HTTPError):
            client.get("/req/echo?status=503")
        with pytest.raises(sheaf.HTTPError):
            client.get(f"/req/echo?status=401&api_key={SECRET_KEY}")
        assert len(client.fetch_all("/anchor?n=30&per_page=10", preset="anchor")) == 30
        # The list's records come on the hook's queue, its plan after its pages' (the plan is
        # made when page one is read, after the answers were logged): a close drops what is
        # still queued, so wait for the plan too (ThreadSanitizer's pace once left it behind).
        _until(lambda: sum(r.sheaf_kind == "request" and r.sheaf_status == 200 for r in sheaf_log.records) >= 4
               and any(r.sheaf_kind == "plan" for r in sheaf_log.records))
    # closed after the records and events of every step were handed over
    script = [(r.sheaf_kind, r.sheaf_status, r.sheaf_attempt) for r in sheaf_log.records]
    assert script[:9] == [("request", 429, 1), ("retry", 429, 1), ("request", 200, 2),
                          ("request", 503, 1), ("retry", 503, 1), ("request", 503, 2), ("retry", 503, 2),
                          ("request", 503, 3), ("request", 401, 1)]
    # The list: its plan once, and its pages (with those asked for ahead of page one, in the
    # order they answered).
    listed = script[9:]
    assert listed.count(("plan", 0, 0)) == 1
    assert listed.count(("request", 200, 1)) >= 3 and {kind for kind, _, _ in listed} <= {"plan", "request", "window"}
    # The window follows the latency of the pages (debug records); nothing refused them.
    moved = [r for r in sheaf_log.records if r.sheaf_kind == "window"]
    assert all(r.levelno == logging.DEBUG and "refused" not in r.getMessage() for r in moved)
    assert [(e.kind, e.status, e.attempt) for e in events] == [
        ("rate_limited", 429, 1), ("retrying", 429, 1),
        ("retrying", 503, 1), ("retrying", 503, 2), ("server_unavailable", 503, 3),
        ("auth_refused", 401, 1)]
    assert events[0].wait == 0 and events[-1].wait is None and events[-1].method == "GET"
    assert all(r.levelno == logging.INFO for r in sheaf_log.records if r.sheaf_kind != "window")
    plan = next(r for r in sheaf_log.records if r.sheaf_kind == "plan")
    assert "3 pages" in plan.getMessage() and '"plan":"parallel"' in plan.getMessage()
    for text in [r.getMessage() for r in sheaf_log.records] + [r.sheaf_url or "" for r in sheaf_log.records] \
            + [e.message for e in events] + [e.url for e in events]:
        assert TOKEN not in text and SECRET_KEY not in text


def test_a_dead_port_is_offline_and_a_raising_hook_is_logged(sheaf_log) -> None:
    def hook(event: sheaf.Event) -> None:
        raise RuntimeError("hook failure")

    with sheaf.Client("http://127.0.0.1:1", max_attempts=2, retry_base=0.001, on_event=hook) as client:
        with pytest.raises(sheaf.TransportError):
            client.get("/x")
        _until(lambda: len([r for r in sheaf_log.records if r.exc_info]) >= 2)
    failures = [r for r in sheaf_log.records if r.exc_info]
    assert len(failures) == 2 and "hook failure" in str(failures[0].exc_info[1])
    events: List[sheaf.Event] = []
    with sheaf.Client("http://127.0.0.1:1", max_attempts=2, retry_base=0.001, on_event=events.append) as client:
        with pytest.raises(sheaf.TransportError):
            client.get("/x")
        _until(lambda: len(events) >= 2)
    assert [(e.kind, e.transport_error, e.attempt) for e in events] == [("retrying", "connect", 1),
                                                                       ("offline", "connect", 2)]


def test_the_log_level_is_the_loggers_when_the_client_is_made(api) -> None:
    logger = logging.getLogger("sheaf")
    assert not logger.isEnabledFor(logging.INFO)   # the default: WARNING, from the root logger
    handler = Collect()
    logger.addHandler(handler)
    try:
        with sheaf.Client(api.base_url) as client:
            logger.setLevel(logging.DEBUG)          # too late: the library was told WARNING
            assert client.get("/req/echo").ok
        assert handler.records == []
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def test_the_cli_logs_with_v_and_vv(api) -> None:
    # The caller's environment less Sheaf's own variables (a sanitizer's LD_PRELOAD stays).
    env = {name: value for name, value in os.environ.items() if not name.startswith("SHEAF_")}
    env.update(PYTHONPATH=str(REPO / "bindings" / "python"), SHEAF_LIBRARY_PATH=sheaf.library_path)
    run = lambda *args, **extra: subprocess.run(   # noqa: E731
        [sys.executable, "-m", "sheaf", *args], capture_output=True, timeout=60, env={**env, **extra},
        stdin=subprocess.DEVNULL)
    url = f"{api.base_url}/anchor?n=20&per_page=10&token=t0ken-in-query"
    quiet = run("get", url, "--preset", "anchor", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == b""
    verbose = run("get", url, "--preset", "anchor", "-v", "--quiet")
    lines = verbose.stderr.decode().splitlines()
    # A GET line for each of the two pages (and perhaps for pages asked for ahead of page one,
    # past the end, that answered before they were cancelled).
    asked = [int(found.group(1)) for line in lines if "GET " in line for found in [re.search(r"page=(\d+) ->", line)] if found]
    assert verbose.returncode == 0 and asked.count(1) == 1 and asked.count(2) == 1 and all(page <= 8 for page in asked)
    assert any("plan" in line or "in flight" in line for line in lines)
    assert "t0ken-in-query" not in verbose.stderr.decode()
    by_env = run("request", f"{api.base_url}/req/redirect?code=302&to=/req/echo", SHEAF_LOG="debug")
    assert by_env.returncode == 0 and b"302 to GET" in by_env.stderr
    vv = run("request", f"{api.base_url}/req/redirect?code=302&to=/req/echo", "-vv")
    assert vv.returncode == 0 and b"302 to GET" in vv.stderr
    v = run("request", f"{api.base_url}/req/redirect?code=302&to=/req/echo", "-v")
    assert v.returncode == 0 and b"302 to GET" not in v.stderr and b"-> 200" in v.stderr


# ---- token refresh ------------------------------------------------------------------------------

def _provider(*tokens: str):
    """A token provider handing out `tokens` in turn (the last one again when they run out), and
    the refresh flags it was called with."""
    calls: List[bool] = []

    def provide(refresh: bool) -> str:
        calls.append(refresh)
        return tokens[min(len(calls), len(tokens)) - 1]
    return provide, calls


def test_a_401_refreshes_the_token_once_and_the_log_tells_it(api, sheaf_log) -> None:
    provide, calls = _provider("stale-token-0a1b2c", "fresh-token-3d4e5f")
    events: List[sheaf.Event] = []
    with sheaf.Client(api.base_url, token_provider=provide, on_event=events.append, secret_params=["bearer"]) as client:
        assert client.get("/req/echo?bearer=fresh-token-3d4e5f").ok
        assert client.get("/req/echo?bearer=fresh-token-3d4e5f").ok   # the fresh token is kept
        _until(lambda: len(sheaf_log.records) >= 4)
    assert calls == [False, True]
    assert [(r.sheaf_kind, r.sheaf_status, r.sheaf_attempt, r.sheaf_delay_ms) for r in sheaf_log.records] == [
        ("request", 401, 1, -1), ("retry", 401, 1, 0), ("request", 200, 1, -1), ("request", 200, 1, -1)]
    assert "asking the credential provider for a new credential" in sheaf_log.records[1].getMessage()
    assert events == []   # refused once and refreshed: no auth_refused
    sent = [entry["authorization"] for entry in api.state.snapshot()["log"]]
    assert sent == ["Bearer stale-token-0a1b2c", "Bearer fresh-token-3d4e5f", "Bearer fresh-token-3d4e5f"]
    for record in sheaf_log.records:
        for text in (record.getMessage(), record.sheaf_url or ""):
            assert "token-" not in text, text


def test_concurrent_401s_of_one_list_share_one_refresh(api) -> None:
    provide, calls = _provider("old-token-9f8e", "new-token-7d6c")
    # Page 1 takes any token; from page 2 on the server wants the new one: pages 2..9 go out
    # together with the old token and are all refused.
    with sheaf.Client(api.base_url, token_provider=provide, concurrency=8) as client:
        items = client.fetch_all("/anchor?n=1000&per_page=50&bearer=new-token-7d6c&bearer_from=2&latency_ms=20")
    assert items == [{"id": i, "name": f"item-{i}"} for i in range(1000)]
    assert calls == [False, True]
    log = api.state.snapshot()["log"]
    refused = [entry for entry in log if entry["authorization"] == "Bearer old-token-9f8e"]
    assert len(refused) >= 3, "the window's pages were not refused together"
    assert len(log) == 20 + len(refused) - 1   # every page once with the new token, page 1 with the old


def test_a_token_refused_again_after_the_refresh_is_the_answer(api) -> None:
    provide, calls = _provider("never-valid-0", "never-valid-1", "never-valid-2")
    events: List[sheaf.Event] = []
    with sheaf.Client(api.base_url, token_provider=provide, on_event=events.append) as client:
        with pytest.raises(sheaf.HTTPError) as refused:
            client.get("/req/echo?bearer=something-else")
        assert refused.value.status == 401
        with pytest.raises(sheaf.HTTPError) as failed:
            client.fetch_all("/anchor?n=10&bearer=something-else")
        _until(lambda: len(events) >= 2)
    assert failed.value.status == 401 and "never-valid" not in str(failed.value)
    assert calls == [False, True, True]   # one refresh per request, not a loop
    assert [(e.kind, e.status) for e in events] == [("auth_refused", 401), ("auth_refused", 401)]


def test_a_provider_that_raises_fails_the_request_with_credential_error(api) -> None:
    def broken(refresh: bool) -> str:
        raise RuntimeError("the token endpoint is down")
    with sheaf.Client(api.base_url, token_provider=broken) as client:
        with pytest.raises(sheaf.CredentialError, match="RuntimeError"):
            client.get("/req/echo")
        with pytest.raises(sheaf.CredentialError):
            client.fetch_all("/anchor?n=10")
    assert api.state.snapshot()["requests"] == 0   # nothing was sent without a credential
    with pytest.raises(sheaf.UsageError):
        sheaf.Client(api.base_url, "a-token", token_provider=broken)


def test_close_waits_for_the_hook_running_now_and_drops_the_queued_ones(api) -> None:
    # Eleven events of 0.5 s each: close waits for the one running, not for the ten queued.
    started: List[float] = []
    first = threading.Event()

    def slow(event: sheaf.Event) -> None:
        started.append(time.monotonic())
        first.set()
        time.sleep(0.5)   # a slow hook (the behaviour under test is close's wait, not this)

    client = sheaf.Client(api.base_url, max_attempts=1, on_event=slow)
    for _ in range(11):
        with pytest.raises(sheaf.HTTPError):
            client.get("/req/echo?status=503")   # one server_unavailable event each
    assert first.wait(10)
    began = time.monotonic()
    client.close()
    closed = time.monotonic()
    assert closed - began < 1.5, f"close took {closed - began:.1f} s"
    calls = len(started)
    assert calls < 11
    assert all(at < closed for at in started)
    time.sleep(1.0)   # room for a wrongly queued call to show up
    assert len(started) == calls


def test_a_provider_that_does_not_answer_in_time_fails_the_request_with_credential_error(api) -> None:
    # The request's timeout covers the wait for its credential; the late answer serves the next one.
    answer = threading.Event()
    calls: List[bool] = []

    def blocked(refresh: bool) -> str:
        calls.append(refresh)
        answer.wait(5)
        return "late-token-4f2a"

    with sheaf.Client(api.base_url, token_provider=blocked, timeout=0.5, max_attempts=1) as client:
        began = time.monotonic()
        with pytest.raises(sheaf.CredentialError) as raised:
            client.get("/req/echo")
        assert time.monotonic() - began < 1.5
        assert "0.5 s" in str(raised.value) or "500 ms" in str(raised.value)
        assert api.state.snapshot()["requests"] == 0   # nothing was sent without a credential
        answer.set()
        assert client.get("/req/echo").json()["headers"]["authorization"] == ["Bearer late-token-4f2a"]
    assert calls == [False]


def test_close_from_inside_on_event_while_a_list_runs_keeps_the_hook_alive_under_it(api) -> None:
    # The hook closes its own client and drops it: the ctypes function under the running call is
    # the library's to release (issue 47: it was the client's, and the call returned into freed
    # memory). The list goes on and ends whole; no event comes after the hook returns.
    calls: List[str] = []
    holder: dict = {}

    def closing(event: sheaf.Event) -> None:
        calls.append(event.kind)
        client = holder.pop("client", None)
        if client is not None:
            client.close()
            del client
            gc.collect()
            time.sleep(0.05)

    holder["client"] = sheaf.Client(api.base_url, retry_base=0.001, on_event=closing)
    stream = holder["client"].stream("/anchor?n=300&per_page=10&fail=2:2:503")
    items = [item for snapshot in stream for item in snapshot.items]
    del stream
    gc.collect()
    assert items == expected_items(300)
    assert calls and "client" not in holder
    seen = len(calls)
    time.sleep(0.3)
    assert len(calls) == seen, "no event after close returned from inside the hook"
