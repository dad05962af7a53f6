"""Self-test of the HTTP/2 list server's connection limit (h2_server.py --max-connections):
requests on connections past the limit are answered 503; HTTP/2 streams on one connection are not."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import sys
import threading
import time
from typing import Callable, Dict, Iterator, List, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("CI"):   # CI installs hypercorn (scripts/setup.sh): there, a missing one fails
    pytest.importorskip("hypercorn")
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
from h2_server import H2Server  # noqa: E402

TIMEOUT = 10
SLOW = "/anchor?n=50&per_page=10&latency_ms=400"


@pytest.fixture
def limited_http1() -> Iterator[H2Server]:
    server = H2Server(max_connections=2)     # hypercorn, cleartext HTTP/1.1
    yield server
    server.close()


@pytest.fixture
def limited_h2c() -> Iterator[H2Server]:
    server = H2Server(prior_knowledge=True, max_connections=1)
    yield server
    server.close()


def stats(server: H2Server) -> Dict:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    try:
        connection.request("GET", "/_stats")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def wait_for_in_flight(server: H2Server, count: int) -> Dict:
    deadline = time.monotonic() + TIMEOUT
    seen = stats(server)
    while seen["in_flight"] < count and time.monotonic() < deadline:
        time.sleep(0.01)
        seen = stats(server)
    return seen


@contextlib.contextmanager
def two_busy(server: H2Server) -> Iterator[Tuple[List[http.client.HTTPConnection], Callable[[], None]]]:
    """Three connections to `server`, the first two each with a slow request in flight, and a
    function that waits for those two and checks they were answered 200; all closed after."""
    connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT) for _ in range(3)]
    statuses: List[int] = []
    busy = [threading.Thread(target=lambda c=c: (c.request("GET", SLOW), statuses.append(c.getresponse().status)))
            for c in connections[:2]]

    def answered() -> None:
        for thread in busy:
            thread.join(TIMEOUT)
        assert statuses == [200, 200]

    try:
        for thread in busy:
            thread.start()
        # The control paths are never refused, even now.
        assert wait_for_in_flight(server, 2)["in_flight"] == 2
        yield connections, answered
        answered()
    finally:
        for connection in connections:
            connection.close()


def test_a_request_on_a_third_connection_while_two_are_busy_is_answered_503_at_once(limited_http1) -> None:
    with two_busy(limited_http1) as (connections, answered):
        started = time.monotonic()
        connections[2].request("GET", SLOW)
        refused = connections[2].getresponse()
        assert refused.status == 503 and refused.getheader("Retry-After") is None
        assert json.loads(refused.read()) == {"error": "too many connections"}
        assert time.monotonic() - started < 0.3       # at once, not after the latency
        answered()
        # The connections are idle now: the third is served on the same connection.
        connections[2].request("GET", "/anchor?n=5")
        assert connections[2].getresponse().status == 200
    seen = stats(limited_http1)
    assert seen["refused"] == 1 and seen["requests"] == 4 and seen["connections"] == 3
    assert seen["max_in_flight"] == 2 and seen["in_flight"] == 0


def test_a_reset_of_the_counters_still_counts_the_connections_with_a_request_in_flight(limited_http1) -> None:
    # /_reset clears the counts, not the knowledge of which connections have a request in flight.
    with two_busy(limited_http1) as (connections, _):
        control = http.client.HTTPConnection("127.0.0.1", limited_http1.port, timeout=TIMEOUT)
        control.request("GET", "/_reset")
        control.getresponse().read()
        control.close()
        connections[2].request("GET", "/anchor?n=5")
        assert connections[2].getresponse().status == 503


def h2_statuses(port: int, paths: List[str]) -> List[int]:
    """The statuses of `paths`, all sent at once as streams of one HTTP/2 connection (h2c by
    prior knowledge), in the order of `paths`."""
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    streams = []
    for path in paths:
        stream = connection.get_next_available_stream_id()
        connection.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                         (":authority", f"127.0.0.1:{port}")], end_stream=True)
        streams.append(stream)
    statuses: Dict[int, int] = {}
    ended = set()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(connection.data_to_send())
        deadline = time.monotonic() + TIMEOUT
        while len(ended) < len(streams) and time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = int(dict(event.headers)[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
            sock.sendall(connection.data_to_send())
    return [statuses.get(stream, 0) for stream in streams]


def test_http2_streams_of_one_connection_are_never_refused_for_their_number(limited_h2c) -> None:
    # One connection per client, and five streams on it at once.
    started = time.monotonic()
    assert h2_statuses(limited_h2c.port, [f"{SLOW}&page={page}" for page in range(1, 6)]) == [200] * 5
    assert time.monotonic() - started < 2 * 0.4     # served together, not one after another
    seen = limited_h2c.stats()
    assert seen["connections"] == 1 and seen["refused"] == 0
    assert seen["max_in_flight"] == 5 and seen["versions"] == {"2": 5}


def test_without_a_limit_nothing_is_refused() -> None:
    server = H2Server()
    try:
        connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT) for _ in range(4)]
        threads = [threading.Thread(target=lambda c=c: (c.request("GET", SLOW), c.getresponse().read()))
                   for c in connections]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        for connection in connections:
            connection.close()
        seen = server.stats()
        assert seen["refused"] == 0 and seen["max_in_flight"] == 4
    finally:
        server.close()
