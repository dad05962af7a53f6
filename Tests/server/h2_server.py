#!/usr/bin/env python3
"""A loopback list server that speaks HTTP/2: h2 over TLS (ALPN; hypercorn, which also speaks
HTTP/1.1 to clients that ask for it), or h2c by prior knowledge on cleartext (the h2 library). It counts the connections its
requests came over, which is what HTTP/2 multiplexing changes.

  GET /anchor?page=N&per_page=S&n=T&latency_ms=L
      {"items":[{"id":i,"name":"item-i"}...],"next_page":url|null,"total":T}, after L ms
  GET /_stats     {"requests", "connections", "max_in_flight", "versions": {"2": k, "1.1": m}, "refused"}
  GET /_reset     clears the counters

A connection limit, as gateways set one (nginx's limit_conn):
  --max-connections N  a request is answered 503 at once when N other connections of the same
                       client host each have a request in flight. No Retry-After, as nginx sends
                       none. HTTP/2 streams share their connection, so they are never refused
                       for their number. /_stats and /_reset are never refused. A refused request
                       counts in "requests" and "refused", not in flight.

Fault modes (HTTP/2 served by the h2 library, over TLS when a certificate is given):
  --goaway-every N   after a connection's Nth request, a graceful GOAWAY naming that stream the
                     last processed: the streams before it are answered, the ones after it are
                     left unprocessed (the client must ask again), then the connection closes
  --abrupt           with --goaway-every: the connection closes right after the GOAWAY, the
                     streams in flight on it unanswered
  --reset-pages P,Q  the first request for page P (and Q) is answered with RST_STREAM
  --max-requests N   hypercorn's own rotation (keep_alive_max_requests): it sends GOAWAY and
                     abandons the streams still in flight on that connection

A plain Python API server instead, for the benchmark's P5U rows:
  --uvicorn          the same application served by uvicorn, cleartext HTTP/1.1 (needs uvicorn)
  --cache-pages      each /anchor page built once per request target and host, then served from
                     memory (the latency still slept), so a benchmark measures the client more
                     than Python building JSON

usage: h2_server.py [--cert PEM --key PEM | --prior-knowledge | --uvicorn] [--host H] [--port P]
                    [--max-connections N] [fault modes]
       (prints the port, then serves until killed)
Needs hypercorn (pip install hypercorn; h2 comes with it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import ssl
import sys
import threading
from typing import Any, Dict, Iterable, Optional, Set, Tuple
from urllib.parse import parse_qs

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hyperframe.frame
from hypercorn.asyncio import serve
from hypercorn.config import Config


class Counters:
    def __init__(self) -> None:
        # Each connection's requests in flight (a connection with none is absent). Kept across
        # /_reset: the connection limit counts what is in flight, not what was counted.
        self.busy: Dict[Tuple[str, int], int] = {}
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections: Set[Tuple[str, int]] = set()
        self.versions: Dict[str, int] = {}
        self.goaways = 0
        self.resets = 0
        self.refused = 0

    def snapshot(self) -> Dict[str, Any]:
        return {"requests": self.requests, "connections": len(self.connections), "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight, "versions": dict(self.versions),
                "goaways": self.goaways, "resets": self.resets, "refused": self.refused}


class Lists:
    """What both servers answer: /anchor pages, /_stats and /_reset, counting as it goes."""

    def __init__(self, scheme: str, goaway_every: Optional[int] = None, reset_pages: Iterable[int] = (),
                 abrupt: bool = False, max_connections: Optional[int] = None, cache_pages: bool = False) -> None:
        self.scheme = scheme
        self.pages: Optional[Dict[Tuple[str, str], bytes]] = {} if cache_pages else None
        self.max_connections = max_connections
        self.counters = Counters()
        self.goaway_every = goaway_every
        self.abrupt = abrupt
        self.reset_pages = set(reset_pages)
        self.pages_reset: Set[int] = set()

    def reset(self) -> None:
        """Clears the counters; the pages chosen to be reset are reset once more."""
        self.counters.reset()
        self.pages_reset.clear()

    def resets(self, path: str, query_text: str) -> bool:
        """Whether this request is the first for a page chosen to be reset (then it counts)."""
        if path != "/anchor" or not self.reset_pages:
            return False
        page = int(parse_qs(query_text).get("page", ["1"])[-1])
        if page not in self.reset_pages or page in self.pages_reset:
            return False
        self.pages_reset.add(page)
        self.counters.resets += 1
        return True

    def refuses(self, client: Tuple[str, int]) -> bool:
        """Whether the connection limit refuses a request on `client`'s connection: as many other
        connections of its host as the limit allows have a request in flight."""
        if not self.max_connections:
            return False
        busy = sum(1 for other in self.counters.busy if other[0] == client[0] and other != client)
        return busy >= self.max_connections

    async def answer(self, path: str, query_text: str, client: Tuple[str, int], version: str,
                     host: str) -> Tuple[int, bytes]:
        counters = self.counters
        if path == "/_stats":
            return 200, json.dumps(counters.snapshot()).encode()
        if path == "/_reset":
            self.reset()
            return 200, b"{}"
        if path != "/anchor":
            return 404, b'{"error":"no such path"}'
        query = {k: v[-1] for k, v in parse_qs(query_text).items()}
        client = tuple(client)
        counters.requests += 1
        counters.connections.add(client)
        counters.versions[version] = counters.versions.get(version, 0) + 1
        if self.refuses(client):
            counters.refused += 1
            return 503, b'{"error":"too many connections"}'
        counters.busy[client] = counters.busy.get(client, 0) + 1
        counters.in_flight += 1
        counters.max_in_flight = max(counters.max_in_flight, counters.in_flight)
        try:
            latency = int(query.get("latency_ms", "0"))
            if latency:
                await asyncio.sleep(latency / 1000)
            cached = self.pages.get((query_text, host)) if self.pages is not None else None
            if cached is not None:
                return 200, cached
            page, size, total = int(query.get("page", "1")), int(query.get("per_page", "50")), int(query.get("n", "100"))
            start = (page - 1) * size
            items = [{"id": i, "name": f"item-{i}"} for i in range(start, min(start + size, total))]
            nxt = None
            if start + size < total:
                query["page"] = str(page + 1)
                nxt = f"{self.scheme}://{host}/anchor?" + "&".join(f"{k}={v}" for k, v in query.items())
            body = json.dumps({"items": items, "next_page": nxt, "total": total}, separators=(",", ":")).encode()
            if self.pages is not None:
                self.pages[(query_text, host)] = body
            return 200, body
        finally:
            # Before the answer is written: a client that sends its next request the moment this
            # answer arrives finds this connection idle.
            counters.in_flight -= 1
            counters.busy[client] -= 1
            if not counters.busy[client]:
                del counters.busy[client]

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
    """HTTP/2 from a connection's first byte, with the h2 library: cleartext (h2c by prior
    knowledge: hypercorn serves only the first stream of such a connection), or TLS once ALPN
    chose h2. It is also where the HTTP/2 faults are made (`Lists.goaway_every`, `reset_pages`)."""

    def __init__(self, lists: Lists) -> None:
        self.lists = lists
        self.connection = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.pending: Dict[int, bytes] = {}      # stream -> body bytes waiting for flow control
        self.transport = None
        self.requests = 0
        self.last_stream: Optional[int] = None  # once a GOAWAY went out: the last stream processed
        self.answering: Set[int] = set()        # streams being answered

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
                if self.last_stream is not None and event.stream_id > self.last_stream:
                    continue    # after the GOAWAY: unprocessed, as it said; the client asks again
                headers = dict(event.headers)
                self.requests += 1
                self.answering.add(event.stream_id)
                asyncio.ensure_future(self.respond(event.stream_id, headers))
                if self.lists.goaway_every and self.requests >= self.lists.goaway_every:
                    self.go_away(event.stream_id)
            elif isinstance(event, h2.events.WindowUpdated):
                for stream in list(self.pending):
                    self.send_body(stream)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.flush()

    async def respond(self, stream: int, headers: Dict[str, str]) -> None:
        path, _, query = headers[":path"].partition("?")
        if self.lists.resets(path, query):
            self.connection.reset_stream(stream, h2.errors.ErrorCodes.INTERNAL_ERROR)
            self.flush()
            self.stream_done(stream)
            return
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
        self.stream_done(stream)

    def go_away(self, last_stream: int) -> None:
        """A graceful GOAWAY: streams up to `last_stream` are still answered, later ones are not.
        Written as a frame of its own: h2's `close_connection` would refuse to answer any stream
        after it (what makes hypercorn abandon the streams in flight when it rotates)."""
        if self.last_stream is not None:
            return
        self.last_stream = last_stream
        self.lists.counters.goaways += 1
        self.flush()
        frame = hyperframe.frame.GoAwayFrame(0)
        frame.last_stream_id = last_stream
        frame.error_code = 0
        self.transport.write(frame.serialize())
        if self.lists.abrupt:
            # As hypercorn does when the client's next frames reach a connection h2 has closed:
            # a second GOAWAY, with an error, and the connection goes.
            frame.error_code = h2.errors.ErrorCodes.PROTOCOL_ERROR
            self.transport.write(frame.serialize())
            self.transport.abort()  # at once (close() would wait for TLS close_notify): the streams in flight are lost
            return
        self.close_when_answered()

    def stream_done(self, stream: int) -> None:
        self.answering.discard(stream)
        self.close_when_answered()

    def close_when_answered(self) -> None:
        if self.last_stream is not None and not self.answering and not self.pending:
            self.flush()
            self.transport.close()

    def flush(self) -> None:
        data = self.connection.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)


class H2Server:
    """The server on a thread of its own: `base_url`, `stats()`, `reset()`, `close()`.

    With `cert` and `key`: hypercorn over TLS, HTTP/2 or HTTP/1.1 as ALPN settles. Without:
    hypercorn's cleartext HTTP/1.1, or with `prior_knowledge` HTTP/2 from the first byte, or with
    `uvicorn` uvicorn's HTTP/1.1."""

    def __init__(self, cert: Optional[str] = None, key: Optional[str] = None, port: int = 0,
                 prior_knowledge: bool = False, max_requests_per_connection: Optional[int] = None,
                 goaway_every: Optional[int] = None, reset_pages: Iterable[int] = (), abrupt: bool = False,
                 max_connections: Optional[int] = None, host: str = "127.0.0.1", uvicorn: bool = False,
                 cache_pages: bool = False) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        scheme = "https" if cert else "http"
        self.base_url = f"{scheme}://{host}:{self.port}"
        self.lists = Lists(scheme, goaway_every, reset_pages, abrupt, max_connections, cache_pages)
        self._loop = asyncio.new_event_loop()
        self._stop: Optional[asyncio.Event] = None
        if prior_knowledge or goaway_every or reset_pages:
            serving = self._prior_knowledge(listener, self._tls(cert, key) if cert else None)
        elif uvicorn:
            serving = self._uvicorn(listener)
        else:
            config = Config()
            config.bind = [f"fd://{listener.detach()}"]   # hypercorn's now: it closes it
            config.accesslog = None
            config.errorlog = None
            config.keep_alive_timeout = 30
            if max_requests_per_connection:
                config.keep_alive_max_requests = max_requests_per_connection
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

    @staticmethod
    def _tls(cert: str, key: str) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["h2"])
        return context

    async def _prior_knowledge(self, listener: socket.socket, tls: Optional[ssl.SSLContext] = None) -> None:
        server = await self._loop.create_server(lambda: PriorKnowledge(self.lists), sock=listener, ssl=tls)
        async with server:
            await self._stopped()

    async def _uvicorn(self, listener: socket.socket) -> None:
        import uvicorn
        # Nagle off (accepted sockets inherit it on Linux): uvicorn writes an answer's head and
        # body apart, and the body would wait for the client's delayed ACK of the head (40 ms).
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = uvicorn.Server(uvicorn.Config(self.lists.asgi, log_level="warning", access_log=False,
                                               lifespan="off", timeout_keep_alive=30, interface="asgi3",
                                               proxy_headers=False))
        serving = asyncio.ensure_future(server.serve(sockets=[listener]))
        await self._stopped()
        server.should_exit = True
        await serving

    def _run(self, serving, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = asyncio.Event()
        self._loop.call_soon(started.set)
        self._loop.run_until_complete(serving)

    def stats(self) -> Dict[str, Any]:
        return asyncio.run_coroutine_threadsafe(_call(self.lists.counters.snapshot), self._loop).result(10)

    def reset(self) -> None:
        asyncio.run_coroutine_threadsafe(_call(self.lists.reset), self._loop).result(10)

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
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-connections", type=int,
                        help="503 to a request when N other connections of its host have one in flight")
    parser.add_argument("--prior-knowledge", action="store_true", help="cleartext HTTP/2 only (h2c)")
    parser.add_argument("--goaway-every", type=int, help="a graceful GOAWAY after a connection's Nth request")
    parser.add_argument("--reset-pages", default="", help="pages whose first request is reset (RST_STREAM), e.g. 5,9")
    parser.add_argument("--abrupt", action="store_true", help="close right after the GOAWAY")
    parser.add_argument("--max-requests", type=int, help="hypercorn's keep_alive_max_requests")
    parser.add_argument("--uvicorn", action="store_true", help="uvicorn's cleartext HTTP/1.1 instead of hypercorn")
    parser.add_argument("--cache-pages", action="store_true", help="build each /anchor page once, then serve it from memory")
    args = parser.parse_args()
    server = H2Server(args.cert, args.key, args.port, args.prior_knowledge, args.max_requests, args.goaway_every,
                      [int(page) for page in args.reset_pages.split(",") if page], args.abrupt,
                      args.max_connections, args.host, args.uvicorn, args.cache_pages)
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
