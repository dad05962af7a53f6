#!/usr/bin/env python3
"""A loopback list server that speaks HTTP/2: h2 over TLS (ALPN; hypercorn, which also speaks
HTTP/1.1 to clients that ask for it), or h2c by prior knowledge on cleartext (the h2 library). It counts the connections its
requests came over, which is what HTTP/2 multiplexing changes.

  GET /anchor?page=N&per_page=S&n=T&latency_ms=L
      {"items":[{"id":i,"name":"item-i"}...],"next_page":url|null,"total":T}, after L ms
  GET /_stats     {"requests", "connections", "max_in_flight", "versions": {"2": k, "1.1": m}}
  GET /_reset     clears the counters

usage: h2_server.py [--cert PEM --key PEM | --prior-knowledge] [--port P]
       (prints the port, then serves until killed)
Needs hypercorn (pip install hypercorn; h2 comes with it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import threading
from typing import Any, Dict, Optional, Set, Tuple
from urllib.parse import parse_qs

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from hypercorn.asyncio import serve
from hypercorn.config import Config


class Counters:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections: Set[Tuple[str, int]] = set()
        self.versions: Dict[str, int] = {}

    def snapshot(self) -> Dict[str, Any]:
        return {"requests": self.requests, "connections": len(self.connections), "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight, "versions": dict(self.versions)}


class Lists:
    """What both servers answer: /anchor pages, /_stats and /_reset, counting as it goes."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme
        self.counters = Counters()

    async def answer(self, path: str, query_text: str, client: Tuple[str, int], version: str,
                     host: str) -> Tuple[int, bytes]:
        counters = self.counters
        if path == "/_stats":
            return 200, json.dumps(counters.snapshot()).encode()
        if path == "/_reset":
            counters.reset()
            return 200, b"{}"
        if path != "/anchor":
            return 404, b'{"error":"no such path"}'
        query = {k: v[-1] for k, v in parse_qs(query_text).items()}
        counters.requests += 1
        counters.connections.add(tuple(client))
        counters.versions[version] = counters.versions.get(version, 0) + 1
        counters.in_flight += 1
        counters.max_in_flight = max(counters.max_in_flight, counters.in_flight)
        try:
            latency = int(query.get("latency_ms", "0"))
            if latency:
                await asyncio.sleep(latency / 1000)
            page, size, total = int(query.get("page", "1")), int(query.get("per_page", "50")), int(query.get("n", "100"))
            start = (page - 1) * size
            items = [{"id": i, "name": f"item-{i}"} for i in range(start, min(start + size, total))]
            nxt = None
            if start + size < total:
                query["page"] = str(page + 1)
                nxt = f"{self.scheme}://{host}/anchor?" + "&".join(f"{k}={v}" for k, v in query.items())
            return 200, json.dumps({"items": items, "next_page": nxt, "total": total}, separators=(",", ":")).encode()
        finally:
            counters.in_flight -= 1

    async def asgi(self, scope, receive, send) -> None:
        """The ASGI application hypercorn serves."""
        if scope["type"] == "lifespan":
            while True:
                event = (await receive())["type"]
                await send({"type": event + ".complete"})   # lifespan.startup / lifespan.shutdown
                if event == "lifespan.shutdown":
                    return
        host = dict(scope["headers"]).get(b"host", b"").decode()
        status, body = await self.answer(scope["path"], scope["query_string"].decode(), scope["client"],
                                         scope["http_version"], host)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class PriorKnowledge(asyncio.Protocol):
    """HTTP/2 on a cleartext connection from its first byte (h2c by prior knowledge), with the
    h2 library: hypercorn serves only the first stream of such a connection."""

    def __init__(self, lists: Lists) -> None:
        self.lists = lists
        self.connection = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.pending: Dict[int, bytes] = {}      # stream -> body bytes waiting for flow control
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.peer = transport.get_extra_info("peername")
        self.connection.initiate_connection()
        transport.write(self.connection.data_to_send())

    def data_received(self, data: bytes) -> None:
        try:
            events = self.connection.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.write(self.connection.data_to_send())
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                headers = dict(event.headers)
                asyncio.ensure_future(self.respond(event.stream_id, headers))
            elif isinstance(event, h2.events.WindowUpdated):
                for stream in list(self.pending):
                    self.send_body(stream)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.flush()

    async def respond(self, stream: int, headers: Dict[str, str]) -> None:
        path, _, query = headers[":path"].partition("?")
        status, body = await self.lists.answer(path, query, self.peer, "2", headers.get(":authority", ""))
        if self.transport.is_closing():
            return
        self.connection.send_headers(stream, [(":status", str(status)), ("content-type", "application/json"),
                                              ("content-length", str(len(body)))])
        self.pending[stream] = body
        self.send_body(stream)
        self.flush()

    def send_body(self, stream: int) -> None:
        """Sends what flow control allows of the stream's body; the rest waits for a window update."""
        body = self.pending.pop(stream)
        while body:
            room = min(self.connection.local_flow_control_window(stream), self.connection.max_outbound_frame_size)
            if room <= 0:
                self.pending[stream] = body
                return
            self.connection.send_data(stream, body[:room])
            body = body[room:]
        self.connection.end_stream(stream)

    def flush(self) -> None:
        data = self.connection.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)


class H2Server:
    """The server on a thread of its own: `base_url`, `stats()`, `reset()`, `close()`.

    With `cert` and `key`: hypercorn over TLS, HTTP/2 or HTTP/1.1 as ALPN settles. Without:
    hypercorn's cleartext HTTP/1.1, or with `prior_knowledge` HTTP/2 from the first byte."""

    def __init__(self, cert: Optional[str] = None, key: Optional[str] = None, port: int = 0,
                 prior_knowledge: bool = False) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        scheme = "https" if cert else "http"
        self.base_url = f"{scheme}://127.0.0.1:{self.port}"
        self.lists = Lists(scheme)
        self._loop = asyncio.new_event_loop()
        self._stop: Optional[asyncio.Event] = None
        if prior_knowledge:
            serving = self._prior_knowledge(listener)
        else:
            config = Config()
            config.bind = [f"fd://{listener.detach()}"]   # hypercorn's now: it closes it
            config.accesslog = None
            config.errorlog = None
            config.keep_alive_timeout = 30
            if cert:
                config.certfile, config.keyfile = cert, key
                config.alpn_protocols = ["h2", "http/1.1"]
            serving = serve(self.lists.asgi, config, shutdown_trigger=self._stopped)
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(serving, started), daemon=True)
        self._thread.start()
        started.wait(10)

    async def _stopped(self) -> None:
        await self._stop.wait()

    async def _prior_knowledge(self, listener: socket.socket) -> None:
        server = await self._loop.create_server(lambda: PriorKnowledge(self.lists), sock=listener)
        async with server:
            await self._stopped()

    def _run(self, serving, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = asyncio.Event()
        self._loop.call_soon(started.set)
        self._loop.run_until_complete(serving)

    def stats(self) -> Dict[str, Any]:
        return asyncio.run_coroutine_threadsafe(_call(self.lists.counters.snapshot), self._loop).result(10)

    def reset(self) -> None:
        asyncio.run_coroutine_threadsafe(_call(self.lists.counters.reset), self._loop).result(10)

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


async def _call(function):
    return function()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prior-knowledge", action="store_true", help="cleartext HTTP/2 only (h2c)")
    args = parser.parse_args()
    server = H2Server(args.cert, args.key, args.port, args.prior_knowledge)
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
