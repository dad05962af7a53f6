"""Self-test of the delay proxy (delay_proxy.py): a round trip through it costs twice its delay,
and the bytes arrive exactly as sent, in both directions, then the end of the stream."""

from __future__ import annotations

import os
import socket
import socketserver
import statistics
import sys
import threading
import time
from typing import Iterator, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from delay_proxy import DelayProxy  # noqa: E402

TIMEOUT = 10
DELAY_MS = 50


class Echo(socketserver.BaseRequestHandler):
    """Writes back what it reads, until the end of the stream; then closes."""

    def handle(self) -> None:
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


class InTwoWrites(socketserver.BaseRequestHandler):
    """Answers each byte it reads with two, written 3 ms apart."""

    def handle(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while self.request.recv(1):
            self.request.sendall(b"o")
            time.sleep(0.003)
            self.request.sendall(b"k")


def serve(handler) -> socketserver.ThreadingTCPServer:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def echo() -> Iterator[Tuple[str, int]]:
    server = serve(Echo)
    yield server.server_address
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo) -> Iterator[DelayProxy]:
    proxy = DelayProxy(echo, DELAY_MS)
    yield proxy
    proxy.close()


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def test_each_round_trip_costs_twice_the_delay(proxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for round_trip in range(3):
            started = time.monotonic()
            sock.sendall(b"ping %d" % round_trip)
            assert read_exactly(sock, 6) == b"ping %d" % round_trip
            took = time.monotonic() - started
            assert 2 * DELAY_MS / 1000 - 0.005 <= took < 2 * DELAY_MS / 1000 + 0.1, took


def test_a_large_body_arrives_exactly_both_ways_then_the_end_of_stream(proxy) -> None:
    body = os.urandom(8 * 1024 * 1024)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT) as sock:
        def send() -> None:
            for start in range(0, len(body), 100_000):      # many writes: the order must hold
                sock.sendall(body[start:start + 100_000])
            sock.shutdown(socket.SHUT_WR)                    # the echo ends when it reads the end

        sender = threading.Thread(target=send)
        sender.start()
        echoed = read_exactly(sock, len(body) + 1)          # one more: the end of stream must come
        sender.join(TIMEOUT)
    assert len(echoed) == len(body) and echoed == body
    assert proxy.connections == 1


def test_a_refused_upstream_closes_the_connection() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]          # bound, not listening: a connect is refused
        proxy = DelayProxy(("127.0.0.1", port), DELAY_MS)
        try:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT) as sock:
                assert sock.recv(1) == b""
        finally:
            proxy.close()


def test_an_answer_in_two_writes_is_not_held_back_for_an_ack() -> None:
    # With Nagle's algorithm on the proxy's side of the client's connection, the second write
    # waits for the client to acknowledge the first, which it delays (about 40 ms on Linux).
    upstream = serve(InTwoWrites)
    proxy = DelayProxy(upstream.server_address, 0)
    try:
        took = []
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(20):
                started = time.monotonic()
                sock.sendall(b"?")
                assert read_exactly(sock, 2) == b"ok"
                took.append(time.monotonic() - started)
        assert statistics.median(took) < 0.02, took
    finally:
        proxy.close()
        upstream.shutdown()
        upstream.server_close()
