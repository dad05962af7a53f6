"""Python transports: called on library threads, concurrently; failures and bugs come home."""

from __future__ import annotations

import http.client
import re
import threading
import time
import traceback
import urllib.parse
from typing import List, Tuple

import pytest

import sheaf
from conftest import TOKEN, expected_items, pages_asked, stats

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=50, id="/id")


class BlockingTransport:
    """A plain blocking http.client GET per call (a new connection each time), counting calls."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: List[Tuple[str, str, List[Tuple[str, str]], bytes]] = []

    def __call__(self, method, url, headers, body):
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.requests.append((method, url, headers, body))
        try:
            parts = urllib.parse.urlsplit(url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
            try:
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                connection.request(method, target, body=body or None, headers=dict(headers))
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            finally:
                connection.close()
        finally:
            with self.lock:
                self.in_flight -= 1


def test_a_blocking_python_transport_still_fills_the_window(api):
    transport = BlockingTransport()
    with sheaf.Client(api.base_url, TOKEN, transport=transport, adaptive_window=False) as client:
        items = client.fetch_all("/anchor?n=1000&latency_ms=100", **ANCHOR)
    assert items == expected_items(1000)
    assert transport.calls == 20
    assert transport.max_in_flight == 8
    assert stats(api)["max_in_flight"] == 8


def test_the_transport_gets_method_url_headers_and_body(api):
    transport = BlockingTransport()
    with sheaf.Client(api.base_url, TOKEN, transport=transport) as client:
        client.fetch_all("/anchor?n=10", **ANCHOR)
    (method, url, headers, body) = transport.requests[pages_asked([r[1] for r in transport.requests]).index(1)]
    assert method == "GET" and body == b""
    assert url.startswith(api.base_url + "/anchor?") and "n=10" in url and "per_page=50" in url
    assert ("Authorization", f"Bearer {TOKEN}") in headers
    assert stats(api)["log"][0]["authorization"] == f"Bearer {TOKEN}"


def test_response_headers_may_be_a_mapping_or_pairs_and_statuses_drive_retries(api):
    answers = iter([
        (503, {"Retry-After": "0"}, b'{"error":"busy"}'),
        (200, [("Content-Type", "application/json")], b'{"items":[{"id":1}],"next_page":null,"total":1}'),
    ])
    calls = []

    def scripted(method, url, headers, body):
        calls.append(url)
        return next(answers)

    with sheaf.Client(api.base_url, retry_base=0.001, transport=scripted) as client:
        assert client.fetch_all("/anywhere", items="/items", next="/next_page", total="/total") == [{"id": 1}]
    assert len(calls) == 2


class TransportBug(Exception):
    pass


def exploding_transport(method, url, headers, body):
    raise TransportBug(f"cannot reach {url}")


def test_an_exception_in_the_transport_is_reraised_from_fetch_all_with_its_traceback(api):
    with sheaf.Client(api.base_url, transport=exploding_transport) as client:
        with pytest.raises(TransportBug) as raised:
            client.fetch_all("/anchor?n=100", **ANCHOR)
    assert "cannot reach" in str(raised.value)
    frames = [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert "exploding_transport" in frames
    assert sheaf._live_runs() == 0


def test_an_exception_in_the_transport_stops_the_list(api):
    inner = BlockingTransport()

    def fails_on_page_3(method, url, headers, body):
        if re.search(r"[?&]page=3(&|$)", url):
            raise TransportBug("page 3")
        return inner(method, url, headers, body)

    with sheaf.Client(api.base_url, transport=fails_on_page_3) as client:
        started = time.monotonic()
        with pytest.raises(TransportBug):
            client.fetch_all("/anchor?n=1000&latency_ms=100", **dict(ANCHOR, page_size=10))
        assert time.monotonic() - started < 2.0
    time.sleep(0.3)
    assert stats(api)["requests"] <= 30   # far fewer than the 100 pages


def test_an_exception_in_the_transport_is_reraised_from_a_stream(api):
    with sheaf.Client(api.base_url, transport=exploding_transport) as client:
        with pytest.raises(TransportBug):
            for _ in client.stream("/anchor?n=100", **ANCHOR):
                pass


def test_a_transport_returning_the_wrong_types_is_a_type_error(api):
    def text_body(method, url, headers, body):
        return 200, {}, '{"items": []}'

    with sheaf.Client(api.base_url, transport=text_body) as client:
        with pytest.raises(TypeError, match="bytes"):
            client.fetch_all("/anchor", **ANCHOR)


@pytest.mark.parametrize("raised, family", [
    (TimeoutError("slow"), "timeout"),
    (ConnectionRefusedError("refused"), "connect"),
])
def test_timeouts_and_connection_errors_are_retried_then_a_transport_error(api, raised, family):
    calls = []

    def failing(method, url, headers, body):
        calls.append(url)
        raise raised

    with sheaf.Client(api.base_url, max_attempts=3, retry_base=0.001, transport=failing) as client:
        with pytest.raises(sheaf.TransportError) as error:
            client.fetch_all("/anchor", **ANCHOR)
    assert pages_asked(calls).count(1) == 3
    assert type(raised).__name__ in error.value.message or family in error.value.message.lower()


def test_a_body_over_the_cap_from_a_python_transport_is_refused(api):
    def big(method, url, headers, body):
        return 200, {}, b"[" + b"1," * 40000 + b"1]"

    with sheaf.Client(api.base_url, max_body_bytes=1024, transport=big) as client:
        with pytest.raises(sheaf.Error) as raised:
            client.fetch_all("/array")
    assert raised.value.code in (sheaf.Result.BODY_TOO_LARGE, sheaf.Result.TRANSPORT)


def test_a_failing_list_does_not_disturb_another_list_on_the_same_client(api):
    inner = BlockingTransport()

    def selective(method, url, headers, body):
        if "boom=1" in url:
            time.sleep(0.05)
            raise TransportBug("only the boom list")
        return inner(method, url, headers, body)

    results = {}

    def run(name, path):
        try:
            results[name] = client.fetch_all(path, **ANCHOR)
        except BaseException as error:  # noqa: B902 - recorded for the assertions
            results[name] = error

    with sheaf.Client(api.base_url, transport=selective) as client:
        threads = [threading.Thread(target=run, args=("good", "/anchor?n=500&latency_ms=20")),
                   threading.Thread(target=run, args=("bad", "/anchor?n=500&latency_ms=20&boom=1"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results["good"] == expected_items(500)
    assert isinstance(results["bad"], TransportBug)
